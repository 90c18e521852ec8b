"""`python -m autograder grade`, for real: a class of hostile and broken submissions of lesson
01-budget graded in one run (see tests/hostile/cases.py), then an interrupted run resumed.

Every case must end with the score its honest part deserves, a clear note in the summary, the
rest of the batch graded, the gradebook intact, and the submissions untouched.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import html
import io
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hostile import require_sandbox
from hostile.cases import CASES, LESSON, NOTEBOOK, Paths, write_submission
from support.pipeline import REPO, offline_env, solution_sources

from autograder.sandbox import CHANNEL_DIR

pytestmark = [pytest.mark.slow]

GRADE_OPTIONS = ["--lessons", LESSON, "--jobs", "2", "--cell-timeout", "10", "--memory", "1024", "--quiet"]


def run_grader(submissions: Path, out: Path, *extra: str, env=None, wait=True):
    command = [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
               "--course", str(REPO), *GRADE_OPTIONS, *extra]
    kwargs = dict(cwd=REPO, env=env or offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return subprocess.Popen(command, start_new_session=True, **kwargs)
    return subprocess.run(command, timeout=600, check=False, **kwargs)


def released_and_answers():
    released = json.loads((REPO / "course" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    answers = solution_sources(json.loads((REPO / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8")))
    return released, answers


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every path under ``folder`` with the hash of its content (or link target) and mtime."""
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            digest = "link:" + os.readlink(path)
        elif path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            digest = "dir"
        found[str(path.relative_to(folder))] = (digest, info.st_mtime_ns)
    return found


