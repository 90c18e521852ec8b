"""A history that only grows, fitted lap after lap for the cost of what is new.

An agent appends a few messages per lap and fits the whole history into its allowance before
every model call. :func:`ctxlab.fit` starts from nothing each time: it validates, counts and
groups every message again, so each lap costs time in proportion to the whole history.
:class:`GrowingHistory` keeps what it learnt: each message is validated, counted and grouped
once, when it is appended, and :meth:`GrowingHistory.fit` finds the cut with a binary search.
It returns exactly what ``ctxlab.fit(history.messages, allowance, ...)`` returns.

>>> history = GrowingHistory()
>>> history.extend([{"role": "system", "content": "You investigate incidents."},
...                 {"role": "user", "content": "Why did the export fail?"}])
>>> for lap in range(1, 6):
...     history.append({"role": "assistant", "content": f"Checked hour {lap}: nothing.", "step": lap})
>>> kept, dropped = history.fit(40)
>>> [m.get("step") for m in kept], len(dropped)
([None, None, 4, 5], 3)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .errors import BudgetError, ConfigError, ConfigTypeError, MessageError
from .messages import MessageChecker
from .pins import PIN_TOOL
from .tokens import TokenCounter
from .trimming import pins_itself

__all__ = ["GrowingHistory", "MessageRuns"]

Message = Mapping[str, Any]


class MessageRuns(Sequence):
    """A read-only view of some runs of an append-only message list, in order, without copying.

    :meth:`GrowingHistory.fit` returns its ``kept`` and ``dropped`` as views, so that a lap
    costs nothing for the part of a long history it does not look at. A view iterates, indexes,
    slices (into a list) and compares equal to a list of the same messages; ``list(view)``
    copies it.

    >>> messages = [{"role": "user", "content": str(i)} for i in range(6)]
    >>> view = MessageRuns(messages, [(0, 1), (4, 6)])
    >>> len(view), [m["content"] for m in view], view[-1] is messages[5]
    (3, ['0', '4', '5'], True)
    >>> view == [messages[0], messages[4], messages[5]]
    True
    """

    __slots__ = ("_messages", "_runs", "_length")

    def __init__(self, messages: list[Message], runs: Iterable[tuple[int, int]]) -> None:
        self._messages = messages
        self._runs = [(a, b) for a, b in runs if b > a]
        self._length = sum(b - a for a, b in self._runs)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Message]:
        for a, b in self._runs:
            yield from self._messages[a:b]

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("MessageRuns index out of range")
        for a, b in self._runs:
            if index < b - a:
                return self._messages[a + index]
            index -= b - a
        raise IndexError("MessageRuns index out of range")  # pragma: no cover

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (MessageRuns, list, tuple)):
            return len(self) == len(other) and all(x is y or x == y for x, y in zip(self, other, strict=True))
        return NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))


class GrowingHistory(Sequence):
    """An append-only message history that validates, counts and groups each message once.

    ``count=`` gives the tokens one message adds (default: a :class:`ctxlab.TokenCounter` on
    ``cl100k_base``); ``pin_tool`` names the pin tool, as for :func:`ctxlab.fit`. ``append`` and ``extend`` raise :class:`ctxlab.MessageError`, naming the
    index, for a message that would make the history invalid, and then add nothing. A history
    may end with tool calls still waiting for their results (the agent is mid-lap); ``fit``
    refuses until they are answered, as a provider would.

    >>> history = GrowingHistory([{"role": "user", "content": "go"}])
    >>> history.append({"role": "tool", "tool_call_id": "x", "content": "r"})
    Traceback (most recent call last):
    ...
    ctxlab.errors.MessageError: message 1: tool result for call 'x' does not follow an assistant message that made that call; keep each tool result right after the assistant message whose tool_calls include its id
    >>> len(history), history.tokens
    (1, 5)
    """

    def __init__(
        self, messages: Iterable[Message] = (), *, count: Callable[[Message], int] | None = None,
        pin_tool: str | None = PIN_TOOL,
    ) -> None:
        self._count = count or TokenCounter().message
        self._pin_tool = pin_tool
        self._messages: list[Message] = []
        self._checker = MessageChecker()
        self._starts: list[int] = []  # index of the first message of each turn group
        self._group_tokens: list[int] = []
        self._pinned: list[int] = []  # numbers of the groups holding a pinned message, ascending
        self._pinned_set: set[int] = set()
        # _unpinned_prefix[g]: tokens of the unpinned groups before group g (one entry per group
        # and one more); kept up to date for every group but the last, which may still grow.
        self._unpinned_prefix: list[int] = [0]
        self._pinned_tokens = 0
        self._tokens = 0
        self._first_user_seen = False
        self._collecting = False  # the last group is an assistant's calls: results may join it
        self.extend(messages)

    # --- the sequence ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, index):  # type: ignore[override]
        return self._messages[index]

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    @property
    def messages(self) -> list[Message]:
        """A copy of the list of messages (the same dict objects), in order."""
        return list(self._messages)

    @property
    def tokens(self) -> int:
        """Tokens of all the messages (as ``count=`` says; without reply priming)."""
        return self._tokens

    # --- growing ----------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add one message (see :meth:`extend`)."""
        self.extend([message])

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages at the end: each is validated, counted and grouped once.

        Raises :class:`ctxlab.MessageError` naming the first bad message; nothing is added then.
        """
        batch = list(messages)
        if not batch:
            return
        trial = self._checker.fork()
        for offset, message in enumerate(batch):
            problems = trial.check(len(self._messages) + offset, message)
            if problems:
                index, problem = problems[0]
                raise MessageError(f"message {index}: {problem}", index=index)
        counts = [self._count(message) for message in batch]
        trial.commit()
        for message, tokens in zip(batch, counts, strict=True):
            self._add(message, tokens)

    def _add(self, message: Message, tokens: int) -> None:
        role = message.get("role")
        if not (role == "tool" and self._collecting):
            self._close_last_group()
            self._starts.append(len(self._messages))
            self._group_tokens.append(0)
            self._collecting = role == "assistant" and bool(message.get("tool_calls"))
        group = len(self._starts) - 1
        pinned = pins_itself(message, self._pin_tool)  # ctxlab.trimming.pinned_indices, one message at a time
        if role == "user" and not self._first_user_seen:
            pinned = self._first_user_seen = True
        if pinned and group not in self._pinned_set:
            self._pinned_set.add(group)
            self._pinned.append(group)
            self._pinned_tokens += self._group_tokens[group]
        if group in self._pinned_set:
            self._pinned_tokens += tokens
        self._group_tokens[group] += tokens
        self._tokens += tokens
        self._messages.append(message)

    def _close_last_group(self) -> None:
        """Record the last group in the unpinned prefix sums before a new group starts."""
        if self._starts:
            last = len(self._starts) - 1
            unpinned = 0 if last in self._pinned_set else self._group_tokens[last]
            self._unpinned_prefix.append(self._unpinned_prefix[-1] + unpinned)

    # --- fitting ----------------------------------------------------------------------------

    def fit(self, allowance: int, *, keep_recent: int = 1) -> tuple[Sequence[Message], Sequence[Message]]:
        """``(kept, dropped)``: the messages ``ctxlab.fit(self.messages, allowance, ...)`` returns,
        as read-only :class:`MessageRuns` views (``list(kept)`` copies one).

        Pins and the newest ``keep_recent`` groups are kept, then older groups newest first
        while they fit; the rest is dropped from the middle, whole groups only. The cost is a
        binary search plus building the two lists. Raises :class:`ctxlab.BudgetError` with the
        numbers when the pins and the newest groups alone exceed ``allowance``, and
        :class:`ctxlab.MessageError` while the last tool calls are still unanswered.
        """
        if isinstance(allowance, bool) or not isinstance(allowance, int):
            raise ConfigTypeError(f"allowance must be a whole number of tokens, got {allowance!r}")
        if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 1:
            raise ConfigError(f"keep_recent must be an int >= 1 (the newest group is always kept), got {keep_recent!r}")
        waiting = self._checker.finish()
        if waiting:
            index, problem = waiting[0]
            raise MessageError(f"message {index}: {problem}", index=index)
        if self.tokens <= allowance:
            return MessageRuns(self._messages, [(0, len(self._messages))]), MessageRuns(self._messages, [])

        groups = len(self._starts)
        if groups == 0:  # nothing to keep, and a negative allowance is still not met
            raise BudgetError(
                f"cannot fit: the allowance is {allowance} tokens; it must be at least 0",
                needed=0, available=allowance,
            )
        # prefix[g] (g < groups): tokens of the unpinned groups before g; the last group, which
        # may still grow, is added on its own.
        prefix = self._unpinned_prefix
        last = groups - 1
        last_unpinned = 0 if last in self._pinned_set else self._group_tokens[last]
        first_recent = max(0, groups - keep_recent)
        recent_unpinned = prefix[last] + last_unpinned - prefix[first_recent]
        needed = self._pinned_tokens + recent_unpinned
        if needed > allowance:
            recent = sum(1 for g in range(first_recent, groups) if g not in self._pinned_set)
            raise BudgetError(
                f"cannot fit: the pinned messages need {self._pinned_tokens} tokens and the newest "
                f"{recent} unpinned turn group(s) {recent_unpinned} more, {needed} in all, but the "
                f"allowance is {allowance} ({needed - allowance} short). Raise the allowance, lower "
                "keep_recent, unpin a message, or shrink the newest tool results (ctxlab.compress) "
                "before fitting.",
                needed=needed,
                available=allowance,
            )
        # ctxlab.fit walks the older unpinned groups newest first and stops at the first that
        # does not fit, so what it keeps of them is a contiguous run cut..first_recent-1, the
        # longest whose tokens prefix[first_recent] - prefix[cut] fit in the room: a bisection.
        room = allowance - needed
        cut = bisect_left(prefix, prefix[first_recent] - room, 0, first_recent + 1)
        start = self._starts[cut] if cut < groups else len(self._messages)
        kept: list[tuple[int, int]] = []
        dropped: list[tuple[int, int]] = []
        previous = 0
        for g in self._pinned[: bisect_right(self._pinned, cut - 1)]:
            begin = self._starts[g]
            end = self._starts[g + 1] if g + 1 < groups else len(self._messages)
            dropped.append((previous, begin))
            kept.append((begin, end))
            previous = end
        dropped.append((previous, start))
        kept.append((start, len(self._messages)))
        return MessageRuns(self._messages, kept), MessageRuns(self._messages, dropped)
