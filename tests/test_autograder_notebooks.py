"""Reading submitted notebooks whatever their state, and putting tampered test cells back."""

from __future__ import annotations

import copy
import json

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.pipeline import REPO

from autograder.notebook import read_notebook
from autograder.restore import restore_tests

RELEASED_PATH = REPO / "course" / "01-budget" / "budget.ipynb"


@pytest.fixture(scope="module")
def released():
    return nbformat.read(RELEASED_PATH, as_version=4)


def grading(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def graded_cells(notebook) -> list:
    return [c for c in notebook.cells if grading(c).get("grade") and not grading(c).get("solution")]


def submitted(released) -> list:
    notebook, notes = read_notebook(RELEASED_PATH.read_bytes(), metadata=dict(released.metadata))
    assert notes == []
    return notebook.cells


def test_a_clean_notebook_is_rebuilt_with_only_what_grading_needs():
    raw = json.loads(RELEASED_PATH.read_text(encoding="utf-8"))
    code = next(i for i, c in enumerate(raw["cells"]) if c["cell_type"] == "code" and not c["metadata"])
    raw["cells"][code]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "old"}]
    raw["cells"][code]["metadata"]["tags"] = ["raises-exception"]
    raw["metadata"]["kernelspec"] = {"name": "evil", "display_name": "x", "language": "python"}
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    notebook, notes = read_notebook(json.dumps(raw).encode(), metadata=kernel)
    assert notes == []
    assert [c.source for c in notebook.cells] == ["".join(c["source"]) for c in raw["cells"]]
    assert notebook.metadata == kernel
    assert notebook.cells[code].outputs == [] and notebook.cells[code].metadata == {}
    assert [c.id for c in notebook.cells] == [f"cell-{i}" for i in range(1, len(raw["cells"]) + 1)]
    nbformat.validate(notebook)


def test_nbformat_3_is_converted_with_its_grading_metadata(released):
    v3 = nbformat.writes(nbformat.convert(copy.deepcopy(released), 3), version=3)
    notebook, notes = read_notebook(v3.encode())
    assert notes == ["saved as nbformat 3; converted to nbformat 4 for grading"]
    assert [grading(c).get("grade_id") for c in notebook.cells] == [grading(c).get("grade_id") for c in released.cells]


@pytest.mark.parametrize("data, message", [
    (b'{"cells": [', "not valid JSON (line 1, column 12"),
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b"[1, 2]", "no list of cells"),
    (b'{"nbformat": 5, "cells": []}', "nbformat 5 is not supported"),
    (b'{"nbformat": "4", "cells": []}', "nbformat '4' is not supported"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
])
def test_unreadable_files_say_why_and_what_to_do(data, message):
    notebook, notes = read_notebook(data)
    assert notebook is None
    assert message in notes[0]


def test_broken_cells_are_repaired_and_reported():
    data = json.dumps({"nbformat": 4, "nbformat_minor": 99, "metadata": [], "cells": [
        "not a cell",
        {"cell_type": "code", "source": 42, "metadata": "x"},
        {"cell_type": "widget", "source": "x = 1", "metadata": {"nbgrader": {"grade_id": "a"}}},
        {"cell_type": "markdown", "source": ["# ", "Title"]},
    ]}).encode()
    notebook, notes = read_notebook(data)
    assert [(c.cell_type, c.source) for c in notebook.cells] == [("code", ""), ("raw", "x = 1"), ("markdown", "# Title")]
    assert notebook.cells[1].metadata == {"nbgrader": {"grade_id": "a"}}
    assert notes == [
        "saved as nbformat 4.99, newer than this grader knows; read as 4.5",
        "cell 1 is not a cell object; skipped",
        "cell 2: its source is not text; read as empty",
        "cell 3 has the unknown type 'widget'; kept as a raw cell",
    ]


def test_an_untouched_notebook_needs_no_restoring(released):
    cells, notes = restore_tests(submitted(released), released)
    assert notes == []
    assert [(c.cell_type, c.source, c.metadata) for c in cells] == [
        (c.cell_type, c.source, c.metadata if grading(c) else {}) for c in released.cells
    ]


