"""An assembler kept across laps: each lap costs what is new, not the length of the run.

:func:`ctxlab.build_context` is an :class:`Assembler` run once on the whole record: called on
every lap, it validates the record, finds its pinned groups and counts it again, so over a run
of n laps its work grows with n squared. An :class:`Assembler` kept across laps follows one
growing record instead. Each message is validated,
counted and grouped once, when it arrives; each tool result is compressed once per age tier;
and a lap looks only at what can be in the prompt (the pinned groups and the record from the
last cut on). It gives the same prompts as ``build_context`` with the state passed from lap
to lap (and the same log events): both are this one pipeline.

Between cuts it keeps that window from lap to lap: each message's view (compressed for its age
tier), its tokens and its sendable copy (course keys stripped), the turn groups' tokens and
pins, and what is out of the prompt. A lap that does not cut only adds the new messages and
recompresses the tool results whose tier changes (a heap of the steps at which they do), then
copies the cached messages into the prompt. What a lap logs and the scratchpad's message
are made once per change too: the ``compress`` event's entries when a result changes tier (a
lap fills in their ages), the scratchpad when its fields change. A lap that cuts, or a step
that goes back, runs the full pipeline (:func:`ctxlab.assemble`) and the window is rebuilt at
the new cut.

Counting stays exact and encodes little twice. A long tool result of text, which
:func:`ctxlab.compress` will shrink to its head and tail, is encoded in three pieces cut at
line starts near those cuts when it arrives (cl100k_base never makes a token across a line
start, so the pieces add up to the whole); when it changes tier, its compressed text is
counted by encoding only what lies between the head and the tail it shares with them.

The prompt returned is the caller's: every message dict is new, and so are its ``tool_calls``
list, each call and its ``function``, and a list ``content`` with its parts. Only immutable
values (strings, numbers) are shared with the record and the cache. Each cached message's
shape (which calls it holds) is found once, so a lap copies it without looking again.

>>> import ctxlab
>>> import ctxlab.course
>>> research = ctxlab.course.load_transcript("research")
>>> budget = ctxlab.ContextBudget(window=10_000, reserve_output=2_000, scratchpad_max=600)
>>> policy = ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser())
>>> assembler = Assembler(policy, tools=ctxlab.course.load_tools("research"))
>>> for index in ctxlab.model_calls(research):
...     context = assembler.context(research[:index], step=research[index]["step"])
>>> context.tokens <= budget.input_limit, assembler.state.cut > 0, len(assembler) == index
(True, True, True)
"""

from __future__ import annotations

import bisect
import heapq
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .assembly import (
    AssemblyState,
    Context,
    _bounded_pad,
    assemble,
    assemble_detail,
    in_prompt_order,
    lap_of,
    pinned_head,
)
from .budget import ContextBudget
from .calls import CALL_TYPES
from .compression import _aged_view, _text_cut, age_tier, ages, result_text
from .errors import BudgetError, ConfigError, ConfigTypeError, MessageError
from .events import MemoryLog
from .history import MessageRuns
from .llm import is_async
from .memory_policy import MemoryPolicy, as_policy
from .messages import MessageChecker, strip_course_keys
from .pins import marked_caller
from .scratchpad import Scratchpad, is_scratchpad_message
from .summarising import is_summary, summary_message
from .tokens import (
    COURSE_KEYS,
    TokenCounter,
    _line_start_after,
    _line_start_before,
    _plain,
    count_tools,
)
from .trimming import PINNED_ROLES, pins_itself

__all__ = ["Assembler", "counter_for"]

Message = Mapping[str, Any]


class _Pieces(NamedTuple):
    """How a long tool result of text was encoded when it arrived: in three pieces, cut at line
    starts near where :func:`ctxlab.compress` will cut it (it keeps the result's head and tail),
    so that its compressed text is later counted by encoding only what lies between them
    (:meth:`ctxlab.TokenCounter._message_reusing`)."""

    head: int  # the first piece is content[:head] ...
    tail: int  # ... the last content[tail:]
    head_tokens: int
    tail_tokens: int


