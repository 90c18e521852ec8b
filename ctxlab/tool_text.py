"""Tool schemas as the model reads them: a typed text block, not the JSON you send.

The API does not show the model a tool's JSON schema. It renders the functions as a
TypeScript-like namespace inside the system message, and bills the tokens of that text::

    # Tools

    ## functions

    namespace functions {

    // Get the weather for a city
    type get_weather = (_: {
    // The city name
    city: string,
    unit?: "c" | "f",
    }) => any;

    } // namespace functions

The shape is the one OpenAI publishes for its open-weight models' prompt format (the harmony
format: https://cookbook.openai.com/articles/openai-harmony) and that the cookbook's "How to count
tokens with tiktoken" approximates with per-function and per-property constants. Each function is
a ``type`` line, its description a ``//`` comment above it (one per line of the description), each
property a line ``name: type,`` (``name?:`` when not required) under its own description; nested
objects are indented two spaces a level; enums become unions of their JSON values, arrays
``T[]``, integers and numbers ``number``.

Two facts the published format does not give were measured on recorded requests
(``tests/test_billing.py``): each property schema that carries a ``title`` (as pydantic writes
one) costs :data:`TOKENS_PER_TITLE` more, and the gpt-5 family adds a fixed
:data:`GPT5_TOOL_PREAMBLE` tokens to any request that sends tools.

>>> print(render_functions([{"type": "function", "function": {"name": "ping",
...     "description": "Check a host", "parameters": {"type": "object",
...     "properties": {"host": {"type": "string"}}, "required": ["host"]}}}]))
namespace functions {
<BLANKLINE>
// Check a host
type ping = (_: {
host: string,
}) => any;
<BLANKLINE>
} // namespace functions
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TOOLS_HEADER", "TOKENS_PER_TITLE", "GPT5_TOOL_PREAMBLE", "render_functions", "tool_block", "titled_properties"]

TOOLS_HEADER = "# Tools\n\n## functions\n\n"
"""The headings above the namespace."""

TOKENS_PER_TITLE = 3
"""Tokens a property's ``title`` adds (measured: the text it renders to is not published)."""

GPT5_TOOL_PREAMBLE = 84
"""Tokens the gpt-5 family adds to a request with tools (measured on recorded gpt-5 requests)."""


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function schema inside a tool (``{"type": "function", "function": {...}}``) or a
    legacy ``functions`` entry (the schema itself)."""
    inner = tool.get("function")
    return inner if isinstance(inner, Mapping) else tool


def _type(schema: Any, indent: int) -> str:
    """The TypeScript-like type of a JSON schema."""
    if not isinstance(schema, Mapping):
        return "any"
    if schema.get("enum"):
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_type(option, indent) for option in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": one}, indent) for one in kind)
    if kind in ("number", "integer"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return kind
    if kind == "array":
        return f"{_type(schema['items'], indent)}[]" if "items" in schema else "any[]"
    if kind == "object" or "properties" in schema:
        if not schema.get("properties"):
            return "object"
        return "{\n" + _properties(schema, indent + 2) + "\n" + " " * indent + "}"
    return "any"


def _comment(text: str, pad: str) -> list[str]:
    return [f"{pad}// {line}" for line in text.split("\n")]


def _properties(schema: Mapping[str, Any], indent: int) -> str:
    pad = " " * indent
    required = schema.get("required") or []
    lines = []
    for name, prop in schema["properties"].items():
        if isinstance(prop, Mapping) and isinstance(prop.get("description"), str) and prop["description"]:
            lines += _comment(prop["description"], pad)
        mark = "" if name in required else "?"
        lines.append(f"{pad}{name}{mark}: {_type(prop, indent)},")
    return "\n".join(lines)


def render_functions(tools: Sequence[Mapping[str, Any]]) -> str:
    """The ``namespace functions`` text of ``tools`` (tool schemas or legacy functions)."""
    lines = ["namespace functions {", ""]
    for tool in tools:
        function = _function(tool)
        description = function.get("description")
        if isinstance(description, str) and description:
            lines += _comment(description, "")
        parameters = function.get("parameters")
        if isinstance(parameters, Mapping) and parameters.get("properties"):
            lines += [f"type {function['name']} = (_: {{", _properties(parameters, 0), "}) => any;"]
        else:
            lines.append(f"type {function['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def tool_block(tools: Sequence[Mapping[str, Any]]) -> str:
    """The whole text the tools add to the system message: headings and namespace."""
    return TOOLS_HEADER + render_functions(tools)


def titled_properties(tools: Sequence[Mapping[str, Any]]) -> int:
    """How many property schemas in ``tools`` (at any depth) carry a ``title``.

    >>> titled_properties([{"function": {"name": "f", "parameters": {"properties": {
    ...     "q": {"type": "string", "title": "Q"}, "n": {"type": "integer"}}}}}])
    1
    """
    def count(schema: Any) -> int:
        if not isinstance(schema, Mapping):
            return 0
        total = count(schema.get("items"))
        for prop in (schema.get("properties") or {}).values():
            if isinstance(prop, Mapping):
                total += ("title" in prop) + count(prop)
        return total

    return sum(count(_function(tool).get("parameters")) for tool in tools)
