"""The ways of trimming a history that the fit benchmark races, and the floor they race to.

* :func:`floor`: every string the counting rule covers, encoded once, summed. Nothing else:
  no validation, no grouping, no decision. No exact trimmer can do less work.
* :func:`ctxlab_fit`: ``ctxlab.fit`` with a fresh ``ctxlab.TokenCounter`` (what ``fit`` uses
  when given no ``count``), so its encoder calls can be read.
* :func:`seed_fit`: the straightforward approach of the course's source texts: walk the turn
  groups newest first and, for each one considered, count the whole candidate list again;
  keep the group if the list fits, and go on to the next either way. It follows ctxlab's rules
  (pins, turn groups, newest groups kept) so its output can be checked against ``ctxlab.fit``:
  the two keep the same newest groups, and the seed approach may add older groups that fit
  after a larger one did not.

LangChain's ``trim_messages`` is in :mod:`langchain_trim`.

>>> history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."},
...     {"role": "assistant", "content": "x " * 50}, {"role": "assistant", "content": "Done."}]
>>> floor(history).total == ctxlab.count_messages(history) - 3
True
>>> [len(seed_fit(history, 40).kept), len(ctxlab_fit(history, 40).kept)]
[3, 3]
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ctxlab
import ctxlab.course
from ctxlab.calls import PARALLEL_CALL, parallel_arguments
from ctxlab.pieces import text_counter
from ctxlab.tokens import REPLY_PRIMING, RESULT_AUTHOR

_TOOL_ROLE = 1  # tokens of "tool" in cl100k_base and o200k_base

Message = dict[str, Any]


@dataclass
class Outcome:
    """What a contender returned and how many strings it sent to the tokenizer."""

    kept: list[Message] | None
    encoder_calls: int
    tokens: int = 0  # tokens the tokenizer produced in all: the work done
    total: int = 0  # the floor's answer: the history's count, without reply priming


def counted_strings(message: Message) -> list[str]:
    """The strings the counting rule encodes for one message (course keys left out): a tool
    result without its ``tool_call_id`` and ``name``, several calls as one parallel call, and
    each call's result author (``functions.NAME``).

    >>> counted_strings({"role": "tool", "tool_call_id": "c1", "content": "ok", "step": 3})
    ['tool', 'ok']
    """
    strings = []
    result = message.get("role") == "tool"
    for key, value in message.items():
        if key in ctxlab.course.COURSE_KEYS or value is None or (result and key in ("tool_call_id", "name")):
            continue
        if isinstance(value, str):
            strings.append(value)
        elif key == "tool_calls":
            parallel = parallel_arguments(value)
            if parallel is not None:
                strings += [PARALLEL_CALL, parallel]
            for call in value:
                if parallel is None:
                    strings += [call["function"]["name"], call["function"]["arguments"]]
                strings.append(RESULT_AUTHOR + call["function"]["name"])
            strings += ["tool"] if value else []  # the role each result's author replaces
        elif key == "content":
            strings += [part["text"] for part in value]
    return strings


def floor(messages: Sequence[Message], encoding: Any = None) -> Outcome:
    """Encode every counted string of every message once; return the total (no priming)."""
    encode = (encoding or ctxlab.encoding()).encode_ordinary
    work = fixed = calls = 0
    for message in messages:
        fixed += ctxlab.tokens.TOKENS_PER_MESSAGE
        result = message.get("role") == "tool"
        for key, value in message.items():
            if key == "step" or key == "pinned" or value is None:
                continue
            if value.__class__ is str:
                if result and (key == "tool_call_id" or key == "name"):
                    continue
                work += len(encode(value))
                calls += 1
                if key == "name":
                    fixed += ctxlab.tokens.TOKENS_PER_NAME
            elif key == "tool_calls":
                parallel = parallel_arguments(value) if len(value) > 1 else None
                if parallel is not None:
                    work += len(encode(PARALLEL_CALL)) + len(encode(parallel))
                    fixed += ctxlab.tokens.TOKENS_PER_TOOL_CALL
                    calls += 2
                for call in value:
                    function = call["function"]
                    if parallel is None:
                        work += len(encode(function["name"])) + len(encode(function["arguments"]))
                        fixed += ctxlab.tokens.TOKENS_PER_TOOL_CALL
                        calls += 2
                    work += len(encode(RESULT_AUTHOR + function["name"]))
                    calls += 1
                if value:
                    role = len(encode("tool"))  # the role each result's author replaces
                    work += role
                    fixed -= role * (len(value) + 1)
                    calls += 1
            else:
                for part in value:
                    work += len(encode(part["text"]))
                    calls += 1
    return Outcome(None, calls, work, work + fixed)


def ctxlab_fit(messages: Sequence[Message], allowance: int) -> Outcome:
    """``ctxlab.fit`` as an agent calls it on a history it has not counted before: a fresh
    counter, and the process's memory of cl100k_base pieces (:mod:`ctxlab.pieces`) emptied."""
    counter = ctxlab.TokenCounter()
    forget = getattr(text_counter(counter.encoding), "forget", None)
    if forget is not None:
        forget()
    kept, _ = ctxlab.fit(messages, allowance, count=counter.message)
    return Outcome(kept, counter.encoder_calls)


