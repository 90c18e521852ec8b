"""GuardedExecute when a kernel is stopped by what crosses it: a test never scores by failing to end.

Each test runs the grader's Execute step (two kernels, sandboxed when bubblewrap works) on a
small notebook of its own: a locked setup cell, an answer cell, learner cells and test cells.
A test cell scores its points when it has no error output, so whatever stops the judge's kernel
in the middle of a test (the code under test returning a value too large to count before the
interrupt, to hold, or to send) must leave an error there; and a connection that a message over
the size limit ended must not make the grader wait for ever.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat import v4
from support.pipeline import REPO, offline_env, sandbox_available

from autograder.limits import remove_tree

JUDGING = str(REPO / "autograder" / "judging")
CELL_TIMEOUT = 3


def _meta(grade_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id, "schema_version": 3}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def notebook(answer: str, *cells: tuple[str, str]) -> nbformat.NotebookNode:
    """setup, the answer cell ``answer`` (defining ``f``), then ``cells``: ("test", source) or ("learner", source)."""
    nb = v4.new_notebook()
    nb.cells.append(v4.new_code_cell("import os, ctxlab", metadata=_meta("setup", locked=True)))
    nb.cells.append(v4.new_code_cell(answer, metadata=_meta("answer", solution=True)))
    for n, (kind, source) in enumerate(cells):
        meta = _meta(f"test-{n}", grade=True, locked=True, points=1) if kind == "test" else {}
        nb.cells.append(v4.new_code_cell(source, metadata=meta))
    return nb


# Runs in a process of its own (as a grading worker would), so that nothing of a stalled run stays.
RUNNER = r"""
import json, sys
from pathlib import Path
import nbformat
from autograder.execute import ExecutionContext, GuardedExecute, JudgeSpec
from autograder.sandbox import Limits, Sandbox, default_readonly_paths

folder, isolated, timeout, judging = Path(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4]
limits = Limits(cell_timeout=timeout, memory_mb=2048)
sandbox = Sandbox(isolated=isolated, readonly=default_readonly_paths(), judging_dir=judging, limits=limits)
context = ExecutionContext(sandbox=sandbox, runtime_root=folder, lesson="probe", judge=JudgeSpec(answer_names=["f"]))
executor = GuardedExecute(timeout=timeout)
executor.context = context
graded = executor.preprocess(nbformat.read(folder / "in.ipynb", as_version=4), {})[0]
nbformat.write(graded, folder / "out.ipynb")
(folder / "events.json").write_text(json.dumps([e.as_dict() for e in context.events]))
"""


def _mounts_under(folder: Path) -> list[str]:
    root = os.path.realpath(folder)
    return [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
            if line.split()[1].startswith(root + os.sep)]


def execute(nb, tmp_path, *, within: float) -> tuple[nbformat.NotebookNode, list[dict]]:
    """Run GuardedExecute on ``nb``; fail if it takes longer than ``within`` seconds."""
    nbformat.write(nb, tmp_path / "in.ipynb")
    command = [sys.executable, "-c", RUNNER, str(tmp_path), "1" if sandbox_available() else "0", str(CELL_TIMEOUT),
               JUDGING]
    try:
        run = subprocess.run(command, cwd=REPO, env=offline_env(), capture_output=True, text=True, timeout=within,
                             check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"grading the notebook did not end within {within:g} s")
    finally:
        left = _mounts_under(tmp_path)  # each kernel's tmpfs (as root) is unmounted when it stops
        for folder in tmp_path.glob("kernel-*"):
            remove_tree(folder)
    assert run.returncode == 0, run.stderr[-3000:]
    assert not left, f"kernels left their connection folders mounted: {left}"
    events = json.loads((tmp_path / "events.json").read_text())
    return nbformat.read(tmp_path / "out.ipynb", as_version=4), events


def errors(cell) -> list[str]:
    return [f"{o.get('ename')}: {o.get('evalue')}" for o in cell.outputs if o.get("output_type") == "error"]


@pytest.mark.parametrize("stop", [
    # What a value of the learner's can do to the lesson's code in the judge (a 40 MB word that
    # tiktoken cannot count before the interrupt, an allocation that aborts the process), done
    # here by the test itself.
    pytest.param("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)", id="hangs"),
    pytest.param("os._exit(3)", id="dies"),
])
def test_a_test_that_stops_the_judge_fails_and_the_next_tests_still_run(stop, tmp_path):
    nb = notebook("def f():\n    return 1",
                  ("test", "assert f() == 1"),
                  ("test", f"assert f() == 1\n{stop}"),
                  ("test", "assert f() == 1"))
    graded, events = execute(nb, tmp_path, within=240)
    first, stopped, after = graded.cells[2:5]
    assert not errors(first) and not errors(after), (errors(first), errors(after))
    assert errors(stopped), "a test that stopped the judge's kernel has no error output, so it would score"
    assert any(e["kind"] in ("hung", "died") and e["cell"] == 3 for e in events), events


def test_a_reply_too_large_to_receive_does_not_stall_grading(tmp_path):
    # The learner's cell hides its traceback from IOPub and raises an error whose reply on the shell
    # channel is over the size limit: that connection is over, and the next request cannot be sent.
    hostile = ("get_ipython()._showtraceback = lambda *args: None\n"
               "raise ValueError('x' * 70_000_000)")
    nb = notebook("def f():\n    return 1", ("learner", hostile), ("test", "assert f() == 1"),
                  ("learner", "g = 2"), ("test", "assert f() == 1"))
    graded, events = execute(nb, tmp_path, within=240)
    assert not errors(graded.cells[3]) and not errors(graded.cells[5]), [errors(c) for c in graded.cells]


def test_a_test_error_quoting_a_huge_value_fails_as_usual(tmp_path):
    # The judge's error quotes the learner's value (as `got {q1!r}` does): 30 MB as data, 60 MB as
    # its repr (each ' is escaped), well over the size limit as an error message. The judge sends it
    # shortened, so the test fails in the ordinary way and the next test uses the same judge.
    nb = notebook("def f():\n    return '\"' + \"'\" * 30_000_000",
                  ("test", "_got = f()\nassert _got == 'a', f'expected a, got {_got!r}'"),
                  ("test", "assert len(f()) == 30_000_001"))
    graded, events = execute(nb, tmp_path, within=240)
    failed, passed = graded.cells[2:4]
    assert [o.get("ename") for o in failed.outputs if o.get("output_type") == "error"] == ["AssertionError"]
    assert "expected a, got" in errors(failed)[0]
    assert not errors(passed), errors(passed)
    assert not [e for e in events if e["kind"] in ("hung", "died", "lost_output", "timeout")], events
