"""Where a learner's code runs while it is graded: a bubblewrap sandbox with resource limits.

Every grading kernel is started as ``LIMITS bwrap OPTIONS -- python -m ctxlab_judging.kernel``
(ipykernel's launcher):

* ``LIMITS`` is a tiny launcher that sets resource limits (address space, file size, number of
  processes, no core dumps) and then replaces itself with bubblewrap;
* bubblewrap gives the kernel new user, PID, network, IPC and UTS namespaces: no network at
  all (not even the grader's loopback), no view of other processes, no capabilities, and a
  file system made only of read-only system folders, the Python environment, the ctxlab
  library, the lesson's extra files and a small private ``/tmp``. The course's ``solutions/``,
  the gradebooks, the submissions and every other student's work are simply not there.

When bubblewrap is missing or does not work, :func:`probe` raises :class:`SandboxUnavailable`
with what to install; grading refuses to start unless the instructor passes ``--no-sandbox``.

>>> limits = Limits(memory_mb=1024)
>>> limits.memory_bytes
1073741824
>>> Sandbox(isolated=False, readonly=(), judging_dir="/x/judging", limits=limits).command(
...     ["python", "-m", "ipykernel_launcher"], connection_dir="/c", lesson="01-budget")[-3:]
['python', '-m', 'ipykernel_launcher']
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .limits import pids_root

__all__ = [
    "Limits",
    "Sandbox",
    "SandboxUnavailable",
    "JUDGING_DIR",
    "JUDGING_PACKAGE",
    "CHANNEL_DIR",
    "default_readonly_paths",
    "probe",
]

JUDGING_DIR = "/opt/ctxlab-grader"
GRADING_SUMMARY_MODEL = "ctxlab-grading-summariser"  # CTXLAB_SUMMARY_MODEL in every grading kernel
GRADING_OFFLINE_LABEL = "offline summary for grading"  # CTXLAB_OFFLINE_LABEL in every grading kernel
JUDGING_PACKAGE = "ctxlab_judging"  # autograder/judging, mounted read-only in every grading kernel
CHANNEL_DIR = "/run/judge"  # where the judge's socket is, in both kernels of one notebook
SANDBOX_HOME = "/tmp/home"
ETC_FILES = ("/etc/fonts", "/etc/localtime", "/etc/ld.so.cache", "/etc/mime.types")
SANDBOX_UID = 1000

INSTALL_HINT = (
    "Install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: "
    "`sudo dnf install bubblewrap`; Arch: `sudo pacman -S bubblewrap`), or, only for "
    "submissions you trust completely, grade without isolation with `--no-sandbox`."
)

# Run by the launcher before bubblewrap: set the limits, then become the next command.
_LIMITS_CODE = (
    "import os,resource as r,sys\n"
    "a,f,n=(int(x) for x in sys.argv[1:4])\n"
    "g=sys.argv[4]\n"
    "g and open(g,'w').write(str(os.getpid()))\n"
    "r.setrlimit(r.RLIMIT_CORE,(0,0))\n"
    "a and r.setrlimit(r.RLIMIT_AS,(a,a))\n"
    "f and r.setrlimit(r.RLIMIT_FSIZE,(f,f))\n"
    "n and r.setrlimit(r.RLIMIT_NPROC,(n,n))\n"
    "os.execvp(sys.argv[6],sys.argv[6:])\n"
)

# Run inside the sandbox by probe(): every check prints one line; "ok" only if all pass.
_PROBE_CODE = r"""
import os, socket, sys
problems = []
for secret in sys.argv[1:]:
    if os.path.exists(secret):
        problems.append(f"{secret} is visible inside the sandbox")
try:
    socket.create_connection(("192.0.2.1", 9), timeout=2).close()
    problems.append("a network connection succeeded")
except OSError:
    pass
with open("/proc/net/dev") as f:
    devices = [line.split(":")[0].strip() for line in f.readlines()[2:]]
if any(d != "lo" for d in devices):
    problems.append(f"network devices visible: {devices}")
with open("/proc/self/status") as f:
    caps = [line.split()[1] for line in f if line.startswith("CapEff")]
if caps and int(caps[0], 16) != 0:
    problems.append(f"the sandboxed process holds capabilities {caps[0]}")
with open("/tmp/home/probe.txt", "w") as f:
    f.write("x")
print("ok" if not problems else "; ".join(problems))
"""


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be used here; the message says what to install or which flag opts out."""