class Assembler:
    """``build_context`` lap after lap for one growing record, at the cost of what is new.

    ``policy`` is the run's :class:`ctxlab.MemoryPolicy` (or a :class:`ctxlab.ContextBudget` for
    the default policy), as :func:`ctxlab.build_context` takes it, with the request's ``tools``:
    both fixed for the run. Give it the record as
    it grows, either the whole record each lap (:meth:`context`, which takes what is new) or
    the new messages (:meth:`extend`, then :meth:`build`). A message that would make the
    record invalid raises :class:`ctxlab.MessageError` naming its index, and nothing is added.
    A message without a ``step`` (a history straight from the API) is kept as a copy with its
    lap, numbered as ``build_context`` numbers it (:func:`ctxlab.assembly.number_laps`).
    ``state`` is the summary and the cut so far, ``log`` every decision, ``counter`` the
    :class:`ctxlab.TokenCounter` used (each distinct message is encoded once): by default the
    budget's (:meth:`ctxlab.ContextBudget.counter`), which counts as the API bills the model the
    budget names; a counter for another model is refused.

    The small-talk stage of eviction is off by default (``small_talk_tokens=0``), as in
    ``build_context``: it drops short unpinned messages outright, and a short user message may
    be a constraint ("do not touch the payments module"). Pin what must survive, then set the
    policy's ``small_talk_tokens=ctxlab.eviction.SMALL_TALK_MAX_TOKENS`` to turn it on.

    A call of the policy's pin tool ``pin_tool`` (:data:`ctxlab.pins.PIN_TOOL`; ``None`` recognises none) is
    pinned with its turn group, as a message marked ``"pinned": True`` is, unless it is marked
    ``"pinned": False`` (:mod:`ctxlab.pins`): kept in the pinned head, its results never
    compressed by age, exactly as in ``build_context``.

    >>> assembler = Assembler(ContextBudget(window=1_000, reserve_output=200))
    >>> assembler.extend([{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix #412."}])
    >>> [m["role"] for m in assembler.build().messages]
    ['system', 'user']
    >>> import ctxlab
    >>> chatty = Assembler(ctxlab.MemoryPolicy(ContextBudget(window=1_000, reserve_output=200),
    ...                                        small_talk_tokens=ctxlab.eviction.SMALL_TALK_MAX_TOKENS))  # stage on
    >>> assembler.small_talk_tokens, chatty.small_talk_tokens
    (0, 40)
    >>> call = {"id": "p1", "type": "function", "function": {"name": "pin", "arguments": '{"text": "No refunds."}'}}
    >>> assembler.extend([{"role": "assistant", "content": None, "tool_calls": [call]},
    ...                   {"role": "tool", "tool_call_id": "p1", "content": "pinned"}])
    >>> assembler.pin_tool, [m["role"] for m in assembler.build().messages]
    ('pin', ['system', 'user', 'assistant', 'tool'])
    """

    def __init__(
        self,
        policy: MemoryPolicy | ContextBudget,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        log: MemoryLog | None = None,
        counter: TokenCounter | None = None,
        **options: Any,
    ) -> None:
        policy = as_policy(policy, options, "Assembler")
        self.policy = policy
        self.budget = policy.budget
        self.tools = tools
        self.client = policy.client
        self.model = policy.model
        self.keep_recent = policy.keep_recent
        self.pin_user_messages = policy.pin_user_messages
        self.low_water = policy.low_water
        self.small_talk_tokens = policy.small_talk_tokens
        self.pin_tool = policy.pin_tool
        self.compression = policy.compression
        self.log = log if log is not None else MemoryLog()
        self._async_client = policy.client is not None and is_async(policy.client)
        self._answering = False  # a lap of abuild, whose policy's client answers for the async one
        self.counter = counter or self.budget.counter()
        if self.budget.model is not None and isinstance(counter, TokenCounter) and not isinstance(counter, _CountWith) \
                and counter.model != self.budget.model:
            raise ConfigError(
                f"the counter counts for {counter.model or 'no model (cl100k_base)'!r} but the budget is for "
                f"{self.budget.model!r}: leave counter out and the budget's model picks it"
            )
        self.state = AssemblyState()
        self._static: list[Message] = []
        self._elastic: list[Message] = []
        self._counts: list[int] = []  # tokens of each elastic message
        self._pieces: list[_Pieces | None] = []  # how each elastic message was encoded, when in pieces
        self._pieces_kept_from = 0  # elastic index before which no pieces are kept (out of the prompt)
        self._in_pieces = (type(self.counter).message is TokenCounter.message and self.counter._line_cuts
                           and self.counter.model is None)
        self._checker = MessageChecker()
        self._memo: dict = {}
        self._tokens = 0  # of the elastic part
        self.counter.tools(tools)  # checks the schemas now, not at the first lap
        self._fixed: int | None = None  # the fixed prefix's tokens, counted when first needed
        self._starts: list[int] = []  # elastic index of each group's first message
        self._pinned: list[int] = []  # numbers of the pinned groups, ascending
        self._pinned_set: set[int] = set()
        self._window: _Window | None = None  # what the last lap's prompt held, kept up to date
        self._sendable_static: list[dict[str, Any]] | None = None
        self._summary_cache: tuple[str, dict[str, Any], int] | None = None
        self._pad_cache: tuple[tuple, dict[str, Any], int, list] | None = None
        self._collecting = False
        self._first_user_seen = False
        self._max_step = 0
        self._lap: int | None = None  # the latest assistant message's lap (ctxlab.assembly.lap_of)
        self._last_given: Message | None = None

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
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
            raise MessageError(
                f"message list: expected a list of message dicts, got {type(messages).__name__}; "
                "wrap a single message in a list (or pass it to append)"
            )
        originals = list(messages)
        batch = [_plain(message) for message in originals]  # an SDK object is kept as its dump
        trial = self._checker.fork()
        first = len(self)
        for offset, message in enumerate(batch):
            index = first + offset
            problems = trial.check(index, message)
            if not problems and (is_summary(message) or is_scratchpad_message(message)):
                kind = "summary" if is_summary(message) else "scratchpad"
                problems = [(index, f"the history holds a {kind} message; pass the run's full record "
                             "(e.g. TrajectoryStore.load()) and the summary so far as state=AssemblyState(...): "
                             "the summary and the scratchpad are added to the prompt for you")]
            if problems:
                where, problem = problems[0]
                raise MessageError(f"message {where}: {problem}", index=where)
        given, last = batch, self._lap
        batch = []
        for message in given:  # each message with its lap (number_laps), as build_context gives it
            lap = lap_of(message, last)
            if message.get("role") == "assistant":
                last = lap
            batch.append(message if message.get("step").__class__ is int else {**message, "step": lap})
        if self._in_pieces:
            counts = [self._count_new(m) for m in batch]
        else:
            count = self.counter.message
            counts = [(count(m), None) for m in batch]
        trial.commit()
        self._add(batch, counts)
        if given:
            self._lap, self._last_given = last, originals[-1]

    def _count_new(self, message: Message) -> tuple[int, _Pieces | None]:
        """A new message's tokens, and the pieces it was encoded in (see :class:`_Pieces`) when it
        is a tool result of text that compressing by age will cut into head and tail."""
        cut = self._head_and_tail(message)
        if cut is None:
            return self.counter.message(message), None
        content = message["content"]
        head_end, _note, tail_start = cut
        head, tail = _line_start_before(content, head_end), _line_start_after(content, tail_start)
        tokens, pieces = self.counter._message_in_pieces(message, content, (head, tail))
        if pieces is None:
            return tokens, None
        return tokens, _Pieces(head, tail, pieces[0], pieces[-1])

    def _head_and_tail(self, message: Message) -> tuple[int, str, int] | None:
        """Where ``compress`` will cut a tool result that ages (``ctxlab.compression._text_cut``),
        or ``None``: not such a result, or its counter cannot count in pieces."""
        if not self._in_pieces or message.get("role") != "tool" or message.get("pinned") is True:
            return None
        lap = message.get("step")
        if lap.__class__ is not int:
            return None
        return _text_cut(message.get("content"), self.compression["max_chars"])

    def _count_view(self, e: int, view: Message) -> int:
        """The tokens of ``view``, the compressed view of the tool result at elastic index ``e``:
        from the pieces the result was encoded in when it has them, so only the text between its
        head and its tail (the cut note and the lines it cuts into) is encoded."""
        pieces = self._pieces[e]
        text = view.get("content")
        if pieces is None or text.__class__ is not str:
            return self.counter.message(view)
        self._pieces[e] = None  # the counter remembers the view from now on
        content = self._elastic[e]["content"]
        return self.counter._message_reusing(view, text, content[:pieces.head], pieces.head_tokens,
                                             content[pieces.tail:], pieces.tail_tokens)

    def _forget_pieces(self, cut: int) -> None:
        """Drop the pieces of the messages before ``cut``: the prompt holds no view of them
        (only pinned groups, whose results do not age, or count from the counter's memory)."""
        pieces = self._pieces
        for e in range(self._pieces_kept_from, min(cut, len(pieces))):
            pieces[e] = None
        self._pieces_kept_from = max(self._pieces_kept_from, cut)

    def _add(self, batch: list[Message], counts: list[tuple[int, _Pieces | None]]) -> None:
        """Put checked, numbered and counted messages into the record: the leading system
        messages into the static prefix, the rest into turn groups, each group noted as pinned
        when a message in it pins itself (or is the task, or any user message with
        ``pin_user_messages``). One loop over locals: a first context holds the whole run."""
        static, elastic, starts, per_message, pieces_of = (
            self._static, self._elastic, self._starts, self._counts, self._pieces)
        pinned_groups, pinned_set, pin_tool, pin_users = (
            self._pinned, self._pinned_set, self.pin_tool, self.pin_user_messages)
        max_step, collecting, first_user_seen = self._max_step, self._collecting, self._first_user_seen
        added = 0
        try:
            for message, (tokens, pieces) in zip(batch, counts, strict=True):
                role = message.get("role")
                step = message.get("step")
                if step.__class__ is int and step > max_step:
                    max_step = step
                if not elastic and role in PINNED_ROLES:
                    static.append(message)
                    self._fixed = None
                    continue
                if not (role == "tool" and collecting):
                    starts.append(len(elastic))
                    collecting = role == "assistant" and bool(message.get("tool_calls"))
                group = len(starts) - 1
                pinned = pins_itself(message, pin_tool)
                if role == "user":
                    pinned = pinned or pin_users or not first_user_seen
                    first_user_seen = True
                if pinned and (not pinned_groups or pinned_groups[-1] != group):
                    pinned_groups.append(group)
                    pinned_set.add(group)
                elastic.append(message)
                per_message.append(tokens)
                pieces_of.append(pieces)
                added += tokens
        finally:
            self._max_step, self._collecting, self._first_user_seen = max_step, collecting, first_user_seen
            self._tokens += added

    # --- assembling -----------------------------------------------------------------------------

    def context(self, history: Sequence[Message], *, scratchpad: Scratchpad | None = None,
                step: int | None = None) -> Context:
        """The prompt for the record ``history``, which must continue the one followed so far
        (the same messages first, then new ones): the new ones are added, then :meth:`build`."""
        self._follow(history)
        return self.build(scratchpad=scratchpad, step=step)

    async def acontext(self, history: Sequence[Message], *, scratchpad: Scratchpad | None = None,
                       step: int | None = None) -> Context:
        """:meth:`context` for a policy whose client is async (``openai.AsyncOpenAI``): the same
        prompt, awaiting each summary (see :meth:`abuild`).

        >>> import asyncio
        >>> assembler = Assembler(ContextBudget(window=1_000, reserve_output=200))
        >>> context = asyncio.run(assembler.acontext([{"role": "user", "content": "Fix #412."}]))
        >>> [m["role"] for m in context.messages]
        ['user']
        """
        self._follow(history)
        return await self.abuild(scratchpad=scratchpad, step=step)

    async def abuild(self, *, scratchpad: Scratchpad | None = None, step: int | None = None) -> Context:
        """:meth:`build` with the policy's client awaited: an async client (or a synchronous
        one, whose calls then block the event loop). It runs the same lap; a lap that must
        summarise stops where it asks, awaits the summary (with :func:`ctxlab.llm.acomplete`'s
        retries) and runs again with it, its stopped run leaving no trace (:mod:`ctxlab.aio`).
        A summariser that keeps failing raises :class:`ctxlab.SummaryError`, or trims that lap
        under ``on_summary_error="trim"``, as in :meth:`build`."""
        client = self.policy.client
        if client is None:
            return self.build(scratchpad=scratchpad, step=step)
        from .aio import _Unanswered, answered_by

        def lap(stand_in: Any) -> Context:
            policy, mark = self.policy, len(self.log)
            self.policy, self._answering = policy.replace(client=stand_in), True
            try:
                return self.build(scratchpad=scratchpad, step=step)
            except _Unanswered:
                del self.log._events[mark:]  # this run of the lap is taken back; it runs again
                raise
            finally:
                self.policy, self._answering = policy, False

        return await answered_by(client, lap)

    def _follow(self, history: Sequence[Message]) -> None:
        """Add what ``history`` holds beyond the record followed so far (it must continue it)."""
        seen = len(self)
        if len(history) < seen or (seen and history[seen - 1] is not self._last()):
            raise ConfigError(
                "this history does not continue the one the assembler has followed (it is shorter, "
                "or its earlier messages changed); an Assembler follows one growing record: make a "
                "new one for another run"
            )
        self.extend(history[seen:])

    def _fixed_tokens(self) -> int:
        """Tokens of the fixed prefix: the static messages, the tool schemas and the reply
        priming, as the counter counts them (:meth:`ctxlab.TokenCounter.prefix`)."""
        if self._fixed is None:
            self._fixed = self.counter.prefix(self._static, self.tools)
        return self._fixed

    def _group_of(self, start: int) -> int:
        """The number of the group that starts at elastic index ``start``."""
        return bisect.bisect_left(self._starts, start)

    def _last(self) -> Message | None:
        """The last message given (the caller's object, not the record's numbered copy)."""
        return self._last_given

    def build(self, *, scratchpad: Scratchpad | None = None, step: int | None = None) -> Context:
        """The prompt for the next model call, and the state moves on (see :func:`ctxlab.build_context`).

        A lap that does not cut (the history fits its allowance) is made from what the previous
        lap kept: only the new messages, and the tool results whose age tier changes, are looked
        at. A lap that cuts, or any lap the kept window cannot answer, runs the full pipeline.
        """
        step = self._ready(step)
        fast = self._fast(scratchpad, step)
        if fast is not None:
            self.state = fast.state
            return fast
        return self._full(scratchpad, step)

    def _ready(self, step: int | None) -> int:
        """Refuse a record left with calls unanswered or a state that is not its own, and a
        synchronous lap with an async client; the lap."""
        if self._async_client and not self._answering:
            raise ConfigTypeError(
                "the policy's client is async (openai.AsyncOpenAI or similar), and build_context, "
                "Assembler.context and Assembler.build are synchronous: await "
                "Assembler(policy, tools=...).acontext(history, ...) instead, or give the policy a "
                "synchronous client (openai.OpenAI(...), ctxlab.get_client())"
            )
        waiting = self._checker.finish()
        if waiting:
            index, problem = waiting[0]
            raise MessageError(f"message {index}: {problem}", index=index)
        self._check_state()
        return self._max_step if step is None else step

    def _full(self, scratchpad: Scratchpad | None, step: int) -> Context:
        """The lap by the full pipeline (:func:`ctxlab.assembly.assemble`), which gives the same
        prompt as the kept window when nothing is cut. :func:`ctxlab.build_context` runs only
        this: for one lap, building the window first would be work thrown away when it cuts."""
        self._window = None
        fixed = self._fixed_tokens()
        context = assemble(
            self._static, self._elastic, self.policy, self.state, pinned=self._pinned_spans(),
            scratchpad=scratchpad, step=step, log=self.log, count=self.counter.message,
            fixed=fixed, record_tokens=fixed + self._tokens, memo=self._memo,
        )
        context.messages = [_copy(m) for m in context.messages]  # nothing the caller changes reaches the record
        self.state = context.state
        return context

    def _check_state(self) -> None:
        """Refuse a state (set from outside, as ``build_context`` does) that cuts this record
        where no cut can be: past its end, or inside a turn group."""
        cut, size = self.state.cut, len(self._elastic)
        if cut > size:
            raise ConfigError(
                f"state.cut is {cut} but the history has only {size} messages after its system prompt: "
                "this state belongs to another (longer) history"
            )
        if 0 < cut < size:
            group = bisect.bisect_left(self._starts, cut)
            if group == len(self._starts) or self._starts[group] != cut:
                raise ConfigError(f"state.cut ({cut}) does not fall between turn groups of this history")

    def _pinned_spans(self) -> list[tuple[int, int]]:
        """The elastic ``(start, stop)`` of every pinned group (the pin rule ran on arrival)."""
        return self._pinned_before(len(self._elastic) + 1)

    def _pinned_before(self, cut: int) -> list[tuple[int, int]]:
        """The elastic ``(start, stop)`` of the pinned groups that start before ``cut``."""
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
            window = _Window(self, self.state.cut, step)
            self._window = None
        else:
            window.catch_up(step)
        if window.unsafe:
            return None
        self._window = window
        budget = self.budget
        pad_message, pad_tokens, pad_events = self._pad(scratchpad, step)
        fixed = self._fixed_tokens()
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
        for kind, fields in pad_events:
            self.log.record(kind, lap=step, **fields)
        window.log_compress(self.log, step, self.compression)
        head_groups, head_tokens, head_stop = window.head()
        body = window.copies()
        messages = in_prompt_order([_copy(m) for m in self._static_sendable()], body[:head_stop],
                                   _copy(summary_msg) if summary_msg is not None else None, body[head_stop:],
                                   pad_message)  # the pad's message is already a new dict
        dropped = window.dropped
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

    def _pad(self, scratchpad: Scratchpad | None, step: int) -> tuple[dict[str, Any] | None, int, list]:
        """The scratchpad's sendable message within its cap (a new dict, the caller's), its
        tokens, and the events its rendering records, as ``(kind, fields)`` pairs.

        A :class:`ctxlab.Scratchpad` whose fields are all strings is rendered once per change:
        its rendering is a function of those fields, so a lap whose fields equal the last
        rendered ones reuses that message, count and events."""
        if scratchpad is None:
            return None, 0, []
        key = _pad_key(scratchpad)
        cached = self._pad_cache
        if key is not None and cached is not None and cached[0] == key:
            return cached[1].copy(), cached[2], cached[3]
        pad_log = MemoryLog()
        message, tokens = _bounded_pad(scratchpad, self.budget, self.counter.message, pad_log, step)
        events = [(e.kind, {"tokens_before": e.tokens_before, "tokens_after": e.tokens_after,
                            "messages": e.messages, "detail": e.detail, **e.data}) for e in pad_log]
        sendable = strip_course_keys([message])[0] if message is not None else None
        if key is not None and sendable is not None:
            self._pad_cache = (key, sendable, tokens, events)
            return sendable.copy(), tokens, events
        return sendable, tokens, events

    def _summary(self, summary: str) -> tuple[dict[str, Any], int]:
        if self._summary_cache is None or self._summary_cache[0] != summary:
            message = summary_message(summary)
            self._summary_cache = (summary, strip_course_keys([message])[0], self.counter.message(message))
        return self._summary_cache[1], self._summary_cache[2]


