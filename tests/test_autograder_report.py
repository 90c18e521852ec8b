"""Reports: the grades CSV, the summary, feedback without hidden tests, and gradebook merging."""

from __future__ import annotations

import csv
import io
import shutil
import sqlite3
import warnings
from contextlib import closing
from datetime import datetime

import mistune
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from autograder.feedback import lesson_page, scrub
from autograder.gradebooks import (
    GradebookError,
    check_gradebook,
    merge_gradebooks,
    rebase_gradebook,
)
from autograder.report import (
    CSV_COLUMNS,
    FORMULA_STARTS,
    csv_cell,
    grades_csv,
    md_text,
    summary_markdown,
)

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


HOSTILE_TEXT = st.text(st.sampled_from("=+-@\t\r\na<>&|[]()`*_!#\\/:\"' "), max_size=30)


@given(HOSTILE_TEXT, HOSTILE_TEXT)
def test_no_csv_cell_starts_like_a_spreadsheet_formula(student, note):
    results = {student or "x": {"lessons": {"01-budget": lesson(1.0, [], notes=[note] if note else [])}}}
    rows = list(csv.reader(io.StringIO(grades_csv(results), newline="")))
    assert rows[0] == list(CSV_COLUMNS)
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(FORMULA_STARTS), row
    assert len(rows) == 2 and len(rows[1]) == len(CSV_COLUMNS)  # no cell ends its row early
    plain = (student or "x").replace("\r\n", "\n").replace("\r", "\n")
    assert rows[1][0] in (plain, "'" + plain)  # at most a quote is added


def test_formula_like_ids_and_notes_are_quoted_and_others_kept():
    results = {"=cmd|'/c calc'!A1": {"lessons": {"01-budget": lesson(1.0, [], notes=["+1 point"])}},
               "@ana": {"lessons": {"01-budget": lesson(2.0, [])}}, "bo": {"lessons": {"01-budget": lesson(2.0, [])}}}
    rows = list(csv.DictReader(io.StringIO(grades_csv(results))))
    assert [r["student"] for r in rows] == ["'=cmd|'/c calc'!A1", "'@ana", "bo"]
    assert rows[0]["notes"] == "'+1 point" and rows[0]["score"] == "1"
    assert csv_cell("-3") == "'-3" and csv_cell("\tx") == "'\tx" and csv_cell("3") == "3"


def rendered_tags(markdown: str) -> set[str]:
    """The HTML tags a Markdown renderer produces for ``markdown`` (mistune, as nbconvert uses)."""
    import re

    return set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", mistune.html(markdown)))


def test_submission_text_in_the_summary_renders_as_text_not_html():
    script = "<script>alert('owned')</script>"
    students = {"ana": {"origin": "<img src=x onerror=alert(1)>.zip", "intake_notes": [f"ignored {script}.txt"],
                        "lessons": {"01-budget": lesson(0.0, [outcome("a-one", 0, {
                            "ename": "ValueError", "evalue": f"{script} [click](javascript:alert(1)) ![i](http://t/x)"})],
                            notes=["cell 2: a | b <b>bold</b>\n# heading"])}}}
    summary = summary_markdown(students, notes=[f"ignored {script}: neither a student's folder nor a .zip"])
    assert "<script" not in summary and "<img" not in summary and "<b>" not in summary
    tags = rendered_tags(summary)
    assert tags <= {"h1", "h2", "p", "ul", "li", "strong", "table", "thead", "tbody", "tr", "th", "td", "code"}, tags
    assert "&lt;script&gt;alert('owned')&lt;/script&gt;" in summary  # still readable
    html_out = mistune.html(summary)
    assert "<a " not in html_out and "<img" not in html_out and "<h1>heading" not in html_out
    assert summary.count("| ana |") == 1  # the table row keeps its columns


@given(HOSTILE_TEXT)
@example("\t\t:")  # leading tabs once made an indented code block
@example("      four spaces and more")
@example("--")  # "- --" is a thematic break
@example("1. first")  # an ordered list inside the item
@example("+")
def test_md_text_is_one_line_with_no_raw_markup(text):
    escaped = md_text(text)
    assert "\n" not in escaped and "\r" not in escaped
    assert "<" not in escaped and ">" not in escaped
    rendered = mistune.html(f"- {escaped}")
    assert rendered_tags(f"- {escaped}") <= {"ul", "li"}, rendered


