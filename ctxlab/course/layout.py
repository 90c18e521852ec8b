"""What the context window holds at each lap: the model behind the context-layout widget.

:func:`layout_window` applies a memory policy to one prompt and describes the result in two
ways: the window split into segments (system, tool schemas, scratchpad, summary, kept history,
free space, reserved output), and one block per message saying what became of it (kept,
dropped, pinned, summarised, compressed). :class:`TranscriptLayout` does the same lap after lap
for a whole transcript and counts every message once, so stepping through a long run stays fast.
Nothing here imports a display library: ``ctxlab.course.layout_html`` draws a layout as HTML and
``ctxlab.course.widgets`` adds the controls. The model itself (:class:`WindowLayout`, its
segments and blocks) is ``ctxlab.course.window``, and running a policy of any kind on a prompt
is ``ctxlab.course.layout_policies``; their names read from here too.

A **policy** is any callable ``policy(history, allowance, **options)``:

* ``history`` is the prompt without its leading system messages (the first user message, the
  task, comes first and is pinned); ``allowance`` is the tokens history may take, from
  ``budget.history_allowance(...)``.
* It returns ``(kept, dropped)``, as :func:`ctxlab.fit` does, or the assembled context: a list
  of messages, a ``(messages, log)`` pair, or an object or mapping with ``messages`` (and,
  optionally, ``log``), as a ``build_context``-style assembler does.
* Options are passed by name, only to a policy whose signature names them: ``keep_recent``,
  ``count`` (tokens of one message, answered from the replay's counts), ``budget``, ``tools``,
  ``step`` (the lap's step number), ``prompt`` (the whole prompt, system messages included),
  ``system`` (the leading system messages) and ``scratchpad`` (as given to the layout).
  :func:`assembler` wraps a ``build_context``-style function as such a policy.
* Or it is one of the policies of :mod:`ctxlab.policies` (``ctxlab.KeepEverything()``,
  ``ctxlab.TruncateOldest()``, ...), the objects :func:`ctxlab.replay` steps through a run: it
  is reset and called as ``policy(prompt, lap=step, budget=budget, tools=tools)``, so each lap
  is assembled afresh. No policy at all (``policy=None``) keeps everything.

Names (one per idea): a *replay* is :func:`ctxlab.replay`, which measures a policy over a run;
the layouts of a run lap by lap are a :class:`TranscriptLayout` (formerly ``WindowReplay``,
deprecated); keeping everything is the policy ``ctxlab.KeepEverything()`` (the function
``keep_everything`` is deprecated).

>>> import ctxlab
>>> layouts = TranscriptLayout(ctxlab.course.transcripts.load_transcript("research"), tools=ctxlab.course.transcripts.load_tools("research"))
>>> budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=1_000)
>>> view = layouts.layout(40, budget, policy=ctxlab.fit)
>>> [segment.name for segment in view.segments]
['system', 'tool schemas', 'scratchpad', 'summary', 'history', 'free', 'reserved output']
>>> view.over_budget, view.kept_messages + view.dropped_messages == len(layouts.prompt(40))
(False, True)
>>> layouts.layout(40, budget, policy=ctxlab.KeepEverything()).over_budget
True
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from .._retired import retired
from ..budget import ContextBudget, model_calls  # noqa: F401 - ContextBudget: the doctests use it
from ..messages import validate_messages
from ..tokens import COURSE_KEYS, REPLY_PRIMING, TokenCounter, count_tools
from ..trimming import PINNED_ROLES, pairs_ok, pinned_indices, turn_group_spans

# the names of the model and of running a policy are read from here too (ctxlab.course.widgets,
# the lessons, and ctxlab.keep_everything's retirement)
from .layout_policies import (  # noqa: F401
    POLICY_OPTIONS,
    _accepted,
    _allowance,
    _keep_everything,
    _log_line,
    _Outcome,
    _read_result,
    _run_policy,
    assembler,
    policy_label,
)
from .window import PREVIEW_CHARS, SEGMENT_NAMES, Block, Segment, WindowLayout, preview  # noqa: F401

__all__ = [
    "SEGMENT_NAMES",
    "POLICY_OPTIONS",
    "Segment",
    "Block",
    "WindowLayout",
    "TranscriptLayout",
    "layout_window",
    "policy_label",
    "assembler",
    "preview",
]

Message = Mapping[str, Any]

# --- recognising what an assembler added --------------------------------------------------------

# How to tell what an assembler added: the modules that make summaries and scratchpads say how
# to recognise their messages. Looked up lazily, so this module works without them.
_RECOGNISERS = {
    "summary": ("ctxlab.summarising", "is_summary"),
    "scratchpad": ("ctxlab.scratchpad", "is_scratchpad_message"),
}


@functools.cache
def _recognisers() -> dict[str, Callable[[Message], bool]]:
    found = {}
    for kind, (module_name, name) in _RECOGNISERS.items():
        try:
            test = getattr(importlib.import_module(module_name), name)
        except (ImportError, AttributeError):
            continue
        found[kind] = test
    return found


def _fields(message: Message) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in COURSE_KEYS}


def _same(one: Message, other: Message) -> bool:
    """True when two messages say the same thing (course keys aside)."""
    return one is other or _fields(one) == _fields(other)


def _quick_key(message: Message) -> tuple:
    """Cheap to compute, and equal for any two messages that are :func:`_same`."""
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    calls = message.get("tool_calls")
    first = calls[0].get("id") if isinstance(calls, list) and calls and isinstance(calls[0], Mapping) else None
    return (message.get("role"), message.get("tool_call_id"), first, len(text), text[:48])


# --- the layout itself --------------------------------------------------------------------------


@dataclass
class _Prompt:
    """A prompt with everything about its messages that does not depend on the policy."""

    messages: list[Message]
    tokens: Sequence[int]
    groups: Sequence[int]
    pins: set[int]
    step: int | None
    previews: Callable[[int], str]


@dataclass
class _Match:
    """Which prompt message each message of the policy's context is, and what it added."""

    kept: dict[int, Message] = field(default_factory=dict)  # prompt index -> what stands in its place
    order: list[int] = field(default_factory=list)  # prompt indices in the context's order
    added: list[tuple[float, Message]] = field(default_factory=list)  # (strip position, message)


