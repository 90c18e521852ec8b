"""ctxlab.course.widgets: drive the widget's controls from Python and check what it computes and draws;
then run it in a kernel, as a notebook does, and check the static picture it leaves behind."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser

import nbformat
import pytest
from nbclient import NotebookClient
from support.pipeline import REPO, offline_env

import ctxlab
from ctxlab.course.layout_html import render_layout_html

widgets = pytest.importorskip("ctxlab.course.widgets")
WindowWidget = widgets.WindowWidget


def test_importing_ctxlab_and_its_layout_model_pulls_in_no_display_library():
    code = (
        "import sys, ctxlab, ctxlab.course.layout, ctxlab.course.layout_html; "
        "print(sorted(m for m in ('ipywidgets', 'IPython', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def reference(widget):
    """The picture the widget should show, computed straight from ctxlab.course.layout."""
    budget = ctxlab.ContextBudget(
        window=widget.window.value, reserve_output=widget.reserve_output.value,
        scratchpad_max=widget.scratchpad_max.value,
    )
    label = widget.policy.value
    return widget.layouts.layout(
        widget.lap.value, budget, policy=widget.policies[label], keep_recent=widget.keep_recent.value,
        scratchpad=widget.scratchpad, policy_name=label,
    )


def test_moving_each_control_redraws_the_picture_from_the_layout_model():
    w = WindowWidget("research", window=16_000, reserve_output=2_000, lap=20)
    assert w.policy.options == ("ctxlab.fit", "keep everything") and w.policy.value == "ctxlab.fit"
    seen = set()
    for control, value in [(w.lap, 7), (w.lap, 33), (w.window, 11_000), (w.reserve_output, 3_000),
                           (w.keep_recent, 3), (w.policy, "keep everything")]:
        control.value = value
        assert w.picture.value == render_layout_html(reference(w))
        seen.add(w.picture.value)
    assert len(seen) == 6, "every move changed the picture"
    assert w.current_layout.lap == 33 and w.current_layout.policy == "keep everything"


def test_the_sliders_move_the_allowance_as_the_budget_says():
    w = WindowWidget("research", window=16_000, reserve_output=2_000)
    start = w.current_layout.allowance
    w.window.value = 20_000
    assert w.current_layout.allowance == start + 4_000
    w.reserve_output.value = 3_000
    assert w.current_layout.allowance == start + 3_000, "every reserved token comes out of history"
    w.window.value = 10_000
    w.reserve_output.value = 12_000  # more than the window: refused, shown, not raised
    assert w.current_layout.allowance is None and w.current_layout.over_budget
    assert "reserve_output (12000) must be smaller than the window (10000)" in w.picture.value


def test_keep_recent_reaches_a_policy_that_takes_it_and_is_disabled_otherwise():
    calls = []

    def fit(history, allowance, keep_recent=1):
        calls.append(keep_recent)
        return ctxlab.fit(history, allowance, keep_recent=keep_recent)

    w = WindowWidget("incident", policy=fit, window=8_000, reserve_output=1_000)
    assert w.policy.value == "your fit" and not w.keep_recent.disabled
    w.keep_recent.value = 4
    assert calls[-1] == 4
    w.policy.value = "keep everything"
    assert w.keep_recent.disabled


def test_an_unfinished_exercise_shows_the_reference_first_and_says_what_to_finish():
    def fit(messages, allowance):
        raise NotImplementedError()

    w = WindowWidget("research", policy=fit, window=16_000, reserve_output=2_000)
    assert w.policy.options == ("your fit", "ctxlab.fit", "keep everything")
    assert w.policy.value == "ctxlab.fit"
    w.policy.value = "your fit"
    assert w.current_layout.policy_status == "not implemented"
    assert "your fit is not written yet (it raises NotImplementedError)" in w.picture.value


def test_a_learners_budget_class_drives_the_allowance():
    class ContextBudget:
        def __init__(self, window=128_000, reserve_output=4_000, scratchpad_max=6_000):
            self.window, self.reserve_output, self.scratchpad_max = window, reserve_output, scratchpad_max

        def history_allowance(self, fixed_tokens, scratchpad_tokens):
            raise NotImplementedError()

    w = WindowWidget("research", budget=ContextBudget, window=16_000, reserve_output=2_000)
    assert "ContextBudget.history_allowance is not written yet" in w.picture.value
    ContextBudget.history_allowance = lambda self, fixed, pad: 1_000  # "finished", and stingy
    w.lap.value = 39
    assert w.current_layout.allowance == 1_000 and not w.current_layout.notes


def test_a_budget_object_sets_the_starting_numbers():
    w = WindowWidget("refund", budget=ctxlab.ContextBudget(window=6_000, reserve_output=750, scratchpad_max=250))
    assert (w.window.value, w.reserve_output.value, w.scratchpad_max.value) == (6_000, 750, 250)


def test_the_scratchpad_cap_control_bounds_a_scratchpad():
    pad = ctxlab.Scratchpad(goal="Refund the order", done=[f"checked item {i}" for i in range(40)])
    w = WindowWidget("refund", scratchpad=pad, window=8_000, reserve_output=1_000, scratchpad_max=1_000)
    assert not w.scratchpad_max.disabled
    roomy = w.current_layout.tokens("scratchpad")
    w.scratchpad_max.value = 100
    assert w.current_layout.tokens("scratchpad") <= 100 < roomy
    assert w.current_layout.blocks[-1].kind == "scratchpad"
    assert WindowWidget("refund").scratchpad_max.disabled


def test_an_assembler_is_shown_with_its_summary_and_scratchpad():
    from ctxlab.course.layout import assembler

    def build_context(history, budget, *, tools=None, scratchpad=None, client=None, step=None):
        return ctxlab.assembly.build_context(history, ctxlab.MemoryPolicy(budget, client=client), tools=tools,
                                             scratchpad=scratchpad, step=step)

    pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps", done=[f"read source {i}" for i in range(40)])
    w = WindowWidget("research", policy=assembler(build_context), reference=assembler(),
                     scratchpad=pad, window=10_000, reserve_output=2_000, scratchpad_max=800)
    assert w.policy.options == ("your build_context", "ctxlab.build_context", "keep everything")
    view = w.current_layout
    assert view.tokens("summary") > 0 and 0 < view.tokens("scratchpad") <= 800 and not view.problems
    assert "Decision log" in w.picture.value
    w.scratchpad_max.value = 200
    assert w.current_layout.tokens("scratchpad") <= 200
    assert w.keep_recent.disabled, "the learner's build_context takes no keep_recent: its slider does nothing"
    w.policy.value = "ctxlab.build_context"
    assert not w.keep_recent.disabled


def test_the_scratchpad_cap_moves_in_steps_fine_enough_for_a_few_hundred_tokens():
    pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps")
    w = WindowWidget("research", scratchpad=pad, window=16_000, reserve_output=2_000, scratchpad_max=400)
    assert w.scratchpad_max.step <= 50 and w.scratchpad_max.value == 400
    assert w.window.step >= 500


def test_the_reader_shows_a_message_and_what_became_of_it():
    w = WindowWidget("research", window=9_000, reserve_output=1_000, lap=30)
    w.reader.value = 1
    assert "kept, pinned" in w.message_view.value and "heat pumps" in w.message_view.value
    dropped = next(b.index for b in w.current_layout.blocks if b.dropped)
    w.reader.value = dropped
    assert "<b>dropped</b>" in w.message_view.value
    w.reader.value = len(w.layouts.messages) - 1
    assert "not in the prompt yet at lap 30" in w.message_view.value


def test_the_static_copy_hides_itself_behind_the_live_widget():
    w = WindowWidget("refund")
    bundle = w._static_bundle()
    live = next(c for c in w._dom_classes if c.startswith("ctxlab-live-"))
    static = live.replace("live", "static")
    assert f"body:has(.{live}) .{static}" in bundle["text/html"]
    assert f'<div class="{static}">{w.static_html()}</div>' in bundle["text/html"]
    assert bundle["text/plain"] == w.current_layout.describe()
    assert repr(w) == f"<WindowWidget: refund, lap 9 of 9, policy {w.policy.value}>"


# --- in a kernel, as a notebook runs it ----------------------------------------------------------


class Visible(HTMLParser):
    """Finds elements with a given class that are not inside a <script> (i.e. really drawn)."""

    def __init__(self, cls):
        super().__init__()
        self.cls, self.depth, self.found = cls, 0, []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.depth += 1
        elif not self.depth and self.cls in (dict(attrs).get("class") or "").split():
            self.found.append(dict(attrs))

    def handle_endtag(self, tag):
        if tag == "script":
            self.depth -= 1


def execute(notebook, monkeypatch, *, allow_errors=False, path=None):
    for key, value in offline_env().items():
        monkeypatch.setenv(key, value)
    resources = {"metadata": {"path": str(path or REPO)}}
    NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=allow_errors, resources=resources).execute()
    return notebook


@pytest.mark.slow
def test_a_saved_and_converted_notebook_shows_the_last_picture(monkeypatch):
    from nbconvert import HTMLExporter

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("from ctxlab.course.widgets import WindowWidget\nw = WindowWidget('refund', window=4_000)\nw"),
        nbformat.v4.new_code_cell("w.lap.value = 3"),
    ]
    execute(notebook, monkeypatch)
    live, static = notebook.cells[0].outputs
    assert "application/vnd.jupyter.widget-view+json" in live["data"]
    assert live["data"]["text/plain"] == widgets.STATIC_HINT
    assert 'data-lap="3"' in static["data"]["text/html"], "moving a control updates the saved copy"
    assert static["data"]["text/plain"].startswith("Context window: 4,000 tokens; refund; lap 3 of 9")
    assert "widgets" in notebook.metadata, "the run saved widget state, as nbclient and nbgrader do"

    body, _ = HTMLExporter().from_notebook_node(notebook)
    parser = Visible("ctxlab-window")
    parser.feed(body)
    assert len(parser.found) == 1 and parser.found[0]["data-lap"] == "3"


@pytest.mark.slow
def test_the_lesson_widget_works_in_a_blank_learner_notebook(monkeypatch, tmp_path):
    path = REPO / "course" / "01-budget" / "budget.ipynb"
    notebook = nbformat.read(path, as_version=4)
    execute(notebook, monkeypatch, allow_errors=True, path=path.parent)
    (cell,) = [c for c in notebook.cells if c.get("id") == "widget-demo"]
    assert not [o for o in cell.outputs if o["output_type"] == "error" or o.get("name") == "stderr"]
    html = next(o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {}))
    assert 'data-policy="keep everything"' in html and 'data-over-budget="true"' in html
    assert "ContextBudget.history_allowance is not written yet" in html
    assert json.dumps(cell.outputs).count("application/vnd.jupyter.widget-view+json") == 1


def _on_another_thread(work):
    """Run ``work`` on a new thread, as ipykernel 7 runs a widget's callbacks; re-raise its error."""
    import threading

    errors = []

    def run():
        try:
            work()
        except BaseException as err:  # handed back to the test's thread
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the callback did not finish"
    if errors:
        raise errors[0]


