"""Which lesson cells grading leaves out (autograder.skipping): only the lesson's own cells, only
when nothing that runs later could need them, and nothing at all when code can reach names
without spelling them out."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.pipeline import REPO, fill, solution_sources

from autograder.references import answer_names
from autograder.skipping import cells_to_skip, lesson_cell_sources

SETUP = "import ctxlab\nimport ctxlab.course\nresearch = ctxlab.course.load_transcript('research')"
ANSWER = "def fit(messages, allowance):\n    return ctxlab.fit(messages, allowance)"
DEMO = "kept, dropped = fit(research, 4_000)\nprint(len(kept))"
CHECK = "ctxlab.course.check('fit')"
LESSON = [SETUP, ANSWER, DEMO, CHECK]
OURS = {SETUP, DEMO, CHECK}  # the released notebook's setup, demonstration and check cells


def skipped(cells, *, first_answer=1, lesson=OURS, answers=("fit",), locked=None, runs=None):
    return cells_to_skip(cells, runs or cells, first_answer=first_answer, lesson_cells=set(lesson),
                         answer_names=list(answers), locked=locked or [i == 0 for i in range(len(cells))])


def test_demonstrations_and_checks_after_the_first_answer_are_left_out():
    assert skipped(LESSON) == {2, 3}


def test_the_setup_before_the_first_answer_always_runs():
    assert 0 not in skipped(LESSON, locked=[True, False, False, True])


def test_an_unlocked_demonstration_before_the_first_answer_can_be_left_out():
    cells = [SETUP, "print(len(research))", ANSWER, DEMO]
    assert skipped(cells, first_answer=2, lesson=OURS | {cells[1]}) == {1, 3}


def test_a_cell_the_learner_wrote_or_edited_always_runs():
    edited = DEMO + "\n# my note"
    assert skipped([SETUP, ANSWER, edited, CHECK]) == {3}


def test_a_demonstration_a_later_learner_cell_reads_runs_and_so_do_the_ones_it_needs():
    first = "sizes = [len(m['content'] or '') for m in research]"
    second = "largest = max(sizes)"
    cells = [SETUP, ANSWER, first, second, "print(largest)"]
    assert skipped(cells, lesson=OURS | {first, second}) == set()
    assert skipped(cells[:4], lesson=OURS | {first, second}) == {2, 3}


def test_a_demonstration_that_rebinds_an_answer_name_runs():
    fallback = "fit = ctxlab.course.yours_or_reference(fit, ctxlab.fit)"
    assert 2 not in skipped([SETUP, ANSWER, fallback, CHECK], lesson=OURS | {fallback})


def test_a_demonstration_that_mentions_an_object_used_later_runs():
    """It might change it: a learner's cell after it that reads research sees what it did."""
    mutate = "research.append({'role': 'user', 'content': 'more'})"
    cells = [SETUP, ANSWER, mutate, "def size():\n    return len(research)"]
    assert 2 not in skipped(cells, lesson=OURS | {mutate}, answers=("fit", "size"))


def test_mentioning_modules_builtins_and_the_learners_functions_does_not_count():
    assert skipped([SETUP, ANSWER, "print(len(fit(research, 10)[0]), ctxlab.__name__)", ANSWER],
                   lesson=OURS | {"print(len(fit(research, 10)[0]), ctxlab.__name__)"}) == {2}


def test_a_function_parameter_is_not_a_notebook_name():
    helper = "def show(research, kept):\n    return len(kept)"
    assert skipped([SETUP, ANSWER, helper, "def mine(kept):\n    return kept"], lesson=OURS | {helper},
                   answers=("fit", "mine")) == {2}


def test_a_submodule_a_demonstration_imports_counts_when_used_later():
    demo = "import ctxlab.course.layout\nprint(ctxlab.course.layout.__name__)"
    later = "def mine():\n    return ctxlab.course.layout.WindowLayout"
    assert 2 not in skipped([SETUP, ANSWER, demo, later], lesson=OURS | {demo}, answers=("fit", "mine"))
    assert 2 in skipped([SETUP, ANSWER, demo, "def mine():\n    return ctxlab.fit"], lesson=OURS | {demo},
                        answers=("fit", "mine"))


