"""The two kinds of tool call an assistant message can make, read one way.

The Chat Completions API has two call types. A **function** call names a function tool and
passes it JSON ``arguments``; a **custom** call names a custom tool (one declared with
``{"type": "custom", "custom": {...}}``) and passes it free text as ``input``::

    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{...}"}}
    {"id": "call_2", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin..."}}

Everything in ctxlab that reads a call (counting, validation, summaries, stubs, the scratchpad)
reads it through :func:`call_parts`, so both kinds are counted, checked and shown alike: by
their name and their input text. A call without ``type`` is a function call, as in the API.

>>> call_parts({"id": "c", "type": "custom", "custom": {"name": "sh", "input": "ls -l"}})
('sh', 'ls -l')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["CALL_TYPES", "PARALLEL_CALL", "call_parts", "call_problem", "parallel_arguments", "parallel_results_text",
           "escapes_non_ascii"]

CALL_TYPES = {"function": "arguments", "custom": "input"}
"""Each call type the API has, and the field of its nested object that holds the call's input."""


PARALLEL_CALL = "multi_tool_use.parallel"
"""The one call the model reads when an assistant message makes several function calls."""


def parallel_arguments(calls: Any) -> str | None:
    """The arguments of the one :data:`PARALLEL_CALL` the model reads for ``calls``, or ``None``
    when they are not two or more function calls with string arguments (then each call is
    read as it is). Arguments that are JSON are re-serialised compactly; others are kept as
    their text.

    >>> parallel_arguments([{"function": {"name": "a", "arguments": '{"x": 1}'}},
    ...                     {"function": {"name": "b", "arguments": ""}}])
    '{"tool_uses":[{"recipient_name":"functions.a","parameters":{"x":1}},{"recipient_name":"functions.b","parameters":{}}]}'
    """
    if not isinstance(calls, list) or len(calls) < 2:
        return None
    uses = []
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if (call.get("type", "function") != "function" or not isinstance(function, Mapping)
                or not isinstance(function.get("name"), str) or not isinstance(function.get("arguments"), str)):
            return None
        try:
            parameters = json.loads(function["arguments"]) if function["arguments"].strip() else {}
        except ValueError:
            parameters = function["arguments"]
        uses.append({"recipient_name": f"functions.{function['name']}", "parameters": parameters})
    return json.dumps({"tool_uses": uses}, ensure_ascii=False, separators=(",", ":"))


def call_parts(call: Any) -> tuple[str, str] | None:
    """``(name, input)`` of a well-formed tool call: a function call's name and ``arguments``
    (``""`` when left out), a custom call's name and ``input``; ``None`` for anything else.

    >>> call_parts({"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}})
    ('f', '{}')
    >>> call_parts({"id": "c", "function": {"name": "f"}}), call_parts({"id": "c", "type": "web"})
    (('f', ''), None)
    """
    if not isinstance(call, Mapping):
        return None
    kind = call.get("type", "function")
    field = CALL_TYPES.get(kind) if isinstance(kind, str) else None
    body = call.get(kind) if field is not None else None
    if not isinstance(body, Mapping):
        return None
    name, text = body.get("name"), body.get(field, "")
    if not isinstance(name, str) or not isinstance(text, str):
        return None
    return name, text


def call_problem(call: Any, *, need_id: bool = True) -> str | None:
    """What is wrong with one entry of ``tool_calls`` (``None`` when nothing is), saying how
    to fix it. Counting needs no ``id`` (``need_id=False``); sending does.

    >>> call_problem({"id": "c", "type": "custom", "custom": {"name": "sh", "input": 3}})
    "tool call 'c': a custom call's 'input' must be a string (the tool's free-text input), got int"
    """
    if not isinstance(call, Mapping):
        return f"each tool call must be a dict, got {type(call).__name__}"
    if need_id and (not isinstance(call.get("id"), str) or not call.get("id")):
        return "each tool call needs a non-empty string 'id'"
    ident, kind = call.get("id", "(no id)"), call.get("type", "function")
    if kind == "custom":
        custom = call.get("custom")
        if not isinstance(custom, Mapping) or not isinstance(custom.get("name"), str):
            return f"tool call {ident!r} has type 'custom' and needs 'custom': {{'name': str, 'input': str}}"
        if not isinstance(custom.get("input"), str):
            return (
                f"tool call {ident!r}: a custom call's 'input' must be a string (the tool's "
                f"free-text input), got {type(custom.get('input')).__name__}"
            )
        return None
    if kind != "function":
        return (
            f"tool call {ident!r} has type {kind!r}; the API's tool call types are 'function' "
            "(with 'function': {'name', 'arguments'}) and 'custom' (with 'custom': {'name', 'input'})"
        )
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        return f"tool call {ident!r} needs 'function': {{'name': str, 'arguments': str}}"
    if not isinstance(function.get("arguments"), str):
        return (
            f"tool call {ident!r}: 'arguments' must be a JSON string, got "
            f"{type(function.get('arguments')).__name__}; wrap it with json.dumps(...)"
        )
    return None


def escapes_non_ascii(model: str) -> bool:
    """Whether ``model`` reads the results of a parallel call with non-ASCII text escaped
    (``\\u2014`` for an em dash, several tokens where the character itself is one).

    The recorded bills differ by model. gpt-4o reads the characters as they are: its four
    recorded requests with such results (crewAI's hierarchical runs: em dashes and curly quotes
    in text) land within 6 tokens of their bills unescaped, while escaped the two with the most
    are counted 54 and 10 tokens over. gpt-4o-mini and gpt-3.5 read them escaped: their five
    such requests land within 4 tokens escaped, and 4 to 537 tokens under unescaped. No other
    model has a recorded request that tells; they are counted escaped.

    >>> escapes_non_ascii("gpt-4o-2024-08-06"), escapes_non_ascii("gpt-4o-mini")
    (False, True)
    """
    return not (model.startswith("gpt-4o") and not model.startswith("gpt-4o-mini"))


def parallel_results_text(contents: list[str], *, escape_non_ascii: bool = True) -> str:
    """The one message the results of a parallel call are read as: the list of the results in
    JSON, each parsed first when it is a JSON object or array, in the layout of Python's
    ``json.dumps`` defaults (``", "`` and ``": "``, non-ASCII written as ``\\u`` escapes unless
    ``escape_non_ascii`` is false: :func:`escapes_non_ascii` says which models). The
    recorded bills show this: a pretty-printed JSON result bills as re-serialised, text bills
    with its newlines and quotes escaped.

    >>> print(parallel_results_text(['{"temp":21}', 'Sunny\\nand warm']))
    [{"temp": 21}, "Sunny\\nand warm"]
    >>> print(parallel_results_text(['20 °C', 'dry'], escape_non_ascii=False))
    ["20 °C", "dry"]
    """
    values = []
    for content in contents:
        try:
            value = json.loads(content)
        except ValueError:
            value = content
        values.append(value if isinstance(value, (dict, list)) else content)
    return json.dumps(values, ensure_ascii=escape_non_ascii)