def test_controls_moved_from_another_thread_use_state_made_on_this_one():
    """Lesson 05's widget: a policy writing to a store made in the notebook's thread."""
    store = ctxlab.TrajectoryStore(run="coding")  # made here, used by the callbacks' thread

    def tiers_then_fit(history, allowance, step, count):
        view = ctxlab.compress_history(history, step, keep_full_for=2, compress_after=6, max_chars=1_000, store=store)
        return ctxlab.fit(view, allowance, count=count)

    w = WindowWidget("coding", policy={"tiers + fit": tiers_then_fit}, window=16_000, reserve_output=2_000)
    assert w.current_layout.policy_status == "ok", w.current_layout.problems
    seen = []

    def move():
        for lap in (3, w.layouts.laps, 8):
            w.lap.value = lap
            seen.append((w.current_layout.lap, w.current_layout.policy_status, w.current_layout.problems))
        w.policy.value = "ctxlab.fit"
        w.policy.value = "tiers + fit"
        seen.append((w.current_layout.lap, w.current_layout.policy_status, w.current_layout.problems))

    _on_another_thread(move)
    assert seen == [(3, "ok", ()), (w.layouts.laps, "ok", ()), (8, "ok", ()), (8, "ok", ())]
    assert any(b.compressed for b in w.current_layout.blocks) and len(store) > 0
    assert w.picture.value == render_layout_html(reference(w))
    store.close()


def test_refreshes_from_two_threads_at_once_leave_a_consistent_picture():
    from concurrent.futures import ThreadPoolExecutor

    w = WindowWidget("research", window=16_000, reserve_output=2_000)
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda lap: setattr(w.lap, "value", lap), [5, 30, 12, 40, 7, 21]))
    assert w.picture.value == render_layout_html(w.current_layout)
    assert w.current_layout.lap == w.lap.value