@pytest.mark.parametrize("learner", [
    "print(globals()['kept'])", "x = eval('kept')", "exec('print(kept)')", "print(vars())", "print(locals())",
    "print(_)", "print(Out[3])", "print(_3)", "print(_i2)", "import sys\nsys.modules['__main__']",
    "from math import *", "def f():\n    global kept\n    kept = 1", "%time fit(research, 10)",
    "!ls", "get_ipython().user_ns['kept']", "import inspect", "import gc", "def broken(:\n    pass",
    "import builtins", "__import__('sys')",
])
def test_code_that_reaches_names_without_spelling_them_out_runs_everything(learner):
    assert skipped([SETUP, ANSWER, DEMO, CHECK, learner]) == set()


def test_a_bare_underscore_that_is_only_assigned_is_not_the_output_history():
    assert skipped([SETUP, ANSWER, DEMO, "for _ in range(3):\n    pass"]) == {2}


def test_tests_run_elsewhere_so_their_names_do_not_keep_a_demonstration():
    cells = [SETUP, ANSWER, DEMO, "assert len(kept) > 0"]
    assert skipped(cells, runs=[SETUP, ANSWER, DEMO, ""]) == {2}


def test_nothing_is_left_out_without_lesson_cells():
    assert skipped(LESSON, lesson=set()) == set()


names = st.sampled_from(["research", "kept", "sizes", "fit", "total", "pad"])
statements = st.one_of(
    st.builds(lambda a, b: f"{a} = {b}", names, names),
    st.builds(lambda a: f"print({a})", names),
    st.builds(lambda a, b: f"def f_{a}():\n    return {b}", names, names),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(statements, st.booleans()), min_size=1, max_size=8))
def test_a_left_out_cell_binds_and_mentions_nothing_a_later_cell_that_runs_mentions(cells):
    sources = [SETUP, ANSWER] + [source for source, _ in cells]
    ours = OURS | {source for source, lesson in cells if lesson}
    skip = skipped(sources, lesson=ours)
    assert skip <= {i for i in range(2, len(sources)) if sources[i] in ours}
    import symtable

    def mentioned(source):
        table = symtable.symtable(source, "<cell>", "exec")
        found = {s.get_name() for s in table.get_symbols()}
        for child in table.get_children():
            found |= {s.get_name() for s in child.get_symbols() if s.is_global()}
        return found

    exempt = {"print", "ctxlab", "fit"} | {f"f_{n}" for n in ["research", "kept", "sizes", "fit", "total", "pad"]}
    for index in skip:
        later = set().union(*(mentioned(sources[j]) for j in range(index + 1, len(sources)) if j not in skip), {"fit"})
        assert not (mentioned(sources[index]) - exempt) & later


@pytest.mark.parametrize("lesson", sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir()))
def test_each_lessons_solution_leaves_out_only_its_own_demonstrations(lesson):
    (source,) = sorted((REPO / "solutions" / lesson).glob("*.ipynb"))
    released = json.loads((REPO / "course" / lesson / source.name).read_text(encoding="utf-8"))
    solution = json.loads(source.read_text(encoding="utf-8"))
    notebook = fill(released, solution_sources(solution))

    def text(cell):
        return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]

    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    meta = [c["metadata"].get("nbgrader", {}) for c in code]
    runs = ["" if m.get("grade") and not m.get("solution") else text(c) for c, m in zip(code, meta, strict=True)]
    first = next(i for i, m in enumerate(meta) if m.get("solution"))
    names = answer_names([text(c) for c in solution["cells"] if c["metadata"].get("nbgrader", {}).get("solution")])
    skip = cells_to_skip([text(c) for c in code], runs, first_answer=first,
                         lesson_cells=lesson_cell_sources(released["cells"]), answer_names=names,
                         locked=[bool(m.get("locked")) for m in meta])
    assert skip, f"{lesson}: no demonstration is left out, so grading runs every one"
    for index in skip:
        assert not meta[index].get("solution") and not meta[index].get("grade"), f"{lesson}: cell {index} is graded"
        assert index > first or not meta[index].get("locked"), f"{lesson}: setup cell {index} left out"
