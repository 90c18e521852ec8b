"""Four reference memory policies, the ones lesson 06 compares over a long run.

A **policy** turns the history so far into the prompt of the next model call. It is an object
called as ``policy(history, lap=..., budget=..., tools=...)`` that returns the prompt's
messages (ready for the API: course keys stripped). It follows one growing history from lap to
lap, keeps its decisions in ``policy.log`` (a :class:`ctxlab.MemoryLog`), and ``reset()``
starts it over. :func:`ctxlab.replay` steps a transcript through one.

========================  =========================================================================
:class:`KeepEverything`   the whole history, every lap; it overflows the window on a long run
:class:`TruncateOldest`   the system prompt, then as many of the newest turn groups as fit
:class:`Summarise`        pins kept; when over budget, older groups rolled into one summary
:class:`Assemble`         :func:`ctxlab.build_context`: pins, one roll-up summary, tool results
                          compressed by age, a scratchpad kept by code, high/low-water trims
========================  =========================================================================

The same objects are the policies of the window layout (``ctxlab.course.layout``, the widget): there
each lap is assembled afresh. One name per idea: keeping everything is :class:`KeepEverything`
(the layout's function ``keep_everything`` is deprecated); :class:`Summarise` is the strategy
"summarise", :func:`ctxlab.trim_and_summarise` lap after lap.

>>> import ctxlab
>>> import ctxlab.course
>>> research = ctxlab.course.load_transcript("research")
>>> budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=1_000)
>>> prompt = TruncateOldest()(research[:60], lap=30, budget=budget)
>>> prompt[0]["role"], any(m["content"] == research[1]["content"] for m in prompt)
('system', False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .assembler import Assembler
from .assembly import AssemblyState
from .budget import ContextBudget
from .errors import ConfigError
from .events import MemoryLog
from .memory_policy import MemoryPolicy
from .messages import strip_course_keys
from .pins import PIN_TOOL
from .scratchpad import Scratchpad, update_scratchpad
from .tokens import TokenCounter
from .trimming import PINNED_ROLES, turn_group_spans

if TYPE_CHECKING:  # pragma: no cover
    from .store import TrajectoryStore

__all__ = ["Policy", "KeepEverything", "TruncateOldest", "Summarise", "Assemble"]

Message = Mapping[str, Any]


def _leading_static(messages: Sequence[Message]) -> int:
    n = 0
    while n < len(messages) and messages[n].get("role") in PINNED_ROLES:
        n += 1
    return n


class Policy:
    """The base of the reference policies: a name, a log, ``reset()`` and the call.

    Subclasses implement ``prompt(history, lap, budget, tools)``; calling the policy checks
    that the history continues the one it follows and returns the prompt with course keys
    stripped.

    >>> KeepEverything()([{"role": "user", "content": "hi", "step": 0}], lap=1,
    ...                  budget=ContextBudget(window=100, reserve_output=10))
    [{'role': 'user', 'content': 'hi'}]
    """

    name = "policy"

    def __init__(self) -> None:
        self.log = MemoryLog()
        self.counter = TokenCounter()
        self.reset()

    def reset(self) -> None:
        """Forget the history followed so far (the log keeps its events)."""
        self._seen = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __call__(
        self,
        history: Sequence[Message],
        *,
        lap: int,
        budget: ContextBudget,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        if len(history) < self._seen:
            raise ConfigError(
                f"{self.name}: the history is shorter than the one followed so far "
                f"({len(history)} < {self._seen} messages); call reset() to start a new run"
            )
        self._seen = len(history)
        model = getattr(budget, "model", None)  # a learner's own budget class may have none
        if self.counter.model != model:  # count as the API bills the budget's model
            self.counter = TokenCounter(model=model)
        return strip_course_keys(self.prompt(list(history), lap, budget, tools))

    def prompt(self, history: list[Message], lap: int, budget: ContextBudget, tools) -> list[Message]:
        raise NotImplementedError

    def allowance(self, budget: ContextBudget, tools, static: Sequence[Message] = ()) -> int:
        """Tokens the messages after ``static`` may take, with no scratchpad."""
        return budget.history_allowance(self.counter.prefix(static, tools), 0)


class KeepEverything(Policy):
    """Send the whole history every lap; never trim. The prompt grows until it overflows.

    >>> KeepEverything().name
    'keep everything'
    """

    name = "keep everything"

    def prompt(self, history, lap, budget, tools):
        return history


class TruncateOldest(Policy):
    """Keep the system prompt and the newest turn groups that fit; drop the oldest, every lap.

    Nothing is pinned but the system prompt, so the task and any early instruction go first.
    The newest group is kept even when it alone is over budget.

    >>> TruncateOldest().name
    'truncate oldest'
    """

    name = "truncate oldest"

    def prompt(self, history, lap, budget, tools):
        n = _leading_static(history)
        static, rest = history[:n], history[n:]
        allowance = self.allowance(budget, tools, static)
        spans = turn_group_spans(rest)
        total = sum(self.counter.message(m) for m in rest)
        first = 0
        while first < len(spans) - 1 and total > allowance:
            start, stop = spans[first]
            total -= sum(self.counter.message(m) for m in rest[start:stop])
            first += 1
        start = spans[first][0] if spans else 0
        if start:
            self.log.record(
                "trim", lap=lap, tokens_before=sum(self.counter.message(m) for m in rest),
                tokens_after=total, messages=rest[:start],
                detail=f"dropped the {first} oldest turn groups ({start} messages) to fit {allowance:,} tokens",
            )
        return [*static, *rest[start:]]


class Summarise(Policy):
    """Pins kept; when the history is over budget, older groups are rolled into ONE summary.

    Uses :func:`ctxlab.trim_and_summarise` on the prompt it kept last lap plus what arrived
    since, with ``client`` (default :func:`ctxlab.get_client`): it trims whenever the prompt is
    over its allowance, keeping a fifth of it for the summary.

    >>> Summarise().name
    'summarise'
    """

    name = "summarise"

    def __init__(self, client: Any = None, *, keep_recent: int = 1, model: str | None = None) -> None:
        from .llm import get_client

        self.client = client if client is not None else get_client()
        self.keep_recent = keep_recent
        self.model = model
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self._view: list[Message] = []
        self._taken = 0

    def prompt(self, history, lap, budget, tools):
        from .summarising import trim_and_summarise

        self._view += history[self._taken :]
        self._taken = len(history)
        allowance = self.allowance(budget, tools)
        if sum(self.counter.message(m) for m in self._view) > allowance:
            self._view = trim_and_summarise(
                self._view, allowance, client=self.client, keep_recent=self.keep_recent,
                count=self.counter.message, model=self.model, log=self.log, lap=lap,
            )
        return list(self._view)


class Assemble(Policy):
    """The whole assembler: :func:`ctxlab.build_context` lap after lap, with its state (run by
    an :class:`ctxlab.Assembler`, which gives the same prompts at the cost of what is new).

    Pins (system prompt, the task, every user message), one roll-up summary of what is cut,
    tool results compressed by age, and a :class:`ctxlab.Scratchpad` kept by code
    (:func:`ctxlab.scratchpad.update_scratchpad` after every tool result) rendered last. Its goal is the
    first paragraph of the first user message (or ``goal``). Trims are high/low water: down
    to ``low_water`` of the allowance when over it (``low_water=1`` trims just enough on every
    lap). ``name`` labels it in tables and plots. The other options are
    :func:`ctxlab.build_context`'s; as there, the small-talk stage of eviction is off unless
    asked for (``small_talk_tokens=ctxlab.eviction.SMALL_TALK_MAX_TOKENS``), since a short user
    instruction may be a constraint. A call of the pin tool (``pin_tool``, by default
    :data:`ctxlab.pins.PIN_TOOL`; ``None`` recognises none) is pinned with its results, as there.

    >>> Assemble(low_water=1.0).name
    'pins + summary + scratchpad + age compression (trim every lap)'
    >>> Assemble().options["small_talk_tokens"], Assemble(small_talk_tokens=40).options["small_talk_tokens"]
    (0, 40)
    >>> Assemble().options["pin_tool"], Assemble(pin_tool=None).options["pin_tool"]
    ('pin', None)
    """

    def __init__(
        self,
        client: Any = None,
        *,
        low_water: float = 0.6,
        keep_recent: int = 1,
        pin_user_messages: bool = True,
        keep_full_for: int = 2,
        compress_after: int | None = None,
        max_chars: int = 1_200,
        store: TrajectoryStore | None = None,
        goal: str | None = None,
        model: str | None = None,
        extract: Callable[[Mapping[str, Any], Any], Mapping[str, str]] | None = None,
        name: str | None = None,
        small_talk_tokens: int = 0,
        pin_tool: str | None = PIN_TOOL,
    ) -> None:
        from .llm import get_client

        self.client = client if client is not None else get_client()
        self.options = dict(
            low_water=low_water, keep_recent=keep_recent, pin_user_messages=pin_user_messages,
            keep_full_for=keep_full_for, compress_after=compress_after, max_chars=max_chars,
            store=store, model=model, small_talk_tokens=small_talk_tokens, pin_tool=pin_tool,
        )
        self.goal = goal
        self.extract = extract
        self.name = name or "pins + summary + scratchpad + age compression" + (
            " (trim every lap)" if low_water >= 1 else ""
        )
        super().__init__()

    def reset(self) -> None:
        super().reset()
        self.state = AssemblyState()
        self._assembler: Assembler | None = None
        self.scratchpad: Scratchpad | None = None
        self._calls: dict[str, Mapping[str, Any]] = {}
        self._read = 0

    def _update(self, history: Sequence[Message]) -> Scratchpad:
        if self.scratchpad is None:
            task = next((m.get("content") for m in history if m.get("role") == "user"), None)
            goal = self.goal or (str(task).strip().split("\n\n")[0][:500] if task else "Finish the task.")
            self.scratchpad = Scratchpad(goal=goal)
        for message in history[self._read :]:
            for call in message.get("tool_calls") or []:
                self._calls[call["id"]] = call
            if message.get("role") == "tool" and message.get("tool_call_id") in self._calls:
                update_scratchpad(
                    self.scratchpad, self._calls[message["tool_call_id"]], message.get("content"),
                    step=message.get("step"), extract=self.extract,
                )
        self._read = len(history)
        return self.scratchpad

    def prompt(self, history, lap, budget, tools):
        pad = self._update(history)
        assembler = self._assembler
        if assembler is None or assembler.budget != budget or assembler.tools is not tools:
            policy = MemoryPolicy(budget, client=self.client, **self.options)
            assembler = self._assembler = Assembler(  # an Assembler costs what is new on each lap
                policy, tools=tools, log=self.log, counter=self.counter,
            )
            assembler.state = self.state
        context = assembler.context(history, scratchpad=pad, step=lap)
        self.state = context.state
        return context.messages
