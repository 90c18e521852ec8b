"""Deterministic agent histories of any length, made from the course transcripts.

A history here is what a tool-using agent accumulates: a system prompt, the user's task, then
one lap after another. Most laps are an assistant message calling one tool or several in
parallel, followed by the tool results; some are a plain assistant reply, and now and then the
user speaks again (about one such message in thirty is marked ``"pinned": True``, a constraint the
agent must keep). Tool results range from tens to thousands of tokens (log-uniform sizes).

Every string is real course text: the system prompts, user turns, assistant replies, tool
names, arguments and tool-result lines of the transcripts in ``data/``, cut and recombined by
``random.Random(seed)``. Each tool result starts with a header naming its lap and call, so no
two results are the same string. Nothing reads the clock: the same arguments give the same
messages on every machine.

>>> h = history(40)
>>> len(h), h[0]["role"], h[1]["role"], ctxlab.pairs_ok(h)
(40, 'system', 'user', True)
>>> history(40) == h
True
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import ctxlab
import ctxlab.course

SIZES = (100, 1_000, 5_000, 20_000)
"""The history lengths, in messages, that the benchmarks report."""

ALLOWANCES = {"tight": 8_000, "medium": 32_000, "generous": 128_000}
"""History allowances in tokens: what is left of an 8k, a 32k-ish and a 128k-ish window."""

CHARS_PER_TOKEN = 3.6  # measured on the transcripts' tool results: text and JSON, cl100k_base
RESULT_TOKENS = (20, 3_000)  # tool-result sizes are log-uniform between these
TOOL_LAP, TEXT_LAP = 0.78, 0.14  # the rest of the laps start with a user message
PARALLEL = (1, 1, 1, 1, 1, 1, 2, 2, 3, 4)  # calls per tool lap, drawn uniformly


@dataclass(frozen=True)
class _Pool:
    """Strings taken from the transcripts, to recombine."""

    systems: tuple[str, ...]
    users: tuple[str, ...]
    replies: tuple[str, ...]
    calls: tuple[tuple[str, str], ...]  # (function name, arguments)
    lines: tuple[str, ...]  # every line of every tool result, in order
    offsets: tuple[int, ...]  # character offset of each line in the joined text


@functools.cache
def _pool() -> _Pool:
    systems, users, replies, calls, lines = [], [], [], [], []
    for name in ctxlab.course.transcript_names():
        for message in ctxlab.course.load_transcript(name):
            role, content = message["role"], message.get("content")
            if role == "system":
                systems.append(content)
            elif role == "user":
                users.append(content)
            elif role == "assistant":
                if content:
                    replies.append(content)
                for call in message.get("tool_calls") or ():
                    calls.append((call["function"]["name"], call["function"]["arguments"]))
            elif role == "tool":
                lines.extend(line + "\n" for line in content.splitlines())
    offsets, total = [], 0
    for line in lines:
        offsets.append(total)
        total += len(line)
    return _Pool(tuple(systems), tuple(users), tuple(replies), tuple(calls), tuple(lines), tuple(offsets))


def _result_text(rng: random.Random, pool: _Pool, header: str) -> str:
    """About a log-uniform number of tokens of real tool-result lines, from a random place."""
    low, high = RESULT_TOKENS
    tokens = math.exp(rng.uniform(math.log(low), math.log(high)))
    chars = int(tokens * CHARS_PER_TOKEN) - len(header)
    start = rng.randrange(len(pool.lines))
    end = bisect.bisect_left(pool.offsets, pool.offsets[start] + chars, lo=start)
    picked = list(pool.lines[start : min(end + 1, len(pool.lines))])
    while sum(map(len, picked)) < chars:  # ran off the end of the pool: wrap around
        picked.extend(pool.lines[: 1 + (chars - sum(map(len, picked))) // 40])
    text = "".join(picked)
    if len(text) > chars:  # a long last line (a JSON document on one line): cut it
        cut = text.rfind("\n", 0, chars)
        text = text[: cut + 1] if cut > chars // 2 else text[:chars]
    return header + text


def _call_id(rng: random.Random) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "call_" + "".join(rng.choice(alphabet) for _ in range(24))


def laps(*, seed: int = 0) -> Iterator[list[dict[str, Any]]]:
    """An endless stream of laps: the first is the system prompt and the task, then one lap each.

    >>> stream = laps()
    >>> [m["role"] for m in next(stream)]
    ['system', 'user']
    """
    rng, pool = random.Random(seed), _pool()
    yield [
        {"role": "system", "content": rng.choice(pool.systems), "step": 0},
        {"role": "user", "content": rng.choice(pool.users), "step": 0},
    ]
    step = 0
    while True:
        step += 1
        yield _lap(rng, pool, step, kind=rng.random(), calls=rng.choice(PARALLEL))


def _lap(rng: random.Random, pool: _Pool, step: int, *, kind: float, calls: int) -> list[dict[str, Any]]:
    """One lap: a tool lap with ``calls`` calls, a plain reply, or a user turn then a tool lap."""
    lap: list[dict[str, Any]] = []
    if kind >= TOOL_LAP + TEXT_LAP:
        user: dict[str, Any] = {"role": "user", "content": f"(lap {step}) " + rng.choice(pool.users), "step": step}
        if rng.random() < 0.03:
            user["pinned"] = True
        lap.append(user)
    if TOOL_LAP <= kind < TOOL_LAP + TEXT_LAP or calls == 0:
        lap.append({"role": "assistant", "content": rng.choice(pool.replies), "step": step})
        return lap
    made = []
    for _ in range(calls):
        name, arguments = rng.choice(pool.calls)
        made.append({"id": _call_id(rng), "type": "function", "function": {"name": name, "arguments": arguments}})
    content = rng.choice(pool.replies)[:200] if rng.random() < 0.2 else None
    lap.append({"role": "assistant", "content": content, "tool_calls": made, "step": step})
    for number, call in enumerate(made, start=1):
        header = f"[lap {step}, call {number}: {call['function']['name']}]\n"
        lap.append({"role": "tool", "tool_call_id": call["id"], "content": _result_text(rng, pool, header), "step": step})
    return lap


def history(n_messages: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """A valid history of exactly ``n_messages`` messages (at least 2), the same on every call.

    The last lap is made smaller when a whole one would overshoot, so the history always ends
    on a complete turn group.

    >>> [m["role"] for m in history(5)]
    ['system', 'user', 'assistant', 'tool', 'tool']
    """
    if n_messages < 2:
        raise ValueError(f"a history needs the system prompt and the task: n_messages >= 2, got {n_messages}")
    rng, pool = random.Random(f"last lap {seed}"), _pool()  # a stream apart from the laps'
    messages: list[dict[str, Any]] = []
    stream = laps(seed=seed)
    while len(messages) < n_messages:
        lap = next(stream)
        room = n_messages - len(messages)
        if len(lap) > room:  # finish with a lap that fills the room exactly
            step = lap[0]["step"]
            lap = _lap(rng, pool, step, kind=0.0, calls=min(room - 1, 4)) if room > 1 else \
                _lap(rng, pool, step, kind=TOOL_LAP, calls=0)
            if len(lap) < room:  # more than 5 short: keep filling
                messages += lap
                continue
        messages += lap
    return messages


def growing(start: int, n_laps: int, *, seed: int = 0) -> tuple[list[dict[str, Any]], int, list[int]]:
    """About ``start`` messages of whole laps, then ``n_laps`` more laps of :func:`laps`.

    Returns the messages, the length of the first part, and the end index of each added lap:
    lap ``k`` assembles ``messages[:ends[k]]``.

    >>> messages, first, ends = growing(100, 3)
    >>> 90 < first <= 100, len(ends), ends[-1] == len(messages)
    (True, 3, True)
    """
    messages: list[dict[str, Any]] = []
    stream = laps(seed=seed)
    lap = next(stream)
    while len(messages) + len(lap) <= start or not messages:
        messages += lap
        lap = next(stream)
    first, ends = len(messages), []
    for _ in range(n_laps):
        messages += lap
        ends.append(len(messages))
        lap = next(stream)
    return messages, first, ends


def lap_ends(messages: list[dict[str, Any]], n_laps: int) -> list[int]:
    """End indices that assemble ``messages`` in about ``n_laps`` steps of similar length.

    Lap ``k`` ends at the first turn-group boundary at or after ``k * len(messages) / n_laps``
    (lap 1 holds at least the system prompt and the task), so every lap adds whole groups; a
    history with fewer groups than laps gets one lap per group.

    >>> ends = lap_ends(history(1_000), 200)
    >>> len(ends), ends[-1], all(a < b for a, b in zip(ends, ends[1:]))
    (200, 1000, True)
    """
    boundaries = [stop for _, stop in ctxlab.trimming.turn_group_spans(messages) if stop >= 2]
    ends: list[int] = []
    for lap in range(1, n_laps + 1):
        target = lap * len(messages) / n_laps
        end = boundaries[min(bisect.bisect_left(boundaries, target), len(boundaries) - 1)]
        if not ends or end > ends[-1]:
            ends.append(end)
    return ends


def describe(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts that say what a history is made of: messages by role, calls, tokens.

    >>> describe(history(5))["roles"]
    {'system': 1, 'user': 1, 'assistant': 1, 'tool': 2}
    """
    roles: dict[str, int] = {}
    for message in messages:
        roles[message["role"]] = roles.get(message["role"], 0) + 1
    results = sorted(ctxlab.count_message(m) for m in messages if m["role"] == "tool")
    calls = [len(m["tool_calls"]) for m in messages if m.get("tool_calls")]
    return {
        "messages": len(messages),
        "roles": roles,
        "tokens": ctxlab.count_messages(messages) - ctxlab.tokens.REPLY_PRIMING,
        "parallel_laps": sum(1 for c in calls if c > 1),
        "tool_result_tokens": (results[0], results[len(results) // 2], results[-1]) if results else None,
        "pinned": sum(1 for m in messages if m.get("pinned") is True),
        "bytes": len(json.dumps(messages)),
    }