def _group_ids(messages: Sequence[Message]) -> list[int]:
    ids = [0] * len(messages)
    for number, (start, stop) in enumerate(turn_group_spans(messages)):
        for index in range(start, stop):
            ids[index] = number
    return ids


def _leading_system(messages: Sequence[Message]) -> int:
    count = 0
    for message in messages:
        if message.get("role") not in PINNED_ROLES:
            break
        count += 1
    return count


def _scratchpad_message(scratchpad: Any, prompt: _Prompt, cap: int) -> Message | None:
    """The scratchpad as a message: from text, a message, a callable, or a ``Scratchpad``."""
    if scratchpad is None:
        return None
    if not callable(scratchpad):  # a ctxlab.Scratchpad renders its own message; others, text
        scratchpad = getattr(scratchpad, "message", None) or getattr(scratchpad, "render", None) or scratchpad
    if callable(scratchpad):
        offered = {"max_tokens": cap, "step": prompt.step, "prompt": prompt.messages}
        accepted = _accepted(scratchpad, tuple(offered))
        scratchpad = scratchpad(**{k: v for k, v in offered.items() if k in accepted})
    if isinstance(scratchpad, Mapping):
        return scratchpad
    if isinstance(scratchpad, str):
        return {"role": "user", "content": scratchpad}
    raise TypeError(
        "scratchpad must be text, a message, a ctxlab.Scratchpad or a callable returning text "
        f"or a message; got {type(scratchpad).__name__}"
    )


def _call_key(message: Message) -> tuple | None:
    """What a tool result or a tool-calling message answers or asks, whatever its content."""
    if message.get("role") == "tool":
        return ("result", message.get("tool_call_id"))
    if message.get("tool_calls"):
        return ("calls", tuple(c.get("id") for c in message["tool_calls"] if isinstance(c, Mapping)))
    return None


