"""``python -m autograder grade SUBMISSIONS``: grade a whole class, in parallel, safely.

One command takes a folder of submissions (nbgrader's layout, one folder per student, or one
zip archive per student: see :mod:`autograder.intake`), grades every lesson of every student
with nbgrader, and writes to ``--out`` (default ``grading-output/``):

======================================  ==========================================================
``grades.csv``                          one row per student and lesson (see :mod:`autograder.report`)
``summary.md``                          who failed what and why; what needs the instructor's look
``feedback/<student>/...``              feedback pages without hidden tests (:mod:`autograder.feedback`)
``gradebook.db``                        one nbgrader gradebook with every student, merged; what the
                                        formgrader entered in it before is kept (see
                                        :func:`~autograder.gradebooks.merge_gradebooks`)
``autograded/<student>/<lesson>/``      the executed notebooks (instructors only: they hold hidden tests),
                                        the learner's HTML made harmless (:mod:`autograder.defang`)
``students/<student>.json`` and ``.db`` each student's results, kept so a re-run resumes
``run.json``                            what this run graded and how, read by ``merge``
======================================  ==========================================================

``--shard K/N`` grades only the K-th of N shares of the class (see :func:`shard_of`), so N
machines can grade one class; ``python -m autograder merge`` (:mod:`autograder.merge`) joins
their output folders into the result one run would have written.

Students are graded by parallel workers (``--jobs``), each with its own gradebook; learners'
code runs only in sandboxed kernels (:mod:`autograder.sandbox`) under per-cell time, memory and
output limits. The submissions are only read. A student whose submission, lessons and options
are unchanged since the last run is not graded again, so an interrupted run resumes where it
stopped and a re-run gives the same grades.

Exit status: 0 when grading ran (whatever the scores), 1 when some students could not be graded
(the summary says which and why; fix it and run again), 2 when grading could not start (the
message says what to fix), 130 when interrupted.

>>> parse_lessons(["01-budget,02-trimming", "03-summarising"])
['01-budget', '02-trimming', '03-summarising']
>>> parse_shard("2/3")
(2, 3)
>>> shard_of(["cy", "ana", "bo", "di"], 2)
{'ana': 1, 'bo': 2, 'cy': 1, 'di': 2}
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

from .cpus import usable_cpus
from .defang import defang
from .feedback import write_feedback
from .gradebooks import GradebookError, check_gradebook, merge_gradebooks
from .intake import IntakeError, Submission, collect
from .limits import kill_naming, remove_tree
from .locking import OutputBusy, output_lock
from .notebook import read_notebook
from .pool import WorkerPool
from .progress import Progress, duration
from .report import attention, grades_csv, summary_markdown
from .sandbox import Limits, Sandbox, SandboxUnavailable, default_readonly_paths, probe
from .template import PACKAGE_PARENT, Lesson, TemplateError, build_template

__all__ = ["GradeOptions", "grade_class", "register", "parse_lessons", "parse_shard", "shard_of", "write_outputs",
           "GRADER_VERSION", "GradingRefused", "RUN_FILE"]

GRADER_VERSION = "7"  # 2: test cells are judged in their own kernel; 3: demonstrations nothing needs are left out;
# 4: consecutive test cells share one connection, tracebacks without colour codes; 5: exceptions are ctxlab's
# only by identity, references stay off in subclasses, methods and copies; 6: and in the judge while an answer
# runs (methods of the test's own objects called back); 7: a test that stops the judge's kernel (hung past
# the interrupt, died, or sent a message too large to receive) fails instead of scoring its points
JUDGING_DIR = Path(__file__).resolve().parent / "judging"
RUN_FILE = "run.json"


class GradingRefused(RuntimeError):
    """Grading cannot start; the message says what to fix."""


@dataclass
class GradeOptions:
    """Everything that decides how a class is graded."""

    submissions: Path
    out: Path = Path("grading-output")
    course: Path = Path(".")
    lessons: list[str] | None = None
    jobs: int = 0
    limits: Limits = Limits()
    sandbox: bool = True
    student_timeout: int = 0
    fresh: bool = False
    quiet: bool = False
    shard: tuple[int, int] | None = None  # (K, N): grade only the K-th of N shares of the class
    every_cell: bool = False  # run the lesson's demonstrations too, even when nothing graded needs them

    def key(self, lessons: dict[str, Lesson]) -> str:
        """What a kept result must match to be reused (the submission's digest is added to it)."""
        decisive = {
            "version": GRADER_VERSION, "limits": asdict(self.limits), "sandbox": self.sandbox,
            "every_cell": self.every_cell, "lessons": {name: lesson.digest for name, lesson in sorted(lessons.items())},
        }
        return hashlib.sha256(json.dumps(decisive, sort_keys=True).encode()).hexdigest()


def parse_lessons(values: list[str] | None) -> list[str] | None:
    """``--lessons`` values, comma-separated or repeated, as one list."""
    if not values:
        return None
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard K/N`` as ``(K, N)``, with 1 <= K <= N."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected K/N, such as 2/8 (the 2nd of 8 shares)") from None
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: K must be between 1 and N, and N at least 1 (got K={k}, N={n})")
    return k, n


