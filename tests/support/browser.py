"""Debian's Chromium for the browser tests, never a browser downloaded at run time.

``CHROMIUM`` is ``$CTXLAB_CHROMIUM``, else ``/usr/bin/chromium``; :func:`require_browser` skips a
test without it or without playwright, or fails it when ``CTXLAB_REQUIRE_BROWSER=1`` (as in CI).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = Path(
    os.environ.get("CTXLAB_CHROMIUM")
    or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium") or "/usr/bin/chromium")
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_browser() -> None:
    """Skip (or, with CTXLAB_REQUIRE_BROWSER=1, fail) when Chromium or playwright is missing."""
    problem = None
    if not CHROMIUM.exists():
        problem = (
            f"no Chromium at {CHROMIUM}: install Debian's package with `sudo apt-get install chromium` "
            "(or point CTXLAB_CHROMIUM at a Chromium binary); do not run `playwright install`"
        )
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "playwright is not installed: run `make setup` (it is in requirements-dev.txt)"
    if problem:
        if os.environ.get("CTXLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CTXLAB_REQUIRE_BROWSER=1 but {problem}")
        pytest.skip(problem)
