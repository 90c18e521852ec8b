"""Checking and cleaning OpenAI Chat Completions message lists.

A message list is valid when a provider would accept it: every message has a known role and
content of the right type, every tool result answers a call made by the assistant message just
before its group, and every call is answered. The course adds two keys of its own, ``step``
(the lap) and ``pinned``; :func:`strip_course_keys` removes them before a request is sent.

>>> validate_messages([
...     {"role": "user", "content": "Is the export job healthy?"},
...     {"role": "assistant", "content": None, "tool_calls": [
...         {"id": "call_1", "type": "function",
...          "function": {"name": "status", "arguments": "{}"}}]},
...     {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
... ])
>>> validate_messages([{"role": "tool", "tool_call_id": "call_9", "content": "ok"}])
Traceback (most recent call last):
...
ctxlab.errors.MessageError: message 0: tool result for call 'call_9' does not follow an assistant message that made that call; keep each tool result right after the assistant message whose tool_calls include its id
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .errors import MessageError
from .tokens import COURSE_KEYS

__all__ = ["ROLES", "validate_messages", "message_problems", "strip_course_keys"]

ROLES = ("system", "developer", "user", "assistant", "tool")
"""The roles the Chat Completions API accepts today."""

_STRING_CONTENT_ROLES = ("system", "developer", "user", "tool")


def _content_problem(content: Any, role: str) -> str | None:
    if content is None:
        if role == "assistant":
            return None
        return f"a {role} message needs 'content' (a string); got None"
    if isinstance(content, str):
        return None
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, Mapping) or "type" not in part:
                return "each content part must be a dict with a 'type', such as {'type': 'text', 'text': '...'}"
            if part["type"] == "text" and not isinstance(part.get("text"), str):
                return "a text content part needs a 'text' string"
        return None
    return (
        f"'content' must be a string (or None for an assistant message that only calls tools), "
        f"got {type(content).__name__}; convert it with json.dumps(...) or str(...)"
    )


def _call_problem(call: Any) -> str | None:
    if not isinstance(call, Mapping):
        return f"each tool call must be a dict, got {type(call).__name__}"
    if not isinstance(call.get("id"), str) or not call.get("id"):
        return "each tool call needs a non-empty string 'id'"
    if call.get("type", "function") != "function":
        return f"tool call {call['id']!r} has type {call.get('type')!r}; only 'function' is supported"
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        return f"tool call {call['id']!r} needs 'function': {{'name': str, 'arguments': str}}"
    if not isinstance(function.get("arguments"), str):
        return (
            f"tool call {call['id']!r}: 'arguments' must be a JSON string, got "
            f"{type(function.get('arguments')).__name__}; wrap it with json.dumps(...)"
        )
    return None


def message_problems(messages: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int | None, str]]:
    """Yield ``(index, problem)`` for everything wrong with ``messages``, in order.

    ``index`` is ``None`` for a problem with the list as a whole.

    >>> list(message_problems([{"role": "user", "content": 42}]))
    [(0, "'content' must be a string (or None for an assistant message that only calls tools), got int; convert it with json.dumps(...) or str(...)")]
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        yield None, (
            f"expected a list of message dicts, got {type(messages).__name__}; "
            "wrap a single message in a list"
        )
        return

    open_calls: dict[str, int] = {}  # call id -> index of the assistant message that made it
    answered: set[str] = set()
    open_from: int | None = None  # index of the assistant message whose calls are open
    seen_ids: dict[str, int] = {}

    def close_group() -> Iterator[tuple[int | None, str]]:
        for call_id, where in open_calls.items():
            if call_id not in answered:
                yield where, (
                    f"tool call {call_id!r} is never answered; add a tool message with "
                    f"tool_call_id={call_id!r} right after this assistant message, or remove the call"
                )

    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            yield index, f"expected a dict, got {type(message).__name__}"
            continue
        role = message.get("role")
        if role is None:
            yield index, "missing 'role'; use one of " + ", ".join(ROLES)
            continue
        if role not in ROLES:
            hint = " (the legacy 'function' role is now 'tool')" if role == "function" else ""
            yield index, f"unknown role {role!r}{hint}; use one of " + ", ".join(ROLES)
            continue

        if role != "tool" and open_from is not None:
            yield from close_group()
            open_calls, answered, open_from = {}, set(), None

        if "content" not in message and role in _STRING_CONTENT_ROLES:
            yield index, f"missing 'content'; a {role} message needs a string"
        else:
            problem = _content_problem(message.get("content"), role)
            if problem:
                yield index, problem

        for key in COURSE_KEYS & message.keys():
            value = message[key]
            if key == "step" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                yield index, f"'step' must be a lap number (an int >= 0), got {value!r}"
            if key == "pinned" and not isinstance(value, bool):
                yield index, f"'pinned' must be True or False, got {value!r}"
        if "name" in message and not isinstance(message["name"], str):
            yield index, f"'name' must be a string, got {type(message['name']).__name__}"

        if role == "assistant" and message.get("tool_calls") is not None:
            calls = message["tool_calls"]
            if not isinstance(calls, list):
                yield index, f"'tool_calls' must be a list, got {type(calls).__name__}"
                continue
            for call in calls:
                problem = _call_problem(call)
                if problem:
                    yield index, problem
                    continue
                call_id = call["id"]
                if call_id in seen_ids:
                    yield index, (
                        f"tool call id {call_id!r} was already used by message "
                        f"{seen_ids[call_id]}; every call needs its own id"
                    )
                    continue
                seen_ids[call_id] = index
                open_calls[call_id] = index
            if open_calls:
                open_from = index
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                yield index, "a tool message needs 'tool_call_id', the id of the call it answers"
            elif call_id not in open_calls:
                if call_id in seen_ids:
                    where = (
                        f"call {call_id!r} was made by message {seen_ids[call_id]}, "
                        "but another message comes between them"
                    )
                    yield index, (
                        f"tool result for {where}; keep each tool result right after the "
                        "assistant message whose tool_calls include its id"
                    )
                else:
                    yield index, (
                        f"tool result for call {call_id!r} does not follow an assistant message "
                        "that made that call; keep each tool result right after the assistant "
                        "message whose tool_calls include its id"
                    )
            elif call_id in answered:
                yield index, f"call {call_id!r} is answered twice; keep one tool message per call"
            else:
                answered.add(call_id)

    if open_from is not None:
        yield from close_group()


def validate_messages(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`ctxlab.MessageError` naming the first problem, or return ``None``.

    Accepts every real Chat Completions transcript: parallel tool calls, assistant messages
    with both text and tool calls, ``content: None`` on an assistant that only calls tools,
    content given as a list of text parts, and the course keys ``step`` and ``pinned``.

    >>> validate_messages([{"role": "user", "content": "hi"}, {"role": "assistant"}])
    >>> validate_messages([{"role": "user", "content": ["hi"]}])
    Traceback (most recent call last):
    ...
    ctxlab.errors.MessageError: message 0: each content part must be a dict with a 'type', such as {'type': 'text', 'text': '...'}
    """
    for index, problem in message_problems(messages):
        prefix = "message list" if index is None else f"message {index}"
        raise MessageError(f"{prefix}: {problem}", index=index)


def strip_course_keys(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``messages`` without the course keys, ready to send to the API.

    >>> strip_course_keys([{"role": "user", "content": "hi", "step": 0, "pinned": True}])
    [{'role': 'user', 'content': 'hi'}]
    """
    return [{k: v for k, v in m.items() if k not in COURSE_KEYS} for m in messages]