class Listener:
    """A TCP server on the grader's loopback that records any connection (there must be none)."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.running = False
        self.thread.join()
        self.server.close()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    require_sandbox()
    base = tmp_path_factory.mktemp("class")
    submissions, out = base / "submissions", base / "out"
    submissions.mkdir()
    listener = Listener()
    paths = Paths(course=str(REPO), out=str(out), submissions=str(submissions), port=listener.port)
    released, answers = released_and_answers()
    for case in CASES:
        write_submission(submissions, case, case.build(released, answers, paths))
    (submissions / "README.txt").write_text("exported from the course's LMS")
    before = snapshot(submissions)
    result = run_grader(submissions, out)  # its wall time is measured in bench/bench_hostile.py
    listener.close()
    students = {p.stem: json.loads(p.read_text()) for p in (out / "students").glob("*.json")}
    rows = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    return {
        "result": result, "out": out, "submissions": submissions, "before": before,
        "students": students, "rows": rows, "summary": (out / "summary.md").read_text(), "listener": listener,
    }


def test_grading_ran_and_exited_zero(graded):
    result = graded["result"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "graded" in result.stdout and "grades.csv" in result.stdout
    assert sorted(graded["students"]) == sorted(case.student for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.student for c in CASES])
def test_each_submission_gets_what_its_honest_part_deserves(case, graded):
    lesson = graded["students"][case.student]["lessons"][LESSON]
    tests = {t["grade_id"]: t for t in lesson["tests"]}
    if case.expect in ("unreadable", "missing"):
        assert lesson["status"] == case.expect and lesson["score"] == 0
        return
    assert lesson["status"] == "graded", lesson["notes"]
    assert tests and lesson["max_score"] == sum(t["points"] for t in tests.values())
    for grade_id, test in tests.items():
        lost = case.expect == "zero" or (case.expect == "count-chat-zero" and grade_id.startswith("count-chat"))
        want = 0 if lost else test["points"]
        assert test["score"] == want, f"{case.student}: {grade_id} scored {test['score']}, deserves {want}: {test['error']}"
    row = next(r for r in graded["rows"] if r["student"] == case.student)
    assert float(row["score"]) == lesson["score"]


@pytest.mark.parametrize("case", [c for c in CASES if c.notes], ids=[c.student for c in CASES if c.notes])
def test_each_hostile_submission_has_a_clear_note_in_the_summary(case, graded):
    summary = graded["summary"]
    section = re.search(rf"- \*\*{re.escape(case.student)}\*\*.*?(?=\n- \*\*|\n## )", summary, re.S)
    assert section, f"{case.student} is not listed under 'Needs your attention'"
    text = re.sub(r"\\([\\`*_\[\]|~#!])", r"\1", section.group(0))  # the summary escapes Markdown
    for pattern in case.notes:
        assert re.search(pattern, text), f"{case.student}: no note matching {pattern!r} in:\n{section.group(0)}"
    row = next(r for r in graded["rows"] if r["student"] == case.student)
    assert row["attention"] == "yes"


def full_marks() -> str:
    solution = json.loads((REPO / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    points = sum(c["metadata"].get("nbgrader", {}).get("points", 0) for c in solution["cells"]
                 if c["metadata"].get("nbgrader", {}).get("grade"))
    return f"{points:g}"


def test_the_honest_student_needs_no_attention(graded):
    row = next(r for r in graded["rows"] if r["student"] == "honest")
    most = full_marks()
    assert (row["score"], row["max_score"], row["status"], row["attention"]) == (most, most, "graded", "no")


def _outputs(graded, student: str) -> list[str]:
    notebook = graded["out"] / "autograded" / student / LESSON / NOTEBOOK
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(o.get("text", "")) for c in cells for o in c.get("outputs", []) if o.get("output_type") == "stream"]


def test_a_learner_who_dumps_everything_it_can_reach_finds_no_hidden_test(graded):
    """While the hidden tests called its code, the learner's kernel gathered every string it could
    reach (frames, gc, linecache, In, files); none of them is a line of a hidden test."""
    (report,) = [text for text in _outputs(graded, "dumps-everything") if text.startswith("FOUND")]
    found, hidden, seen = (int(n) for n in re.findall(r"\d+", report))
    assert hidden > 20 and seen > 1000, report
    assert found == 0, report


def test_the_process_limit_holds_whoever_runs_the_grader(graded):
    (report,) = [text for text in _outputs(graded, "resources") if text.startswith("forked")]
    assert int(report.split()[1]) < 300, report


def test_the_submissions_were_not_modified(graded):
    assert snapshot(graded["submissions"]) == graded["before"]


def test_escape_attempts_reached_nothing(graded):
    assert graded["listener"].connections == 0
    events = [e for e in graded["students"]["escape"]["lessons"][LESSON]["events"] if e["kind"] == "cell_error"]
    assert len(events) == 7, events  # every attempt failed with an error
    gradebook = graded["out"] / "gradebook.db"
    with sqlite3.connect(gradebook) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_merged_gradebook_is_intact_and_agrees_with_the_csv(graded):
    from nbgrader.api import Gradebook

    out = graded["out"]
    with sqlite3.connect(out / "gradebook.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        for row in graded["rows"]:
            if graded["students"][row["student"]]["gradebook"] is None:
                assert row["status"] in ("unreadable", "missing")
                continue
            submission = gradebook.find_submission(LESSON, row["student"])
            assert submission.score == float(row["score"]), row["student"]
            assert submission.max_score == float(row["max_score"])


def test_feedback_shows_no_hidden_test(graded):
    solution = json.loads((REPO / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in solution["cells"]]
    hidden = [line.strip() for source in sources
              for block in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", source, re.S)
              for line in block.splitlines() if len(line.strip()) > 20]
    assert hidden
    pages = list((graded["out"] / "feedback").rglob("*.html"))
    assert len(pages) == 2 * len(CASES)
    for page in pages:
        text = html.unescape(page.read_text(encoding="utf-8"))
        for line in hidden:
            assert line not in text, f"{page} shows the hidden line {line!r}"
    tampered = (graded["out"] / "feedback" / "tampered-tests" / "index.html").read_text(encoding="utf-8")
    assert "count-chat-visible" in tampered and "failed" in tampered


def test_a_second_run_keeps_every_grade(graded):
    """Nothing is graded again: every student's record is left as it was, byte for byte and mtime."""
    out = graded["out"]
    before, records = (out / "grades.csv").read_text(), snapshot(out / "students")
    result = run_grader(graded["submissions"], out)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"kept {len(CASES)} student(s)" in result.stderr
    assert (out / "grades.csv").read_text() == before
    assert snapshot(out / "students") == records


# Ben's notebook waits, in a cell of his own before any answer, until a file named GATE appears in
# the judge's channel folder: the one host folder a learner's kernel sees (read-only, at
# autograder.sandbox.CHANNEL_DIR) and the test can write. The test opens that gate only after it
# has sent the interrupt, so the interrupt always lands while ben is being graded, however busy
# the machine; in the second run it opens the gate as soon as the channel exists.
GATE = "open-the-gate"
WAIT_AT_THE_GATE = f"""import os, time
while not os.path.exists({CHANNEL_DIR + '/' + GATE!r}):
    time.sleep(0.05)"""


def channel_folders(tmpdir: Path) -> list[Path]:
    """The judges' channel folders a grader run with TMPDIR=``tmpdir`` has made (autograder.worker.kept_judges)."""
    return sorted(tmpdir.glob("ctxlab-judges-*/channel-*"))


def open_gates(tmpdir: Path, process: subprocess.Popen, deadline: float) -> None:
    """Put the gate file in every channel folder until the run ends (or ``deadline`` passes)."""
    while process.poll() is None and time.monotonic() < deadline:
        for folder in channel_folders(tmpdir):
            with contextlib.suppress(OSError):  # the folder may go as the judge stops
                (folder / GATE).touch()
        time.sleep(0.05)


