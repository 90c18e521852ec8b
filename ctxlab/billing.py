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

import json
from collections.abc import Mapping
from typing import Any

import tiktoken

from .errors import MessageError
from .tokens import count_messages, encoding
from .tool_text import GPT5_TOOL_PREAMBLE, tool_block

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
    messages = as_rendered(messages)
    tools = _functions(request)
    if not tools:
        return count_messages(messages, enc)
    return _with_tools(messages, tools, enc) + (GPT5_TOOL_PREAMBLE if request["model"].startswith("gpt-5") else 0)


def as_rendered(messages: list) -> list:
    """The messages as the model reads a tool exchange: a tool result is authored by the
    function it answers (``functions.NAME``, found through its ``tool_call_id``, which is not
    itself shown), and several calls in one assistant message are one call to
    ``multi_tool_use.parallel`` whose arguments list them.

    >>> call = {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
    >>> as_rendered([{"role": "assistant", "content": None, "tool_calls": [call]},
    ...              {"role": "tool", "tool_call_id": "c1", "content": "up"}])[1]
    {'role': 'functions.ping', 'content': 'up'}
    """
    names: dict[Any, str] = {}
    rendered = []
    for message in messages:
        if not isinstance(message, Mapping):
            rendered.append(message)
            continue
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    names[call.get("id")] = call["function"].get("name")
            if len(calls) > 1 and all(_plain_call(call) for call in calls):
                message = {**message, "tool_calls": [_parallel(calls)]}
        if message.get("role") == "tool":
            name = names.get(message.get("tool_call_id")) or message.get("name")
            message = {key: value for key, value in message.items() if key not in ("tool_call_id", "name")}
            if isinstance(name, str):
                message["role"] = f"functions.{name}"
        rendered.append(message)
    return rendered


def _plain_call(call: Any) -> bool:
    function = call.get("function") if isinstance(call, Mapping) else None
    return isinstance(function, Mapping) and isinstance(function.get("name"), str) and isinstance(function.get("arguments"), str)


def _parallel(calls: list) -> dict:
    """Several function calls as the one ``multi_tool_use.parallel`` call the model makes."""
    uses = []
    for call in calls:
        function = call["function"]
        try:
            parameters = json.loads(function["arguments"]) if function["arguments"].strip() else {}
        except ValueError:
            parameters = function["arguments"]
        uses.append({"recipient_name": f"functions.{function['name']}", "parameters": parameters})
    arguments = json.dumps({"tool_uses": uses}, ensure_ascii=False, separators=(",", ":"))
    return {"type": "function", "function": {"name": "multi_tool_use.parallel", "arguments": arguments}}


TOOL_BLOCK_ADJUSTMENT = -1
"""Tokens the measured bills differ from the rendered tool block by, with or without a system
message to carry it (the one token the published format leaves unexplained)."""


def _functions(request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The request's function tools and legacy ``functions``, checked."""
    tools = list(request.get("tools") or []) + list(request.get("functions") or [])
    for index, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ValueError(
                f"tool {index}: expected {{'type': 'function', 'function': {{'name': ..., 'parameters': ...}}}}"
                f", got {str(tool)[:80]}"
            )
        if isinstance(tool, Mapping) and tool.get("type", "function") != "function":
            raise ValueError(
                f"tool {index} is of type {tool.get('type')!r}: only function tools are rendered by a "
                "published rule; count the request without it"
            )
    return tools


def _with_tools(messages: list, tools: list, enc: tiktoken.Encoding) -> int:
    """The messages with the tool block appended to the first system (or developer) message's
    text, or in a system message of its own at the start when there is none."""
    block = tool_block(tools)
    carried = list(messages)
    for index, message in enumerate(carried):
        if (isinstance(message, Mapping) and message.get("role") in ("system", "developer")
                and isinstance(message.get("content"), str)):
            carried[index] = {**message, "content": message["content"] + "\n\n" + block}
            break
    else:
        carried.insert(0, {"role": "system", "content": block})
    return count_messages(carried, enc) + TOOL_BLOCK_ADJUSTMENT
