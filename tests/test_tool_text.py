"""The typed listing of tool schemas (ctxlab.tool_text), one rule at a time.

Each rule in the module docstring has its case here; tests/test_billing.py checks the whole
listing against recorded bills.
"""

from __future__ import annotations

from ctxlab.tool_text import TOOLS_HEADER, render_functions, tool_block


def function(name="f", description=None, **parameters):
    spec = {"name": name}
    if description is not None:
        spec["description"] = description
    if parameters:
        spec["parameters"] = {"type": "object", **parameters}
    return {"type": "function", "function": spec}


def body(tool) -> str:
    """The listing of one tool, without the namespace lines."""
    text = render_functions([tool])
    assert text.startswith("namespace functions {\n\n") and text.endswith("\n} // namespace functions")
    return text[len("namespace functions {\n\n"):-len("\n} // namespace functions")]


def prop(schema, required=True, name="x"):
    """The line(s) one property makes in a function's parameters."""
    text = body(function(properties={name: schema}, required=[name] if required else []))
    return text[len("type f = (_: {\n"):-len("}) => any;\n")]


def test_the_block_is_the_headings_then_the_namespace():
    tools = [function("ping")]
    assert tool_block(tools) == TOOLS_HEADER + render_functions(tools)
    assert TOOLS_HEADER == "# Tools\n\n## functions\n\n"


def test_a_function_is_a_type_line_under_its_description():
    assert body(function("ping", "Check a host", properties={})) == "// Check a host\ntype ping = (_: {}) => any;\n"
    assert body(function("ping", "  \n ")) == "type ping = () => any;\n"  # an empty description has no comment
    assert body(function("ping", "First line.\n    Indented second.\n")) == (
        "// First line.\nIndented second.\ntype ping = () => any;\n")  # one comment, each line stripped


def test_parameters_with_no_properties():
    assert body(function("ping")) == "type ping = () => any;\n"
    assert body(function("ping", properties={}, additionalProperties=False)) == "type ping = () => any;\n"
    # with no properties but others allowed: {} on one line, as the module says; "{\n}" counted
    # a token more per such tool than the bills (ruby_llm-mcp's 34 tools on gpt-4.1, ten of them
    # empty, came onto their bills; crewAI's and ldp's on gpt-4o came a token nearer)
    assert body(function("ping", properties={})) == "type ping = (_: {}) => any;\n"


def test_required_and_optional_properties():
    assert prop({"type": "string"}) == "x: string,\n"
    assert prop({"type": "string"}, required=False) == "x?: string,\n"


def test_types():
    assert prop({"type": "integer"}) == "x: number,\n"
    assert prop({"type": "number"}) == "x: number,\n"
    assert prop({"type": "boolean"}) == "x: boolean,\n"
    assert prop({"type": "string", "enum": ["c", "f"]}) == 'x: "c" | "f",\n'
    assert prop({"type": "array", "items": {"type": "string"}}) == "x: string[],\n"
    assert prop({"type": "array"}) == "x: Array<any>,\n"
    assert prop({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "x: number | null,\n"
    assert prop({"type": "string", "nullable": True}) == "x: string | null,\n"
    assert prop({}) == "x: any,\n"
    assert prop({"oneOf": [{"type": "string"}, {"type": "number"}]}) == "x: \n     | string\n     | number,\n"


def test_a_list_of_types_is_shown_as_its_schema_json():
    # not the union the published renderer writes: what the bills of crewAI's planning tool show
    assert prop({"type": ["string", "null"]}) == 'x: {"type":["string","null"]},\n'
    assert prop({"type": ["string", "null"], "description": "Tool, or null"}) == (
        '// Tool, or null\nx: {"type":["string","null"],"description":"Tool, or null"},\n')
    nested = {"type": "array", "items": {"type": "object", "properties": {"t": {"type": ["integer", "null"]}}}}
    assert prop(nested) == 'x: {t?: {"type":["integer","null"]}}[],\n'


def test_comments_title_description_examples_default():
    assert prop({"type": "string", "description": "The city"}) == "// The city\nx: string,\n"
    assert prop({"type": "string", "title": "City"}) == "// City\n//\nx: string,\n"
    assert prop({"type": "string", "examples": ["Oslo"]}) == '// Examples:\n// - "Oslo"\nx: string,\n'
    assert prop({"type": "string", "default": "Oslo"}) == 'x: string, // default: "Oslo"\n'
    assert prop({"type": "string", "enum": ["c", "f"], "default": "c"}) == 'x: "c" | "f", // default: c\n'
    assert prop({"type": "integer", "default": 3}) == "x: number, // default: 3\n"


def test_a_nested_object_is_indented_without_its_own_description_or_inner_titles():
    nested = {"type": "object", "description": "Where", "title": "Place",
              "properties": {"city": {"type": "string", "description": "The city", "title": "City"}},
              "required": ["city"]}
    assert prop(nested) == "// Place\n//\nx: {\n    // The city\n    city: string,\n    },\n"
    # the array's items are not the property: their title is not shown
    assert prop({"type": "array", "items": nested}) == "x: {\n    // The city\n    city: string,\n    }[],\n"


def test_local_refs_are_inlined_and_a_loop_is_any():
    tool = function(properties={"x": {"$ref": "#/$defs/City"}}, required=["x"],
                    **{"$defs": {"City": {"type": "string", "enum": ["Oslo"]},
                                 "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}})
    assert body(tool) == 'type f = (_: {\nx: "Oslo",\n}) => any;\n'
    looped = function(properties={"x": {"$ref": "#/$defs/Node"}}, required=["x"],
                      **{"$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}})
    assert body(looped) == "type f = (_: {\nx: {next?: any},\n}) => any;\n"


def test_legacy_functions_are_read_like_tools():
    legacy = {"name": "ping", "description": "Check a host", "parameters": {"type": "object", "properties": {}}}
    assert render_functions([legacy]) == render_functions([{"type": "function", "function": legacy}])


def test_a_nested_object_without_comments_is_one_line():
    # gpt-4.1's MCP tool schemas (ruby_llm-mcp): billed exactly as this, 4 to 7 tokens under the
    # indented form; a nested object with a commented property stays indented (above)
    geocode = {"type": "object", "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
               "required": ["latitude", "longitude"]}
    assert prop(geocode) == "x: {latitude: number, longitude: number},\n"
    assert prop({**geocode, "required": ["latitude"]}) == "x: {latitude: number, longitude?: number},\n"
    site = {"anyOf": [{"type": "string"}, {"type": "object", "properties": {
        "url": {"type": "string"}, "headers": {"type": "array", "items": {
            "type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
            "required": ["name", "value"]}}}, "required": ["url", "headers"]}]}
    assert prop(site) == "x: string | {url: string, headers: {name: string, value: string}[]},\n"
    assert prop({"type": "object", "properties": {}}) == "x: {},\n"
    described = {"type": "object", "properties": {"city": {"type": "string", "default": "Oslo"}}}
    assert prop(described) == 'x: {\n    city?: string, // default: "Oslo"\n    },\n'
