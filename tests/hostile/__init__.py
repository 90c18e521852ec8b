"""Hostile and broken submissions for the autograder tests (cases.py), and the sandbox check."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def require_sandbox() -> None:
    """Skip unless bubblewrap can isolate a process here; with CTXLAB_REQUIRE_SANDBOX=1 (CI), fail."""
    bwrap = shutil.which("bwrap")
    ok = bwrap is not None and subprocess.run(
        [bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
        capture_output=True, check=False,
    ).returncode == 0
    if ok:
        return
    message = "bubblewrap (bwrap) cannot isolate a process here: install the `bubblewrap` package"
    if os.environ.get("CTXLAB_REQUIRE_SANDBOX") == "1":
        pytest.fail(message)
    pytest.skip(message)