class OutOfTime(Exception):
    """Raised by :func:`seed_fit` when it passes its deadline; says how far it got."""

    def __init__(self, considered: int, tokens: int, calls: int) -> None:
        super().__init__(f"stopped after considering {considered} groups")
        self.considered, self.tokens, self.calls = considered, tokens, calls


class _CountingEncoding:
    """Stands in for the tiktoken encoding and keeps a tally of the work it is given."""

    def __init__(self, encoding: Any) -> None:
        self._encode = encoding.encode_ordinary
        self.calls = self.tokens = 0

    def encode_ordinary(self, text: str) -> list[int]:
        ids = self._encode(text)
        self.calls += 1
        self.tokens += len(ids)
        return ids


def _structure(messages: Sequence[Message], keep_recent: int) -> tuple[list[tuple[int, int]], set[int]]:
    """Turn-group spans and the groups that must be kept (pins and the newest groups)."""
    spans = ctxlab.trimming.turn_group_spans(messages)
    pins = ctxlab.trimming.pinned_indices(messages)
    starts = [start for start, _ in spans]
    required = {bisect.bisect_right(starts, index) - 1 for index in pins}
    required |= set(range(max(0, len(spans) - keep_recent), len(spans)))
    return spans, required


def seed_fit(
    messages: Sequence[Message],
    allowance: int,
    *,
    keep_recent: int = 1,
    deadline: float = math.inf,
    encoding: Any = None,
) -> Outcome:
    """Trim by re-counting the candidate list for every turn group considered.

    Counts with ``ctxlab.count_messages`` (the plain formula, no memory), as a reader of the
    source texts would. Raises :class:`OutOfTime` once ``time.perf_counter()`` passes
    ``deadline``.
    """
    encoder = _CountingEncoding(encoding or ctxlab.encoding())

    def total(candidate: list[Message]) -> int:
        return ctxlab.count_messages(candidate, encoder) - REPLY_PRIMING

    if total(list(messages)) <= allowance:
        return Outcome(list(messages), encoder.calls, encoder.tokens)
    spans, required = _structure(messages, keep_recent)
    chosen = sorted(required)
    considered = 0
    for group in range(len(spans) - 1, -1, -1):
        if group in required:
            continue
        if time.perf_counter() > deadline:
            raise OutOfTime(considered, encoder.tokens, encoder.calls)
        considered += 1
        trial = sorted([*chosen, group])
        candidate = [messages[i] for g in trial for i in range(*spans[g])]
        if total(candidate) <= allowance:
            chosen = trial
    kept = [messages[i] for g in chosen for i in range(*spans[g])]
    return Outcome(kept, encoder.calls, encoder.tokens)


@dataclass
class SeedWork:
    """The work :func:`seed_fit` does on a history, worked out from each message's count."""

    tokens: int  # tokens encoded in all
    calls: int  # strings encoded in all
    considered: int  # groups considered
    tokens_after: list[int] = field(repr=False, default_factory=list)  # after each group considered


def seed_work(messages: Sequence[Message], allowance: int, *, keep_recent: int = 1) -> SeedWork:
    """Simulate :func:`seed_fit`'s decisions without encoding anything, to predict its work.

    Used to extrapolate a run stopped at its deadline: the time it would have taken is the
    time it took, times the tokens it would have encoded over the tokens it did encode.
    """
    counter = ctxlab.TokenCounter()
    tokens = [counter.message(m) for m in messages]
    strings = [len(counted_strings(m)) for m in messages]
    message_tokens = [t - ctxlab.tokens.TOKENS_PER_MESSAGE - _fixed_overhead(m) for t, m in zip(tokens, messages, strict=True)]
    whole_tokens, whole_calls = sum(message_tokens), sum(strings)
    if sum(tokens) <= allowance:
        return SeedWork(whole_tokens, whole_calls, 0)
    spans, required = _structure(messages, keep_recent)

    def group_sum(values: list[int], group: int) -> int:
        return sum(values[slice(*spans[group])])

    kept_tokens = sum(group_sum(tokens, g) for g in required)
    kept_work = sum(group_sum(message_tokens, g) for g in required)
    kept_calls = sum(group_sum(strings, g) for g in required)
    work, calls, after = whole_tokens, whole_calls, []
    for group in range(len(spans) - 1, -1, -1):
        if group in required:
            continue
        work += kept_work + group_sum(message_tokens, group)
        calls += kept_calls + group_sum(strings, group)
        after.append(work)
        if kept_tokens + group_sum(tokens, group) <= allowance:
            kept_tokens += group_sum(tokens, group)
            kept_work += group_sum(message_tokens, group)
            kept_calls += group_sum(strings, group)
    return SeedWork(work, calls, len(after), after)


def _fixed_overhead(message: Message) -> int:
    """The tokens of a message's count that are not produced by the tokenizer (a call's result
    author replaces the role 'tool', one token, so each call takes that token back)."""
    result = message.get("role") == "tool"
    extra = ctxlab.tokens.TOKENS_PER_NAME if isinstance(message.get("name"), str) and not result else 0
    calls = message.get("tool_calls") or ()
    parallel = parallel_arguments(list(calls)) is not None
    taken_back = _TOOL_ROLE * (len(calls) + 1) if calls else 0  # "tool" once encoded, once per call replaced
    return extra + ctxlab.tokens.TOKENS_PER_TOOL_CALL * (1 if parallel else len(calls)) - taken_back
