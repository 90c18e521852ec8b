"""Grading a class: the parallel `python -m autograder grade` against the same grader as it was
before grading was made fast (commit ``BASELINE``) and against plain sequential
`nbgrader autograde`, on the same submissions, timed in one run.

    .venv/bin/python bench/run.py --only grading                  # 30 students x every lesson
    .venv/bin/python bench/bench_grading.py --students 6 --lessons 01-budget --jobs 2

Each student hands in every lesson; by student and lesson the notebook is the reference
solution, the blank learner notebook, or the reference with one known wrong answer (from
tests/wrong_answers/), so grading does the work a real class gives it. Both graders start from
nothing: each releases the lessons into its own gradebook, then grades every notebook.

* grader: `python -m autograder grade` with `--jobs` workers (default: the CPUs), sandboxed,
  every test cell in a judge's kernel, exactly as an instructor runs it;
* baseline: the `autograder/` package of commit ``BASELINE`` (extracted with `git archive`),
  same options: the same judge and sandbox, but every demonstration cell run;
* sequential: `nbgrader generate_assignment` then `nbgrader autograde LESSON` for each lesson,
  in a copy of the course, as the nbgrader documentation shows (one student after another,
  no sandbox).

It writes `bench/results/grading.json` and a section of `bench/results/report.md` (run by
bench/run.py, which calls ``main(results_dir, quick=...)``; alone, `grading.md`): the wall
times, the ratio (sequential / parallel: how many times faster the command is; target at least
3x on two cores), the time per notebook and the peak memory per worker (from the grader's own
records), and whether all three agree on every score. Not part of the test suite: with 30 students x 6 lessons (180
notebooks) it takes about half an hour on 2 cores; ``--quick`` grades 2 students x lesson 01.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from support.pipeline import fill, load_wrong_answers, solution_sources  # noqa: E402

from autograder.release import lessons_in  # noqa: E402

KINDS = ("solution", "blank", "wrong")
BASELINE = "de1b307"  # the grader before it left out demonstrations nothing graded needs


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def make_class(folder: Path, lessons: list[str], students: int) -> dict[tuple[str, str], str]:
    """Write ``students`` x ``lessons`` submissions in nbgrader's layout; return what each is."""
    kinds = {}
    for offset, lesson in enumerate(lessons):
        (source,) = sorted((REPO / "solutions" / lesson).glob("*.ipynb"))
        released = json.loads((REPO / "course" / lesson / source.name).read_text(encoding="utf-8"))
        answers = solution_sources(json.loads(source.read_text(encoding="utf-8")))
        wrong = load_wrong_answers(lesson)
        for number in range(students):
            student = f"student{number:02d}"
            kind = KINDS[(number + offset) % len(KINDS)]
            if kind == "solution":
                notebook = fill(released, answers)
            elif kind == "wrong" and wrong:
                mistake = wrong[number % len(wrong)]
                notebook = fill(released, {**answers, mistake.cell: mistake.source})
            else:
                kind, notebook = "blank", released
            path = folder / student / lesson / source.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
            kinds[(student, lesson)] = kind
    return kinds


