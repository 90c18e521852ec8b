"""Trimming a history to a token allowance without breaking it.

Three rules make trimming safe:

* **Turn groups.** An assistant message that calls tools and the tool results answering it are
  one unit: keep all of it or none of it, or the provider rejects the request.
* **Pins.** System messages, the first user message (the task), any message marked
  ``"pinned": True`` and any call of the pin tool (:mod:`ctxlab.pins`) are never dropped.
* **Drop from the middle.** Keep the pins and the newest groups; drop whole groups between them.

>>> history = [
...     {"role": "system", "content": "You investigate incidents."},
...     {"role": "user", "content": "Why did the export fail?"},
...     {"role": "assistant", "content": "Checking 01:00.", "step": 1},
...     {"role": "assistant", "content": "Checking 02:00.", "step": 2},
... ]
>>> kept, dropped = fit(history, allowance=30)
>>> [m["content"] for m in dropped]
['Checking 01:00.']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import BudgetError, ConfigError, ConfigTypeError
from .messages import validate_messages
from .pins import PIN_TOOL, is_pin_call
from .tokens import TokenCounter

__all__ = ["is_pinned", "pins_itself", "pinned_indices", "turn_groups", "turn_group_spans", "pairs_ok", "fit"]

Message = Mapping[str, Any]

PINNED_ROLES = ("system", "developer")


def pins_itself(message: Message, pin_tool: str | None = PIN_TOOL) -> bool:
    """True when ``message`` is pinned wherever it stands in the record: a system or developer
    message, a message marked ``"pinned": True``, or a call of the pin tool ``pin_tool``
    (:data:`ctxlab.pins.PIN_TOOL`) not marked ``"pinned": False``. The rest of the rule (the first
    user message) depends on position: :func:`pinned_indices`.

    >>> call = {"id": "p1", "type": "function", "function": {"name": "pin", "arguments": "{}"}}
    >>> pins_itself({"role": "assistant", "content": None, "tool_calls": [call]})
    True
    >>> pins_itself({"role": "assistant", "content": None, "tool_calls": [call], "pinned": False})
    False
    """
    mark = message.get("pinned")
    if mark is True or message.get("role") in PINNED_ROLES:
        return True
    # the pin tool's rule, cheapest test first: fit runs this on every message of the record
    return mark is None and pin_tool is not None and bool(message.get("tool_calls")) and is_pin_call(message, pin_tool)


def pinned_indices(messages: Sequence[Message], *, pin_tool: str | None = PIN_TOOL) -> set[int]:
    """Indices of the messages that must never be dropped: the one rule of what is pinned.

    System (and developer) messages, the first user message (the task), any message marked
    ``"pinned": True``, and any assistant message that calls the pin tool ``pin_tool``
    (:data:`ctxlab.pins.PIN_TOOL`; ``None`` recognises none), unless it is marked ``"pinned": False``
    (:mod:`ctxlab.pins`). Whoever keeps a pinned message keeps its whole turn group: a pin
    call's results are kept with it.

    >>> sorted(pinned_indices([{"role": "system", "content": "s"}, {"role": "user", "content": "goal"},
    ...     {"role": "user", "content": "later"}, {"role": "user", "content": "rule", "pinned": True}]))
    [0, 1, 3]
    >>> call = {"id": "p1", "type": "function", "function": {"name": "pin", "arguments": '{"text": "No refunds."}'}}
    >>> sorted(pinned_indices([{"role": "user", "content": "goal"},
    ...     {"role": "assistant", "content": None, "tool_calls": [call]},
    ...     {"role": "tool", "tool_call_id": "p1", "content": "pinned"}]))
    [0, 1]
    """
    pins: set[int] = set()
    first_user_seen = False
    for index, message in enumerate(messages):
        role = message.get("role")
        if pins_itself(message, pin_tool):
            pins.add(index)
        if role == "user" and not first_user_seen:
            pins.add(index)
            first_user_seen = True
    return pins


def is_pinned(messages: Sequence[Message], index: int, *, pin_tool: str | None = PIN_TOOL) -> bool:
    """True when ``messages[index]`` must never be dropped (see :func:`pinned_indices`)."""
    return index in pinned_indices(messages, pin_tool=pin_tool)


def turn_group_spans(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """``(start, stop)`` index ranges of the turn groups of ``messages``, in order.

    >>> turn_group_spans([{"role": "user", "content": "go"},
    ...     {"role": "assistant", "content": None, "tool_calls": [
    ...         {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
    ...         {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "a", "content": "1"},
    ...     {"role": "tool", "tool_call_id": "b", "content": "2"}])
    [(0, 1), (1, 4)]
    """
    spans: list[tuple[int, int]] = []
    start = 0
    collecting = False  # True while tool results may join the current group
    for index, message in enumerate(messages):
        if message.get("role") == "tool" and collecting:
            continue
        if index > start:
            spans.append((start, index))
        start = index
        collecting = message.get("role") == "assistant" and bool(message.get("tool_calls"))
    if len(messages) > start:
        spans.append((start, len(messages)))
    return spans


def turn_groups(messages: Sequence[Message]) -> list[list[Message]]:
    """Split ``messages`` into the units trimming must keep whole.

    An assistant message with ``tool_calls`` and all the tool results after it (parallel calls
    included) form one group; every other message is a group of its own.

    >>> [len(g) for g in turn_groups([{"role": "user", "content": "go"},
    ...     {"role": "assistant", "content": None, "tool_calls": [
    ...         {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "a", "content": "1"},
    ...     {"role": "assistant", "content": "done"}])]
    [1, 2, 1]
    """
    return [list(messages[start:stop]) for start, stop in turn_group_spans(messages)]


def pairs_ok(messages: Sequence[Message]) -> bool:
    """True when every tool result answers a call of the assistant message just before its
    group and every call is answered exactly once: what providers require of a request. The
    calls of one assistant message must have different ids (as :func:`ctxlab.validate_messages`
    requires): a message listing one id twice is malformed, however many results follow.

    >>> call = {"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    >>> result = {"role": "tool", "tool_call_id": "a", "content": "1"}
    >>> pairs_ok([call, result]), pairs_ok([result]), pairs_ok([call])
    (True, False, False)
    >>> pairs_ok([{**call, "tool_calls": call["tool_calls"] * 2}, result])
    False
    """
    open_ids: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_ids or call_id in answered:
                return False
            answered.add(call_id)
            continue
        if answered != open_ids:
            return False
        open_ids, answered = set(), set()
        if message.get("role") == "assistant" and message.get("tool_calls"):
            ids = [call.get("id") for call in message["tool_calls"]]
            open_ids = set(ids)
            if len(open_ids) < len(ids):
                return False  # one id listed twice: no set of results can answer both calls
    return answered == open_ids


def _spans_and_pinned_groups(
    messages: Sequence[Message], pin_tool: str | None = PIN_TOOL,
) -> tuple[list[tuple[int, int]], set[int]]:
    """:func:`turn_group_spans` and the numbers of the groups holding a pinned message
    (:func:`pinned_indices`), in one pass over ``messages``."""
    spans: list[tuple[int, int]] = []
    pinned_groups: set[int] = set()
    start = 0
    collecting = False  # True while tool results may join the current group
    first_user_seen = False
    for index, message in enumerate(messages):
        role = message.get("role")
        calls = False  # an assistant message with tool calls: it may call the pin tool
        if not (role == "tool" and collecting):  # this message starts a new group
            if index > start:
                spans.append((start, index))
            start = index
            calls = collecting = role == "assistant" and bool(message.get("tool_calls"))
        mark = message.get("pinned")
        # pins_itself, inlined (fit runs this on every message of the record)
        if (mark is True or role in PINNED_ROLES or (role == "user" and not first_user_seen)
                or (calls and mark is None and is_pin_call(message, pin_tool))):
            pinned_groups.add(len(spans))  # the group that starts at ``start``
        if role == "user":
            first_user_seen = True
    if len(messages) > start:
        spans.append((start, len(messages)))
    return spans, pinned_groups


def fit(
    messages: Sequence[Message],
    allowance: int,
    *,
    keep_recent: int = 1,
    count: Callable[[Message], int] | None = None,
    pin_tool: str | None = PIN_TOOL,
) -> tuple[list[Message], list[Message]]:
    """Keep what fits in ``allowance`` tokens; return ``(kept, dropped)``.

    * every pinned message is kept (:func:`pinned_indices`, with ``pin_tool``), with its whole
      turn group: a call of the pin tool is kept with its results;
    * the newest ``keep_recent`` turn groups are kept;
    * then older groups are added newest first while they fit; the first that does not fit
      and everything older than it (apart from pins) are dropped: the cut is in the middle;
    * a turn group is never split, order is preserved, and ``kept`` and ``dropped`` partition
      ``messages`` (the same dict objects, not copies);
    * each message is counted at most once, with ``count`` (tokens one message adds, default a
      fresh :class:`ctxlab.TokenCounter` on ``cl100k_base``), and only when needed: the pins,
      the newest groups, then older groups newest first until the first that does not fit,
      where the walk stops; nothing older is counted. ``allowance`` is compared with
      the sum of those counts; the 3 tokens of reply priming belong to the fixed part of the
      budget.

    Raises :class:`ctxlab.MessageError` for a malformed history and :class:`ctxlab.BudgetError`,
    with the numbers, when the pins and the newest groups alone exceed ``allowance``.

    >>> msgs = [{"role": "user", "content": "goal"}, {"role": "assistant", "content": "a" * 40},
    ...         {"role": "assistant", "content": "b"}]
    >>> kept, dropped = fit(msgs, allowance=16)
    >>> [m["content"][:1] for m in kept], [m["content"][:1] for m in dropped]
    (['g', 'b'], ['a'])
    """
    if isinstance(allowance, bool) or not isinstance(allowance, int):
        raise ConfigTypeError(f"allowance must be a whole number of tokens, got {allowance!r}")
    if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 1:
        raise ConfigError(f"keep_recent must be an int >= 1 (the newest group is always kept), got {keep_recent!r}")
    validate_messages(messages)
    count = count or TokenCounter().message
    counter = getattr(count, "__self__", None)
    if isinstance(counter, TokenCounter) and getattr(count, "__func__", None) is TokenCounter.message:
        count_all = counter._each  # the same counts, without a call per message
    else:
        def count_all(group: Sequence[Message]) -> list[int]:
            return [count(message) for message in group]

    spans, pinned_groups = _spans_and_pinned_groups(messages, pin_tool)
    known: dict[int, int] = {}

    def cost(g: int) -> int:  # each group is counted when first needed, once
        if g not in known:
            start, stop = spans[g]
            known[g] = sum(count_all(messages[start:stop]))
        return known[g]

    recent_groups = set(range(max(0, len(spans) - keep_recent), len(spans)))
    required = pinned_groups | recent_groups
    pinned_cost = sum(cost(g) for g in pinned_groups)
    needed = pinned_cost + sum(cost(g) for g in recent_groups - pinned_groups)
    if needed > allowance:
        recent_cost = needed - pinned_cost
        raise BudgetError(
            f"cannot fit: the pinned messages need {pinned_cost} tokens and the newest "
            f"{len(recent_groups - pinned_groups)} unpinned turn group(s) {recent_cost} more, "
            f"{needed} in all, but the allowance is {allowance} ({needed - allowance} short). "
            "Raise the allowance, lower keep_recent, unpin a message, or shrink the newest "
            "tool results (ctxlab.compress) before fitting.",
            needed=needed,
            available=allowance,
        )

    # Newest first, stopping at the first group that does not fit: only the pins, what is kept
    # and that one group are ever counted, so a long history costs what fits, not its length.
    keep = set(required)
    room = allowance - needed
    for g in range(len(spans) - 1, -1, -1):
        if g in keep:
            continue
        if cost(g) > room:
            break
        keep.add(g)
        room -= cost(g)
    else:
        return list(messages), []

    kept: list[Message] = []
    dropped: list[Message] = []
    for g, (start, stop) in enumerate(spans):
        (kept if g in keep else dropped).extend(messages[start:stop])
    return kept, dropped
