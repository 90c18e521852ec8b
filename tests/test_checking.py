"""ctxlab.course.check and ctxlab.course.check_all: a lesson's visible tests, run in the learner's namespace,
reported test by test with the reason first; hidden tests counted, never run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.pipeline import REPO, fill, offline_env, solution_sources

import ctxlab
import ctxlab.course
from ctxlab.course.checking import lesson_exercises


def code(source, **nbgrader):
    meta = {"nbgrader": {"schema_version": 3, **nbgrader}} if nbgrader else {}
    return {"cell_type": "code", "metadata": meta, "source": source, "outputs": [], "execution_count": None}


def answer(grade_id, source="raise NotImplementedError()"):
    return code(source, grade_id=grade_id, solution=True, grade=False, locked=False)


def graded(grade_id, source, points=1):
    return code(source, grade_id=grade_id, solution=False, grade=True, locked=True, points=points)


def markdown(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


LESSON = [
    markdown("# A small lesson"),
    markdown("### Exercise 1 · Double a number (3 points)"),
    answer("double"),
    graded("double-visible", '"""Visible: two doubled."""\nassert double(2) == 4, f"expected double(2) == 4, got {double(2)}"'),
    graded("double-negative", '"""Hidden: negative numbers."""', points=2),
    markdown("### Exercise 2 · Greet (2 points)\n\nSome prose."),
    answer("greet"),
    graded("greet-visible", '"""Visible: a name."""\nassert greet("Ada") == "Hello, Ada!", "greet says hello"'),
    graded("greet-plain-assert", '"""Visible: bare."""\nassert greet("") == "Hello, !"'),
    markdown("## Summary"),
    answer("q1-answer", "q1 = None"),
    graded("q1-check", '"""Concept check Q1: the answer."""\nassert q1 == "B", f"q1 should be one of the letters; got {q1!r}"'),
]


@pytest.fixture
def lesson(tmp_path, monkeypatch):
    path = tmp_path / "small.ipynb"
    path.write_text(json.dumps({"cells": LESSON, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    monkeypatch.chdir(tmp_path)
    return path


def test_exercises_are_answer_cells_and_the_tests_after_them():
    found = lesson_exercises({"cells": LESSON})
    assert [(e.name, e.numbers, [t.grade_id for t in e.tests]) for e in found] == [
        ("double", [1], ["double-visible", "double-negative"]),
        ("greet", [2], ["greet-visible", "greet-plain-assert"]),
        ("q1", [], ["q1-check"]),
    ]
    assert [t.hidden for t in found[0].tests] == [False, True]
    assert found[0].title == "Exercise 1 · Double a number" and found[2].title == "Concept check Q1"


def test_a_solution_notebooks_hidden_blocks_are_left_out_as_in_the_learners_copy():
    cells = [
        answer("a"),
        graded("a-hidden", '"""Hidden: x."""\n### BEGIN HIDDEN TESTS\nassert False\n### END HIDDEN TESTS\n'),
        graded("a-mixed", "assert True\n### BEGIN HIDDEN TESTS\nassert False\n### END HIDDEN TESTS\n"),
    ]
    (exercise,) = lesson_exercises({"cells": cells})
    assert [t.grade_id for t in exercise.visible] == ["a-mixed"] and exercise.visible[0].source == "assert True\n"
    report = ctxlab.course.check("a", notebook=_write(cells), namespace={})
    assert report.passed and report.hidden_tests == 1


def _write(cells):
    import tempfile

    folder = Path(tempfile.mkdtemp())
    (folder / "n.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}}))
    return folder / "n.ipynb"


def test_an_exercise_in_two_answer_cells_is_checked_part_by_part_or_whole():
    cells = [
        markdown("### Exercise 4 · Two functions (2 points)"),
        answer("first"), graded("first-visible", "assert first() == 1, 'first() should be 1'"),
        answer("second"), graded("second-visible", "assert second() == 2, 'second() should be 2'"),
        markdown("## Summary"),
        answer("q1-answer"), graded("q1-check", '"""Concept check Q1: why."""\nassert q1 == "A", "q1 is A"'),
    ]
    found = lesson_exercises({"cells": cells})
    assert [(e.name, e.title, e.numbers) for e in found] == [
        ("first", "Exercise 4 · Two functions", [4]),
        ("second", "Exercise 4 · Two functions (second)", [4]),
        ("q1", "Concept check Q1", []),
    ]
    namespace = {"first": lambda: 1, "second": lambda: 3}
    whole = ctxlab.course.check(4, notebook=_write(cells), namespace=namespace)
    assert [o.passed for o in whole.outcomes] == [True, False] and whole.title == "Exercise 4 · Two functions"
    assert ctxlab.course.check("first", notebook=_write(cells), namespace=namespace).passed


def test_a_passing_exercise_reports_its_points_and_what_grading_adds(lesson):
    report = ctxlab.course.check("double", namespace={"double": lambda x: 2 * x})
    assert report.passed and (report.points, report.max_points) == (1, 1)
    text = str(report)
    assert text.splitlines()[0] == "Exercise 1 · Double a number: 1 of 1 visible test passed, 1 of 1 visible points"
    assert "passed  double-visible (1 point): Visible: two doubled." in text
    assert "1 hidden test (2 points) run when the notebook is graded" in text
    assert "double-negative" not in text, "a hidden test's name is not shown"


def test_a_failure_says_why_first_then_which_test(lesson):
    report = ctxlab.course.check(1, namespace={"double": lambda x: x + 1})
    assert not report.passed and report.points == 0
    lines = str(report).splitlines()
    assert lines[1] == "  FAILED  expected double(2) == 4, got 3"
    assert lines[2].strip() == "test double-visible (1 point): Visible: two doubled."


def test_an_unwritten_answer_or_an_error_is_a_sentence_not_a_traceback(lesson):
    def double(x):
        raise NotImplementedError()

    def greet(name):
        return {}[name]

    text = str(ctxlab.course.check_all(namespace={"double": double, "greet": greet, "q1": "B"}))
    assert "Traceback" not in text
    assert "not done yet: double raises NotImplementedError" in text
    assert f"your code raised KeyError: 'Ada' (in your greet, line {greet.__code__.co_firstlineno + 1})" in text
    missing = str(ctxlab.course.check("greet", namespace={}))
    assert "name 'greet' is not defined: run the exercise's answer cell" in missing


def test_a_bare_assert_shows_the_line_that_failed(lesson):
    report = ctxlab.course.check("greet", namespace={"greet": lambda name: f"Hello, {name}!" if name else "hi"})
    (failed,) = [o for o in report.outcomes if not o.passed]
    assert failed.grade_id == "greet-plain-assert"
    assert failed.message == 'this check failed: assert greet("") == "Hello, !"'


def test_failures_come_before_passes(lesson):
    report = ctxlab.course.check("greet", namespace={"greet": lambda name: f"Hello, {name}!" if name else "hi"})
    lines = str(report).splitlines()
    assert lines[1].startswith("  FAILED") and any(line.startswith("  passed  greet-visible") for line in lines[3:])


def test_check_all_sums_up_the_lesson(lesson):
    namespace = {"double": lambda x: 2 * x, "greet": lambda name: "Hello!", "q1": "B"}
    report = ctxlab.course.check_all(namespace=namespace)
    assert [e.passed for e in report.exercises] == [True, False, True]
    assert (report.points, report.max_points) == (2, 4)
    assert report.summary().splitlines() == [
        "small.ipynb: 2 of 3 exercises pass their visible tests; visible points 2 of 4.",
        "Hidden tests (2 more points) run when the notebook is graded.",
    ]
    assert str(report).endswith(report.summary())


def test_tests_read_the_learners_names_and_leave_them_alone(lesson, tmp_path):
    cells = [answer("a"), graded("a-visible", "_seen = value\nvalue = 'changed by the test'\nprint('noise')")]
    path = tmp_path / "other.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}}))
    namespace = {"value": 41}
    report = ctxlab.course.check("a", notebook=path, namespace=namespace)
    assert report.passed and namespace == {"value": 41}
    assert report.outcomes[0].printed == "noise\n"


def test_unknown_names_are_refused_with_the_list_and_a_missing_notebook_is_reported(lesson, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"no exercise called 'tripple'; its exercises are: 'double' \(Exercise 1"):
        ctxlab.course.check("tripple", namespace={})
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    report = ctxlab.course.check_all(namespace={})
    assert not report.passed and "no .ipynb file in" in str(report) and "notebook='name.ipynb'" in str(report)


def test_the_notebook_a_kernel_runs_is_found_from_its_session(lesson, tmp_path):
    (tmp_path / "second.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))
    report = ctxlab.course.check("double", namespace={"__session__": str(lesson), "double": lambda x: 2 * x})
    assert report.passed


def test_the_html_report_keeps_words_whole_and_colours_the_verdicts(lesson):
    report = ctxlab.course.check("double", namespace={"double": lambda x: 0})
    page = report._repr_html_()
    assert "word-break:normal" in page and "color:#b42318" in page and "&#x27;" not in page.split("FAILED")[0]
    assert all(len(line) <= 96 for line in str(report).splitlines())


def test_yours_or_reference_falls_back_once_and_says_so(capsys):
    calls = []

    def mine(x):
        calls.append(x)
        raise NotImplementedError()

    use = ctxlab.course.yours_or_reference(mine, ctxlab.count_text, exercise="Exercise 9")
    assert use("hello world") == ctxlab.count_text("hello world") and use("again") == ctxlab.count_text("again")
    assert capsys.readouterr().out == "Exercise 9 (mine) is not done yet: this shows ctxlab.count_text instead until it is.\n"
    assert use.used_reference and calls == ["hello world", "again"]
    written = ctxlab.course.yours_or_reference(lambda x: 7, ctxlab.count_text)
    assert written("x") == 7 and not written.used_reference
    broken = ctxlab.course.yours_or_reference(lambda x: 1 / 0, ctxlab.count_text)
    with pytest.raises(ZeroDivisionError):  # a real bug is not hidden behind the reference
        broken("x")


RUN_AND_CHECK = """
import contextlib, io, json, os, sys
from IPython.testing.globalipapp import start_ipython
import ctxlab
notebook, path = json.loads(sys.stdin.read()), sys.argv[1]  # a lesson is more than one argument may hold
shell = start_ipython()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            shell.run_cell("".join(cell["source"]), silent=True)
report = ctxlab.course.check_all(notebook=path, namespace=shell.user_ns)
print(json.dumps({"exercises": len(report.exercises), "passed": sum(e.passed for e in report.exercises),
                  "points": report.points, "text": str(report)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("folder", sorted(p.name for p in (REPO / "course").iterdir() if p.is_dir()))
def test_every_lesson_checks_clean_with_its_solution_and_fails_blank(folder):
    """The real lessons: the solution passes every visible test, the blank notebook none."""
    (released,) = sorted((REPO / "course" / folder).glob("*.ipynb"))
    (source,) = sorted((REPO / "solutions" / folder).glob("*.ipynb"))
    notebook = json.loads(released.read_text(encoding="utf-8"))
    exercises = lesson_exercises(notebook)
    assert exercises and all(e.visible for e in exercises), "every exercise has a visible test"
    solved = fill(notebook, solution_sources(json.loads(source.read_text(encoding="utf-8"))))
    for name, nb in (("solution", solved), ("blank", notebook)):
        result = subprocess.run(
            [sys.executable, "-c", RUN_AND_CHECK, str(released)], input=json.dumps(nb),
            env={**offline_env(), "MPLBACKEND": "Agg"},
            capture_output=True, text=True, timeout=600, cwd=released.parent,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        if name == "solution":
            assert summary["passed"] == summary["exercises"], summary["text"]
        else:
            assert summary["passed"] == 0 and summary["points"] == 0, summary["text"]


def test_an_exercises_tests_run_in_order_in_one_scope(tmp_path):
    """A helper the first visible test defines reaches the later ones, as when the cells run in
    order: after a restart, a learner who runs only the answer cell and check() is told the truth."""
    cells = [
        markdown("### Exercise 1 · Count (2 points)"),
        answer("count"),
        graded("count-visible", '"""Visible: helper."""\ndef _count(x):\n    return count(x)\nassert _count(1) == 1'),
        graded("count-more", '"""Visible: more."""\nassert _count(2) == 2, "count(2) should be 2"'),
    ]
    path = tmp_path / "scope.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}}))
    namespace = {"count": lambda x: x}
    report = ctxlab.course.check("count", notebook=path, namespace=namespace)
    assert report.passed, str(report)
    assert namespace == {"count": namespace["count"]}, "the tests' helpers stay out of the learner's names"


def test_a_missing_name_is_traced_to_the_cell_of_the_lesson_that_defines_it(tmp_path):
    cells = [
        markdown("## 2 · The data\n\nLoad it."),
        code("import json\nrecords = json.loads('[1, 2]')\n"),
        markdown("### Exercise 1 · Sum (1 point)"),
        answer("total", "def total(xs):\n    return sum(xs)"),
        graded("total-visible", '"""Visible: the records."""\nassert total(records) == 3'),
    ]
    path = tmp_path / "names.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}}))
    report = ctxlab.course.check("total", notebook=path, namespace={"total": sum})
    (outcome,) = report.outcomes
    assert outcome.message == (
        "name 'records' is not defined: the cell under '2 · The data' that begins `import json` defines it; "
        "run that cell (after a restart, Run All Above), then check again")
    report = ctxlab.course.check("total", notebook=path, namespace={"records": [1, 2]})
    assert "the answer cell total defines it" in report.outcomes[0].message


def test_defining_cells_reads_what_each_kind_of_statement_binds():
    source = (
        "import os.path as p, sys\nfrom math import pi\nfor i, (j, k) in []: pass\n"
        "with open('f') as handle: pass\nif True:\n    inner = 1\ntry:\n    tried = 1\n"
        "except Exception:\n    handled = 1\nclass C: pass\ntotal: int = 0\ntotal += 1\n%time after = 1\n"
    )  # a magic is read as IPython runs it: the cell parses, the magic's own code is not read
    found = ctxlab.course.checking.defining_cells({"cells": [code(source)]})
    assert {"p", "sys", "pi", "i", "j", "k", "handle", "inner", "tried", "handled", "C", "total"} <= set(found)


def test_the_real_lesson_checks_an_answer_after_a_restart_without_its_test_cells_run():
    """Lesson 01's count_chat, run on its own with the lesson's set-up: every visible test runs,
    though the first one defines the helper `_count_chat` the others use."""
    (released,) = sorted((REPO / "course" / "01-budget").glob("*.ipynb"))
    (source,) = sorted((REPO / "solutions" / "01-budget").glob("*.ipynb"))
    answers = solution_sources(json.loads(source.read_text(encoding="utf-8")))
    cells = json.loads(released.read_text(encoding="utf-8"))["cells"]
    setup = next("".join(c["source"]) for c in cells if c["cell_type"] == "code" and "import ctxlab" in "".join(c["source"]))
    namespace: dict = {}
    exec(setup, namespace)  # after a restart: the lesson's set-up cell, then the answer cell, and nothing else
    exec(answers["count-chat"], namespace)
    report = ctxlab.course.check("count-chat", notebook=released, namespace=namespace)
    assert report.passed, str(report)
