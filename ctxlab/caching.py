"""What a prompt cache could reuse: the longest common prefix of consecutive prompts, in tokens.

Providers cache the start of a prompt: when a request begins with exactly the tokens of an
earlier one, that prefix is not processed again, and it is billed at a discount. So what
matters for caching is how much of each prompt repeats the previous prompt **from the first
token on**. A memory policy that keeps the start of the prompt still (a static prefix, trims
that happen rarely) gets long cached prefixes. A policy that changes something near the
start on every lap (trimming a little every step, a summary that is rewritten every lap) gets
almost none.

:func:`prefix_reuse` measures it with the course's counting rules (:func:`ctxlab.count_message`):
the tool schemas, then message after message, and inside the first message that differs, the
tokens up to the first difference. Real caches reuse whole blocks (OpenAI: 128 tokens, from
1,024 on), so this is the most a cache could reuse.

>>> system = {"role": "system", "content": "You research heat pumps."}
>>> lap1 = [system, {"role": "user", "content": "Find field studies."}]
>>> lap2 = lap1 + [{"role": "assistant", "content": "Searching."}]
>>> prefix_reuse(lap1, lap2) == sum(map(count_message, lap1))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tiktoken

from .calls import PARALLEL_CALL, call_parts, parallel_arguments
from .tokens import (
    COURSE_KEYS,
    RESULT_AUTHOR,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_TOOL_CALL,
    count_message,
    count_tools,
    encoding,
)

__all__ = ["message_token_ids", "prefix_reuse"]

Message = Mapping[str, Any]

_FRAME, _NAME, _CALL = -1, -2, -3  # stand-ins for the framing tokens the formula counts


def message_token_ids(message: Message, enc: tiktoken.Encoding | None = None) -> list[int]:
    """The tokens of one message as :func:`ctxlab.count_message` counts them, in order.

    Framing tokens are stand-ins (negative numbers); the length always equals
    ``count_message(message)``, and two messages share a token prefix exactly as far as their
    fields agree.

    >>> m = {"role": "user", "content": "Hello!", "step": 3}
    >>> ids = message_token_ids(m)
    >>> len(ids) == count_message(m), ids[:3]
    (True, [-1, -1, -1])
    """
    enc = enc or encoding()
    ids = [_FRAME] * TOKENS_PER_MESSAGE
    for key, value in message.items():
        if key in COURSE_KEYS or value is None:
            continue
        if message.get("role") == "tool" and key in ("tool_call_id", "name"):
            continue  # not read by the model: the result's author is named instead
        if isinstance(value, str):
            ids += enc.encode_ordinary(value)
            if key == "name":
                ids.append(_NAME)
        elif key == "tool_calls":
            parallel = parallel_arguments(value)
            if parallel is not None:
                ids += [_CALL] * TOKENS_PER_TOOL_CALL + enc.encode_ordinary(PARALLEL_CALL) + enc.encode_ordinary(parallel)
            for call in value:
                name, arguments = call_parts(call) or ("", "")
                if parallel is None:
                    ids += [_CALL] * TOKENS_PER_TOOL_CALL
                    ids += enc.encode_ordinary(name)
                    ids += enc.encode_ordinary(arguments)
                # what naming the call's result (functions.NAME, not 'tool') adds to it
                ids += enc.encode_ordinary(RESULT_AUTHOR + name)[len(enc.encode_ordinary("tool")):]
        elif key == "content" and isinstance(value, list):
            for part in value:
                ids += enc.encode_ordinary(part.get("text", ""))
    return ids


def _same(a: Message, b: Message) -> bool:
    return {k: v for k, v in a.items() if k not in COURSE_KEYS} == {k: v for k, v in b.items() if k not in COURSE_KEYS}


def prefix_reuse(
    previous: Sequence[Message] | None,
    current: Sequence[Message],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    within_message: bool = True,
    count: Callable[[Message], int] | None = None,
) -> int:
    """Tokens at the start of ``current`` that repeat ``previous`` exactly: a cache's best case.

    The tool schemas (``tools``, the same for both prompts) come first and count in full.
    Then each leading message of ``current`` equal to the message at the same position of
    ``previous`` counts in full (course keys are ignored), and with ``within_message`` the
    first message that differs adds the tokens it shares with its counterpart before they
    differ. ``previous=None`` (the first lap) reuses nothing. Reply priming is never counted:
    it comes after the prompt.

    >>> a = [{"role": "system", "content": "s"}, {"role": "user", "content": "summary: A"}]
    >>> b = [{"role": "system", "content": "s"}, {"role": "user", "content": "summary: B"}]
    >>> prefix_reuse(a, b), prefix_reuse(a, b, within_message=False), prefix_reuse(None, b)
    (11, 5, 0)
    """
    if previous is None:
        return 0
    count = count or count_message
    reused = count_tools(tools)
    for old, new in zip(previous, current, strict=False):
        if _same(old, new):
            reused += count(new)
            continue
        if within_message:
            enc = encoding()
            a, b = message_token_ids(old, enc), message_token_ids(new, enc)
            shared = 0
            for x, y in zip(a, b, strict=False):
                if x != y:
                    break
                shared += 1
            reused += shared
        break
    return reused
