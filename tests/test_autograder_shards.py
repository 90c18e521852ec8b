"""Grading spread over machines: `grade --shard K/N` on every share, then `merge`, equals one run.

The slow test grades a small class of lesson 01-budget for real, in the sandbox, once as one run
and once as two shards run side by side, and compares what an instructor uses: ``grades.csv``,
``summary.md``, every feedback file, and the gradebook's scores.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from hostile import require_sandbox
from hostile.cases import LESSON, NOTEBOOK
from hypothesis import given
from hypothesis import strategies as st
from support.pipeline import REPO, fill, offline_env, solution_sources

from autograder.grade import parse_shard, shard_of
from autograder.locking import output_lock
from autograder.merge import MergeError, check_shards, merge_outputs

OPTIONS = ["--lessons", LESSON, "--cell-timeout", "20", "--memory", "1024", "--quiet"]


@given(st.sets(st.text("abcdefgh_-", min_size=1, max_size=6), max_size=40), st.integers(1, 9))
def test_the_shards_partition_the_class_evenly_and_the_same_way_every_time(students, n):
    share = shard_of(list(students), n)
    assert set(share) == students and set(share.values()) <= set(range(1, n + 1))
    sizes = [list(share.values()).count(k) for k in range(1, n + 1)]
    assert max(sizes) - min(sizes) <= 1
    assert shard_of(sorted(students, reverse=True), n) == share


@pytest.mark.parametrize("text, message", [("3", "expected K/N"), ("0/2", "between 1 and N"),
                                           ("3/2", "K=3, N=2"), ("a/b", "expected K/N")])
def test_a_malformed_shard_says_what_is_expected(text, message):
    with pytest.raises(ValueError, match=message):
        parse_shard(text)


@pytest.mark.parametrize("shards, message", [
    ([], "nothing to merge"), ([(1, 2), (1, 3)], "different splits"),
    ([(1, 2), (1, 2), (2, 2)], "shard 1/2 was given more than once"), ([(2, 3), (1, 3)], "shard 3/3 is missing"),
])
def test_an_incomplete_set_of_shards_is_refused(shards, message):
    with pytest.raises(MergeError, match=message):
        check_shards(shards)


def test_a_folder_that_is_not_a_finished_shard_is_refused(tmp_path):
    (tmp_path / "one").mkdir()
    with pytest.raises(MergeError, match="has no run.json"):
        merge_outputs([tmp_path / "one"], tmp_path / "merged")


def frozen_course(dest: Path) -> Path:
    """A course root with this lesson as it is now, so every run grades against the same sources."""
    dest.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", dest)
    for folder in ("solutions", "course"):
        shutil.copytree(REPO / folder / LESSON, dest / folder / LESSON)
    return dest


def grade(course: Path, submissions: Path, out: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
               "--course", str(course), *OPTIONS, *extra]
    return subprocess.Popen(command, cwd=REPO, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finished(process: subprocess.Popen) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=600)
    return process.returncode, stderr


def gradebook_scores(path: Path) -> list[tuple]:
    """Every grade in a merged gradebook, by student, lesson, notebook and test (not nbgrader's row ids)."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return sorted(db.execute(
            "SELECT sa.student_id, a.name, n.name, c.name, g.auto_score, g.manual_score, g.needs_manual_grade "
            "FROM grade g JOIN base_cell c ON g.cell_id = c.id JOIN submitted_notebook sn ON g.notebook_id = sn.id "
            "JOIN notebook n ON sn.notebook_id = n.id JOIN submitted_assignment sa ON sn.assignment_id = sa.id "
            "JOIN assignment a ON sa.assignment_id = a.id").fetchall())


def outputs(folder: Path) -> dict[str, str]:
    files = {name: (folder / name).read_text(encoding="utf-8") for name in ("grades.csv", "summary.md")}
    for page in sorted((folder / "feedback").rglob("*")):
        if page.is_file():
            files[str(page.relative_to(folder))] = page.read_text(encoding="utf-8")
    return files


@pytest.mark.slow
def test_two_shards_merged_equal_one_run(tmp_path):
    require_sandbox()
    course = frozen_course(tmp_path / "course")
    released = json.loads((course / "course" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    answers = solution_sources(json.loads((course / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8")))
    first = next(iter(answers))
    students = {"ana": fill(released, answers), "bo": released, "cy": fill(released, {first: answers[first]}),
                "di": fill(released, answers)}
    submissions = tmp_path / "submissions"
    for student, notebook in students.items():
        (submissions / student / LESSON).mkdir(parents=True)
        (submissions / student / LESSON / NOTEBOOK).write_text(json.dumps(notebook), encoding="utf-8")

    runs = {"single": grade(course, submissions, tmp_path / "single", "--jobs", "1"),
            "shard-1": grade(course, submissions, tmp_path / "shard-1", "--jobs", "1", "--shard", "1/2")}
    codes = {name: finished(process) for name, process in runs.items()}
    codes["shard-2"] = finished(grade(course, submissions, tmp_path / "shard-2", "--jobs", "1", "--shard", "2/2"))
    assert all(code == 0 for code, _ in codes.values()), codes
    assert "shard 1/2: grading 2 of the class's 4 students" in codes["shard-1"][1]

    merged = tmp_path / "merged"
    merging = [sys.executable, "-m", "autograder", "merge", str(tmp_path / "shard-2"), str(tmp_path / "shard-1"),
               "--out", str(merged)]
    merged.mkdir()
    with output_lock(merged):  # another run writing there: the merge waits for nobody and writes nothing
        busy = subprocess.run(merging, cwd=REPO, env=offline_env(), capture_output=True, text=True, timeout=120,
                              check=False)
    assert busy.returncode == 2 and "being written by another run (pid" in busy.stderr, busy.stderr
    assert sorted(p.name for p in merged.iterdir()) == [".lock"]
    result = subprocess.run(merging, cwd=REPO, env=offline_env(), capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr

    single, joined = outputs(tmp_path / "single"), outputs(merged)
    assert sorted(joined) == sorted(single)
    for name, text in single.items():
        assert joined[name] == text, name
    scores = gradebook_scores(merged / "gradebook.db")
    assert scores == gradebook_scores(tmp_path / "single" / "gradebook.db")
    assert {row[0] for row in scores} == set(students)
    totals = {}
    for student, *_rest, auto, _manual, _flag in scores:
        totals[student] = totals.get(student, 0) + (auto or 0)
    assert totals["bo"] == 0 and totals["ana"] == totals["di"] > totals["cy"]
    shard_summary = (tmp_path / "shard-1" / "summary.md").read_text(encoding="utf-8")
    assert "Shard 1/2 only" in shard_summary and "Shard" not in single["summary.md"]
    assert not (tmp_path / "single" / "canvas.csv").exists()  # Canvas gets its own export filled in

    again = subprocess.run([sys.executable, "-m", "autograder", "merge", str(tmp_path / "shard-1"),
                            "--out", str(tmp_path / "half")], cwd=REPO, env=offline_env(), capture_output=True,
                           text=True, timeout=120, check=False)
    assert again.returncode == 2 and "shard 2/2 is missing" in again.stderr
