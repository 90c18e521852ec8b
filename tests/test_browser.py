"""The context-layout widget in a real browser: JupyterLab served here, headless Chromium.

The test serves JupyterLab on 127.0.0.1 (a free port, a token, its own settings and runtime
folders, offline), opens lesson 01 from ``course/`` (a copy with the exercises answered, so
Run All goes to the end), runs it, checks that the widget rendered, moves its controls, checks
that the picture changed, and saves screenshots to ``tests/artifacts/``. A second test opens
``jupyter nbconvert --to html`` output of an executed notebook, offline, and checks that the
static picture shows there.

Chromium is Debian's ``chromium`` package at /usr/bin/chromium (never ``playwright install``).
Without it the tests are skipped, unless ``CTXLAB_REQUIRE_BROWSER=1`` (as in CI), where they fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from support.pipeline import REPO, fill, offline_env, solution_sources

pytestmark = pytest.mark.browser

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
ARTIFACTS = REPO / "tests" / "artifacts"
LESSON = "01-budget"
WIDGET = ".ctxlab-window-widget"
PICTURE = f"{WIDGET} .ctxlab-window"


def _require_browser():
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Lab:
    """A JupyterLab server of our own on 127.0.0.1, and its REST API."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}"
        settings = home / "settings"
        for plugin, values in {
            "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
            "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
        }.items():
            path = settings / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values), encoding="utf-8")
        env = offline_env()
        env.pop("MPLBACKEND", None)  # let the kernel draw figures inline, as for a learner
        for name, folder in {
            "JUPYTER_CONFIG_DIR": "config",
            "JUPYTER_RUNTIME_DIR": "runtime",
            "JUPYTER_DATA_DIR": "data",
            "IPYTHONDIR": "ipython",
        }.items():
            (home / folder).mkdir(parents=True, exist_ok=True)
            env[name] = str(home / folder)
        self._asked_to_stop = False
        self.log_path = home / "jupyterlab.log"
        self._log = self.log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab", "--no-browser",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
                f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={home / 'workspaces'}",
                "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
                "--expose-app-in-browser",
                *(["--ServerApp.allow_root=True"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
            ],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=root,
        )
        try:
            self._wait_until_up()
        except BaseException:
            self._end_process()
            raise

    def api(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base}{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
        return json.loads(text) if text.strip() else None

    def _wait_until_up(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.process.returncode}:\n{self.log()}")
            try:
                self.api("GET", "/api/status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
        raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s:\n{self.log()}")

    def url(self, notebook: str) -> str:
        return f"{self.base}/lab/tree/{notebook}?token={self.token}"

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        """Shut down every session and kernel (they outlive the browser), then the server."""
        try:
            for session in self.api("GET", "/api/sessions") or []:
                self.api("DELETE", f"/api/sessions/{session['id']}")
            for kernel in self.api("GET", "/api/kernels") or []:
                self.api("DELETE", f"/api/kernels/{kernel['id']}")
            left = self.api("GET", "/api/kernels")
            assert not left, f"kernels still running after shutdown: {left}"
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                self.api("POST", "/api/shutdown")
                self._asked_to_stop = True
        finally:
            self._end_process()

    def _end_process(self) -> None:
        try:
            self.process.wait(timeout=20 if self.process.poll() is None and self._asked_to_stop else 0.1)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


@pytest.fixture(scope="module")
def browser():
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _local_only(page) -> None:
    """Refuse every request that would leave this machine (the page must work offline)."""

    def route(route):
        url = route.request.url
        if url.startswith(("http://127.0.0.1", "file:", "data:", "blob:", "about:")):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", route)


def _answered_lesson(folder: Path) -> str:
    """course/01-budget copied into ``folder`` with every exercise answered from solutions/."""
    (released,) = sorted((REPO / "course" / LESSON).glob("*.ipynb"))
    (source,) = sorted((REPO / "solutions" / LESSON).glob("*.ipynb"))
    notebook = fill(json.loads(released.read_text(encoding="utf-8")), solution_sources(json.loads(source.read_text(encoding="utf-8"))))
    (folder / released.name).write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return released.name


def _picture(page) -> dict:
    return page.eval_on_selector(
        PICTURE,
        "el => ({lap: el.dataset.lap, policy: el.dataset.policy, over: el.dataset.overBudget,"
        " kept: el.dataset.kept, dropped: el.dataset.dropped, window: el.dataset.window,"
        " html: el.outerHTML.length})",
    )


def _wait_for_change(page, before: dict, key: str, timeout: float = 15_000) -> dict:
    page.wait_for_function(
        "([sel, key, old]) => { const el = document.querySelector(sel); return el && el.dataset[key] !== old; }",
        arg=[PICTURE, key, before[key]],
        timeout=timeout,
    )
    return _picture(page)


def test_widget_renders_and_follows_its_controls_in_jupyterlab(browser, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    name = _answered_lesson(root)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    lab = Lab(root, tmp_path / "home")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    _local_only(page)
    try:
        page.goto(lab.url(name))
        page.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
        # The status bar's text, not only the toolbar's idle circle: the kernel is really up.
        page.wait_for_function(
            "() => (document.querySelector('#jp-main-statusbar')?.textContent || '').includes('Idle')",
            timeout=60_000,
        )
        page.evaluate("window.jupyterapp.commands.execute('runmenu:run-all')")
        page.wait_for_selector(PICTURE, state="visible", timeout=120_000)
        page.wait_for_function(
            "() => { const prompts = [...document.querySelectorAll('.jp-InputArea-prompt')].map(p => p.textContent);"
            " const status = document.querySelector('#jp-main-statusbar')?.textContent || '';"
            " return status.includes('Idle') && prompts.length > 0 && !prompts.some(t => t.includes('*')); }",
            timeout=120_000,
        )
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert "Traceback" not in " ".join(errors.all_inner_texts())
        assert not page.locator("text=Error displaying widget").count()

        widget = page.locator(WIDGET)
        assert widget.count() == 1
        widget.scroll_into_view_if_needed()
        before = _picture(page)
        # Lesson 01 opens on the baseline at the last lap: the history runs past the window.
        assert before["policy"] == "keep everything" and before["over"] == "true"
        assert page.locator(f"{PICTURE} .ctxlab-over-budget").is_visible()
        # The static copy for pages without a kernel is there, and hidden behind the live widget.
        static = page.locator("[class^='ctxlab-static-']")
        assert static.count() == 1 and not static.is_visible()
        widget.screenshot(path=str(ARTIFACTS / "widget-lab-over-budget.png"))

        # Pick ctxlab's trimming: it fits, by dropping turn groups from the middle.
        widget.locator(".widget-toggle-button", has_text="ctxlab.fit").click()
        after = _wait_for_change(page, before, "policy")
        assert after["policy"] == "ctxlab.fit" and after["over"] == "false"
        assert int(after["dropped"]) > 0, "at the last lap in a 16k window ctxlab.fit must drop something"
        assert not page.locator(f"{PICTURE} .ctxlab-over-budget").count()
        widget.screenshot(path=str(ARTIFACTS / "widget-lab-fit.png"))

        # Hovering a block shows its message (its title); typing its number shows it whole.
        task = widget.locator(".ctxlab-window .ctxlab-block[data-index='1']")
        title = task.get_attribute("title")
        assert title.startswith("#1 · user · lap 0 · 124 tokens · kept, pinned") and "heat pumps" in title
        task.hover()
        reader = widget.locator(".widget-text", has=page.locator("label", has_text="read message #")).locator("input")
        reader.fill("4")
        reader.press("Enter")
        page.wait_for_function(
            "sel => (document.querySelector(sel)?.textContent || '').includes('#4 · user')",
            arg=f"{WIDGET} .ctxlab-reader", timeout=15_000,
        )
        assert "2021 or later" in widget.inner_text()

        # Step back through the run with the lap slider's keyboard handle.
        handle = widget.locator(".widget-slider", has=page.locator("label", has_text="lap")).locator(".noUi-handle")
        handle.focus()
        for _ in range(25):
            handle.press("ArrowLeft")
        earlier = _wait_for_change(page, after, "lap")
        assert int(earlier["lap"]) < int(after["lap"])
        page.wait_for_function(
            "([sel, lap]) => document.querySelector(sel)?.dataset.lap === lap",
            arg=[PICTURE, str(int(after["lap"]) - 25)], timeout=15_000,
        )
        widget.screenshot(path=str(ARTIFACTS / "widget-lab-earlier-lap.png"))
        page.screenshot(path=str(ARTIFACTS / "lab-lesson-01.png"))

        # Saved, its kernel gone, opened again: the live widget cannot come back, the picture does.
        page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function(
            "() => !document.querySelector('.jp-mod-current .jp-mod-dirty')", timeout=15_000,
        )
        shown = _picture(page)["lap"]
        saved = json.loads((root / name).read_text(encoding="utf-8"))
        copies = [
            "".join(output["data"]["text/html"])
            for cell in saved["cells"] for output in cell.get("outputs", [])
            if "ctxlab-static-" in "".join(output.get("data", {}).get("text/html", ""))
        ]
        assert len(copies) == 1 and f'data-lap="{shown}"' in copies[0], "the saved copy is the last picture"
        for session in lab.api("GET", "/api/sessions") or []:
            lab.api("DELETE", f"/api/sessions/{session['id']}")
        page.reload()
        page.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
        reopened = page.locator(".ctxlab-window")
        reopened.first.wait_for(state="visible", timeout=60_000)
        assert reopened.count() == 1 and not page.locator(WIDGET).count()
        assert reopened.get_attribute("data-lap") == shown
        reopened.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "lab-reopened-without-kernel.png"))
    except Exception:
        with contextlib.suppress(Exception):
            page.screenshot(path=str(ARTIFACTS / "lab-failure.png"))
        print(lab.log())
        raise
    finally:
        context.close()
        lab.stop()


def test_static_picture_shows_in_nbconvert_html_offline(browser, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from ctxlab.widgets import WindowWidget\n"
            "WindowWidget('research', window=12_000, reserve_output=1_500, lap=30)"
        )
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "widget.ipynb"
    nbformat.write(notebook, path)
    env = offline_env()
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute", str(path)],
        env=env, check=True, capture_output=True, timeout=300,
    )
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    _local_only(page)
    try:
        page.goto((tmp_path / "widget.html").as_uri())
        picture = page.locator(".ctxlab-window")
        picture.wait_for(state="visible", timeout=15_000)
        assert picture.count() == 1
        assert picture.get_attribute("data-lap") == "30"
        assert page.locator(".ctxlab-window .ctxlab-block").count() > 30
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        picture.screenshot(path=str(ARTIFACTS / "widget-nbconvert-static.png"))
    finally:
        page.close()
