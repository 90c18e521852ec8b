"""What the API bills for a whole Chat Completions request, counted offline.

:func:`count_request` takes the request body as it is sent and returns the ``prompt_tokens``
the API reports for it, with the model's own encoding. It counts the prompt the model reads, not
the JSON that was sent:

* messages by :func:`ctxlab.count_messages`, which reads each tool exchange as the model does
  (:func:`as_rendered` shows it): a tool result is authored by ``functions.NAME`` and its
  ``tool_call_id`` is not shown; parallel calls are one ``multi_tool_use.parallel`` call, and
  their results one message of that author holding :func:`parallel_results_text` (a step
  ``count_messages`` leaves out, so that each message's count stands alone; it adds
  :func:`parallel_results_difference`);
* ``tools`` (or legacy ``functions``) as the typed namespace of :mod:`ctxlab.tool_text`,
  appended to the first system message (or in one of its own), then a ``json_schema``
  ``response_format`` as :func:`response_format_text` (and, without tools,
  :data:`RESPONSE_FORMAT_ADJUSTMENT` more);
* a ``tool_choice`` (or legacy ``function_call``) naming a function costs its name and
  :data:`TOOL_CHOICE_NAMED` more; ``"required"`` and ``"none"`` by :data:`TOOL_CHOICE_TOKENS`;
* the gpt-5 family and o4-mini write their prompt in the harmony format, whose channels cost
  more (:mod:`ctxlab.harmony`): ``HARMONY_FINAL`` per earlier reply, ``HARMONY_TOOL_EXCHANGE``
  per tool call with its result, and a response format ``HARMONY_FORMAT_DIFFERENCE`` off the
  others' (all measured on both shared files).

Keys that only steer sampling or delivery (``temperature``, ``stream``, ``max_tokens``, ...) cost
nothing. A key this module does not know (the API gains new ones every few months) is left out
of the count with an :class:`UnknownKeyWarning` that names it, since what it adds to the bill is
not known; ``strict=True`` refuses it instead. An image whose size cannot be read (one given by
an ``https://`` URL) is counted at the most an image can cost the model, with an
:class:`UpperBoundWarning`: the count is then at or above the bill, never below.
How close this lands is measured on recorded bills by ``tests/test_billing.py`` and
``bench/bench_counting.py``; the constants named here were measured there, not published.

>>> count_request({"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello!"}],
...                "temperature": 0})
9
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Mapping
from typing import Any

import tiktoken

from .calls import PARALLEL_CALL, escapes_non_ascii, parallel_arguments, parallel_results_text
from .errors import ConfigError, ConfigTypeError, MessageError, _check_tool_list
from .harmony import harmony_difference, is_harmony
from .images import image_cost, image_cost_ceiling
from .messages import validate_messages
from .parts import image_size
from .tokens import RESULT_AUTHOR, TOKENS_PER_MESSAGE, count_message, count_messages, encoding
from .tool_text import GPT5_TOOL_PREAMBLE, TOOL_BLOCK_ADJUSTMENT, tool_block

__all__ = ["FREE_KEYS", "UNPRICED_KEYS", "UnknownKeyWarning", "UpperBoundWarning", "count_request", "harmony_difference",
           "is_harmony", "encoding_name_for", "escapes_non_ascii",
           "parallel_results_text"]

FREE_KEYS = frozenset({
    "model", "temperature", "top_p", "n", "stream", "stream_options", "stop", "max_tokens",
    "max_completion_tokens", "seed", "logprobs", "top_logprobs", "logit_bias",
    "frequency_penalty", "presence_penalty", "user", "metadata", "store", "service_tier",
    "parallel_tool_calls", "reasoning_effort", "safety_identifier", "prompt_cache_key",
    "modalities", "audio", "prediction", "verbosity",
})
"""Request keys that add nothing to the prompt the API bills (they steer sampling, length,
delivery or storage). ``prediction`` is billed as output, not input."""

_COUNTED_KEYS = frozenset({"messages", "tools", "functions", "tool_choice", "function_call", "response_format"})

UNPRICED_KEYS = {
    "web_search_options": "search models bill a prompt of their own, with the search results in it",
}
"""Known request keys whose cost no published rule gives, with why; counted as unknown keys are."""


class UnknownKeyWarning(UserWarning):
    """:func:`count_request` left a request key, or a tool of a type it cannot render, out of its
    count: the message names it and why. The count then falls short of the bill by whatever
    that part adds."""


class UpperBoundWarning(UserWarning):
    """:func:`count_request` counted an image given by URL at the most an image can cost the
    model (:func:`ctxlab.images.image_cost_ceiling`), since its size cannot be known offline:
    the count is an upper bound, and the bill may be lower. A budget built on it stays safe; to
    count exactly, send the image as a ``data:`` URL, whose size is read."""


def encoding_name_for(model: str) -> str:
    """The encoding of an OpenAI chat model, by tiktoken's own table: ``o200k_base`` for the
    gpt-4o, gpt-4.1, gpt-5 and o-series families, ``cl100k_base`` for gpt-4 and gpt-3.5.

    >>> encoding_name_for("gpt-4o-mini-2024-07-18"), encoding_name_for("gpt-3.5-turbo")
    ('o200k_base', 'cl100k_base')
    """
    if not isinstance(model, str) or not model:
        raise ConfigError(f"the request's 'model' must be a model name such as 'gpt-4o', got {model!r}")
    try:
        return tiktoken.encoding_name_for_model(model)
    except KeyError:
        raise ConfigError(
            f"cannot tell the encoding of model {model!r}: ctxlab counts OpenAI chat models "
            "(gpt-3.5, gpt-4, gpt-4o, gpt-4.1, gpt-5, o1, o3, o4)"
        ) from None


def _free_when_default(request: Mapping[str, Any]) -> set[str]:
    """Keys set to what the API assumes anyway: ``None`` (the key unset), ``response_format``
    of type ``text``, ``tool_choice`` ``"auto"``."""
    free = {key for key, value in request.items() if value is None and key not in ("model", "messages")}
    if isinstance(request.get("response_format"), Mapping) and request["response_format"].get("type") == "text":
        free.add("response_format")
    return free


def count_request(request: Mapping[str, Any], *, strict: bool = False, validate: bool = True) -> int:
    """The ``prompt_tokens`` the API bills for ``request``, a Chat Completions request body.

    A key it does not know, or a tool that is not a function tool, is left out of the count with
    an :class:`UnknownKeyWarning` naming it; with ``strict=True`` it is refused
    (:class:`ctxlab.errors.ConfigError`). The messages are checked first, as
    :func:`ctxlab.validate_messages` checks them (a role the API does not know, a tool result
    no call asked for, a Responses API item): :class:`ctxlab.MessageError` names the first
    problem. ``validate=False`` counts without checking, for a history known to be good.

    >>> count_request({"model": "gpt-3.5-turbo", "messages": [
    ...     {"role": "system", "content": "You are terse."},
    ...     {"role": "user", "content": "Hello!"}], "stream": True})
    17
    """
    if not isinstance(request, Mapping):
        raise ConfigTypeError(f"count_request needs the request body as a dict, got {type(request).__name__}")
    for key in ("model", "messages"):
        if key not in request:
            raise ConfigError(f"the request has no {key!r}: pass the whole body sent to chat.completions.create")
    unknown = sorted(set(request) - FREE_KEYS - _COUNTED_KEYS - _free_when_default(request))
    if unknown:
        why = "; ".join(f"{key}: {UNPRICED_KEYS[key]}" for key in unknown if key in UNPRICED_KEYS)
        what = (f"request key(s) {', '.join(map(repr, unknown))}: what they add to the bill is not known offline"
                + (f" ({why})" if why else ""))
        if strict:
            raise ConfigError(f"cannot count {what}; count the request without them and add their cost yourself")
        warnings.warn(UnknownKeyWarning(
            f"not counted: {what}; the count covers the rest of the request, so the bill may be higher "
            "(strict=True refuses such a request)"), stacklevel=2)
    messages = request["messages"]
    if not isinstance(messages, list) or not messages:
        raise MessageError("the request's 'messages' must be a non-empty list of message dicts")
    if validate:
        validate_messages(messages)
    enc = encoding(encoding_name_for(request["model"]))
    messages, images, bounded = _images_apart(messages, request["model"])
    if bounded:
        warnings.warn(UpperBoundWarning(
            f"{bounded} image(s) counted at the most an image can cost {request['model']}, since their size "
            "cannot be read offline (given by URL): the count is an upper bound and the bill may be lower; "
            "send an image as a data: URL to count it exactly"), stacklevel=2)
    tools = _functions(request, strict)
    # The system message carries the tool block, then the response format (harmony's order).
    appended = [tool_block(tools)] if tools else []
    shown_format = response_format_text(request.get("response_format"))
    if shown_format:
        appended.append(shown_format)
    if appended:
        messages = _appended_to_system(messages, "\n\n".join(appended))
    escaped = escapes_non_ascii(request["model"])
    total = count_messages(messages, enc) + parallel_results_difference(messages, enc, escape_non_ascii=escaped) + images
    if shown_format and not tools:
        total += RESPONSE_FORMAT_ADJUSTMENT
    if is_harmony(request["model"]):
        total += harmony_difference(request["messages"], formatted=bool(shown_format) and not tools)
    if tools:
        choice = request.get("tool_choice", _legacy_choice(request.get("function_call")))
        total += TOOL_BLOCK_ADJUSTMENT + _tool_choice_tokens(choice, enc)
        total += GPT5_TOOL_PREAMBLE if request["model"].startswith("gpt-5") else 0
    return total


TOOL_CHOICE_NAMED = 7
"""Tokens a ``tool_choice`` naming a function adds besides the function's name (measured)."""