def shard_of(students: list[str], n: int) -> dict[str, int]:
    """Which of ``n`` shards (1..n) grades each student: round robin over the sorted ids.

    Every machine reads the same class, so every machine computes the same shares; sizes differ
    by at most one student.
    """
    return {student: index % n + 1 for index, student in enumerate(sorted(students))}


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def precompile() -> None:
    """Write the bytecode of the code every grading kernel imports (ctxlab, the judging package),
    where this user may: kernels see those folders read-only and write no bytecode, so without
    it each of them compiles the same modules again. Nothing happens where the folders are not
    writable."""
    import compileall
    import importlib.util

    folders = [JUDGING_DIR]
    spec = importlib.util.find_spec("ctxlab")
    folders += [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for folder in folders:
        if os.access(folder, os.W_OK):
            with contextlib.suppress(Exception):
                compileall.compile_dir(str(folder), maxlevels=0, quiet=2)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _failed_result(submission: Submission, lessons: dict[str, Lesson], reason: str) -> dict:
    return {
        name: {"status": "error", "score": 0.0, "max_score": lesson.max_score, "tests": [],
               "notes": [reason], "events": [], "origin": submission.entries[name].origin}
        for name, lesson in lessons.items()
    }


def _put(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target``, replacing it whoever made it, with the umask's permissions:
    instructors sharing a course root (umask 002, ``hub/README.md``) grade over each other's runs."""
    fresh = target.with_name(f".{target.name}.new")
    shutil.copyfile(source, fresh)
    os.replace(fresh, target)


def _put_defanged(source: Path, target: Path) -> None:
    """The executed notebook ``source`` at ``target``, where the formgrader reads it, with the
    learner's HTML made harmless (:mod:`autograder.defang`)."""
    fresh = target.with_name(f".{target.name}.new")
    notebook = defang(json.loads(source.read_text(encoding="utf-8")))
    fresh.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(fresh, target)


class _Grader:
    def __init__(self, options: GradeOptions, lessons: dict[str, Lesson], sandbox: Sandbox, template: Path):
        self.options, self.lessons, self.sandbox, self.template = options, lessons, sandbox, template
        self.out = options.out
        self.key = options.key(lessons)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(PACKAGE_PARENT), env.get("PYTHONPATH", "")] if p)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        self.pool = WorkerPool(options.jobs or usable_cpus(), self.out / "work", env)

    def kept(self, submission: Submission) -> dict | None:
        """The result of an earlier run for this exact submission, if it is still valid."""
        path = self.out / "students" / f"{submission.student}.json"
        if self.options.fresh or not path.exists():
            return None
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if result.get("key") != self.key or result.get("digest") != submission.digest():
            return None
        if result.get("gradebook"):
            try:
                check_gradebook(self.out / "students" / f"{submission.student}.db",
                                self.template / "root" / "gradebook.db", submission.student)
            except GradebookError:
                return None
        return result

    def job(self, submission: Submission) -> Path:
        work = self.out / "work" / submission.student
        if work.exists():
            shutil.rmtree(work)  # what an interrupted run left behind
        (work / "raw").mkdir(parents=True)
        specs = {}
        for name, entry in submission.entries.items():
            spec = {"origin": entry.origin, "timestamp": entry.timestamp, "raw": None, "problem": entry.problem,
                    "status": entry.status}
            if entry.data is not None:
                raw = work / "raw" / f"{name}.ipynb"
                raw.write_bytes(entry.data)
                spec["raw"] = str(raw)
            specs[name] = spec
        # Kernel sockets live in a short private folder of the system's temporary space: Unix socket
        # paths are limited to about 100 characters, and the sandbox sees this folder's name.
        runtime = tempfile.mkdtemp(prefix="ctxlab-kernels-")
        job = {
            "student": submission.student, "root": str(work / "root"), "template": str(self.template),
            "runtime": runtime,
            "lessons": specs, "result": str(work / "result.json"),
            "options": {
                "limits": asdict(self.options.limits), "sandbox": self.sandbox.isolated,
                "readonly": list(self.sandbox.readonly), "judging_dir": self.sandbox.judging_dir,
                "student_timeout": self.options.student_timeout, "every_cell": self.options.every_cell,
            },
        }
        _write_json(work / "job.json", job)
        return work

    def grade(self, submission: Submission, progress: Progress) -> dict:
        """Grade ``submission`` on a free worker; store and return its result."""
        if all(entry.data is None for entry in submission.entries.values()):
            return self.nothing_to_run(submission)
        if self.pool.stopping:
            raise KeyboardInterrupt
        work = self.job(submission)
        progress.started_one()
        try:
            # The worker stops running a student's cells at --student-timeout itself and keeps what
            # ran; this later stop only catches a worker that hangs.
            limit = self.options.student_timeout
            code = self.pool.run(work / "job.json", limit + 300 + 30 * len(self.lessons) if limit else None)
        finally:
            # Normally nothing is left; after a worker was killed, a kernel it was starting may be.
            runtime = json.loads((work / "job.json").read_text())["runtime"]
            kill_naming(runtime)
            remove_tree(runtime)
            kill_naming(runtime)  # one that was between launcher and bubblewrap: its folder is gone now
        if self.pool.stopping:
            raise KeyboardInterrupt
        return self.store(submission, work, code)

    def nothing_to_run(self, submission: Submission) -> dict:
        """The result for a student none of whose notebooks can be read: zero, with the reasons."""
        lessons = {}
        for name, entry in submission.entries.items():
            lessons[name] = {"status": entry.status, "score": 0.0, "max_score": self.lessons[name].max_score,
                             "tests": [], "notes": [entry.problem or "nothing to grade"], "events": [],
                             "origin": entry.origin}
        for name, result in lessons.items():
            result["beside"] = submission.entries[name].beside()
        record = {"student": submission.student, "origin": submission.origin, "digest": submission.digest(),
                  "key": self.key, "intake_notes": submission.notes, "lessons": lessons, "gradebook": None}
        _write_json(self.out / "students" / f"{submission.student}.json", record)
        return record

    def store(self, submission: Submission, work: Path, code: int | None) -> dict:
        result_path = work / "result.json"
        gradebook = None
        peak_memory = None
        if code is None:
            lessons = _failed_result(submission, self.lessons, (
                f"grading this student took longer than {self.options.student_timeout} s and was stopped; "
                "raise --student-timeout or lower --cell-timeout, then run again"))
        elif code != 0 or not result_path.exists():
            log = work / "worker.log"
            tail = log.read_text(encoding="utf-8", errors="replace")[-1500:] if log.exists() else ""
            died = f" (it exited with status {code})" if code else ""
            lessons = _failed_result(submission, self.lessons,
                                     f"the grading worker failed{died}; see {log} and the worker logs in "
                                     f"{self.out / 'work'}:\n{tail}")
        else:
            raw = json.loads(result_path.read_text(encoding="utf-8"))
            lessons = raw["lessons"]
            peak_memory = raw.get("peak_memory_mb")
            try:
                check_gradebook(Path(raw["gradebook"]), self.template / "root" / "gradebook.db", submission.student)
                gradebook = self.out / "students" / f"{submission.student}.db"
                gradebook.parent.mkdir(parents=True, exist_ok=True)
                _put(Path(raw["gradebook"]), gradebook)
            except GradebookError as err:
                lessons = _failed_result(submission, self.lessons, f"the student's gradebook was rejected: {err}")
            for name, result in lessons.items():
                source = result.pop("autograded", None)
                if source and Path(source).exists() and result["status"] == "graded":
                    target = self.out / "autograded" / submission.student / name / Path(source).name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    _put_defanged(Path(source), target)
        for name, result in lessons.items():
            result["beside"] = submission.entries[name].beside()
        record = {
            "student": submission.student, "origin": submission.origin, "digest": submission.digest(),
            "key": self.key, "intake_notes": submission.notes, "lessons": lessons,
            "gradebook": str(gradebook) if gradebook else None,
            "peak_memory_mb": peak_memory,  # of the worker so far and of its largest kernel
        }
        if code == 0 and gradebook is not None and all(r["status"] != "error" for r in lessons.values()):
            _write_json(self.out / "students" / f"{submission.student}.json", record)
            shutil.rmtree(work, ignore_errors=True)
        return record


