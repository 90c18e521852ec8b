"""Benchmark: how long the context-layout widget takes to update on a 500-message run.

A learner drags a slider or presses play; each move must redraw in well under a tenth of a
second, or stepping through a run feels stuck. The run is the research transcript's laps
repeated, with new steps and call ids, to 500 messages (:func:`long_transcript`, the same
every time). Each update is timed in the kernel's Python, from setting a control's value to
the new picture being in the widget (the layout, the HTML, the reader panel and the widget
state); the browser's drawing is not included. The target is under 100 ms per update.

Scenarios: stepping laps near the end of the run (the longest prompts) with each policy,
moving the window slider, and swapping policies. One extra row times a learner-style policy
that re-counts every message on each call, to show what a policy without ``count=`` costs.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import measure

import ctxlab
import ctxlab.course
from ctxlab.course.layout import assembler
from ctxlab.course.layout_html import render_layout_html

TITLE = "widget: one update of the context-layout widget on a 500-message run"
TARGET = 0.100  # seconds per update
MESSAGES = 500
WINDOW = 32_000
RESERVE = 4_000


def long_transcript(n: int = MESSAGES) -> list[dict]:
    """``n`` messages made from the research run: its system prompt and task, then its laps
    over and over with the steps continued and every call id made unique; cut between turn
    groups and topped up with short assistant notes to exactly ``n``.

    >>> run = long_transcript(500)
    >>> len(run), ctxlab.pairs_ok(run), run[-1]["step"] > 40
    (500, True, True)
    """
    research = ctxlab.course.load_transcript("research")
    head, laps = research[:2], research[2:]
    last_step = laps[-1]["step"]
    out = [dict(m) for m in head]
    copy = 0
    while len(out) < n:
        for message in laps:
            new = dict(message)
            new["step"] = message["step"] + copy * last_step
            if copy:
                if "tool_calls" in new:
                    new["tool_calls"] = [
                        {**call, "id": f"{call['id']}_{copy}"} for call in message["tool_calls"]
                    ]
                if new["role"] == "tool":
                    new["tool_call_id"] = f"{message['tool_call_id']}_{copy}"
                    new["content"] = f"(run {copy + 1}) {message['content']}"
            out.append(new)
        copy += 1
    ends = [stop for _, stop in ctxlab.trimming.turn_group_spans(out) if stop <= n]
    out = out[: ends[-1]]
    step = out[-1]["step"]
    while len(out) < n:
        step += 1
        out.append({"role": "assistant", "content": f"Progress note {step}: still reading sources.", "step": step})
    ctxlab.validate_messages(out)
    return out


def recounting_fit(history, allowance):
    """A learner's fit that counts every message afresh on every call (no ``count=``)."""
    return ctxlab.fit(history, allowance, count=ctxlab.count_message)


def _keep_everything(history, allowance):
    """The layout's baseline as a plain policy function, so it can be timed like the others."""
    return list(history), []


def _timed_policy(policy, spent: list[float]):
    """``policy``, timed: each call appends its seconds to ``spent`` (the signature is kept, so
    the widget still passes the options the policy names)."""

    @functools.wraps(policy)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return policy(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - start)

    return timed


