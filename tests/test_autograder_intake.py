"""Finding and reading submissions: every accepted layout, and nothing followed or written."""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder import intake
from autograder.intake import IntakeError, collect, distinct_ids, student_id

LESSONS = {"01-budget": "budget.ipynb", "02-trimming": "trimming.ipynb"}
NB = b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}'


def tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): (os.readlink(p) if p.is_symlink() else
                                     hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
        for p in sorted(folder.rglob("*"))
    }


def by_student(submissions) -> dict:
    return {s.student: s for s in submissions}


def test_every_accepted_layout_is_found(tmp_path):
    (tmp_path / "ana" / "01-budget").mkdir(parents=True)  # nbgrader's layout
    (tmp_path / "ana" / "01-budget" / "budget.ipynb").write_bytes(NB + b" ")
    (tmp_path / "ana" / "01-budget" / "timestamp.txt").write_text("2025-03-01 12:00:00.000000 UTC")
    (tmp_path / "ana" / "01-budget" / "submission_secret.txt").write_text("c2VjcmV0")
    (tmp_path / "bo").mkdir()  # notebooks directly in the student's folder
    (tmp_path / "bo" / "trimming.ipynb").write_bytes(NB)
    with zipfile.ZipFile(tmp_path / "Cy Doe_1234_assignsubmission_file_.zip", "w") as archive:  # an LMS export
        archive.writestr("wrapper/01-budget/budget.ipynb", NB + b"  ")
        archive.writestr("wrapper/trimming.ipynb", NB)
        archive.writestr("wrapper/.ipynb_checkpoints/budget-checkpoint.ipynb", b"old")
    (tmp_path / "notes.txt").write_text("from the LMS")
    before = tree(tmp_path)

    found, notes = collect(tmp_path, LESSONS)

    students = by_student(found)
    assert sorted(students) == ["Cy_Doe_1234_assignsubmission_file_", "ana", "bo"]
    ana, bo, cy = students["ana"], students["bo"], students["Cy_Doe_1234_assignsubmission_file_"]
    assert ana.entries["01-budget"].data == NB + b" "
    assert ana.entries["01-budget"].beside() == {"timestamp.txt": "2025-03-01 12:00:00.000000 UTC",
                                                 "submission_secret.txt": "c2VjcmV0"}
    assert ana.entries["02-trimming"].status == "missing"
    assert bo.entries["02-trimming"].data == NB and bo.entries["01-budget"].missing
    assert cy.entries["01-budget"].data == NB + b"  " and cy.entries["02-trimming"].data == NB
    assert cy.entries["01-budget"].origin.endswith(".zip:wrapper/01-budget/budget.ipynb")
    assert notes == ["ignored notes.txt: neither a student's folder nor a .zip archive"]
    assert tree(tmp_path) == before


def test_the_notebook_in_the_lesson_folder_wins_and_the_others_are_reported(tmp_path):
    (tmp_path / "ana" / "01-budget").mkdir(parents=True)
    (tmp_path / "ana" / "01-budget" / "budget.ipynb").write_bytes(NB + b"\n")
    (tmp_path / "ana" / "budget.ipynb").write_bytes(NB)
    (tmp_path / "ana" / "scratch.ipynb").write_bytes(NB)
    (ana,), _ = collect(tmp_path, LESSONS)
    assert ana.entries["01-budget"].data == NB + b"\n"
    assert any("also found and ignored budget.ipynb" in n for n in ana.notes)
    assert any("scratch.ipynb" in n for n in ana.notes)


def test_symbolic_links_are_never_followed(tmp_path):
    secret = tmp_path / "solutions" / "budget.ipynb"
    secret.parent.mkdir()
    secret.write_bytes(b"the instructor's solution")
    submissions = tmp_path / "submissions"
    (submissions / "ana" / "01-budget").mkdir(parents=True)
    (submissions / "ana" / "01-budget" / "budget.ipynb").symlink_to(secret)
    (submissions / "bo").mkdir()
    (submissions / "bo" / "02-trimming").symlink_to(secret.parent, target_is_directory=True)
    (submissions / "cy").symlink_to(secret.parent, target_is_directory=True)
    found, notes = collect(submissions, LESSONS)
    students = by_student(found)
    assert sorted(students) == ["ana", "bo"]
    assert students["ana"].entries["01-budget"].data is None
    assert any("symbolic link 01-budget/budget.ipynb" in n for n in students["ana"].notes)
    assert any("symbolic link 02-trimming" in n for n in students["bo"].notes)
    assert notes == ["skipped the symbolic link cy (links are never followed)"]
    for submission in found:
        for entry in submission.entries.values():
            assert entry.data != b"the instructor's solution"


