"""Turn a submitted file, whatever its state, into a clean nbformat 4.5 notebook, or say why not.

Only what grading needs survives: each cell's type, source and nbgrader metadata (checked
against the released notebook afterwards, see :mod:`autograder.restore`). Outputs, other
metadata and attachments are dropped, the notebook's metadata comes from the released lesson,
and cell ids are renumbered, so nothing in the file can steer the grader.

* not UTF-8, not JSON, not a JSON object, or an nbformat other than 3 or 4: unreadable, with a
  message that says so and how to fix it;
* nbformat 3 is converted; nbformat 4 with any minor version is read as 4.5;
* cells that are not objects are skipped, a source that is not text is read as empty, an
  unknown cell type becomes a raw cell; each of these is reported.

>>> nb, notes = read_notebook(b'{"nbformat": 4, "nbformat_minor": 2, "metadata": {},'
...                           b' "cells": [{"cell_type": "code", "source": ["x = 1"], "metadata": {}}]}')
>>> nb.cells[0].source, notes
('x = 1', [])
>>> read_notebook(b'{"cells": [')[1]
['not valid JSON (line 1, column 12: Expecting value); open the notebook in JupyterLab, save it and submit it again']
"""

from __future__ import annotations

import json
import warnings

import nbformat
from nbformat import v4

__all__ = ["read_notebook"]


def _text(source) -> str | None:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    return None


def read_notebook(data: bytes, *, metadata: dict | None = None) -> tuple[nbformat.NotebookNode | None, list[str]]:
    """The notebook in ``data`` rebuilt cleanly (``None`` if unreadable) and what was repaired."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return None, [f"not UTF-8 text ({err.reason} at byte {err.start}); save the notebook from JupyterLab "
                      "and submit it again"]
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        return None, [f"not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); open the notebook "
                      "in JupyterLab, save it and submit it again"]
    except RecursionError:
        return None, ["not a notebook: its JSON is nested too deeply"]
    if not isinstance(raw, dict) or not isinstance(raw.get("cells", raw.get("worksheets")), list):
        return None, ["not a notebook: the JSON has no list of cells"]
    notes: list[str] = []
    major = raw.get("nbformat")
    if major == 3:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cells = nbformat.reads(text, as_version=4).cells
        except Exception as err:  # nbformat raises many kinds on broken v3 files
            return None, [f"an nbformat 3 notebook that could not be converted ({type(err).__name__}); "
                          "open it in JupyterLab, save it and submit it again"]
        notes.append("saved as nbformat 3; converted to nbformat 4 for grading")
        cells = [dict(c) for c in cells]
    elif major == 4:
        cells = raw["cells"]
        minor = raw.get("nbformat_minor")
        if isinstance(minor, int) and minor > nbformat.current_nbformat_minor:
            notes.append(f"saved as nbformat 4.{minor}, newer than this grader knows; read as "
                         f"4.{nbformat.current_nbformat_minor}")
    else:
        return None, [f"nbformat {major!r} is not supported (JupyterLab saves nbformat 4); open the notebook "
                      "in JupyterLab, save it and submit it again"]
    notebook = v4.new_notebook(metadata=json.loads(json.dumps(metadata or {})))
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            notes.append(f"cell {index + 1} is not a cell object; skipped")
            continue
        source = _text(cell.get("source", ""))
        if source is None:
            notes.append(f"cell {index + 1}: its source is not text; read as empty")
            source = ""
        cell_meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        grading = cell_meta.get("nbgrader")
        kept = {"nbgrader": json.loads(json.dumps(grading))} if isinstance(grading, dict) else {}
        kind = cell.get("cell_type")
        if kind == "code":
            new = v4.new_code_cell(source, metadata=kept)
        elif kind == "markdown":
            new = v4.new_markdown_cell(source, metadata=kept)
        else:
            if kind != "raw":
                notes.append(f"cell {index + 1} has the unknown type {str(kind)[:40]!r}; kept as a raw cell")
            new = v4.new_raw_cell(source, metadata=kept)
        new["id"] = f"cell-{len(notebook.cells) + 1}"
        notebook.cells.append(new)
    return notebook, notes
