"""High-water/low-water trimming: trim rarely and deeply, so the prompt prefix stays stable.

Trimming just enough on every lap keeps the prompt near its limit, but it changes the start of
the prompt on every lap, and a provider's prompt cache only reuses a prefix it has seen before.
A :class:`HighLowTrimmer` lets the history grow until it passes the **high** mark, then trims
it (with :func:`ctxlab.fit`, or with :func:`ctxlab.trim_and_summarise` when given a client)
down to the **low** mark in one go. Between trims each prompt extends the previous one, so
the prefix is the same for many laps, and the number of trims over a run stays small.

To see the prompt every model call of a recorded run would get, call the trimmer before each
one: ``[trimmer(run[:i]) for i in ctxlab.model_calls(run)]`` (``replay_prompts``, which did
that, is deprecated: ``ctxlab.replay`` is the one replay, and it measures a policy's prompts).

>>> import ctxlab
>>> history = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
>>> trimmer = HighLowTrimmer(high=120, low=60)
>>> for lap in range(1, 21):
...     history.append({"role": "assistant", "content": "note " * 10, "step": lap})
...     prompt = trimmer(history)
>>> trimmer.trims, sum(ctxlab.count_message(m) for m in prompt) <= 120
(3, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._retired import retired
from .budget import model_calls
from .errors import ConfigError, MessageError
from .events import MemoryLog
from .messages import MessageChecker
from .tokens import TokenCounter
from .trimming import fit

__all__ = ["HighLowTrimmer", "count_trims"]

Message = Mapping[str, Any]


class HighLowTrimmer:
    """Trim a growing history only above ``high`` tokens, and then down to ``low``.

    Call it before every model call with the whole history so far (the same list, or a longer
    one that starts with the same messages); it returns the prompt's history: what it kept
    last time, plus what arrived since, trimmed when that passes ``high``. Every message is
    validated once, when it arrives, whether or not a trim follows: a malformed one raises
    :class:`ctxlab.MessageError` naming its index in the history (calls still waiting for
    their results at the end are fine: the agent is mid-lap).

    * ``high``, ``low``: token marks, ``0 < low < high``, compared with the sum of
      :func:`ctxlab.count_message` over the kept messages (reply priming is not included);
    * ``keep_recent``, ``count``: as in :func:`ctxlab.fit`. Each message is counted once over
      the trimmer's whole life, however many laps it stays;
    * ``client``: when given, dropped groups are rolled into one summary
      (:func:`ctxlab.trim_and_summarise`, with ``model``, ``summary_reserve`` and
      ``on_failure``: ``"raise"`` lets a :class:`ctxlab.SummaryError` through, ``"trim"``
      trims without a new summary and keeps the dropped messages in the log);
    * ``log``: a :class:`ctxlab.MemoryLog` that gets one event per trim (the dropped messages
      included); one is made when not given.

    ``trims`` counts the trims so far; ``reset()`` starts over for a new history.

    >>> import ctxlab
    >>> import ctxlab.course
    >>> trimmer = HighLowTrimmer(high=8_000, low=5_000)
    >>> prompt = trimmer(ctxlab.course.load_transcript("research")[:31])
    >>> trimmer.trims, len(trimmer.log), trimmer.log[0].kind
    (1, 1, 'trim')
    """

    def __init__(
        self,
        high: int,
        low: int,
        *,
        keep_recent: int = 1,
        count: Callable[[Message], int] | None = None,
        client: Any = None,
        model: str | None = None,
        summary_reserve: int | None = None,
        on_failure: str = "raise",
        log: MemoryLog | None = None,
    ) -> None:
        for name, value in (("high", high), ("low", low)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a whole number of tokens > 0, got {value!r}")
        if low >= high:
            raise ConfigError(
                f"low ({low}) must be below high ({high}): the gap between them is how many "
                "tokens can arrive before the next trim"
            )
        self.high = high
        self.low = low
        self.keep_recent = keep_recent
        self.client = client
        self.model = model
        self.summary_reserve = summary_reserve
        self.on_failure = on_failure
        self.log = log if log is not None else MemoryLog()
        self._count = count or TokenCounter().message
        self.reset()

    def reset(self) -> None:
        """Forget the history followed so far (the log and its events stay)."""
        self.trims = 0
        self._view: list[Message] = []
        self._seen = 0
        self._last: Message | None = None
        self._tokens: dict[int, int] = {}
        self._checker = MessageChecker()  # each message is checked once, when it arrives

    def _cost(self, message: Message) -> int:
        key = id(message)
        if key not in self._tokens:
            self._tokens[key] = self._count(message)
        return self._tokens[key]

    @property
    def tokens(self) -> int:
        """Tokens of the history as last returned."""
        return sum(self._cost(m) for m in self._view)

    def __repr__(self) -> str:
        return f"HighLowTrimmer(high={self.high}, low={self.low}, trims={self.trims})"

    def __call__(self, history: Sequence[Message], *, lap: int | None = None) -> list[Message]:
        """The history to send: kept so far + new messages, trimmed to ``low`` when over ``high``."""
        if len(history) < self._seen or (self._seen and history[self._seen - 1] is not self._last):
            raise ConfigError(
                "this history does not continue the one the trimmer has followed (it is shorter, "
                "or its earlier messages changed); a HighLowTrimmer follows one growing history: "
                "call reset() to start on another"
            )
        new = history[self._seen:]
        trial = self._checker.fork()
        for index, message in enumerate(new, start=self._seen):
            problems = trial.check(index, message)
            if problems:
                where, problem = problems[0]
                raise MessageError(f"message {where}: {problem}", index=where)
        trial.commit()
        self._view.extend(new)
        self._seen = len(history)
        self._last = history[-1] if history else None
        before = self.tokens
        if before <= self.high:
            return list(self._view)

        if lap is None:
            lap = next((m["step"] for m in reversed(self._view) if isinstance(m.get("step"), int)), None)
        if self.client is not None:
            from .summarising import trim_and_summarise

            kept = trim_and_summarise(
                self._view, self.low, client=self.client, keep_recent=self.keep_recent,
                count=self._cost, model=self.model, summary_reserve=self.summary_reserve,
                log=self.log, lap=lap, on_failure=self.on_failure,
            )
        else:
            kept, dropped = fit(self._view, self.low, keep_recent=self.keep_recent, count=self._cost)
            self.log.record(
                "trim", lap=lap, tokens_before=before, tokens_after=sum(self._cost(m) for m in kept),
                messages=dropped,
                detail=f"over the high mark ({before:,} > {self.high:,}): dropped {len(dropped)} "
                f"messages to reach the low mark ({self.low:,})",
            )
        self._view = list(kept)
        self._tokens = {id(m): self._cost(m) for m in self._view}
        self.trims += 1
        return list(self._view)


def _prompts_per_call(history: Sequence[Message], trim: Callable[[list[Message]], Sequence[Message]]) -> list[list[Message]]:
    """The history each model call would see if ``trim`` ran before it: model call k (the k-th
    assistant message, at index i) sees ``trim(history[:i])``.

    >>> run = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "a"},
    ...        {"role": "user", "content": "more"}, {"role": "assistant", "content": "b"}]
    >>> [len(prompt) for prompt in _prompts_per_call(run, lambda h: h)]
    [1, 3]
    """
    return [list(trim(list(history[:i]))) for i in model_calls(history)]


def count_trims(
    history: Sequence[Message],
    *,
    high: int,
    low: int,
    keep_recent: int = 1,
    count: Callable[[Message], int] | None = None,
) -> int:
    """How many times a :class:`HighLowTrimmer` trims when ``history`` is replayed lap by lap.

    >>> import ctxlab
    >>> import ctxlab.course
    >>> research = ctxlab.course.load_transcript("research")
    >>> count_trims(research, high=12_000, low=6_000), count_trims(research, high=6_500, low=6_000)
    (5, 17)
    """
    trimmer = HighLowTrimmer(high, low, keep_recent=keep_recent, count=count)
    _prompts_per_call(history, trimmer)
    return trimmer.trims


__getattr__ = retired(__name__, {
    "replay_prompts": ("_prompts_per_call", "call the trimmer before each model call, "
                       "[trim(history[:i]) for i in ctxlab.model_calls(history)]; to measure a policy "
                       "lap by lap, use ctxlab.replay"),
}, globals())
