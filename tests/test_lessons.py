"""Every lesson, for real with nbgrader: solutions score full marks, blank notebooks score zero,
every listed wrong answer fails the test named for it, and course/ is what `make release` makes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from support.pipeline import REPO, load_attacks, load_wrong_answers, offline_env

LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
WRONG = [(lesson, w.name) for lesson in LESSONS for w in load_wrong_answers(lesson)]
ATTACKS = [(lesson, a.name) for lesson in LESSONS for a in load_attacks(lesson)]
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def source_of(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def notebook_of(folder: Path) -> Path:
    (path,) = sorted(folder.glob("*.ipynb"))
    return path


def nbgrader_cells(path: Path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [(c, c["metadata"].get("nbgrader", {})) for c in notebook["cells"]]


def test_course_lists_the_six_lessons_in_order():
    assert sorted(LESSONS) == LESSONS
    assert LESSONS[0] == "01-budget"
    assert [p.name for p in sorted((REPO / "course").iterdir()) if p.is_dir()] == LESSONS


@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_notebook_is_committed_without_outputs(lesson):
    for cell, _ in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, f"{lesson}: cell {cell['id']} has outputs"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_test_cell_is_named_and_documented(lesson):
    seen = set()
    for cell, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)):
        if not meta:
            continue
        grade_id = meta["grade_id"]
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", grade_id), f"{lesson}: grade_id {grade_id!r} is not descriptive"
        assert grade_id not in seen
        seen.add(grade_id)
        if meta.get("grade"):
            first = source_of(cell).lstrip().splitlines()[0]
            assert first.startswith('"""'), f"{lesson}: test cell {grade_id} must open with a docstring naming what it checks"
            assert meta["points"] > 0


@pytest.mark.parametrize("lesson", LESSONS)
def test_points_in_headings_add_up(lesson):
    """Exercise headings say "(N points)"; they must add up to the points the tests award."""
    cells = nbgrader_cells(notebook_of(REPO / "solutions" / lesson))
    total = sum(meta.get("points", 0) for _, meta in cells if meta.get("grade"))
    stated = sum(
        float(n)
        for cell, _ in cells
        if cell["cell_type"] == "markdown"
        for n in re.findall(r"^#+ .*\((\d+(?:\.\d+)?) points?\)", source_of(cell), flags=re.M)
    )
    assert stated == total, f"{lesson}: headings promise {stated:g} points, tests award {total:g}"
    (intro, _), *_ = cells
    assert f"**Points:** {total:g}," in source_of(intro), f"{lesson}: the introduction should state {total:g} points"


# What a test cell is worth, by what it takes to pass: a concept check needs a reasoned choice; a
# rule test, the rule understood and applied; a test of a layout the exercise gives line by line
# (lesson 06's seven steps of build_context), copying it.
POINTS = {"concept check": 2, "rule": 1, "layout given line by line": 0.5}
GIVEN_LAYOUT = {
    "06-assembly": ("build-context-",),
}


@pytest.mark.parametrize("lesson", LESSONS)
def test_points_follow_what_is_learnt(lesson):
    for _, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)):
        if not meta.get("grade"):
            continue
        grade_id = meta["grade_id"]
        if re.fullmatch(r"q\d+-check", grade_id):
            kind = "concept check"
        elif grade_id.startswith(GIVEN_LAYOUT.get(lesson, ())):
            kind = "layout given line by line"
        else:
            kind = "rule"
        assert meta["points"] == POINTS[kind], f"{lesson}: {grade_id} is a {kind}, worth {POINTS[kind]:g}, not {meta['points']:g}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_visible_test_lets_run_all_go_on(lesson):
    """A visible test fails in a blank lesson; tagged raises-exception, it does not stop Run All."""
    for cell, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)):
        if meta.get("grade") and "### BEGIN HIDDEN TESTS" not in source_of(cell):
            assert "raises-exception" in cell["metadata"].get("tags", []), (
                f"{lesson}: visible test {meta['grade_id']} needs the tag raises-exception")


CHECKED_BEFORE_GRADING = tuple(LESSONS)
"""Lessons in which at least half the points come from tests a learner can run (ctxlab.course.check runs
every test cell without hidden tests): every lesson."""


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_share_of_points_a_learner_can_check_before_grading(lesson):
    """Each lesson's visible points, listed; in the lessons of CHECKED_BEFORE_GRADING, half or more."""
    visible = hidden = 0
    for cell, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)):
        if meta.get("grade"):
            if "### BEGIN HIDDEN TESTS" in source_of(cell):
                hidden += meta["points"]
            else:
                visible += meta["points"]
    print(f"{lesson}: {visible} of {visible + hidden} points visible")
    if lesson in CHECKED_BEFORE_GRADING:
        assert 2 * visible >= visible + hidden, f"{lesson}: only {visible} of {visible + hidden} points are visible"