class _CountWith(TokenCounter):
    """A :class:`ctxlab.TokenCounter` that counts a message with a function of one's own (the
    ``count`` :func:`ctxlab.build_context` takes) and the tool schemas by the rule."""

    def __init__(self, count: Callable[[Message], int]) -> None:
        super().__init__()
        self._count = count

    def message(self, message: Message) -> int:
        return self._count(message)

    def tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        return count_tools(tools)


def counter_for(count: Callable[[Message], int] | None) -> TokenCounter | None:
    """The counter that counts as ``count`` does: its own counter when ``count`` is a
    :class:`ctxlab.TokenCounter`'s ``message`` (``None`` for a new one when it is ``None``).

    >>> counter = TokenCounter()
    >>> counter_for(counter.message) is counter, counter_for(len).message({"a": 1})
    (True, 1)
    """
    if count is None:
        return None
    owner = getattr(count, "__self__", None)
    if isinstance(owner, TokenCounter) and getattr(count, "__func__", None) is type(owner).message:
        return owner
    return _CountWith(count)


def _pad_key(pad: Any) -> tuple | None:
    """What a :class:`ctxlab.Scratchpad`'s message is a function of: its fields, flattened, or
    ``None`` when one holds anything but strings (an item that may change in place) or the pad
    is a subclass (which may render differently).

    >>> _pad_key(Scratchpad(goal="g", done=["read a"])) == _pad_key(Scratchpad(goal="g", done=["read a"]))
    True
    >>> _pad_key(Scratchpad(goal="g", done=["read a"])) == _pad_key(Scratchpad(goal="g", remaining=["read a"]))
    False
    >>> _pad_key(Scratchpad(goal="g", failed={"f {}": "x"})) == _pad_key(Scratchpad(goal="g", retry_later={"f {}": "x"}))
    False
    """
    if pad.__class__ is not Scratchpad:
        return None
    facts, failed, later = pad.facts, pad.failed, pad.retry_later
    lists = (pad.done, pad.remaining, pad.open_questions)
    if any(x.__class__ is not dict for x in (facts, failed, later)) or any(x.__class__ is not list for x in lists):
        return None
    flat = (pad.goal, *facts, *facts.values(), *failed, *failed.values(), *later, *later.values(),
            *lists[0], *lists[1], *lists[2])
    for item in flat:
        if item.__class__ is not str:
            return None
    return flat, len(facts), len(failed), len(later), len(lists[0]), len(lists[1])


