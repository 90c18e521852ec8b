"""Re-plan after a big change to the context, so working memory and the prompt agree again.

A trim or a compaction changes what the model can see of its own past: laps it planned from
are gone, or folded into a few lines of summary. The plan the model was following may now
rest on messages that are no longer there. So after a **big** change (one that took out at
least :data:`REPLAN_SHARE` of the history it was given) the agent asks the model, once, to
restate its plan from the scratchpad: the goal first, then the steps that remain, then the
calls not to retry. A small trim that drops one old lap does not call for it.

:func:`replan_after` is the hook an agent loop calls after assembling each prompt, with the
scratchpad and the memory decisions of that lap (``context.log`` from
:func:`ctxlab.build_context`, or any :class:`ctxlab.MemoryLog`); it returns the message to
append to the prompt, or ``None`` when no re-plan is due. In a loop::

    context = ctxlab.build_context(record, policy, scratchpad=pad, state=state)
    state = context.state
    messages = context.messages
    replan = ctxlab.replanning.replan_after(pad, context.log)  # None on most laps
    if replan is not None:
        messages = messages + [replan]  # this lap only: it is not added to the record
    reply = client.chat.completions.create(model=model, messages=messages)

>>> from ctxlab import MemoryLog, Scratchpad
>>> pad = Scratchpad(goal="Fix bug #412", remaining=["run the tests", "open the PR"],
...                  failed={"fetch_log {}": "http_404"})
>>> log = MemoryLog()
>>> _ = log.record("trim", lap=9, tokens_before=8_000, tokens_after=7_600)
>>> replan_after(pad, log) is None  # 5% taken out: a small trim
True
>>> _ = log.record("summarise", lap=12, tokens_before=9_000, tokens_after=3_000)
>>> print(replan_after(pad, log)["content"])
[Re-plan: older messages were just summarised or dropped. Restate your plan from this working memory before you act.]
GOAL: Fix bug #412
<BLANKLINE>
REMAINING:
- run the tests
- open the PR
<BLANKLINE>
DO NOT RETRY:
- fetch_log {}: http_404
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import ConfigError, ConfigTypeError
from .events import MemoryEvent
from .scratchpad import Scratchpad

__all__ = ["REPLAN_HEADER", "REPLAN_KINDS", "REPLAN_SHARE", "replan_due", "replan_message", "replan_after"]

REPLAN_HEADER = (
    "[Re-plan: older messages were just summarised or dropped. "
    "Restate your plan from this working memory before you act.]"
)
"""The first line of a re-plan message, so a reader (or a test) can tell it apart."""

REPLAN_KINDS = ("trim", "summarise", "summary_failed")
"""The memory events that take messages out of the history (see :data:`ctxlab.events.EVENT_KINDS`).
A ``compress`` event only shrinks tool results in place: every call and result is still
there, so it never calls for a re-plan."""

REPLAN_SHARE = 0.25
"""A change is big when it takes out at least this share of the tokens it was given. A
high/low-water trim (lesson 02) or a compaction (lesson 03) takes out far more; trimming just
enough on every lap takes out a few per cent, and re-planning then would cost a restated plan
on every lap for nothing."""


def _field(event: MemoryEvent | Mapping[str, Any], name: str, default: Any) -> Any:
    if isinstance(event, Mapping):
        return event.get(name, default)
    return getattr(event, name, default)


def replan_due(
    events: Iterable[MemoryEvent | Mapping[str, Any]], *, min_share: float = REPLAN_SHARE
) -> MemoryEvent | Mapping[str, Any] | None:
    """The first event that calls for a re-plan, or ``None`` when none does.

    ``events`` are :class:`ctxlab.events.MemoryEvent` objects (a :class:`ctxlab.MemoryLog`, or
    ``context.log``) or plain dicts with the same keys (``MemoryLog.rows()``). An event calls
    for a re-plan when its ``kind`` is one of :data:`REPLAN_KINDS` and it took out at least
    ``min_share`` of its ``tokens_before``. Every event is looked at, not only the last one
    (``build_context`` ends its log with an ``assemble`` event).

    >>> replan_due([{"kind": "compress", "tokens_before": 900, "tokens_after": 100}]) is None
    True
    >>> replan_due([{"kind": "trim", "tokens_before": 900, "tokens_after": 600}])["kind"]
    'trim'

    Raises :class:`ValueError` when ``min_share`` is not a fraction in (0, 1].
    """
    if isinstance(min_share, bool) or not isinstance(min_share, (int, float)) or not 0 < min_share <= 1:
        raise ConfigError(
            f"min_share must be a fraction in (0, 1] (0.25: a change that takes out a quarter of "
            f"the history calls for a re-plan), got {min_share!r}"
        )
    for event in events:
        if _field(event, "kind", None) not in REPLAN_KINDS:
            continue
        before = _field(event, "tokens_before", 0) or 0
        after = _field(event, "tokens_after", 0) or 0
        if before > 0 and before - after >= min_share * before:
            return event
    return None


def replan_message(pad: Scratchpad) -> dict[str, Any]:
    """The message that asks the model to restate its plan from ``pad`` (role ``user``).

    Its content is :data:`REPLAN_HEADER`, then ``GOAL: <goal>``, then the ``REMAINING`` steps
    in order (next step first), the ``DO NOT RETRY`` lines and the ``RETRY LATER`` lines, each
    section after a blank line and left out when empty. Facts and DONE lines stay in the scratchpad message: this one is
    short on purpose, the plan and its limits. Call it directly at a phase boundary too (before
    a long sub-task, or after one), where no memory event says the context changed.

    >>> replan_message(Scratchpad(goal="g"))["content"].splitlines()[1]
    'GOAL: g'
    """
    if not isinstance(pad, Scratchpad):
        raise ConfigTypeError(f"replan_message needs a ctxlab.Scratchpad, got {type(pad).__name__}")
    parts = [f"{REPLAN_HEADER}\nGOAL: {pad.goal.strip()}"]
    for section, heading in (("remaining", "REMAINING"), ("failed", "DO NOT RETRY"), ("retry_later", "RETRY LATER")):
        lines = pad.lines(section)
        if lines:
            parts.append(f"{heading}:\n" + "\n".join(lines))
    return {"role": "user", "content": "\n\n".join(parts)}


def replan_after(
    pad: Scratchpad, events: Iterable[MemoryEvent | Mapping[str, Any]], *, min_share: float = REPLAN_SHARE
) -> dict[str, Any] | None:
    """The re-plan message to add to this lap's prompt, or ``None`` when no re-plan is due.

    ``events`` are the memory decisions made while assembling this prompt (``context.log``):
    a re-plan is due when one of them is a big change (:func:`replan_due`), and the message is
    :func:`replan_message` of ``pad``. Pass only this lap's events (``log.filter(lap=lap)``
    for a log that spans the run), or every lap after a big change would re-plan again.

    >>> from ctxlab import Scratchpad
    >>> replan_after(Scratchpad(goal="g"), [{"kind": "trim", "tokens_before": 100, "tokens_after": 90}]) is None
    True
    """
    if replan_due(events, min_share=min_share) is None:
        return None
    return replan_message(pad)