@pytest.mark.parametrize("lesson", LESSONS)
def test_most_listed_wrong_answers_fail_a_test_the_learner_can_run(lesson):
    """A plausible mistake should show before grading: at least half of the lesson's listed wrong
    answers name a visible test among those they fail (the pipeline checks that they do)."""
    visible = {meta["grade_id"] for cell, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson))
               if meta.get("grade") and "### BEGIN HIDDEN TESTS" not in source_of(cell)}
    wrong = load_wrong_answers(lesson)
    shown = [w.name for w in wrong if set(w.fails) & visible]
    print(f"{lesson}: {len(shown)} of {len(wrong)} listed wrong answers fail a visible test")
    assert 2 * len(shown) >= len(wrong), f"{lesson}: only {len(shown)} of {len(wrong)} wrong answers fail a visible test"


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_visible_test_rebinds_a_helper_an_earlier_visible_test_defines(lesson):
    """ctxlab.course.check_all re-runs the visible tests after the whole notebook has run: a later cell that
    binds a helper's name (`for _lap in ...` after `def _lap`) leaves it broken for the earlier ones."""
    import ast

    hidden_part = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", flags=re.S)
    helpers: dict[str, str] = {}
    for cell, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)):
        if not meta.get("grade"):
            continue
        tree = ast.parse(hidden_part.sub("", source_of(cell)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in helpers:
                raise AssertionError(f"{lesson}: {meta['grade_id']} binds {node.id}, the helper {helpers[node.id]} defines")
        helpers.update({node.name: meta["grade_id"] for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))})


@pytest.mark.parametrize("lesson", LESSONS)
def test_course_has_no_solutions_or_hidden_tests(lesson):
    course_text = notebook_of(REPO / "course" / lesson).read_text(encoding="utf-8")
    for marker in MARKERS:
        assert marker not in course_text
    cells = nbgrader_cells(notebook_of(REPO / "solutions" / lesson))
    hidden_part = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", flags=re.S)
    # A line that a visible cell also holds (a shared setup line) reveals nothing hidden.
    shown = {line.strip() for cell, _ in cells for line in hidden_part.sub("", source_of(cell)).splitlines()}
    for cell, _ in cells:
        source = source_of(cell)
        for hidden in hidden_part.findall(source):
            for line in hidden.splitlines():
                if len(line.strip()) > 25 and line.strip() not in shown:
                    assert json.dumps(line.strip())[1:-1] not in course_text, f"{lesson}: hidden line leaked: {line.strip()}"


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_executes_offline(lesson, monkeypatch):
    """Every cell runs without an error and with no network. How long it takes (target: under a
    minute) is measured in bench/bench_lessons.py: a timed assertion here would let the
    machine's load decide the test."""
    for key, value in offline_env().items():
        monkeypatch.setenv(key, value)
    path = notebook_of(REPO / "solutions" / lesson)
    notebook = nbformat.read(path, as_version=4)
    # A hang guard, not a speed target.
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_course_is_what_release_generates(lesson, graded_lesson):
    graded = graded_lesson(lesson)
    fresh = (graded.root / "course" / lesson / graded.notebook).read_bytes()
    committed = (REPO / "course" / lesson / graded.notebook).read_bytes()
    assert fresh == committed, f"course/{lesson} is out of date: run `make release` and commit the result"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["judge", "nbgrader"])
@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_scores_full_marks(lesson, engine, graded_lesson):
    """In the judge (how the class is graded) and in the learner's kernel (Validate, plain nbgrader)."""
    result = graded_lesson(lesson, engine).results["solution"]
    lost = {k: v for k, v in result.cells.items() if v < result.max_cells[k]}
    assert not lost, f"{lesson} ({engine}): the solution loses points in {lost}: " + str(
        {k: result.errors.get(k) for k in lost})
    assert result.score == result.max_score > 0
    assert not result.needs_manual_grade
    assert not result.stderr_cells, f"{lesson}: test cells wrote to stderr: {result.stderr_cells}"


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_scores_full_marks_with_only_the_graded_cells(lesson, graded_lesson):
    """Answer, test and locked cells stand alone: with its demonstrations deleted the solution
    still scores full marks, and the grader, which leaves them out of a whole notebook when
    nothing graded needs them (autograder/skipping.py), does leave some out."""
    results = graded_lesson(lesson).results
    result = results["solution-graded-cells-only"]
    lost = {k: v for k, v in result.cells.items() if v < result.max_cells[k]}
    assert not lost, f"{lesson}: without its demonstration cells the solution loses points in {lost}: " + str(
        {k: result.errors.get(k) for k in lost})
    assert results["solution"].skipped_cells > 0, f"{lesson}: the grader ran every demonstration of the solution"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["judge", "nbgrader"])
