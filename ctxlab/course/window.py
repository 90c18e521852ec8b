"""The model of a context window at one lap: its segments and one block per message.

A :class:`WindowLayout` says how one prompt fills the window (system, tool schemas,
scratchpad, summary, history, free space, reserved output: :data:`SEGMENT_NAMES`) and what
became of each message (:class:`Block`: kept, dropped, pinned, summarised, compressed).
``ctxlab.course.layout`` computes them; ``ctxlab.course.layout_html`` draws them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..calls import call_parts

__all__ = ["SEGMENT_NAMES", "PREVIEW_CHARS", "Segment", "Block", "WindowLayout", "preview"]

Message = Mapping[str, Any]

SEGMENT_NAMES = (
    "system",
    "tool schemas",
    "scratchpad",
    "summary",
    "history",
    "free",
    "reserved output",
)
"""The parts of the window, in the order a prompt lays them out (static first, state last)."""

PREVIEW_CHARS = 280
"""How much of a message a block's preview shows before it is cut."""


@dataclass(frozen=True)
class Segment:
    """One part of the window and the tokens it takes.

    >>> Segment("history", 9_120)
    Segment(name='history', tokens=9120)
    """

    name: str
    tokens: int


@dataclass(frozen=True)
class Block:
    """One message of a prompt and what the policy did with it.

    ``index`` is its position in the prompt (``None`` for a message the policy added: a
    summary, a scratchpad, anything else it inserted). ``tokens`` is what it costs in the
    window now (its compressed size when compressed; what it would cost when dropped) and
    ``original_tokens`` what it cost as recorded. ``group`` numbers its turn group.

    >>> block = Block(index=3, role="tool", kind="message", tokens=900, original_tokens=900,
    ...               group=2, step=1, dropped=True)
    >>> block.state, block.marks
    ('dropped', ('dropped',))
    """

    index: int | None
    role: str
    kind: str  # "system", "message", "summary", "scratchpad" or "inserted"
    tokens: int
    original_tokens: int
    group: int | None
    step: int | None
    pinned: bool = False
    dropped: bool = False
    summarised: bool = False
    compressed: bool = False
    preview: str = ""

    @property
    def state(self) -> str:
        """One word for what happened: kept, dropped, summarised, compressed or the kind."""
        if self.summarised:
            return "summarised"
        if self.dropped:
            return "dropped"
        if self.compressed:
            return "compressed"
        if self.kind in ("summary", "scratchpad", "inserted"):
            return self.kind
        return "kept"

    @property
    def marks(self) -> tuple[str, ...]:
        """The marks the widget draws on this block."""
        names = ("pinned", "dropped", "summarised", "compressed")
        return tuple(name for name in names if getattr(self, name))


@dataclass(frozen=True)
class WindowLayout:
    """How one prompt fills the window, segment by segment and message by message.

    ``free`` is negative when the prompt and the reserved reply do not fit. ``problems`` lists
    what is wrong (over budget, a pin dropped, a tool pair split, a policy that raised);
    ``notes`` lists what is merely worth knowing. ``policy_status`` is ``"ok"``,
    ``"not implemented"``, ``"error"`` or ``"skipped"`` (the budget left nothing to run it on).

    >>> from ctxlab import ContextBudget
    >>> from ctxlab.course.layout import layout_window
    >>> view = layout_window([{"role": "system", "content": "Be brief."},
    ...                       {"role": "user", "content": "Hello!"}],
    ...                      ContextBudget(window=100, reserve_output=20, scratchpad_max=0))
    >>> [(s.name, s.tokens) for s in view.segments if s.tokens], view.free
    ([('system', 10), ('history', 6), ('free', 64), ('reserved output', 20)], 64)
    """

    window: int
    reserved_output: int
    segments: tuple[Segment, ...]
    blocks: tuple[Block, ...]
    allowance: int | None
    policy: str
    policy_status: str = "ok"
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    log: tuple[str, ...] = ()
    lap: int | None = None
    laps: int | None = None
    title: str | None = None
    scratchpad_max: int | None = None
    keep_recent: int | None = None

    def tokens(self, name: str) -> int:
        """Tokens of the segment called ``name`` (one of :data:`SEGMENT_NAMES`)."""
        for segment in self.segments:
            if segment.name == name:
                return segment.tokens
        raise KeyError(f"no segment named {name!r}; segments are: {', '.join(SEGMENT_NAMES)}")

    @property
    def used(self) -> int:
        """Tokens the prompt takes plus the reserved reply."""
        return sum(s.tokens for s in self.segments if s.name != "free")

    @property
    def free(self) -> int:
        """Tokens left over; negative when over budget."""
        return self.window - self.used

    @property
    def over_budget(self) -> bool:
        """True when the prompt and the reserved reply do not fit in the window."""
        return self.free < 0

    @property
    def prompt_tokens(self) -> int:
        """Tokens of the prompt as it would be sent (everything but free space and the reply)."""
        return self.used - self.reserved_output

    @property
    def kept_messages(self) -> int:
        """How many of the prompt's own messages are still in the window."""
        return sum(1 for b in self.blocks if b.index is not None and not b.dropped)

    @property
    def dropped_messages(self) -> int:
        """How many of the prompt's own messages were dropped."""
        return sum(1 for b in self.blocks if b.dropped)

    @property
    def dropped_tokens(self) -> int:
        """Tokens of the dropped messages."""
        return sum(b.original_tokens for b in self.blocks if b.dropped)

    def describe(self) -> str:
        """A few lines of plain text saying what the picture shows.

        >>> from ctxlab import ContextBudget
        >>> from ctxlab.course.layout import layout_window
        >>> print(layout_window([{"role": "user", "content": "Hello!"}],
        ...                     ContextBudget(window=50, reserve_output=10)).describe())
        Context window: 50 tokens; policy keep everything
          system 3 | history 6 | free 31 | reserved output 10
          prompt: 1 of 1 message kept, 0 dropped
        """
        head = f"Context window: {self.window:,} tokens"
        if self.title:
            head += f"; {self.title}"
        if self.lap is not None:
            head += f"; lap {self.lap} of {self.laps}"
        head += f"; policy {self.policy}"
        parts = " | ".join(
            f"{s.name} {max(s.tokens, 0):,}" for s in self.segments if s.tokens or s.name == "free"
        )
        own = self.kept_messages + self.dropped_messages
        lines = [
            head,
            f"  {parts}",
            f"  prompt: {self.kept_messages} of {own} message{'s' if own != 1 else ''} kept, "
            f"{self.dropped_messages} dropped"
            + (f" ({self.dropped_tokens:,} tokens)" if self.dropped_messages else ""),
        ]
        if self.over_budget:
            lines.append(f"  OVER BUDGET by {-self.free:,} tokens")
        lines += [f"  problem: {p}" for p in self.problems if not p.startswith("over budget")]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _text_of(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def preview(message: Message, limit: int = PREVIEW_CHARS) -> str:
    """The start of a message as a learner would want to see it: text, or the calls it makes."""
    parts = []
    text = _text_of(message)
    if text:
        parts.append(text)
    for call in message.get("tool_calls") or ():
        name, arguments = call_parts(call) or ("?", "")
        parts.append(f"calls {name}({arguments})")
    whole = "\n".join(parts)
    if len(whole) <= limit:
        return whole
    return whole[:limit].rstrip() + f"… (+{len(whole) - limit:,} more characters)"