@dataclass(frozen=True)
class Limits:
    """Per-kernel limits: seconds per cell, address space, private scratch space, output kept.

    >>> Limits().cell_timeout, Limits().memory_mb
    (60, 2048)
    """

    cell_timeout: int = 60
    memory_mb: int = 2048
    scratch_mb: int = 256
    output_bytes: int = 1_000_000
    processes: int = 256

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * 1024 * 1024

    @property
    def scratch_bytes(self) -> int:
        return self.scratch_mb * 1024 * 1024


def default_readonly_paths() -> tuple[str, ...]:
    """What a kernel needs to read besides the system: this Python, its environment, ctxlab.

    >>> sys.prefix in default_readonly_paths()
    True
    """
    paths: list[str] = []
    for path in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        paths += [path, os.path.realpath(path)]
    spec = importlib.util.find_spec("ctxlab")
    if spec is not None and spec.submodule_search_locations:
        paths += [os.path.realpath(p) for p in spec.submodule_search_locations]
        from ctxlab.course.transcripts import (
            data_dir,  # the transcripts, wherever this install keeps them
        )

        paths.append(os.path.realpath(data_dir()))
    unique = sorted({p for p in paths if p and os.path.isdir(p) and p != "/"})
    # Drop paths already inside another one (a venv inside its base, a package inside a venv).
    return tuple(p for p in unique if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in unique))


def _processes_of_this_user() -> int:
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.stat(entry.path).st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


@dataclass(frozen=True)
class Sandbox:
    """How grading kernels are started: isolated with bubblewrap, or (``--no-sandbox``) plainly.

    ``readonly`` are host folders made visible read-only at the same path (the Python
    environment, ctxlab); ``judging_dir`` is the ``autograder/judging`` package, mounted in every
    kernel as the importable package ``ctxlab_judging``.
    """

    isolated: bool
    readonly: tuple[str, ...]
    judging_dir: str
    limits: Limits = field(default_factory=Limits)

    def _launcher(self, command: list[str], cgroup: str | None = None) -> list[str]:
        # RLIMIT_NPROC counts every process of the user and does not hold for root; a cgroup
        # (``cgroup``: its cgroup.procs, which the launcher joins) caps the kernel alone.
        processes = _processes_of_this_user() + self.limits.processes if self.isolated and os.geteuid() else 0
        return [
            sys.executable, "-I", "-S", "-c", _LIMITS_CODE,
            str(self.limits.memory_bytes), str(self.limits.scratch_bytes), str(processes), cgroup or "", "--",
            *command,
        ]

    def command(
        self, kernel_cmd: list[str], *, connection_dir: str, lesson: str, files: dict[str, str] | None = None,
        channel_dir: str | None = None, channel_writable: bool = True, cgroup: str | None = None,
    ) -> list[str]:
        """The full command line that starts ``kernel_cmd`` inside the sandbox.

        ``connection_dir`` (the kernel's sockets) and ``channel_dir`` (the judge's socket, shared
        by the two kernels of one notebook, at :data:`CHANNEL_DIR`; read-only unless
        ``channel_writable``: the learner's kernel only connects there) are the only host folders
        it may write; ``files`` (name -> host path) are put read-only in its working folder
        ``/tmp/<lesson>``. ``cgroup`` is the ``cgroup.procs`` of a process group to join.
        """
        files = files or {}
        if not self.isolated:
            return self._launcher(kernel_cmd, cgroup)
        workdir = f"/tmp/{lesson}"
        args = [
            shutil.which("bwrap") or "bwrap",
            "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            *(["--disable-userns"] if _bwrap_supports("--disable-userns") else []),
            "--die-with-parent", "--new-session", "--hostname", "grader",
            "--ro-bind", "/usr", "/usr",
        ]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        for path in ETC_FILES:  # harmless configuration some libraries complain without
            args += ["--ro-bind-try", path, path]
        # The private /tmp first, then the read-only folders: a checkout (and its .venv) that
        # lives under /tmp on the host must stay visible on top of the fresh /tmp.
        args += [
            "--proc", "/proc", "--dev", "/dev",
            "--size", str(self.limits.scratch_bytes), "--tmpfs", "/tmp",
            "--size", str(64 * 1024 * 1024), "--tmpfs", "/dev/shm",
        ]
        for path in self.readonly:
            args += ["--ro-bind", path, path]
        args += [
            "--ro-bind", self.judging_dir, f"{JUDGING_DIR}/{JUDGING_PACKAGE}",
            "--dir", SANDBOX_HOME, "--dir", workdir,
        ]
        if channel_dir:
            args += ["--bind" if channel_writable else "--ro-bind", channel_dir, CHANNEL_DIR]
        for name, host_path in sorted(files.items()):
            args += ["--ro-bind", host_path, f"{workdir}/{name}"]
        args += ["--bind", connection_dir, connection_dir, "--chdir", workdir, "--clearenv"]
        for key, value in self.environment().items():
            args += ["--setenv", key, value]
        return self._launcher([*args, "--", *kernel_cmd], cgroup)

    def environment(self) -> dict[str, str]:
        """The kernel's whole environment inside the sandbox (nothing is inherited)."""
        return {
            "HOME": SANDBOX_HOME,
            "USER": "learner",
            "LANG": "C.UTF-8",
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "PYTHONPATH": JUDGING_DIR,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": f"{SANDBOX_HOME}/.matplotlib",
            "IPYTHONDIR": f"{SANDBOX_HOME}/.ipython",
            "MALLOC_ARENA_MAX": "2",
            # Not ctxlab's default model: an answer that hard-codes the default's name instead of
            # asking ctxlab.llm.summary_model() (which honours this variable) fails the test that says so.
            "CTXLAB_SUMMARY_MODEL": GRADING_SUMMARY_MODEL,
            # ctxlab.get_client()'s offline summaries carry this label, so an answer told to use
            # get_client() when no client is given cannot hard-code an OfflineSummariser() instead.
            "CTXLAB_OFFLINE_LABEL": GRADING_OFFLINE_LABEL,
        }


