"""Run a learner notebook as a learner meets it: from the top, until the first unanswered exercise.

Run by the Python of the environment under test (it needs nbclient and nbformat there):

    python run_to_first_exercise.py NOTEBOOK

prints one JSON object: which cell stopped the run and why (execution stops at the first error),
what the cells before it wrote to stderr, and where the kernel's Python and ctxlab came from.
The notebook file is not changed.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

PROBE = (
    "import importlib.util as _u, json as _j, sys as _s\n"
    "print(_j.dumps({'prefix': _s.prefix, 'ctxlab': _u.find_spec('ctxlab').origin}))"
)


def _text(output) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    return "\n".join(str(v) for v in output.get("data", {}).values())


def run(path: Path, *, timeout: int = 120) -> dict:
    """Execute ``path`` in a fresh kernel; stop at the first error (see the module docstring)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with contextlib.suppress(CellExecutionError):  # the first error ends the run; see the outputs
        client.execute()
    probe, *cells = notebook.cells
    result = {
        "kernel": json.loads(_text(probe["outputs"][0])) if probe.get("outputs") else None,
        "cells": len(cells),
        "executed": sum(1 for c in cells if c.cell_type == "code" and c.get("execution_count")),
        "stopped": None,
        "stderr": [],
        "setup_output": next(
            ("".join(_text(o) for o in c.get("outputs", [])) for c in cells if c.cell_type == "code"), ""
        ),
    }
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                result["stderr"].append({"cell": index, "text": output["text"][-500:]})
            if output.get("output_type") == "error" and result["stopped"] is None:
                result["stopped"] = {
                    "cell": index,
                    "ename": output["ename"],
                    "evalue": output["evalue"][-500:],
                    "nbgrader": cell.get("metadata", {}).get("nbgrader", {}),
                    "source": "".join(cell.source)[:300],
                }
    return result


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]).resolve())))
