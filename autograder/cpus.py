"""How many CPUs this process may use: ``usable_cpus()``, the default for ``grade --jobs``.

``os.cpu_count()`` counts the machine's CPUs. Inside a container, a batch job or a Kubernetes
pod the process may use far fewer: the CPUs its affinity allows, and a cgroup CPU quota (a
pod's ``limits.cpu``) that throttles it beyond that. Grading with one worker per machine CPU
there starts dozens of kernels on two CPUs' worth of time, and every cell times out.

The count is the smallest of: the affinity's CPUs, and for each cgroup from this process's up
to the root, its quota divided by its period, rounded up (cgroup v2's ``cpu.max``, or v1's
``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``); at least 1.

>>> import pathlib, tempfile
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "grading").mkdir()
>>> _ = (root / "grading" / "cpu.max").write_text("150000 100000\\n")
>>> usable_cpus(affinity={0, 1, 2, 3, 4, 5, 6, 7}, cgroup="0::/grading\\n", cgroup_root=root)
2
>>> usable_cpus(affinity={0, 1, 2}, cgroup="0::/\\n", cgroup_root=root)
3
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["usable_cpus"]


def _quota(folder: Path) -> float | None:
    """CPUs' worth of time the cgroup ``folder`` allows, or ``None`` when it sets no limit."""
    try:
        if (folder / "cpu.max").is_file():  # cgroup v2: "QUOTA PERIOD" or "max PERIOD"
            quota, period = (folder / "cpu.max").read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        if (folder / "cpu.cfs_quota_us").is_file():  # cgroup v1: a quota of -1 is none
            quota = int((folder / "cpu.cfs_quota_us").read_text())
            period = int((folder / "cpu.cfs_period_us").read_text())
            return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None
    return None


def _cgroup_folders(cgroup: str, cgroup_root: Path) -> list[Path]:
    """This process's cgroup folders with the CPU controller and their ancestors, deepest first."""
    folders = []
    for line in cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if not hierarchy or not path:
            continue
        base = cgroup_root if controllers == "" else None  # v2: one tree, at the root
        if base is None and "cpu" in controllers.split(","):  # v1: the cpu controller's own tree
            base = next((cgroup_root / name for name in ("cpu,cpuacct", "cpu", "cpuacct,cpu")
                         if (cgroup_root / name).is_dir()), None)
        if base is None:
            continue
        folder = base / path.strip().lstrip("/")
        while True:
            folders.append(folder)
            if folder == base:
                break
            folder = folder.parent
    return folders


def usable_cpus(affinity: set[int] | None = None, cgroup: str | None = None,
                cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may use (see the module); the arguments stand in for the system's."""
    if affinity is None:
        affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    count = float(len(affinity) or 1)
    if cgroup is None:
        try:
            cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            cgroup = ""
    for folder in _cgroup_folders(cgroup, cgroup_root):
        quota = _quota(folder)
        if quota is not None:
            count = min(count, quota)
    return max(1, math.ceil(count))
