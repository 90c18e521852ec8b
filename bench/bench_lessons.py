"""Running each lesson's solution notebook from top to bottom, offline, as a learner's
"Run All" does: the target is under a minute per lesson (Binder's machines are no faster).

    .venv/bin/python bench/run.py --only lessons          # every lesson
    .venv/bin/python bench/run.py --only lessons --quick  # lesson 01 only

Each notebook is executed with nbclient in a fresh kernel, with no API key (the offline
summariser). The baseline, measured in the same run, is a notebook of one cell that imports
ctxlab and loads its tokenizer: what every lesson pays before its first line of teaching. The
table gives each lesson's wall time and its time over the baseline. Until this benchmark, the
one-minute target was a timed assertion in tests/test_lessons.py, which let the machine's load
decide a test; the test now checks only that every cell runs without an error.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from support.pipeline import offline_env  # noqa: E402

TARGET_SECONDS = 60
BASELINE = "import ctxlab\nctxlab.encoding()"


def lessons() -> list[str]:
    return sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def run(notebook, folder: Path) -> float:
    """Execute ``notebook`` in a new kernel with ``folder`` as its working folder; the wall time."""
    started = time.perf_counter()
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    elapsed = time.perf_counter() - started
    errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        raise SystemExit(f"{folder.name}: a cell failed: {errors[0].get('ename')}: {errors[0].get('evalue')}")
    return elapsed


def measure(names: list[str]) -> dict:
    saved = dict(os.environ)
    os.environ.update(offline_env())
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(key, None)
    try:
        baseline = run(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BASELINE)]), REPO)
        seconds = {}
        for name in names:
            (path,) = sorted((REPO / "solutions" / name).glob("*.ipynb"))
            seconds[name] = round(run(nbformat.read(path, as_version=4), path.parent), 1)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {
        "what": "each solution notebook run top to bottom, offline, vs a notebook that only imports ctxlab",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(), "baseline_seconds": round(baseline, 1), "seconds": seconds,
        "target_seconds": TARGET_SECONDS, "over_target": [n for n, s in seconds.items() if s > TARGET_SECONDS],
        "load": os.getloadavg()[0],
    }


def section(report: dict) -> str:
    rows = "".join(f"| {name} | {s:.1f} s | {s - report['baseline_seconds']:.1f} s |\n"
                   for name, s in report["seconds"].items())
    over = ", ".join(report["over_target"]) or "none"
    return (
        "## Running the lessons\n\n"
        f"Each solution notebook in a new kernel, offline, {report['cpus']} CPUs. Baseline (a kernel that "
        f"imports ctxlab and loads its tokenizer): {report['baseline_seconds']:.1f} s.\n\n"
        "| lesson | wall time | over the baseline |\n| --- | ---: | ---: |\n" + rows +
        f"\nTarget: under {report['target_seconds']} s each; over it: {over}. "
        f"Load average at the end: {report['load']:.1f}.\n"
    )


def main(results_dir: Path, *, quick: bool = False) -> str:
    report = measure(lessons()[:1] if quick else lessons())
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "lessons.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return section(report)


if __name__ == "__main__":
    print(main(RESULTS))