def _headline(result: dict) -> str:
    parts = []
    for name, lesson in sorted(result["lessons"].items()):
        mark = "" if lesson["status"] == "graded" else f" {lesson['status']}"
        parts.append(f"{name} {lesson['score']:g}/{lesson['max_score']:g}{mark}{' (see summary)' if attention(lesson) else ''}")
    return ", ".join(parts)


SOCKET_PATH_BYTES = 107  # the longest path a Unix socket may have (sun_path, less its NUL)


def _check_socket_room() -> None:
    """Refuse at once when the temporary folder is too long a path for the kernels' sockets,
    which live in ``$TMPDIR/ctxlab-kernels-XXXXXXXX/kernel-XXXXXXXX/`` (otherwise every student
    fails with ZeroMQ's "File name too long")."""
    folder = os.path.realpath(tempfile.gettempdir())
    longest = os.path.join(folder, "ctxlab-kernels-" + "x" * 8, "kernel-" + "x" * 8, "k-99")
    size = len(os.fsencode(longest))
    if size > SOCKET_PATH_BYTES:
        raise GradingRefused(
            f"the temporary folder {folder} is too long a path for the kernels' Unix sockets: their "
            f"paths would take {size} bytes, over the {SOCKET_PATH_BYTES} a socket may have; set "
            "TMPDIR to a short folder (for example TMPDIR=/tmp) and run again")


