"""An assembler kept across laps: each lap costs what is new, not the length of the run.

:func:`ctxlab.build_context` is a function of the whole record: on every lap it validates it,
finds its pinned groups and counts it again, so over a run of n laps its work grows with n
squared. An :class:`Assembler` follows one growing record instead. Each message is validated,
counted and grouped once, when it arrives; each tool result is compressed once per age tier;
and a lap looks only at what can be in the prompt (the pinned groups and the record from the
last cut on). It gives the same prompts as ``build_context`` with the state passed from lap
to lap.

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

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .assembly import AssemblyState, Context, _check_fraction, _tools_tokens, assemble
from .budget import ContextBudget
from .errors import MessageError
from .events import MemoryLog
from .messages import MessageChecker
from .scratchpad import is_scratchpad_message
from .summarising import is_summary
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

    >>> assembler = Assembler(ContextBudget(window=1_000, reserve_output=200))
    >>> assembler.extend([{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix #412."}])
    >>> [m["role"] for m in assembler.build().messages]
    ['system', 'user']
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
    ) -> None:
        _check_fraction(low_water)
        self.budget = budget
        self.tools = tools
        self.client = client
        self.model = model
        self.keep_recent = keep_recent
        self.pin_user_messages = pin_user_messages
        self.low_water = low_water
        self.compression = dict(keep_full_for=keep_full_for, compress_after=compress_after,
                                max_chars=max_chars, store=store)
        self.log = log if log is not None else MemoryLog()
        self.counter = counter or TokenCounter()
        self.state = AssemblyState()
        self._static: list[Message] = []
        self._elastic: list[Message] = []
        self._checker = MessageChecker()
        self._memo: dict = {}
        self._tokens = 0  # of the elastic part
        self._static_tokens = 0
        self._tools_tokens = _tools_tokens(tools, self.counter.message)
        self._starts: list[int] = []  # elastic index of each group's first message
        self._pinned: list[int] = []  # numbers of the pinned groups, ascending
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
        self._elastic.append(message)
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

    def _last(self) -> Message | None:
        if self._elastic:
            return self._elastic[-1]
        return self._static[-1] if self._static else None

    def build(self, *, scratchpad: Scratchpad | None = None, step: int | None = None) -> Context:
        """The prompt for the next model call, and the state moves on (see :func:`ctxlab.build_context`)."""
        waiting = self._checker.finish()
        if waiting:
            index, problem = waiting[0]
            raise MessageError(f"message {index}: {problem}", index=index)
        if step is None:
            step = self._max_step
        cut = self.state.cut
        pinned_before = []
        for group in self._pinned:
            start = self._starts[group]
            if start >= cut:
                break
            stop = self._starts[group + 1] if group + 1 < len(self._starts) else len(self._elastic)
            pinned_before.append((start, stop))
        fixed = self._static_tokens + self._tools_tokens + REPLY_PRIMING
        context = assemble(
            self._static, self._elastic, self.budget, self.state, pinned_before=pinned_before,
            tools=self.tools, scratchpad=scratchpad, client=self.client, model=self.model, step=step,
            keep_recent=self.keep_recent, pin_user_messages=self.pin_user_messages, low_water=self.low_water,
            compression=self.compression, log=self.log, count=self.counter.message, memo=self._memo,
            record_tokens=fixed + self._tokens, fixed=fixed,
        )
        self.state = context.state
        return context