def grader_at(folder: Path, commit: str = BASELINE) -> Path:
    """The autograder package as it was at ``commit``, extracted under ``folder``."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, "autograder"], cwd=REPO, capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"cannot extract the grader of {commit} (a clone with full history is needed): "
                         f"{archive.stderr.decode()[-500:]}")
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def time_parallel(submissions: Path, out: Path, lessons: list[str], jobs: int,
                  grader: Path | None = None) -> tuple[float, dict]:
    env = environment()
    if grader is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(grader), env.get("PYTHONPATH", "")])
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out), "--course", str(REPO),
         "--lessons", ",".join(lessons), "--jobs", str(jobs), "--fresh", "--quiet"],
        cwd=grader or REPO, env=env, capture_output=True, text=True, check=False,
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"the parallel grader failed ({result.returncode}):\n{result.stderr[-3000:]}")
    rows = csv.DictReader(io.StringIO((out / "grades.csv").read_text(encoding="utf-8")))
    return elapsed, {(r["student"], r["lesson"]): float(r["score"]) for r in rows}


def grader_records(out: Path) -> dict:
    """Seconds per notebook and peak memory per worker, from the grader's per-student records."""
    seconds, workers = [], []
    for path in sorted((out / "students").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        seconds += [lesson["seconds"] for lesson in record.get("lessons", {}).values() if "seconds" in lesson]
        peak = record.get("peak_memory_mb") or {}
        workers += [peak["worker"]] if "worker" in peak else []
    seconds.sort()
    return {
        "notebook_seconds_mean": round(sum(seconds) / len(seconds), 2) if seconds else None,
        "notebook_seconds_median": seconds[len(seconds) // 2] if seconds else None,
        "notebook_seconds_max": seconds[-1] if seconds else None,
        "worker_peak_mb": max(workers, default=None),
    }


def time_sequential(submissions: Path, root: Path, lessons: list[str]) -> tuple[float, dict]:
    root.mkdir(parents=True)
    shutil.copy(REPO / "nbgrader_config.py", root)
    for lesson in lessons:
        shutil.copytree(REPO / "solutions" / lesson, root / "solutions" / lesson)
    shutil.copytree(submissions, root / "submitted")
    db = f"--CourseDirectory.db_url=sqlite:///{root / 'gradebook.db'}"
    started = time.perf_counter()
    for command in [["generate_assignment", lesson, "--force"] for lesson in lessons] + \
                   [["autograde", lesson] for lesson in lessons]:
        result = subprocess.run([sys.executable, "-m", "nbgrader", *command, db], cwd=root, env=environment(),
                                capture_output=True, text=True, check=False)
        if result.returncode != 0 and command[0] == "generate_assignment":
            raise SystemExit(f"nbgrader {' '.join(command)} failed:\n{result.stderr[-3000:]}")
    elapsed = time.perf_counter() - started
    from nbgrader.api import Gradebook

    scores = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
            for lesson in lessons:
                for submission in gradebook.assignment_submissions(lesson):
                    scores[(submission.student.id, lesson)] = float(submission.score)
    return elapsed, scores


def measure_grading(*, students: int = 30, jobs: int = 0, lessons: list[str] | None = None) -> dict:
    """Time both graders on one generated class; return the figures."""
    lessons = lessons or lessons_in(REPO)
    jobs = jobs or os.cpu_count() or 1
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ctxlab-bench-") as scratch:
        scratch = Path(scratch)
        kinds = make_class(scratch / "submissions", lessons, students)
        parallel, ours = time_parallel(scratch / "submissions", scratch / "parallel", lessons, jobs)
        records = grader_records(scratch / "parallel")
        before, earlier = time_parallel(scratch / "submissions", scratch / "before", lessons, jobs,
                                        grader=grader_at(scratch / "grader-before"))
        sequential, theirs = time_sequential(scratch / "submissions", scratch / "sequential", lessons)
    mismatches = [
        {"student": s, "lesson": lesson, "kind": kinds[(s, lesson)], "parallel": ours.get((s, lesson)),
         "baseline": earlier.get((s, lesson)), "sequential": theirs.get((s, lesson))}
        for s, lesson in sorted(kinds)
        if not ours.get((s, lesson)) == earlier.get((s, lesson)) == theirs.get((s, lesson))
    ]
    return {
        "what": "grading students x lessons: python -m autograder grade (parallel) vs nbgrader autograde (sequential)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "students": students, "lessons": lessons, "notebooks": len(kinds), "jobs": jobs,
        "cpus": os.cpu_count(), "python": platform.python_version(),
        "parallel_seconds": round(parallel, 1), "sequential_seconds": round(sequential, 1),
        "baseline_seconds": round(before, 1), "baseline_commit": BASELINE,
        "ratio": round(sequential / parallel, 2), "speedup_over_baseline": round(before / parallel, 2),
        "seconds_per_notebook": round(parallel / len(kinds), 2), **records,
        "load_at_start": load_at_start, "load_at_end": os.getloadavg()[0],
        "scores_agree": not mismatches, "mismatches": mismatches,
    }


def section(report: dict) -> str:
    """The report as a markdown section for bench/results/report.md."""
    agree = "yes" if report["scores_agree"] else f"no, {len(report['mismatches'])} differ (see grading.json)"
    return (
        "## Grading a class\n\n"
        f"{report['students']} students x {len(report['lessons'])} lessons ({', '.join(report['lessons'])}): "
        f"{report['notebooks']} notebooks, {report['cpus']} CPUs, {report['jobs']} parallel workers.\n\n"
        "| grader | wall time |\n| --- | ---: |\n"
        f"| `python -m autograder grade` (parallel, sandboxed, tests in the judge) | {report['parallel_seconds']:.1f} s |\n"
        f"| the same grader at {report['baseline_commit']} (every demonstration run) "
        f"| {report['baseline_seconds']:.1f} s |\n"
        f"| `nbgrader autograde`, lesson by lesson (sequential, no sandbox) | {report['sequential_seconds']:.1f} s |\n\n"
        f"Ratio (sequential / parallel): **{report['ratio']}x** (target at least 3x); "
        f"{report['speedup_over_baseline']}x faster than {report['baseline_commit']}; measured in one run, "
        f"load average {report['load_at_start']:.1f} at the start and {report['load_at_end']:.1f} at the end. "
        f"All three include releasing the lessons into a new gradebook. Scores agree on every notebook: {agree}.\n\n"
        f"Per notebook: {report['seconds_per_notebook']:.2f} s of wall time; one worker takes "
        f"{report['notebook_seconds_median']} s (median) and {report['notebook_seconds_max']} s (longest) for "
        f"one, everything included. Peak memory of a worker process: {report['worker_peak_mb']} MB "
        "(each kernel is a process of its own, under `--memory`).\n"
    )


def main(results_dir: Path, *, quick: bool = False) -> str:
    """bench/run.py's entry point: 30 students x every lesson (``quick``: 2 x lesson 01)."""
    report = measure_grading(students=2 if quick else 30, lessons=["01-budget"] if quick else None)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "grading.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return section(report)


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=0, help="parallel workers (default: the CPUs)")
    parser.add_argument("--lessons", help="comma-separated lessons (default: every lesson in solutions/)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    lessons = [name for name in (args.lessons or "").split(",") if name] or None
    report = measure_grading(students=args.students, jobs=args.jobs, lessons=lessons)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "grading.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    (args.results / "grading.md").write_text(section(report), encoding="utf-8")
    print(section(report))
    return 0 if report["scores_agree"] else 1


if __name__ == "__main__":
    sys.exit(cli())
