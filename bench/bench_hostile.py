"""Grading the hostile class: what hostile and broken submissions cost the grader, against an
honest class of the same size graded in the same run.

    .venv/bin/python bench/run.py --only hostile
    .venv/bin/python bench/bench_hostile.py

The hostile class is the one `tests/test_autograder_grade.py` grades (tests/hostile/cases.py:
fork bombs, endless output, cells that sleep, tampered tests, archives, unreadable files...). The
honest class has as many students, each handing in the reference solution of lesson 01. Both are
graded by `python -m autograder grade` with the options the test uses (two workers, 10 s per
cell, 1 GB per kernel), sandboxed. The figure: the hostile class's wall time, the honest class's,
and their ratio. The budget, 480 s on 2 cores, was a timed assertion in the test suite until a
loaded machine showed that a wall-clock limit there decides a test by the machine's load, not by
the grader; it is measured here instead. Needs bubblewrap, as the grader does.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from hostile.cases import CASES, LESSON, NOTEBOOK, Paths, solved, write_submission  # noqa: E402
from support.pipeline import offline_env, solution_sources  # noqa: E402

OPTIONS = ["--lessons", LESSON, "--jobs", "2", "--cell-timeout", "10", "--memory", "1024", "--quiet"]
BUDGET_SECONDS = 480


def _lesson() -> tuple[dict, dict]:
    released = json.loads((REPO / "course" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    answers = solution_sources(json.loads((REPO / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8")))
    return released, answers


def grade(submissions: Path, out: Path) -> float:
    """Grade ``submissions`` into ``out``; the wall time in seconds."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out), "--course", str(REPO),
         *OPTIONS], cwd=REPO, env=offline_env(), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"grading {submissions.name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return elapsed


def measure() -> dict:
    released, answers = _lesson()
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as scratch, socket.socket() as closed:
        scratch = Path(scratch)
        closed.bind(("127.0.0.1", 0))  # a port hostile cells aim at; nothing listens there
        hostile, honest = scratch / "hostile", scratch / "honest"
        hostile.mkdir()
        paths = Paths(course=str(REPO), out=str(scratch / "out-hostile"), submissions=str(hostile),
                      port=closed.getsockname()[1])
        for case in CASES:
            write_submission(hostile, case, case.build(released, answers, paths))
        for number in range(len(CASES)):
            folder = honest / f"student{number:03d}" / LESSON
            folder.mkdir(parents=True)
            (folder / NOTEBOOK).write_text(json.dumps(solved(released, answers)), encoding="utf-8")
        hostile_seconds = grade(hostile, scratch / "out-hostile")
        honest_seconds = grade(honest, scratch / "out-honest")
    return {
        "what": "grading the hostile class vs an honest class of the same size, lesson 01",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "students": len(CASES), "cpus": os.cpu_count(),
        "hostile_seconds": round(hostile_seconds, 1), "honest_seconds": round(honest_seconds, 1),
        "ratio": round(hostile_seconds / honest_seconds, 2), "budget_seconds": BUDGET_SECONDS,
        "within_budget": hostile_seconds <= BUDGET_SECONDS,
        "load_at_start": load_at_start, "load_at_end": os.getloadavg()[0],
    }


def section(report: dict) -> str:
    verdict = "within" if report["within_budget"] else "**over**"
    return (
        "## Grading the hostile class\n\n"
        f"{report['students']} students of lesson 01, {report['cpus']} CPUs, two workers.\n\n"
        "| class | wall time |\n| --- | ---: |\n"
        f"| hostile and broken submissions (tests/hostile/cases.py) | {report['hostile_seconds']:.1f} s |\n"
        f"| the same number of reference solutions | {report['honest_seconds']:.1f} s |\n\n"
        f"Ratio (hostile / honest): **{report['ratio']}x**; {verdict} the budget of {report['budget_seconds']} s. "
        f"Load average {report['load_at_start']:.1f} at the start and {report['load_at_end']:.1f} at the end.\n"
    )


def main(results_dir: Path) -> str:
    """bench/run.py's entry point (there is no quick version: the class is what is measured)."""
    report = measure()
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "hostile.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return section(report)


if __name__ == "__main__":
    print(main(RESULTS))
