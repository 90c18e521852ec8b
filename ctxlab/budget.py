"""The context window as an allocation, and what a run costs.

A window is shared by a fixed prefix (system prompt, tool schemas), a capped scratchpad, the
elastic history (with its pinned messages and its capped roll-up summary) and the reply. :class:`ContextBudget` says how much history may take once the
others have theirs; :func:`context_per_lap` and :func:`billed_input` show why history must be
managed at all: every lap resends everything before it, so the bill grows with the square of
the number of laps.

>>> budget = ContextBudget(window=8_000, reserve_output=1_000, scratchpad_max=500)
>>> budget.history_allowance(fixed_tokens=1_200, scratchpad_tokens=300)
5500
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tiktoken

from .errors import BudgetError, ConfigError
from .tokens import REPLY_PRIMING, TokenCounter, count_tools

__all__ = ["ContextBudget", "Allocation", "model_calls", "context_per_lap", "billed_input"]


@dataclass(frozen=True)
class Allocation:
    """How one prompt uses the window, in tokens. ``free`` is negative when over budget.

    ``history`` is the whole elastic middle; ``pinned`` and ``summary`` say how much of it is
    the pinned messages above the summary and the rolled-up summary (0 when there is none).

    >>> Allocation(window=1_000, fixed=100, scratchpad=50, history=600, reserved_output=200).free
    50
    """

    window: int
    fixed: int
    scratchpad: int
    history: int
    reserved_output: int
    summary: int = 0
    pinned: int = 0

    @property
    def used(self) -> int:
        """Input tokens plus the reserved reply."""
        return self.fixed + self.scratchpad + self.history + self.reserved_output

    @property
    def free(self) -> int:
        """Tokens left unused (negative when the prompt does not fit)."""
        return self.window - self.used

    @property
    def over_budget(self) -> bool:
        """True when the prompt and the reserved reply do not fit in the window."""
        return self.free < 0


@dataclass(frozen=True)
class ContextBudget:
    """A window split into fixed prefix, capped scratchpad, elastic history and reserved reply.

    ``window`` is the model's context length, ``reserve_output`` the tokens kept free for the
    reply (input must never eat them), ``scratchpad_max`` the cap on working memory, and
    ``summary_max`` the cap on the rolled-up summary, a line of the history like the
    scratchpad's (``None``: a tenth of the input limit, :attr:`summary_cap`).

    ``model`` names the model the prompt is for. It picks how :class:`ctxlab.Assembler` and
    :func:`ctxlab.build_context` count (:meth:`counter`: that model's encoding and billing
    rules), so that their count of a prompt is the one :func:`ctxlab.count_request` gives for
    it. With no model they count with ``cl100k_base`` (gpt-4's), which a gpt-4o or later
    model does not use: name the model. (A :class:`ctxlab.MemoryPolicy`'s own ``model`` is the
    summariser's.)

    >>> ContextBudget(window=128_000, model="gpt-4o").counter().encoding.name
    'o200k_base'

    >>> ContextBudget(window=4_000, reserve_output=4_000)
    Traceback (most recent call last):
    ...
    ctxlab.errors.BudgetError: reserve_output (4000) must be smaller than the window (4000): nothing would be left for the prompt; lower reserve_output or use a model with a larger window
    """

    window: int = 128_000
    reserve_output: int = 4_000
    scratchpad_max: int = 6_000
    summary_max: int | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        if self.model is not None:
            if not isinstance(self.model, str) or not self.model:
                raise ConfigError(f"model must name the model the prompt is for, such as 'gpt-4o', got {self.model!r}")
            try:
                tiktoken.encoding_name_for_model(self.model)
            except KeyError:
                raise ConfigError(
                    f"ContextBudget(model={self.model!r}): tiktoken does not know this model, so its "
                    "encoding cannot be picked; name an OpenAI chat model (gpt-4o, gpt-4.1, gpt-5, o3, ...) "
                    "or leave model out and give the Assembler a counter=TokenCounter(encoding) of your own"
                ) from None
        if self.summary_max is not None and (
            isinstance(self.summary_max, bool) or not isinstance(self.summary_max, int) or self.summary_max < 1
        ):
            raise BudgetError(f"summary_max must be a whole number of tokens >= 1 (or None), got {self.summary_max!r}")
        for name in ("window", "reserve_output", "scratchpad_max"):
            value, least = getattr(self, name), 1 if name == "window" else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise BudgetError(f"{name} must be a whole number of tokens >= {least}, got {value!r}")
        if self.reserve_output >= self.window:
            raise BudgetError(
                f"reserve_output ({self.reserve_output}) must be smaller than the window "
                f"({self.window}): nothing would be left for the prompt; lower "
                "reserve_output or use a model with a larger window",
                needed=self.reserve_output,
                available=self.window,
            )

    def counter(self) -> TokenCounter:
        """A new :class:`ctxlab.TokenCounter` for this budget's model (``cl100k_base`` by the
        cookbook's rules when none is named)."""
        return TokenCounter(model=self.model)

    @property
    def input_limit(self) -> int:
        """The most input tokens a prompt may have: the window minus the reserved reply."""
        return self.window - self.reserve_output

    @property
    def summary_cap(self) -> int:
        """The most tokens the rolled-up summary may take: ``summary_max``, else a tenth of the
        input limit.

        >>> ContextBudget(window=10_000, reserve_output=2_000).summary_cap
        800
        """
        return self.summary_max if self.summary_max is not None else max(1, self.input_limit // 10)

    def history_allowance(self, fixed_tokens: int, scratchpad_tokens: int) -> int:
        """Tokens the history may take once the fixed prefix, scratchpad and reply have theirs.

        Raises :class:`ctxlab.BudgetError` when the scratchpad is over its cap (render it
        bounded instead) or when nothing is left for history.

        >>> ContextBudget(window=8_000, reserve_output=1_000).history_allowance(6_500, 600)
        Traceback (most recent call last):
        ...
        ctxlab.errors.BudgetError: nothing left for history: window 8000 - reserved output 1000 - fixed prefix 6500 - scratchpad 600 = -100 tokens; shorten the system prompt or tool schemas, lower reserve_output, or use a larger window
        """
        for name, value in (("fixed_tokens", fixed_tokens), ("scratchpad_tokens", scratchpad_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BudgetError(f"{name} must be a whole number of tokens >= 0, got {value!r}")
        if scratchpad_tokens > self.scratchpad_max:
            raise BudgetError(
                f"the scratchpad takes {scratchpad_tokens} tokens, over its cap of "
                f"{self.scratchpad_max}; render it bounded (Scratchpad.render(max_tokens=...)) "
                "or raise scratchpad_max",
                needed=scratchpad_tokens,
                available=self.scratchpad_max,
            )
        allowance = self.window - self.reserve_output - fixed_tokens - scratchpad_tokens
        if allowance <= 0:
            raise BudgetError(
                f"nothing left for history: window {self.window} - reserved output "
                f"{self.reserve_output} - fixed prefix {fixed_tokens} - scratchpad "
                f"{scratchpad_tokens} = {allowance} tokens; shorten the system prompt or tool "
                "schemas, lower reserve_output, or use a larger window",
                needed=fixed_tokens + scratchpad_tokens + self.reserve_output,
                available=self.window,
            )
        return allowance

    def allocate(
        self, fixed_tokens: int, scratchpad_tokens: int, history_tokens: int, *,
        summary_tokens: int = 0, pinned_tokens: int = 0,
    ) -> Allocation:
        """Describe how a prompt with these parts uses the window (never raises).

        >>> ContextBudget(window=1_000, reserve_output=200).allocate(100, 50, 700).free
        -50
        """
        return Allocation(
            window=self.window,
            fixed=fixed_tokens,
            scratchpad=scratchpad_tokens,
            history=history_tokens,
            reserved_output=self.reserve_output,
            summary=summary_tokens,
            pinned=pinned_tokens,
        )


Message = Mapping[str, Any]


def model_calls(messages: Sequence[Message]) -> list[int]:
    """Indices of the assistant messages: each is one model call (one lap of the loop).

    >>> model_calls([{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}])
    [1]
    """
    return [i for i, m in enumerate(messages) if m.get("role") == "assistant"]


def context_per_lap(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    count: Callable[[Message], int] | None = None,
) -> list[int]:
    """Prompt tokens of each model call when nothing is ever trimmed.

    The prompt for an assistant message is every message before it, the tool schemas and
    the reply priming. Each message is counted once (prefix sums), so this is linear.

    >>> context_per_lap([{"role": "user", "content": "go"}, {"role": "assistant", "content": "a"},
    ...                  {"role": "user", "content": "more"}, {"role": "assistant", "content": "b"}])
    [8, 18]
    """
    count = count or TokenCounter().message
    fixed = REPLY_PRIMING + count_tools(tools)
    per_call: list[int] = []
    running = 0
    for message in messages:
        if message.get("role") == "assistant":
            per_call.append(fixed + running)
        running += count(message)
    return per_call


def billed_input(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    count: Callable[[Message], int] | None = None,
) -> int:
    """Input tokens billed over a whole run: the sum of every model call's prompt.

    Every call resends the whole history, so for a run whose laps add about the same amount,
    this grows with the square of the number of laps.

    >>> billed_input([{"role": "user", "content": "go"}, {"role": "assistant", "content": "a"},
    ...               {"role": "user", "content": "more"}, {"role": "assistant", "content": "b"}])
    26
    """
    return sum(context_per_lap(messages, tools, count=count))
