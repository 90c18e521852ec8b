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

The budget (:class:`ctxlab.ContextBudget`) reserves the reply first; the result always fits,
or :class:`ctxlab.BudgetError` says why it cannot. Every decision is logged
(:class:`ctxlab.MemoryLog`): what was compressed, trimmed or summarised, with the tokens before
and after and the messages taken out, in full. The messages returned are ready for the API:
course keys stripped, every tool call answered.

The assembler follows one growing record from lap to lap through :class:`AssemblyState` (where
the history was last cut, and the summary so far): pass each call's ``state`` to the next.

>>> import ctxlab
>>> research = ctxlab.load_transcript("research")
>>> budget = ctxlab.ContextBudget(window=10_000, reserve_output=2_000, scratchpad_max=600)
>>> pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps for cold climates")
>>> context = build_context(research[:41], budget, tools=ctxlab.load_tools("research"),
...                         scratchpad=pad, client=ctxlab.OfflineSummariser())
>>> [m["role"] for m in context.messages][:2], context.messages[-1] == pad.message()
(['system', 'user'], True)
>>> context.tokens <= budget.input_limit, ctxlab.pairs_ok(context.messages), context.log.counts()
(True, True, {'compress': 1, 'summarise': 1, 'assemble': 1})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .budget import Allocation, ContextBudget
from .compression import compress_history
from .errors import BudgetError, MessageError
from .events import MemoryLog
from .messages import strip_course_keys, validate_messages
from .scratchpad import Scratchpad, is_scratchpad_message
from .summarising import compact, is_summary, summary_message
from .tokens import REPLY_PRIMING, TokenCounter, count_tools
from .trimming import PINNED_ROLES, fit, pinned_indices, turn_group_spans

if TYPE_CHECKING:  # pragma: no cover
    from .store import TrajectoryStore

