"""Limits the kernel cannot lift, whoever runs the grader: a process cgroup and a small tmpfs.

``RLIMIT_NPROC`` does not hold for root, so a grader run as root (a container, CI) needs a
control group to cap how many processes a kernel may start. :func:`process_group` makes one
per kernel, with ``pids.max`` set, in cgroup v2 (``/sys/fs/cgroup``) or v1
(``/sys/fs/cgroup/pids``); the sandbox's launcher moves itself into it before it becomes
bubblewrap, so the kernel and everything it forks stay inside. :func:`remove_group` kills what
is left and removes it.

The only host folder a kernel may write is its connection folder (its sockets). Run as root,
:func:`small_tmpfs` mounts a size-limited tmpfs there, so a kernel cannot fill the host's disk.

A worker killed mid-student (interrupted, or over its time) cannot stop its kernels, and a
kernel it was starting at that moment may have missed bubblewrap's ``--die-with-parent``: the
launcher had not yet asked for it when its parent died. :func:`kill_naming` finds such kernels by
the private folder every one of them names on its command line, and kills them.

>>> pids_root() is None or pids_root().is_dir()
True
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["pids_root", "process_group", "remove_group", "small_tmpfs", "unmount", "remove_tree", "kill_naming",
           "NoProcessLimit"]

V2 = Path("/sys/fs/cgroup")
V1 = Path("/sys/fs/cgroup/pids")
GROUP_PREFIX = "ctxlab-kernel-"


class NoProcessLimit(RuntimeError):
    """No way to cap a kernel's processes here; the message says what to do."""


def pids_root() -> Path | None:
    """Where this process may create a pids-limited control group, or None."""
    try:
        if "pids" in (V2 / "cgroup.controllers").read_text().split() and os.access(V2, os.W_OK):
            own = Path("/proc/self/cgroup").read_text().splitlines()
            path = next((line.split(":", 2)[2] for line in own if line.startswith("0::")), "/")
            base = V2 / path.lstrip("/")
            if "pids" in (base / "cgroup.subtree_control").read_text().split() and os.access(base, os.W_OK):
                return base
    except OSError:
        pass
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
        own = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) > 3 and fields[2] == "cgroup" and "pids" in fields[3].split(","):
            path = next((entry.split(":", 2)[2] for entry in own if "pids" in entry.split(":")[1].split(",")), "/")
            base = Path(fields[1]) / path.lstrip("/")
            if (base / "cgroup.procs").exists() and os.access(base, os.W_OK):
                return base
    return None


def process_group(limit: int) -> Path | None:
    """A new control group allowing ``limit`` processes (its ``cgroup.procs`` path), or None."""
    root = pids_root()
    if root is None:
        return None
    group = root / f"{GROUP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    return group / "cgroup.procs"


def remove_group(procs: Path | None) -> None:
    """Kill whatever is left in the group, then remove it."""
    if procs is None:
        return
    group = procs.parent
    pause = 0.002  # a killed process is usually gone within milliseconds: look again soon
    for _ in range(50):
        try:
            pids = [int(p) for p in procs.read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    with contextlib.suppress(OSError):
        group.rmdir()


def small_tmpfs(folder: str, size_bytes: int) -> bool:
    """Mount a tmpfs of ``size_bytes`` on ``folder`` when running as root; whether it was mounted."""
    if os.geteuid() != 0:
        return False
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes},mode=0700", "tmpfs", folder],
                            capture_output=True, check=False)
    return result.returncode == 0


def unmount(folder: str) -> None:
    subprocess.run(["umount", "-l", folder], capture_output=True, check=False)


def remove_tree(path: str | os.PathLike) -> None:
    """Remove ``path`` whatever a kernel left in it: tmpfs mounts, folders without write permission."""
    root = os.path.realpath(path)
    if not os.path.lexists(root):
        return
    with contextlib.suppress(OSError):
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for mount in sorted((m for m in mounts if m == root or m.startswith(root + os.sep)), reverse=True):
            unmount(mount)

    def writable(function, failed, _info):
        for folder in (os.path.dirname(failed), failed):
            with contextlib.suppress(OSError):
                if not os.path.islink(folder):
                    os.chmod(folder, 0o700)
        with contextlib.suppress(OSError):
            function(failed)

    for _ in range(2):
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(root, onerror=writable)
        if not os.path.lexists(root):
            return


def kill_naming(folder: str | os.PathLike, rounds: int = 50) -> int:
    """SIGKILL every process of this machine whose command line names ``folder`` or a path in it;
    how many processes were killed. Looks again until a look finds none (a launcher may exec
    meanwhile).

    >>> kill_naming("/nonexistent/ctxlab-kernels-none")
    0
    """
    roots = {os.path.abspath(folder), os.path.realpath(folder)}
    killed: set[int] = set()  # a killed process may still be listed while it dies: count it once
    pause = 0.002
    for _ in range(rounds):
        found = [pid for pid in _pids() if pid != os.getpid() and _names(pid, roots)]
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return len(killed)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _names(pid: int, roots: set[str]) -> bool:
    """Whether process ``pid``'s command line names one of ``roots`` (a zombie's is empty)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return False
    return any(arg == root or arg.startswith(root + os.sep) for arg in args for root in roots)