@pytest.mark.parametrize("lesson", LESSONS)
def test_blank_notebook_scores_zero(lesson, engine, graded_lesson):
    result = graded_lesson(lesson, engine).results["blank"]
    scored = {k: v for k, v in result.cells.items() if v}
    assert result.score == 0, f"{lesson} ({engine}): a blank notebook scores {result.score} in {scored}"
    assert result.max_score > 0


@pytest.mark.slow
@pytest.mark.parametrize("lesson, wrong", WRONG, ids=[f"{lesson}:{wrong}" for lesson, wrong in WRONG])
def test_wrong_answer_fails_its_named_test(lesson, wrong, graded_lesson):
    graded = graded_lesson(lesson)
    (spec,) = [w for w in graded.wrong_answers if w.name == wrong]
    result = graded.results[f"wrong-{wrong}"]
    for test_id in spec.fails:
        assert test_id in result.cells, f"{lesson}: no test cell named {test_id!r}"
        assert result.cells[test_id] == 0, f"{lesson}: wrong answer {wrong!r} passes {test_id!r}"
        error = result.errors.get(test_id) or {}
        assert error.get("ename") == "AssertionError" and error.get("evalue", "").strip(), (
            f"{lesson}: {test_id!r} fails {wrong!r} with {error.get('ename')}: {error.get('evalue')!r}; "
            "a failing test should explain itself with an AssertionError that says what to change"
        )
    assert 0 < result.score < result.max_score, "the rest of the notebook should still be graded"
    (pack,) = [student for student, members in graded.packs.items() if wrong in members]
    if len(graded.packs[pack]) > 1:
        replaced = {w.cell for w in graded.wrong_answers if w.name in graded.packs[pack]}
        noticed = [e for e in result.events if e.get("kind") not in PACKABLE_EVENTS and not (
            e.get("kind") == "reference_used" and len(graded.reached.get(e.get("grade_id"), replaced) & replaced) <= 1)]
        assert not noticed, (
            f"{lesson}: {wrong!r} was graded in {pack} with {graded.packs[pack]}, and the grader noticed "
            f"{noticed}: something no name shows may join them; give it `alone=True` in its entry")


# What a pack's grading may notice: a member's own cell raising, and a test that reaches one
# member only finding that member's code calling ctxlab's answer (the switch-off is per test).
# Anything else (a restart, a time-out) could reach a member's tests through no name, so such a
# wrong answer goes alone.
PACKABLE_EVENTS = {"cell_error", "output_truncated"}


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_packed_wrong_answers_grade_as_they_do_alone(lesson, graded_lesson):
    """support/packing.py's argument, checked: each member of the lesson's largest pack, graded
    alone, scores as in its pack (with the same failure) on every test that reaches no other member."""
    graded = graded_lesson(lesson)
    assert graded.solo, f"{lesson}: no wrong answers were packed, so grading them takes one notebook each"
    (pack,) = [student for student, members in graded.packs.items() if members == graded.solo]
    cells = {w.name: w.cell for w in graded.wrong_answers}
    packed = graded.results[pack]
    for member in graded.solo:
        alone = graded.results[f"solo-{member}"]
        others = {cells[m] for m in graded.solo if m != member}
        for test, reached in graded.reached.items():
            if reached & others:
                continue
            assert alone.cells[test] == packed.cells[test], (
                f"{lesson}: {test!r} scores {alone.cells[test]} for {member!r} alone and {packed.cells[test]} "
                f"in {pack} with {graded.solo}: packing changed a grade; see support/packing.py")
            assert alone.errors.get(test) == packed.errors.get(test), (
                f"{lesson}: {test!r} fails {member!r} alone with {alone.errors.get(test)} and in {pack} "
                f"with {packed.errors.get(test)}")


@pytest.mark.slow
@pytest.mark.parametrize("lesson, attack", ATTACKS, ids=[f"{lesson}:{attack}" for lesson, attack in ATTACKS])
def test_an_answer_that_reaches_ctxlabs_own_code_gets_no_points_for_it(lesson, attack, graded_lesson):
    """A private helper, a subclass, a copy of the reference's code object: the exercise's tests
    fail (the switch-off names what happened) and the rest of the notebook is still graded."""
    graded = graded_lesson(lesson)
    (spec,) = [a for a in graded.attacks if a.name == attack]
    result = graded.results[f"attack-{attack}"]
    for test_id in spec.fails:
        assert test_id in result.cells, f"{lesson}: no test cell named {test_id!r}"
        assert result.cells[test_id] == 0, f"{lesson}: attack {attack!r} passes {test_id!r}"
    assert 0 < result.score < result.max_score, "the rest of the notebook should still be graded"


