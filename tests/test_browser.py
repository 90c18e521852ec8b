"""The learner's path through JupyterLab, every lesson, in a real browser (headless Chromium).

One JupyterLab server (127.0.0.1, a free port, a token, its own settings and runtime folders,
offline, configured as ``make lab`` configures it for a learner) and one browser serve every
test here. For each of the six lessons, opened from a copy of ``course/``:

* the blank learner notebook: opened with no unsaved-changes mark, Run All, then the lesson's
  check, which names what is not done;
* the notebook with every answer filled in from ``solutions/`` (as ``support.pipeline.fill``
  does): Run All reaches the end with no error, one control of the widget moves and the picture
  follows with no error text, and the check says every visible test passes.

Validate is pressed once. Any console error fails the test. Screenshots go to ``tests/artifacts/``.
A last test opens ``jupyter nbconvert --to html`` output offline and checks the static picture.

Chromium is Debian's ``chromium`` package at /usr/bin/chromium (never ``playwright install``).
Without it the tests are skipped, unless ``CTXLAB_REQUIRE_BROWSER=1`` (as in CI), where they fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from support.browser import CHROMIUM, CHROMIUM_ARGS, require_browser
from support.pipeline import REPO, fill, offline_env, solution_sources

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "tests" / "artifacts"
LEARNER_CONFIG = REPO / "jupyter-config" / "learner"
LESSONS = sorted(p.name for p in (REPO / "course").iterdir() if p.is_dir())
LESSON = "01-budget"

# What flips once the lessons' notebook edits land (issue 13: a check cell after each exercise,
# `ctxlab.course.check_all()` near the end, visible tests tagged `raises-exception`, demonstrations
# falling back to ctxlab's reference, and course/ released with the kernel's full
# `language_info`). Until then a blank lesson's Run All stops at its first unfinished exercise,
# the check is run from a cell this test adds, and a lesson opens marked unsaved.
NOTEBOOK_EDITS_LANDED = True
WIDGET = ".ctxlab-window-widget"
PICTURE = f"{WIDGET} .ctxlab-window"


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
        for plugin, values in {  # every cell in the page, so the test can read them all
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
        env["JUPYTER_CONFIG_PATH"] = str(LEARNER_CONFIG)  # as `make lab` starts it
        self._asked_to_stop = False
        self.log_path = home / "jupyterlab.log"
        self._log = self.log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab", "--no-browser",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
                f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={home / 'workspaces'}",
                "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
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

    def status(self, path: str) -> int:
        """The HTTP status the server answers ``GET path`` with (redirects not followed)."""

        class Stay(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        request = urllib.request.Request(f"{self.base}{path}", headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.build_opener(Stay).open(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code

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
    require_browser()
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


def _released(lesson: str) -> Path:
    (released,) = sorted((REPO / "course" / lesson).glob("*.ipynb"))
    return released


def _answered(lesson: str) -> dict:
    """The learner notebook of ``lesson`` with every answer cell filled in from solutions/."""
    (source,) = sorted((REPO / "solutions" / lesson).glob("*.ipynb"))
    released = json.loads(_released(lesson).read_text(encoding="utf-8"))
    return fill(released, solution_sources(json.loads(source.read_text(encoding="utf-8"))))


CHECK_ALL = "ctxlab.course.check_all()"


def _with_check(notebook: dict) -> dict:
    """Until the lessons carry their own check cells: one ``ctxlab.course.check_all()`` cell at the end."""
    if NOTEBOOK_EDITS_LANDED:
        return notebook
    notebook = json.loads(json.dumps(notebook))
    notebook["cells"].append(nbformat.v4.new_code_cell(f"import ctxlab\n\n{CHECK_ALL}"))
    return notebook


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One server for every lesson: ``blank/<lesson>`` as released, ``solved/<lesson>`` answered."""
    require_browser()
    top = tmp_path_factory.mktemp("lab")
    root = top / "root"
    for lesson in LESSONS:
        name = _released(lesson).name
        for kind, notebook in (
            ("blank", json.loads(_released(lesson).read_text(encoding="utf-8"))),
            ("solved", _answered(lesson)),
        ):
            folder = root / kind / lesson
            folder.mkdir(parents=True)
            (folder / name).write_text(json.dumps(_with_check(notebook), indent=1), encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = Lab(root, top / "home")
    try:
        yield server
    finally:
        print(server.log())
        server.stop()


class Page:
    """A browser page on one notebook, collecting console errors and failed page scripts."""

    def __init__(self, browser, lab: Lab, path: str) -> None:
        self.lab = lab
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        _local_only(self.page)
        self.path = path
        self.page.goto(lab.url(path) + "&reset")
        self.page.wait_for_function(f"() => {{ {self._panel} return !!panel && panel.content.widgets.length > 0; }}", timeout=90_000)
        self.wait_idle()

    @property
    def _panel(self) -> str:
        """JavaScript that finds this notebook's panel (whatever else has focus) as ``panel``."""
        return (
            "const panel = window.jupyterapp && Array.from(window.jupyterapp.shell.widgets('main'))"
            f".find(w => w.context && w.context.path === {json.dumps(self.path)});"
        )

    def _in_panel(self, body: str, arg=None):
        """Evaluate ``body`` with ``panel`` (activated first) and ``arg`` in scope."""
        return self.page.evaluate(
            f"arg => {{ {self._panel} window.jupyterapp.shell.activateById(panel.id); {body} }}", arg,
        )

    def wait_idle(self, timeout: float = 180_000) -> None:
        """The kernel is up and idle (the status bar's text) and no cell waits to run."""
        self.page.wait_for_function(
            "() => { const status = document.querySelector('#jp-main-statusbar')?.textContent || '';"
            " const prompts = [...document.querySelectorAll('.jp-InputArea-prompt')].map(p => p.textContent);"
            " return status.includes('Idle') && !prompts.some(t => t.includes('*')); }",
            timeout=timeout,
        )

    def run_all(self, *, to_the_end: bool = True, timeout: float = 240_000) -> list[dict]:
        """Run All; with ``to_the_end``, wait until the last code cell has run (JupyterLab shows Idle
        between cells and does not render cells out of view, so the status alone returns early)."""
        self._in_panel("return window.jupyterapp.commands.execute('notebook:run-all-cells');")
        if to_the_end:
            self.page.wait_for_function(
                "() => { const p = window.jupyterapp.shell.currentWidget;"
                " const cells = p.content.widgets.filter(c => c.model.type === 'code');"
                " return cells.every(c => c.model.executionState !== 'running')"
                " && cells.at(-1).model.executionCount !== null; }",
                timeout=timeout,
            )
        self.wait_idle()
        return self.cells()

    def cells(self) -> list[dict]:
        """Each code cell: its execution count, whether it holds an error, and its text output."""
        return self._in_panel(
            "return panel.content.widgets"
            ".filter(c => c.model.type === 'code').map(c => { const outs = c.model.outputs.toJSON();"
            " return {source: c.model.sharedModel.getSource(), count: c.model.executionCount,"
            " error: outs.some(o => o.output_type === 'error'),"
            " ename: outs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue).join(''),"
            " text: outs.map(o => o.text || (o.data && o.data['text/plain']) || '').map(t => Array.isArray(t) ? t.join('') : t).join('')}; })"
        )

    def dirty(self) -> bool:
        return self._in_panel("return panel.context.model.dirty;")

    def run_cell(self, index: int) -> dict:
        """Run the code cell at ``index`` (among code cells) on its own; its state afterwards."""
        self._in_panel(
            "const nb = panel.content; const cells = nb.widgets.filter(c => c.model.type === 'code');"
            " nb.activeCellIndex = nb.widgets.indexOf(cells.at(arg)); nb.deselectAll();"
            " return window.jupyterapp.commands.execute('notebook:run-cell');",
            index,
        )
        self.wait_idle()
        return self.cells()[index]

    def close(self) -> None:
        for session in self.lab.api("GET", "/api/sessions") or []:  # free the kernel: 2 cores
            self.lab.api("DELETE", f"/api/sessions/{session['id']}")
        self.context.close()


@contextlib.contextmanager
def opened(browser, lab: Lab, path: str, shot: str):
    page = Page(browser, lab, path)
    try:
        yield page
        assert not page.errors, f"console errors in {path}: {page.errors}"
    except BaseException:
        with contextlib.suppress(Exception):
            page.page.screenshot(path=str(ARTIFACTS / f"{shot}-failure.png"))
        raise
    finally:
        page.close()


def _tracebacks(cells: list[dict]) -> list[str]:
    return [f"{c['source'][:80]}: {c['ename']}" for c in cells if c["error"]]


def _picture(page) -> dict:
    return page.eval_on_selector(
        PICTURE,
        "el => ({lap: el.dataset.lap, policy: el.dataset.policy, over: el.dataset.overBudget,"
        " kept: el.dataset.kept, dropped: el.dataset.dropped, window: el.dataset.window,"
        " html: el.outerHTML.length, problems: [...el.querySelectorAll('.ctxlab-problem')].map(p => p.textContent)})",
    )


def _wait_for_change(page, before: dict, key: str, timeout: float = 30_000) -> dict:
    page.wait_for_function(
        "([sel, key, old]) => { const el = document.querySelector(sel); return el && el.dataset[key] !== old; }",
        arg=[PICTURE, key, before[key]],
        timeout=timeout,
    )
    return _picture(page)


def _lap_handle(widget, page):
    return widget.locator(".widget-slider", has=page.locator("label", has_text="lap")).locator(".noUi-handle")


def test_the_learners_lab_keeps_validate_and_hides_the_instructor_parts(browser, lab):
    with opened(browser, lab, f"blank/{LESSON}/{_released(LESSON).name}", "lab-learner") as page:
        p = page.page
        assert p.locator(".validate-button, button:has-text('Validate')").count() >= 1, "Validate is there"
        menus = p.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        assert "Nbgrader" not in menus, f"the instructor's Nbgrader menu shows: {menus}"
        assert not p.locator(".jp-Notification-Toast, .jp-toast-message").filter(has_text="news").count()
        for path in ("/formgrader", "/formgrader/api/assignments"):  # nbgrader's instructor server parts are off
            assert lab.status(path) == 404, f"{path} answered {lab.status(path)}"
        plugins = p.evaluate("() => window.jupyterapp.hasPlugin('@jupyter/nbgrader:create-assignment')")
        assert plugins is False
        assert p.evaluate("() => window.jupyterapp.hasPlugin('@jupyter/nbgrader:validate-assignment')")
        p.screenshot(path=str(ARTIFACTS / "lab-learner.png"))


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_blank_lesson_opens_clean_runs_and_its_check_says_what_to_do(browser, lab, lesson):
    path = f"blank/{lesson}/{_released(lesson).name}"
    with opened(browser, lab, path, f"lab-{lesson}-blank") as page:
        if NOTEBOOK_EDITS_LANDED:
            assert not page.dirty(), "the lesson is marked unsaved before any edit"
        cells = page.run_all(to_the_end=NOTEBOOK_EDITS_LANDED)
        ran = [c for c in cells if c["count"] is not None]
        checks = [i for i, c in enumerate(cells) if CHECK_ALL in c["source"]]
        assert checks, "the lesson has a ctxlab.course.check_all() cell"
        if NOTEBOOK_EDITS_LANDED:
            assert len(ran) == len(cells), f"Run All left {len(cells) - len(ran)} code cells unrun"
        else:  # Run All stops at the first visible test of an unfinished exercise
            stop = cells[len(ran) - 1]
            assert 0 < len(ran) < len(cells) and stop["error"], [c["count"] for c in cells]
            assert "NotImplementedError" in stop["ename"] or "not" in stop["ename"], (
                f"Run All stopped at a cell that is not an unfinished exercise: {stop['source'][:300]}\n{stop['ename']}"
            )
            page.run_cell(checks[-1])
        report = page.cells()[checks[-1]]
        assert not report["error"], report["text"][-2000:]
        assert "0 of" in report["text"] and "exercises pass their visible tests" in report["text"]
        assert "not done yet" in report["text"] or "NotImplementedError" in report["text"]
        assert "Hidden tests" in report["text"] and "Traceback" not in report["text"]
        page.page.screenshot(path=str(ARTIFACTS / f"lab-{lesson}-blank.png"))


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_solved_lesson_runs_to_the_end_and_its_widget_follows_a_control(browser, lab, lesson):
    path = f"solved/{lesson}/{_released(lesson).name}"
    with opened(browser, lab, path, f"lab-{lesson}-solved") as page:
        p = page.page
        cells = page.run_all()
        assert all(c["count"] is not None for c in cells), "Run All reached the end"
        assert not _tracebacks(cells), f"cells that raised: {_tracebacks(cells)}"
        assert not p.locator("text=Error displaying widget").count()
        (report,) = [c for c in cells if CHECK_ALL in c["source"]][-1:]
        # A failed test's line starts with its verdict; a test's docstring may say "FAILED" itself.
        assert "exercises pass their visible tests" in report["text"], report["text"]
        assert not re.search(r"(?m)^\s*FAILED\s", report["text"]), report["text"]

        widget = p.locator(WIDGET)
        assert widget.count() >= 1
        widget = widget.first
        widget.scroll_into_view_if_needed()
        before = _picture(p)
        assert not [t for t in before["problems"] if "raised" in t], before["problems"]
        handle = _lap_handle(widget, p)
        handle.focus()
        for _ in range(3):
            handle.press("ArrowLeft")
        _wait_for_change(p, before, "lap")
        p.wait_for_function(  # the slider's last move has been drawn
            "([sel, lap]) => document.querySelector(sel)?.dataset.lap === lap",
            arg=[PICTURE, str(max(int(before["lap"]) - 3, 1))], timeout=30_000,
        )
        after = _picture(p)
        errors = [t for t in after["problems"] if "raised" in t or "Error" in t]
        assert not errors, f"the widget shows an error after the lap moved: {errors}"
        if lesson == LESSON:  # its policy buttons, reader, saving and reopening, in depth
            widget.screenshot(path=str(ARTIFACTS / f"widget-{lesson}.png"))
            _lesson_one_in_depth(page, lab)
            return
        # every policy it offers draws at this lap too (lesson 05's reads and writes a store)
        for button in widget.locator(".widget-toggle-button").all():
            label = button.inner_text().strip()
            if label == _picture(p)["policy"]:
                continue
            shown = _picture(p)
            button.click()
            now = _wait_for_change(p, shown, "policy")
            errors = [t for t in now["problems"] if "raised" in t or "Error" in t]
            assert now["policy"] == label and not errors, f"{label}: {errors}"
        assert not p.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").filter(
            has_text="Traceback").count()
        widget.screenshot(path=str(ARTIFACTS / f"widget-{lesson}.png"))


