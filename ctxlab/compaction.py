"""When to compact: a token threshold checked after each lap, and phase boundaries.

Compacting costs a summariser call and loses detail, so an agent should not do it every lap;
waiting until the window is full is worse, because the next lap's tool results then have
nowhere to go. Two triggers are enough:

* **a threshold**: after each lap, compact once the prompt has reached a fraction of the
  working ceiling (70 % by default), which leaves the rest as headroom for the next lap;
* **a phase boundary**: compact before a long sub-task starts, so that it runs in a clean
  window, and fold a finished sub-task's laps into one short outcome.

:func:`compaction_due` is the decision; :class:`CompactionTrigger` applies it lap after lap
and keeps a record of every time it fired.

>>> trigger = CompactionTrigger(10_000)
>>> [trigger.after_lap(tokens) is not None for tokens in (4_200, 6_900, 7_000)]
[False, False, True]
>>> trigger.phase_boundary(starting="the fix").reason
'phase-start'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real

from .errors import ConfigError

__all__ = ["Compaction", "CompactionTrigger", "compaction_due"]


def _check_ceiling(ceiling: object) -> int:
    if isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling <= 0:
        raise ConfigError(
            f"ceiling must be a whole number of tokens above 0 (the most the prompt may take, "
            f"e.g. ContextBudget.input_limit), got {ceiling!r}"
        )
    return ceiling


def _check_threshold(threshold: object) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 < threshold <= 1:
        hint = f" (did you mean {threshold / 100:g}?)" if isinstance(threshold, Real) and 1 < threshold <= 100 else ""
        raise ConfigError(
            f"threshold must be a fraction of the ceiling, above 0 and at most 1 (0.7 means "
            f"compact at 70 %), got {threshold!r}{hint}"
        )
    return float(threshold)


def compaction_due(tokens: int, ceiling: int, *, threshold: float = 0.7, boundary: bool = False) -> bool:
    """Whether to compact now: at a phase ``boundary``, or once ``tokens`` reach ``threshold`` of ``ceiling``.

    ``tokens`` is what the prompt takes after the lap just finished; ``ceiling`` the working
    ceiling (the most the prompt may take); ``threshold`` a fraction of it, above 0 and at most 1.
    Reaching the threshold exactly counts, as written in decimals: 55 tokens reach 0.55 of 100,
    though ``0.55 * 100`` is 55.00000000000001 in floating point.

    >>> compaction_due(55, 100, threshold=0.55), compaction_due(54, 100, threshold=0.55)
    (True, False)
    >>> compaction_due(6_999, 10_000), compaction_due(7_000, 10_000), compaction_due(900, 10_000, boundary=True)
    (False, True, True)
    >>> compaction_due(5_000, 10_000, threshold=70)
    Traceback (most recent call last):
    ...
    ctxlab.errors.ConfigError: threshold must be a fraction of the ceiling, above 0 and at most 1 (0.7 means compact at 70 %), got 70 (did you mean 0.7?)
    """
    _check_ceiling(ceiling)
    threshold = _check_threshold(threshold)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise ConfigError(f"tokens must be a whole number of tokens, 0 or more, got {tokens!r}")
    limit = threshold * ceiling
    # a product a rounding error above the whole number it stands for is that number
    return bool(boundary) or tokens >= limit or math.isclose(tokens, limit, rel_tol=1e-12)


@dataclass(frozen=True)
class Compaction:
    """One decision to compact: why (``reason``), in a sentence (``detail``), and at which lap.

    ``reason`` is ``"threshold"``, ``"phase-start"`` or ``"phase-end"``.

    >>> Compaction("threshold", "7,000 of 10,000 tokens", lap=4).reason
    'threshold'
    """

    reason: str
    detail: str
    lap: int | None = None


@dataclass
class CompactionTrigger:
    """Decides, lap after lap, when an agent should compact its history.

    Call :meth:`after_lap` with the prompt's tokens after every lap, and :meth:`phase_boundary`
    when a long sub-task starts or ends. Each returns a :class:`Compaction` when it is time to
    compact (``None`` otherwise), and ``fired`` keeps every one, in order, for the run's log.
    Raises ``ValueError`` for a ceiling that is not a whole number above 0 or a threshold
    outside (0, 1].

    >>> trigger = CompactionTrigger(8_000, threshold=0.75)
    >>> trigger.after_lap(5_999, lap=3) is None
    True
    >>> trigger.after_lap(6_000, lap=4)
    Compaction(reason='threshold', detail='the prompt takes 6,000 of 8,000 tokens (75%), at or over the threshold of 75%', lap=4)
    >>> trigger.phase_boundary(finished="reading the code", lap=7).detail
    'after reading the code: fold its laps into one short outcome'
    >>> [c.lap for c in trigger.fired]
    [4, 7]
    >>> CompactionTrigger(8_000, threshold=0)
    Traceback (most recent call last):
    ...
    ctxlab.errors.ConfigError: threshold must be a fraction of the ceiling, above 0 and at most 1 (0.7 means compact at 70 %), got 0
    """

    ceiling: int
    threshold: float = 0.7
    fired: list[Compaction] = field(default_factory=list, compare=False)

    def __post_init__(self) -> None:
        _check_ceiling(self.ceiling)
        self.threshold = _check_threshold(self.threshold)

    def after_lap(self, tokens: int, *, lap: int | None = None) -> Compaction | None:
        """A threshold :class:`Compaction` when ``tokens`` reach the threshold, else ``None``."""
        if not compaction_due(tokens, self.ceiling, threshold=self.threshold):
            return None
        decision = Compaction(
            "threshold",
            f"the prompt takes {tokens:,} of {self.ceiling:,} tokens ({tokens / self.ceiling:.0%}), "
            f"at or over the threshold of {self.threshold:.0%}",
            lap,
        )
        self.fired.append(decision)
        return decision

    def phase_boundary(self, *, starting: str | None = None, finished: str | None = None,
                       lap: int | None = None) -> Compaction:
        """A :class:`Compaction` at a phase boundary: give the sub-task ``starting`` or the one ``finished``.

        Before a long sub-task, compact so that it runs in a clean window; after one, fold its
        laps into one short outcome. Exactly one of ``starting`` and ``finished`` is given.
        """
        if (starting is None) == (finished is None):
            raise ConfigError(
                "phase_boundary needs exactly one of starting= (the sub-task about to begin) or "
                f"finished= (the sub-task just done); got starting={starting!r}, finished={finished!r}"
            )
        if starting is not None:
            decision = Compaction("phase-start", f"before {starting}: compact so that it runs in a clean window", lap)
        else:
            decision = Compaction("phase-end", f"after {finished}: fold its laps into one short outcome", lap)
        self.fired.append(decision)
        return decision
