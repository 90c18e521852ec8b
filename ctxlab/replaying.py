"""Replay a transcript through a memory policy, lap by lap, and measure what it does.

For every model call of a recorded run, :func:`replay` gives the policy the history up
to that call, takes the prompt it builds and records:

* ``tokens``: the prompt's tokens, tool schemas and reply priming included;
* ``billed``: the input billed so far (the sum of every prompt up to this one);
* ``reused``: the tokens this prompt shares from its first token with the previous one, what a
  prompt cache could serve (:func:`ctxlab.caching.prefix_reuse`);
* ``probes``: whether each probe (a string carrying one fact: the goal, a constraint stated
  early, a tool failure) is anywhere in the prompt;
* ``over_budget``: whether the prompt is over the budget's input limit;
* ``compactions``: how many times the policy summarised or trimmed its history for this lap.

Success is measured by lap number: :meth:`ReplayResult.missing_by_lap` says, lap by lap, which
of the facts the task needs (goal, constraints, failures) had been seen but were not in the
prompt, and :meth:`ReplayResult.by_lap` puts that beside the tokens and the compactions.

:meth:`ReplayResult.summary` condenses a run into one row, and :func:`compare_runs` prints
several runs side by side.

>>> import ctxlab
>>> import ctxlab.course
>>> from ctxlab.policies import KeepEverything
>>> refund, tools = ctxlab.course.load_transcript("refund"), ctxlab.course.load_tools("refund")
>>> result = replay(refund, KeepEverything(), tools=tools, probes=ctxlab.course.transcript_info("refund")["probes"],
...                 budget=ctxlab.ContextBudget(window=16_000, reserve_output=2_000))
>>> len(result.laps), result.laps[-1].billed == ctxlab.budget.billed_input(refund, tools)
(9, True)
>>> result.survived()
{'goal': True, 'failure': True}
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .budget import ContextBudget, model_calls
from .caching import prefix_reuse
from .calls import call_parts
from .events import MemoryLog
from .tokens import TokenCounter, count_tools

__all__ = ["LapRecord", "ReplayResult", "replay", "compare_runs", "probe_text", "COMPACTION_KINDS"]

COMPACTION_KINDS = ("summarise", "trim")
"""The log events that count as a compaction of the history."""

Message = Mapping[str, Any]


@dataclass(frozen=True)
class LapRecord:
    """What one model call's prompt cost and held.

    >>> LapRecord(lap=1, step=1, tokens=900, billed=900, reused=0).uncached
    900
    """

    lap: int
    step: int | None
    tokens: int
    billed: int
    reused: int
    over_budget: bool = False
    probes: Mapping[str, bool] = field(default_factory=dict)
    events: int = 0
    compactions: int = 0

    @property
    def uncached(self) -> int:
        """Tokens of this prompt a prompt cache could not serve."""
        return self.tokens - self.reused


@dataclass
class ReplayResult:
    """A policy's run over a transcript: one :class:`LapRecord` per model call, and its log.

    ``probes`` maps each probe's name to its text; ``first_seen`` gives the lap at which each
    probe first appears in the history (``None`` when it never does).

    >>> ReplayResult("none", [LapRecord(1, 1, 100, 100, 0)]).summary()["billed input"]
    100
    """

    policy: str
    laps: list[LapRecord]
    probes: Mapping[str, str] = field(default_factory=dict)
    first_seen: Mapping[str, int | None] = field(default_factory=dict)
    log: MemoryLog | None = None
    input_limit: int | None = None

    def survived(self) -> dict[str, bool]:
        """Whether each probe is in every prompt from the lap it first appears in on."""
        out = {}
        for name in self.probes:
            start = self.first_seen.get(name)
            laps = [r for r in self.laps if start is not None and r.lap >= start]
            out[name] = bool(laps) and all(r.probes.get(name, False) for r in laps)
        return out

    def missing_by_lap(self) -> dict[int, list[str]]:
        """For each lap, the probes already seen by then (``first_seen <= lap``) that its prompt
        does not hold, in the order of ``probes``; a probe never seen is never missing.

        >>> run = ReplayResult("p", [LapRecord(1, 1, 10, 10, 0, probes={"goal": True, "rule": False}),
        ...                          LapRecord(2, 2, 10, 20, 0, probes={"goal": False, "rule": False})],
        ...                    {"goal": "g", "rule": "r"}, {"goal": 1, "rule": 2})
        >>> run.missing_by_lap()
        {1: [], 2: ['goal', 'rule']}
        """
        out = {}
        for record in self.laps:
            out[record.lap] = [
                name for name in self.probes
                if self.first_seen.get(name) is not None and record.lap >= self.first_seen[name]
                and not record.probes.get(name, False)
            ]
        return out

    def by_lap(self) -> list[dict[str, Any]]:
        """The run lap by lap: tokens, compactions so far, and the probes missing at that lap.

        >>> run = ReplayResult("p", [LapRecord(1, 1, 10, 10, 0, probes={"goal": True}, compactions=1)],
        ...                    {"goal": "g"}, {"goal": 1})
        >>> run.by_lap()
        [{'lap': 1, 'tokens': 10, 'compactions': 1, 'missing': []}]
        """
        missing = self.missing_by_lap()
        rows, total = [], 0
        for record in self.laps:
            total += record.compactions
            rows.append({"lap": record.lap, "tokens": record.tokens, "compactions": total,
                         "missing": missing[record.lap]})
        return rows

    def summary(self) -> dict[str, Any]:
        """One row for a comparison table: sizes, bill, cache reuse, probes kept, trims.

        ``prefix reused`` is the share of all prompt tokens a cache could have served;
        ``decisions`` the number of events in the policy's log.
        """
        tokens = sum(r.tokens for r in self.laps)
        return {
            "policy": self.policy,
            "laps": len(self.laps),
            "peak tokens": max((r.tokens for r in self.laps), default=0),
            "last tokens": self.laps[-1].tokens if self.laps else 0,
            "billed input": self.laps[-1].billed if self.laps else 0,
            "uncached input": sum(r.uncached for r in self.laps),
            "prefix reused": sum(r.reused for r in self.laps) / tokens if tokens else 0.0,
            "laps over budget": sum(r.over_budget for r in self.laps),
            "probes kept": [name for name, kept in self.survived().items() if kept],
            "probes lost": [name for name, kept in self.survived().items() if not kept],
            "decisions": len(self.log) if self.log is not None else 0,
        }

    def table(self) -> str:
        """The run lap by lap as a plain-text table."""
        names = list(self.probes)
        header = f"{'lap':>4} {'tokens':>8} {'billed':>10} {'reused':>8}  " + " ".join(f"{n[:10]:>10}" for n in names)
        lines = [header]
        for r in self.laps:
            marks = " ".join(f"{'yes' if r.probes.get(n) else '-':>10}" for n in names)
            flag = " over" if r.over_budget else ""
            lines.append(f"{r.lap:>4} {r.tokens:>8,} {r.billed:>10,} {r.reused:>8,}  {marks}{flag}")
        return "\n".join(lines)


def probe_text(message: Message) -> str:
    """The text of a message that a probe is looked for in: its content and tool-call arguments.

    >>> probe_text({"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"q": "x"}'}}]})
    '{"q": "x"}'
    """
    parts = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts += [str(p.get("text", "")) for p in content if isinstance(p, Mapping)]
    for call in message.get("tool_calls") or []:
        parts.append((call_parts(call) or ("", ""))[1])
    return "\n".join(parts)


def replay(
    transcript: str | os.PathLike[str] | Sequence[Message],
    policy: Any,
    *,
    budget: ContextBudget,
    tools: Sequence[Mapping[str, Any]] | None = None,
    probes: Mapping[str, str] | None = None,
) -> ReplayResult:
    """Step ``transcript`` through ``policy`` one model call at a time and measure each prompt.

    ``transcript`` is the run's list of messages; ``probes`` names the facts to follow
    (``{"goal": "text the goal holds"}``). A course transcript's name still works for one
    release, with a ``DeprecationWarning``: :func:`ctxlab.course.replay` replays one by name,
    with its tool schemas and probes. ``policy`` is called as ``policy(history, lap=step, budget=budget,
    tools=tools)`` with the history before each assistant message and returns that call's
    prompt (see :mod:`ctxlab.policies`); a policy with ``reset()`` is reset first. Tokens are
    counted with :class:`ctxlab.TokenCounter`, each distinct message once.

    >>> import ctxlab
    >>> from ctxlab.policies import TruncateOldest
    >>> run = [{"role": "user", "content": "Goal: find the refund."}, {"role": "assistant", "content": "On it."},
    ...        {"role": "user", "content": "Any news?"}, {"role": "assistant", "content": "Found it."}]
    >>> result = replay(run, TruncateOldest(), probes={"goal": "Goal: find"},
    ...                 budget=ctxlab.ContextBudget(window=16_000, reserve_output=2_000))
    >>> len(result.laps), result.survived()
    (2, {'goal': True})
    """
    if isinstance(transcript, (str, os.PathLike)):
        warnings.warn(f"ctxlab.replay({os.fspath(transcript)!r}, ...) with a course transcript's name is deprecated "
                      "and will be removed in the next release: use ctxlab.course.replay(name, ...), or pass the "
                      "messages", DeprecationWarning, stacklevel=2)
        from .course.runs import transcript_run  # the deprecated path only

        messages, own_tools, own_probes = transcript_run(transcript)
        tools = own_tools if tools is None else tools
        probes = own_probes if probes is None else probes
    else:
        messages = list(transcript)
    probes = dict(probes or {})
    if hasattr(policy, "reset"):
        policy.reset()
    label = getattr(policy, "name", None) or getattr(policy, "__name__", None) or type(policy).__name__

    counter = TokenCounter()
    tool_tokens = count_tools(tools)
    calls = model_calls(messages)
    first_seen: dict[str, int | None] = {}
    texts = [probe_text(m) for m in messages]
    for name, text in probes.items():
        first_index = next((i for i, t in enumerate(texts) if text in t), None)
        first_seen[name] = (
            None if first_index is None else next((k for k, i in enumerate(calls, 1) if i > first_index), None)
        )

    log = getattr(policy, "log", None)
    records: list[LapRecord] = []
    previous = None
    billed = 0
    for lap, index in enumerate(calls, start=1):
        step = messages[index].get("step")
        before = len(log) if log is not None else 0
        prompt = list(policy(messages[:index], lap=step if step is not None else lap, budget=budget, tools=tools))
        tokens = counter.messages(prompt) + tool_tokens
        billed += tokens
        reused = prefix_reuse(previous, prompt, tools=tools, count=counter.message)
        joined = "\n".join(probe_text(m) for m in prompt)
        records.append(
            LapRecord(
                lap=lap,
                step=step,
                tokens=tokens,
                billed=billed,
                reused=reused,
                over_budget=tokens > budget.input_limit,
                probes={name: text in joined for name, text in probes.items()},
                events=(len(log) - before) if log is not None else 0,
                compactions=sum(log[i].kind in COMPACTION_KINDS for i in range(before, len(log))) if log is not None else 0,
            )
        )
        previous = prompt
    return ReplayResult(label, records, probes, first_seen, log, budget.input_limit)


def compare_runs(results: Sequence[ReplayResult]) -> str:
    """Several runs side by side, one row each, as a plain-text table.

    >>> print(compare_runs([ReplayResult("tiny", [LapRecord(1, 1, 100, 100, 0)], {"goal": "g"},
    ...                                  {"goal": 1})]).splitlines()[0])
    policy  peak tokens  last tokens  billed input  uncached input  prefix reused  over budget  probes kept  probes lost
    """
    header = ("policy", "peak tokens", "last tokens", "billed input", "uncached input",
              "prefix reused", "over budget", "probes kept", "probes lost")
    rows = []
    for result in results:
        s = result.summary()
        rows.append((
            s["policy"], f"{s['peak tokens']:,}", f"{s['last tokens']:,}", f"{s['billed input']:,}",
            f"{s['uncached input']:,}", f"{s['prefix reused']:.0%}", str(s["laps over budget"]),
            ", ".join(s["probes kept"]) or "-", ", ".join(s["probes lost"]) or "-",
        ))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in range(1, 7)]
        cells += [row[i].ljust(widths[i]) for i in (7, 8)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
