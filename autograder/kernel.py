"""A Jupyter kernel manager that starts every grading kernel inside the sandbox.

The kernel talks to the grader over Unix sockets (ZeroMQ's ``ipc`` transport) in a fresh
private folder, the only host folder the sandbox may write: with no network namespace shared,
TCP on the grader's loopback is out of reach. Interrupts are sent as messages (a signal sent to
bubblewrap would not reach the kernel). Messages larger than ``max_message_bytes`` make the
grader drop the connection rather than hold them in memory.

>>> SandboxedKernelManager.interrupt_mode
'message'
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager

from .sandbox import GUARD_MODULE, Sandbox

__all__ = ["SandboxedKernelManager", "LimitedKernelClient", "KERNEL_COMMAND"]

KERNEL_COMMAND = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


class LimitedKernelClient(AsyncKernelClient):
    """A kernel client whose sockets refuse messages over ``max_message_bytes``."""

    max_message_bytes = 64 * 1024 * 1024

    def _create_connected_socket(self, channel: str, identity: bytes | None = None):
        url = self._make_url(channel)
        sock = self.context.socket({"iopub": zmq.SUB, "stdin": zmq.DEALER, "hb": zmq.REQ}.get(channel, zmq.DEALER))
        sock.linger = 1000
        sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        if identity:
            sock.identity = identity
        sock.connect(url)
        return sock


class SandboxedKernelManager(AsyncKernelManager):
    """Starts ``python -m ipykernel_launcher`` (this Python, whatever kernelspecs say) through
    :meth:`Sandbox.command`, talking over Unix sockets in a new folder under ``runtime_root``."""

    interrupt_mode = "message"

    def __init__(self, *, sandbox: Sandbox, runtime_root: Path, lesson: str, files: dict[str, str], **kwargs):
        folder = os.path.realpath(tempfile.mkdtemp(prefix="kernel-", dir=runtime_root))
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
        self.kernel_spec.interrupt_mode = self.interrupt_mode

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = [part.replace("{connection_file}", self.connection_file) for part in KERNEL_COMMAND]
        return self.sandbox.command(
            command + list(extra_arguments or []),
            connection_dir=self.connection_dir, lesson=self.lesson, files=self.files,
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
        guard = base / "guard"
        guard.mkdir()
        shutil.copy(self.sandbox.guard_file, guard / f"{GUARD_MODULE}.py")
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
