"""support/packing.py: wrong answers share a notebook only when no test they name can tell."""

from __future__ import annotations

import json

import pytest
from support.packing import WrongAnswer, answers_reached, cell_names, notebook_cells, packs
from support.pipeline import REPO, load_wrong_answers

LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and any(p.glob("*.ipynb")))

CELLS = [
    ("setup", "setup", "import ctxlab\nLIMITS = [3]"),
    ("f", "answer", "def f(x):\n    return x"),
    ("g", "answer", "def g(x):\n    return x * 2"),
    ("h", "answer", "def h(x):\n    return -x"),
    ("test-f", "test", "got = f(1)\nassert got == 1"),
    ("test-g", "test", "got = g(1)\nassert got == 2"),
    ("test-h", "test", "assert h(1) == -1"),
]


def names(result):
    return [[w.name for w in pack] for pack in result]


def test_independent_answers_share_a_notebook():
    wrong = [WrongAnswer("f1", "f", "def f(x):\n    return 0", ["test-f"]),
             WrongAnswer("g1", "g", "def g(x):\n    return 0", ["test-g"])]
    assert names(packs(CELLS, wrong)) == [["f1", "g1"]]


def test_a_name_a_test_binds_itself_does_not_join_it_to_another_test():
    assert answers_reached(CELLS, [])["test-g"] == {"g"}


@pytest.mark.parametrize("source, why", [
    ("def g(x):\n    return f(x) * 2", "calls f, which the other member replaces"),
    ("def g(x):\n    return globals()['f'](x)", "reaches names without spelling them out"),
    ("def g(x):\n    ctxlab.count = len\n    return 0", "changes a module"),
    ("def g(x):\n    LIMITS.append(x)\n    return 0", "reads data f's test may read too"),
    ("def g(x):\n    return 0\ndef f(x):\n    return 1", "binds another cell's name"),
    ("def g(x)\n    return 0", "does not parse"),
])
def test_answers_that_may_reach_each_other_go_apart(source, why):
    cells = CELLS[:1] + [("f", "answer", "def f(x):\n    return x + LIMITS[0] - 3")] + CELLS[2:]
    wrong = [WrongAnswer("f1", "f", "def f(x):\n    return 0", ["test-f"]), WrongAnswer("g1", "g", source, ["test-g"])]
    assert names(packs(cells, wrong)) == [["f1"], ["g1"]], why


def test_alone_keeps_a_wrong_answer_out_of_every_pack():
    wrong = [WrongAnswer("f1", "f", "def f(x):\n    return 0", ["test-f"], alone=True),
             WrongAnswer("g1", "g", "def g(x):\n    return 0", ["test-g"])]
    assert names(packs(CELLS, wrong)) == [["f1"], ["g1"]]


def test_a_pack_leaves_a_test_to_pass():
    wrong = [WrongAnswer(f"{c}1", c, f"def {c}(x):\n    return 0", [f"test-{c}"]) for c in "fgh"]
    assert all(len(pack) < 3 for pack in packs(CELLS, wrong))


def test_reads_before_a_cell_binds_a_name_come_from_elsewhere():
    assert cell_names("print(x)\nx = 1\nprint(x)").outside == {"print", "x"}
    assert cell_names("x = 1\nprint(x)\n[y for y in range(x)]").outside == {"print", "range"}
    assert cell_names("def f():\n    return x\nx = 1").outside == {"x"}


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_pack_of_a_lesson_keeps_its_members_apart(lesson):
    (path,) = sorted((REPO / "solutions" / lesson).glob("*.ipynb"))
    cells = notebook_cells(json.loads(path.read_text(encoding="utf-8")))
    wrong = load_wrong_answers(lesson)
    result = packs(cells, wrong)
    assert sorted(w.name for pack in result for w in pack) == sorted(w.name for w in wrong)
    reached = answers_reached(cells, wrong)
    for pack in result:
        replaced = {w.cell for w in pack}
        assert len(replaced) == len(pack), f"{lesson}: two members of a pack replace one cell"
        for member in pack:
            for test in member.fails:
                assert reached[test] & replaced <= {member.cell}, (lesson, member.name, test)
        assert any(not (found & replaced) for found in reached.values()), f"{lesson}: a pack leaves no test to pass"
    assert len(result) < len(wrong), f"{lesson}: nothing was packed"