def test_run_all_goes_past_a_failing_cell_only_when_it_is_tagged_raises_exception(browser, lab):
    """What the lessons rely on to run to the end: a visible test tagged ``raises-exception``
    still fails (it is still an error for Validate and grading), and Run All goes on."""
    folder = lab.root / "run-all"
    folder.mkdir(exist_ok=True)
    for tagged in (True, False):
        notebook = nbformat.v4.new_notebook()
        failing = nbformat.v4.new_code_cell("raise NotImplementedError()")
        if tagged:
            failing.metadata["tags"] = ["raises-exception"]
        notebook.cells = [nbformat.v4.new_code_cell("a = 1"), failing, nbformat.v4.new_code_cell("b = a + 1")]
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        nbformat.write(notebook, folder / f"tagged-{tagged}.ipynb")
        with opened(browser, lab, f"run-all/tagged-{tagged}.ipynb", f"lab-run-all-{tagged}") as page:
            cells = page.run_all(to_the_end=tagged)
            assert cells[1]["error"] and "NotImplementedError" in cells[1]["ename"]
            assert (cells[2]["count"] is not None) == tagged, [c["count"] for c in cells]


def test_validate_names_what_a_blank_lesson_still_needs(browser, lab):
    with opened(browser, lab, f"blank/{LESSON}/{_released(LESSON).name}", "lab-validate") as page:
        p = page.page
        p.locator(".validate-button, button:has-text('Validate')").first.click()
        dialog = p.locator(".jp-Dialog")
        dialog.wait_for(state="visible", timeout=180_000)
        p.wait_for_function(
            "() => !(document.querySelector('.jp-Dialog')?.textContent || '').includes('Validating')",
            timeout=180_000,
        )
        text = dialog.inner_text()
        assert "failed" in text.lower() or "error" in text.lower(), text[:2000]
        p.screenshot(path=str(ARTIFACTS / "lab-validate-blank.png"))
        dialog.locator("button").last.click()


