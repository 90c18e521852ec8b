"""A run's memory policy: every choice :func:`ctxlab.build_context` and :class:`ctxlab.Assembler`
make about what stays in the window, held in one object.

=====================  ======================================================================
``budget``             the window: its size, the reserved reply, the scratchpad's and the
                       summary's caps (:class:`ctxlab.ContextBudget`)
``client``, ``model``  the summariser that folds what is cut into one roll-up summary
                       (:func:`ctxlab.get_client`); ``None`` trims without a summary. An
                       async client (``openai.AsyncOpenAI``) is awaited by
                       :meth:`ctxlab.Assembler.acontext`; the synchronous calls refuse it
``low_water``          a trim cuts the history down to this fraction of its allowance
``keep_recent``        the newest turn groups that are always kept
``keep_full_for``,     the age tiers of tool results: in full for ``keep_full_for`` laps, then
``compress_after``,    compressed to ``max_chars``, then (after ``compress_after`` laps)
``max_chars``,         replaced by a reference to ``store`` (:func:`ctxlab.compress_history`)
``store``
``pin_user_messages``  pin every user message, not only the task
``pin_tool``           the tool whose calls pin what they carry (:mod:`ctxlab.pins`)
``small_talk_tokens``  drop old small talk of at most this many tokens first (0: off,
                       :mod:`ctxlab.eviction`)
``on_summary_error``   ``"raise"`` (the default): a summary that fails raises
                       :class:`ctxlab.SummaryError`; ``"trim"``: that lap is trimmed without
                       folding anything in, and the log's ``trim`` event says why
=====================  ======================================================================

The policy is fixed for a run; the request's tools, the scratchpad and the state move from
lap to lap and are passed beside it. Every option is checked when the policy is made, so a
mistake is reported where it was written, not laps later.

>>> import ctxlab
>>> policy = ctxlab.MemoryPolicy(ctxlab.ContextBudget(window=32_000), low_water=0.5, keep_full_for=3)
>>> policy.low_water, policy.keep_recent, policy.budget.window
(0.5, 1, 32000)
>>> policy.replace(keep_recent=2).keep_recent
2
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .budget import ContextBudget
from .compression import check_tiers
from .errors import ConfigError, ConfigTypeError
from .llm import is_async
from .pins import PIN_TOOL

if TYPE_CHECKING:  # pragma: no cover
    from .store import TrajectoryStore

__all__ = ["MemoryPolicy", "OPTIONS", "as_policy"]


@dataclass(frozen=True)
class MemoryPolicy:
    """What stays in the window of a run, and how: the budget and every eviction choice.

    ``MemoryPolicy(budget)`` is the default policy: no summariser (older turns are trimmed),
    tool results in full for 2 laps then compressed to 1,200 characters, only the task and
    what is marked or pinned by the pin tool kept above the summary, small talk not singled
    out. See the module's table for each option.

    >>> import ctxlab
    >>> MemoryPolicy(ctxlab.ContextBudget(window=8_000), low_water=1.5)
    Traceback (most recent call last):
    ...
    ctxlab.errors.ConfigError: low_water must be a fraction of the allowance in (0, 1] (the level a trim cuts down to; 1 trims just enough on every lap), got 1.5
    """

    budget: ContextBudget
    client: Any = None
    model: str | None = None
    low_water: float = 0.6
    keep_recent: int = 1
    keep_full_for: int = 2
    compress_after: int | None = None
    max_chars: int = 1_200
    store: TrajectoryStore | None = None
    pin_user_messages: bool = False
    pin_tool: str | None = PIN_TOOL
    small_talk_tokens: int = 0
    on_summary_error: str = "raise"

    def __post_init__(self) -> None:
        if not isinstance(self.budget, ContextBudget):
            raise ConfigTypeError(
                f"a MemoryPolicy's budget must be a ctxlab.ContextBudget, got {type(self.budget).__name__}: "
                "MemoryPolicy(ctxlab.ContextBudget(window=..., reserve_output=...), ...)"
            )
        check_fraction(self.low_water)
        if isinstance(self.keep_recent, bool) or not isinstance(self.keep_recent, int) or self.keep_recent < 1:
            raise ConfigError(
                f"keep_recent must be an int >= 1 (the newest turn group is always kept), got {self.keep_recent!r}"
            )
        check_tiers(**self.compression)
        if not isinstance(self.pin_user_messages, bool):
            raise ConfigTypeError(f"pin_user_messages must be True or False, got {self.pin_user_messages!r}")
        if self.pin_tool is not None and not (isinstance(self.pin_tool, str) and self.pin_tool):
            raise ConfigTypeError(f"pin_tool must be a tool's name or None (no pin tool), got {self.pin_tool!r}")
        if (isinstance(self.small_talk_tokens, bool) or not isinstance(self.small_talk_tokens, int)
                or self.small_talk_tokens < 0):
            raise ConfigError(
                "small_talk_tokens must be an int >= 0 (0 leaves the small-talk stage off; "
                f"ctxlab.eviction.SMALL_TALK_MAX_TOKENS is 40), got {self.small_talk_tokens!r}"
            )
        if self.model is not None and not isinstance(self.model, str):
            raise ConfigTypeError(f"model must be a model's name or None (the client's default), got {self.model!r}")
        if self.on_summary_error not in ("raise", "trim"):
            raise ConfigError(f"on_summary_error must be 'raise' or 'trim', got {self.on_summary_error!r}")
        if self.client is not None:  # refused now, not at the first summary laps into the run
            is_async(self.client)  # an async client is for Assembler.acontext; one without create(...) for nothing

    @property
    def compression(self) -> dict[str, Any]:
        """The age-tier options, as :func:`ctxlab.compress_history` takes them."""
        return {"keep_full_for": self.keep_full_for, "compress_after": self.compress_after,
                "max_chars": self.max_chars, "store": self.store}

    def replace(self, **changes: Any) -> MemoryPolicy:
        """This policy with ``changes`` (checked as a new one is).

        >>> import ctxlab
        >>> ctxlab.MemoryPolicy(ctxlab.ContextBudget()).replace(window=8_000)
        Traceback (most recent call last):
        ...
        ctxlab.errors.ConfigTypeError: MemoryPolicy has no option 'window'; its options are budget, client, model, low_water, keep_recent, keep_full_for, compress_after, max_chars, store, pin_user_messages, pin_tool, small_talk_tokens, on_summary_error
        """
        unknown = sorted(set(changes) - set(OPTIONS))
        if unknown:
            raise ConfigTypeError(f"MemoryPolicy has no option {unknown[0]!r}; its options are {', '.join(OPTIONS)}")
        return dataclasses.replace(self, **changes)


OPTIONS = tuple(field.name for field in dataclasses.fields(MemoryPolicy))
"""The options of a :class:`MemoryPolicy`, in order (``budget`` first)."""


def check_fraction(low_water: Any) -> None:
    """Refuse a ``low_water`` outside (0, 1]."""
    if isinstance(low_water, bool) or not isinstance(low_water, (int, float)) or not 0 < low_water <= 1:
        raise ConfigError(
            f"low_water must be a fraction of the allowance in (0, 1] (the level a trim cuts down "
            f"to; 1 trims just enough on every lap), got {low_water!r}"
        )


def as_policy(policy: MemoryPolicy | ContextBudget, options: Mapping[str, Any], where: str) -> MemoryPolicy:
    """The policy ``where`` (a function's or class's name) was given: a :class:`MemoryPolicy`,
    or a :class:`ctxlab.ContextBudget` for the default policy with that budget.

    ``options`` are keyword arguments given beside a budget in the old style
    (``build_context(history, budget, low_water=0.5)``): they still work for one release,
    with a ``DeprecationWarning`` that shows the new call.

    >>> import ctxlab
    >>> as_policy(ctxlab.ContextBudget(window=8_000), {}, "build_context").low_water
    0.6
    """
    if isinstance(policy, MemoryPolicy):
        if options:
            raise ConfigTypeError(
                f"{where} was given a MemoryPolicy and the option(s) {', '.join(sorted(options))} beside it: "
                f"put them in the policy, policy.replace({', '.join(f'{k}=...' for k in sorted(options))})"
            )
        return policy
    if not isinstance(policy, ContextBudget):
        raise ConfigTypeError(
            f"{where} takes a ctxlab.MemoryPolicy (or a ctxlab.ContextBudget for the default policy), "
            f"got {type(policy).__name__}"
        )
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigTypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if options:
        shown = ", ".join(f"{k}=..." for k in options)
        warnings.warn(
            f"{where}(..., budget, {shown}) is deprecated: pass one policy, "
            f"{where}(..., ctxlab.MemoryPolicy(budget, {shown}))",
            DeprecationWarning,
            stacklevel=3,
        )
    return MemoryPolicy(policy, **options)