def _needs_deep_copy(message: Mapping[str, Any]) -> bool:
    """True when a copy of ``message`` needs more than ``dict.copy`` (see :func:`_deepen`)."""
    return message.get("tool_calls").__class__ is list or message.get("content").__class__ is list


Calls = tuple[tuple[dict[str, Any], dict[str, Any]], ...]


def _sendable(view: Message) -> tuple[dict[str, Any], Calls | None, bool]:
    """The view's sendable message for the cache (course keys stripped), which owns its
    nested containers, and how a copy of it is made for the caller: ``calls``, the
    ``(call, function)`` pairs of tool calls that are plain dicts (when they and a ``content``
    that is not a list are all it nests), or ``deep`` for any other nesting (:func:`_deepen`).

    >>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    >>> view = {"role": "assistant", "content": None, "tool_calls": [call], "step": 3}
    >>> sendable, calls, deep = _sendable(view)
    >>> sendable == {"role": "assistant", "content": None, "tool_calls": [call]}, calls is not None, deep
    (True, True, False)
    >>> sendable["tool_calls"][0] is call, calls[0] == (sendable["tool_calls"][0], call["function"])
    (False, True)
    """
    sendable = {key: value for key, value in view.items() if key not in COURSE_KEYS}
    if not _needs_deep_copy(sendable):
        return sendable, None, False
    _deepen(sendable)  # the cache's own containers: an edit of the record's cannot reach them
    calls = sendable.get("tool_calls")
    if calls.__class__ is list and sendable.get("content").__class__ is not list and _plain_calls(calls):
        return sendable, tuple((call, call["function"]) for call in calls), False
    return sendable, None, True


