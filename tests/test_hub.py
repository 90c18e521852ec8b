"""A class on JupyterHub, end to end on one machine: nbgrader's exchange, grading and feedback.

The test starts JupyterHub with the course's own configuration (``hub/jupyterhub_config.py``,
on loopback ports, with local Unix users it creates) and plays one lesson through, with two
instructors sharing one course root (the group ``ctxlab-staff``, nbgrader's groupshared):

1. one instructor releases lesson 01 with ``nbgrader release_assignment``, the other releases
   it again over it;
2. two learners fetch it from the Assignments tab's API in their own servers; one saves the
   solved notebook through the Contents API, the other leaves it blank; both submit;
3. the second instructor collects, the first grades with ``python -m autograder grade``
   (sandboxed) into the course root, the second releases the feedback; each learner fetches
   it and gets only their own;
4. both instructors' formgraders list the graded submissions; in Chromium the first logs in,
   opens a grading page and overrides a score, which survives the second grading it all again.

It checks the scores, that learners cannot list or read each other's submissions, the
instructors' course or feedback that is not theirs, that only the learner version is in the
exchange, and that the exchange's folders have the permissions nbgrader gives them
(``nbgrader/exchange/default``, groupshared: the course folder and ``outbound`` ``0o775``,
``inbound`` ``0o773`` (learners write, cannot list), ``feedback`` ``0o771``, all of the
instructors' group; each submission a ``0o755`` folder, its learner's alone (nbgrader makes it
``0o777``), whose name ends in a random part,
holding ``0o644`` files).

The hub and the servers run as ``hub/install.py`` installs them, away from this checkout:
``ctxlab`` from a wheel, the hub's files copied out. In CI that script installs them
(``CTXLAB_HUB_PREFIX``); elsewhere the test lays out a copy of this checkout's environment made
of hard links, on the system's Python so that every user can run it (instant, and nothing is
changed in place), and installs the wheel and the files into it. The grader runs as root from
this checkout, as an instructor's from theirs. As a learner, the test then searches every
folder the hub uses for this course's hidden tests and solutions.

When the hub cannot start here (not root, no ``jupyterhub`` or ``configurable-http-proxy``),
the learners' steps run as nbgrader's own commands under their Unix users, which is what the
Assignments tab runs in their servers, and the test says why. ``.ci/run`` installs both, so CI
runs the hub, and sets ``CTXLAB_REQUIRE_HUB=1`` so that a hub that cannot start fails the test.
"""

from __future__ import annotations

import contextlib
import csv
import grp
import io
import json
import os
import pwd
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
from datetime import timezone
from pathlib import Path

import pytest
from hostile import require_sandbox
from nbgrader.utils import parse_utc
from support.browser import CHROMIUM, CHROMIUM_ARGS, require_browser
from support.pipeline import REPO, fill, solution_sources

sys.path.insert(0, str(REPO / "hub"))
from install import build_wheel, copy_hub_files, install_wheel, open_to_all  # noqa: E402

pytestmark = [pytest.mark.slow]

LESSON, NOTEBOOK = "01-budget", "budget.ipynb"
COURSE_ID = "ctxlab-hub-check"
TEACHER, TEACHER2, ANA, BO = "ctxlab-teacher", "ctxlab-teacher2", "ctxlab-ana", "ctxlab-bo"
STAFF = "ctxlab-staff"  # the instructors' Unix group: they share one course root
ARTIFACTS = REPO / "tests" / "artifacts"
HOSTILE_NOTE = 'Done! <img src=x onerror="window.pwned = 1"><script>window.pwned = 2</script>'


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def reachable_by_others(python: Path) -> bool:
    result = subprocess.run(["runuser", "-u", "nobody", "--", str(python), "-c", "import ctxlab, nbgrader"],
                            capture_output=True, check=False, cwd="/")
    return result.returncode == 0