TOOL_CHOICE_TOKENS = {None: 0, "auto": 0, "none": -3, "required": -2}
"""What the other ``tool_choice`` values add (measured on recorded requests)."""


def _images_apart(messages: list, model: str) -> tuple[list, int, int]:
    """The messages without the image parts of user messages, what those images cost ``model``
    (by :func:`ctxlab.images.image_cost`), and how many of them were given by a URL whose size
    cannot be read, and so counted at the most an image can cost."""
    kept, cost, bounded = [], 0, 0
    for message in messages:
        if isinstance(message, Mapping) and message.get("role") == "user" and isinstance(message.get("content"), list):
            content = message["content"]
            parts = []
            for part in content:
                image = part.get("image_url") if isinstance(part, Mapping) and part.get("type") == "image_url" else None
                image = {"url": image} if isinstance(image, str) else image
                if isinstance(image, Mapping) and isinstance(image.get("url"), str):
                    detail, size = image.get("detail") or "auto", image_size(image["url"])
                    if size is None:
                        cost += image_cost_ceiling(model, detail)
                        bounded += 1
                    else:
                        cost += image_cost(model, *size, detail=detail)
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        kept.append(message)
    return kept, cost, bounded


def _legacy_choice(function_call: Any) -> Any:
    """The ``tool_choice`` a legacy ``function_call`` stands for."""
    if isinstance(function_call, Mapping):
        return {"type": "function", "function": function_call}
    return function_call


