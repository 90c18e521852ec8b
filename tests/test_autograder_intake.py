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
from autograder.intake import IntakeError, collect, student_id

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


def test_two_entries_with_the_same_student_id_are_refused(tmp_path):
    (tmp_path / "ana").mkdir()
    with zipfile.ZipFile(tmp_path / "ana.zip", "w") as archive:
        archive.writestr("budget.ipynb", NB)
    with pytest.raises(IntakeError, match="both give the student id 'ana'"):
        collect(tmp_path, LESSONS)


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