def test_feedback_withholds_messages_that_quote_hidden_tests():
    tests = [outcome("a-one", 0, {"ename": "AssertionError", "evalue": f"caller was: {HIDDEN[0]}"}),
             outcome("a-two", 0, {"ename": "stderr", "evalue": "Warning: deprecated\nsecond line"}),
             outcome("a-three", 0, {"ename": "ValueError", "evalue": "x" * 5000})]
    page = lesson_page("bo", "01-budget", lesson(0.0, tests), {"a-one": "Hidden: priming"}, HIDDEN)
    assert HIDDEN[0] not in page and "quotes hidden test code" in page
    assert "wrote to standard error" in page and "second line" not in page
    assert "x" * 601 not in page and "Hidden: priming" in page
    assert scrub("fine", HIDDEN) == "fine"


def make_template(path, cells=("a-one", "a-two")):
    """A template gradebook with one lesson of ``cells`` tests (nbgrader picks new ids each time)."""
    from nbgrader.api import Gradebook

    with sqlite3.connect(path) as db:  # an existing database: nbgrader then skips running alembic
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version VALUES ('test')")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings
        with Gradebook(f"sqlite:///{path}") as gb:
            gb.add_assignment("01-budget")
            gb.add_notebook("budget", "01-budget")
            for name in cells:
                gb.add_grade_cell(name, "budget", "01-budget", max_score=1, cell_type="code")
                gb.add_source_cell(name, "budget", "01-budget", cell_type="code", locked=True,
                                   source="assert x", checksum="c")
    return path


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A template gradebook with one lesson of two tests."""
    return make_template(tmp_path_factory.mktemp("template") / "template.db")


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


def test_a_gradebook_held_open_sees_the_next_merge(gradebooks, tmp_path):
    """The formgrader keeps its gradebook open for as long as the server runs: a re-grade must
    land in the file it holds, not in a new file renamed over it."""
    from nbgrader.api import Gradebook

    template, students = gradebooks
    merged = tmp_path / "merged.db"
    merge_gradebooks(template, {"ana": students["ana"]}, merged)
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{merged}") as held:
        warnings.simplefilter("ignore")
        assert [s.id for s in held.students] == ["ana"]
        inode = merged.stat().st_ino
        merge_gradebooks(template, students, merged)
        held.db.expire_all()  # as each formgrader request starts afresh
        assert sorted(s.id for s in held.students) == ["ana", "bo"]
        assert held.find_submission("01-budget", "bo").score == 1.0
    assert merged.stat().st_ino == inode and not merged.with_suffix(".tmp").exists()


def _graded(template, tmp_path, student, scores, timestamp):
    """``student``'s own gradebook, as a worker leaves it, for a submission made at ``timestamp``."""
    from nbgrader.api import Gradebook

    path = tmp_path / f"{student}-{timestamp:%H%M}.db"
    shutil.copy(template, path)
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{path}") as gb:
        warnings.simplefilter("ignore")
        gb.add_student(student)
        submission = gb.add_submission("01-budget", student, timestamp=timestamp)
        for grade, score in zip(submission.notebooks[0].grades, scores, strict=True):
            grade.auto_score = score
        gb.db.commit()
    return path