def described(pids: str) -> str:
    """``ps`` lines for the processes whose ids are in ``pids`` (one per line)."""
    ids = ",".join(pids.split())
    return subprocess.run(["ps", "-o", "pid,ppid,pgid,etime,args", "-p", ids], capture_output=True, text=True).stdout


def wait_for(condition, process: subprocess.Popen, what: str, seconds: float = 300) -> None:
    """Wait until ``condition()``; fail if the run ends first. The deadline only stops a hung run."""
    deadline = time.monotonic() + seconds
    while not condition():
        if process.poll() is not None:
            _, stderr = process.communicate()
            pytest.fail(f"the run ended (status {process.returncode}) before {what}:\n{stderr[-2000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {what} after {seconds} s")
        time.sleep(0.02)


@pytest.fixture
def short_tmpdir():
    """A TMPDIR of the test's own with a short path: kernels' sockets live there, and a Unix
    socket's path may not pass 107 bytes (pytest's tmp_path can be longer than that)."""
    folder = Path(tempfile.mkdtemp(prefix="cwl-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_an_interrupted_run_resumes_with_the_same_grades(tmp_path, short_tmpdir):
    require_sandbox()
    released, answers = released_and_answers()
    from hostile.cases import after, solved

    submissions, out, tmpdir = tmp_path / "submissions", tmp_path / "out", short_tmpdir
    notebooks = {"ann": solved(released, answers), "ben": after(solved(released, answers), None, WAIT_AT_THE_GATE)}
    for student, notebook in notebooks.items():
        (submissions / student / LESSON).mkdir(parents=True)
        (submissions / student / LESSON / NOTEBOOK).write_text(json.dumps(notebook))
    env = {**offline_env(), "TMPDIR": str(tmpdir)}
    # A cell timeout longer than the test could ever wait: ben's gate cell ends only when opened.
    options = ("--jobs", "1", "--cell-timeout", "600")
    process = run_grader(submissions, out, *options, env=env, wait=False)
    job = out / "work" / "ben" / "job.json"

    def ben_is_running() -> bool:
        if not (job.exists() and (out / "students" / "ann.json").exists() and channel_folders(tmpdir)):
            return False
        with contextlib.suppress(ValueError):  # the job file may be half written
            runtime = json.loads(job.read_text())["runtime"]
            return bool(subprocess.run(["pgrep", "-f", runtime], capture_output=True, text=True).stdout.strip())
        return False

    wait_for(ben_is_running, process, "ben's kernel started")
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "run the same command again" in stderr
    assert not (out / "students" / "ben.json").exists()
    runtime = json.loads(job.read_text())["runtime"]
    for marker in (str(out), runtime):
        for _ in range(600):  # the grader has stopped them; give a loaded machine time to reap them
            leftover = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
            if not leftover.stdout.strip():
                break
            time.sleep(0.1)
        assert leftover.stdout.strip() == "", f"processes outlived the interrupted run:\n{described(leftover.stdout)}"
    assert not Path(runtime).exists()

    process = run_grader(submissions, out, *options, env=env, wait=False)
    open_gates(tmpdir, process, deadline=time.monotonic() + 600)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr[-2000:]
    assert "kept 1 student(s)" in stderr
    rows = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    most = full_marks()
    assert [(r["student"], r["score"], r["status"]) for r in rows] == [("ann", most, "graded"), ("ben", most, "graded")]
    shutil.rmtree(out / "work", ignore_errors=True)


def test_a_student_who_spends_the_time_limit_keeps_what_ran(tmp_path):
    """Cells that each sleep under the cell timeout, after every answer and test: the student's
    time runs out, the rest is not run, and everything that ran keeps its score.

    The margins are wide so that the machine's load cannot decide the outcome: the answers and
    tests take a few seconds of the 60 allowed (bench/bench_hostile.py grades a solution in about
    2.5 s of a worker's time), and each 15 s sleep has 10 s to spare under its cell's 25 s."""
    require_sandbox()
    from hostile.cases import at_end, solved

    released, answers = released_and_answers()
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    (submissions / "sleepy" / LESSON).mkdir(parents=True)
    notebook = at_end(solved(released, answers), *["import time\ntime.sleep(15)"] * 5)
    (submissions / "sleepy" / LESSON / NOTEBOOK).write_text(json.dumps(notebook))
    result = run_grader(submissions, out, "--student-timeout", "60", "--cell-timeout", "25")
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    assert (row["score"], row["status"], row["attention"]) == (full_marks(), "graded", "yes"), row
    assert "time limit" in (out / "summary.md").read_text()