def grade_class(options: GradeOptions, *, log=print) -> int:
    """Grade every submission; write the outputs; return the exit status (see the module doc)."""
    submissions, out, course = options.submissions.resolve(), options.out.resolve(), options.course.resolve()
    if not submissions.is_dir():
        raise GradingRefused(f"{options.submissions} is not a folder of submissions")
    if _inside(out, submissions) or _inside(submissions, out):
        raise GradingRefused(f"the output folder {options.out} and the submissions {options.submissions} "
                             "must not contain each other: choose another --out")
    if not (course / "nbgrader_config.py").exists():
        raise GradingRefused(f"{course} is not a course root (no nbgrader_config.py); run from the repository "
                             "root or pass --course")
    _check_socket_room()
    options.out = out
    out.mkdir(parents=True, exist_ok=True)
    with output_lock(out):  # one grading writes into an output at a time
        return _grade_into(options, submissions, out, course, log)


def _grade_into(options: GradeOptions, submissions: Path, out: Path, course: Path, log) -> int:
    """:func:`grade_class` once its checks pass, with the output's lock held."""
    sandbox = Sandbox(isolated=options.sandbox, readonly=default_readonly_paths(), judging_dir=str(JUDGING_DIR),
                      limits=options.limits)
    precompile()
    if options.sandbox:
        probe(sandbox, [course / "solutions", out, submissions])
    else:
        log("WARNING: --no-sandbox: learners' code runs with your own rights; it can read the solutions "
            "and change grades. Use this only for submissions you trust.", file=sys.stderr)
    template = out / "template"
    lessons = build_template(course, template, options.lessons, log=lambda m: log(m, file=sys.stderr))
    students, intake_notes = collect(submissions, {name: lesson.filename for name, lesson in lessons.items()})
    if not students:
        raise GradingRefused(f"no submissions in {options.submissions}: expected one folder or one .zip archive "
                             "per student")
    everyone = sorted(s.student for s in students)
    if options.shard:
        k, n = options.shard
        share = shard_of(everyone, n)
        students = [s for s in students if share[s.student] == k]
        log(f"shard {k}/{n}: grading {len(students)} of the class's {len(everyone)} students", file=sys.stderr)
    for submission in students:  # a file that is not a notebook at all needs no worker
        for entry in submission.entries.values():
            if entry.data is not None:
                notebook, notes = read_notebook(entry.data)
                if notebook is None:
                    entry.data, entry.problem = None, notes[0]
    grader = _Grader(options, lessons, sandbox, template)
    results: dict[str, dict] = {}
    todo = []
    for submission in students:
        kept = grader.kept(submission)
        if kept is not None:
            results[submission.student] = kept
        else:
            todo.append(submission)
    if results:
        log(f"kept {len(results)} student(s) graded by an earlier run with the same submissions and options "
            "(--fresh regrades them)", file=sys.stderr)
    jobs = len(grader.pool.workers)
    progress = Progress(len(students), enabled=not options.quiet)
    progress.done = len(results)
    started = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(grader.grade, s, progress): s for s in todo}
        for future in as_completed(futures):
            record = future.result()
            results[record["student"]] = record
            progress.finished(record["student"], _headline(record))
    except KeyboardInterrupt:
        grader.pool.stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        progress.close()
        log(f"interrupted: {sum(1 for r in results.values() if r.get('gradebook'))} of {len(students)} students "
            "are graded and kept; run the same command again to grade the rest", file=sys.stderr)
        return 130
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        grader.pool.close()
    progress.close()
    write_outputs(out, results, lessons, template, intake_notes, options.limits, options.sandbox, shard=options.shard)
    _write_json(out / RUN_FILE, {
        "version": GRADER_VERSION, "key": grader.key, "shard": list(options.shard) if options.shard else None,
        "class": everyone, "intake_notes": intake_notes, "limits": asdict(options.limits),
        "sandbox": options.sandbox, "results": results,
    })
    failed = sorted(s for s, r in results.items() if any(x["status"] == "error" for x in r["lessons"].values()))
    log(f"graded {len(results)} students in {duration(time.monotonic() - started)}: {out / 'grades.csv'}, "
        f"{out / 'summary.md'}, {out / 'feedback'}")
    if failed:
        log(f"grading failed for {len(failed)} student(s): {', '.join(failed)}; see {out / 'summary.md'} for why, "
            "fix it and run the same command again (the others are kept)", file=sys.stderr)
        return 1
    return 0


