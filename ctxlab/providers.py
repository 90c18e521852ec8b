"""What the providers' own context management would do on a run, lap by lap, next to yours.

Two providers now trim a conversation on their side. Their documentation, read on 2026-12-08:

* **Anthropic, tool result clearing** (context editing, beta header
  ``context-management-2025-06-27``;
  https://platform.claude.com/docs/en/build-with-claude/context-editing). A request carries
  ``context_management={"edits": [{"type": "clear_tool_uses_20250919", ...}]}`` with
  ``trigger`` (default 100,000 input tokens: "once the prompt exceeds this threshold, clearing
  will begin"), ``keep`` (default 3 tool uses: "the API removes the oldest tool interactions
  first, preserving the most recent ones"), ``clear_at_least`` (default none: "if the API can't
  clear at least the specified amount, the strategy will not be applied"), ``exclude_tools``
  and ``clear_tool_inputs`` (default false: the calls stay, only their results go). Cleared
  results are replaced by a placeholder. It runs on the server, on each request: the client
  keeps its whole history and sends it every time. The response says what was done, in
  ``context_management.applied_edits`` (``cleared_tool_uses``, ``cleared_input_tokens``).
* **OpenAI, server-side compaction** (Responses API;
  https://developers.openai.com/api/docs/guides/compaction). A request carries
  ``context_management=[{"type": "compaction", "compact_threshold": N}]``: "when the rendered
  token count crosses the configured threshold, the server runs server-side compaction", and the
  response holds an encrypted compaction item, "opaque and not intended to be
  human-interpretable", which later requests carry in place of everything before it.

:class:`ClearToolUses` and :class:`Compaction` are those settings; :func:`clearing_laps` and
:func:`compaction_laps` replay a run's requests against them and say at which laps each would
act and what it would take out. Three things cannot be known offline, and the results say so:
Claude's tokenizer is not public (prompts are counted as the OpenAI ``model`` named here bills
them, which Claude's count may differ from), the placeholder's text is not published (cleared
tokens are the results' own), and a compaction item's size is hidden (``item_tokens`` stands
in for it). What a compaction keeps cannot be read at all: the laps it fires at, and the probes
a learner already has, are what can be checked.

>>> import ctxlab.course
>>> incident = ctxlab.course.load_transcript("incident")
>>> [(c.lap, c.cleared_tool_uses) for c in clearing_laps(incident, ClearToolUses(trigger=3_000, keep=2))][:3]
[(4, 1), (5, 2), (6, 3)]
>>> [(c.lap, c.applied) for c in clearing_laps(incident, ClearToolUses(trigger=3_000, keep=2, clear_at_least=3_000))][:2]
[(4, False), (5, True)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .budget import model_calls
from .errors import ConfigError, ConfigTypeError
from .tokens import TokenCounter

__all__ = ["ClearToolUses", "Compaction", "Clearing", "CompactionPoint", "clearing_laps", "compaction_laps"]

Message = Mapping[str, Any]


def _whole(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name} must be a whole number >= {least}, got {value!r}")
    return value


@dataclass(frozen=True)
class ClearToolUses:
    """Anthropic's ``clear_tool_uses_20250919`` edit, with its documented defaults.

    >>> ClearToolUses(trigger=30_000, keep=5).edit()
    {'type': 'clear_tool_uses_20250919', 'trigger': {'type': 'input_tokens', 'value': 30000}, 'keep': {'type': 'tool_uses', 'value': 5}}
    """

    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int | None = None
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False

    def __post_init__(self) -> None:
        _whole("trigger", self.trigger, 1)
        _whole("keep", self.keep, 0)
        if self.clear_at_least is not None:
            _whole("clear_at_least", self.clear_at_least, 1)
        if isinstance(self.exclude_tools, str) or not all(isinstance(t, str) for t in self.exclude_tools):
            raise ConfigTypeError(f"exclude_tools must be a tuple of tool names, got {self.exclude_tools!r}")
        if not isinstance(self.clear_tool_inputs, bool):
            raise ConfigTypeError(f"clear_tool_inputs must be True or False, got {self.clear_tool_inputs!r}")

    def edit(self) -> dict[str, Any]:
        """The edit as the request's ``context_management["edits"]`` lists it (defaults left out)."""
        edit: dict[str, Any] = {"type": "clear_tool_uses_20250919",
                                "trigger": {"type": "input_tokens", "value": self.trigger},
                                "keep": {"type": "tool_uses", "value": self.keep}}
        if self.clear_at_least is not None:
            edit["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
        if self.exclude_tools:
            edit["exclude_tools"] = list(self.exclude_tools)
        if self.clear_tool_inputs:
            edit["clear_tool_inputs"] = True
        return edit


@dataclass(frozen=True)
class Compaction:
    """OpenAI's server-side compaction setting for the Responses API.

    >>> Compaction(compact_threshold=200_000).entry()
    [{'type': 'compaction', 'compact_threshold': 200000}]
    """

    compact_threshold: int

    def __post_init__(self) -> None:
        _whole("compact_threshold", self.compact_threshold, 1)

    def entry(self) -> list[dict[str, Any]]:
        """The request's ``context_management`` value."""
        return [{"type": "compaction", "compact_threshold": self.compact_threshold}]


@dataclass(frozen=True)
class Clearing:
    """One request on which tool result clearing acts: its lap, the prompt's tokens before,
    the tool uses cleared and their tokens (what ``applied_edits`` would report, the
    placeholders aside), or ``applied=False`` when ``clear_at_least`` could not be met."""

    lap: int
    tokens_before: int
    cleared_tool_uses: int
    cleared_input_tokens: int
    applied: bool = True


@dataclass(frozen=True)
class CompactionPoint:
    """One request on which compaction runs: its lap, and the rendered tokens that crossed the
    threshold (the previous compaction item counted at ``item_tokens``)."""

    lap: int
    tokens_before: int


def _counter(model: str) -> TokenCounter:
    return TokenCounter(model=model)


def _tokens(counter: TokenCounter, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None,
            carried: int = 0) -> int:
    """What ``messages`` (and ``carried`` tokens of an item before them) cost as a request with
    ``tools``, as :func:`ctxlab.count_request` bills it for the counter's model."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    return carried + counter.prefix(messages[:lead], tools) + sum(counter.message(m) for m in messages[lead:])


def _tool_uses(prompt: Sequence[Message]) -> list[tuple[str, str, list[Message]]]:
    """Each tool call in ``prompt``, oldest first: its id, its name, and the call's assistant
    message with the result answering it (a list of one or two messages)."""
    results = {m.get("tool_call_id"): m for m in prompt if m.get("role") == "tool"}
    uses = []
    for message in prompt:
        for call in message.get("tool_calls") or () if message.get("role") == "assistant" else ():
            function = call.get("function") or call.get("custom") or {}
            result = results.get(call.get("id"))
            uses.append((call.get("id"), function.get("name", ""), [message] + ([result] if result else [])))
    return uses


def clearing_laps(
    record: Sequence[Message], edit: ClearToolUses, *, model: str = "gpt-4o",
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> list[Clearing]:
    """The laps on which ``edit`` would act if every request sent the whole ``record`` so far,
    as a client using context editing does (the server clears; the client keeps everything).

    A request acts when its prompt (counted as ``model`` bills it, tools included) exceeds
    ``edit.trigger``: every tool use but the newest ``edit.keep`` (and those of
    ``edit.exclude_tools``) has its result cleared, and with ``clear_tool_inputs`` its call's
    arguments too. When those add up to less than ``edit.clear_at_least``, nothing is cleared
    and the lap is listed with ``applied=False``. A lap over the trigger with nothing it may
    clear is not listed. As the client sends everything again, every lap past the trigger
    clears anew: the oldest results on each, and a prompt cache broken each time.
    """
    counter = _counter(model)
    out: list[Clearing] = []
    for index in model_calls(record):
        prompt = record[:index]
        tokens = _tokens(counter, prompt, tools)
        if tokens <= edit.trigger:
            continue
        uses = _tool_uses(prompt)
        cut = max(0, len(uses) - edit.keep)
        cleared = [use for use in uses[:cut] if use[1] not in edit.exclude_tools]
        if not cleared:
            continue  # over the trigger, but every tool use is among the kept or the excluded
        freed = 0
        for _ident, _name, messages in cleared:
            if len(messages) > 1:
                freed += counter.message(messages[1]) - counter.message({**messages[1], "content": ""})
            if edit.clear_tool_inputs:
                freed += _arguments_tokens(counter, messages[0], _ident)
        applied = edit.clear_at_least is None or freed >= edit.clear_at_least
        lap = record[index].get("step", index)
        out.append(Clearing(lap, tokens, len(cleared) if applied else 0, freed if applied else 0, applied))
    return out


def _arguments_tokens(counter: TokenCounter, message: Message, ident: str) -> int:
    """Tokens of the arguments of call ``ident`` in ``message``."""
    for call in message.get("tool_calls") or ():
        if call.get("id") == ident:
            text = (call.get("function") or {}).get("arguments") or (call.get("custom") or {}).get("input") or ""
            return counter.text(text)
    return 0


def compaction_laps(
    record: Sequence[Message], compaction: Compaction, *, item_tokens: int, model: str = "gpt-4o",
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> list[CompactionPoint]:
    """The laps on which the server would compact: each request sends the leading system
    messages, the latest compaction item (standing in at ``item_tokens``, its size being hidden)
    and everything since, and compacts when that crosses ``compaction.compact_threshold``. Counted as ``model`` bills a
    Chat Completions prompt, which the Responses API's rendering may differ from."""
    _whole("item_tokens", item_tokens, 0)
    counter = _counter(model)
    out: list[CompactionPoint] = []
    lead = 0  # the leading system messages: instructions, sent on every request
    while lead < len(record) and record[lead].get("role") in ("system", "developer"):
        lead += 1
    start, carried = lead, 0  # where the messages after the latest compaction item begin, and its tokens
    for index in model_calls(record):
        tokens = _tokens(counter, [*record[:lead], *record[start:index]], tools, carried)
        if tokens > compaction.compact_threshold:
            out.append(CompactionPoint(record[index].get("step", index), tokens))
            start, carried = index, item_tokens
    return out
