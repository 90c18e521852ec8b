"""A Jupyter kernel manager that starts every grading kernel inside the sandbox.

The kernel talks to the grader over Unix sockets (ZeroMQ's ``ipc`` transport) in a fresh
private folder, the only host folder the sandbox may write: with no network namespace shared,
TCP on the grader's loopback is out of reach. Interrupts are sent as messages (a signal sent to
bubblewrap would not reach the kernel). Messages larger than ``max_message_bytes`` make the
grader drop the connection rather than hold them in memory, and a request that cannot be sent
within ``send_timeout`` (its connection was dropped) raises ``zmq.Again`` rather than waiting.

>>> SandboxedKernelManager.interrupt_mode
'message'
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager

from .limits import process_group, remove_group, small_tmpfs, unmount
from .sandbox import CHANNEL_DIR, JUDGING_PACKAGE, Sandbox

__all__ = ["SandboxedKernelManager", "LimitedKernelClient", "KERNEL_COMMAND"]

# ipykernel's launcher without its debugger (autograder/judging/kernel.py); tracebacks without
# colour codes, which IPython's highlighting of every frame makes costly (tens of ms per error).
KERNEL_COMMAND = [sys.executable, "-m", f"{JUDGING_PACKAGE}.kernel", "-f", "{connection_file}", "--colors=nocolor"]
CONNECTION_BYTES = 4 * 1024 * 1024  # the connection file and a few sockets


class LimitedKernelClient(AsyncKernelClient):
    """A kernel client whose sockets refuse messages over ``max_message_bytes``, and that is
    ready as soon as the kernel answers."""

    max_message_bytes = 64 * 1024 * 1024
    # A message over the size limit ends its connection for good (ZeroMQ does not reconnect after
    # it), and sending on a connection with no peer left would wait for ever: a send that cannot
    # go within this many seconds raises zmq.Again instead (GuardedExecute treats it as a lost kernel).
    send_timeout = 10.0

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        """jupyter_client's wait, without its last step: listening until IOPub has been quiet
        for 0.2 s. Messages still in flight belong to no cell (nbclient matches every output to
        the request it answers), so 0.2 s per kernel start is idle time, a tenth of a notebook."""
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                msg = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                pass
            else:
                if msg["msg_type"] == "kernel_info_reply":
                    try:  # IOPub is connected once it delivers the reply's status message
                        await self.iopub_channel.get_msg(timeout=0.2)
                    except Empty:
                        pass
                    else:
                        self._handle_kernel_info_reply(msg)
                        return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    def _create_connected_socket(self, channel: str, identity: bytes | None = None):
        url = self._make_url(channel)
        sock = self.context.socket({"iopub": zmq.SUB, "stdin": zmq.DEALER, "hb": zmq.REQ}.get(channel, zmq.DEALER))
        sock.linger = 1000
        sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        if channel not in ("iopub", "hb"):
            sock.setsockopt(zmq.SNDTIMEO, int(self.send_timeout * 1000))
        if identity:
            sock.identity = identity
        sock.connect(url)
        return sock


class SandboxedKernelManager(AsyncKernelManager):
    """Starts ipykernel (this Python, whatever kernelspecs say: :data:`KERNEL_COMMAND`) through
    :meth:`Sandbox.command`, talking over Unix sockets in a new folder under ``runtime_root``."""

    interrupt_mode = "message"

    def __init__(self, *, sandbox: Sandbox, runtime_root: Path, lesson: str, files: dict[str, str],
                 channel_dir: str | None = None, channel_writable: bool = False, **kwargs):
        folder = os.path.realpath(tempfile.mkdtemp(prefix="kernel-", dir=runtime_root))
        # The kernel's only writable host folder: a small tmpfs when the grader may mount one.
        self.mounted = sandbox.isolated and small_tmpfs(folder, CONNECTION_BYTES)
        self.cgroup = process_group(sandbox.limits.processes) if sandbox.isolated else None
        super().__init__(
            kernel_name="python3",
            transport="ipc",
            ip=os.path.join(folder, "k"),
            connection_file=os.path.join(folder, "kernel.json"),
            client_class="autograder.kernel.LimitedKernelClient",
            **kwargs,
        )
        self.sandbox = sandbox
        self.lesson = lesson
        self.files = files
        self.connection_dir = folder
        self.channel_dir = channel_dir
        self.channel_writable = channel_writable
        self.kernel_spec.interrupt_mode = self.interrupt_mode

    async def _async_wait(self, pollinterval: float = 0.005) -> None:
        """Wait for a killed kernel to be gone, looking every 5 ms (jupyter_client: every
        100 ms, idle time at the end of every notebook)."""
        while await self._async_is_alive():
            await asyncio.sleep(pollinterval)
            pollinterval = min(pollinterval * 2, 0.1)

    def release(self) -> None:
        """After shutdown: kill what is left in the kernel's process group, unmount its tmpfs."""
        remove_group(self.cgroup)
        self.cgroup = None
        if self.mounted:
            unmount(self.connection_dir)
            self.mounted = False

    def channel_path(self, name: str) -> str:
        """Where the file ``name`` of the judge's channel folder is, as this kernel sees it."""
        if self.channel_dir is None:
            raise RuntimeError("this kernel was started without the judge's channel")
        return f"{CHANNEL_DIR}/{name}" if self.sandbox.isolated else os.path.join(self.channel_dir, name)

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = [part.replace("{connection_file}", self.connection_file) for part in KERNEL_COMMAND]
        return self.sandbox.command(
            command + list(extra_arguments or []),
            connection_dir=self.connection_dir, lesson=self.lesson, files=self.files,
            channel_dir=self.channel_dir, channel_writable=self.channel_writable,
            cgroup=str(self.cgroup) if self.cgroup else None,
        )

    async def start_kernel(self, **kw) -> None:
        """Start the kernel with its output thrown away and no inherited environment."""
        kw.update(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kw["env"] = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # bubblewrap sets the kernel's own
        kw["cwd"] = self.connection_dir
        if not self.sandbox.isolated:
            kw["env"], kw["cwd"] = self._unsandboxed_setup()
        await super().start_kernel(**kw)

    def _unsandboxed_setup(self) -> tuple[dict, str]:
        """With ``--no-sandbox``: the same environment and files, in a private folder of the host."""
        base = Path(self.connection_dir)
        guard = base / "judging"
        guard.mkdir()
        shutil.copytree(self.sandbox.judging_dir, guard / JUDGING_PACKAGE,
                        ignore=shutil.ignore_patterns("__pycache__"))
        workdir = base / "work" / self.lesson
        workdir.mkdir(parents=True)
        for name, host_path in self.files.items():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(host_path, workdir / name)
        env = self.sandbox.environment()
        home = base / "home"
        home.mkdir()
        env.update(HOME=str(home), PYTHONPATH=str(guard), MPLCONFIGDIR=str(home / ".matplotlib"),
                   IPYTHONDIR=str(home / ".ipython"), TMPDIR=str(home))
        return env, str(workdir)