def write_outputs(out: Path, results: dict, lessons: dict[str, Lesson], template: Path, intake_notes: list[str],
                  limits: Limits, sandbox: bool, *, shard: tuple[int, int] | None = None) -> None:
    """Write the reports, feedback and merged gradebook of ``results`` (each student's record) to ``out``."""
    header = [
        f"{len(results)} students, lessons {', '.join(sorted(lessons))}. "
        f"Limits per kernel: {limits.cell_timeout} s per cell, {limits.memory_mb} MB of memory, "
        f"{limits.output_bytes:,} bytes of output per cell.",
    ]
    if shard:
        header.append(f"**Shard {shard[0]}/{shard[1]} only**: join every shard's folder with "
                      "`python -m autograder merge` for the whole class.")
    if not sandbox:
        header.append("**Graded WITHOUT isolation (--no-sandbox): learners' code ran with the grader's rights.**")
    gradebooks = {s: Path(r["gradebook"]) for s, r in results.items() if r.get("gradebook")}
    carried = merge_gradebooks(template / "root" / "gradebook.db", gradebooks, out / "gradebook.db")
    for note in carried:
        print(f"gradebook: {note}", file=sys.stderr)
    (out / "grades.csv").write_text(grades_csv(results), encoding="utf-8")
    notes = intake_notes + [f"gradebook: {note}" for note in carried]
    (out / "summary.md").write_text(summary_markdown(results, header=header, notes=notes), encoding="utf-8")
    feedback = out / "feedback"
    if feedback.exists():
        shutil.rmtree(feedback)
    for student, record in results.items():
        write_feedback(feedback, student, record["lessons"], lessons)
    work = out / "work"
    for log in work.glob("worker-*.log"):
        if log.stat().st_size == 0:
            log.unlink()
    if work.exists() and not any(work.iterdir()):
        work.rmdir()