def _copy_calls(body: list[dict[str, Any]], shapes: Mapping[int, Calls]) -> None:
    """Give each message ``body[k]`` (a ``dict.copy`` of a cached one) new tool calls, each
    call and its ``function`` copied: ``shapes`` maps ``k`` to the cached pairs."""
    for k, pairs in shapes.items():
        calls = []
        for call, function in pairs:
            call = call.copy()
            call["function"] = function.copy()
            calls.append(call)
        body[k]["tool_calls"] = calls


def _plain_calls(calls: list) -> bool:
    """True when every call is a dict whose ``function`` is a dict (what the API sends)."""
    for call in calls:
        if call.__class__ is not dict or call.get("function").__class__ is not dict:
            return False
    return True


def _deepen(out: dict[str, Any]) -> dict[str, Any]:
    """Make the shallow copy ``out`` one the caller may change freely: its ``tool_calls`` list,
    each call and its ``function``, and a list ``content`` and its parts become new; strings
    and other values inside are shared (they cannot be changed in place)."""
    calls = out.get("tool_calls")
    if calls.__class__ is list:
        if _plain_calls(calls):
            out["tool_calls"] = [{**call, "function": call["function"].copy()} for call in calls]
        else:
            out["tool_calls"] = [_copy_call(call) for call in calls]
    content = out.get("content")
    if content.__class__ is list:
        out["content"] = [dict(part) if isinstance(part, dict) else part for part in content]
    return out


