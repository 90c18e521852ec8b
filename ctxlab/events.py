"""The decision log: every memory operation says what it did, and keeps what it took out.

An agent's context changes behind the model's back: a trim drops laps, a compaction replaces
them with a summary, a compression shrinks a tool result. Each of those writes one
:class:`MemoryEvent` to a :class:`MemoryLog`: what happened (``kind``), at which lap, the
tokens before and after, a sentence for a human, and the messages it removed or replaced, so
nothing is ever lost silently and any of it can be looked at or put back.

>>> log = MemoryLog()
>>> event = log.record("trim", lap=12, tokens_before=9_800, tokens_after=5_100,
...                    messages=[{"role": "tool", "tool_call_id": "c1", "content": "..."}],
...                    detail="dropped 1 turn group")
>>> event.saved, len(log), log.count("trim")
(4700, 1, 1)
>>> print(log.table())
lap  kind  before  after  saved  messages  detail
 12  trim   9,800  5,100  4,700         1  dropped 1 turn group
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError, ConfigTypeError

__all__ = ["EVENT_KINDS", "MemoryEvent", "MemoryLog"]

Message = Mapping[str, Any]

EVENT_KINDS = {
    "trim": "whole turn groups dropped to fit an allowance",
    "summarise": "dropped turn groups rolled up into the one summary message",
    "summary_failed": "the summariser failed; the dropped messages are kept in the event",
    "compress": "tool results shrunk or replaced by a reference",
    "small_talk": "old small talk dropped, without a summary (an eviction stage that is off by default)",
}
"""The kinds ctxlab's own operations write, with what each means. Other code may log other
kinds (any short lowercase word); these are the ones ctxlab promises."""


@dataclass(frozen=True)
class MemoryEvent:
    """One memory decision: what happened, when, what it cost or saved, what it took out.

    * ``kind``: what happened (see :data:`EVENT_KINDS`);
    * ``lap``: the lap it happened before (``None`` when unknown);
    * ``tokens_before`` / ``tokens_after``: the tokens of the messages the operation was given
      and of those it returned (each message counted as :func:`ctxlab.count_message` does);
    * ``messages``: the messages it dropped, summarised or replaced, unchanged, in order;
    * ``detail``: one sentence for a human;
    * ``data``: anything else worth keeping, e.g. ``{"summary": ...}`` or ``{"error": ...}``.

    >>> MemoryEvent("trim", lap=3, tokens_before=900, tokens_after=400).saved
    500
    """

    kind: str
    lap: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    messages: tuple[Message, ...] = ()
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise ConfigError(f"an event needs a kind such as 'trim' or 'summarise', got {self.kind!r}")
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))

    @property
    def saved(self) -> int:
        """Tokens the operation took out of the context (negative when it added some)."""
        return self.tokens_before - self.tokens_after


class MemoryLog:
    """An append-only list of :class:`MemoryEvent`, in the order they happened.

    Iterate over it, index it, ``filter`` it by kind or lap, get back every message a kind of
    event removed (``messages``), or print it as a table (``table``).

    >>> log = MemoryLog()
    >>> _ = log.record("trim", lap=5, tokens_before=1_000, tokens_after=600)
    >>> _ = log.record("summarise", lap=9, tokens_before=1_200, tokens_after=700)
    >>> [e.kind for e in log], [e.lap for e in log.filter("summarise")]
    (['trim', 'summarise'], [9])
    """

    def __init__(self, events: Iterable[MemoryEvent] = ()) -> None:
        self._events: list[MemoryEvent] = []
        for event in events:
            self.append(event)

    def append(self, event: MemoryEvent) -> MemoryEvent:
        """Add an event at the end and return it."""
        if not isinstance(event, MemoryEvent):
            raise ConfigTypeError(f"a MemoryLog holds MemoryEvent objects, got {type(event).__name__}")
        self._events.append(event)
        return event

    def record(
        self,
        kind: str,
        *,
        lap: int | None = None,
        tokens_before: int = 0,
        tokens_after: int = 0,
        messages: Iterable[Message] = (),
        detail: str = "",
        **data: Any,
    ) -> MemoryEvent:
        """Build a :class:`MemoryEvent` from these fields, append it and return it.

        Extra keyword arguments go to the event's ``data``.
        """
        return self.append(
            MemoryEvent(kind, lap, tokens_before, tokens_after, tuple(messages), detail, dict(data))
        )

    def __iter__(self) -> Iterator[MemoryEvent]:
        return iter(list(self._events))

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: int) -> MemoryEvent:
        return self._events[index]

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}={n}" for k, n in self.counts().items())
        return f"MemoryLog({len(self)} events{': ' + kinds if kinds else ''})"

    def filter(self, kind: str | Sequence[str] | None = None, *, lap: int | None = None) -> list[MemoryEvent]:
        """Events of this kind (or any of these kinds), at this lap when given, in order."""
        kinds = {kind} if isinstance(kind, str) else set(kind) if kind is not None else None
        return [
            e
            for e in self._events
            if (kinds is None or e.kind in kinds) and (lap is None or e.lap == lap)
        ]

    def count(self, kind: str | Sequence[str] | None = None) -> int:
        """How many events of this kind (or of any kind) were logged."""
        return len(self.filter(kind))

    def counts(self) -> dict[str, int]:
        """Events per kind, in the order each kind first appeared."""
        out: dict[str, int] = {}
        for event in self._events:
            out[event.kind] = out.get(event.kind, 0) + 1
        return out

    def messages(self, kind: str | Sequence[str] | None = None) -> list[Message]:
        """Every message that events of this kind (or of any kind) took out, in order."""
        return [m for e in self.filter(kind) for m in e.messages]

    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per event (for a DataFrame or a CSV writer)."""
        return [
            {
                "lap": e.lap,
                "kind": e.kind,
                "tokens_before": e.tokens_before,
                "tokens_after": e.tokens_after,
                "saved": e.saved,
                "messages": len(e.messages),
                "detail": e.detail,
            }
            for e in self._events
        ]

    def table(self, *, width: int = 100) -> str:
        """The log as a plain-text table, one line per event, details cut to fit ``width``."""
        header = ("lap", "kind", "before", "after", "saved", "messages", "detail")
        body = [
            (
                "-" if e.lap is None else str(e.lap),
                e.kind,
                f"{e.tokens_before:,}",
                f"{e.tokens_after:,}",
                f"{e.saved:,}",
                str(len(e.messages)),
                e.detail,
            )
            for e in self._events
        ]
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(6)]
        lines = []
        for row in [header, *body]:
            cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1])]
            cells += [row[i].rjust(widths[i]) for i in range(2, 6)]
            line = "  ".join(cells)
            room = max(width - len(line) - 2, 10)
            detail = row[6] if len(row[6]) <= room else row[6][: room - 3] + "..."
            lines.append(f"{line}  {detail}".rstrip())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()