def _time_updates(moves, spent: list[float]) -> tuple[list[float], list[float]]:
    """Seconds of each update, and of the policy's share of it."""
    times, inside = [], []
    for control, value in moves:
        before = len(spent)
        start = time.perf_counter()
        control.value = value
        times.append(time.perf_counter() - start)
        inside.append(sum(spent[before:]))
    return times, inside


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main(results_dir: Path, *, quick: bool = False) -> str:
    from ctxlab.course.widgets import WindowWidget

    run = long_transcript(MESSAGES)

    def trim_and_summarise(history, allowance, keep_recent, count):
        client = ctxlab.OfflineSummariser()
        return ctxlab.trim_and_summarise(history, allowance, client=client, keep_recent=keep_recent, count=count)

    spent: list[float] = []
    policies = {
        label: _timed_policy(policy, spent)
        for label, policy in {
            "ctxlab.fit": ctxlab.fit,
            "keep everything": _keep_everything,
            "ctxlab.trim_and_summarise (offline summariser)": trim_and_summarise,
            "ctxlab.build_context (offline summariser)": assembler(),
            "a fit that re-counts every call": recounting_fit,
        }.items()
    }
    started = time.perf_counter()
    widget = WindowWidget(run, reference=policies, title="research x6", window=WINDOW, reserve_output=RESERVE)
    build = time.perf_counter() - started
    laps = widget.layouts.laps
    steps = 4 if quick else 30
    rounds = 1 if quick else 3

    raw: dict[str, tuple[list[float], list[float]]] = {}

    def record(name, moves):
        times, inside = [], []
        for _ in range(rounds):
            t, i = _time_updates(moves(), spent)
            times += t
            inside += i
        raw[name] = (times, inside)

    for label in policies:
        widget.policy.value = label

        def lap_moves():
            widget.lap.value = laps - steps - 1
            return [(widget.lap, lap) for lap in range(laps - steps, laps + 1)]

        record(f"step a lap: {label}", lap_moves)
    widget.policy.value = "ctxlab.fit"
    windows = [WINDOW + k * 1_000 for k in range(-steps // 2, steps // 2 + 1)]
    record("move the window slider: ctxlab.fit", lambda: [(widget.window, w) for w in windows])
    swaps = ["keep everything", "ctxlab.fit"] * (steps // 2 or 1)
    record("swap the policy: ctxlab.fit / keep everything", lambda: [(widget.policy, p) for p in swaps])
    rows = []
    for name, (times, inside) in raw.items():
        overhead = [t - i for t, i in zip(times, inside, strict=True)]
        verdict = "yes" if measure.median(times) < TARGET else "**no**"
        rows.append([name, len(times), measure.seconds(measure.median(times)), measure.seconds(_p95(times)),
                     measure.seconds(max(times)), measure.seconds(measure.median(inside)),
                     measure.seconds(measure.median(overhead)), verdict])

    widget.window.value = WINDOW
    widget.lap.value = laps
    layout_s = measure.median([measure.timed(lambda: widget.layouts.layout(
        laps, ctxlab.ContextBudget(window=WINDOW, reserve_output=RESERVE), policy=ctxlab.fit))[0] for _ in range(5)])
    view = widget.current_layout
    html_s = measure.median([measure.timed(lambda: render_layout_html(view))[0] for _ in range(5)])
    html = render_layout_html(view)
    json_s = measure.median([measure.timed(lambda: json.dumps({"value": html}))[0] for _ in range(5)])

    data = {
        "messages": len(run),
        "laps": laps,
        "tokens": sum(widget.layouts.tokens),
        "window": WINDOW,
        "reserve_output": RESERVE,
        "target_seconds": TARGET,
        "build_seconds": build,
        "layout_seconds": layout_s,
        "html_seconds": html_s,
        "json_seconds": json_s,
        "html_bytes": len(html.encode()),
        "updates": {name: {"seconds": times, "in_policy": inside} for name, (times, inside) in raw.items()},
        "quick": quick,
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "widget.json").write_text(json.dumps(data, indent=1), encoding="utf-8")

    fast = [t for name, (times, _) in raw.items() if "summarise" not in name and "build_context" not in name
            and "re-counts" not in name for t in times]
    widget_share = [t - i for times, inside in raw.values() for t, i in zip(times, inside, strict=True)]
    return "\n".join([
        f"## {TITLE}",
        "",
        f"The run: {len(run)} messages, {laps} laps, {data['tokens']:,} tokens (the research transcript's "
        f"laps repeated); window {WINDOW:,} tokens, {RESERVE:,} reserved for the reply. An update is "
        "timed from setting a control to the new picture being in the widget, in the kernel's Python; "
        "\"in the policy\" is the part spent inside the policy function, \"the widget\" the rest "
        "(layout, HTML, reader, widget state).",
        "",
        measure.table(["update", "updates", "median", "p95", "max", "in the policy", "the widget", "under 100 ms"], rows),
        "",
        f"With ctxlab.fit and keep everything, every update: median {measure.seconds(measure.median(fast))}, "
        f"p95 {measure.seconds(_p95(fast))}, {measure.ratio(TARGET / _p95(fast))} under the "
        f"{measure.seconds(TARGET)} target at the 95th percentile. The widget's own share of an update, "
        f"whatever the policy: median {measure.seconds(measure.median(widget_share))}, p95 "
        f"{measure.seconds(_p95(widget_share))}. The summarising policies spend their time in the "
        "summariser (rendering and summarising hundreds of dropped messages on every call), and a "
        "policy that re-counts every message on each call (no `count=`) pays for the tokenizer again.",
        "",
        f"At the last lap ({len(widget.layouts.prompt(laps))} messages in the prompt) with ctxlab.fit: layout "
        f"{measure.seconds(layout_s)}, HTML {measure.seconds(html_s)} ({data['html_bytes'] / 1024:.0f} KB), "
        f"JSON encoding of it {measure.seconds(json_s)}. Making the widget (counting every message "
        f"once) took {measure.seconds(build)}.",
        "",
        "Raw timings: `widget.json`.",
    ])


if __name__ == "__main__":  # pragma: no cover
    print(main(Path(__file__).resolve().parent / "results"))
