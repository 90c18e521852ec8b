"""Offline prompt-token counters, each as ``count(request) -> int`` on a Chat Completions body.

* ``ctxlab``: :func:`ctxlab.count_request`.
* ``cookbook``: the OpenAI cookbook's "How to count tokens with tiktoken"
  (https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken), its
  ``num_tokens_from_messages`` and ``num_tokens_for_tools`` written out here from the published
  description: 3 tokens a message, every value encoded, 1 more for ``name``, 3 to prime the reply;
  tools by per-function, per-property and per-enum constants. Like the original it encodes every
  message value as text, so ``content: None`` or a list of parts makes it fail.
* ``langchain``: ``ChatOpenAI.get_num_tokens_from_messages`` of ``langchain-openai``.
* ``litellm``: ``litellm.token_counter``.

The last two are imported only when asked for (``bench/requirements.txt`` installs them). A
counter that raises on a request is recorded as failing on it, never as a count.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import tiktoken

import ctxlab

Counter = Callable[[Mapping[str, Any]], int]


def _encoding(model: str) -> tiktoken.Encoding:
    return ctxlab.encoding(ctxlab.billing.encoding_name_for(model))


# The cookbook's constants for tools: (function start, properties start, per property, enum
# start, per enum item, end of the tool block), for the gpt-4o family and for gpt-4/gpt-3.5.
_COOKBOOK_TOOL_CONSTANTS = {"o200k_base": (7, 3, 3, -3, 3, 12), "cl100k_base": (10, 3, 3, -3, 3, 12)}


def cookbook(request: Mapping[str, Any]) -> int:
    """The cookbook's count: messages, then tools by its constants."""
    enc = _encoding(request["model"])
    total = 3
    for message in request["messages"]:
        total += 3
        for key, value in message.items():
            total += len(enc.encode(value))  # as published: fails on None and on lists
            if key == "name":
                total += 1
    tools = request.get("tools") or []
    if tools:
        start, props, per_prop, enum_start, per_enum, end = _COOKBOOK_TOOL_CONSTANTS[enc.name]
        for tool in tools:
            function = tool["function"]
            total += start
            description = function["description"].removesuffix(".")
            total += len(enc.encode(f"{function['name']}:{description}"))
            properties = function["parameters"]["properties"]
            if properties:
                total += props
                for name, schema in properties.items():
                    total += per_prop
                    if "enum" in schema:
                        total += enum_start
                        for item in schema["enum"]:
                            total += per_enum + len(enc.encode(item))
                    description = schema["description"].removesuffix(".")
                    total += len(enc.encode(f"{name}:{schema['type']}:{description}"))
        total += end
    return total


def langchain() -> Counter:
    """LangChain's counter (tools are ignored by it, with a warning)."""
    import warnings

    from langchain_core.messages import convert_to_messages
    from langchain_openai import ChatOpenAI

    def count(request: Mapping[str, Any]) -> int:
        model = ChatOpenAI(model=request["model"], api_key="offline")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.get_num_tokens_from_messages(
                convert_to_messages(request["messages"]), tools=request.get("tools"))

    return count


def litellm() -> Counter:
    """LiteLLM's counter, with its model table read from the package (no download)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as package

    def count(request: Mapping[str, Any]) -> int:
        return package.token_counter(
            model=request["model"], messages=request["messages"], tools=request.get("tools"))

    return count


def contenders() -> tuple[dict[str, Counter], list[str]]:
    """The counters by name, and the names of the peers whose packages are not installed
    (``make bench`` installs them)."""
    # tiktoken needs the rank files offline: ctxlab seeds its cache, so the peers find them too
    ctxlab.encoding("o200k_base")
    ctxlab.encoding("cl100k_base")
    found: dict[str, Counter] = {"ctxlab": ctxlab.count_request, "cookbook": cookbook}
    missing = []
    for name, make in (("langchain", langchain), ("litellm", litellm)):
        try:
            found[name] = make()
        except ImportError:
            missing.append(name)
    return found, missing
