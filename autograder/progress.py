"""A progress bar on standard error, without dependencies.

On a terminal the bar is redrawn in place; otherwise (a log file, CI) one line is printed per
finished student, so the log still shows progress.

>>> import io
>>> bar = Progress(2, stream=io.StringIO())
>>> bar.finished("alice", "01-budget 17/17")
>>> "1/2" in bar.stream.getvalue()
True
"""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["Progress", "duration"]


def duration(seconds: float) -> str:
    """``75`` -> ``'1m15s'``.

    >>> duration(75), duration(4)
    ('1m15s', '4s')
    """
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """Counts finished students out of ``total``, with elapsed time and an estimate of what is left."""

    width = 24

    def __init__(self, total: int, *, stream=None, enabled: bool = True):
        self.total, self.done, self.running = total, 0, 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def _bar(self) -> str:
        filled = self.width * self.done // max(self.total, 1)
        elapsed = time.monotonic() - self.started
        left = ""
        if 0 < self.done < self.total:
            left = f" · about {duration(elapsed / self.done * (self.total - self.done))} left"
        return (f"[{'#' * filled}{'-' * (self.width - filled)}] {self.done}/{self.total} students"
                f" · {self.running} running · {duration(elapsed)}{left}")

    def started_one(self) -> None:
        with self.lock:
            self.running += 1
            if self.enabled and self.tty:
                self.stream.write("\r" + self._bar() + "\033[K")
                self.stream.flush()

    def finished(self, student: str, summary: str) -> None:
        with self.lock:
            self.done += 1
            self.running = max(0, self.running - 1)
            if not self.enabled:
                return
            if self.tty:
                self.stream.write(f"\r\033[K{student}: {summary}\n" + self._bar())
            else:
                self.stream.write(f"{self._bar()} · {student}: {summary}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