def lay_out(venv: Path, env: Path) -> Path:
    """The virtual environment ``venv`` laid out again at ``env`` from hard links to its files, on
    the system's Python of the same version, so that every user can run it; ``env``. Only what
    names a location (``pyvenv.cfg``, the ``python`` links, the scripts' first lines) is new."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    system = Path(f"/usr/bin/python{version}")
    if not system.exists():
        pytest.skip(f"there is no {system} to lay the environment out on, where every user can run it")
    shutil.copytree(venv, env, symlinks=True, copy_function=os.link, ignore=shutil.ignore_patterns("bin", "pyvenv.cfg"))
    (env / "bin").mkdir()
    for link in ("python", "python3", f"python{version}"):
        (env / "bin" / link).symlink_to(system)
    (env / "pyvenv.cfg").write_text(f"home = {system.parent}\ninclude-system-site-packages = false\n", encoding="utf-8")
    for script in (venv / "bin").iterdir():
        if script.is_file() and not script.is_symlink():
            text = script.read_bytes()
            if text.startswith(b"#!" + str(venv).encode()):
                text = text.replace(str(venv).encode(), str(env).encode(), 1)
            (env / "bin" / script.name).write_bytes(text)
            (env / "bin" / script.name).chmod(script.stat().st_mode & 0o777)
    return env


def shared_environment(base: Path) -> tuple[Path, Path]:
    """The hub as ``hub/install.py`` installs it: its environment's ``bin`` folder and its
    configuration folder. With ``CTXLAB_HUB_PREFIX``, the hub that script installed there, with
    this checkout's ``ctxlab`` wheel and hub files put in again; otherwise, under ``base/opt``:

    The environment is this checkout's, laid out again from hard links to its files (instant;
    nothing is changed in place) on the system's Python of the same version, so that every
    user can run it; only what names a location (``pyvenv.cfg``, the ``python`` links, the
    scripts' first lines) is written anew. Then, as ``hub/install.py`` does, ``ctxlab`` is
    installed into it from a wheel built from this checkout, in place of the editable install
    that points into the checkout, and the hub's files are copied beside it.
    """
    prefix = os.environ.get("CTXLAB_HUB_PREFIX")
    if prefix:  # installed by hub/install.py itself (.ci/run does it): bring it up to this checkout
        bin_dir = Path(prefix) / "env" / "bin"
        if not (bin_dir / "jupyterhub").exists():
            pytest.fail(f"CTXLAB_HUB_PREFIX={prefix} holds no hub: run `python3 hub/install.py {prefix}` first")
        install_wheel(bin_dir / "python", build_wheel(base / "wheel", python=bin_dir / "python"))
        hub_dir = copy_hub_files(Path(prefix) / "hub")
        open_to_all(hub_dir)
        if not reachable_by_others(bin_dir / "python"):
            pytest.fail(f"the hub installed in {prefix} does not run for other users")
        return bin_dir, hub_dir
    (base / "opt").mkdir(mode=0o755, exist_ok=True)
    env = lay_out(Path(sys.prefix), base / "opt" / "env")
    if not reachable_by_others(env / "bin" / "python"):
        pytest.fail(f"the environment laid out in {env} does not run for other users")
    install_wheel(env / "bin" / "python", build_wheel(base / "wheel"))
    hub_dir = copy_hub_files(base / "opt" / "hub")
    open_to_all(hub_dir)
    return env / "bin", hub_dir


def why_no_hub() -> str | None:
    """Why JupyterHub cannot run this test here, or ``None`` when it can."""
    if not (Path(sys.prefix) / "bin" / "jupyterhub").exists():
        return "the jupyterhub package is not installed (pip install -r requirements-dev.txt -c constraints.txt)"
    if shutil.which("configurable-http-proxy") is None:
        return "configurable-http-proxy is not installed (npm install -g configurable-http-proxy, as .ci/run does)"
    return None


class Machine:
    """Local Unix users, their homes, the exchange and the environment every server gets."""

    def __init__(self, base: Path, installed: tuple[Path, Path]):
        self.base, (self.bin, self.hub_dir) = base, installed
        self.exchange = base / "exchange"
        self.root = base / "course"  # the instructors' shared course root
        self.created: list[str] = []
        self.group_created = False
        self.env = {
            "CTXLAB_COURSE_ID": COURSE_ID, "CTXLAB_EXCHANGE": str(self.exchange),
            "CTXLAB_INSTRUCTORS": f"{TEACHER},{TEACHER2}", "CTXLAB_LEARNERS": f"{ANA},{BO}",
            "CTXLAB_SHARED_ROOT": str(self.root), "CTXLAB_INSTRUCTOR_GROUP": STAFF,
            "PATH": f"{self.bin}:/usr/bin:/bin", "MPLBACKEND": "Agg", "LANG": "C.UTF-8",
        }

    def add_group(self) -> None:
        try:
            grp.getgrnam(STAFF)
        except KeyError:
            subprocess.run(["groupadd", STAFF], check=True, capture_output=True)
            self.group_created = True
        else:
            pytest.skip(f"a group named {STAFF} exists already; remove it or run the test elsewhere")

    def add_user(self, name: str) -> Path:
        home = self.base / "home" / name
        home.parent.mkdir(exist_ok=True)
        home.parent.chmod(0o755)
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--no-user-group", "--gid", "users", "--home-dir", str(home), "--create-home",
                            "--shell", "/bin/sh", name], check=True, capture_output=True)
            self.created.append(name)
        else:
            pytest.skip(f"a user named {name} exists already; remove it or run the test elsewhere")
        home.chmod(0o700)  # a learner's files are theirs alone
        return home

    def home(self, name: str) -> Path:
        return Path(pwd.getpwnam(name).pw_dir)

    def run_as(self, user: str, *command: str, cwd: Path | None = None, config: str = "exchange",
               check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
        """``command`` as ``user``, with the environment the hub gives that user's server."""
        hub = self.hub_dir
        folders = [hub / "exchange"] if config == "exchange" else [hub / "learner", hub / "exchange"]
        env = {**self.env, "HOME": str(self.home(user)), "USER": user,
               "JUPYTER_CONFIG_PATH": os.pathsep.join(map(str, folders))}
        umask = []
        if user in (TEACHER, TEACHER2):  # what the hub sets in an instructor's server, and so in its terminals
            env.update(CTXLAB_COURSE_ROOT=str(self.root), CTXLAB_GROUPSHARED="1")
            umask = ["/bin/sh", "-c", 'umask 002 && exec "$@"', "sh"]
        result = subprocess.run(["runuser", "-u", user, "--", "env", *(f"{k}={v}" for k, v in env.items()), *umask,
                                 *command],
                                cwd=cwd or self.home(user), capture_output=True, text=True, timeout=timeout,
                                check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} as {user} failed ({result.returncode}):\n"
                                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def add_system_user(self, name: str) -> None:
        """A system user without a home or a login shell, as a service runs as."""
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                           check=True, capture_output=True)
            self.created.append(name)
        else:
            pytest.skip(f"a user named {name} exists already; remove it or run the test elsewhere")

    def remove_users(self) -> None:
        for name in self.created:
            subprocess.run(["pkill", "-u", name], check=False, capture_output=True)
            subprocess.run(["userdel", name], check=False, capture_output=True)
        if self.group_created:
            subprocess.run(["groupdel", STAFF], check=False, capture_output=True)


class Hub:
    """JupyterHub started from hub/jupyterhub_config.py, plus a service token to drive it."""

    def __init__(self, machine: Machine):
        self.machine = machine
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = uuid.uuid4().hex
        data = machine.base / "hub-data"
        config = machine.base / "check_config.py"
        config.write_text(
            "c = get_config()  # noqa: F821\n"
            f"load_subconfig({str(machine.hub_dir / 'jupyterhub_config.py')!r})  # noqa: F821\n"
            f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{free_port()}'\n"
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{free_port()}'\n"
            f"c.JupyterHub.services.append({{'name': 'course-check', 'api_token': {self.token!r}}})\n"
            "c.JupyterHub.load_roles.append({'name': 'course-check', 'services': ['course-check'],\n"
            "    'scopes': ['admin:users', 'admin:servers', 'list:users', 'tokens']})\n"
            "c.Spawner.start_timeout = 120\n"
            "c.Spawner.http_timeout = 120\n",
            encoding="utf-8")
        env = {**machine.env, "CTXLAB_HUB_URL": self.url, "CTXLAB_HUB_DATA": str(data), "HOME": str(machine.base)}
        self.log = machine.base / "hub.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen([str(machine.bin / "jupyterhub"), "-f", str(config)], cwd=machine.base,
                                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def call(self, method: str, path: str, form: dict | None = None, body: dict | None = None,
             timeout: float = 120, token: str | None = None) -> tuple[int, str]:
        data, headers = None, {"Authorization": f"token {token or self.token}"}
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")

    def wait_up(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"JupyterHub exited ({self.process.returncode}):\n{self.tail()}")
            try:
                if self.call("GET", "/hub/api/", timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"JupyterHub did not answer within {seconds} s:\n{self.tail()}")

    def start_server(self, user: str, seconds: float = 150) -> None:
        status, text = self.call("POST", f"/hub/api/users/{user}/server")
        assert status in (201, 202), (status, text, self.tail())
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            status, text = self.call("GET", f"/hub/api/users/{user}")
            server = json.loads(text).get("servers", {}).get("", {}) if status == 200 else {}
            if server.get("ready"):
                return
            time.sleep(1)
        raise AssertionError(f"{user}'s server was not ready within {seconds} s:\n{self.tail()}")

    def user_token(self, user: str) -> str:
        """A token carrying ``user``'s own rights, as their browser session would."""
        status, text = self.call("POST", f"/hub/api/users/{user}/tokens", body={"note": "check", "expires_in": 900})
        assert status in (200, 201), (status, text)
        return json.loads(text)["token"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=10)


