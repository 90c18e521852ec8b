"""The context-layout widget: watch a memory policy fill the window, lap by lap.

``WindowWidget`` replays a transcript. For the lap you pick it asks a policy (your own function
or ctxlab's reference) what to keep, and draws the result: a bar of the whole window to scale
(system, tool schemas, scratchpad, summary, history, free space, reserved output) and a strip
of the prompt with one block per message, sized by its tokens, coloured by role, grouped by
turn group and marked when pinned, dropped, summarised or compressed. Hover a block to read
it. Sliders set the window, the reserved output, the scratchpad cap, keep-recent and the lap;
buttons pick the policy.

The picture is plain HTML (``ctxlab.course.layout_html.render_layout_html``), so it needs no browser extension
beyond ipywidgets, and a notebook saved, converted to HTML or returned as feedback still shows
it: displaying the widget also writes a static copy of the picture, kept up to date as the
controls move, which hides itself wherever the live widget is showing.

This module imports ipywidgets; ``import ctxlab`` does not import this module.

>>> import ctxlab
>>> from ctxlab.course.widgets import WindowWidget
>>> w = WindowWidget("research", policy=ctxlab.fit, window=16_000, reserve_output=2_000)
>>> w.lap.value = 10
>>> w.current_layout.lap, w.current_layout.over_budget
(10, False)
"""

from __future__ import annotations

import html
import math
import threading
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    import ipywidgets as ipw
except ImportError as err:  # pragma: no cover - ipywidgets ships with the course
    raise ImportError(
        "the context-layout widget needs ipywidgets 8: run `pip install ipywidgets` or `make setup`"
    ) from err

from ..budget import ContextBudget
from ..errors import BudgetError
from ..tokens import TokenCounter
from ..trimming import fit
from .layout import (
    POLICY_OPTIONS,
    TranscriptLayout,
    WindowLayout,
    _accepted,
    policy_label,
    preview,
)
from .layout_html import render_layout_html
from .transcripts import load_tools, load_transcript

__all__ = ["WindowWidget"]

Message = Mapping[str, Any]

READ_CHARS = 3_000  # how much of a message the reader shows
STATIC_HINT = "Interactive context-layout widget: run the cell with a live kernel to use its controls."


class _Unworkable:
    """Stands in for a budget whose constructor refused the numbers, so the picture can say why."""

    def __init__(self, window: int, reserve_output: int, scratchpad_max: int, error: Exception) -> None:
        self.window, self.reserve_output, self.scratchpad_max = window, reserve_output, scratchpad_max
        self.error = error

    def history_allowance(self, fixed_tokens: int, scratchpad_tokens: int) -> int:
        raise BudgetError(str(self.error))


def _nice_step(largest: int) -> int:
    for step in (100, 250, 500, 1_000, 2_000, 5_000, 10_000):
        if largest <= step * 120:
            return step
    return 25_000


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _accepts(function: Callable[..., Any], name: str) -> bool:
    if name in getattr(function, "ctxlab_ignores", ()):
        return False
    return name in _accepted(function, POLICY_OPTIONS)