def test_archives_cannot_point_outside_themselves(tmp_path):
    with zipfile.ZipFile(tmp_path / "ana.zip", "w") as archive:
        archive.writestr("../../01-budget/budget.ipynb", b"escapes")
        link = zipfile.ZipInfo("budget.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
        archive.writestr("sub/trimming.ipynb", NB)
    (ana,), _ = collect(tmp_path, LESSONS)
    assert ana.entries["01-budget"].data is None and ana.entries["01-budget"].missing
    assert ana.entries["02-trimming"].data == NB
    assert any("symbolic link budget.ipynb in the archive" in n for n in ana.notes)


def test_an_unreadable_archive_is_reported_for_every_lesson(tmp_path):
    (tmp_path / "ana.zip").write_bytes(b"PK\x03\x04 this is not a zip")
    (ana,), _ = collect(tmp_path, LESSONS)
    for entry in ana.entries.values():
        assert entry.status == "unreadable" and "could not be read" in entry.problem


def test_oversized_notebooks_are_refused_without_reading_them_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(intake, "MAX_NOTEBOOK_BYTES", 100)
    (tmp_path / "ana").mkdir()
    (tmp_path / "ana" / "budget.ipynb").write_bytes(b"x" * 101)
    with zipfile.ZipFile(tmp_path / "bo.zip", "w") as archive:
        archive.writestr("budget.ipynb", b"y" * 5000)
    found, _ = collect(tmp_path, LESSONS)
    for submission in found:
        entry = submission.entries["01-budget"]
        assert entry.data is None and "limit" in entry.problem


def test_entries_with_the_same_student_id_are_all_graded_under_distinct_ids(tmp_path):
    for name in ("ana", "Jane Doe", "Jane_Doe"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "budget.ipynb").write_bytes(NB + name.encode())
    for name in ("ana.zip", "Jane,Doe.zip"):
        with zipfile.ZipFile(tmp_path / name, "w") as archive:
            archive.writestr("budget.ipynb", NB + name.encode())

    found, notes = collect(tmp_path, LESSONS)

    students = {Path(s.origin).name: s for s in found}
    ids = [s.student for s in found]
    assert len(set(ids)) == 5
    assert students["ana"].student == "ana" and students["Jane_Doe"].student == "Jane_Doe"
    digest = hashlib.sha256(b"ana.zip").hexdigest()[:8]
    assert students["ana.zip"].student == f"ana-{digest}"
    for name in ("Jane Doe", "Jane,Doe.zip"):
        assert students[name].student == "Jane_Doe-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    for name, submission in students.items():  # each graded with its own notebook
        assert submission.entries["01-budget"].data == NB + name.encode()
    jane = next(n for n in notes if "'Jane_Doe'" in n)
    assert jane.startswith("3 entries give the student id 'Jane_Doe'")
    assert f"Jane Doe as '{students['Jane Doe'].student}'" in jane and "Jane_Doe as 'Jane_Doe'" in jane
    assert jane in students["Jane Doe"].notes and jane in students["Jane_Doe"].notes
    assert any(n.startswith("2 entries give the student id 'ana'") for n in notes)
    again, _ = collect(tmp_path, LESSONS)  # the same ids on every run
    assert [s.student for s in again] == ids


NAMES = st.lists(st.text(st.sampled_from("ab _,.+-"), min_size=1, max_size=5).map(
    lambda n: n.replace(".", "") or "x") | st.just("a.zip"), max_size=12)


@given(NAMES, st.randoms())
def test_distinct_ids_are_distinct_safe_and_do_not_depend_on_the_order(names, rnd):
    ids = distinct_ids(names)
    assert len(set(ids.values())) == len(set(names))
    for name, sid in ids.items():
        plain = student_id(name[:-4] if name.endswith(".zip") else name)
        assert sid == plain or sid.startswith(plain + "-")
        assert student_id(sid) == sid
    shuffled = list(names)
    rnd.shuffle(shuffled)
    assert distinct_ids(shuffled) == ids


def test_every_skipped_folder_file_and_entry_is_noted(tmp_path, monkeypatch):
    (tmp_path / ".hidden-student").mkdir()
    (tmp_path / "__MACOSX").mkdir()
    ana = tmp_path / "ana"
    for folder in (".git", ".ipynb_checkpoints", "a/b/c/d/e/f/g"):
        (ana / folder).mkdir(parents=True)
    (ana / ".ipynb_checkpoints" / "budget-checkpoint.ipynb").write_bytes(NB)
    (ana / "a/b/c/d/e/f/g" / "budget.ipynb").write_bytes(NB)
    (ana / "budget.ipynb").write_bytes(NB)
    (ana / "timestamp.txt").write_text("2025-03-01 12:00:00.000000 UTC")
    (ana / "draft.py").write_text("print(1)")
    monkeypatch.setattr(intake, "MAX_FILES", 6)
    with zipfile.ZipFile(tmp_path / "bo.zip", "w") as archive:
        archive.writestr("../escape.ipynb", NB)
        archive.writestr(".hidden/budget.ipynb", NB)
        archive.writestr("readme.md", "hi")
        archive.writestr("trimming.ipynb", NB)
        archive.writestr("w/timestamp.txt", "2025-03-01 12:00:00.000000 UTC")
        archive.writestr("one.ipynb", NB)
        archive.writestr("past-the-limit.ipynb", NB)
        archive.writestr("also-past.ipynb", NB)

    found, notes = collect(tmp_path, LESSONS)

    assert notes == ["skipped .hidden-student (a hidden name starting with '.')",
                     "skipped __MACOSX (a system folder)"]
    students = by_student(found)
    ana_notes = "\n".join(students["ana"].notes)
    assert ".git/ (a hidden name starting with '.')" in ana_notes
    assert ".ipynb_checkpoints/ (JupyterLab's checkpoint copies)" in ana_notes
    assert "a/b/c/d/e/f/g/ (deeper than 6 folders)" in ana_notes
    assert "ignored 1 file(s) that are not notebooks: draft.py" in ana_notes
    assert "timestamp.txt" not in ana_notes  # nbgrader's file beside a notebook is used, not ignored
    bo_notes = "\n".join(students["bo"].notes)
    assert "the archive holds 8 entries: only the first 6 were looked at, 2 were skipped " \
           "(first skipped: past-the-limit.ipynb)" in bo_notes
    assert "../escape.ipynb (a path outside the archive)" in bo_notes
    assert ".hidden/budget.ipynb (a hidden name starting with '.')" in bo_notes
    assert "ignored 1 file(s) in the archive that are not notebooks: readme.md" in bo_notes
    assert students["bo"].entries["02-trimming"].data == NB


def test_long_lists_of_skipped_names_are_counted_not_cut_silently(tmp_path):
    (tmp_path / "ana").mkdir()
    for i in range(15):
        (tmp_path / "ana" / f"file{i:02}.txt").write_text("x")
    (ana,), _ = collect(tmp_path, LESSONS)
    (note,) = [n for n in ana.notes if n.startswith("ignored")]
    assert note.startswith("ignored 15 file(s) that are not notebooks: file00.txt, ")
    assert note.endswith("file09.txt and 5 more")


def test_a_file_is_not_a_submissions_folder(tmp_path):
    (tmp_path / "class.zip").write_bytes(b"")
    with pytest.raises(IntakeError, match="not a folder"):
        collect(tmp_path / "class.zip", LESSONS)


def test_the_digest_follows_the_content(tmp_path):
    (tmp_path / "ana").mkdir()
    (tmp_path / "ana" / "budget.ipynb").write_bytes(NB)
    (first,), _ = collect(tmp_path, LESSONS)
    (again,), _ = collect(tmp_path, LESSONS)
    assert first.digest() == again.digest()
    (tmp_path / "ana" / "budget.ipynb").write_bytes(NB + b" ")
    (changed,), _ = collect(tmp_path, LESSONS)
    assert changed.digest() != first.digest()


@given(st.text(max_size=40))
def test_student_ids_are_safe_path_names(name):
    sid = student_id(name)
    assert sid and all(c.isascii() and (c.isalnum() or c in "._@+-") for c in sid)
    assert not sid.startswith(".") and student_id(sid) == sid