def _copy_call(call: Any) -> Any:
    """A tool call of any shape, its nested ``function`` or ``custom`` object copied too."""
    if not isinstance(call, dict):
        return call
    call = dict(call)
    for key in CALL_TYPES:
        if isinstance(call.get(key), dict):
            call[key] = dict(call[key])
    return call


def _copy(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of a cached sendable message the caller may change freely (see :func:`_deepen`).

    >>> cached = {"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    >>> mine = _copy(cached)
    >>> mine == cached, mine["tool_calls"][0]["function"] is cached["tool_calls"][0]["function"]
    (True, False)
    """
    return _deepen(message.copy())


class _Window:
    """The compressed view of what can be in the prompt at one cut (the pinned groups before
    it, every group from it on), kept up to date as messages arrive and tool results age.

    It holds what ``Middle.of`` would compute for that cut, built once per cut and then
    extended: the view of each message (a tool result compressed for its age tier), its tokens
    and its sendable copy (course keys stripped), the turn groups with their tokens and pins,
    and the running totals, so a lap that does not cut recounts nothing it has seen.
    """

    def __init__(self, owner: Assembler, cut: int, step: int) -> None:
        # A proxy, not the assembler itself: the assembler holds its window, and a window that
        # held the assembler would make a cycle, so a dropped assembler (its record, counts and
        # caches) would wait for a full garbage collection, which then frees it all on some later,
        # unrelated call (~200 ms at 10,000 messages) instead of at once.
        self.owner = weakref.proxy(owner)
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
        self.changed: dict[int, dict[str, Any]] = {}  # view index -> its entry in the compress event (age aside)
        self.changed_before = 0  # tokens of the replaced results, in full
        self.changed_after = 0  # and of what replaces them
        self.compress_event: tuple | None = None  # the compress event's parts, kept until a result changes
        self.call_shapes: dict[int, Calls] = {}  # view index -> the tool calls its copy copies
        self.deep: set[int] = set()  # view indices whose copy needs _deepen
        self.heap: list[tuple[int, int]] = []  # (step of the next tier change, view index)
        options = owner.compression
        self.keep_full_for = options["keep_full_for"]
        self.compress_after = options["compress_after"]
        starts = owner._starts
        owner._forget_pieces(cut)
        pinned_before = owner._pinned_before(cut)
        for start, stop in pinned_before:
            self._add_group(owner._group_of(start))
            for e in range(start, stop):
                self._add(e)
        self.next_group = bisect.bisect_left(starts, cut)  # the first group from the cut on
        self.covered = cut
        runs, previous = [], 0
        for start, stop in pinned_before:
            runs.append((previous, start))
            previous = stop
        runs.append((previous, cut))
        # what is out of the prompt does not change until the next cut: one read-only view of
        # the record serves every lap (copying ~10,000 messages a lap would grow with the run)
        self.dropped = MessageRuns(owner._elastic, runs)
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
        """True when the tool result at ``k`` is one ``compress_history`` shrinks by age
        (:func:`ctxlab.compression.ages`), its caller marked as the pipeline marks it
        (:func:`ctxlab.pins.marked_caller`)."""
        message = self.owner._elastic[self.positions[k]]
        if message.get("role") != "tool":
            return False
        return ages(message, result_text(message.get("content")), marked_caller(self._caller(k), self.owner.pin_tool))

    def _tier(self, lap: int, step: int) -> tuple[str, int | None]:
        """The tier of a result of lap ``lap`` at ``step`` (:func:`ctxlab.compression.age_tier`),
        and the step of its next change."""
        tier = age_tier(step - lap, self.keep_full_for, self.compress_after)
        if tier == "full":
            return tier, lap + self.keep_full_for + 1
        if tier == "compressed" and self.compress_after is not None:
            return tier, lap + self.compress_after + 1
        return tier, None

    def _retier(self, k: int) -> None:
        original = self.owner._elastic[self.positions[k]]
        tier, change = self._tier(original["step"], self.step)
        if change is not None:
            heapq.heappush(self.heap, (change, k))
        if self.tiers.get(k) == tier:
            return
        first = k not in self.tiers
        self.tiers[k] = tier
        if tier == "full":
            if first:  # a new result, already in the window in full with its count: nothing changes
                return
            view: Message = original
        else:
            text = result_text(original["content"])
            options = self.owner.compression
            aged, kind, ref = _aged_view(original, text, self._call_of(k), tier, max_chars=options["max_chars"],
                                         store=options["store"], memo=self.owner._memo)
            view = original if aged is None else aged
        full_tokens = self.owner._counts[self.positions[k]]
        if self.changed.pop(k, None) is not None:
            self.changed_before -= full_tokens
            self.changed_after -= self.tokens[k]
        self.compress_event = None
        self._set(k, view, full_tokens if view is original else self.owner._count_view(self.positions[k], view))
        if view is not original:
            self.changed[k] = {
                "index": k, "tool_call_id": original.get("tool_call_id"), "lap": original["step"], "age": 0,
                "tier": kind, "chars_before": len(text), "chars_after": len(view["content"]), "ref": ref,
            }
            self.changed_before += full_tokens
            self.changed_after += self.tokens[k]

    def _call_of(self, k: int) -> Mapping[str, Any]:
        """The tool call the result at ``k`` answers (``{}`` when none in the window does)."""
        wanted = self.views[k].get("tool_call_id")
        for call in self._caller(k).get("tool_calls") or []:
            if isinstance(call, Mapping) and call.get("id") == wanted:
                return call
        return {}

    def _set(self, k: int, view: Message, tokens: int) -> None:
        group = bisect.bisect_right(self.group_starts, k) - 1
        self.group_tokens[group] += tokens - self.tokens[k]
        self.total += tokens - self.tokens[k]
        self.tokens[k] = tokens
        self.views[k] = view
        self.sendable[k], calls, deep = _sendable(view)
        if calls is not None:
            self.call_shapes[k] = calls
        else:
            self.call_shapes.pop(k, None)
        if deep:
            self.deep.add(k)
        else:
            self.deep.discard(k)

    def copies(self) -> list[dict[str, Any]]:
        """Copies of the sendable messages that the caller may change (as :func:`_copy` makes):
        a ``dict.copy`` each, then new tool calls by each message's kept shape, and
        :func:`_deepen` for any other nesting."""
        body = list(map(dict.copy, self.sendable))
        _copy_calls(body, self.call_shapes)
        for k in self.deep:
            _deepen(body[k])
        return body

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
        leading = pinned_head(self.group_pinned)
        stop = self.group_starts[leading] if leading < len(self.group_starts) else len(self.views)
        return list(range(leading)), sum(self.group_tokens[:leading]), stop

    def log_compress(self, log: MemoryLog, step: int, compression: Mapping[str, Any]) -> None:
        """The ``compress`` event ``compress_history`` records for this view.

        Its parts (the results in order, their entries, the detail line) are made once per
        change of a result's view; a lap only fills in each result's age."""
        if not self.changed:
            return
        if self.compress_event is None:
            order = sorted(self.changed)
            entries = [self.changed[k] for k in order]
            elastic, positions = self.owner._elastic, self.positions
            replaced = tuple(elastic[positions[k]] for k in order)
            stubs = sum(1 for entry in entries if entry["tier"] == "reference")
            keep_full_for, compress_after = compression["keep_full_for"], compression["compress_after"]
            detail = (
                f"{len(entries) - stubs} tool result(s) older than {keep_full_for} laps compressed "
                f"to {compression['max_chars']:,} chars"
                + (f"; {stubs} older than {compress_after} laps replaced by references" if stubs else "")
            )
            self.compress_event = (entries, replaced, detail)
        entries, replaced, detail = self.compress_event
        changes = []
        for entry in entries:  # each lap's own entries, with their ages
            change = entry.copy()
            change["age"] = step - change["lap"]
            changes.append(change)
        log.record(
            "compress", lap=step, tokens_before=self.changed_before, tokens_after=self.changed_after,
            messages=replaced, detail=detail, changes=changes,
        )