def test_a_regrade_keeps_what_the_instructor_entered_in_the_formgrader(template, tmp_path):
    """Overridden scores, extra credit and flags survive grading again; an override on work
    the learner has since submitted again does not silently apply to the new work, and the
    previous gradebook is kept, named in the notes."""
    from nbgrader.api import Gradebook

    first, later = datetime(2026, 3, 1, 9, 0), datetime(2026, 3, 2, 9, 0)
    merged = tmp_path / "gradebook.db"
    run = {"ana": _graded(template, tmp_path, "ana", (1, 1), first),
           "bo": _graded(template, tmp_path, "bo", (1, 0), first)}
    assert merge_gradebooks(template, run, merged) == []
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{merged}") as gb:
        warnings.simplefilter("ignore")
        overridden = gb.find_grade("a-two", "budget", "01-budget", "bo")
        overridden.manual_score, overridden.needs_manual_grade = 0.5, False  # as the formgrader saves it
        gb.find_grade("a-one", "budget", "01-budget", "ana").extra_credit = 1
        gb.find_submission_notebook("budget", "01-budget", "ana").flagged = True
        gb.db.commit()

    notes = merge_gradebooks(template, run, merged)  # the same submissions graded again
    assert notes == [] and not list(tmp_path.glob("gradebook-before-*.db"))
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{merged}") as gb:
        warnings.simplefilter("ignore")
        assert gb.find_submission("01-budget", "bo").score == 1.5
        assert gb.find_submission("01-budget", "ana").score == 3.0  # 2 + 1 extra credit
        assert gb.find_submission_notebook("budget", "01-budget", "ana").flagged
        assert not gb.find_grade("a-two", "budget", "01-budget", "bo").needs_manual_grade

    run["bo"] = _graded(template, tmp_path, "bo", (0, 0), later)  # bo submitted again
    notes = merge_gradebooks(template, run, merged)
    kept = list(tmp_path.glob("gradebook-before-*.db"))
    assert len(kept) == 1 and kept[0].name in notes[0] and len(notes) == 2, notes
    assert "bo's 01-budget/budget cell a-two" in notes[1] and "submitted again" in notes[1], notes
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{merged}") as gb:
        warnings.simplefilter("ignore")
        assert gb.find_submission("01-budget", "bo").score == 0  # the new work, as graded
        assert gb.find_submission("01-budget", "ana").score == 3.0
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{kept[0]}") as gb:
        warnings.simplefilter("ignore")
        assert gb.find_grade("a-two", "budget", "01-budget", "bo").manual_score == 0.5  # nothing lost


def test_a_merge_fills_the_empty_gradebook_the_hub_prepares(gradebooks, tmp_path):
    """On the hub, the formgrader's settings make an empty ``gradebook.db`` before any grading
    (with the umask's permissions); the first grade run must fill it, not fail on it."""
    from nbgrader.api import Gradebook

    template, students = gradebooks
    merged = tmp_path / "gradebook.db"
    merged.touch(mode=0o664)
    assert merge_gradebooks(template, students, merged) == []
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{merged}") as gb:
        warnings.simplefilter("ignore")
        assert sorted(s.id for s in gb.students) == ["ana", "bo"]


def test_gradebooks_graded_on_another_release_of_the_lessons_are_rebased_then_merged(gradebooks, tmp_path):
    """Shards release the lessons themselves: same names, other ids; rebasing makes them one gradebook."""
    from nbgrader.api import Gradebook

    template, students = gradebooks
    other = make_template(tmp_path / "other.db")
    cell_ids = "SELECT id FROM base_cell ORDER BY name"
    with closing(sqlite3.connect(template)) as a, closing(sqlite3.connect(other)) as b:
        assert a.execute(cell_ids).fetchall() != b.execute(cell_ids).fetchall()  # the premise
    rebased = {}
    for student, path in students.items():
        rebased[student] = tmp_path / f"{student}-rebased.db"
        rebase_gradebook(path, template, other, rebased[student], student)
        check_gradebook(rebased[student], other, student)
    merge_gradebooks(other, rebased, tmp_path / "merged.db")
    with warnings.catch_warnings(), Gradebook(f"sqlite:///{tmp_path / 'merged.db'}") as gb:
        warnings.simplefilter("ignore")
        assert {s.id: gb.find_submission("01-budget", s.id).score for s in gb.students} == {"ana": 2.0, "bo": 1.0}
        grades = {g.name: g.auto_score for g in gb.find_submission_notebook("budget", "01-budget", "bo").grades}
        assert grades == {"a-one": 1.0, "a-two": 0.0}


def test_rebasing_onto_a_template_without_a_graded_cell_is_refused(gradebooks, tmp_path):
    template, students = gradebooks
    smaller = make_template(tmp_path / "smaller.db", cells=("a-one",))
    with pytest.raises(GradebookError, match="lacks .*a-two"):
        rebase_gradebook(students["bo"], template, smaller, tmp_path / "bo.db", "bo")


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