class HubLearner:
    """A learner working in their own server, through the Assignments tab's and Contents APIs."""

    def __init__(self, hub: Hub, name: str):
        self.hub, self.name = hub, name
        self.token = hub.user_token(name)

    def call(self, method: str, path: str, **kwargs) -> tuple[int, str]:
        return self.hub.call(method, path, token=self.token, **kwargs)

    def action(self, action: str) -> dict:
        status, text = self.call("POST", f"/user/{self.name}/assignments/{action}",
                                 form={"course_id": COURSE_ID, "assignment_id": LESSON})
        assert status == 200, (action, status, text[-2000:])
        answer = json.loads(text)
        assert answer.get("success", True), (action, answer)
        return answer

    def listing(self) -> dict:
        status, text = self.call("GET", f"/user/{self.name}/assignments?course_id={COURSE_ID}")
        assert status == 200, (status, text[-2000:])
        return json.loads(text)

    def save(self, notebook: dict) -> None:
        status, text = self.call("PUT", f"/user/{self.name}/api/contents/{LESSON}/{NOTEBOOK}",
                                 body={"type": "notebook", "format": "json", "content": notebook})
        assert status in (200, 201), (status, text[-2000:])

    def read(self, owner: str, path: str) -> int:
        """The status of opening ``owner``'s file ``path`` with this learner's rights."""
        return self.call("GET", f"/user/{owner}/api/contents/{path}")[0]


class ShellLearner:
    """A learner running nbgrader's own commands as their Unix user (what the Assignments tab runs)."""

    COMMANDS = {"fetch": "fetch_assignment", "submit": "submit", "fetch_feedback": "fetch_feedback"}

    def __init__(self, machine: Machine, name: str):
        self.machine, self.name = machine, name

    def action(self, action: str) -> dict:
        self.machine.run_as(self.name, str(self.machine.bin / "nbgrader"), self.COMMANDS[action], LESSON,
                            f"--course={COURSE_ID}", config="learner")
        return {"success": True}

    def listing(self) -> dict:
        result = self.machine.run_as(self.name, str(self.machine.bin / "nbgrader"), "list", "--cached", f"--course={COURSE_ID}",
                                     config="learner", check=False)
        return {"value": result.stdout + result.stderr}

    def save(self, notebook: dict) -> None:
        self.machine.run_as(self.name, str(self.machine.bin / "python"), "-c",
                            f"import sys; open({f'{LESSON}/{NOTEBOOK}'!r}, 'w').write(sys.argv[1])",
                            json.dumps(notebook))

    def read(self, owner: str, path: str) -> int:
        """The status of reading ``owner``'s file ``path`` as this learner: 200, 403 or 404."""
        target = self.machine.home(owner) / path
        result = self.machine.run_as(self.name, str(self.machine.bin / "python"), "-c",
                                     f"import os; os.listdir({str(target)!r})",
                                     check=False)
        return 200 if result.returncode == 0 else 403 if "PermissionError" in result.stderr else 404


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode) & 0o777


def special_bits(path: Path) -> int:
    """The set-user-id, set-group-id and sticky bits of ``path``."""
    return stat.S_IMODE(path.stat().st_mode) & 0o7000


