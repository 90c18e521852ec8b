"""Reports: the grades CSV, the summary, feedback without hidden tests, and gradebook merging."""

from __future__ import annotations

import csv
import io
import shutil
import sqlite3
import warnings

import pytest

from autograder.feedback import lesson_page, scrub
from autograder.gradebooks import GradebookError, check_gradebook, merge_gradebooks
from autograder.report import CSV_COLUMNS, grades_csv, summary_markdown

HIDDEN = ["assert count_chat([]) == 3, 'an empty list still primes the reply'"]


def lesson(score, tests, **extra):
    return {"status": "graded", "score": score, "max_score": 2.0, "tests": tests, "notes": [], "events": [], **extra}


def outcome(grade_id, score, error=None):
    return {"grade_id": grade_id, "points": 1.0, "score": score, "error": error}


STUDENTS = {
    "ana": {"origin": "ana.zip", "intake_notes": [], "lessons": {"01-budget": lesson(2.0, [outcome("a-one", 1), outcome("a-two", 1)])}},
    "bo": {"origin": "bo", "intake_notes": ["skipped the symbolic link x"], "lessons": {"01-budget": lesson(
        1.0, [outcome("a-one", 1), outcome("a-two", 0, {"ename": "AssertionError", "evalue": "expected 3, got 0\nmore"})],
        events=[{"cell": 4, "kind": "timeout", "detail": "ran for more than 60 s and was interrupted",
                 "grade_id": None, "source": "while True:"}])}},
    "cy": {"origin": "cy", "intake_notes": [], "lessons": {"01-budget": {
        "status": "unreadable", "score": 0.0, "max_score": 2.0, "tests": [], "events": [],
        "notes": ["not valid JSON (line 1, column 2: Expecting value)"]}}},
}


def test_the_csv_has_one_row_per_student_and_lesson():
    rows = list(csv.DictReader(io.StringIO(grades_csv(STUDENTS))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [(r["student"], r["score"], r["status"], r["attention"]) for r in rows] == [
        ("ana", "2", "graded", "no"), ("bo", "1", "graded", "yes"), ("cy", "0", "unreadable", "yes")]
    assert "cell 5 (`while True:`): ran for more than 60 s" in rows[1]["notes"]


def test_the_summary_says_who_failed_what_and_why():
    summary = summary_markdown(STUDENTS)
    assert "| bo | 1/2 ⚠ | 1/2 |" in summary and "| cy | 0/2 (unreadable) ⚠ | 0/2 |" in summary
    attention = summary.split("## Needs your attention")[1].split("## Failed tests")[0]
    assert "**ana**" not in attention
    assert "- **bo** (bo)\n  - skipped the symbolic link x\n  - 01-budget (graded, 1/2):" in attention
    assert "not valid JSON" in attention
    assert "- 01-budget `a-two`: 1 student(s)\n  - bo (AssertionError: expected 3, got 0)" in summary


def test_feedback_withholds_messages_that_quote_hidden_tests():
    tests = [outcome("a-one", 0, {"ename": "AssertionError", "evalue": f"caller was: {HIDDEN[0]}"}),
             outcome("a-two", 0, {"ename": "stderr", "evalue": "Warning: deprecated\nsecond line"}),
             outcome("a-three", 0, {"ename": "ValueError", "evalue": "x" * 5000})]
    page = lesson_page("bo", "01-budget", lesson(0.0, tests), {"a-one": "Hidden: priming"}, HIDDEN)
    assert HIDDEN[0] not in page and "quotes hidden test code" in page
    assert "wrote to standard error" in page and "second line" not in page
    assert "x" * 601 not in page and "Hidden: priming" in page
    assert scrub("fine", HIDDEN) == "fine"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A template gradebook with one lesson of two tests."""
    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("template") / "template.db"
    with sqlite3.connect(path) as db:  # an existing database: nbgrader then skips running alembic
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version VALUES ('test')")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings
        with Gradebook(f"sqlite:///{path}") as gb:
            gb.add_assignment("01-budget")
            gb.add_notebook("budget", "01-budget")
            for name in ("a-one", "a-two"):
                gb.add_grade_cell(name, "budget", "01-budget", max_score=1, cell_type="code")
                gb.add_source_cell(name, "budget", "01-budget", cell_type="code", locked=True,
                                   source="assert x", checksum="c")
    return path


@pytest.fixture
def gradebooks(template, tmp_path):
    """The template, and one graded copy of it per student."""
    from nbgrader.api import Gradebook

    students = {}
    for student, scores in (("ana", (1, 1)), ("bo", (1, 0))):
        path = tmp_path / f"{student}.db"
        shutil.copy(template, path)
        with warnings.catch_warnings(), Gradebook(f"sqlite:///{path}") as gb:
            warnings.simplefilter("ignore")
            gb.add_student(student)
            submission = gb.add_submission("01-budget", student)
            for grade, score in zip(submission.notebooks[0].grades, scores, strict=True):
                grade.auto_score = score
            gb.db.commit()
        students[student] = path
    return template, students


def test_checked_gradebooks_merge_into_one(gradebooks, tmp_path):
    from nbgrader.api import Gradebook

    template, students = gradebooks
    for student, path in students.items():
        check_gradebook(path, template, student)
    merge_gradebooks(template, students, tmp_path / "merged.db")
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{tmp_path / 'merged.db'}") as gb:
        warnings.simplefilter("ignore")
        assert {s.id: gb.find_submission("01-budget", s.id).score for s in gb.students} == {"ana": 2.0, "bo": 1.0}


@pytest.mark.parametrize("tamper, message", [
    ("UPDATE grade SET auto_score = 5", "outside"),
    ("UPDATE source_cell SET source = 'assert True'", "differs from the template"),
    ("UPDATE grade_cells SET max_score = 100", "differs from the template"),
    ("INSERT INTO student (id) VALUES ('mallory')", "other students"),
])
def test_a_gradebook_that_was_tampered_with_is_rejected(gradebooks, tamper, message):
    template, students = gradebooks
    with sqlite3.connect(students["bo"]) as db:
        db.execute(tamper)
    with pytest.raises(GradebookError, match=message):
        check_gradebook(students["bo"], template, "bo")


def test_a_file_that_is_not_a_gradebook_is_rejected(gradebooks, tmp_path):
    template, _ = gradebooks
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(GradebookError, match="not a readable gradebook"):
        check_gradebook(junk, template, "bo")