def _match(messages: Sequence[Message], context: Sequence[Message]) -> _Match:
    """Find each prompt message in the policy's context: the same dict, an equal copy, or a
    replacement answering the same tool call (compressed). Anything else was added."""
    by_id = {id(m): i for i, m in enumerate(messages)}
    by_key: dict[tuple, list[int]] | None = None
    by_call: dict[tuple, int] | None = None
    found = _Match()

    def equal_copy(message: Message) -> int | None:
        nonlocal by_key
        if by_key is None:
            by_key = {}
            for i, m in enumerate(messages):
                by_key.setdefault(_quick_key(m), []).append(i)
        candidates = by_key.get(_quick_key(message), ())
        return next((i for i in candidates if i not in found.kept and _same(messages[i], message)), None)

    def replacement(message: Message) -> int | None:
        nonlocal by_call
        if by_call is None:
            by_call = {}
            for i, m in enumerate(messages):
                key = _call_key(m)
                if key is not None:
                    by_call.setdefault(key, i)
        key = _call_key(message)
        index = by_call.get(key) if key is not None else None
        return index if index is not None and index not in found.kept else None

    pending: list[Message] = []
    for message in context:
        index = by_id.get(id(message))
        if index is None or index in found.kept:
            index = equal_copy(message)
        if index is None:
            index = replacement(message)
        if index is None:
            pending.append(message)
            continue
        found.kept[index] = message
        found.order.append(index)
        found.added.extend((index - 0.5, m) for m in pending)  # just before the next one found
        pending = []
    found.added.extend((len(messages) - 0.5, m) for m in pending)
    return found


def _kind_of_added(message: Message, pad_message: Message | None) -> str:
    recognise = _recognisers()
    if "summary" in recognise and recognise["summary"](message):
        return "summary"
    if pad_message is not None and (message is pad_message or message == pad_message):
        return "scratchpad"
    if "scratchpad" in recognise and recognise["scratchpad"](message):
        return "scratchpad"
    return "inserted"


def _check(
    messages: Sequence[Message],
    head: int,
    found: _Match,
    declared: list[Message] | None,
    pins: set[int],
    label: str,
    problems: list[str],
) -> None:
    """What a learner's policy may get wrong: order, lost messages, dropped pins, split pairs."""
    if any(b < a for a, b in pairwise(found.order)):
        problems.append(f"{label} changed the order of the messages; keep them in the order they happened")
    if declared is not None:
        declared_ids = {id(m) for m in declared}
        lost = [i for i in range(head, len(messages)) if i not in found.kept and id(messages[i]) not in declared_ids]
        if lost:  # a dropped copy counts, and so does a changed one answering the same call
            declared_keys: dict[tuple, list[Message]] = {}
            for m in declared:
                declared_keys.setdefault(_quick_key(m), []).append(m)
            calls = {_call_key(m) for m in declared} - {None}
            lost = [
                i for i in lost
                if _call_key(messages[i]) not in calls
                and not any(_same(messages[i], m) for m in declared_keys.get(_quick_key(messages[i]), ()))
            ]
        if lost:
            problems.append(
                f"{label} lost {len(lost)} message(s), neither kept nor dropped (the first is "
                f"message {lost[0]}); kept and dropped must together hold every message"
            )
    dropped_pins = sorted(i for i in pins if i >= head and i not in found.kept)
    if dropped_pins:
        first = dropped_pins[0]
        problems.append(
            f"{label} dropped {len(dropped_pins)} pinned message(s), the first is message {first} "
            f"(a {messages[first].get('role')} message); pinned messages must always be kept"
        )
    kept_history = [found.kept[i] for i in sorted(found.kept) if i >= head]
    if not pairs_ok(kept_history):
        problems.append(
            f"the history {label} kept splits a tool call from its result: the API would reject "
            "this prompt, so keep or drop each turn group whole"
        )


