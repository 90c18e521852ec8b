"""The hub with an exchange service instead of a shared folder: ngshare, end to end.

``hub/jupyterhub_config.py`` runs ngshare (from its own environment, ``hub/ngshare/``) as a
JupyterHub service when ``CTXLAB_NGSHARE_PYTHON`` names its Python, and every server then
exchanges through it (``hub/exchange/nbgrader_config.py``, ngshare-exchange's classes). This
plays lesson 01 through it as ``tests/test_hub.py`` does through the folder: the instructor
creates the course in ngshare and enrolls the learners (``ngshare-course-management``, as
``hub/README.md`` says), releases; the learners fetch and submit from the Assignments tab of
their own servers; the instructor collects, grades with ``python -m autograder grade`` and
releases the feedback; each learner fetches theirs. Nothing goes through the exchange folder.

It checks the scores, that each learner got only their own feedback, and that ngshare refuses
a learner what only an instructor may do: list or download another learner's submission,
release a lesson, enroll themselves in a course.

The hub runs ngshare as a system user of its own, which the test creates, and the test checks
that the process is that user's and that no learner can read its store.

It needs what the hub test needs (root, ``jupyterhub``, ``configurable-http-proxy``,
bubblewrap), and ngshare's environment: ``CTXLAB_NGSHARE_PYTHON``, or the one ``hub/install.py``
made under ``CTXLAB_HUB_PREFIX`` (as in CI), or else ``.venv-ngshare`` in the checkout, laid out
for every user to run as ``tests/test_hub.py`` lays out the hub's. With ``CTXLAB_REQUIRE_HUB=1``
(CI) a missing part fails the test.
"""

from __future__ import annotations

import base64
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from datetime import timezone
from pathlib import Path

import pytest
from hostile import require_sandbox
from nbgrader.utils import parse_utc
from support.pipeline import REPO, fill, solution_sources
from test_hub import (
    ANA,
    BO,
    COURSE_ID,
    LESSON,
    NOTEBOOK,
    STAFF,
    TEACHER,
    TEACHER2,
    Hub,
    HubLearner,
    Machine,
    each_fetched_only_their_own_feedback,
    free_port,
    lay_out,
    scores_are_right,
    shared_environment,
    why_no_hub,
)

pytestmark = [pytest.mark.slow]

NGSHARE_USER = "ctxlab-ngshare-t"  # the system user the hub runs ngshare as; the test makes it


def ngshare_python() -> Path:
    """ngshare's Python, as the module says (not yet laid out when it is the checkout's)."""
    if os.environ.get("CTXLAB_NGSHARE_PYTHON"):
        return Path(os.environ["CTXLAB_NGSHARE_PYTHON"])
    if os.environ.get("CTXLAB_HUB_PREFIX"):
        return Path(os.environ["CTXLAB_HUB_PREFIX"]) / "ngshare-env" / "bin" / "python"
    return REPO / ".venv-ngshare" / "bin" / "python"


def why_not_here() -> str | None:
    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("runuser") is None:
        return "the hub test creates local Unix users: it needs root with useradd and runuser (CI has both)"
    if why_no_hub():
        return why_no_hub()
    if not ngshare_python().is_file():
        return (f"ngshare's environment is missing ({ngshare_python()}): `/usr/bin/python3 hub/install.py PREFIX` "
                "makes PREFIX/ngshare-env (run the test with CTXLAB_HUB_PREFIX=PREFIX, as .ci/run does)")
    return None