@pytest.mark.parametrize("tamper, note", [
    (lambda c: c.update(source="assert True"), "count-chat-visible was edited"),
    (lambda c: c.update(cell_type="markdown"), "count-chat-visible was turned into a markdown cell"),
    (lambda c: c.metadata.nbgrader.update(solution=True, grade=False), "relabelled as an answer cell"),
    (lambda c: c.metadata.nbgrader.update(grade=False), "relabelled as an ungraded cell"),
    (lambda c: c.metadata.nbgrader.update(points=50), "given 50 points instead of 1"),
    (lambda c: c.update(metadata={}), "count-chat-visible was deleted"),
])
def test_a_tampered_test_cell_is_restored_as_released(released, tamper, note):
    cells = submitted(released)
    target = next(c for c in cells if grading(c).get("grade_id") == "count-chat-visible")
    tamper(target)
    restored, notes = restore_tests(cells, released)
    assert any(note in n for n in notes), notes
    original = next(c for c in released.cells if grading(c).get("grade_id") == "count-chat-visible")
    copies = [c for c in restored if grading(c).get("grade_id") == "count-chat-visible"]
    assert len(copies) == 1
    assert (copies[0].cell_type, copies[0].source, copies[0].metadata) == (
        original.cell_type, original.source, original.metadata)
    previous = restored[restored.index(copies[0]) - 1]
    assert grading(previous).get("grade_id") == "count-chat" or not grading(previous)


def test_answer_cells_keep_the_code_but_not_forged_metadata(released):
    cells = submitted(released)
    answer = next(c for c in cells if grading(c).get("grade_id") == "count-chat")
    answer.source = "def count_chat(messages, enc=None):\n    return 9"
    answer.metadata.nbgrader.update(grade=True, points=100, solution=False, locked=True)
    restored, notes = restore_tests(cells, released)
    fixed = next(c for c in restored if grading(c).get("grade_id") == "count-chat")
    assert fixed.source.endswith("return 9")
    assert grading(fixed)["solution"] and not grading(fixed)["grade"] and "points" not in grading(fixed)
    assert any("answer cell count-chat" in n for n in notes)


def test_unknown_and_repeated_grade_ids_become_ordinary_cells(released):
    cells = submitted(released)
    visible = next(c for c in cells if grading(c).get("grade_id") == "count-chat-visible")
    forged = copy.deepcopy(visible)
    forged.source = "print('extra points')"
    fake = nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {"grade": True, "grade_id": "bonus", "points": 99}})
    cells[-1:-1] = [forged, fake]
    restored, notes = restore_tests(cells, released)
    assert sum(1 for c in restored if grading(c).get("grade_id") == "count-chat-visible") == 1
    assert not any(grading(c).get("grade_id") == "bonus" for c in restored)
    assert any("a repeated grade_id 'count-chat-visible'" in n for n in notes)
    assert any("an unknown grade_id 'bonus'" in n for n in notes)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_whatever_is_deleted_or_shuffled_every_test_comes_back_once(released, data):
    cells = submitted(released)
    kept = data.draw(st.lists(st.sampled_from(range(len(cells))), unique=True))
    shuffled = [copy.deepcopy(cells[i]) for i in kept]
    restored, _ = restore_tests(shuffled, released)
    for original in graded_cells(released):
        copies = [c for c in restored if grading(c).get("grade_id") == grading(original)["grade_id"]]
        assert len(copies) == 1
        assert (copies[0].source, copies[0].metadata) == (original.source, original.metadata)


def test_a_deleted_read_only_cell_comes_back_where_it_was():
    from nbformat import v4

    setup = v4.new_code_cell("import json", metadata={"nbgrader": {
        "grade": False, "solution": False, "locked": True, "grade_id": "setup", "schema_version": 3}})
    answer = v4.new_code_cell("x = 1", metadata={"nbgrader": {
        "grade": False, "solution": True, "locked": False, "grade_id": "answer", "schema_version": 3}})
    test = v4.new_code_cell("assert x == 1", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": "check", "points": 1, "schema_version": 3}})
    released = v4.new_notebook(cells=[setup, answer, test])
    cells, notes = restore_tests([copy.deepcopy(answer), copy.deepcopy(test)], released)
    assert [c.source for c in cells] == ["import json", "x = 1", "assert x == 1"]
    assert notes == ["read-only cell setup was deleted; restored as released"]