def _layout(
    prompt: _Prompt,
    budget: Any,
    *,
    tools_tokens: int,
    tools: Sequence[Mapping[str, Any]] | None,
    policy: Callable[..., Any] | None,
    keep_recent: int,
    scratchpad: Any,
    count: Callable[[Message], int],
    lap: int | None = None,
    laps: int | None = None,
    title: str | None = None,
    policy_name: str | None = None,
) -> WindowLayout:
    messages = prompt.messages
    label = policy_name or policy_label(policy)
    problems: list[str] = []
    notes: list[str] = []
    window, reserved = int(budget.window), int(budget.reserve_output)
    cap = int(getattr(budget, "scratchpad_max", 0) or 0)

    head = _leading_system(messages)
    system_tokens = REPLY_PRIMING + sum(prompt.tokens[i] for i in range(head))
    try:
        pad_message = _scratchpad_message(scratchpad, prompt, cap)
    except NotImplementedError:
        pad_message = None
        notes.append("the scratchpad is not written yet (NotImplementedError); the window is shown without it")
    except Exception as err:  # a learner's scratchpad: say what went wrong, lay out the rest
        pad_message = None
        problems.append(f"the scratchpad could not be rendered: {type(err).__name__}: {err}")
    pad_tokens = count(pad_message) if pad_message is not None else 0
    allowance = _allowance(budget, system_tokens + tools_tokens, pad_tokens, problems, notes)

    history = list(messages[head:])
    if allowance is None:
        outcome, status = _Outcome(history, []), "skipped"
        notes.append(f"{label} was not run: the budget leaves no allowance for history")
    else:
        offered = {
            "keep_recent": keep_recent, "count": count, "budget": budget, "tools": list(tools or ()),
            "step": prompt.step, "prompt": list(messages), "system": list(messages[:head]),
            "scratchpad": scratchpad,
        }
        outcome, status = _run_policy(policy, label, history, allowance, offered, problems, notes)

    found = _match(messages, outcome.context)
    _check(messages, head, found, outcome.dropped, prompt.pins, label, problems)
    for i in range(head):  # the policy never saw the system prompt: it stays, whatever it returned
        found.kept.setdefault(i, messages[i])

    added = [(position, m, _kind_of_added(m, pad_message)) for position, m in found.added]
    if pad_message is not None and not any(kind == "scratchpad" for _, _, kind in added):
        added.append((len(messages) + 0.5, pad_message, "scratchpad"))  # working memory goes last
    summarised = any(kind == "summary" for _, _, kind in added)

    placed: list[tuple[float, Block]] = []
    tokens = {"scratchpad": 0, "summary": 0, "history": 0}
    for i, message in enumerate(messages):
        now = found.kept.get(i)
        compressed = now is not None and not _same(now, message)
        size = count(now) if compressed else prompt.tokens[i]
        if now is not None and i >= head:
            tokens["history"] += size
        placed.append((i, Block(
            index=i, role=str(message.get("role", "?")), kind="system" if i < head else "message",
            tokens=size, original_tokens=prompt.tokens[i], group=prompt.groups[i],
            step=message.get("step"), pinned=i in prompt.pins, dropped=now is None,
            summarised=now is None and summarised, compressed=compressed,
            preview=preview(now) if compressed else prompt.previews(i),
        )))
    for position, message, kind in added:
        size = count(message)
        tokens["history" if kind == "inserted" else kind] += size
        placed.append((position, Block(
            index=None, role=str(message.get("role", "?")), kind=kind, tokens=size,
            original_tokens=size, group=None, step=message.get("step"),
            pinned=message.get("pinned") is True, preview=preview(message),
        )))
    placed.sort(key=lambda item: item[0])

    segments = (
        Segment("system", system_tokens),
        Segment("tool schemas", tools_tokens),
        Segment("scratchpad", tokens["scratchpad"]),
        Segment("summary", tokens["summary"]),
        Segment("history", tokens["history"]),
        Segment("free", 0),
        Segment("reserved output", reserved),
    )
    free = window - sum(s.tokens for s in segments)
    segments = tuple(Segment("free", free) if s.name == "free" else s for s in segments)
    if free < 0:
        problems.insert(0, (
            f"over budget by {-free:,} tokens: the prompt and the reserved reply need "
            f"{window - free:,} tokens, the window holds {window:,}"
        ))
    if pad_message is not None and tokens["scratchpad"] > cap and allowance is not None:  # a budget that let it pass
        problems.append(f"the scratchpad takes {tokens['scratchpad']:,} tokens, over its cap of {cap:,}")
    return WindowLayout(
        window=window, reserved_output=reserved, segments=segments,
        blocks=tuple(block for _, block in placed), allowance=allowance, policy=label,
        policy_status=status, problems=tuple(problems), notes=tuple(notes),
        log=tuple(_log_line(entry) for entry in outcome.log), lap=lap, laps=laps, title=title,
        scratchpad_max=cap if pad_message is not None else None, keep_recent=keep_recent,
    )