def _tool_choice_tokens(choice: Any, enc: tiktoken.Encoding) -> int:
    if isinstance(choice, Mapping):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str):
            raise ConfigError(
                "tool_choice must be 'auto', 'none', 'required' or "
                f"{{'type': 'function', 'function': {{'name': ...}}}}, got {choice!r}"
            )
        return len(enc.encode_ordinary(name)) + TOOL_CHOICE_NAMED
    if choice not in TOOL_CHOICE_TOKENS:
        raise ConfigError(f"tool_choice must be 'auto', 'none', 'required' or name a function, got {choice!r}")
    return TOOL_CHOICE_TOKENS[choice]


HIDDEN_KEYWORDS = frozenset({"required", "additionalProperties", "$schema", "minimum", "maximum", "minItems", "maxItems"})
"""Schema keywords a response format's text leaves out, at every depth. ``required``,
``additionalProperties`` and ``$schema``: as a leaked system prompt and a measurement published
in the OpenAI cookbook's issues show (see :func:`response_format_text`). The bounds: as the bills
of the recorded schemas that carry them show (``minimum`` and ``maximum`` in one schema sent 30
times, ``maxItems`` in one; ``minItems`` goes with ``maxItems``)."""

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONES = ("items", "not", "contains", "if", "then", "else")