def _lesson_one_in_depth(opened_page: Page, lab: Lab) -> None:
    """Lesson 01's widget in depth: to scale over budget, the policy buttons, the reader, the
    static copy for pages without a kernel, save, reopen without a kernel."""
    saved_path = lab.root / opened_page.path
    page = opened_page.page
    widget = page.locator(WIDGET)
    assert widget.count() == 1
    widget.scroll_into_view_if_needed()
    before = _picture(page)
    # Lesson 01 opens on the baseline near the end of the run: the history runs past the window.
    assert before["policy"] == "keep everything" and before["over"] == "true"
    assert page.locator(f"{PICTURE} .ctxlab-over-budget").is_visible()
    # Over budget the bar stays to scale: the reserved output keeps its width past the edge.
    widths = page.eval_on_selector(
        f"{PICTURE} .ctxlab-bar",
        "bar => ({bar: bar.clientWidth, segments: Object.fromEntries([...bar.querySelectorAll('.ctxlab-segment')]"
        ".map(s => [s.dataset.segment, [s.getBoundingClientRect().width, +s.dataset.tokens]]))})",
    )
    total = sum(tokens for _, tokens in widths["segments"].values())
    for segment, (width, tokens) in widths["segments"].items():
        assert width == pytest.approx(widths["bar"] * tokens / total, abs=2.5), segment
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
    handle = _lap_handle(widget, page)
    handle.focus()
    for _ in range(25):
        handle.press("ArrowLeft")
    _wait_for_change(page, after, "lap")
    page.wait_for_function(
        "([sel, lap]) => document.querySelector(sel)?.dataset.lap === lap",
        arg=[PICTURE, str(int(after["lap"]) - 25)], timeout=15_000,
    )
    widget.screenshot(path=str(ARTIFACTS / "widget-lab-earlier-lap.png"))

    # Saved, its kernel gone, opened again: the live widget cannot come back, the picture does.
    opened_page._in_panel("return window.jupyterapp.commands.execute('docmanager:save');")
    page.wait_for_function(f"() => {{ {opened_page._panel} return !panel.context.model.dirty; }}", timeout=15_000)
    shown = _picture(page)["lap"]
    saved = json.loads(saved_path.read_text(encoding="utf-8"))
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


def test_static_picture_shows_in_nbconvert_html_offline(browser, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from ctxlab.course.widgets import WindowWidget\n"
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