def register(commands) -> None:
    """Add ``grade SUBMISSIONS`` to the command line."""
    parser = commands.add_parser(
        "grade", help="grade a class's submissions with nbgrader, in parallel, in a sandbox",
        description="Grade every lesson of every student in SUBMISSIONS (a folder holding one folder or one "
                    ".zip archive per student). See autograder/README.md.",
    )
    parser.add_argument("submissions", type=Path, help="folder of submissions")
    parser.add_argument("--out", type=Path, default=Path("grading-output"),
                        help="output folder (default: grading-output)")
    parser.add_argument("--course", type=Path, default=Path("."), help="the course root (default: here)")
    parser.add_argument("--lessons", action="append", metavar="LESSON[,LESSON]",
                        help="grade only these lessons (default: every lesson in solutions/)")
    parser.add_argument("--jobs", "-j", type=int, default=0,
                        help="students graded at once (default: the CPUs this process may use, its affinity "
                             "and cgroup quota counted)")
    parser.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell (default: 60)")
    parser.add_argument("--memory", type=int, default=2048, help="MB of memory per kernel (default: 2048)")
    parser.add_argument("--max-output", type=int, default=1_000_000,
                        help="bytes of output kept per cell (default: 1000000)")
    parser.add_argument("--student-timeout", type=int, default=3600,
                        help="seconds one student's whole grading may take (default: 3600)")
    parser.add_argument("--fresh", action="store_true", help="regrade everyone, ignoring an earlier run's results")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run learners' code WITHOUT isolation (only for submissions you trust)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--every-cell", action="store_true",
                        help="also run the lesson's demonstrations that nothing graded needs (slower; same grades)")
    parser.add_argument("--shard", metavar="K/N",
                        help="grade only the K-th of N shares of the class (join the shards with `merge`)")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    try:
        shard = parse_shard(args.shard) if args.shard else None
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    options = GradeOptions(
        submissions=args.submissions, out=args.out, course=args.course, lessons=parse_lessons(args.lessons),
        jobs=args.jobs, limits=Limits(cell_timeout=args.cell_timeout, memory_mb=args.memory,
                                      output_bytes=args.max_output),
        sandbox=not args.no_sandbox,
        student_timeout=args.student_timeout, fresh=args.fresh, quiet=args.quiet, shard=shard,
        every_cell=args.every_cell,
    )
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return grade_class(options)
    except SandboxUnavailable as err:
        print(f"error: refusing to grade without isolation: {err}", file=sys.stderr)
    except (GradingRefused, IntakeError, TemplateError, OutputBusy) as err:
        print(f"error: {err}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted before grading started", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 2
