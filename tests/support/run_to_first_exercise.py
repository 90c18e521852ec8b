"""Run a learner notebook as a learner meets it: from the top, as Run All does.

Run by the Python of the environment under test (it needs nbclient and nbformat there):

    python run_to_first_exercise.py NOTEBOOK

prints one JSON object: every cell that raised and why (execution stops at the first error of a
cell without the ``raises-exception`` tag, as in JupyterLab; the lessons tag their visible tests
and concept checks), what the cells wrote to stderr, and where the kernel's Python and ctxlab
came from. The notebook file is not changed.
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
        "errors": [],
        "stderr": [],
        "setup_output": next(
            ("".join(_text(o) for o in c.get("outputs", [])) for c in cells if c.cell_type == "code"), ""
        ),
    }
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                result["stderr"].append({"cell": index, "text": output["text"][-500:]})
            if output.get("output_type") == "error":
                error = {
                    "cell": index,
                    "ename": output["ename"],
                    "evalue": output["evalue"][-500:],
                    "nbgrader": cell.get("metadata", {}).get("nbgrader", {}),
                    "tags": cell.get("metadata", {}).get("tags", []),
                    "source": "".join(cell.source)[:300],
                }
                result["errors"].append(error)
                if result["stopped"] is None and "raises-exception" not in error["tags"]:
                    result["stopped"] = error
    result["last_ran"] = bool(cells) and cells[-1].cell_type == "code" and bool(cells[-1].get("execution_count"))
    return result


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]).resolve())))
