"""Tool schemas as the model reads them: a typed text block, not the JSON you send.

The API does not show the model a tool's JSON schema. It renders the functions as a
TypeScript-like namespace in the system message, and bills the tokens of that text::

    # Tools

    ## functions

    namespace functions {

    // Get the weather for a city
    type get_weather = (_: {
    // The city name
    city: string,
    unit?: "c" | "f", // default: "c"
    }) => any;

    } // namespace functions

The rules are those of the renderer OpenAI publishes with its open-weight models' prompt format
(harmony: https://github.com/openai/harmony, ``src/encoding.rs``; the cookbook's "How to count
tokens with tiktoken" approximates the same text with per-function and per-property constants):

* each function is a ``type`` line under a ``//`` comment holding its description; a function
  with parameters takes ``(_: {...})``, one without takes ``()``;
* each property is a line ``name: type,`` (``name?:`` when not required) under a comment for
  its ``title`` (then an empty ``//``), its ``description`` and its ``examples``; a ``default``
  follows the comma as ``// default: ...``;
* ``string`` with an ``enum`` is the union of the quoted values; ``integer`` is ``number``;
  ``boolean`` and ``null`` are themselves; an array is ``T[]`` (``Array<any>`` without
  ``items``); a nested object is indented four spaces more;
  ``oneOf`` lists its variants on ``|`` lines; anything else is ``any``.

Where the bills of recorded requests (``tests/test_billing.py``) disagree with the published
renderer, the bills win, and the difference is named here:

* a nested object none of whose properties has a comment (no description, title, examples or
  default) is written on one line, ``{latitude: number, longitude: number}``: on gpt-4.1's MCP
  tool schemas (ruby_llm-mcp) the indented form was billed 4 to 7 tokens less than counted,
  the one-line form exactly; nested objects whose properties have comments stay indented;

* a function's description is one comment with its newlines kept, as a property's is, each of
  its lines stripped of surrounding spaces (the published renderer starts every line with
  ``//`` and keeps a docstring's indentation); an empty description has no comment;
* parameters with no properties that allow no others (``additionalProperties: false``) make a
  function that takes ``()``; with no properties but others allowed, it takes ``(_: {})``;
* a property whose type is an object shows no description, neither above it nor above its
  ``{`` (the published renderer shows both), and only top-level properties show a title;
* ``anyOf`` is the union of its options (the published renderer writes ``any``), and a local
  ``$ref`` (``#/$defs/...``) is replaced by the definition it names;
* a list of types (``"type": ["string", "null"]``) is not written as their union (as the
  published renderer does): the whole schema of that property, description included, is shown
  as compact JSON in its place, its comments kept above it. The recordings hold one such schema,
  crewAI's planning tool, in eleven requests on gpt-4o, gpt-4o-mini and gpt-4o-2024-11-20:
  written as a union, each was billed 21 tokens more than counted; written as JSON, 1;
* the gpt-5 family adds :data:`GPT5_TOOL_PREAMBLE` tokens to any request that sends tools, and
  every tool block is billed :data:`TOOL_BLOCK_ADJUSTMENT` tokens off its text.

>>> print(render_functions([{"type": "function", "function": {"name": "ping",
...     "description": "Check a host", "parameters": {"type": "object",
...     "properties": {"host": {"type": "string", "title": "Host"}}, "required": ["host"]}}}]))
namespace functions {
<BLANKLINE>
// Check a host
type ping = (_: {
// Host
//
host: string,
}) => any;
<BLANKLINE>
} // namespace functions
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TOOLS_HEADER", "GPT5_TOOL_PREAMBLE", "TOOL_BLOCK_ADJUSTMENT", "render_functions", "tool_block"]

TOOLS_HEADER = "# Tools\n\n## functions\n\n"
"""The headings above the namespace."""

GPT5_TOOL_PREAMBLE = 84
"""Tokens the gpt-5 family adds to a request with tools (measured on recorded gpt-5 requests;
the harmony format's channel instructions are text of about this size)."""


TOOL_BLOCK_ADJUSTMENT = -1
"""Tokens the measured bills differ from the rendered tool block by, with or without a system
message to carry it (the one token the published format leaves unexplained)."""


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function schema inside a tool (``{"type": "function", "function": {...}}``) or a
    legacy ``functions`` entry (the schema itself)."""
    inner = tool.get("function")
    return inner if isinstance(inner, Mapping) else tool


def _default(value: Any, schema: Mapping[str, Any]) -> str:
    """A property's default as its trailing comment shows it (a string quoted unless the
    property is an enum)."""
    if isinstance(value, str):
        return value if schema.get("enum") else f'"{value}"'
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))  # as serde_json displays it


def _inlined(schema: Any, root: Mapping[str, Any], open_refs: tuple[str, ...] = ()) -> Any:
    """``schema`` with each local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) replaced by the
    definition it names; a definition that refers to itself is left as ``any`` inside itself."""
    if isinstance(schema, list):
        return [_inlined(item, root, open_refs) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for step in ref[2:].split("/"):
            target = target.get(step) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping) or ref in open_refs:
            return {}
        merged = {**target, **{key: value for key, value in schema.items() if key != "$ref"}}
        return _inlined(merged, root, (*open_refs, ref))
    return {key: _inlined(value, root, open_refs) for key, value in schema.items() if key not in ("$defs", "definitions")}


def _type(schema: Any, indent: str) -> str:
    """The TypeScript-like type of a JSON schema, as the rendering spells it."""
    if not isinstance(schema, Mapping):
        return "any"
    if isinstance(schema.get("oneOf"), list):
        return "".join(f"\n{indent} | {_type(option, indent + '   ')}" for option in schema["oneOf"])
    if isinstance(schema.get("anyOf"), list):
        return " | ".join(_type(option, indent) for option in schema["anyOf"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    if kind == "object":
        return _object(schema, indent)
    if kind == "string":
        values = [value for value in schema.get("enum") or [] if isinstance(value, str)]
        return " | ".join(f'"{value}"' for value in values) if values else "string"
    if kind in ("number", "integer"):
        return "number"
    if kind in ("boolean", "null"):
        return kind
    if kind == "array":
        return f"{_type(schema['items'], indent)}[]" if "items" in schema else "Array<any>"
    return "any"


_COMMENTED = ("description", "title", "examples", "default")


def _object(schema: Mapping[str, Any], indent: str) -> str:
    """An object type: each property on its own line under its title (top level only),
    description (unless the property is itself an object) and examples, with ``?`` when not
    required, its default after. A nested object none of whose properties has a comment is
    written on one line, ``{a: T, b?: U}``."""
    required = {name for name in schema.get("required") or [] if isinstance(name, str)}
    properties = schema.get("properties")
    if not properties:
        return "{}"
    if indent and isinstance(properties, Mapping) and not any(
            isinstance(prop, Mapping) and any(key in prop for key in _COMMENTED) for prop in properties.values()):
        return "{" + ", ".join(
            f"{name}{'' if name in required else '?'}: {_type(prop, indent + '    ')}"
            for name, prop in properties.items()) + "}"
    out = "{\n"
    for name, prop in (properties.items() if isinstance(properties, Mapping) else ()):
        prop = prop if isinstance(prop, Mapping) else {}
        if isinstance(prop.get("title"), str) and not indent:
            out += f"// {prop['title']}\n//\n"
        if isinstance(prop.get("description"), str) and prop.get("type") != "object":
            out += f"{indent}// {prop['description']}\n"
        examples = [example for example in prop.get("examples") or [] if isinstance(example, str)]
        if examples:
            out += f"{indent}// Examples:\n" + "".join(f'{indent}// - "{example}"\n' for example in examples)
        mark = "" if name in required else "?"
        kind = _type(prop, indent + "    ")
        if prop.get("nullable") is True and "null" not in kind:
            kind += " | null"
        out += f"{indent}{name}{mark}: {kind},"
        if "default" in prop:
            out += f" // default: {_default(prop['default'], prop)}"
        out += "\n"
    return out + f"{indent}}}"


def render_functions(tools: Sequence[Mapping[str, Any]]) -> str:
    """The ``namespace functions`` text of ``tools`` (tool schemas or legacy functions)."""
    lines = ["namespace functions {\n"]
    for tool in tools:
        function = _function(tool)
        description = function.get("description")
        if isinstance(description, str) and description.strip():
            lines.append("// " + "\n".join(line.strip() for line in description.strip().splitlines()))
        parameters = function.get("parameters")
        if isinstance(parameters, Mapping) and (
                parameters.get("properties") or parameters.get("additionalProperties") is not False):
            lines.append(f"type {function['name']} = (_: {_type(_inlined(parameters, parameters), '')}) => any;\n")
        else:
            lines.append(f"type {function['name']} = () => any;\n")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def tool_block(tools: Sequence[Mapping[str, Any]]) -> str:
    """The whole text the tools add to the system message: headings and namespace."""
    return TOOLS_HEADER + render_functions(tools)
