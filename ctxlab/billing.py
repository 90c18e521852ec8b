"""What the API bills for a whole Chat Completions request, counted offline.

:func:`count_request` takes the request body as it is sent (``model``, ``messages``,
``tools``, ...) and returns the ``prompt_tokens`` the API reports for it: the messages by
:func:`ctxlab.count_messages` with the model's own encoding, the tool schemas by
:func:`ctxlab.count_tools`. Keys that only steer sampling or delivery (``temperature``,
``stream``, ``max_tokens``, ...) cost nothing; a key this module does not know is refused, since
what it adds to the bill is not known.

>>> count_request({"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello!"}],
...                "temperature": 0})
9
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tiktoken

from .errors import MessageError
from .tokens import count_messages, count_tools, encoding

__all__ = ["FREE_KEYS", "count_request", "encoding_name_for"]

FREE_KEYS = frozenset({
    "model", "temperature", "top_p", "n", "stream", "stream_options", "stop", "max_tokens",
    "max_completion_tokens", "seed", "logprobs", "top_logprobs", "logit_bias",
    "frequency_penalty", "presence_penalty", "user", "metadata", "store", "service_tier",
    "parallel_tool_calls", "reasoning_effort", "safety_identifier", "prompt_cache_key",
    "modalities", "audio", "prediction", "verbosity",
})
"""Request keys that add nothing to the prompt the API bills (they steer sampling, length,
delivery or storage). ``prediction`` is billed as output, not input."""

_COUNTED_KEYS = frozenset({"messages", "tools", "functions"})


def encoding_name_for(model: str) -> str:
    """The encoding of an OpenAI chat model, by tiktoken's own table: ``o200k_base`` for the
    gpt-4o, gpt-4.1, gpt-5 and o-series families, ``cl100k_base`` for gpt-4 and gpt-3.5.

    >>> encoding_name_for("gpt-4o-mini-2024-07-18"), encoding_name_for("gpt-3.5-turbo")
    ('o200k_base', 'cl100k_base')
    """
    if not isinstance(model, str) or not model:
        raise ValueError(f"the request's 'model' must be a model name such as 'gpt-4o', got {model!r}")
    try:
        return tiktoken.encoding_name_for_model(model)
    except KeyError:
        raise ValueError(
            f"cannot tell the encoding of model {model!r}: ctxlab counts OpenAI chat models "
            "(gpt-3.5, gpt-4, gpt-4o, gpt-4.1, gpt-5, o1, o3, o4)"
        ) from None


def _free_when_default(request: Mapping[str, Any]) -> set[str]:
    """Keys set to what the API assumes anyway: ``None`` (the key unset), ``response_format``
    of type ``text``, ``tool_choice`` ``"auto"``."""
    free = {key for key, value in request.items() if value is None and key not in ("model", "messages")}
    if isinstance(request.get("response_format"), Mapping) and request["response_format"].get("type") == "text":
        free.add("response_format")
    if request.get("tool_choice") == "auto":
        free.add("tool_choice")
    return free


def count_request(request: Mapping[str, Any]) -> int:
    """The ``prompt_tokens`` the API bills for ``request``, a Chat Completions request body.

    >>> count_request({"model": "gpt-3.5-turbo", "messages": [
    ...     {"role": "system", "content": "You are terse."},
    ...     {"role": "user", "content": "Hello!"}], "stream": True})
    17
    """
    if not isinstance(request, Mapping):
        raise TypeError(f"count_request needs the request body as a dict, got {type(request).__name__}")
    for key in ("model", "messages"):
        if key not in request:
            raise ValueError(f"the request has no {key!r}: pass the whole body sent to chat.completions.create")
    unknown = sorted(set(request) - FREE_KEYS - _COUNTED_KEYS - _free_when_default(request))
    if unknown:
        raise ValueError(
            f"cannot count request key(s) {', '.join(map(repr, unknown))}: what they add to the bill "
            "is not known offline; count the request without them and add their cost yourself"
        )
    messages = request["messages"]
    if not isinstance(messages, list) or not messages:
        raise MessageError("the request's 'messages' must be a non-empty list of message dicts")
    enc = encoding(encoding_name_for(request["model"]))
    tools = list(request.get("tools") or [])
    tools += [{"type": "function", "function": function} for function in request.get("functions") or []]
    return count_messages(messages, enc) + count_tools(tools, enc)