def probe_as(machine: Machine, user: str, code: str) -> dict:
    """Run ``code`` (which sets ``out``) as ``user``; the JSON it leaves in ``out``."""
    script = f"import json, os\nout = {{}}\n{code}\nprint(json.dumps(out))"
    return json.loads(machine.run_as(user, str(machine.bin / "python"), "-c", script).stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def machine():
    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("the hub test creates local Unix users: it needs root with useradd and runuser (CI has both)")
    require_sandbox()
    base = Path(tempfile.mkdtemp(prefix="ctxlab-hub-", dir="/tmp"))
    base.chmod(0o755)  # the users must reach their homes and the exchange below it
    here = None
    try:
        here = Machine(base, shared_environment(base))
        yield here
    finally:
        if here is not None:
            here.remove_users()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def course(machine):
    """Play the whole lesson through; what each step left behind."""
    machine.add_group()
    teacher_home = machine.add_user(TEACHER)
    for name in (TEACHER2, ANA, BO):
        machine.add_user(name)
    for name in (TEACHER, TEACHER2):
        subprocess.run(["usermod", "-aG", STAFF, name], check=True, capture_output=True)
    root = machine.root  # the instructors' copy of the repository, shared, is the course root
    root.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", root)
    for folder in ("solutions", "course"):
        shutil.copytree(REPO / folder / LESSON, root / folder / LESSON)
    # hub/README.md's commands for a shared course root
    subprocess.run(["chown", "-R", f"{TEACHER}:{STAFF}", str(root)], check=True)
    subprocess.run(["chmod", "-R", "g+rwX,o-rwx", str(root)], check=True)
    subprocess.run(["find", str(root), "-type", "d", "-exec", "chmod", "g+s", "{}", "+"], check=True)

    reason = why_no_hub()
    if reason and os.environ.get("CTXLAB_REQUIRE_HUB") == "1":
        pytest.fail(f"CTXLAB_REQUIRE_HUB=1 but JupyterHub cannot start: {reason}")
    hub = teacher = teacher2 = None
    if reason is None:
        hub = Hub(machine)
    try:
        if hub is not None:
            hub.wait_up()
            for name in (ANA, BO, TEACHER, TEACHER2):
                hub.start_server(name)
            learners = {name: HubLearner(hub, name) for name in (ANA, BO)}
            teacher, teacher2 = HubLearner(hub, TEACHER), HubLearner(hub, TEACHER2)
        else:
            warnings.warn(f"JupyterHub not started: {reason}; the learners ran nbgrader's commands instead",
                          stacklevel=1)
            learners = {name: ShellLearner(machine, name) for name in (ANA, BO)}
            machine.exchange.mkdir()  # what the hub's configuration does
            machine.exchange.chmod(0o1777)
            (machine.exchange / COURSE_ID).mkdir()
            os.chown(machine.exchange / COURSE_ID, 0, grp.getgrnam(STAFF).gr_gid)
            (machine.exchange / COURSE_ID).chmod(0o2775)

        nbgrader = str(machine.bin / "nbgrader")
        machine.run_as(TEACHER, nbgrader, "release_assignment", LESSON, cwd=root)
        # the other instructor releases it again, over the first one's files
        machine.run_as(TEACHER2, nbgrader, "release_assignment", LESSON, "--force", cwd=root)
        released = json.loads((root / "course" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
        answers = solution_sources(json.loads((root / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8")))

        before_fetch = learners[ANA].listing()
        for learner in learners.values():
            learner.action("fetch")
        learners[ANA].save(fill(released, answers))  # ana solves it; bo hands in the blank notebook,
        hostile = json.loads(json.dumps(released))  # with a note that tries to run script on the grading page
        hostile["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "id": "bo-note",
                                    "source": HOSTILE_NOTE})
        learners[BO].save(hostile)
        for learner in learners.values():
            learner.action("submit")
        listings = {name: learner.listing() for name, learner in learners.items()}

        machine.run_as(TEACHER2, nbgrader, "collect", LESSON, cwd=root)
        # The instructor has the formgrader open before grading: it must show the grades after.
        before_grading = teacher.call("GET", f"/user/{TEACHER}/formgrader/api/assignments") if hub else None
        def grade(user: str = TEACHER, *options: str) -> subprocess.CompletedProcess:
            return machine.run_as(
                user, str(machine.bin / "python"), "-m", "autograder", "grade", str(root / "submitted"), "--out",
                str(root / "grading-output"), "--course", str(root), "--lessons", LESSON, "--jobs", "2",
                "--cell-timeout", "30", "--memory", "1024", "--quiet", *options, cwd=REPO, check=False, timeout=400)

        grading = grade()
        assert grading.returncode == 0, grading.stderr[-4000:]
        machine.run_as(TEACHER, "mkdir", "-p", "feedback", cwd=root)  # hub/README.md's commands
        machine.run_as(TEACHER, "cp", "-r", "grading-output/feedback/.", "feedback/", cwd=root)
        machine.run_as(TEACHER2, nbgrader, "release_feedback", LESSON, cwd=root)
        for learner in learners.values():
            learner.action("fetch_feedback")
        yield {"root": root, "teacher_home": teacher_home, "learners": learners, "hub": hub, "reason": reason,
               "listings": listings, "before_fetch": before_fetch, "grading": root / "grading-output",
               "teacher": teacher, "teacher2": teacher2, "before_grading": before_grading, "grade": grade}
    finally:
        if hub is not None:
            hub.stop()


def test_the_hub_ran_the_learners_servers(course):
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")
    hub = course["hub"]
    status, text = hub.call("GET", "/hub/api/users")
    users = {u["name"]: u for u in json.loads(text)}
    assert status == 200 and {ANA, BO, TEACHER} <= set(users)
    assert "instructors" in users[TEACHER]["groups"] and "learners" in users[ANA]["groups"]
    assert all(users[name]["servers"][""]["ready"] for name in (ANA, BO))
    before = json.dumps(course["before_fetch"])
    assert LESSON in before and "released" in before  # the Assignments tab listed the released lesson
    ana = course["learners"][ANA]
    assert ana.call("GET", f"/user/{ANA}/formgrader")[0] == 404  # no formgrader for learners
    status, page = ana.call("GET", f"/user/{ANA}/lab")
    assert status == 200
    config = json.loads(page.split('id="jupyter-config-data"')[1].split(">", 1)[1].split("</script>")[0])
    disabled = config.get("disabledExtensions", [])
    assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"} <= set(disabled), disabled


def test_the_instructor_grades_in_the_formgrader(course):
    """The formgrader, opened before grading, lists both submissions with their scores after it,
    for each instructor, and its manual-grading page shows ana's executed notebook."""
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")
    teacher, log = course["teacher"], course["hub"].tail
    assert course["before_grading"][0] == 200, (course["before_grading"], log())
    for name, instructor in ((TEACHER, teacher), (TEACHER2, course["teacher2"])):
        status, text = instructor.call("GET", f"/user/{name}/formgrader/api/submissions/{LESSON}")
        assert status == 200 and text.startswith("["), (name, status, text[:3000], log())
        submissions = {row["student"]: row for row in json.loads(text)}
        assert set(submissions) == {ANA, BO}, (name, submissions)
        assert submissions[ANA]["score"] == submissions[ANA]["max_score"] > 0 and submissions[BO]["score"] == 0
        assert all(row["autograded"] for row in submissions.values()), submissions
    status, text = teacher.call("GET", f"/user/{TEACHER}/formgrader/api/submitted_notebooks/{LESSON}/budget")
    assert status == 200, log()
    notebook = next(row for row in json.loads(text) if row["student"] == ANA)
    status, page = teacher.call("GET", f"/user/{TEACHER}/formgrader/submissions/{notebook['id']}/")
    assert status == 200, log()
    found = {"her code": "count_chat" in page, "her name": ANA in page, "graded cells": "nbgrader_cell" in page}
    assert all(found.values()), found
    learner = course["learners"][ANA]
    assert learner.call("GET", f"/user/{TEACHER}/formgrader/api/submissions/{LESSON}")[0] in (403, 404)


def test_an_instructors_server_shares_what_it_writes_with_the_other_instructors(course, machine):
    """The hub starts instructors' servers in the shared course root with umask 002, so a file
    one saves (and anything their terminals make) is writable by the others; not by learners."""
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")
    status, text = course["teacher2"].call("PUT", f"/user/{TEACHER2}/api/contents/from-teacher2.txt",
                                           body={"type": "file", "format": "text", "content": "notes"})
    assert status in (200, 201), text[-1000:]
    saved = machine.root / "from-teacher2.txt"  # the server's folder is the shared root
    assert saved.exists(), sorted(p.name for p in machine.root.iterdir())
    assert saved.stat().st_gid == grp.getgrnam(STAFF).gr_gid and mode(saved) & 0o060 == 0o060, oct(mode(saved))
    assert mode(saved) & 0o007 in (0, 0o004) and mode(machine.root) & 0o007 == 0  # others stop at the root


def test_the_instructor_opens_the_formgrader_in_a_browser(course, machine):
    """What an instructor does: log in at the hub's page, open the formgrader in a tab of its
    own (JupyterHub forbids framing a user's server), find both submissions of the lesson, open
    one for manual grading, and override a score, which the gradebook keeps."""
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")
    require_browser()
    from playwright.sync_api import sync_playwright

    hub, password = course["hub"], uuid.uuid4().hex
    subprocess.run(["chpasswd"], input=f"{TEACHER}:{password}", text=True, check=True, capture_output=True)
    formgrader = f"{hub.url}/user/{TEACHER}/formgrader"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = chromium.new_page()
            page.goto(f"{hub.url}/hub/login", timeout=60_000)
            page.fill("#username_input", TEACHER)
            page.fill("#password_input", password)
            page.click("#login_submit")
            page.wait_for_url(f"**/user/{TEACHER}/**", timeout=60_000)

            page.goto(f"{formgrader}/manage_submissions/{LESSON}", timeout=60_000)
            rows = page.locator("table tbody tr")
            rows.filter(has_text=BO).wait_for(timeout=60_000)
            assert rows.filter(has_text=ANA).count() == 1 and rows.filter(has_text=BO).count() == 1

            page.goto(f"{formgrader}/gradebook/{LESSON}/budget", timeout=60_000)
            link = page.locator("a.name-hidden").first
            link.wait_for(timeout=60_000)
            link.click()
            page.wait_for_url("**/formgrader/submissions/**", timeout=60_000)
            cells = page.locator(".nbgrader_cell")
            cells.first.wait_for(timeout=60_000)
            scores = page.locator("input.score")
            assert cells.count() > 0 and scores.count() > 0, page.content()[:2000]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "hub-formgrader.png"), full_page=False)
            scores.first.fill("0")
            scores.first.dispatch_event("change")
            page.locator(".score-saved").first.wait_for(state="visible", timeout=30_000)

            # bo's note tried to run script in the instructor's session: it must show as text
            status, text = course["teacher"].call(
                "GET", f"/user/{TEACHER}/formgrader/api/submitted_notebooks/{LESSON}/budget")
            bo_notebook = next(row["id"] for row in json.loads(text) if row["student"] == BO)
            page.goto(f"{formgrader}/submissions/{bo_notebook}/", timeout=60_000)
            page.locator(".nbgrader_cell").first.wait_for(timeout=60_000)
            page.wait_for_timeout(500)
            assert page.evaluate("window.pwned") is None, "a learner's note ran script on the grading page"
            assert page.get_by_text("onerror", exact=False).count() > 0  # shown as text, for the instructor
        finally:
            chromium.close()
    def overridden() -> int:
        with contextlib.closing(sqlite3.connect(course["grading"] / "gradebook.db")) as db:
            return db.execute("SELECT COUNT(*) FROM grade WHERE manual_score IS NOT NULL").fetchone()[0]

    assert overridden() == 1, "the score set in the formgrader is not in the gradebook the grader wrote"
    again = course["grade"](TEACHER2, "--fresh")  # the other instructor grades it all again: the override stays
    assert again.returncode == 0 and "could not be carried" not in again.stderr, again.stderr[-3000:]
    assert overridden() == 1, "grading again lost the score set in the formgrader"


def scores_are_right(grading: Path) -> None:
    """ana's solved notebook has full marks and bo's blank one zero, both graded."""
    rows = list(csv.DictReader(io.StringIO((grading / "grades.csv").read_text(encoding="utf-8"))))
    scores = {row["student"]: (float(row["score"]), float(row["max_score"]), row["status"]) for row in rows}
    assert set(scores) == {ANA, BO}
    assert scores[ANA][0] == scores[ANA][1] > 0 and scores[ANA][2] == "graded"
    assert scores[BO][0] == 0 and scores[BO][2] == "graded"


def each_fetched_only_their_own_feedback() -> None:
    """Each learner's home holds one feedback page, theirs, without the hidden tests."""
    for name in (ANA, BO):
        home = Path(pwd.getpwnam(name).pw_dir)
        pages = sorted((home / LESSON / "feedback").glob(f"*/{NOTEBOOK.replace('.ipynb', '.html')}"))
        assert len(pages) == 1, (name, pages)
        page = pages[0].read_text(encoding="utf-8")
        other = BO if name == ANA else ANA
        assert f"Feedback for {name}" in page and other not in page
        assert "BEGIN HIDDEN TESTS" not in page


def test_the_scores_are_right(course):
    scores_are_right(course["grading"])


def test_each_learner_fetched_only_their_own_feedback(course):
    each_fetched_only_their_own_feedback()


def test_the_exchange_has_the_permissions_nbgrader_gives_it(course, machine):
    """nbgrader's modes, with group write for the instructors (groupshared): the course's folders
    belong to their group, never to a group learners are in."""
    course_dir = machine.exchange / COURSE_ID
    assert mode(machine.exchange) == 0o777 and special_bits(machine.exchange) == stat.S_ISVTX
    staff = grp.getgrnam(STAFF).gr_gid
    for folder in ("", "outbound", "inbound", "feedback", f"outbound/{LESSON}"):
        assert (course_dir / folder).stat().st_gid == staff, folder
        assert special_bits(course_dir / folder) & stat.S_ISGID, folder
    assert mode(course_dir) == 0o775 and mode(course_dir / "outbound") == 0o775
    assert mode(course_dir / "inbound") == 0o773  # learners write, cannot list
    assert mode(course_dir / "feedback") & 0o007 == 0o001  # learners reach their own page by its hash
    submissions = sorted((course_dir / "inbound").iterdir())
    assert {p.name.split("+")[0] for p in submissions} == {ANA, BO}
    for submission in submissions:
        owner = pwd.getpwuid(submission.stat().st_uid).pw_name
        assert owner == submission.name.split("+")[0]  # each learner's submission is theirs
        assert mode(submission) == 0o755  # its learner's alone (nbgrader: 0o777); hidden by its name
        assert all(mode(f) == 0o644 for f in submission.rglob("*") if f.is_file())
        assert all(mode(d) == 0o755 for d in submission.rglob("*") if d.is_dir())
        assert len(submission.name.split("+")) == 4  # student+lesson+time+random: names cannot be guessed


def test_only_the_learner_version_is_in_the_exchange(course, machine):
    outbound = machine.exchange / COURSE_ID / "outbound" / LESSON
    files = sorted(p.relative_to(outbound).as_posix() for p in outbound.rglob("*") if p.is_file())
    assert NOTEBOOK in files and "gradebook.db" not in files
    text = (outbound / NOTEBOOK).read_text(encoding="utf-8")
    assert "BEGIN HIDDEN TESTS" not in text and "### BEGIN SOLUTION" not in text
    for path in (machine.exchange / COURSE_ID).rglob("*"):
        assert path.name != "gradebook.db" and "solutions" not in path.parts


def test_learners_cannot_read_each_others_work_or_the_instructors_files(course, machine):
    course_dir = machine.exchange / COURSE_ID
    ana_submission = next(p for p in (course_dir / "inbound").iterdir() if p.name.startswith(ANA + "+"))
    targets = {
        "inbound": str(course_dir / "inbound"), "feedback": str(course_dir / "feedback"),
        "ana_home": str(machine.home(ANA)), "course_root": str(course["root"]),
        "gradebook": str(course["root"] / "gradebook.db"), "solutions": str(course["root"] / "solutions"),
        "grading": str(course["grading"]), "ana_cache": str(machine.home(ANA) / ".local/share/jupyter"),
    }
    code = (f"targets = {targets!r}\n"
            "for name, path in targets.items():\n"
            "    try:\n"
            "        os.listdir(path) if os.path.isdir(path) or not os.path.exists(path) else open(path, 'rb').read(1)\n"
            "        out[name] = 'readable'\n"
            "    except PermissionError:\n"
            "        out[name] = 'denied'\n"
            "    except FileNotFoundError:\n"
            "        out[name] = 'unseen'\n")
    seen = probe_as(machine, BO, code)
    assert seen["inbound"] == "denied" and seen["feedback"] == "denied", seen
    assert {seen[k] for k in ("ana_home", "course_root", "gradebook", "solutions", "grading", "ana_cache")} <= {
        "denied", "unseen"}, seen
    # nbgrader leaves each submission's files readable by name; what protects them is that
    # inbound cannot be listed and each folder name ends in a random part.
    assert len(ana_submission.name.split("+")[-1]) >= 8
    listing = json.dumps(course["listings"][BO])
    assert ANA not in listing  # bo's Assignments tab lists bo's own submission only
    if course["hub"] is not None:
        assert BO in listing and "submitted" in listing
    bo = course["learners"][BO]
    assert bo.read(BO, LESSON) == 200  # bo's own work, with bo's own rights
    assert bo.read(ANA, LESSON) in (403, 404)  # ana's is out of reach, through the hub or not


def test_a_learner_cannot_swap_the_course_folder_for_their_own(course, machine):
    """The attack the sticky exchange root stops: rename the instructor's course folder and put
    one's own in its place, with an inbound folder anyone can list, to receive the others'
    submissions. A scratch folder without the sticky bit shows the same moves succeed there."""
    course_dir = machine.exchange / COURSE_ID
    open_dir = machine.exchange / "not-sticky"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # as the exchange root was before
    (open_dir / COURSE_ID).mkdir()
    subprocess.run(["chown", f"{TEACHER}:users", str(open_dir / COURSE_ID)], check=True)
    try:
        code = (f"exchange, open_dir, course = {str(machine.exchange)!r}, {str(open_dir)!r}, {COURSE_ID!r}\n"
                "def attempt(root):\n"
                "    try:\n"
                "        os.rename(os.path.join(root, course), os.path.join(root, course + '-moved'))\n"
                "    except PermissionError:\n"
                "        return 'denied'\n"
                "    os.mkdir(os.path.join(root, course))\n"
                "    os.mkdir(os.path.join(root, course, 'inbound'), 0o777)\n"
                "    return 'swapped'\n"
                "out['exchange'] = attempt(exchange)\n"
                "out['not sticky'] = attempt(open_dir)\n"
                "try:\n"
                "    os.rmdir(os.path.join(exchange, course, 'inbound'))\n"
                "    out['remove inbound'] = 'removed'\n"
                "except OSError as err:\n"
                "    out['remove inbound'] = type(err).__name__\n")
        seen = probe_as(machine, BO, code)
    finally:
        shutil.rmtree(open_dir, ignore_errors=True)
    assert seen["not sticky"] == "swapped", f"the attack should work where the root is not sticky: {seen}"
    assert seen["exchange"] == "denied", f"a learner moved the course folder out of the exchange: {seen}"
    assert seen["remove inbound"] in ("PermissionError", "OSError"), seen
    assert course_dir.stat().st_uid == 0 and course_dir.stat().st_gid == grp.getgrnam(STAFF).gr_gid
    assert {p.name for p in machine.exchange.iterdir()} == {COURSE_ID}


MARKERS = ("### BEGIN HIDDEN TESTS", "### BEGIN SOLUTION")


def test_a_learner_finds_no_hidden_test_on_the_hub(course, machine):
    """As a learner, search everything the hub and the servers use for this course's hidden tests
    and solutions: the hub's files and environment (its prefix, its import path and where
    ``ctxlab`` is imported from, as the learner's own Python reports them), the exchange, the
    course root, the instructors' homes and the hub's data. ``grep`` does the search, not the
    hub's own check, and passes over what the learner may not read."""
    where = probe_as(machine, ANA, "import sys, ctxlab\nout['path'] = [p for p in sys.path if p]\n"
                                   "out['ctxlab'] = os.path.dirname(os.path.dirname(ctxlab.__file__))\n"
                                   "out['prefix'] = sys.prefix")
    assert Path(where["ctxlab"]).resolve().is_relative_to(machine.hub_dir.parent), (
        f"the learners' servers import ctxlab from {where['ctxlab']}, not from the hub's environment: an editable "
        "install points into a checkout, solutions and all")
    roots = [machine.base, machine.hub_dir.parent, *where["path"], where["ctxlab"], where["prefix"]]
    if course["hub"] is not None:
        roots.append(machine.base / "hub-data")
    # Compiled caches left out: a .pyc holds its source's path, and the hub's may hold "ctxlab".
    grep = machine.run_as(ANA, "grep", "-rlsF", "--exclude=*.pyc", *(arg for m in MARKERS for arg in ("-e", m)),
                          *map(str, dict.fromkeys(map(str, roots))), check=False, timeout=600)
    assert grep.returncode in (0, 1, 2), grep.stderr[-2000:]  # 2: some files were not readable, as expected
    marked = [line for line in grep.stdout.splitlines() if line]
    ours = machine.run_as(ANA, "grep", "-lsF", "ctxlab", *marked, check=False).stdout.split() if marked else []
    assert not ours, f"a learner can read this course's hidden tests or solutions in {ours}"
    # The search reaches the course root and the instructors' files only where it may: the
    # solutions are there, out of the learner's reach.
    assert (course["root"] / "solutions").is_dir()


def test_the_hub_refuses_to_start_when_a_learner_could_read_a_hidden_test(course, machine):
    """The hub's start-up check, on the folders the hub uses: a solution notebook left readable in
    the exchange stops it, with what to do; closed to others, it does not."""
    leak = machine.exchange / "left-here.ipynb"
    shutil.copy(REPO / "solutions" / LESSON / NOTEBOOK, leak)
    leak.chmod(0o644)
    config = machine.base / "only_the_check.py"
    config.write_text(f"c = get_config()  # noqa: F821\nload_subconfig({str(machine.hub_dir / 'jupyterhub_config.py')!r})"
                      "  # noqa: F821\n", encoding="utf-8")
    run = [str(machine.bin / "python"), "-c",
           "import sys\nfrom traitlets.config import Config, PyFileConfigLoader\n"
           "PyFileConfigLoader(sys.argv[1]).load_config()\nprint('started')", str(config)]
    env = {**machine.env, "CTXLAB_HUB_DATA": str(machine.base / "check-data"), "HOME": str(machine.base)}
    try:
        refused = subprocess.run(run, env=env, cwd=machine.base, capture_output=True, text=True, timeout=300, check=False)
        assert refused.returncode != 0 and "started" not in refused.stdout, refused.stdout[-2000:]
        assert str(leak) in refused.stderr and "hub/install.py" in refused.stderr, refused.stderr[-3000:]
        leak.chmod(0o600)
        started = subprocess.run(run, env=env, cwd=machine.base, capture_output=True, text=True, timeout=300, check=False)
        assert started.returncode == 0 and "started" in started.stdout, started.stderr[-3000:]
    finally:
        leak.unlink()


def test_a_forged_or_backdated_submission_is_refused(course, machine):
    """bo, a learner, plays the attacks nbgrader's own collect lets through, in the folder
    exchange's inbound: a submission in ana's name dated 2099 (so it would count as her latest),
    one of his own whose notebook is a link to the instructors' solution (which he cannot read,
    and the collect could), and one of his own dated 2000, its files' times set back. He also
    tries to change ana's real submission. Then an instructor collects again."""
    inbound = machine.exchange / COURSE_ID / "inbound"
    (ana_real,) = [p for p in inbound.iterdir() if p.name.startswith(ANA + "+")]
    released = json.loads((REPO / "course" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    answers = solution_sources(json.loads((REPO / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8")))
    solved = json.dumps(fill(released, answers))
    forged = f"{ANA}+{LESSON}+2099-01-01 00:00:00.000000 UTC+forged"
    linked = f"{BO}+{LESSON}+2000-01-01 00:00:00.000000 UTC+linked"
    backdated = f"{BO}+{LESSON}+2000-01-01 00:00:00.000000 UTC+backdated"
    started = time.time()
    code = (f"inbound, solved = {str(inbound)!r}, {solved!r}\n"
            f"forged, linked, backdated = {forged!r}, {linked!r}, {backdated!r}\n"
            f"solution, ana_real = {str(course['root'] / 'solutions' / LESSON / NOTEBOOK)!r}, {str(ana_real)!r}\n"
            "for name in (forged, linked, backdated):\n"
            "    folder = os.path.join(inbound, name)\n"
            "    os.mkdir(folder)\n"
            "    open(os.path.join(folder, 'timestamp.txt'), 'w').write(name.split('+')[2])\n"
            "    open(os.path.join(folder, 'submission_secret.txt'), 'w').write('chosen-by-bo')\n"
            f"    target = os.path.join(folder, {NOTEBOOK!r})\n"
            "    os.symlink(solution, target) if name == linked else open(target, 'w').write(solved)\n"
            "    for path in (target, os.path.join(folder, 'timestamp.txt'), folder):\n"
            "        os.utime(path, (946684800, 946684800), follow_symlinks=False)\n"
            "try:\n"
            "    open(os.path.join(ana_real, 'extra.ipynb'), 'w').write(solved)\n"
            "    out['write into ana'] = 'written'\n"
            "except PermissionError:\n"
            "    out['write into ana'] = 'denied'\n")
    try:
        seen = probe_as(machine, BO, code)
        assert seen["write into ana"] == "denied", "a learner changed another learner's submission folder"
        ana_before = (course["root"] / "submitted" / ANA / LESSON / NOTEBOOK).read_bytes()
        log = machine.run_as(TEACHER2, str(machine.bin / "nbgrader"), "collect", LESSON, "--update",
                             cwd=course["root"], check=False)
        assert log.returncode == 0, log.stdout[-3000:] + log.stderr[-3000:]
        submitted = course["root"] / "submitted"
        assert (submitted / ANA / LESSON / NOTEBOOK).read_bytes() == ana_before == (ana_real / NOTEBOOK).read_bytes(), (
            "ana's collected submission is no longer her own: the one bo made in her name was taken")
        refused = [json.loads(line) for line in (course["root"] / "refused-submissions.jsonl").read_text().splitlines()]
        problems = {Path(entry["folder"]).name: entry["problem"] for entry in refused}
        assert "belongs to ctxlab-bo" in problems.get(forged, ""), problems
        assert "symbolic link" in problems.get(linked, ""), problems
        assert backdated not in problems, problems
        assert "refused the submission" in log.stderr and "another's name" in log.stderr, log.stderr[-3000:]
        bo_time = parse_utc((submitted / BO / LESSON / "timestamp.txt").read_text())
        assert bo_time.replace(tzinfo=timezone.utc).timestamp() >= started - 5, (
            f"bo's submission dated itself {bo_time}: the time must be the file system's, not the one he wrote")
        assert not (submitted / BO / LESSON / NOTEBOOK).is_symlink()
        assert (submitted / BO / LESSON / NOTEBOOK).read_text() == solved  # the backdated one, dated now
    finally:
        for name in (forged, linked, backdated):
            shutil.rmtree(inbound / name, ignore_errors=True)


def test_the_formgraders_autograde_button_runs_nothing_outside_the_sandbox(course, machine):
    """bo's submission, changed to write a file into the course root when it runs, is autograded
    from the formgrader (the button's route, as an instructor) and with ``nbgrader autograde`` in
    an instructor's terminal. Both refuse, saying what to use instead; the file does not appear,
    and the button leaves the grader's executed copy of the submission in place."""
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")
    root = course["root"]
    submitted = root / "submitted" / BO / LESSON / NOTEBOOK
    executed = root / "grading-output" / "autograded" / BO / LESSON / NOTEBOOK
    planted = root / "written-by-a-submission"
    original = submitted.read_bytes()
    notebook = json.loads(original)
    answer = next(cell for cell in notebook["cells"] if cell["metadata"].get("nbgrader", {}).get("solution")
                  and cell["cell_type"] == "code")
    answer["source"] = f"open({str(planted)!r}, 'w').write('run with an instructor\\'s rights')\n" + "".join(answer["source"])
    submitted.write_text(json.dumps(notebook), encoding="utf-8")
    try:
        assert executed.is_file()
        status, text = course["teacher"].call("POST", f"/user/{TEACHER}/formgrader/api/submission/{LESSON}/{BO}/autograde")
        assert status == 403 and "switched off" in text and "python -m autograder grade" in text, (status, text[:2000])
        assert executed.is_file(), "pressing Autograde removed the grader's executed copy of bo's submission"
        typed = machine.run_as(TEACHER, str(machine.bin / "nbgrader"), "autograde", LESSON, "--student", BO, "--force",
                               cwd=root, check=False)
        assert typed.returncode != 0 and "switched off" in typed.stdout + typed.stderr, (
            typed.stdout[-2000:] + typed.stderr[-2000:])
        assert executed.is_file(), "nbgrader autograde removed the grader's executed copy of bo's submission"
        assert not planted.exists(), f"nbgrader's autograde ran bo's code as an instructor: {planted} was written"
    finally:
        submitted.write_bytes(original)
        planted.unlink(missing_ok=True)


def test_the_idle_culler_runs_beside_the_hub(course):
    """jupyterhub-idle-culler, installed by hub/install.py, runs as the hub's service."""
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")
    found = subprocess.run(["pgrep", "-af", "jupyterhub_idle_culler"], capture_output=True, text=True, check=False)
    assert "--timeout=3600" in found.stdout, (found.stdout, course["hub"].tail())


def test_a_learners_server_runs_under_its_memory_limit(course):
    """Each process of a learner's server may map at most CTXLAB_MEMORY_MB (4096 by default), as
    the kernel reports the running server's limits; an instructor's server has none."""
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")

    def address_space(user: str) -> str:
        found = subprocess.run(["pgrep", "-u", user, "-f", "jupyterhub-singleuser"], capture_output=True, text=True,
                               check=False).stdout.split()
        assert found, f"no server running for {user}"
        limits = Path(f"/proc/{found[0]}/limits").read_text(encoding="ascii")
        return next(line for line in limits.splitlines() if line.startswith("Max address space")).split()[3]

    assert address_space(ANA) == str(4096 * 1024 * 1024)
    assert address_space(TEACHER) == "unlimited"


def test_an_instructors_terminal_runs_the_hubs_environment(course, machine):
    """One environment: the running servers put the hub's environment first on PATH, so an
    instructor's `python -m autograder` and `nbgrader` in a terminal are the hub's, and release
    runs with it from a checkout as the course root."""
    if course["hub"] is None:
        pytest.skip(f"JupyterHub could not start here: {course['reason']}")
    found = subprocess.run(["pgrep", "-u", TEACHER, "-f", "jupyterhub-singleuser"], capture_output=True, text=True,
                           check=False).stdout.split()
    assert found, "no server running for the instructor"
    environ = dict(item.split(b"=", 1) for item in Path(f"/proc/{found[0]}/environ").read_bytes().split(b"\0") if b"=" in item)
    assert environ[b"PATH"].decode().split(os.pathsep)[0] == str(machine.bin), environ[b"PATH"]
    checkout = machine.base / "checkout"
    shutil.copytree(REPO / "autograder", checkout / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("solutions", "course"):
        shutil.copytree(REPO / folder / LESSON, checkout / folder / LESSON)
    shutil.copy(REPO / "nbgrader_config.py", checkout)
    subprocess.run(["chown", "-R", TEACHER, str(checkout)], check=True)
    released = machine.run_as(TEACHER, str(machine.bin / "python"), "-m", "autograder", "release", LESSON,
                              cwd=checkout, check=False)
    assert released.returncode == 0, released.stderr[-3000:]
    again = (checkout / "course" / LESSON / NOTEBOOK).read_bytes()
    assert again == (REPO / "course" / LESSON / NOTEBOOK).read_bytes(), "the hub's environment released another notebook"