def _counter_for(tokens: Mapping[int, int], counter: TokenCounter) -> Callable[[Message], int]:
    """Tokens of one message: from the known counts by identity, else from ``counter``."""

    def count(message: Message) -> int:
        known = tokens.get(id(message))
        return known if known is not None else counter.message(message)

    return count


def _last_step(messages: Sequence[Message]) -> int | None:
    for message in reversed(messages):
        if isinstance(message.get("step"), int):
            return message["step"]
    return None


def layout_window(
    prompt: Sequence[Message],
    budget: Any,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    policy: Callable[..., Any] | None = None,
    keep_recent: int = 1,
    scratchpad: Any = None,
    counter: TokenCounter | None = None,
    title: str | None = None,
) -> WindowLayout:
    """Apply ``policy`` to one prompt under ``budget`` and describe how the window fills.

    ``budget`` is a :class:`ctxlab.ContextBudget` (or anything with ``window``,
    ``reserve_output``, ``scratchpad_max`` and ``history_allowance``, such as a learner's own).
    ``policy`` follows the protocol in this module's docstring; ``None`` keeps everything.
    ``scratchpad`` is text, a message, a :class:`ctxlab.Scratchpad` (or any object with a
    ``message`` or ``render`` method), or a callable returning text or a message (given
    ``max_tokens``, the cap, when it takes it); it goes last. A policy
    that raises does not raise here: the layout shows the prompt untrimmed and says what went
    wrong in ``problems``. Raises :class:`ctxlab.MessageError` for a malformed prompt.

    >>> prompt = [{"role": "system", "content": "Be brief."},
    ...           {"role": "user", "content": "Summarise the incident."},
    ...           {"role": "assistant", "content": "x " * 300, "step": 1},
    ...           {"role": "assistant", "content": "Checked the logs.", "step": 2}]
    >>> import ctxlab
    >>> view = layout_window(prompt, ContextBudget(window=200, reserve_output=50), policy=ctxlab.fit)
    >>> [(b.role, b.state) for b in view.blocks], view.over_budget
    ([('system', 'kept'), ('user', 'kept'), ('assistant', 'dropped'), ('assistant', 'kept')], False)
    """
    prompt = list(prompt)
    validate_messages(prompt)
    counter = counter or TokenCounter()
    tokens = [counter.message(m, i) for i, m in enumerate(prompt)]
    data = _Prompt(
        messages=prompt, tokens=tokens, groups=_group_ids(prompt), pins=pinned_indices(prompt),
        step=_last_step(prompt), previews=lambda i: preview(prompt[i]),
    )
    return _layout(
        data, budget, tools_tokens=count_tools(tools, counter.encoding) if tools else 0, tools=tools,
        policy=policy, keep_recent=keep_recent, scratchpad=scratchpad,
        count=_counter_for({id(m): t for m, t in zip(prompt, tokens, strict=True)}, counter), title=title,
    )


