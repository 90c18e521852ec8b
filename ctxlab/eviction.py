"""The order in which the assembler takes things out of a prompt that is over its budget.

:func:`ctxlab.build_context` evicts in a fixed order, cheapest loss first, and stops as soon
as the prompt fits (:data:`EVICTION_ORDER`):

1. ``compress``: shrink oversized tool results (by age, :func:`ctxlab.compress_history`);
2. ``small_talk``: drop old small talk, short user or assistant messages with no tool call
   that nothing pins and that are not among the newest turns (:func:`small_talk`). This
   stage is OFF unless asked for (``small_talk_tokens=SMALL_TALK_MAX_TOKENS``), because it
   drops without a summary;
3. ``summarise``: roll older turn groups into the one summary (:func:`ctxlab.compact`);
4. ``trim``: drop the oldest turn groups without a summary, the last resort.

It never takes out the system prompt, the goal (the first user message), the scratchpad
(the active plan, added after eviction) or anything pinned: a constraint that must survive is
pinned (``"pinned": True``), so no stage can touch it.

Why the small-talk stage is off by default: length is all it looks at, and a short user
message may be a constraint ("Do not touch the payments module." is about a dozen tokens). Left
unpinned, such a message would be dropped outright, with nothing of it in the summary. Pin
every message that must survive, then turn the stage on with the suggested limit,
``ctxlab.MemoryPolicy(budget, small_talk_tokens=SMALL_TALK_MAX_TOKENS)``, the policy
``build_context`` and the ``Assembler`` take; ``small_talk_tokens=0``, the default, leaves it off.

>>> EVICTION_ORDER
('compress', 'small_talk', 'summarise', 'trim')
>>> small_talk([{"role": "user", "content": "Fix bug #412."},
...             {"role": "assistant", "content": "On it."},
...             {"role": "user", "content": "Thanks!"},
...             {"role": "assistant", "content": "Fixed."}])
[1, 2]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .tokens import count_message
from .trimming import pinned_indices, turn_group_spans

__all__ = ["EVICTION_ORDER", "SMALL_TALK_MAX_TOKENS", "small_talk", "small_talk_groups"]

Message = Mapping[str, Any]

EVICTION_ORDER = ("compress", "small_talk", "summarise", "trim")
"""The stages of eviction, in the order :func:`ctxlab.build_context` runs them."""

SMALL_TALK_MAX_TOKENS = 40
"""The longest message (in tokens, framing included) that counts as small talk: the default of
:func:`small_talk`, and the suggested ``small_talk_tokens`` to pass to
:func:`ctxlab.build_context` or :class:`ctxlab.Assembler` to turn their small-talk stage on
(it is off by default: a short user instruction may be a constraint, so pin those first)."""


def is_chatter(message: Message, tokens: int, max_tokens: int) -> bool:
    """A short user or assistant message with no tool call."""
    return message.get("role") in ("user", "assistant") and not message.get("tool_calls") and tokens <= max_tokens


def small_talk_groups(
    view: Sequence[Message], spans: Sequence[tuple[int, int]], pinned: set[int], *, keep_recent: int,
    count: Callable[[Message], int], max_tokens: int = SMALL_TALK_MAX_TOKENS,
) -> list[int]:
    """Numbers of the groups (``spans`` of ``view``) that are old small talk: every message in
    the group is chatter (:func:`is_chatter`), the group is not in ``pinned`` and not among the
    newest ``keep_recent`` groups.

    >>> view = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"},
    ...         {"role": "assistant", "content": "done"}]
    >>> small_talk_groups(view, [(0, 1), (1, 2), (2, 3)], {0}, keep_recent=1, count=count_message)
    [1]
    """
    old = range(max(0, len(spans) - max(keep_recent, 0)))
    return [
        g for g in old
        if g not in pinned and all(is_chatter(view[i], count(view[i]), max_tokens) for i in range(*spans[g]))
    ]


def small_talk(
    messages: Sequence[Message], *, keep_recent: int = 1, max_tokens: int = SMALL_TALK_MAX_TOKENS,
    count: Callable[[Message], int] | None = None,
) -> list[int]:
    """Indices of the old small talk in ``messages``, ascending: the messages the second stage
    of eviction drops.

    Small talk is a user or assistant message with no tool calls, at most ``max_tokens``
    tokens (:func:`ctxlab.count_message`), that is not pinned (system messages, the first user
    message and ``"pinned": True`` ones are: :func:`ctxlab.trimming.pinned_indices`) and not in one of
    the newest ``keep_recent`` turn groups. Tool results and the calls they answer never are.

    >>> small_talk([{"role": "system", "content": "s"}, {"role": "user", "content": "Fix #412."},
    ...             {"role": "assistant", "content": "Sure!"},
    ...             {"role": "user", "content": "Never touch payments.", "pinned": True},
    ...             {"role": "assistant", "content": "Done."}])
    [2]
    """
    count = count or count_message
    spans = turn_group_spans(messages)
    pins = pinned_indices(messages)
    pinned = {g for g, (a, b) in enumerate(spans) if any(i in pins for i in range(a, b))}
    groups = small_talk_groups(messages, spans, pinned, keep_recent=keep_recent, count=count, max_tokens=max_tokens)
    return [i for g in groups for i in range(*spans[g])]
