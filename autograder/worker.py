"""The grading work of one process: release the lessons (``template``) or grade one student.

The grade command keeps ``--jobs`` workers (``python -m autograder.worker serve``, see
:mod:`autograder.pool`) and hands each one student at a time. Each worker has its own private nbgrader course and gradebook (a copy of the
template's), so workers never wait on each other's SQLite locks; the parent checks and merges
the gradebooks afterwards (:mod:`autograder.gradebooks`). The worker itself is trusted code:
learners' code runs only in the sandboxed kernels it starts.

For every lesson the worker reads the submitted notebook (:mod:`autograder.notebook`), puts
the test cells back (:mod:`autograder.restore`), runs nbgrader's autograde with
:class:`autograder.execute.GuardedExecute` in place of nbgrader's Execute, and records the
scores from its gradebook, each test's error, and every note, in ``result.json``.

>>> failure_of({"outputs": [{"output_type": "error", "ename": "AssertionError", "evalue": "expected 9"}]})
{'ename': 'AssertionError', 'evalue': 'expected 9'}
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import time
import traceback
import warnings
from pathlib import Path

from .limits import remove_tree

__all__ = ["grade_student", "release_lessons", "failure_of", "serve", "main", "JUDGING_DIR"]

JUDGING_DIR = str(Path(__file__).resolve().parent / "judging")


def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _path_with_scripts() -> None:
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def release_lessons(job: dict) -> dict:
    """Release each lesson of ``job["root"]`` with nbgrader's API (one process for all)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    root = Path(job["root"])
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    failures = {}
    for lesson in job["lessons"]:
        result = api.generate_assignment(lesson, force=True)
        if not result["success"]:
            failures[lesson] = (result.get("error") or result.get("log") or "")[-3000:]
    return {"failures": failures}


