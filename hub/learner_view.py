"""What a learner can read on the hub's machine: none of this course's hidden tests or solutions.

Learners have terminals, and their servers run as their own Unix users from the hub's Python
environment. A solution notebook they can open, in a checkout the environment was installed
from or in a course root left open to others, hands them every hidden test. So the hub, before
it starts, looks as a learner would: it runs :func:`scan` under a learner's user and groups
(one learner for each set of groups the learners have, and ``nobody`` for what everyone can
read) over every folder the hub and the servers use (:func:`folders_in_use`), and refuses to
start when one holds a readable file with a hidden-test or solution marker of this course.

A file counts when a line of it (or a line inside a JSON string: a notebook's source) opens
with nbgrader's marker of hidden tests or of a solution, and the file names ``ctxlab``:
nbgrader's own documentation and tests carry the markers too, and are not ours. Nothing in
this file spells a marker out, so that the check does not find itself.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> hidden = "### BEGIN " + "HIDDEN TESTS"
>>> _ = (folder / "budget.ipynb").write_text('["import ctxlab\\n", "' + hidden + '\\n"]')
>>> _ = (folder / "notes.md").write_text(hidden + ", as nbgrader's guide shows it")
>>> _ = (folder / "grader.md").write_text("ctxlab's grader looks for `" + hidden + "`")
>>> [pathlib.Path(path).name for path in scan([str(folder)])]
['budget.ipynb']
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

# A marker at the start of a line, of a JSON string, or after an escaped newline in one.
MARKER = re.compile(rb'(?m)(?:^|"|(?<!\\)\\n)[ \t]*### BEGIN (?:HIDDEN TESTS|SOLUTION)\b')
COURSE_WORD = b"ctxlab"
SKIPPED_SUFFIXES = frozenset({".so", ".pyc", ".png", ".jpg", ".jpeg", ".gif", ".woff", ".woff2", ".ttf", ".otf",
                              ".eot", ".ico", ".a", ".o", ".mo", ".svg"})
LARGEST = 64 << 20  # bytes: larger files are data, not notebooks
SHOWN = 5  # paths named in the refusal


def scan(roots: Iterable[str]) -> list[str]:
    """Files under ``roots`` that this process can read and that hold a marker of this course.

    Folders it cannot enter are passed over, as a learner's ``grep -r`` would; each folder is
    read once, however many roots lead to it.
    """
    found, seen = set(), set()
    for root in roots:
        if os.path.isfile(root):
            found.update([root] if _holds_a_marker(root) else [])
            continue
        for folder, subfolders, files in os.walk(root, onerror=lambda error: None):
            try:
                info = os.stat(folder)
            except OSError:
                subfolders[:] = []
                continue
            if (info.st_dev, info.st_ino) in seen:
                subfolders[:] = []
                continue
            seen.add((info.st_dev, info.st_ino))
            found.update(path for path in (os.path.join(folder, name) for name in files) if _holds_a_marker(path))
    return sorted(found)


def _holds_a_marker(path: str) -> bool:
    if os.path.splitext(path)[1].lower() in SKIPPED_SUFFIXES:
        return False
    try:
        if os.path.getsize(path) > LARGEST:
            return False
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return COURSE_WORD in data and MARKER.search(data) is not None


def folders_in_use(hub_dir: Path, exchange: Path, course_roots: Iterable[Path], homes: Iterable[Path],
                   data: Path) -> list[str]:
    """The folders the hub and every server use: the hub's files and the folder they were
    installed in, the Python environment (its prefix, its import path, where ``ctxlab`` and the
    grader were imported from), the exchange, the course roots, the instructors' homes and the
    hub's data."""
    folders = [hub_dir, hub_dir.parent, Path(sys.prefix), exchange, *course_roots, *homes, data]
    folders += [Path(entry).resolve() for entry in sys.path if entry and Path(entry).is_dir()]
    for name in ("ctxlab", "autograder"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        for location in getattr(module, "__path__", []):  # an editable install points into its checkout
            folders.append(Path(location).resolve().parent)
    unique = []
    for folder in folders:
        if folder.exists() and str(folder) not in unique:
            unique.append(str(folder))
    return unique


def _readers(learners: Iterable[str]) -> list[pwd.struct_passwd]:
    """One learner for each distinct set of groups among ``learners``, then ``nobody``."""
    readers, groupings = [], set()
    for name in sorted(learners):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue  # not a Unix user: PAM will not let them in
        groups = frozenset(os.getgrouplist(name, user.pw_gid))
        if groups not in groupings:
            groupings.add(groups)
            readers.append(user)
    with contextlib.suppress(KeyError):
        readers.append(pwd.getpwnam("nobody"))
    return readers


def readable_secrets(learners: Iterable[str], roots: list[str]) -> dict[str, list[str]]:
    """For each learner scanned as, the files of :func:`scan` they can read (none: left out).

    Run as root, the scan runs under each reader's user and groups; run as another user (a hub
    cannot start servers for others then), it runs as that user.
    """
    if os.geteuid() != 0:
        found = scan(roots)
        return {pwd.getpwuid(os.geteuid()).pw_name: found} if found else {}
    out = {}
    for user in _readers(learners):
        found = _scan_as(user, roots)
        if found:
            out[user.pw_name] = found
    return out


def _scan_as(user: pwd.struct_passwd, roots: list[str]) -> list[str]:
    """:func:`scan` run under ``user``'s user and groups, by the first Python they may run."""
    groups = os.getgrouplist(user.pw_name, user.pw_gid)
    tried = []
    for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        try:
            result = subprocess.run(
                [python, "-I", os.path.abspath(__file__), *roots], user=user.pw_uid, group=user.pw_gid, extra_groups=groups,
                cwd="/", env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, capture_output=True, text=True,
                check=False, timeout=600)
        except OSError as err:
            tried.append(f"{python}: {err.strerror}")
            continue
        if result.returncode == 0:
            return json.loads(result.stdout)
        tried.append(f"{python}: {result.stderr.strip()[-400:]}")
    raise SystemExit(f"the hub could not look at its folders as {user.pw_name}, a learner would: "
                     f"{'; '.join(tried)}. Install the hub's environment where every user can run it "
                     "(hub/README.md)")


def refuse_if_learners_can_read_secrets(learners: Iterable[str], roots: list[str]) -> None:
    """``SystemExit`` naming what a learner can read and what to do, if anything; else nothing."""
    leaks = readable_secrets(learners, roots)
    if not leaks:
        return
    who, paths = next(iter(leaks.items()))
    shown = "\n  ".join(paths[:SHOWN]) + (f"\n  and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")
    group_names = ", ".join(sorted(leaks))
    raise SystemExit(
        f"learners could read this course's hidden tests or solutions ({group_names} can), for example, as {who}:\n"
        f"  {shown}\n"
        "Install the hub from a wheel, away from any checkout (`/usr/bin/python3 hub/install.py /opt/ctxlab-hub`, "
        "hub/README.md), and close the instructors' repositories and course roots to others "
        "(`chmod -R o-rwx PATH`); then start the hub again.")


if __name__ == "__main__":  # what _scan_as runs under a learner's user
    print(json.dumps(scan(sys.argv[1:])))
