"""The sandbox: what a learner's process can see and do, and refusing to grade without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import require_sandbox
from support.pipeline import REPO, offline_env

from autograder import sandbox as sandbox_module
from autograder.sandbox import Limits, Sandbox, SandboxUnavailable, default_readonly_paths, probe

JUDGING = str(REPO / "autograder" / "judging")

INSIDE = r"""
import json, os, resource, socket, sys
seen = {}
for path in sys.argv[1:]:
    seen[path] = os.path.exists(path)
try:
    socket.create_connection(("127.0.0.1", 22), timeout=2)
    seen["loopback"] = True
except OSError:
    seen["loopback"] = False
seen["memory"] = resource.getrlimit(resource.RLIMIT_AS)[0]
seen["uid"] = os.getuid()
seen["cwd"] = os.getcwd()
seen["env"] = sorted(os.environ)
open("scratch.txt", "w").write("a learner may write here")
print(json.dumps(seen))
"""


def isolated(limits: Limits | None = None) -> Sandbox:
    return Sandbox(isolated=True, readonly=default_readonly_paths(), judging_dir=JUDGING, limits=limits or Limits())


def test_a_sandboxed_process_sees_no_secret_and_no_network(tmp_path):
    require_sandbox()
    secret = tmp_path / "gradebook.db"
    secret.write_text("grades")
    lesson_file = tmp_path / "data.csv"
    lesson_file.write_text("a,b")
    connection = tmp_path / "kernel"
    connection.mkdir()
    command = isolated(Limits(memory_mb=512)).command(
        [sys.executable, "-c", INSIDE, str(REPO / "solutions"), str(REPO / "tests"), str(secret),
         "/tmp/01-budget/data.csv", sys.prefix],
        connection_dir=str(connection), lesson="01-budget", files={"data.csv": str(lesson_file)},
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert not seen[str(REPO / "solutions")] and not seen[str(REPO / "tests")] and not seen[str(secret)]
    assert seen["/tmp/01-budget/data.csv"] and seen[sys.prefix]
    assert seen["loopback"] is False
    assert seen["memory"] == 512 * 1024 * 1024
    assert seen["uid"] != 0 and seen["cwd"] == "/tmp/01-budget"
    assert "OPENAI_API_KEY" not in seen["env"] and "PYTHONPATH" in seen["env"]
    assert not (tmp_path / "scratch.txt").exists()


def test_the_probe_passes_here_and_catches_a_visible_secret(tmp_path):
    require_sandbox()
    probe(isolated(), [REPO / "solutions", tmp_path])
    exposed = Sandbox(isolated=True, readonly=(*default_readonly_paths(), str(tmp_path)), judging_dir=JUDGING)
    with pytest.raises(SandboxUnavailable, match="lies inside"):
        probe(exposed, [tmp_path / "solutions"])


def test_without_bubblewrap_the_probe_says_what_to_install(monkeypatch):
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match=r"apt-get install bubblewrap.*--no-sandbox"):
        probe(isolated(), [REPO / "solutions"])


def test_the_grade_command_refuses_to_run_without_isolation(tmp_path):
    (tmp_path / "submissions" / "ana").mkdir(parents=True)
    env = offline_env()
    env["PATH"] = str(Path(sys.executable).parent)  # no bwrap on it
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "submissions"), "--out", str(tmp_path / "out")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 2
    assert "refusing to grade without isolation" in result.stderr
    assert "bubblewrap" in result.stderr and "--no-sandbox" in result.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


@pytest.mark.parametrize("args, message", [
    (["missing-folder"], "is not a folder of submissions"),
    (["{sub}", "--out", "{sub}/graded"], "must not contain each other"),
    (["{sub}", "--course", "{sub}"], "is not a course root"),
])
def test_the_grade_command_says_what_to_fix(tmp_path, args, message):
    (tmp_path / "sub").mkdir()
    args = [a.format(sub=tmp_path / "sub") for a in args]
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", *args], cwd=tmp_path if args[0] == "missing-folder" else REPO,
        env={**offline_env(), "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_a_temporary_folder_too_long_for_sockets_is_refused_with_what_to_do(tmp_path):
    """Kernels talk over Unix sockets under $TMPDIR, whose paths may not pass 107 bytes: a long
    TMPDIR used to fail every student with ZeroMQ's "File name too long"."""
    (tmp_path / "sub").mkdir()
    deep = tmp_path / ("t" * 90)
    deep.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "sub"), "--out", str(tmp_path / "out")],
        cwd=REPO, env={**offline_env(), "PYTHONPATH": str(REPO), "TMPDIR": str(deep)},
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "too long a path for the kernels' Unix sockets" in result.stderr and "TMPDIR=/tmp" in result.stderr


def test_as_root_without_a_pids_cgroup_grading_is_refused(monkeypatch):
    """RLIMIT_NPROC does not hold for root: without a cgroup to cap processes, refuse."""
    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox_module, "pids_root", lambda: None)
    with pytest.raises(SandboxUnavailable, match="pids"):
        sandbox_module.probe(isolated(), [])


def test_folders_a_kernel_left_without_write_permission_are_removed(tmp_path):
    from autograder.limits import remove_tree

    locked = tmp_path / "runtime" / "kernel-x" / "locked"
    locked.mkdir(parents=True)
    (locked / "file.bin").write_bytes(b"x")
    locked.chmod(0o500)
    locked.parent.chmod(0o500)
    remove_tree(tmp_path / "runtime")
    assert not (tmp_path / "runtime").exists()


def test_a_process_group_caps_the_processes_of_a_kernel():
    from autograder.limits import pids_root, process_group, remove_group

    if pids_root() is None:
        pytest.skip("no writable pids cgroup here")
    procs = process_group(12)
    try:
        assert (procs.parent / "pids.max").read_text().strip() == "12"
    finally:
        remove_group(procs)
    assert not procs.parent.exists()


def test_kernels_a_killed_worker_left_are_found_by_their_folder_and_killed(tmp_path):
    """An orphan in a session of its own (as a kernel whose worker was killed while starting it)
    dies; a process naming a folder that only shares the prefix is left alone."""
    from autograder.limits import kill_naming

    runtime, neighbour = tmp_path / "ctxlab-kernels-a", tmp_path / "ctxlab-kernels-ab"
    sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
    orphan = subprocess.Popen([*sleep, "--bind", str(runtime / "kernel-1"), str(runtime / "kernel-1")],
                              start_new_session=True)
    bystander = subprocess.Popen([*sleep, str(neighbour / "kernel-1")], start_new_session=True)
    try:
        assert kill_naming(runtime) == 1
        assert orphan.wait(timeout=30) == -9
        assert bystander.poll() is None
        assert kill_naming(runtime) == 0
    finally:
        for process in (orphan, bystander):
            process.kill()
            process.wait()
