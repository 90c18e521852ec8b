"""One writer at a time for a grading output: ``with output_lock(out): ...``.

Two instructors grading into the same ``--out`` at once (or a grade and a merge) would each
rewrite the gradebook, the executed notebooks and the feedback, and the last to finish would
silently drop the other's work. The lock is an exclusive ``flock`` on ``OUT/.lock``, held for
the whole run and freed by the system when the process ends, however it ends; the file says
who holds it, so the refusal can name them.

>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> with output_lock(out):
...     try:
...         with output_lock(out):
...             pass
...     except OutputBusy as err:
...         print("refused:", "wait for it to finish" in str(err))
refused: True
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import getpass
import os
import socket
from collections.abc import Iterator
from pathlib import Path

__all__ = ["OutputBusy", "output_lock", "LOCK_NAME"]

LOCK_NAME = ".lock"


class OutputBusy(RuntimeError):
    """Another run is writing into the same output folder; the message names it and what to do."""


@contextlib.contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """Hold ``out``'s lock while the block runs; :class:`OutputBusy` if another run holds it."""
    handle = open(Path(out) / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "a process that did not say who it is"
            raise OutputBusy(f"{out} is being written by another run ({holder}): wait for it to finish, or write "
                             "into another folder") from None
        handle.seek(0)
        handle.truncate()
        when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} of {getpass.getuser()} on {socket.gethostname()}, since {when}")
        handle.flush()
        yield
    finally:
        handle.close()  # closing frees the lock