def failure_of(cell: dict) -> dict | None:
    """Why an executed test cell failed (its first error, or its stderr), or None if it passed."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return {"ename": str(output.get("ename", "")), "evalue": str(output.get("evalue", ""))[:2000]}
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            return {"ename": "stderr", "evalue": str(output.get("text", ""))[:2000]}
    return None


def _autograde(root: Path, student: str, lesson, context, options: dict) -> None:
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import (
        AssignLatePenalties,
        CheckCellMetadata,
        IgnorePattern,
        LimitOutput,
        SaveAutoGrades,
    )
    from traitlets.config import Config

    from .execute import GuardedExecute

    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    config.CourseDirectory.source_directory = "source"
    config.CourseDirectory.assignment_id = lesson.name
    config.CourseDirectory.student_id = student
    config.OverwriteCells.add_missing_cells = True
    # nbformat's validation once after the last preprocessor, not after each: the same check
    # (an invalid notebook still fails), a tenth of the time.
    config.Exporter.optimistic_validation = True
    config.Execute.timeout = options["limits"]["cell_timeout"]
    config.GuardedExecute.output_bytes = options["limits"]["output_bytes"]
    deadline = options.get("deadline")
    config.GuardedExecute.notebook_timeout = max(1, int(deadline - time.time())) if deadline else 0
    config.Autograde.autograde_preprocessors = [
        GuardedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
        SaveAutoGrades, AssignLatePenalties, CheckCellMetadata,
    ]
    GuardedExecute.context = context
    app = Autograde(coursedir=CourseDirectory(config=config), config=config)
    app.force = True
    app.create_student = True
    app.start()


def _scores(root: Path, student: str, lesson) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission_notebook(lesson.notebook, lesson.name, student)
        return {
            grade.name: {"score": grade.score, "max_score": grade.max_score,
                         "needs_manual_grade": grade.needs_manual_grade}
            for grade in submission.grades
        }


def _grade_lesson(root: Path, student: str, lesson, spec: dict, options: dict, runtime: Path) -> dict:
    import nbformat

    from .execute import ExecutionContext, JudgeSpec
    from .notebook import read_notebook
    from .restore import restore_tests
    from .sandbox import Limits, Sandbox
    from .skipping import lesson_cell_sources

    result = {"status": "graded", "score": 0.0, "max_score": lesson.max_score, "origin": spec.get("origin", ""),
              "tests": [], "notes": [], "events": [], "autograded": None}
    if spec.get("raw") is None:
        result["status"] = spec.get("status") or "missing"
        result["notes"].append(spec.get("problem") or "no notebook was submitted")
        return result
    released = nbformat.read(lesson.released, as_version=4)
    notebook, notes = read_notebook(Path(spec["raw"]).read_bytes(), metadata=dict(released.metadata))
    result["notes"] += notes
    if notebook is None:
        result["status"] = "unreadable"
        return result
    notebook.cells, notes = restore_tests(notebook.cells, released)
    result["notes"] += notes
    folder = root / "submitted" / student / lesson.name
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / lesson.filename)
    if spec.get("timestamp"):
        (folder / "timestamp.txt").write_text(spec["timestamp"], encoding="utf-8")
    source = root / "source" / lesson.name
    source.mkdir(parents=True, exist_ok=True)
    for name, path in lesson.files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, source / name)

    limits = Limits(**options["limits"])
    sandbox = Sandbox(isolated=options["sandbox"], readonly=tuple(options["readonly"]),
                      judging_dir=options.get("judging_dir") or JUDGING_DIR, limits=limits)
    context = ExecutionContext(sandbox=sandbox, runtime_root=runtime, lesson=lesson.name,
                               files={name: str(source / name) for name in lesson.files},
                               judge=JudgeSpec(answer_names=list(lesson.answer_names), forbid=dict(lesson.forbid)),
                               lesson_cells=set() if options.get("every_cell") else lesson_cell_sources(released.cells),
                               judges=_JUDGES.get("pool"))
    try:
        _autograde(root, student, lesson, context, options)
    except Exception as err:
        result["status"] = "error"
        result["notes"].append(f"grading failed: {type(err).__name__}: {str(err)[:500]}")
        result["events"] = [e.as_dict() for e in context.events]
        logging.getLogger("autograder").error("%s/%s: %s", student, lesson.name, traceback.format_exc())
        return result
    result["events"] = [e.as_dict() for e in context.events]
    result["skipped_cells"] = len(context.skipped)
    graded = root / "autograded" / student / lesson.name / lesson.filename
    scores = _scores(root, student, lesson)
    cells = {}
    if graded.exists():
        result["autograded"] = str(graded)
        for cell in json.loads(graded.read_text(encoding="utf-8"))["cells"]:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id:
                cells[grade_id] = cell
    for test in lesson.tests:
        score = scores.get(test.grade_id, {})
        result["tests"].append({
            "grade_id": test.grade_id,
            "points": test.points,
            "score": score.get("score") or 0.0,
            "needs_manual_grade": bool(score.get("needs_manual_grade")),
            "error": failure_of(cells.get(test.grade_id, {})),
        })
    result["score"] = sum(t["score"] for t in result["tests"])
    result["needs_manual_grade"] = any(t["needs_manual_grade"] for t in result["tests"])
    return result


def grade_student(job: dict) -> dict:
    """Grade every lesson in ``job`` for one student in a private course; return the results."""
    from .template import load_template

    _path_with_scripts()
    root = Path(job["root"])
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    template = Path(job["template"])
    shutil.copy(template / "root" / "gradebook.db", root / "gradebook.db")
    lessons = load_template(template)
    results = {}
    runtime = Path(job["runtime"])
    options = dict(job["options"])
    if options.get("student_timeout"):  # one budget for all of the student's lessons
        options["deadline"] = time.time() + float(options["student_timeout"])
    try:
        for name, spec in job["lessons"].items():
            started = time.perf_counter()
            results[name] = _grade_lesson(root, job["student"], lessons[name], spec, options, runtime)
            results[name]["seconds"] = round(time.perf_counter() - started, 3)
    finally:
        remove_tree(runtime)
    return {"student": job["student"], "lessons": results, "gradebook": str(root / "gradebook.db"),
            "peak_memory_mb": _peak_memory_mb()}


def _peak_memory_mb() -> dict[str, float]:
    """The largest resident size this worker process has had so far (its kernels are separate
    processes, each under its own ``--memory`` limit)."""
    import resource

    return {"worker": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


_JUDGES: dict = {}  # this worker's JudgePool, while it serves (autograder.execute.JudgePool)


@contextlib.contextmanager
def kept_judges():
    """Judges kept between notebooks for as long as this worker grades (stopped at the end)."""
    import tempfile

    from jupyter_core.utils import run_sync

    from .execute import JudgePool

    root = tempfile.mkdtemp(prefix="ctxlab-judges-")
    _JUDGES["pool"] = JudgePool(root)
    try:
        yield _JUDGES["pool"]
    finally:
        pool = _JUDGES.pop("pool")
        with contextlib.suppress(Exception):
            run_sync(pool.close)()
        remove_tree(Path(root))


def serve(lines, answer) -> None:
    """Grade the job file named on each line of ``lines``; answer ``done`` or ``failed`` to each."""
    with kept_judges():
        _serve(lines, answer)


def _serve(lines, answer) -> None:
    root_logger = logging.getLogger()
    for line in lines:
        job_path = Path(line.strip())
        if not line.strip():
            continue
        handler = logging.FileHandler(job_path.parent / "worker.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        root_logger.addHandler(handler)
        try:
            job = json.loads(job_path.read_text(encoding="utf-8"))
            _write_json(Path(job["result"]), grade_student(job))
            answer("done")
        except Exception:
            logging.getLogger("autograder").exception("grading %s failed", job_path)
            answer("failed")
        finally:
            root_logger.removeHandler(handler)
            handler.close()


WORKER_MEMORY_MB = 6144  # nbgrader, one notebook's outputs and the kernels' messages fit well within it


def _limit_memory() -> None:
    """Cap the worker's own address space (soft limit, so kernels can still get theirs)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = WORKER_MEMORY_MB * 1024 * 1024
    if soft == resource.RLIM_INFINITY or soft > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("serve", "student", "template") or len(argv) != (1 if argv[0] == "serve" else 2):
        print("usage: python -m autograder.worker {serve | student JOB.json | template JOB.json}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.ERROR, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    _limit_memory()
    warnings.simplefilter("ignore")  # nbgrader's SQLAlchemy warnings; the result file says what matters
    _path_with_scripts()
    if argv[0] in ("serve", "student"):
        from .speed import install

        install()  # nbgrader's per-notebook overheads, paid once by this worker
    if argv[0] == "serve":
        serve(sys.stdin, lambda word: print(word, flush=True))
        return 0
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    if argv[0] == "student":
        with kept_judges():
            result = grade_student(job)
    else:
        result = release_lessons(job)
    _write_json(Path(job["result"]), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