__all__ = ["AssemblyState", "Context", "build_context"]

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
      in full.

    >>> Context(messages=[{"role": "user", "content": "hi"}], tokens=9).summary is None
    True
    """

    messages: list[dict[str, Any]]
    tokens: int = 0
    allocation: Allocation | None = None
    log: MemoryLog = field(default_factory=MemoryLog)
    state: AssemblyState = field(default_factory=AssemblyState)
    dropped: list[Message] = field(default_factory=list)

    @property
    def summary(self) -> str | None:
        """The rolled-up summary in this prompt (``None`` when there is none)."""
        return self.state.summary


def _check_fraction(low_water: float) -> None:
    if isinstance(low_water, bool) or not isinstance(low_water, (int, float)) or not 0 < low_water <= 1:
        raise ValueError(
            f"low_water must be a fraction of the allowance in (0, 1] (the level a trim cuts down "
            f"to; 1 trims just enough on every lap), got {low_water!r}"
        )


def _last_step(messages: Sequence[Message]) -> int:
    steps = [m["step"] for m in messages if isinstance(m.get("step"), int) and not isinstance(m.get("step"), bool)]
    return max(steps) if steps else 0


def build_context(
    history: Sequence[Message],
    budget: ContextBudget,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    scratchpad: Scratchpad | None = None,
    state: AssemblyState | None = None,
    client: Any = None,
    model: str | None = None,
    step: int | None = None,
    keep_recent: int = 1,
    pin_user_messages: bool = True,
    low_water: float = 0.6,
    keep_full_for: int = 2,
    compress_after: int | None = None,
    max_chars: int = 1_200,
    store: TrajectoryStore | None = None,
    log: MemoryLog | None = None,
    count: Callable[[Message], int] | None = None,
) -> Context:
    """Assemble the prompt for the next model call from the full record ``history``.

    ``history`` is the run so far, as it happened: the system message(s) first, then the
    user's messages, every assistant message and every tool result (for example
    ``TrajectoryStore.load()``), never an assembled prompt. The result's ``messages`` are:

    1. the leading system messages (the static prefix; ``tools`` are counted with it);
    2. the pinned head: the first user message, and with ``pin_user_messages`` every user
       message, with any other message marked ``"pinned": True`` (and its turn group);
    3. ONE summary message (:func:`ctxlab.summary_message`) when anything has been cut,
       rolled up with the previous summary (``state.summary``), never stacked;
    4. the kept turn groups, newest ``keep_recent`` always among them, tool results
       compressed by age (``keep_full_for``, ``compress_after``, ``max_chars``, ``store``,
       as in :func:`ctxlab.compress_history`; ``step`` is the current lap, by default the
       last one in ``history``);
    5. the scratchpad's message, bounded by ``budget.scratchpad_max``.

    The history's allowance is what the budget leaves after the reply, the static prefix and
    the scratchpad. While the middle fits it, the prompt only grows (what was kept last lap
    is kept again, so the prefix is stable). When it does not fit, older groups are cut until
    the middle takes ``low_water`` of the allowance, and the cut groups are folded into the
    summary by ``client`` (:func:`ctxlab.get_client`); with no ``client`` they are dropped,
    and logged. Either way they are in the log and in ``dropped``, in full.

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
    """
    _check_fraction(low_water)
    validate_messages(history)
    counter = count or TokenCounter().message
    log = log if log is not None else MemoryLog()
    state = state or AssemblyState()
    step = _last_step(history) if step is None else step

    n_static = 0
    while n_static < len(history) and history[n_static].get("role") in PINNED_ROLES:
        n_static += 1
    static, elastic = list(history[:n_static]), list(history[n_static:])
    for index, message in enumerate(elastic, start=n_static):
        if is_summary(message) or is_scratchpad_message(message):
            kind = "summary" if is_summary(message) else "scratchpad"
            raise MessageError(
                f"message {index}: the history holds a {kind} message; pass the run's full record "
                "(e.g. TrajectoryStore.load()) and the summary as state=AssemblyState(...), and "
                "build_context adds the summary and the scratchpad itself",
                index=index,
            )
    if state.cut > len(elastic):
        raise ValueError(
            f"state.cut is {state.cut} but the history has only {len(elastic)} messages after its "
            "system prompt: this state belongs to another (longer) history"
        )

    # -- the static prefix and the scratchpad -------------------------------------------------
    fixed = sum(counter(m) for m in static) + count_tools(tools) + REPLY_PRIMING
    pad_message: dict[str, Any] | None = None
    pad_tokens = 0
    if scratchpad is not None:
        pad_message = scratchpad.message(max_tokens=budget.scratchpad_max)
        pad_tokens = counter(pad_message)
        full_pad = scratchpad.message()
        if full_pad != pad_message:
            log.record(
                "scratchpad", lap=step, tokens_before=counter(full_pad), tokens_after=pad_tokens,
                detail=f"scratchpad rendered within its cap of {budget.scratchpad_max:,} tokens "
                "by shedding its lowest-priority lines (never the goal or the failures)",
                shed=full_pad["content"],
            )
    allowance = budget.history_allowance(fixed, pad_tokens)

    # -- the elastic middle ---------------------------------------------------------------------
    view = compress_history(
        elastic, step, keep_full_for=keep_full_for, compress_after=compress_after,
        max_chars=max_chars, store=store, log=log, count=counter,
    )
    spans = turn_group_spans(view)
    pins = pinned_indices(view)
    if pin_user_messages:
        pins |= {i for i, m in enumerate(view) if m.get("role") == "user"}
    pinned_groups = {g for g, (a, b) in enumerate(spans) if any(i in pins for i in range(a, b))}
    cut = state.cut
    if cut and not any(a == cut for a, _ in spans) and cut != len(view):
        raise ValueError(f"state.cut ({cut}) does not fall between turn groups of this history")

    def candidate_groups(cut_at: int) -> list[int]:
        return [g for g, (a, _) in enumerate(spans) if a >= cut_at or g in pinned_groups]

    def tokens_of(groups: Sequence[int]) -> int:
        return sum(counter(view[i]) for g in groups for i in range(*spans[g]))

    summary = state.summary
    groups = candidate_groups(cut)
    summary_msg = summary_message(summary) if summary else None
    summary_tokens = counter(summary_msg) if summary_msg else 0
    middle_tokens = tokens_of(groups) + summary_tokens

    if middle_tokens > allowance:
        target = int(allowance * low_water)
        reserve = summary_tokens if summary_msg else (allowance // 5 if client is not None else 0)
        newly_cut: list[int] = []
        for _attempt in range(3):
            indices = [i for g in groups for i in range(*spans[g])]
            candidates = [{**view[i], "pinned": True} if i in pins else view[i] for i in indices]
            where = {id(m): i for m, i in zip(candidates, indices, strict=True)}
            try:
                try:  # down to the low-water mark if the pins and the newest groups allow it
                    kept, dropped = fit(candidates, target - reserve, keep_recent=keep_recent, count=counter)
                except BudgetError:
                    kept, dropped = fit(candidates, allowance - reserve, keep_recent=keep_recent, count=counter)
            except BudgetError as err:
                raise BudgetError(
                    f"{err} (The history's allowance is {allowance:,} tokens: window "
                    f"{budget.window:,} - reserved output {budget.reserve_output:,} - static "
                    f"prefix {fixed:,} - scratchpad {pad_tokens:,}"
                    + (f"; {reserve:,} of it were set aside for the summary" if reserve else "")
                    + ".)",
                    needed=err.needed,
                    available=err.available,
                ) from None
            dropped_at = sorted(where[id(m)] for m in dropped)
            newly_cut += dropped_at
            if dropped_at:
                cut = max(cut, max(dropped_at) + 1)
                while cut < len(view) and not any(a == cut for a, _ in spans):
                    cut += 1
            groups = candidate_groups(cut)
            if client is None:
                break  # dropped, and logged below; an earlier summary stays as it was
            summary = compact(client, [elastic[i] for i in dropped_at], summary, model=model)
            summary_msg = summary_message(summary)
            summary_tokens = counter(summary_msg)
            if tokens_of(groups) + summary_tokens <= allowance:
                break
            reserve = summary_tokens
        else:
            raise BudgetError(
                f"the summary keeps outgrowing the room left for it ({summary_tokens:,} tokens after "
                f"three tries, in an allowance of {allowance:,}); raise the window or ask the "
                "summariser for a shorter summary",
                needed=tokens_of(groups) + summary_tokens,
                available=allowance,
            )
        taken = [elastic[i] for i in sorted(newly_cut)]
        after = tokens_of(groups) + summary_tokens
        if client is None:
            log.record(
                "trim", lap=step, tokens_before=middle_tokens, tokens_after=after, messages=taken,
                detail=f"history over its allowance ({middle_tokens:,} > {allowance:,}): dropped "
                f"{len(taken)} messages to {after:,} tokens ({low_water:.0%} of the allowance is "
                "the low-water mark)",
            )
        else:
            steps = sorted({m["step"] for m in taken if isinstance(m.get("step"), int)})
            laps = f"laps {steps[0]}-{steps[-1]}" if steps else "no laps"
            log.record(
                "summarise", lap=step, tokens_before=middle_tokens, tokens_after=after, messages=taken,
                detail=f"history over its allowance ({middle_tokens:,} > {allowance:,}): rolled "
                f"{len(taken)} messages ({laps}) into one {summary_tokens:,}-token summary"
                + ("; previous summary folded in" if state.summary else ""),
                summary=summary, prior_summary=state.summary,
            )
        middle_tokens = after

    # -- order: static, pinned head, summary, kept groups, scratchpad ---------------------------
    leading = 0  # the pinned groups at the start stay above the summary
    while leading < len(groups) and groups[leading] in pinned_groups:
        leading += 1
    head = [view[i] for g in groups[:leading] for i in range(*spans[g])]
    rest = [view[i] for g in groups[leading:] for i in range(*spans[g])]
    ordered = [*static, *head, *([summary_msg] if summary_msg else []), *rest, *([pad_message] if pad_message else [])]
    messages = strip_course_keys(ordered)

    kept_ids = {id(view[i]) for g in groups for i in range(*spans[g])}
    dropped_all = [elastic[i] for i in range(len(view)) if id(view[i]) not in kept_ids]
    tokens = fixed + middle_tokens + pad_tokens
    if tokens > budget.input_limit:  # pragma: no cover - guarded by the allowance above
        raise BudgetError(f"assembled prompt of {tokens:,} tokens is over the input limit {budget.input_limit:,}")
    record_tokens = fixed + sum(counter(m) for m in elastic)
    log.record(
        "assemble", lap=step, tokens_before=record_tokens, tokens_after=tokens,
        detail=(
            f"{len(messages)} messages, {tokens:,} of {budget.input_limit:,} input tokens: static "
            f"{fixed:,}, history {middle_tokens - summary_tokens:,}"
            + (f", summary {summary_tokens:,}" if summary_msg else "")
            + (f", scratchpad {pad_tokens:,}" if pad_message else "")
            + f"; {len(dropped_all)} of {len(elastic)} history messages out of the prompt"
        ),
    )
    return Context(
        messages=messages,
        tokens=tokens,
        allocation=budget.allocate(fixed, pad_tokens, middle_tokens),
        log=log,
        state=AssemblyState(cut=cut, summary=summary),
        dropped=dropped_all,
    )
