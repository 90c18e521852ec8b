"""An assembler kept across laps: each lap costs what is new, not the length of the run.

:func:`ctxlab.build_context` is a function of the whole record: on every lap it validates it,
finds its pinned groups and counts it again, so over a run of n laps its work grows with n
squared. An :class:`Assembler` follows one growing record instead. Each message is validated,
counted and grouped once, when it arrives; each tool result is compressed once per age tier;
and a lap looks only at what can be in the prompt (the pinned groups and the record from the
last cut on). It gives the same prompts as ``build_context`` with the state passed from lap
to lap (and the same log events).

Between cuts it keeps that window from lap to lap: each message's view (compressed for its age
tier), its tokens and its sendable copy (course keys stripped), the turn groups' tokens and
pins, and what is out of the prompt. A lap that does not cut only adds the new messages and
recompresses the tool results whose tier changes (a heap of the steps at which they do), then
copies the cached messages into the prompt. A lap that cuts, or a step that goes back, runs the
full pipeline (:func:`ctxlab.assemble`) and the window is rebuilt at the new cut.

The prompt returned is the caller's: every message dict is new, and so are its ``tool_calls``
list, each call and its ``function``, and a list ``content`` with its parts. Only immutable
values (strings, numbers) are shared with the record and the cache.

>>> import ctxlab
>>> research = ctxlab.load_transcript("research")
>>> budget = ctxlab.ContextBudget(window=10_000, reserve_output=2_000, scratchpad_max=600)
>>> assembler = Assembler(budget, tools=ctxlab.load_tools("research"), client=ctxlab.OfflineSummariser())
>>> for index in ctxlab.model_calls(research):
...     context = assembler.context(research[:index], step=research[index]["step"])
>>> context.tokens <= budget.input_limit, assembler.state.cut > 0, len(assembler) == index
(True, True, True)
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .assembly import (
    AssemblyState,
    Context,
    _bounded_pad,
    _check_fraction,
    _tools_tokens,
    assemble,
    assemble_detail,
)
from .budget import ContextBudget
from .compression import STUB_PREFIX, compress_history, stub_reference
from .errors import BudgetError, MessageError
from .events import MemoryLog
from .messages import MessageChecker, strip_course_keys
from .scratchpad import is_scratchpad_message
from .summarising import is_summary, summary_message
from .tokens import REPLY_PRIMING, TokenCounter
from .trimming import PINNED_ROLES

if TYPE_CHECKING:  # pragma: no cover
    from .scratchpad import Scratchpad
    from .store import TrajectoryStore

__all__ = ["Assembler"]

Message = Mapping[str, Any]


class Assembler:
    """``build_context`` lap after lap for one growing record, at the cost of what is new.

    The options are :func:`ctxlab.build_context`'s, fixed for the run. Give it the record as
    it grows, either the whole record each lap (:meth:`context`, which takes what is new) or
    the new messages (:meth:`extend`, then :meth:`build`). A message that would make the
    record invalid raises :class:`ctxlab.MessageError` naming its index, and nothing is added.
    ``state`` is the summary and the cut so far, ``log`` every decision, ``counter`` the
    :class:`ctxlab.TokenCounter` used (each distinct message is encoded once).

    The small-talk stage of eviction is off by default (``small_talk_tokens=0``), as in
    ``build_context``: it drops short unpinned messages outright, and a short user message may
    be a constraint ("do not touch the payments module"). Pin what must survive, then pass
    ``small_talk_tokens=ctxlab.SMALL_TALK_MAX_TOKENS`` to turn it on.

    >>> assembler = Assembler(ContextBudget(window=1_000, reserve_output=200))
    >>> assembler.extend([{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix #412."}])
    >>> [m["role"] for m in assembler.build().messages]
    ['system', 'user']
    >>> import ctxlab
    >>> chatty = Assembler(ContextBudget(window=1_000, reserve_output=200),
    ...                    small_talk_tokens=ctxlab.SMALL_TALK_MAX_TOKENS)  # stage on
    >>> assembler.small_talk_tokens, chatty.small_talk_tokens
    (0, 40)
    """

    def __init__(
        self,
        budget: ContextBudget,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        client: Any = None,
        model: str | None = None,
        keep_recent: int = 1,
        pin_user_messages: bool = False,
        low_water: float = 0.6,
        keep_full_for: int = 2,
        compress_after: int | None = None,
        max_chars: int = 1_200,
        store: TrajectoryStore | None = None,
        log: MemoryLog | None = None,
        counter: TokenCounter | None = None,
        small_talk_tokens: int = 0,
    ) -> None:
        _check_fraction(low_water)
        self.budget = budget
        self.tools = tools
        self.client = client
        self.model = model
        self.keep_recent = keep_recent
        self.pin_user_messages = pin_user_messages
        self.low_water = low_water
        self.small_talk_tokens = small_talk_tokens
        self.compression = dict(keep_full_for=keep_full_for, compress_after=compress_after,
                                max_chars=max_chars, store=store)
        self.log = log if log is not None else MemoryLog()
        self.counter = counter or TokenCounter()
        self.state = AssemblyState()
        self._static: list[Message] = []
        self._elastic: list[Message] = []
        self._counts: list[int] = []  # tokens of each elastic message
        self._checker = MessageChecker()
        self._memo: dict = {}
        self._tokens = 0  # of the elastic part
        self._static_tokens = 0
        self._tools_tokens = _tools_tokens(tools, self.counter.message)
        self._starts: list[int] = []  # elastic index of each group's first message
        self._pinned: list[int] = []  # numbers of the pinned groups, ascending
        self._pinned_set: set[int] = set()
        self._window: _Window | None = None  # what the last lap's prompt held, kept up to date
        self._sendable_static: list[dict[str, Any]] | None = None
        self._summary_cache: tuple[str, dict[str, Any], int] | None = None
        self._collecting = False
        self._first_user_seen = False
        self._max_step = 0

    def __len__(self) -> int:
        return len(self._static) + len(self._elastic)

    def __repr__(self) -> str:
        return f"Assembler({len(self)} messages, cut={self.state.cut})"

    # --- growing --------------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add one message to the record (see :meth:`extend`)."""
        self.extend([message])

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages to the record; each is validated and counted once, here."""
        batch = list(messages)
        trial = self._checker.fork()
        for offset, message in enumerate(batch):
            index = len(self) + offset
            problems = trial.check(index, message)
            if not problems and (is_summary(message) or is_scratchpad_message(message)):
                kind = "summary" if is_summary(message) else "scratchpad"
                problems = [(index, f"the history holds a {kind} message; give the assembler the run's "
                             "record, and it adds the summary and the scratchpad itself")]
            if problems:
                where, problem = problems[0]
                raise MessageError(f"message {where}: {problem}", index=where)
        counts = [self.counter.message(m) for m in batch]
        trial.commit()
        for message, tokens in zip(batch, counts, strict=True):
            self._add(message, tokens)

    def _add(self, message: Message, tokens: int) -> None:
        role = message.get("role")
        value = message.get("step")
        if isinstance(value, int) and not isinstance(value, bool):
            self._max_step = max(self._max_step, value)
        if not self._elastic and role in PINNED_ROLES:
            self._static.append(message)
            self._static_tokens += tokens
            return
        if not (role == "tool" and self._collecting):
            self._starts.append(len(self._elastic))
            self._collecting = role == "assistant" and bool(message.get("tool_calls"))
        group = len(self._starts) - 1
        pinned = role in PINNED_ROLES or message.get("pinned") is True
        if role == "user" and (self.pin_user_messages or not self._first_user_seen):
            pinned = True
        if role == "user":
            self._first_user_seen = True
        if pinned and (not self._pinned or self._pinned[-1] != group):
            self._pinned.append(group)
            self._pinned_set.add(group)
        self._elastic.append(message)
        self._counts.append(tokens)
        self._tokens += tokens

    # --- assembling -----------------------------------------------------------------------------

    def context(self, history: Sequence[Message], *, scratchpad: Scratchpad | None = None,
                step: int | None = None) -> Context:
        """The prompt for the record ``history``, which must continue the one followed so far
        (the same messages first, then new ones): the new ones are added, then :meth:`build`."""
        seen = len(self)
        if len(history) < seen or (seen and history[seen - 1] is not self._last()):
            raise ValueError(
                "this history does not continue the one the assembler has followed (it is shorter, "
                "or its earlier messages changed); an Assembler follows one growing record: make a "
                "new one for another run"
            )
        self.extend(history[seen:])
        return self.build(scratchpad=scratchpad, step=step)

    def _group_of(self, start: int) -> int:
        """The number of the group that starts at elastic index ``start``."""
        return bisect.bisect_left(self._starts, start)

    def _last(self) -> Message | None:
        if self._elastic:
            return self._elastic[-1]
        return self._static[-1] if self._static else None

    def build(self, *, scratchpad: Scratchpad | None = None, step: int | None = None) -> Context:
        """The prompt for the next model call, and the state moves on (see :func:`ctxlab.build_context`).

        A lap that does not cut (the history fits its allowance) is made from what the previous
        lap kept: only the new messages, and the tool results whose age tier changes, are looked
        at. A lap that cuts, or any lap the kept window cannot answer, runs the full pipeline.
        """
        waiting = self._checker.finish()
        if waiting:
            index, problem = waiting[0]
            raise MessageError(f"message {index}: {problem}", index=index)
        if step is None:
            step = self._max_step
        fast = self._fast(scratchpad, step)
        if fast is not None:
            self.state = fast.state
            return fast
        self._window = None
        cut = self.state.cut
        pinned_before = self._pinned_before(cut)
        fixed = self._static_tokens + self._tools_tokens + REPLY_PRIMING
        context = assemble(
            self._static, self._elastic, self.budget, self.state, pinned_before=pinned_before,
            tools=self.tools, scratchpad=scratchpad, client=self.client, model=self.model, step=step,
            keep_recent=self.keep_recent, pin_user_messages=self.pin_user_messages, low_water=self.low_water,
            compression=self.compression, log=self.log, count=self.counter.message, memo=self._memo,
            record_tokens=fixed + self._tokens, fixed=fixed, small_talk_tokens=self.small_talk_tokens,
        )
        context.messages = [_copy(m) for m in context.messages]  # nothing the caller changes reaches the record
        self.state = context.state
        return context

    def _pinned_before(self, cut: int) -> list[tuple[int, int]]:
        spans = []
        for group in self._pinned:
            start = self._starts[group]
            if start >= cut:
                break
            stop = self._starts[group + 1] if group + 1 < len(self._starts) else len(self._elastic)
            spans.append((start, stop))
        return spans

    # --- the fast lap: the window kept from lap to lap --------------------------------------------

    def _fast(self, scratchpad: Scratchpad | None, step: int) -> Context | None:
        """This lap from the kept window, or ``None`` when the full pipeline must run (the
        history is over its allowance, the step went back, or the window cannot tell)."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            return None  # the pipeline names the problem
        window = self._window
        if window is None or window.cut != self.state.cut or step < window.step:
            compress_history([], step, **self.compression)  # the options' errors, as the pipeline gives them
            window = _Window(self, self.state.cut, step)
            self._window = None
        else:
            window.catch_up(step)
        if window.unsafe:
            return None
        self._window = window
        budget, counter = self.budget, self.counter.message
        pad_log = MemoryLog()
        pad_message, pad_tokens = _bounded_pad(scratchpad, budget, counter, pad_log, step)
        fixed = self._static_tokens + self._tools_tokens + REPLY_PRIMING
        try:
            allowance = budget.history_allowance(fixed, pad_tokens)
        except BudgetError:
            return None
        summary = self.state.summary
        summary_msg, summary_tokens = self._summary(summary) if summary else (None, 0)
        middle_tokens = window.total + summary_tokens
        if middle_tokens > allowance:
            return None  # over: eviction runs in the full pipeline
        tokens = fixed + middle_tokens + pad_tokens
        if tokens > budget.input_limit:  # pragma: no cover - guarded by the allowance
            return None
        for event in pad_log:
            self.log.append(event)
        window.log_compress(self.log, step, self.compression)
        head_groups, head_tokens, head_stop = window.head()
        sendable = window.sendable
        messages = [_copy(m) for m in self._static_sendable()]
        messages += [_copy(sendable[i]) for i in range(head_stop)]
        if summary_msg is not None:
            messages.append(_copy(summary_msg))
        messages += [_copy(sendable[i]) for i in range(head_stop, len(sendable))]
        if pad_message is not None:
            messages += strip_course_keys([pad_message])
        dropped = list(window.dropped)
        self.log.record(
            "assemble", lap=step, tokens_before=fixed + self._tokens, tokens_after=tokens,
            detail=assemble_detail(
                messages=len(messages), tokens=tokens, budget=budget, fixed=fixed, middle_tokens=middle_tokens,
                summary_tokens=summary_tokens if summary_msg else None, allowance=allowance,
                pad_tokens=pad_tokens if pad_message else None, dropped=len(dropped), elastic=len(self._elastic),
                stages=("compress",),
            ),
            stages=("compress",),
        )
        return Context(
            messages=messages, tokens=tokens,
            allocation=budget.allocate(fixed, pad_tokens, middle_tokens, summary_tokens=summary_tokens,
                                       pinned_tokens=head_tokens),
            log=self.log, state=AssemblyState(cut=self.state.cut, summary=summary), dropped=dropped,
        )

    def _static_sendable(self) -> list[dict[str, Any]]:
        if self._sendable_static is None or len(self._sendable_static) != len(self._static):
            self._sendable_static = strip_course_keys(self._static)
        return self._sendable_static

    def _summary(self, summary: str) -> tuple[dict[str, Any], int]:
        if self._summary_cache is None or self._summary_cache[0] != summary:
            message = summary_message(summary)
            self._summary_cache = (summary, strip_course_keys([message])[0], self.counter.message(message))
        return self._summary_cache[1], self._summary_cache[2]


def _copy(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of a cached sendable message the caller may change freely: the dict, its
    ``tool_calls`` list, each call and its ``function``, and a list ``content`` and its parts
    are new; strings and other values inside are shared (they cannot be changed in place)."""
    out = message.copy()
    calls = out.get("tool_calls")
    if calls.__class__ is list:
        out["tool_calls"] = [
            {**call, "function": dict(call["function"])} if call.__class__ is dict and isinstance(call.get("function"), dict)
            else (dict(call) if isinstance(call, dict) else call)
            for call in calls
        ]
    content = out.get("content")
    if content.__class__ is list:
        out["content"] = [dict(part) if isinstance(part, dict) else part for part in content]
    return out


class _Window:
    """The compressed view of what can be in the prompt at one cut (the pinned groups before
    it, every group from it on), kept up to date as messages arrive and tool results age.

    It holds what ``Middle.of`` would compute for that cut, built once per cut and then
    extended: the view of each message (a tool result compressed for its age tier), its tokens
    and its sendable copy (course keys stripped), the turn groups with their tokens and pins,
    and the running totals, so a lap that does not cut recounts nothing it has seen.
    """

    def __init__(self, owner: Assembler, cut: int, step: int) -> None:
        self.owner = owner
        self.cut = cut
        self.step = step
        self.unsafe = False  # a case the window does not follow (a repeated call id): use the pipeline
        self.positions: list[int] = []
        self.views: list[Message] = []
        self.sendable: list[dict[str, Any]] = []
        self.tokens: list[int] = []
        self.group_starts: list[int] = []  # view index of each group's first message
        self.group_tokens: list[int] = []
        self.group_pinned: list[bool] = []
        self.group_number: list[int] = []  # the elastic group of each window group
        self.total = 0
        self.calls: dict[str, int] = {}  # call id -> view index of the assistant message
        self.tiers: dict[int, str] = {}  # view index -> tier of each tool result that ages
        self.changed: dict[int, tuple[str, Any]] = {}  # view index -> (new text, ref) of replaced results
        self.heap: list[tuple[int, int]] = []  # (step of the next tier change, view index)
        options = owner.compression
        self.keep_full_for = options["keep_full_for"]
        self.compress_after = options["compress_after"]
        starts = owner._starts
        pinned_before = owner._pinned_before(cut)
        for start, stop in pinned_before:
            self._add_group(owner._group_of(start))
            for e in range(start, stop):
                self._add(e)
        self.next_group = next((g for g in range(len(starts)) if starts[g] >= cut), len(starts))
        self.covered = cut
        removed, previous = [], 0
        for start, stop in pinned_before:
            removed.extend(owner._elastic[previous:start])
            previous = stop
        removed.extend(owner._elastic[previous:cut])
        self.dropped = removed
        self._grow()

    def _add_group(self, number: int) -> None:
        self.group_starts.append(len(self.views))
        self.group_tokens.append(0)
        self.group_pinned.append(number in self.owner._pinned_set)
        self.group_number.append(number)

    def _grow(self) -> None:
        """Add the record's messages that arrived since."""
        owner = self.owner
        starts, elastic = owner._starts, owner._elastic
        touched = max(len(self.group_starts) - 1, 0)  # the last group may grow
        for e in range(self.covered, len(elastic)):
            if self.next_group < len(starts) and starts[self.next_group] == e:
                self._add_group(self.next_group)
                self.next_group += 1
            self._add(e)
        self.covered = len(elastic)
        for g in range(touched, len(self.group_number)):  # a message joining a group may have pinned it
            self.group_pinned[g] = self.group_number[g] in owner._pinned_set

    def _add(self, e: int) -> None:
        message = self.owner._elastic[e]
        k = len(self.views)
        self.positions.append(e)
        self.views.append(message)
        self.sendable.append(None)  # type: ignore[arg-type]
        self.tokens.append(0)
        for call in message.get("tool_calls") or []:
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                if call["id"] in self.calls:
                    self.unsafe = True
                self.calls[call["id"]] = k
        self._set(k, message, self.owner._counts[e])
        if self._ages(k):
            self._retier(k)

    def _caller(self, k: int) -> Message:
        at = self.calls.get(self.views[k].get("tool_call_id"))
        return self.views[at] if at is not None else {}

    def _ages(self, k: int) -> bool:
        """True when the tool result at ``k`` is one ``compress_history`` shrinks by age."""
        message = self.owner._elastic[self.positions[k]]
        lap = message.get("step")
        return (message.get("role") == "tool" and isinstance(message.get("content"), str)
                and isinstance(lap, int) and not isinstance(lap, bool) and message.get("pinned") is not True
                and self._caller(k).get("pinned") is not True and stub_reference(message["content"]) is None)

    def _tier(self, lap: int, step: int) -> tuple[str, int | None]:
        """The tier of a result of lap ``lap`` at ``step``, and the step of its next change."""
        age = step - lap
        if age <= self.keep_full_for:
            return "full", lap + self.keep_full_for + 1
        if self.compress_after is not None and age > self.compress_after:
            return "reference", None
        return "compressed", (lap + self.compress_after + 1) if self.compress_after is not None else None

    def _retier(self, k: int) -> None:
        original = self.owner._elastic[self.positions[k]]
        tier, change = self._tier(original["step"], self.step)
        if change is not None:
            heapq.heappush(self.heap, (change, k))
        if self.tiers.get(k) == tier:
            return
        self.tiers[k] = tier
        if tier == "full":
            view: Message = original
        else:
            caller = self._caller(k)
            batch = [caller, original] if caller else [original]
            view = compress_history(batch, self.step, memo=self.owner._memo, count=self.owner.counter.message,
                                    **self.owner.compression)[-1]
        self.changed.pop(k, None)
        if view is not original:
            self.changed[k] = (view["content"], self._ref(original, tier))
        self._set(k, view, self.owner.counter.message(view))

    def _ref(self, original: Message, tier: str) -> Any:
        known = self.owner._memo.get((id(original), tier))
        return known[2] if known is not None and known[0] is original else None

    def _set(self, k: int, view: Message, tokens: int) -> None:
        group = len(self.group_starts) - 1
        while self.group_starts[group] > k:
            group -= 1
        self.group_tokens[group] += tokens - self.tokens[k]
        self.total += tokens - self.tokens[k]
        self.tokens[k] = tokens
        self.views[k] = view
        self.sendable[k] = strip_course_keys([view])[0]

    def catch_up(self, step: int) -> None:
        """New messages in, and the results whose tier changes by ``step`` recompressed."""
        self.step = step
        self._grow()
        heap = self.heap
        while heap and heap[0][0] <= step:
            _, k = heapq.heappop(heap)
            self._retier(k)

    def head(self) -> tuple[list[int], int, int]:
        """The pinned head: its groups, their tokens, and the view index where it stops."""
        newest = len(self.group_starts) - 1
        leading = 0
        while leading < newest and self.group_pinned[leading]:
            leading += 1
        stop = self.group_starts[leading] if leading < len(self.group_starts) else len(self.views)
        return list(range(leading)), sum(self.group_tokens[:leading]), stop

    def log_compress(self, log: MemoryLog, step: int, compression: Mapping[str, Any]) -> None:
        """The ``compress`` event ``compress_history`` records for this view."""
        if not self.changed:
            return
        elastic = self.owner._elastic
        changes, replaced, before, after = [], [], 0, 0
        for k in sorted(self.changed):
            new, ref = self.changed[k]
            original = elastic[self.positions[k]]
            replaced.append(original)
            before += self.owner._counts[self.positions[k]]
            after += self.tokens[k]
            changes.append(
                {"index": k, "tool_call_id": original.get("tool_call_id"), "lap": original["step"],
                 "age": step - original["step"], "tier": "reference" if new.startswith(STUB_PREFIX) else "compressed",
                 "chars_before": len(original["content"]), "chars_after": len(new), "ref": ref}
            )
        stubs = sum(1 for c in changes if c["tier"] == "reference")
        keep_full_for, compress_after = compression["keep_full_for"], compression["compress_after"]
        log.record(
            "compress", lap=step, tokens_before=before, tokens_after=after, messages=replaced,
            detail=(
                f"{len(changes) - stubs} tool result(s) older than {keep_full_for} laps compressed "
                f"to {compression['max_chars']:,} chars"
                + (f"; {stubs} older than {compress_after} laps replaced by references" if stubs else "")
            ),
            changes=changes,
        )