def _as_shown(schema: Any) -> Any:
    """``schema`` as a response format's text shows it: every keyword but
    :data:`HIDDEN_KEYWORDS`, in every subschema. Values that are data (``enum``, ``const``,
    ``default``, ``examples``) and property names are kept as they are, even when they read
    like a hidden keyword.

    >>> _as_shown({"type": "object", "properties": {"required": {"type": "integer", "minimum": 0}},
    ...            "required": ["required"], "additionalProperties": False})
    {'type': 'object', 'properties': {'required': {'type': 'integer'}}}
    """
    if not isinstance(schema, Mapping):
        return schema
    shown = {}
    for key, value in schema.items():
        if key in HIDDEN_KEYWORDS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            value = {name: _as_shown(item) for name, item in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            value = [_as_shown(item) for item in value]
        elif key in _SCHEMA_ONES:
            value = [_as_shown(item) for item in value] if isinstance(value, list) else _as_shown(value)
        shown[key] = value
    return shown


RESPONSE_FORMAT_ADJUSTMENT = 4
"""Tokens a request without tools is billed beyond its response format's text (measured: the
same 4 on every recorded request with a ``json_schema`` format and no tools, with or without a
system message). With tools the format's text is billed as it is."""


def response_format_text(response_format: Any) -> str:
    """The text a ``json_schema`` response format adds to the system message: the harmony
    layout (``# Response Formats``, the schema's name, its description as a comment) and the
    schema as compact JSON without :data:`HIDDEN_KEYWORDS` (left out by :func:`_as_shown`).
    ``json_object`` and ``text`` add no text.

    A prompt leaked through a strict format shows ``{"type":"object","properties":{"output":
    {"type":"string"}}}`` for a schema sent with ``additionalProperties`` and ``required``
    (https://ghost.ai.moda/openai-structured-outputs-to-system-prompt/); a measurement in
    https://github.com/openai/openai-cookbook/issues/2140 drops ``required``,
    ``additionalProperties`` and ``$schema`` at every depth. On the recorded bills this puts
    every request with a response format on its bill, titles kept at every depth.

    >>> print(response_format_text({"type": "json_schema", "json_schema": {"name": "joke",
    ...     "strict": True, "schema": {"type": "object", "title": "Joke", "additionalProperties": False,
    ...     "properties": {"joke": {"type": "string", "title": "Joke"}}, "required": ["joke"]}}}))
    # Response Formats
    <BLANKLINE>
    ## joke
    <BLANKLINE>
    {"type":"object","title":"Joke","properties":{"joke":{"type":"string","title":"Joke"}}}
    """
    if response_format is None:
        return ""
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    if kind in ("text", "json_object"):
        return ""
    spec = response_format.get("json_schema") if kind == "json_schema" else None
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise ConfigError(
            "response_format must be {'type': 'text'}, {'type': 'json_object'} or "
            f"{{'type': 'json_schema', 'json_schema': {{'name': ..., 'schema': {{...}}}}}}, got {str(response_format)[:80]}"
        )
    text = f"# Response Formats\n\n## {spec['name']}\n\n"
    if isinstance(spec.get("description"), str):
        text += f"// {spec['description']}\n"
    return text + json.dumps(_as_shown(spec.get("schema", {})), ensure_ascii=False, separators=(",", ":"))


def _appended_to_system(messages: list, text: str) -> list:
    """``messages`` with ``text`` appended (after a blank line) to the first system or developer
    message with text content, or as a system message of its own at the start."""
    carried = list(messages)
    for index, message in enumerate(carried):
        if (isinstance(message, Mapping) and message.get("role") in ("system", "developer")
                and isinstance(message.get("content"), str)):
            carried[index] = {**message, "content": message["content"] + "\n\n" + text}
            return carried
    return [{"role": "system", "content": text}, *carried]


def _parallel_groups(messages: list) -> list[tuple[list[str], list[Mapping[str, Any]]]]:
    """For each assistant message with parallel calls, the names of the calls its results answer
    and those results: the run of tool messages right after it that answer its calls, when each
    holds text (results with content parts are read one by one)."""
    groups = []
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if parallel_arguments(calls) is None:
            continue
        names = {call.get("id"): call["function"]["name"] for call in calls}
        results = []
        for reply in itertools.islice(messages, index + 1, None):  # no copy: a long run has many of these
            if not (isinstance(reply, Mapping) and reply.get("role") == "tool" and reply.get("tool_call_id") in names):
                break
            results.append(reply)
        if len(results) > 1 and all(isinstance(result.get("content"), str) for result in results):
            groups.append(([names[result["tool_call_id"]] for result in results], results))
    return groups


def parallel_results_difference(messages: list, enc: tiktoken.Encoding, *, escape_non_ascii: bool = True) -> int:
    """What reading each parallel call's results as one message (:func:`parallel_results_text`,
    authored by ``multi_tool_use.parallel``) changes in :func:`ctxlab.count_messages`, which
    counts each result alone, authored by its function."""
    def count(text: str) -> int:
        return len(enc.encode_ordinary(text))

    difference = 0
    for names, results in _parallel_groups(messages):
        text = parallel_results_text([r["content"] for r in results], escape_non_ascii=escape_non_ascii)
        difference += TOKENS_PER_MESSAGE + count(PARALLEL_CALL) + count(text)
        difference -= sum(count_message(result, enc) + count(RESULT_AUTHOR + name) - count("tool")
                          for name, result in zip(names, results, strict=True))
    return difference


def as_rendered(messages: list) -> list:
    """The messages as the model reads a tool exchange: a tool result is authored by the
    function it answers (``functions.NAME``, found through its ``tool_call_id``, which is not
    itself shown); several calls in one assistant message are one call to
    ``multi_tool_use.parallel`` whose arguments list them, and their results one message of that
    author (:func:`parallel_results_text`). It is for reading: :func:`count_request` counts the
    original messages this way.

    >>> call = {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
    >>> as_rendered([{"role": "assistant", "content": None, "tool_calls": [call]},
    ...              {"role": "tool", "tool_call_id": "c1", "content": "up"}])[1]
    {'role': 'functions.ping', 'content': 'up'}
    """
    merged = {id(results[0]): results for _, results in _parallel_groups(messages)}
    skipped = {id(result) for results in merged.values() for result in results[1:]}
    names: dict[Any, str] = {}
    rendered = []
    for message in messages:
        if not isinstance(message, Mapping):
            rendered.append(message)
            continue
        if id(message) in skipped:
            continue
        if id(message) in merged:
            rendered.append({"role": PARALLEL_CALL,
                             "content": parallel_results_text([r["content"] for r in merged[id(message)]])})
            continue
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    names[call.get("id")] = call["function"].get("name")
            parallel = parallel_arguments(calls)
            if parallel is not None:
                message = {**message, "tool_calls": [
                    {"type": "function", "function": {"name": PARALLEL_CALL, "arguments": parallel}}]}
        if message.get("role") == "tool":
            name = names.get(message.get("tool_call_id")) or message.get("name")
            message = {key: value for key, value in message.items() if key not in ("tool_call_id", "name")}
            if isinstance(name, str):
                message["role"] = f"functions.{name}"
        rendered.append(message)
    return rendered


def _functions(request: Mapping[str, Any], strict: bool = False) -> list[Mapping[str, Any]]:
    """The request's function tools and legacy ``functions``, checked. A tool of another type
    (``custom``, whose rendering no published rule gives) is left out with an
    :class:`UnknownKeyWarning`, or refused when ``strict``."""
    for key in ("tools", "functions"):
        if request.get(key):
            _check_tool_list(request[key], key)
    tools = list(request.get("tools") or []) + list(request.get("functions") or [])
    other = [(index, tool.get("type")) for index, tool in enumerate(tools)
             if isinstance(tool, Mapping) and tool.get("type", "function") != "function"]
    if other:
        what = ", ".join(f"tool {index} (of type {kind!r})" for index, kind in other)
        if strict:
            raise ConfigError(f"{what}: only function tools are rendered by a known rule; count the request without it")
        warnings.warn(UnknownKeyWarning(
            f"not counted: {what}: only function tools are rendered by a known rule (how the API shows a "
            "custom tool's grammar or format to the model is not published), so the bill may be higher"),
            stacklevel=3)
        tools = [tool for index, tool in enumerate(tools) if index not in {i for i, _ in other}]
    for index, tool in enumerate(tools):
        function = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ConfigError(
                f"tool {index}: expected {{'type': 'function', 'function': {{'name': ..., 'parameters': ...}}}}"
                f", got {str(tool)[:80]}"
            )
    return tools
