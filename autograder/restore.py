"""Put every test cell back as it was released, whatever the learner did to it.

nbgrader restores the source of a locked test cell whose checksum changed, but not every kind
of tampering: a test cell relabelled as an answer cell makes its checksum check fail for the
whole notebook, a cell stripped of its metadata is treated as deleted, and a deleted cell is
only restored with ``OverwriteCells.add_missing_cells``. This module does it before nbgrader
sees the notebook, comparing against the released notebook by ``grade_id``:

* a test cell that was edited, turned into markdown or raw, relabelled (as an answer cell or
  with other points) or deleted is replaced by, or re-inserted as, the released cell (nbgrader
  then swaps in the hidden tests);
* an answer cell keeps the learner's source but gets back its released type and metadata;
* a cell claiming an unknown or repeated ``grade_id`` becomes an ordinary cell;
* read-only cells (``locked``, such as a setup cell the tests rely on) keep the released source,
  and are put back if deleted.

Each change is reported as a note for the summary.

>>> from nbformat import v4
>>> test = v4.new_code_cell("assert f() == 1", metadata={"nbgrader": {
...     "grade": True, "solution": False, "locked": True, "grade_id": "f-test", "points": 1}})
>>> released = v4.new_notebook(cells=[test])
>>> cells, notes = restore_tests([v4.new_markdown_cell("assert True", metadata=dict(test.metadata))], released)
>>> cells[0].cell_type, cells[0].source, notes[0]
('code', 'assert f() == 1', 'test cell f-test was turned into a markdown cell and edited; restored as released')
"""

from __future__ import annotations

import copy

from nbformat import NotebookNode

__all__ = ["restore_tests"]


def _grading(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def _is_test(meta: dict) -> bool:
    return bool(meta.get("grade")) and not meta.get("solution")


def _differences(submitted, released) -> list[str]:
    got, want = _grading(submitted), _grading(released)
    found = []
    if submitted.cell_type != released.cell_type:
        found.append(f"turned into a {submitted.cell_type} cell")
    if got.get("solution") and not want.get("solution"):
        found.append("relabelled as an answer cell")
    elif bool(got.get("grade")) != bool(want.get("grade")):
        found.append("relabelled as an ungraded cell")
    elif got.get("points") != want.get("points"):
        found.append(f"given {got.get('points')!r} points instead of {want.get('points')!r}")
    if submitted.source != released.source:
        found.append("edited")
    return found


def restore_tests(cells: list, released: NotebookNode) -> tuple[list, list[str]]:
    """``cells`` (a submitted notebook's) with every released test cell restored, and notes."""
    released_cells = [c for c in released.cells if _grading(c).get("grade_id")]
    by_id = {_grading(c)["grade_id"]: c for c in released_cells}
    order = [_grading(c)["grade_id"] for c in released_cells]
    notes: list[str] = []
    placed: set[str] = set()
    result: list = []
    for cell in cells:
        claimed = _grading(cell).get("grade_id")
        if not isinstance(claimed, str) or not claimed:
            if _grading(cell):
                cell.metadata.pop("nbgrader", None)
            result.append(cell)
            continue
        original = by_id.get(claimed)
        if original is None or claimed in placed:
            why = "an unknown" if original is None else "a repeated"
            notes.append(f"a cell claimed {why} grade_id {claimed[:60]!r}; graded as an ordinary cell")
            cell.metadata.pop("nbgrader", None)
            result.append(cell)
            continue
        placed.add(claimed)
        meta = _grading(original)
        if _is_test(meta) or (meta.get("locked") and not meta.get("solution")):
            changes = _differences(cell, original)
            if changes:
                kind = "test cell" if _is_test(meta) else "read-only cell"
                notes.append(f"{kind} {claimed} was {' and '.join(changes)}; restored as released")
            restored = copy.deepcopy(original)
            restored["id"] = cell.get("id", restored.get("id"))
            result.append(restored)
        else:
            changes = [c for c in _differences(cell, original) if c != "edited"]
            if changes:
                notes.append(f"answer cell {claimed} was {' and '.join(changes)}; its type and grading "
                             "metadata were restored (its code was kept)")
            answer = copy.deepcopy(original)
            answer["id"] = cell.get("id", answer.get("id"))
            answer.source = cell.source
            if answer.cell_type == "code":
                answer.outputs, answer.execution_count = [], None
            result.append(answer)
    for position, grade_id in enumerate(order):
        if grade_id in placed:
            continue
        meta = _grading(by_id[grade_id])
        read_only = bool(meta.get("locked")) and not meta.get("solution")
        if not _is_test(meta) and not read_only:
            if meta.get("solution"):
                notes.append(f"answer cell {grade_id} was deleted")
            continue
        anchor = next((i for i, c in reversed(list(enumerate(result)))
                       if _grading(c).get("grade_id") in order[:position]), None)
        restored = copy.deepcopy(by_id[grade_id])
        restored["id"] = f"restored-{grade_id}"[:64]
        result.insert(0 if anchor is None else anchor + 1, restored)
        placed.add(grade_id)
        kind = "test cell" if _is_test(meta) else "read-only cell"
        notes.append(f"{kind} {grade_id} was deleted; restored as released")
    return result, notes