class WindowWidget(ipw.VBox):
    """An interactive picture of the context window as a policy fills it, lap by lap.

    ``transcript`` is a transcript name (``"research"``: its tool schemas are loaded too) or a
    list of messages. ``policy`` is your own function, or a dict of them by label;
    ``reference`` is ctxlab's (``ctxlab.fit`` unless you say otherwise); "keep everything" is
    always offered as the baseline. Each policy is called as
    ``policy(history, allowance, **options)`` (see ``ctxlab.course.layout``). The first policy that
    is written is shown first: one that still raises ``NotImplementedError`` stays in the
    list, and the picture says what to finish.

    ``budget`` is the budget class the sliders build (``ctxlab.ContextBudget``, or your own
    with the same fields and ``history_allowance``), or a budget whose numbers start the
    sliders. ``scratchpad`` is text, a message, a ``ctxlab.Scratchpad`` (or your own with a
    ``message`` or ``render`` method), or a callable returning text or a message; it is given
    ``max_tokens=`` the cap when it takes it. Without one the scratchpad cap control is
    disabled. To show a ``build_context``-style assembler, pass
    ``ctxlab.course.layout.assembler(build_context)`` as the policy.

    The controls are attributes, so code (and tests) can move them: ``window``,
    ``reserve_output``, ``scratchpad_max``, ``keep_recent``, ``lap`` (with ``play``),
    ``policy`` and ``reader`` (the message shown in full). ``current_layout`` is the
    :class:`ctxlab.course.layout.WindowLayout` on show, ``picture`` the HTML widget that draws it,
    ``layouts`` the :class:`ctxlab.course.layout.TranscriptLayout` behind it, ``policies`` the policies by label.

    >>> w = WindowWidget("refund", window=4_000, reserve_output=500)
    >>> w.policy.options
    ('ctxlab.fit', 'keep everything')
    >>> w.policy.value = "keep everything"
    >>> w.current_layout.over_budget
    True
    """

    def __init__(
        self,
        transcript: str | Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        policy: Callable[..., Any] | Mapping[str, Callable[..., Any]] | None = None,
        reference: Callable[..., Any] | Mapping[str, Callable[..., Any]] | None = fit,
        budget: Any = ContextBudget,
        window: int | None = None,
        reserve_output: int | None = None,
        scratchpad_max: int | None = None,
        keep_recent: int = 1,
        lap: int | None = None,
        scratchpad: Any = None,
        title: str | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        if isinstance(transcript, str):
            messages = load_transcript(transcript)
            tools = load_tools(transcript) if tools is None else tools
            title = title or transcript
        else:
            messages = list(transcript)
        self.layouts = TranscriptLayout(messages, tools, counter=counter, title=title)
        self.scratchpad = scratchpad
        self._budget_type, start = self._budget_parts(budget)
        window = window if window is not None else start.get("window", 16_000)
        reserve_output = reserve_output if reserve_output is not None else start.get("reserve_output", 2_000)
        scratchpad_max = scratchpad_max if scratchpad_max is not None else start.get("scratchpad_max", 1_000)
        self.policies = self._policy_table(policy, reference)

        total = sum(self.layouts.tokens) + self.layouts.tools_tokens + reserve_output
        largest = max(2 * window, _round_up(total, 1_000))
        step = _nice_step(largest)
        largest = _round_up(largest, step)
        quarter = _round_up(largest // 4, step)
        self.window = self._slider("window", window, step, largest, step)
        self.reserve_output = self._slider("reserved output", reserve_output, 0, max(quarter, reserve_output), step)
        # caps are a few hundred tokens: a finer step than the window's, on which the start lies
        pad_step = math.gcd(scratchpad_max, max(25, step // 10)) or 25
        self.scratchpad_max = self._slider("scratchpad cap", scratchpad_max, 0, max(quarter, scratchpad_max), pad_step)
        if scratchpad is None:
            self.scratchpad_max.disabled = True
            self.scratchpad_max.tooltip = "this replay has no scratchpad (pass scratchpad=... to add one)"
        self.keep_recent = self._slider("keep recent", keep_recent, 1, max(10, keep_recent), 1)
        laps = self.layouts.laps
        if lap is not None:
            self.layouts.prompt(lap)  # a clear error for a lap the run does not have
        self.lap = ipw.IntSlider(
            value=laps if lap is None else lap, min=1, max=laps, description="lap",
            style={"description_width": "30px"}, layout=ipw.Layout(width="auto", flex="1 1 auto"),
        )
        self.play = ipw.Play(
            value=self.lap.value, min=1, max=laps, interval=700, show_repeat=False,
            tooltip="step through the run, one lap at a time", layout=ipw.Layout(width="auto"),
        )
        ipw.jslink((self.play, "value"), (self.lap, "value"))
        labels = list(self.policies)
        picker = ipw.ToggleButtons if len(labels) <= 4 else ipw.Dropdown
        self.policy = picker(
            options=labels, value=self._first_working(labels), style={"button_width": "auto"},
            tooltip="which policy decides what the window keeps",
        )
        self.reader = ipw.BoundedIntText(
            value=min(1, len(messages) - 1), min=0, max=len(messages) - 1, description="read message #",
            style={"description_width": "initial"}, layout=ipw.Layout(width="190px", flex="0 0 auto"),
        )
        self.picture = ipw.HTML(layout=ipw.Layout(width="auto"))
        self.message_view = ipw.HTML(layout=ipw.Layout(width="auto", flex="1 1 auto"))
        self.current_layout: WindowLayout | None = None
        self._lock = threading.RLock()
        self._static_id: str | None = None
        self._live_class = f"ctxlab-live-{uuid.uuid4().hex[:12]}"

        run = ipw.HBox([self.play, self.lap], layout=ipw.Layout(align_items="center", width="100%"))
        sizes = ipw.GridBox(
            [self.window, self.reserve_output, self.scratchpad_max, self.keep_recent],
            layout=ipw.Layout(grid_template_columns="repeat(2, minmax(0, 1fr))", grid_gap="0 24px", width="100%"),
        )
        reader = ipw.HBox([self.reader, self.message_view], layout=ipw.Layout(align_items="flex-start", width="100%"))
        label = ipw.HTML(
            '<div style="width:110px;text-align:right;padding-right:8px;box-sizing:border-box">policy</div>',
            layout=ipw.Layout(flex="0 0 auto"),
        )
        choose = ipw.HBox([label, self.policy], layout=ipw.Layout(align_items="center"))
        super().__init__([choose, run, sizes, self.picture, reader], layout=ipw.Layout(width="100%"))
        self.add_class("ctxlab-window-widget")
        self.message_view.add_class("ctxlab-reader")
        self.add_class(self._live_class)
        for control in (self.window, self.reserve_output, self.scratchpad_max, self.keep_recent, self.lap, self.policy):
            control.observe(self._on_change, names="value")
        self.reader.observe(self._on_read, names="value")
        self.refresh()

    # -- setting up -----------------------------------------------------------------------

    @staticmethod
    def _slider(description: str, value: int, low: int, high: int, step: int) -> ipw.IntSlider:
        return ipw.IntSlider(
            value=value, min=low, max=high, step=step, description=description,
            continuous_update=False, readout_format=",d", style={"description_width": "110px"},
            layout=ipw.Layout(width="auto"),
        )

    @staticmethod
    def _budget_parts(budget: Any) -> tuple[Callable[..., Any], dict[str, int]]:
        if isinstance(budget, type) or not hasattr(budget, "window"):
            return budget, {}
        numbers = {name: getattr(budget, name) for name in ("window", "reserve_output", "scratchpad_max") if hasattr(budget, name)}
        return type(budget), numbers

    @staticmethod
    def _labels(policies: Any, *, mine: bool) -> dict[str, Callable[..., Any]]:
        if policies is None:
            return {}
        if isinstance(policies, Mapping):
            return dict(policies)
        label = policy_label(policies)
        if mine and not label.startswith("ctxlab."):
            label = f"your {label}"
        return {label: policies}

    def _policy_table(self, policy: Any, reference: Any) -> dict[str, Callable[..., Any]]:
        table = self._labels(policy, mine=True)
        for label, function in self._labels(reference, mine=False).items():
            table.setdefault(label, function)
        if "keep everything" not in table:  # the baseline: the layout with no policy
            table["keep everything"] = None
        return table

    def _first_working(self, labels: list[str]) -> str:
        budget = self._budget()
        for label in labels:
            view = self.layouts.layout(
                self.lap.value, budget, policy=self.policies[label], keep_recent=self.keep_recent.value,
                scratchpad=self.scratchpad, policy_name=label,
            )
            if view.policy_status != "not implemented":
                return label
        return labels[0]

    def _budget(self) -> Any:
        numbers = {
            "window": self.window.value,
            "reserve_output": self.reserve_output.value,
            "scratchpad_max": self.scratchpad_max.value,
        }
        try:
            return self._budget_type(**numbers)
        except NotImplementedError:
            return ContextBudget(**numbers)
        except Exception as err:  # show the refusal in the picture
            return _Unworkable(error=err, **numbers)

    # -- updating ---------------------------------------------------------------------------

    def _on_change(self, change: Mapping[str, Any]) -> None:
        self.refresh()

    def _on_read(self, change: Mapping[str, Any]) -> None:
        with self._lock:
            self._show_message()

    def refresh(self) -> WindowLayout:
        """Recompute the layout from the controls and redraw (the controls call this).

        Jupyter may call this from a thread of its own when a control moves (ipykernel 7 runs
        widget callbacks off the main thread), while a cell runs on the main one: one refresh
        at a time, so a layout and its picture always belong together.
        """
        with self._lock:
            return self._refresh()

    def _refresh(self) -> WindowLayout:
        label = self.policy.value
        chosen = self.policies[label]
        self.current_layout = self.layouts.layout(
            self.lap.value, self._budget(), policy=chosen, keep_recent=self.keep_recent.value,
            scratchpad=self.scratchpad, policy_name=label,
        )
        self.keep_recent.disabled = not _accepts(chosen, "keep_recent")
        self.picture.value = render_layout_html(self.current_layout)
        self._show_message()
        if self._static_id is not None:
            from IPython.display import update_display

            update_display(self._static_bundle(), raw=True, display_id=self._static_id)
        return self.current_layout

    def _show_message(self) -> None:
        layout = self.current_layout
        index = self.reader.value
        message = self.layouts.messages[index]
        block = next((b for b in layout.blocks if b.index == index), None) if layout else None
        tokens = self.layouts.tokens[index]
        where = f"lap {message.get('step')}" if message.get("step") is not None else ""
        if block is None:
            state = f"not in the prompt yet at lap {self.lap.value}"
        else:
            state = block.state + "".join(f", {m}" for m in block.marks if m != block.state)
        text = _full_text(message)
        cut = f"\n… ({len(text) - READ_CHARS:,} more characters)" if len(text) > READ_CHARS else ""
        self.message_view.value = (
            f'<div style="font-size:12px"><b>#{index}</b> · {html.escape(str(message.get("role")))} · '
            f"{where} · {tokens:,} tokens · <b>{html.escape(state)}</b></div>"
            f'<pre style="white-space:pre-wrap;word-break:normal;overflow-wrap:break-word;max-height:220px;overflow:auto;margin:4px 0;'
            f'padding:6px;background:#f6f8fa;border-radius:4px;font-size:11px">'
            f"{html.escape(text[:READ_CHARS] + cut)}</pre>"
        )

    # -- static picture ---------------------------------------------------------------------

    def static_html(self) -> str:
        """The current picture as HTML, for pages with no live kernel (see the module docs)."""
        return render_layout_html(self.current_layout)

    def _static_bundle(self) -> dict[str, str]:
        tag = self._live_class.replace("ctxlab-live-", "ctxlab-static-")
        hide = (
            f"body:has(.{self._live_class}) .{tag},"
            f"body:has(.{self._live_class}) :is(.jp-OutputArea-child,.output_area):has(.{tag})"
            f":not(:has(.{self._live_class})){{display:none}}"
        )
        return {
            "text/html": f'<style>{hide}</style><div class="{tag}">{self.static_html()}</div>',
            "text/plain": self.current_layout.describe(),
        }

    def _ipython_display_(self) -> None:
        from IPython.display import display

        bundle = dict(ipw.VBox._repr_mimebundle_(self) or {})
        bundle["text/plain"] = STATIC_HINT
        display(bundle, raw=True)
        self._static_id = self._static_id or uuid.uuid4().hex
        display(self._static_bundle(), raw=True, display_id=self._static_id)

    @property
    def replay(self) -> TranscriptLayout:
        """Deprecated name of :attr:`layouts` (``ctxlab.replay`` is the one replay)."""
        warnings.warn("WindowWidget.replay is deprecated and will be removed in the next release: use "
                      "WindowWidget.layouts", DeprecationWarning, stacklevel=2)
        return self.layouts

    def __repr__(self) -> str:
        view = self.current_layout
        where = f"lap {view.lap} of {view.laps}, " if view is not None else ""
        name = f"{self.layouts.title}, " if self.layouts.title else ""
        return f"<WindowWidget: {name}{where}policy {self.policy.value}>"


def _full_text(message: Message) -> str:
    return preview(message, limit=10**9)

