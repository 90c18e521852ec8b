"""LangChain's ``trim_messages`` as a contender, with a tiktoken counter that counts as ctxlab does.

Installed for the benchmark only (``bench/requirements.txt``), never a dependency of the course.
The settings come as close to ``ctxlab.fit`` as ``trim_messages`` allows:

* ``strategy="last"``: keep the newest messages that fit;
* ``include_system=True``: keep the system message at index 0 (LangChain pins nothing else:
  the first user message, the task, is trimmed like any other);
* ``allow_partial=False``: never cut a message's text;
* ``start_on=("human", "ai")``: the kept messages after the system one start on a user or an
  assistant message, never on a tool result, so the cut falls between turn groups, as ours
  does. (The documentation suggests ``start_on="human"``, which would cut back further, to the
  last user message; left out, ``start_on=None`` can orphan tool results.)

The token counter applies the ctxlab rule (3 per message, the role, the content, the tool
call id, and 3 plus name and arguments per tool call) to LangChain's messages with
``encode_ordinary`` and no memory, so both libraries compare the same numbers with the same
allowance. Converting our dicts to LangChain messages happens before any timing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import ctxlab
import ctxlab.course
from ctxlab.calls import PARALLEL_CALL, parallel_arguments
from ctxlab.tokens import RESULT_AUTHOR

SETTINGS = {"strategy": "last", "include_system": True, "allow_partial": False, "start_on": ("human", "ai")}
ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def available() -> bool:
    """True when ``langchain-core`` is installed (``make bench`` installs it)."""
    try:
        import langchain_core.messages  # noqa: F401
    except ImportError:
        return False
    return True


def version() -> str:
    """The installed ``langchain-core`` version."""
    from importlib.metadata import version as installed

    return installed("langchain-core")


def to_langchain(messages: Sequence[dict[str, Any]]) -> list[Any]:
    """LangChain messages for our dicts: course keys stripped, tool calls as ``tool_calls``
    with parsed ``args``, tool results as ``ToolMessage`` with their ``tool_call_id``."""
    from langchain_core.messages import convert_to_messages

    return convert_to_messages(ctxlab.course.strip_course_keys(messages))


class TiktokenCounter:
    """A ``token_counter`` for ``trim_messages``: the sum of each message's tokens.

    ``encoder_calls`` counts the strings it encoded.
    """

    def __init__(self, encoding: Any = None) -> None:
        self._encode = (encoding or ctxlab.encoding()).encode_ordinary
        self.encoder_calls = 0

    def __call__(self, messages: list[Any]) -> int:
        encode = self._encode
        total = calls = 0
        for message in messages:
            strings = [ROLES[message.type], message.content]
            if message.type == "ai" and message.tool_calls:
                # ctxlab's rule: several calls read as one parallel call, each result as
                # written by functions.NAME rather than "tool" (counted with the call).
                sent = [{"function": {"name": call["name"], "arguments": json.dumps(call["args"])}}
                        for call in message.tool_calls]
                parallel = parallel_arguments(sent)
                for call in sent:
                    if parallel is None:
                        strings += [call["function"]["name"], call["function"]["arguments"]]
                        total += ctxlab.tokens.TOKENS_PER_TOOL_CALL
                    strings.append(RESULT_AUTHOR + call["function"]["name"])
                if parallel is not None:
                    strings += [PARALLEL_CALL, parallel]
                    total += ctxlab.tokens.TOKENS_PER_TOOL_CALL
                total -= len(sent) * len(encode("tool"))
            if message.name and message.type != "tool":
                strings.append(message.name)
                total += ctxlab.tokens.TOKENS_PER_NAME
            total += ctxlab.tokens.TOKENS_PER_MESSAGE + sum(len(encode(text)) for text in strings)
            calls += len(strings)
        self.encoder_calls += calls
        return total


def trim(messages: list[Any], allowance: int, **settings: Any) -> tuple[list[Any], int]:
    """``trim_messages(messages, max_tokens=allowance, ...)``; returns the kept messages and
    the encoder calls. ``settings`` override :data:`SETTINGS`."""
    from langchain_core.messages import trim_messages

    counter = TiktokenCounter()
    kept = trim_messages(messages, max_tokens=allowance, token_counter=counter, **{**SETTINGS, **settings})
    return kept, counter.encoder_calls


def kept_indices(messages: list[Any], kept: list[Any]) -> list[int]:
    """Positions in ``messages`` of the messages ``trim`` kept (it returns the same objects)."""
    where = {id(message): index for index, message in enumerate(messages)}
    return [where[id(message)] for message in kept]