def _bwrap_supports(option: str) -> bool:
    return option in _bwrap_help()


_HELP: list[str] = []


def _bwrap_help() -> str:
    if not _HELP:
        bwrap = shutil.which("bwrap")
        text = ""
        if bwrap:
            result = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False)
            text = result.stdout + result.stderr
        _HELP.append(text)
    return _HELP[0]


def probe(sandbox: Sandbox, secrets: list[Path]) -> None:
    """Start a process exactly as a kernel would be and check the isolation really holds.

    Raises :class:`SandboxUnavailable` when bubblewrap is missing or does not work, when one of
    ``secrets`` (the course's solutions, the output folder, the submissions) is visible inside,
    or when the network is reachable.
    """
    if not sandbox.isolated:
        return
    if os.geteuid() == 0 and pids_root() is None:
        raise SandboxUnavailable(
            "the grader runs as root, where the per-user process limit does not hold, and no cgroup with "
            "the pids controller is writable here, so a learner's code could fork without bound. Run the "
            "grader as an ordinary user, or give it a writable pids cgroup (cgroup v2 with `pids` in "
            "cgroup.subtree_control, or v1 mounted at /sys/fs/cgroup/pids)."
        )
    if shutil.which("bwrap") is None:
        raise SandboxUnavailable(
            "bubblewrap (`bwrap`) is not installed, so learners' code cannot be isolated "
            f"from the solutions, the gradebook and the network. {INSTALL_HINT}"
        )
    for path in sandbox.readonly:
        for secret in secrets:
            inside = str(secret.resolve())
            if inside == path or inside.startswith(path.rstrip("/") + "/"):
                raise SandboxUnavailable(
                    f"{secret} lies inside {path}, which kernels must read; move the course, the "
                    "submissions and the output folder out of the Python installation"
                )
    with tempfile.TemporaryDirectory(prefix="ctxlab-probe-") as scratch:
        command = sandbox.command(
            [sys.executable, "-I", "-c", _PROBE_CODE, *[str(s.resolve()) for s in secrets]],
            connection_dir=scratch, lesson="probe",
        )
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        except subprocess.TimeoutExpired:
            raise SandboxUnavailable("the sandbox probe did not finish within 60 s") from None
    if result.returncode != 0 or result.stdout.strip() != "ok":
        detail = (result.stdout + result.stderr).strip()[-1500:]
        raise SandboxUnavailable(
            "bubblewrap is installed but could not start an isolated kernel here "
            f"(exit status {result.returncode}): {detail}\n"
            "If unprivileged user namespaces are disabled, enable them (Debian: "
            "`sysctl kernel.unprivileged_userns_clone=1`; Ubuntu 24.04: "
            "`sysctl kernel.apparmor_restrict_unprivileged_userns=0`), or run the grader as root. "
            f"{INSTALL_HINT}"
        )