class TranscriptLayout:
    """A transcript laid out lap by lap: the prompt of each model call under a budget and policy.

    Every message is counted once, when the replay is made; each :meth:`layout` after that
    reuses the counts, the turn groups, the pins and the previews, so only the policy runs
    (and a policy that takes ``count`` is answered from the same counts).
    Lap ``k`` is the ``k``-th model call: its prompt is every message before the ``k``-th
    assistant message.

    >>> import ctxlab
    >>> layouts = TranscriptLayout(ctxlab.course.transcripts.load_transcript("refund"), tools=ctxlab.course.transcripts.load_tools("refund"))
    >>> layouts.laps, len(layouts.prompt(1)), layouts.step(3)
    (9, 2, 3)
    >>> budget = ContextBudget(window=3_000, reserve_output=500)
    >>> layouts.layout(9, budget, policy=ctxlab.fit).dropped_messages
    10
    """

    def __init__(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        counter: TokenCounter | None = None,
        title: str | None = None,
    ) -> None:
        self.messages: list[Message] = list(messages)
        validate_messages(self.messages)
        self.tools = list(tools or ())
        self.title = title
        self.counter = counter or TokenCounter()
        self.tokens = [self.counter.message(m, i) for i, m in enumerate(self.messages)]
        self.tools_tokens = count_tools(self.tools, self.counter.encoding) if self.tools else 0
        self._calls = model_calls(self.messages)
        if not self._calls:
            raise ValueError(
                "this transcript has no assistant message, so no model call to lay out; "
                "use layout_window(messages, budget) for a single prompt"
            )
        self._groups = _group_ids(self.messages)
        self._pins = sorted(pinned_indices(self.messages))
        self._previews: dict[int, str] = {}
        self._count = _counter_for({id(m): t for m, t in zip(self.messages, self.tokens, strict=True)}, self.counter)

    @property
    def laps(self) -> int:
        """How many model calls the transcript records."""
        return len(self._calls)

    def _check(self, lap: int) -> int:
        if isinstance(lap, bool) or not isinstance(lap, int) or not 1 <= lap <= self.laps:
            raise ValueError(f"lap must be a whole number from 1 to {self.laps}, got {lap!r}")
        return self._calls[lap - 1]

    def prompt(self, lap: int) -> list[Message]:
        """The messages the model read at lap ``lap`` (1 to :attr:`laps`), before any trimming."""
        return self.messages[: self._check(lap)]

    def step(self, lap: int) -> int | None:
        """The ``step`` recorded on lap ``lap``'s assistant message."""
        return self.messages[self._check(lap)].get("step")

    def _preview(self, index: int) -> str:
        text = self._previews.get(index)
        if text is None:
            text = self._previews[index] = preview(self.messages[index])
        return text

    def layout(
        self,
        lap: int,
        budget: Any,
        *,
        policy: Callable[..., Any] | None = None,
        keep_recent: int = 1,
        scratchpad: Any = None,
        policy_name: str | None = None,
    ) -> WindowLayout:
        """The window at lap ``lap`` under ``budget`` and ``policy`` (see :func:`layout_window`);
        ``policy_name`` overrides the label the picture shows."""
        stop = self._check(lap)
        data = _Prompt(
            messages=self.messages[:stop],
            tokens=self.tokens,  # a prompt's indices are the transcript's
            groups=self._groups,
            pins={i for i in self._pins if i < stop},
            step=self.messages[stop].get("step"),
            previews=self._preview,
        )
        return _layout(
            data, budget, tools_tokens=self.tools_tokens, tools=self.tools, policy=policy,
            keep_recent=keep_recent, scratchpad=scratchpad, count=self._count, lap=lap,
            laps=self.laps, title=self.title, policy_name=policy_name,
        )

    def __repr__(self) -> str:
        name = f"{self.title!r}, " if self.title else ""
        return f"TranscriptLayout({name}{len(self.messages)} messages, {self.laps} laps, {sum(self.tokens):,} tokens)"


__getattr__ = retired(__name__, {
    "WindowReplay": ("TranscriptLayout", "use ctxlab.course.TranscriptLayout (the same class, renamed: ctxlab.replay is the one replay)"),
    "keep_everything": ("_keep_everything", "use the policy ctxlab.KeepEverything(), which the window layout and "
                        "ctxlab.replay both take (or policy=None)"),
}, globals())
