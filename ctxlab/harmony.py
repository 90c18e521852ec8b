"""What OpenAI's harmony format adds to a prompt, for the models that read it.

The gpt-5 family and o4-mini read their prompt in the harmony format
(https://github.com/openai/harmony): every assistant message carries a channel, and a tool call
and its result carry their recipient and the call's constraint. Their bills are those of the
gpt-4o rendering (:func:`ctxlab.count_messages`) plus what those markers cost, per message: this
module holds the measured amounts, so that :func:`ctxlab.count_request` (a whole request) and a
:class:`ctxlab.TokenCounter` made for such a model (one message at a time) add the same.

>>> harmony_message_tokens({"role": "assistant", "content": "Done."})
2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HARMONY_MODELS", "HARMONY_FINAL", "HARMONY_FORMATTED_FINAL", "HARMONY_TOOL_EXCHANGE",
           "HARMONY_FORMAT_DIFFERENCE", "is_harmony", "harmony_message_tokens", "harmony_difference"]

HARMONY_MODELS = ("gpt-5", "o4-mini")
"""Model name prefixes whose prompt is written in OpenAI's harmony format (channels on every
assistant message), as their recorded bills show; o3-mini's do not (measured), and o1's and
o3's tool requests are not recorded."""

HARMONY_FINAL = 2
"""What an assistant's reply costs beyond the gpt-4o rendering in the harmony format: its
channel, ``<|channel|>final``."""

HARMONY_FORMATTED_FINAL = 5
"""The same under a ``json_schema`` response format, which constrains the reply:
``<|channel|>final <|constrain|>json`` (fits the two recorded requests with earlier replies)."""

HARMONY_TOOL_EXCHANGE = 8
"""What one tool call and its result cost beyond the gpt-4o rendering in the harmony format:
the call's ``<|constrain|>json`` and its channel, the result's ``to=assistant`` and its
``<|channel|>commentary`` (the same 8 for parallel calls, read as one wrapped call)."""

HARMONY_FORMAT_DIFFERENCE = -5
"""How far a harmony model's bill for a response format without tools lands from
:data:`ctxlab.billing.RESPONSE_FORMAT_ADJUSTMENT` (the same -5 on every such recorded request, gpt-5, gpt-5.4
and o4-mini alike)."""


def is_harmony(model: str) -> bool:
    """Whether ``model``'s prompt is written in the harmony format (:data:`HARMONY_MODELS`).

    >>> is_harmony("gpt-5-mini-2025-08-07"), is_harmony("o4-mini"), is_harmony("gpt-4o")
    (True, True, False)
    """
    return model.startswith(HARMONY_MODELS)


def harmony_message_tokens(message: Any, formatted: bool = False) -> int:
    """What one message costs a harmony model beyond its gpt-4o rendering: an assistant message
    with tool calls (or a legacy ``function_call``) :data:`HARMONY_TOOL_EXCHANGE`, its results
    nothing more; an assistant reply with content :data:`HARMONY_FINAL` (or
    :data:`HARMONY_FORMATTED_FINAL` under a response format); any other message 0.

    >>> call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    >>> harmony_message_tokens({"role": "assistant", "content": None, "tool_calls": [call]})
    8
    """
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return 0
    if message.get("tool_calls") or message.get("function_call"):
        return HARMONY_TOOL_EXCHANGE
    if message.get("content"):
        return HARMONY_FORMATTED_FINAL if formatted else HARMONY_FINAL
    return 0


def harmony_difference(messages: list, formatted: bool = False) -> int:
    """What a harmony model bills for ``messages`` beyond their gpt-4o rendering: each earlier
    reply's channel, and each tool exchange's (an assistant message with ``tool_calls``, or a
    legacy ``function_call``, and its results). ``formatted``: under a response format.

    >>> harmony_difference([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
    ...     {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "1"}])
    10
    """
    total = sum(harmony_message_tokens(message, formatted) for message in messages)
    if formatted:
        total += HARMONY_FORMAT_DIFFERENCE
    return total
