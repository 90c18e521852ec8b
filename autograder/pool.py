"""Long-lived grading workers: one process per parallel job, one student at a time each.

Starting a worker costs seconds (nbgrader, nbconvert and SQLAlchemy are imported), so each of
the ``--jobs`` workers is started once and then handed students one after another through
its standard input (``python -m autograder.worker serve``: a job file per line, answered by
``done`` or ``failed``). A worker that dies or overruns its time is killed with its whole
process group (the sandboxed kernels die with it) and replaced for the next student.

>>> pool = WorkerPool(2, Path("/tmp"), env={})
>>> len(pool.workers)
2
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

__all__ = ["WorkerPool", "TIMED_OUT"]

TIMED_OUT = None


class _Worker:
    def __init__(self, log: Path, env: dict):
        self.log, self.env = log, env
        self.process: subprocess.Popen | None = None

    def _start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "autograder.worker", "serve"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=self.env,
                start_new_session=True, bufsize=0,
            )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None

    def run(self, job: Path, timeout: float | None) -> int | None:
        """Grade ``job``: 0 when the worker answered, its exit status if it died, None if too slow."""
        if self.process is None or self.process.poll() is not None:
            self._start()
        process = self.process
        try:
            process.stdin.write(f"{job}\n".encode())
            process.stdin.flush()
        except BrokenPipeError:
            self.process = None
            return process.wait() or -1
        deadline = None if timeout is None else time.monotonic() + timeout
        answer = b""
        while not answer.endswith(b"\n"):
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([process.stdout], [], [], wait)
            if not ready:
                self.kill()
                return TIMED_OUT
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:  # the worker died
                self.process = None
                return process.wait() or -1
            answer += chunk
        return 0


class WorkerPool:
    """``size`` workers shared by the grading threads; :meth:`stop_all` kills every one."""

    def __init__(self, size: int, folder: Path, env: dict):
        self.workers = [_Worker(folder / f"worker-{i + 1}.log", env) for i in range(size)]
        self.idle: queue.Queue = queue.Queue()
        for worker in self.workers:
            self.idle.put(worker)
        self.stopping = False
        self.lock = threading.Lock()

    def run(self, job: Path, timeout: float | None) -> int | None:
        """Grade one job on the next free worker (see :meth:`_Worker.run`)."""
        worker = self.idle.get()
        try:
            if self.stopping:
                raise KeyboardInterrupt
            return worker.run(job, timeout)
        finally:
            self.idle.put(worker)

    def stop_all(self) -> None:
        """Kill every worker now (an interruption)."""
        with self.lock:
            self.stopping = True
            for worker in self.workers:
                worker.kill()

    def close(self) -> None:
        """Let idle workers finish: closing their input ends them."""
        for worker in self.workers:
            if worker.process is not None and worker.process.poll() is None:
                with contextlib.suppress(OSError):
                    worker.process.stdin.close()
                try:
                    worker.process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    worker.kill()