@pytest.fixture(scope="module")
def machine():
    reason = why_not_here()
    if reason:
        if os.environ.get("CTXLAB_REQUIRE_HUB") == "1":
            pytest.fail(f"CTXLAB_REQUIRE_HUB=1 but the hub cannot run ngshare here: {reason}")
        pytest.skip(reason)
    require_sandbox()
    base = Path(tempfile.mkdtemp(prefix="ctxlab-ngshare-", dir="/tmp"))
    base.chmod(0o755)
    here = None
    try:
        here = Machine(base, shared_environment(base))
        python = ngshare_python()
        if python == REPO / ".venv-ngshare" / "bin" / "python":  # the checkout's: lay it out for every user
            python = lay_out(python.parents[1], base / "opt" / "ngshare-env") / "bin" / "python"
        here.add_system_user(NGSHARE_USER)
        port = free_port()
        here.env.update(CTXLAB_NGSHARE_PYTHON=str(python), CTXLAB_NGSHARE_PORT=str(port),
                        CTXLAB_NGSHARE_USER=NGSHARE_USER, CTXLAB_NGSHARE_DATA=str(base / "ngshare-store"),
                        CTXLAB_NGSHARE_URL=f"http://127.0.0.1:{port}/services/ngshare")
        yield here
    finally:
        if here is not None:
            here.remove_users()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def course(machine):
    """Play lesson 01 through ngshare; what each step left behind."""
    machine.add_group()
    for name in (TEACHER, TEACHER2, ANA, BO):
        machine.add_user(name)
    for name in (TEACHER, TEACHER2):
        subprocess.run(["usermod", "-aG", STAFF, name], check=True, capture_output=True)
    root = machine.root
    root.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", root)
    for folder in ("solutions", "course"):
        shutil.copytree(REPO / folder / LESSON, root / folder / LESSON)
    subprocess.run(["chown", "-R", f"{TEACHER}:{STAFF}", str(root)], check=True)
    subprocess.run(["chmod", "-R", "g+rwX,o-rwx", str(root)], check=True)
    subprocess.run(["find", str(root), "-type", "d", "-exec", "chmod", "g+s", "{}", "+"], check=True)

    hub = Hub(machine)
    try:
        hub.wait_up()
        for name in (ANA, BO, TEACHER):
            hub.start_server(name)
        learners = {name: HubLearner(hub, name) for name in (ANA, BO)}
        tokens = {name: hub.user_token(name) for name in (TEACHER, ANA)}

        def as_user(user: str, *command: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
            """``command`` as ``user`` in a terminal of their server: with its API token."""
            return machine.run_as(user, "env", f"JUPYTERHUB_API_TOKEN={tokens[user]}", f"JUPYTERHUB_USER={user}",
                                  *command, check=check, **kwargs)

        manage = str(machine.bin / "ngshare-course-management")
        as_user(TEACHER, manage, "create_course", COURSE_ID, TEACHER, cwd=root)
        for name in (ANA, BO):
            as_user(TEACHER, manage, "add_student", COURSE_ID, name, "--no-gb", cwd=root)
        nbgrader = str(machine.bin / "nbgrader")
        as_user(TEACHER, nbgrader, "release_assignment", LESSON, cwd=root)
        released = json.loads((root / "course" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
        answers = solution_sources(json.loads((root / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8")))

        before_fetch = learners[ANA].listing()
        for learner in learners.values():
            learner.action("fetch")
        learners[ANA].save(fill(released, answers))  # ana solves it, bo hands in the blank notebook
        for learner in learners.values():
            learner.action("submit")

        as_user(TEACHER, nbgrader, "collect", LESSON, cwd=root)
        grading = machine.run_as(
            TEACHER, str(machine.bin / "python"), "-m", "autograder", "grade", str(root / "submitted"), "--out",
            str(root / "grading-output"), "--course", str(root), "--lessons", LESSON, "--jobs", "2",
            "--cell-timeout", "30", "--memory", "1024", "--quiet", cwd=REPO, check=False, timeout=400)
        assert grading.returncode == 0, grading.stderr[-4000:]
        machine.run_as(TEACHER, "mkdir", "-p", "feedback", cwd=root)
        machine.run_as(TEACHER, "cp", "-r", "grading-output/feedback/.", "feedback/", cwd=root)
        as_user(TEACHER, nbgrader, "release_feedback", LESSON, cwd=root)
        for learner in learners.values():
            learner.action("fetch_feedback")
        yield {"root": root, "hub": hub, "learners": learners, "before_fetch": before_fetch,
               "grading": root / "grading-output", "as_user": as_user, "tokens": tokens}
    finally:
        hub.stop()


def test_the_lesson_went_through_ngshare_not_the_folder(course, machine):
    assert LESSON in json.dumps(course["before_fetch"]), course["before_fetch"]  # the Assignments tab saw it
    course_folder = machine.exchange / COURSE_ID
    left = sorted(str(p.relative_to(machine.exchange)) for p in course_folder.rglob("*")) if course_folder.exists() else []
    assert left == [], f"the exchange folder was used: {left}"
    for name in (ANA, BO):
        assert (Path(pwd.getpwnam(name).pw_dir) / LESSON / NOTEBOOK).is_file()
    assert sorted(p.name for p in (course["root"] / "submitted").iterdir()) == [ANA, BO]


def test_the_scores_are_right(course):
    scores_are_right(course["grading"])


def test_each_learner_fetched_only_their_own_feedback(course):
    each_fetched_only_their_own_feedback()


def test_ngshare_refuses_a_learner_what_only_an_instructor_may_do(course):
    """ana, with her own token, asks ngshare directly (as a script in her server could)."""
    hub = course["hub"]
    url = f"/services/ngshare/{{}}/{COURSE_ID}"
    token = course["tokens"][ANA]
    asked = {
        "list the submissions": ("GET", url.format("submissions") + f"/{LESSON}"),
        "download bo's submission": ("GET", url.format("submission") + f"/{LESSON}/{BO}"),
        "download bo's feedback": ("GET", url.format("feedback") + f"/{LESSON}/{BO}"),
        "release a lesson": ("POST", url.format("assignment") + "/not-a-lesson"),
        "list the learners": ("GET", url.format("students")),
        "make herself an instructor": ("POST", url.format("instructor") + f"/{ANA}"),
    }
    answers = {what: hub.call(method, path, token=token, form={} if method == "POST" else None)
               for what, (method, path) in asked.items()}
    allowed = {what: (status, text[:200]) for what, (status, text) in answers.items()
               if status == 200 or '"success": true' in text}
    assert not allowed, f"ngshare let a learner {allowed}"
    # refused by ngshare itself (not a route it does not have): a 403 with its JSON failure
    unclear = {what: (status, text[:200]) for what, (status, text) in answers.items()
               if status != 403 or not text.startswith('{"success": false')}
    assert not unclear, f"ngshare's answers are not refusals: {unclear}"
    status, text = hub.call("GET", url.format("assignments"), token=token)
    assert status == 200 and LESSON in text, (status, text[:500])  # what she may do, she can


def test_a_forged_or_backdated_submission_is_refused(course):
    """The folder exchange's attacks, on ngshare: ana, with her own token, submits naming bo as the
    learner and 2000 as the time. ngshare takes the learner from her token and the time from its
    own clock: the submission is hers, dated now, and bo's list does not change."""
    hub, token = course["hub"], course["tokens"][ANA]
    started = time.time()
    files = json.dumps([{"path": "budget.ipynb", "content": base64.encodebytes(b'{"cells": []}').decode()}])
    forged = {"files": files, "student_id": BO, "user": BO, "timestamp": "2000-01-01 00:00:00.000000 UTC"}
    status, text = hub.call("POST", f"/services/ngshare/submission/{COURSE_ID}/{LESSON}", token=token, form=forged)
    assert status == 200 and '"success": true' in text, (status, text[:300])
    stamp = json.loads(text)["timestamp"]
    assert parse_utc(stamp).replace(tzinfo=timezone.utc).timestamp() >= started - 5, (
        f"ngshare dated the submission {stamp}, the time ana sent, not its own")
    teacher = course["tokens"][TEACHER]
    listed = {name: hub.call("GET", f"/services/ngshare/submissions/{COURSE_ID}/{LESSON}/{name}", token=teacher)
              for name in (ANA, BO)}
    assert all(status == 200 for status, _ in listed.values()), listed
    assert stamp in listed[ANA][1] and stamp not in listed[BO][1], listed


def test_ngshare_listens_on_loopback_only(course, machine):
    """ngshare 0.6.0 listens on every interface; run through hub/ngshare/serve.py, only on the
    service's address, 127.0.0.1, as the kernel's table of listening sockets shows."""
    port = int(machine.env["CTXLAB_NGSHARE_PORT"])
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text(encoding="ascii").splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                listening.append(address)
    assert listening == ["0100007F"], f"ngshare listens on {listening} (0100007F is 127.0.0.1)"


def test_ngshare_runs_as_its_own_user_who_alone_can_read_its_store(course, machine):
    """The hub runs as root; ngshare, which holds every submission and feedback, runs as the system
    user named by CTXLAB_NGSHARE_USER, and its store is that user's alone."""
    store = Path(machine.env["CTXLAB_NGSHARE_DATA"])
    owner = pwd.getpwnam(NGSHARE_USER)
    running = []
    for process in Path("/proc").iterdir():
        try:
            command = (process / "cmdline").read_bytes().split(b"\0")
            status = (process / "status").read_text(encoding="ascii")
        except OSError:
            continue
        if any(part.endswith(b"serve.py") for part in command) and str(store).encode() in b" ".join(command):
            uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
            running.append(set(map(int, uids)))
    assert running == [{owner.pw_uid}], f"ngshare runs as {running}, not as {NGSHARE_USER} ({owner.pw_uid}) alone"
    for path in [store, *store.rglob("*")]:
        assert path.lstat().st_uid == owner.pw_uid, f"{path} is not {NGSHARE_USER}'s"
    assert store.stat().st_mode & 0o777 == 0o700
    assert (store / "ngshare.db").is_file() and any((store / "files").iterdir()), "ngshare kept nothing in its store"
    looked = machine.run_as(ANA, "ls", str(store), check=False)
    assert looked.returncode != 0, f"a learner listed ngshare's store: {looked.stdout}"
