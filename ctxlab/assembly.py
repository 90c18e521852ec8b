"""The context assembler: static prefix first, elastic middle, working memory last.

:func:`build_context` turns the full record of a run into the prompt for the next model call:

1. **static prefix**: the leading system message(s), and the tool schemas, which are sent with
   every request. They never change, so a prompt cache can reuse them on every lap;
2. **elastic middle**: the history after age compression (:func:`ctxlab.compress_history`),
   with pinned messages kept, and older turn groups replaced by ONE rolled-up summary
   (:func:`ctxlab.compact`) when the history outgrows its allowance. Trimming is high/low
   water: when the middle passes its allowance it is cut to ``low_water`` of it in one go,
   so the prefix stays the same for many laps between cuts;
3. **working memory**: the scratchpad (:class:`ctxlab.Scratchpad`), bounded by the budget's
   ``scratchpad_max``, as the last message.

When the middle is over its allowance, things leave it in a fixed order, cheapest loss first,
stopping as soon as it fits (:data:`ctxlab.eviction.EVICTION_ORDER`, :mod:`ctxlab.eviction`): tool
results compressed, old small talk dropped (only when asked for, ``small_talk_tokens``),
older turns summarised, the oldest trimmed. The system prompt, the goal, the pins and the
scratchpad are never taken out.

The budget (:class:`ctxlab.ContextBudget`) reserves the reply first; the result always fits,
or :class:`ctxlab.BudgetError` says why it cannot. Every decision is logged
(:class:`ctxlab.MemoryLog`): what was compressed, trimmed or summarised, with the tokens before
and after and the messages taken out, in full. The messages returned are ready for the API:
course keys stripped, every tool call answered.

The assembler follows one growing record from lap to lap through :class:`AssemblyState` (where
the history was last cut, and the summary so far): pass each call's ``state`` to the next.

There is one pipeline. ``build_context`` is an :class:`ctxlab.Assembler` run once on the record:
the assembler takes the record in (each message checked, given its lap, counted and its pins
found) and :func:`assemble` makes the lap, by the stages below. An ``Assembler`` kept across
laps makes a lap that fits from the window it keeps, with the same prompt and events, so it
pays for what is new; an agent that calls ``build_context`` on every lap pays for the whole
record each time.

>>> import ctxlab
>>> import ctxlab.course
>>> research = ctxlab.course.load_transcript("research")
>>> budget = ctxlab.ContextBudget(window=10_000, reserve_output=2_000, scratchpad_max=600)
>>> pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps for cold climates")
>>> policy = ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser())
>>> context = build_context(research[:41], policy, tools=ctxlab.course.load_tools("research"), scratchpad=pad)
>>> [m["role"] for m in context.messages][:2], context.messages[-1] == pad.message()
(['system', 'user'], True)
>>> context.tokens <= budget.input_limit, ctxlab.pairs_ok(context.messages), context.log.counts()
(True, True, {'compress': 1, 'summarise': 1, 'assemble': 1})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .budget import Allocation, ContextBudget
from .compression import compress_history
from .errors import BudgetError, SummaryError
from .events import MemoryLog
from .eviction import small_talk_groups
from .memory_policy import MemoryPolicy, as_policy
from .messages import strip_course_keys
from .pins import marked_caller
from .scratchpad import Scratchpad
from .summarising import compact, summary_message
from .summary_format import MIN_SUMMARY_TOKENS
from .tokens import TokenCounter
from .trimming import fit, turn_group_spans

__all__ = ["AssemblyState", "Context", "build_context", "assemble", "number_laps", "lap_of", "trim_middle",
           "summarise_cut", "trim_without_summary", "drop_small_talk", "cut_older", "pinned_head", "in_prompt_order", "order_prompt", "Middle", "Cut"]

Message = Mapping[str, Any]


@dataclass(frozen=True)
class AssemblyState:
    """What :func:`build_context` carries from one lap to the next for one growing record.

    ``cut``: history messages before this index (counted after the leading system messages)
    are out of the prompt, except pinned ones; ``summary``: the rolled-up summary of what was
    cut (``None`` before the first cut).

    >>> AssemblyState()
    AssemblyState(cut=0, summary=None)
    """

    cut: int = 0
    summary: str | None = None


@dataclass
class Context:
    """One assembled prompt and everything said about it.

    * ``messages``: what to send, in order: system, pinned head, summary, kept history,
      scratchpad; course keys stripped, pairs valid;
    * ``tokens``: the prompt's tokens with the tool schemas and reply priming;
    * ``allocation``: how the window is used (fixed, scratchpad, history, reserved output);
    * ``log``: one event per decision of this call (``compress``, ``trim`` or ``summarise``,
      ``scratchpad`` when lines were shed, and a final ``assemble``);
    * ``state``: pass it to the next lap's :func:`build_context`;
    * ``dropped``: the record's messages that are not in the prompt (summarised or trimmed),
      in full: a list, or from an :class:`ctxlab.Assembler` lap that does not cut a read-only
      view of the record (:class:`ctxlab.history.MessageRuns`, equal to the list; ``list()`` copies it).

    >>> Context(messages=[{"role": "user", "content": "hi"}], tokens=9).summary is None
    True
    """

    messages: list[dict[str, Any]]
    tokens: int = 0
    allocation: Allocation | None = None
    log: MemoryLog = field(default_factory=MemoryLog)
    state: AssemblyState = field(default_factory=AssemblyState)
    dropped: Sequence[Message] = field(default_factory=list)

    @property
    def summary(self) -> str | None:
        """The rolled-up summary in this prompt (``None`` when there is none)."""
        return self.state.summary


# --- the record's laps, for a history straight from the API ------------------------------------


def lap_of(message: Message, last: int | None) -> int:
    """The lap of ``message``, ``last`` being the lap of the latest assistant message before it
    (``None`` before the first). Its ``step`` when it has one; else, as the course's transcripts
    number them: an assistant message (a model call) is the next lap, a tool result the lap of
    the call it answers, and any other message (a user's) the lap that will read it, the next
    one, or 0 for the system prompt and the task before the first call.

    >>> lap_of({"role": "assistant", "content": "ok"}, 4), lap_of({"role": "tool", "content": "r"}, 5)
    (5, 5)
    >>> lap_of({"role": "user", "content": "go"}, None), lap_of({"role": "user", "content": "and?"}, 5)
    (0, 6)
    """
    step = message.get("step")
    if step.__class__ is int:
        return step
    role = message.get("role")
    if role == "assistant":
        return (last or 0) + 1
    if role == "tool":
        return last or 0
    return 0 if last is None else last + 1


def number_laps(history: Sequence[Message]) -> list[Message]:
    """``history`` with a lap on every message, for aging tool results: a message without a
    ``step`` (a history straight from the API has none) is given a copy with the lap
    :func:`lap_of` finds; messages with one are the same objects. On the course's
    transcripts, which carry their laps, the numbers found are the ones they carry.

    >>> number_laps([{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}])
    [{'role': 'user', 'content': 'go', 'step': 0}, {'role': 'assistant', 'content': 'ok', 'step': 1}]
    """
    out: list[Message] = []
    last: int | None = None
    for message in history:
        lap = lap_of(message, last)
        if message.get("role") == "assistant":
            last = lap
        out.append(message if message.get("step").__class__ is int else {**message, "step": lap})
    return out


# --- the middle: turn groups, which are pinned, what each costs ----------------------------------


@dataclass
class Middle:
    """The part of the compressed elastic history that can be in the prompt, as turn groups.

    That is the pinned groups older than the cut and every group from the cut on; nothing
    older than the cut is looked at again. ``positions[k]`` is the index in the record's
    elastic part (after the leading system messages) of ``view[k]``; cuts are in those indices.
    """

    view: list[Message]
    positions: list[int]
    spans: list[tuple[int, int]]
    pinned: set[int]
    tokens: list[int]  # per group
    size: int  # messages in the whole elastic part

    @classmethod
    def of(
        cls, elastic: Sequence[Message], cut: int, pinned: Sequence[tuple[int, int]], compressor: Callable,
        count: Callable[[Message], int],
    ) -> Middle:
        """The middle at ``cut``: ``pinned`` are the elastic ``(start, stop)`` of the record's
        pinned turn groups, as the :class:`ctxlab.Assembler` found them when they arrived
        (the one place the pin rule runs)."""
        positions = [i for a, b in pinned if a < cut for i in range(a, b)] + list(range(cut, len(elastic)))
        view = compressor([elastic[i] for i in positions])
        spans = turn_group_spans(view)
        starts = {a for a, _b in pinned}
        pinned = {g for g, (a, _b) in enumerate(spans) if positions[a] in starts}
        tokens = [sum(count(view[i]) for i in range(a, b)) for a, b in spans]
        return cls(view, positions, spans, pinned, tokens, len(elastic))

    def start(self, group: int) -> int:
        return self.positions[self.spans[group][0]]

    def groups_from(self, cut: int) -> list[int]:
        """The groups in the prompt when the history is cut at ``cut``: the pinned ones and all
        from ``cut`` on."""
        return [g for g in range(len(self.spans)) if self.start(g) >= cut or g in self.pinned]

    def cost(self, groups: Sequence[int]) -> int:
        return sum(self.tokens[g] for g in groups)

    def messages(self, groups: Sequence[int]) -> list[Message]:
        return [self.view[i] for g in groups for i in range(*self.spans[g])]

    def next_group_start(self, position: int) -> int:
        """The start of the first group at or after elastic index ``position``."""
        return next((self.start(g) for g in range(len(self.spans)) if self.start(g) >= position), self.size)

    def without(self, groups: Sequence[int]) -> Middle:
        """This middle with the groups ``groups`` taken out (their elastic indices stay out of
        ``positions``, so cuts keep meaning the same place in the record)."""
        out = set(groups)
        keep = [g for g in range(len(self.spans)) if g not in out]
        indices = [i for g in keep for i in range(*self.spans[g])]
        spans, start = [], 0
        for g in keep:
            a, b = self.spans[g]
            spans.append((start, start + b - a))
            start += b - a
        return Middle(
            view=[self.view[i] for i in indices], positions=[self.positions[i] for i in indices], spans=spans,
            pinned={k for k, g in enumerate(keep) if g in self.pinned}, tokens=[self.tokens[g] for g in keep],
            size=self.size,
        )

    def pinned_spans_before(self, cut: int) -> list[tuple[int, int]]:
        """Elastic index ranges of the pinned groups older than ``cut``."""
        out = []
        for g in sorted(self.pinned):
            a, b = self.spans[g]
            if self.positions[a] < cut:
                out.append((self.positions[a], self.positions[b - 1] + 1))
        return out


# --- stages 2 and 3: trim to the low-water mark, fold what was cut into the capped summary ---------


@dataclass
class Cut:
    """What the trim and summarise stages decided: the new cut, the summary, what went out."""

    cut: int
    summary: str | None
    summary_in_prompt: bool
    taken: list[int] = field(default_factory=list)  # elastic indices cut on this lap
    note: str = ""


def trim_middle(
    middle: Middle, cut: int, allowance: int, reserve: int, *, low_water: float, keep_recent: int,
    count: Callable[[Message], int],
) -> list[int] | None:
    """Elastic indices to cut so that the middle, plus ``reserve`` tokens for a summary, fits
    ``allowance``: down to ``low_water`` of it when the pins and the newest groups allow, else
    just enough. ``None`` when not even that fits.
    """
    room = allowance - reserve
    if room <= 0:
        return None
    groups = middle.groups_from(cut)
    indices = [i for g in groups for i in range(*middle.spans[g])]
    pins = {i for g in groups if g in middle.pinned for i in range(*middle.spans[g])}
    candidates = [{**middle.view[i], "pinned": True} if i in pins else middle.view[i] for i in indices]
    where = {id(m): i for m, i in zip(candidates, indices, strict=True)}
    for target in (min(room, int(allowance * low_water) - reserve), room):
        if target <= 0:
            continue
        try:
            # the pins are marked above, by the middle's rule: fit adds no pin of its own
            _kept, dropped = fit(candidates, target, keep_recent=keep_recent, count=count, pin_tool=None)
        except BudgetError:
            continue
        return sorted(middle.positions[where[id(m)]] for m in dropped)
    return None


def summarise_cut(
    middle: Middle, elastic: Sequence[Message], state: AssemblyState, allowance: int, summary_cap: int, *,
    client: Any, model: str | None, low_water: float, keep_recent: int, count: Callable[[Message], int],
) -> Cut | None:
    """Trim the middle and fold what goes into the one summary, capped at ``summary_cap``.

    The summary's room is ``summary_cap`` (never more than half the allowance); without a
    client the summary so far keeps its size and nothing new is folded in. ``None`` when the
    pins and the newest groups leave no room for a summary at all: the caller trims without one.
    """
    existing = count(summary_message(state.summary)) if state.summary else 0
    reserve = min(summary_cap, allowance // 2) if client is not None else existing
    if reserve == 0 or (client is not None and reserve < MIN_SUMMARY_TOKENS):
        return None  # nothing to make room for, or no room for a summary: plain trimming
    taken = trim_middle(middle, state.cut, allowance, reserve, low_water=low_water, keep_recent=keep_recent, count=count)
    if taken is None:
        return None
    cut = middle.next_group_start(max(taken) + 1) if taken else state.cut
    cut = max(cut, state.cut)
    summary = state.summary
    if client is not None:
        summary = compact(client, [elastic[i] for i in taken], summary, model=model, max_tokens=reserve, count=count)
    return Cut(cut, summary, summary_in_prompt=bool(summary), taken=taken)


def trim_without_summary(
    middle: Middle, state: AssemblyState, allowance: int, *, low_water: float, keep_recent: int,
    count: Callable[[Message], int], budget: ContextBudget, fixed: int, pad_tokens: int, why: str,
) -> Cut:
    """Plain trimming, the fallback: the summary (if any) stays out of this prompt."""
    taken = trim_middle(middle, state.cut, allowance, 0, low_water=low_water, keep_recent=keep_recent, count=count)
    if taken is None:
        groups = middle.groups_from(state.cut)
        pinned = middle.cost([g for g in groups if g in middle.pinned])
        newest = [g for g in groups if g not in middle.pinned][-keep_recent:]
        needed = pinned + middle.cost(newest)
        raise BudgetError(
            f"cannot fit: the pinned messages need {pinned:,} tokens and the newest "
            f"{len(newest)} unpinned turn group(s) {needed - pinned:,} more, {needed:,} in all, but "
            f"the history's allowance is {allowance:,} tokens ({needed - allowance:,} short): window "
            f"{budget.window:,} - reserved output {budget.reserve_output:,} - static prefix "
            f"{fixed:,} - scratchpad {pad_tokens:,}. Raise the window, lower reserve_output, unpin "
            "a message, or shrink the newest tool results (ctxlab.compress).",
            needed=needed,
            available=allowance,
        )
    cut = max(middle.next_group_start(max(taken) + 1) if taken else state.cut, state.cut)
    return Cut(cut, state.summary, summary_in_prompt=False, taken=taken, note=why)


# --- stage 4: the order ---------------------------------------------------------------------------


def pinned_head(pinned: Sequence[bool]) -> int:
    """How many of the kept turn groups (``pinned[k]``: whether the ``k``-th is pinned, the
    newest last) go above the summary, the pinned head: the run of pinned groups they start
    with, never the newest, which stays the last message before the scratchpad.

    >>> pinned_head([True, True, False, True]), pinned_head([True, True])
    (2, 1)
    """
    leading = 0
    while leading < len(pinned) - 1 and pinned[leading]:
        leading += 1
    return leading


def in_prompt_order(static: Sequence[Message], head: Sequence[Message], summary: Message | None,
                    rest: Sequence[Message], pad: Message | None) -> list[Message]:
    """The one order of a prompt: the static prefix, the pinned head, the summary (when there
    is one), the rest of the kept history, and the scratchpad last (when there is one).

    >>> [m["content"] for m in in_prompt_order([{"content": "system"}], [{"content": "task"}], None,
    ...                                        [{"content": "lap 9"}], {"content": "scratchpad"})]
    ['system', 'task', 'lap 9', 'scratchpad']
    """
    return [*static, *head, *([summary] if summary is not None else []), *rest, *([pad] if pad is not None else [])]


def order_prompt(
    static: list[Message], middle: Middle, groups: list[int], summary: Message | None, pad: Message | None,
) -> tuple[list[Message], int]:
    """``static, pinned head, summary, kept groups, scratchpad``, and the pinned head's tokens.

    The pinned head is the run of pinned groups the kept groups start with (the task, and any
    pinned message before the cut), but never the newest group: the newest message is always
    the last one before the scratchpad. Every other kept group stays where it was, so a user
    message is followed by the replies it got.
    """
    leading = pinned_head([g in middle.pinned for g in groups])
    head, rest = groups[:leading], groups[leading:]
    ordered = in_prompt_order(static, middle.messages(head), summary, middle.messages(rest), pad)
    return ordered, middle.cost(head)


# --- the pipeline -------------------------------------------------------------------------------


def build_context(
    history: Sequence[Message],
    policy: MemoryPolicy | ContextBudget,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    scratchpad: Scratchpad | None = None,
    state: AssemblyState | None = None,
    step: int | None = None,
    log: MemoryLog | None = None,
    count: Callable[[Message], int] | None = None,
    **options: Any,
) -> Context:
    """Assemble the prompt for the next model call from the full record ``history``.

    ``history`` is the run so far, as it happened: the system message(s) first, then the
    user's messages, every assistant message and every tool result (for example
    ``TrajectoryStore.load()``), never an assembled prompt. ``policy`` is the run's
    :class:`ctxlab.MemoryPolicy` (the budget, the summariser, the trims, the age tiers, the
    pins); a :class:`ctxlab.ContextBudget` alone stands for the default policy with that
    budget. What moves from lap to lap is passed beside it: the request's ``tools``, the
    ``scratchpad``, the ``state`` the previous lap returned, the lap ``step`` (by default the
    last one in ``history``), the ``log`` to add to, and ``count``, a message's tokens. The
    result's ``messages`` are:

    1. the leading system messages (the static prefix; ``tools`` are counted with it);
    2. the pinned head: the first user message (the task), and any message marked
       ``"pinned": True`` or call of the pin tool ``policy.pin_tool``
       (:data:`ctxlab.pins.PIN_TOOL`, with its results: :mod:`ctxlab.pins`), with its turn
       group, that is older than the cut. These are the pinned list: copied forward unchanged
       on every lap, outside the summary, so a constraint stated once survives any number of
       compactions; their tokens are the allocation's ``pinned`` line. Other user messages
       are not pinned by default (``pin_user_messages=True`` pins them all, as lesson 06's
       :class:`ctxlab.Assemble` does): moved above the summary they would lose their place
       next to the replies they got;
    3. ONE summary message (:func:`ctxlab.summary_message`) when anything has been cut,
       rolled up with the previous summary (``state.summary``), never stacked, and never more
       than ``budget.summary_cap`` tokens (nor half the history's allowance): the compaction
       prompt states the cap and a summary over it is cut (:func:`ctxlab.compact`);
    4. the kept turn groups in their order, the newest ``policy.keep_recent`` always among
       them (the newest message is the last before the scratchpad), tool results compressed
       by age (the policy's ``keep_full_for``, ``compress_after``, ``max_chars`` and
       ``store``, as in :func:`ctxlab.compress_history`). A message without a ``step``, as in
       a history straight from the API, is given its lap (:func:`number_laps`: each assistant
       message is the next one), so such a history ages too; the prompt leaves ``step`` out,
       and ``dropped`` and the log hold those messages with it;
    5. the scratchpad's message, bounded by ``budget.scratchpad_max``.

    It runs an :class:`ctxlab.Assembler` once on ``history``: each message is checked, given
    its lap and counted, then the fixed part and the allowance are found, then eviction runs
    in a fixed order (:data:`ctxlab.eviction.EVICTION_ORDER`), cheapest loss
    first, stopping as soon as the middle fits:

    * ``compress``: tool results shrunk by age (on every lap, so the prompt stays stable);
    * ``small_talk``: old small talk dropped, without a summary (:func:`ctxlab.eviction.small_talk`:
      user or assistant messages with no tool calls, at most ``policy.small_talk_tokens``
      tokens each, not pinned, not in the newest ``keep_recent`` groups). OFF by default
      (``small_talk_tokens=0``): a short user message may be a constraint ("do not touch the
      payments module"), and this stage would drop it outright where ``summarise`` would
      have kept its gist. Pin what must survive (``"pinned": True``), then turn it on with
      ``small_talk_tokens=ctxlab.eviction.SMALL_TALK_MAX_TOKENS`` (40);
    * ``summarise``: :func:`summarise_cut` (which uses :func:`trim_middle`);
    * ``trim``: :func:`trim_without_summary`, when there is no client or no room for a summary;

    and :func:`order_prompt`. Each stage that runs logs its decision, and the ``assemble``
    event lists the stages run (``event.data["stages"]``). No stage takes out the system
    prompt, the goal, anything pinned, or the scratchpad. While the middle fits its allowance
    the prompt only grows (the prefix is stable). When it does not, older groups are cut down
    to ``policy.low_water`` of the allowance, with room kept for the summary, and folded into
    it by ``policy.client`` (:func:`ctxlab.get_client`); with no client they are dropped. When
    the pins and the newest groups leave no room for a summary, the prompt is trimmed without
    one, and the log says so. Everything cut is in the log and in ``dropped``, in full.

    The options given one by one beside a budget (``build_context(history, budget,
    low_water=0.5)``, the old style) still work for one release, with a ``DeprecationWarning``.

    Raises :class:`ctxlab.BudgetError` when the static prefix, the pins, the newest groups
    and the scratchpad cannot fit, and :class:`ctxlab.MessageError` for a malformed history
    or one that holds a summary or scratchpad message (pass the record, not a prompt).

    >>> import ctxlab
    >>> history = [{"role": "system", "content": "You fix bugs."},
    ...            {"role": "user", "content": "Fix bug #412.", "step": 0}]
    >>> context = build_context(history, ctxlab.ContextBudget(window=1_000, reserve_output=200),
    ...                         scratchpad=ctxlab.Scratchpad(goal="Fix bug #412"))
    >>> [m["role"] for m in context.messages], context.tokens
    (['system', 'user', 'user'], 50)

    With the stage off (the default) the old chit-chat is trimmed with the turns around it;
    turned on, it goes first, and alone:

    >>> chatty = [*history, {"role": "assistant", "content": "On it.", "step": 1},
    ...           {"role": "user", "content": "Thanks!", "step": 1},
    ...           {"role": "assistant", "content": "Fixed: the parser now skips blank lines. " * 8, "step": 2}]
    >>> tight = ctxlab.MemoryPolicy(ctxlab.ContextBudget(window=300, reserve_output=200))
    >>> build_context(chatty, tight).log.filter("assemble")[0].data["stages"]
    ('compress', 'trim')
    >>> on = build_context(chatty, tight.replace(small_talk_tokens=ctxlab.eviction.SMALL_TALK_MAX_TOKENS))
    >>> on.log.filter("assemble")[0].data["stages"], [m["content"] for m in on.log.messages("small_talk")]
    (('compress', 'small_talk'), ['On it.', 'Thanks!'])
    """
    from .assembler import Assembler, counter_for  # the one pipeline: an Assembler run once

    assembler = Assembler(as_policy(policy, options, "build_context"), tools=tools, log=log,
                          counter=counter_for(count))
    assembler._in_pieces = False  # one lap: counting results in pieces pays only as they age lap by lap
    assembler.extend(history)
    assembler.state = state or AssemblyState()
    return assembler._full(scratchpad, assembler._ready(step))  # one lap: no window to keep


def assemble(
    static: list[Message],
    elastic: Sequence[Message],
    policy: MemoryPolicy,
    state: AssemblyState,
    *,
    pinned: Sequence[tuple[int, int]],
    scratchpad: Scratchpad | None,
    step: int,
    log: MemoryLog,
    count: Callable[[Message], int],
    fixed: int,
    record_tokens: int,
    memo: dict | None = None,
) -> Context:
    """The lap that must cut, for :class:`ctxlab.Assembler` (and so :func:`build_context`), on a
    record already checked and split into its leading system messages and the rest.

    It looks only at what can be in the prompt: the pinned groups older than ``state.cut``
    (of ``pinned``, the elastic index ranges of every pinned group) and the record from the
    cut on, so a lap costs what the window holds, not what the run has accumulated. The
    Assembler gives it what it keeps across laps: ``fixed`` (the static messages, the tool
    schemas and the reply priming), ``record_tokens`` (the whole record's) and ``memo`` (for
    compression). A lap that fits is made from the window the Assembler keeps instead, with the
    same prompt and events.
    """
    budget = policy.budget
    pad_message, pad_tokens = _bounded_pad(scratchpad, budget, count, log, step)
    allowance = budget.history_allowance(fixed, pad_tokens)
    middle = Middle.of(elastic, state.cut, pinned, _compressor(policy, step, log, count, memo), count)

    # eviction, in its fixed order (EVICTION_ORDER), stopping as soon as the middle fits; the
    # first stage, compress, has run in Middle.of (by age, on every lap, so the prompt stays stable)
    stages = ["compress"]
    before = middle.cost(middle.groups_from(state.cut)) + (count(summary_message(state.summary)) if state.summary else 0)
    if before > allowance and policy.small_talk_tokens:
        middle, saved = drop_small_talk(middle, elastic, before, allowance, policy, step=step, log=log, count=count)
        if saved:
            stages.append("small_talk")
            before -= saved
    over = before > allowance
    decision = Cut(state.cut, state.summary, summary_in_prompt=bool(state.summary))
    if over:
        decision = cut_older(middle, elastic, state, allowance, policy, fixed=fixed, pad_tokens=pad_tokens, count=count)
        stages.append("summarise" if policy.client is not None and not decision.note else "trim")
    groups = middle.groups_from(decision.cut)
    summary_msg = summary_message(decision.summary) if decision.summary and decision.summary_in_prompt else None
    summary_tokens = count(summary_msg) if summary_msg else 0
    middle_tokens = middle.cost(groups) + summary_tokens
    if over:
        _log_cut(log, step, decision, elastic, before, middle_tokens, allowance, summary_tokens, policy.low_water,
                 policy.client is not None, state.summary)

    ordered, pinned_tokens = order_prompt(static, middle, groups, summary_msg, pad_message)
    messages, dropped = strip_course_keys(ordered), _dropped(elastic, middle, groups)
    tokens = fixed + middle_tokens + pad_tokens
    if tokens > budget.input_limit:  # pragma: no cover - guarded by the allowance above
        raise BudgetError(f"assembled prompt of {tokens:,} tokens is over the input limit {budget.input_limit:,}")
    log.record(
        "assemble", lap=step, tokens_before=record_tokens, tokens_after=tokens,
        detail=assemble_detail(
            messages=len(messages), tokens=tokens, budget=budget, fixed=fixed, middle_tokens=middle_tokens,
            summary_tokens=summary_tokens if summary_msg else None, allowance=allowance,
            pad_tokens=pad_tokens if pad_message else None, dropped=len(dropped), elastic=len(elastic),
            stages=stages,
        ),
        stages=tuple(stages),
    )
    allocation = budget.allocate(fixed, pad_tokens, middle_tokens, summary_tokens=summary_tokens,
                                 pinned_tokens=pinned_tokens)
    return Context(messages=messages, tokens=tokens, allocation=allocation, log=log,
                   state=AssemblyState(cut=decision.cut, summary=decision.summary), dropped=dropped)


def _compressor(policy: MemoryPolicy, step: int, log: MemoryLog, count: Callable[[Message], int],
                memo: dict | None) -> Callable[[list[Message]], list[dict[str, Any]]]:
    """The first stage of eviction: tool results compressed by age (:func:`ctxlab.compress_history`)."""

    def compressor(messages: list[Message]) -> list[dict[str, Any]]:
        # a pin call's results are kept verbatim, as a marked message's are: compress_history
        # leaves alone the results of a caller marked "pinned", so the pin calls are marked
        marked = [marked_caller(m, policy.pin_tool) for m in messages]
        return compress_history(marked, step, log=log, count=count, memo=memo, **policy.compression)

    return compressor


def drop_small_talk(
    middle: Middle, elastic: Sequence[Message], before: int, allowance: int, policy: MemoryPolicy, *,
    step: int, log: MemoryLog, count: Callable[[Message], int],
) -> tuple[Middle, int]:
    """The second stage: old small talk dropped (:func:`ctxlab.eviction.small_talk_groups`), and
    logged. The middle without it, and the tokens saved (0 when there was none)."""
    chatter = small_talk_groups(middle.view, middle.spans, middle.pinned, keep_recent=policy.keep_recent,
                                count=count, max_tokens=policy.small_talk_tokens)
    if not chatter:
        return middle, 0
    saved = middle.cost(chatter)
    taken = [elastic[p] for g in chatter for p in middle.positions[slice(*middle.spans[g])]]
    log.record(
        "small_talk", lap=step, tokens_before=before, tokens_after=before - saved, messages=taken,
        detail=f"history over its allowance ({before:,} > {allowance:,}): dropped {len(taken)} "
        f"messages of old small talk (no tool calls, nothing pinned, {policy.small_talk_tokens} tokens "
        f"or fewer each), {saved:,} tokens"
        + ("; that was enough" if before - saved <= allowance else "; still over: summarising or trimming next"),
    )
    return middle.without(chatter), saved


def cut_older(
    middle: Middle, elastic: Sequence[Message], state: AssemblyState, allowance: int, policy: MemoryPolicy, *,
    fixed: int, pad_tokens: int, count: Callable[[Message], int],
) -> Cut:
    """The last stages: older turns summarised (:func:`summarise_cut`), or, with no client or no
    room for a summary, the oldest trimmed (:func:`trim_without_summary`)."""
    options = dict(low_water=policy.low_water, keep_recent=policy.keep_recent, count=count)
    try:
        summarised = summarise_cut(middle, elastic, state, allowance, policy.budget.summary_cap,
                                   client=policy.client, model=policy.model, **options)
    except SummaryError as err:
        if policy.on_summary_error != "trim":
            raise
        # the run goes on: this lap is trimmed without folding anything in; the summary so far is
        # kept for the next lap, and what is cut is in the log and in ``dropped``, in full
        why = (f"the summariser failed ({err.reason or 'error'} after {err.attempts} attempt(s)): trimmed "
               "without a summary this lap (on_summary_error='trim')")
        return trim_without_summary(middle, state, allowance, budget=policy.budget, fixed=fixed,
                                    pad_tokens=pad_tokens, why=why, **options)
    if summarised is not None:
        return summarised
    why = ("no summary" if policy.client is None and not state.summary
           else "the pins and the newest groups leave no room for a summary: trimmed without one")
    return trim_without_summary(middle, state, allowance, budget=policy.budget, fixed=fixed, pad_tokens=pad_tokens,
                                why=why, **options)


def _dropped(elastic: Sequence[Message], middle: Middle, groups: Sequence[int]) -> list[Message]:
    """The record's messages not in the prompt, in order, without looking at each of them."""
    kept = sorted((middle.start(g), middle.positions[middle.spans[g][1] - 1] + 1) for g in groups)
    out: list[Message] = []
    previous = 0
    for a, b in kept:
        out.extend(elastic[previous:a])
        previous = b
    out.extend(elastic[previous:])
    return out


def _bounded_pad(
    scratchpad: Scratchpad | None, budget: ContextBudget, count: Callable[[Message], int], log: MemoryLog, step: int,
) -> tuple[dict[str, Any] | None, int]:
    """The scratchpad's message within its cap, and its tokens; a shed is logged. It is
    bounded with the encoding ``count`` counts with, when that is a model's counter's."""
    if scratchpad is None:
        return None, 0
    owner = getattr(count, "__self__", None)
    encoding = owner.encoding if isinstance(owner, TokenCounter) and owner.model is not None else None
    pad_message = scratchpad.message(max_tokens=budget.scratchpad_max, encoding=encoding)
    pad_tokens = count(pad_message)
    full_pad = scratchpad.message()
    if full_pad != pad_message:
        log.record(
            "scratchpad", lap=step, tokens_before=count(full_pad), tokens_after=pad_tokens,
            detail=f"scratchpad rendered within its cap of {budget.scratchpad_max:,} tokens "
            "by shedding its lowest-priority lines (never the goal or the failures)",
            shed=full_pad["content"],
        )
    return pad_message, pad_tokens


def _log_cut(
    log: MemoryLog, step: int, decision: Cut, elastic: Sequence[Message], before: int, after: int,
    allowance: int, summary_tokens: int, low_water: float, summarised: bool, prior: str | None,
) -> None:
    taken = [elastic[i] for i in decision.taken]
    over = f"history over its allowance ({before:,} > {allowance:,})"
    if summarised and not decision.note:
        steps = sorted({m["step"] for m in taken if isinstance(m.get("step"), int)})
        laps = f"laps {steps[0]}-{steps[-1]}" if steps else "no laps"
        log.record(
            "summarise", lap=step, tokens_before=before, tokens_after=after, messages=taken,
            detail=f"{over}: rolled {len(taken)} messages ({laps}) into one {summary_tokens:,}-token summary"
            + ("; previous summary folded in" if prior else ""),
            summary=decision.summary, prior_summary=prior,
        )
        return
    note = f"; {decision.note}" if decision.note and decision.note != "no summary" else ""
    log.record(
        "trim", lap=step, tokens_before=before, tokens_after=after, messages=taken,
        detail=f"{over}: dropped {len(taken)} messages to {after:,} tokens ({low_water:.0%} of the "
        f"allowance is the low-water mark){note}",
    )


def assemble_detail(*, messages: int, tokens: int, budget: ContextBudget, fixed: int, middle_tokens: int,
                    summary_tokens: int | None, allowance: int, pad_tokens: int | None, dropped: int,
                    elastic: int, stages: Sequence[str]) -> str:
    """The ``assemble`` event's detail line (``build_context`` and ``Assembler`` write the same)."""
    history = middle_tokens - (summary_tokens or 0)
    return (
        f"{messages} messages, {tokens:,} of {budget.input_limit:,} input tokens: static {fixed:,}, history {history:,}"
        + (f", summary {summary_tokens:,} (cap {min(budget.summary_cap, allowance // 2):,})"
           if summary_tokens is not None else "")
        + (f", scratchpad {pad_tokens:,}" if pad_tokens is not None else "")
        + f"; {dropped} of {elastic} history messages out of the prompt; eviction " + " > ".join(stages)
    )