def _rules(lesson: str) -> list[dict]:
    import importlib.util

    from support.pipeline import REPO as repo

    path = repo / "tests" / "wrong_answers" / f"{lesson.replace('-', '_')}.py"
    spec = importlib.util.spec_from_file_location(f"rules_{lesson}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(getattr(module, "RULES", []))


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_rule_has_a_test_and_a_wrong_answer_that_breaks_only_it(lesson):
    """tests/wrong_answers/<lesson>.py: RULES maps each rule the lesson states to the test that
    checks it and the listed wrong answer that breaks it; at least 15 wrong answers, each in a rule."""
    rules = _rules(lesson)
    names = [w.name for w in load_wrong_answers(lesson)]
    assert len(names) == len(set(names)), (
        f"{lesson}: wrong answers share a name, so one would hide another: "
        f"{sorted({n for n in names if names.count(n) > 1})}")
    answers = [(w.cell, w.source.strip()) for w in load_wrong_answers(lesson)]
    assert len(answers) == len(set(answers)), f"{lesson}: the same wrong answer is listed twice"
    wrong = {w.name: w for w in load_wrong_answers(lesson)}
    tests = {meta["grade_id"] for _, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)) if meta.get("grade")}
    assert len(wrong) >= 15, f"{lesson}: {len(wrong)} listed wrong answers; at least 15 are needed"
    assert rules, f"{lesson}: no RULES table"
    for rule in rules:
        assert set(rule) == {"rule", "test", "wrong"}, f"{lesson}: a rule needs rule, test and wrong: {rule}"
        assert rule["test"] in tests, f"{lesson}: rule {rule['rule']!r} names no test cell {rule['test']!r}"
        assert rule["wrong"] in wrong, f"{lesson}: rule {rule['rule']!r} names no wrong answer {rule['wrong']!r}"
        assert rule["test"] in wrong[rule["wrong"]].fails, (
            f"{lesson}: wrong answer {rule['wrong']!r} should fail {rule['test']!r}, the test of rule {rule['rule']!r}")
    unused = set(wrong) - {rule["wrong"] for rule in rules}
    assert not unused, f"{lesson}: wrong answers in no rule: {sorted(unused)}"


def _fair_answers() -> list[tuple[str, dict]]:
    from support.pipeline import _answers_module

    return [(lesson, fair) for lesson in LESSONS for fair in getattr(_answers_module(lesson), "FAIR_ANSWERS", [])]


FAIR = _fair_answers()


@pytest.mark.parametrize("lesson, fair", FAIR, ids=[f"{lesson}:{fair['name']}" for lesson, fair in FAIR])
def test_a_fair_answer_in_words_of_its_own_passes_every_test_of_its_exercise(lesson, fair, monkeypatch):
    """FAIR_ANSWERS in tests/wrong_answers/<lesson>.py: right answers worded as a learner might word
    them (the docstring's own phrases among them). Each exercise test cell, hidden ones too, runs
    here in-process after the lesson's set-up cell, so a test that grades words the docstring does
    not rule out fails in seconds."""
    for key, value in offline_env().items():
        monkeypatch.setenv(key, value)
    cells = [(c, meta) for c, meta in nbgrader_cells(notebook_of(REPO / "solutions" / lesson)) if c["cell_type"] == "code"]
    setup = next(source_of(c) for c, meta in cells if "import ctxlab" in source_of(c) and not meta.get("grade") and not meta.get("solution"))
    start = next(i for i, (_, meta) in enumerate(cells) if meta.get("grade_id") == fair["cell"])
    tests = []
    for cell, meta in cells[start + 1:]:
        if meta.get("solution"):
            break
        if meta.get("grade"):
            tests.append((meta["grade_id"], source_of(cell)))
    assert tests, f"{lesson}: no test cells follow the answer cell {fair['cell']!r}"
    namespace: dict = {}
    exec(compile(setup, "<setup>", "exec"), namespace)
    exec(compile(fair["source"], f"<{fair['name']}>", "exec"), namespace)
    failed = {}
    for grade_id, source in tests:
        try:
            exec(compile(source, f"<{grade_id}>", "exec"), namespace)
        except AssertionError as err:
            failed[grade_id] = str(err)
    assert not failed, f"{lesson}: the fair answer {fair['name']!r} fails {failed}"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_listed_wrong_answer_and_attack_compiles(lesson):
    """A source that does not compile fails every test with a NameError, whatever it was meant to
    break, so it would prove nothing (escape newlines in a source's strings: use r'''...''')."""
    for answer in load_wrong_answers(lesson) + load_attacks(lesson):
        try:
            compile(answer.source, f"<{lesson}:{answer.name}>", "exec")
        except SyntaxError as err:
            raise AssertionError(f"{lesson}: {answer.name!r} does not compile: {err}") from None
