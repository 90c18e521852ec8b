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

from collections import ChainMap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .calls import call_problem
from .errors import MessageError, UsageError
from .parts import part_problem
from .tokens import COURSE_KEYS, _plain

__all__ = ["ROLES", "MessageChecker", "as_message", "as_messages", "validate_messages", "message_problems", "strip_course_keys"]

ROLES = ("system", "developer", "user", "assistant", "tool")
"""The roles the Chat Completions API accepts today."""
RESPONSES_ITEMS = ("function_call", "function_call_output", "reasoning", "message", "input_text",
                   "output_text", "custom_tool_call", "custom_tool_call_output")
"""Item types of the Responses API, which a Chat Completions history does not hold."""

_STRING_CONTENT_ROLES = ("system", "developer", "user", "tool")


def _content_problem(content: Any, role: str) -> str | None:
    if content is None:
        if role == "assistant":
            return None
        return f"a {role} message needs 'content' (a string); got None"
    if isinstance(content, str):
        return None
    if isinstance(content, list):
        if role == "assistant" and not content:
            return None
        for number, part in enumerate(content):
            problem = part_problem(part, role, where=f"content part {number}")
            if problem:
                return problem
        return None
    return (
        f"'content' must be a string (or None for an assistant message that only calls tools), "
        f"got {type(content).__name__}; convert it with json.dumps(...) or str(...)"
    )


STRUCTURED_FIELDS = ("content", "tool_calls", "function_call", "annotations", "audio")
"""The fields whose value may be something other than a string: each has its own rule."""


def _field_problem(key: Any, value: Any) -> str | None:
    """What is wrong with a field outside the structured ones: any string (or ``None``) is fine."""
    if not isinstance(key, str):
        return f"field names must be strings, got {key!r}"
    if key in STRUCTURED_FIELDS or key in COURSE_KEYS or value is None or isinstance(value, str):
        return None
    return (
        f"field {key!r} holds a {type(value).__name__}; apart from content, tool_calls, "
        "function_call, annotations and audio, a message's fields are strings: remove it, or "
        "store it as text with json.dumps(...)"
    )


def _extras_problem(message: Mapping[str, Any]) -> str | None:
    annotations = message.get("annotations")
    if annotations is not None and not isinstance(annotations, list):
        return f"'annotations' must be a list (the reply's citations), got {type(annotations).__name__}"
    audio = message.get("audio")
    if audio is not None and not (isinstance(audio, Mapping) and isinstance(audio.get("id"), str)):
        return "'audio' must be {'id': str}, the id of an earlier audio reply, or None"
    function_call = message.get("function_call")
    if function_call is not None and not (
        isinstance(function_call, Mapping) and isinstance(function_call.get("name"), str)
        and isinstance(function_call.get("arguments", ""), str)
    ):
        return "'function_call' must be {'name': str, 'arguments': JSON str}, or None"
    return None


class MessageChecker:
    """Checks messages one at a time, remembering what pairing needs from the ones before.

    The pairing rule is the API's, and it is local to each turn group: every tool message
    answers a call of the assistant message just before its group of tool messages, and every
    call of that message is answered exactly once before any other message. Ids must be unique
    within one assistant message; a later assistant message may use an id again (real runs
    do, and the API accepts them).

    :func:`message_problems` runs one over a whole list; an agent whose history only grows can
    keep one and check each new message once (:class:`ctxlab.history.GrowingHistory` does).
    ``check`` returns the problems of one message; ``finish`` those of calls left unanswered.
    ``fork`` gives a trial copy whose ``commit`` makes its messages count, so a batch can be
    checked without changing anything when it turns out bad.

    >>> checker = MessageChecker()
    >>> checker.check(0, {"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    []
    >>> checker.pending
    ['a']
    >>> checker.finish()
    [(0, "tool call 'a' is never answered; add a tool message with tool_call_id='a' right after this assistant message, or remove the call")]
    """

    def __init__(self) -> None:
        self.open_calls: dict[str, int] = {}  # call id -> index of the assistant message that made it
        self.answered: set[str] = set()
        self.seen_ids: dict[str, int] | ChainMap[str, int] = {}  # call id -> the latest message that made it
        self._parent: MessageChecker | None = None

    @property
    def pending(self) -> list[str]:
        """Ids of the calls of the latest assistant message that have no result yet."""
        return [call_id for call_id in self.open_calls if call_id not in self.answered]

    def fork(self) -> MessageChecker:
        """A trial copy: it sees everything checked so far; what it checks stays its own."""
        trial = MessageChecker()
        trial.open_calls, trial.answered = dict(self.open_calls), set(self.answered)
        trial.seen_ids = ChainMap({}, self.seen_ids)
        trial._parent = self
        return trial

    def commit(self) -> None:
        """Make what this trial copy checked part of the checker it was forked from."""
        parent = self._parent
        if parent is None:
            raise UsageError("commit() is for a checker made by fork()")
        parent.open_calls, parent.answered = self.open_calls, self.answered
        parent.seen_ids.update(self.seen_ids.maps[0])

    def _unanswered(self) -> list[tuple[int | None, str]]:
        return [
            (where, (
                f"tool call {call_id!r} is never answered; add a tool message with "
                f"tool_call_id={call_id!r} right after this assistant message, or remove the call"
            ))
            for call_id, where in self.open_calls.items()
            if call_id not in self.answered
        ]

    def finish(self) -> list[tuple[int | None, str]]:
        """Problems left at the end of the list: calls that were never answered."""
        return self._unanswered()

    def check(self, index: int, message: Any) -> list[tuple[int | None, str]]:
        """The problems of ``message`` at position ``index``, given every message before it."""
        problems: list[tuple[int | None, str]] = []
        message = _plain(message)  # an SDK object is read as its dump
        if not isinstance(message, Mapping):
            return [(index, _not_a_dict(message))]
        role = message.get("role")
        if role is None:
            if message.get("type") in RESPONSES_ITEMS:
                return [(index, f"a Responses API item (type {message['type']!r}), not a Chat Completions message: "
                                "ctxlab reads Chat Completions messages; write a call as an assistant message's "
                                "tool_calls and its output as a 'tool' message")]
            return [(index, "missing 'role'; use one of " + ", ".join(ROLES))]
        if role not in ROLES:
            hint = " (the legacy 'function' role is now 'tool')" if role == "function" else ""
            return [(index, f"unknown role {role!r}{hint}; use one of " + ", ".join(ROLES))]

        if role != "tool" and self.open_calls:
            problems += self._unanswered()
            self.open_calls, self.answered = {}, set()

        if "content" not in message and role in _STRING_CONTENT_ROLES:
            problems.append((index, f"missing 'content'; a {role} message needs a string"))
        else:
            problem = _content_problem(message.get("content"), role)
            if problem:
                problems.append((index, problem))

        for key, value in message.items():
            problem = _field_problem(key, value)
            if problem:
                problems.append((index, problem))
        problem = _extras_problem(message)
        if problem:
            problems.append((index, problem))
        for key in COURSE_KEYS & message.keys():
            value = message[key]
            if key == "step" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                problems.append((index, f"'step' must be a lap number (an int >= 0), got {value!r}"))
            if key == "pinned" and not isinstance(value, bool):
                problems.append((index, f"'pinned' must be True or False, got {value!r}"))

        if role == "assistant" and message.get("tool_calls") is not None:
            problems += self._check_calls(index, message["tool_calls"])
        elif role == "tool":
            problems += self._check_result(index, message.get("tool_call_id"))
        return problems

    def _check_calls(self, index: int, calls: Any) -> list[tuple[int | None, str]]:
        if not isinstance(calls, list):
            return [(index, f"'tool_calls' must be a list, got {type(calls).__name__}")]
        problems: list[tuple[int | None, str]] = []
        for call in calls:
            problem = call_problem(call)
            if problem:
                problems.append((index, problem))
                continue
            call_id = call["id"]
            if call_id in self.open_calls:
                problems.append((index, (
                    f"tool call id {call_id!r} appears twice in this message's tool_calls; "
                    "each call of one assistant message needs its own id"
                )))
                continue
            self.seen_ids[call_id] = index
            self.open_calls[call_id] = index
        return problems

    def _check_result(self, index: int, call_id: Any) -> list[tuple[int | None, str]]:
        if not isinstance(call_id, str) or not call_id:
            return [(index, "a tool message needs 'tool_call_id', the id of the call it answers")]
        if call_id not in self.open_calls:
            keep = (
                "keep each tool result right after the assistant message whose tool_calls "
                "include its id"
            )
            if call_id in self.seen_ids:
                return [(index, (
                    f"tool result for call {call_id!r} was made by message "
                    f"{self.seen_ids[call_id]}, but another message comes between them; {keep}"
                ))]
            return [(index, (
                f"tool result for call {call_id!r} does not follow an assistant message that "
                f"made that call; {keep}"
            ))]
        if call_id in self.answered:
            return [(index, f"call {call_id!r} is answered twice; keep one tool message per call")]
        self.answered.add(call_id)
        return []


def _not_a_dict(message: Any) -> str:
    """The problem of a message that is not a dict, with the fix for SDK objects."""
    name = type(message).__name__
    if hasattr(message, "model_dump"):
        return (
            f"expected a dict, got the SDK object {name}; convert it with "
            "ctxlab.messages.as_message(message) (or message.model_dump(exclude_none=True))"
        )
    return f"expected a dict, got {name}"


def as_message(message: Any) -> dict[str, Any]:
    """A message as a plain dict: an SDK object (pydantic, e.g. ``ChatCompletionMessage``) is
    converted with ``model_dump(exclude_none=True)``; a dict comes back as it is.

    ``None`` fields and an empty ``annotations`` list are left out: they carry nothing and
    the API does not need them back.

    >>> class Reply:  # what the openai SDK's ChatCompletionMessage offers
    ...     def model_dump(self, exclude_none=False):
    ...         return {"role": "assistant", "content": "Done.", "refusal": None, "annotations": []}
    >>> as_message(Reply())
    {'role': 'assistant', 'content': 'Done.'}
    """
    if isinstance(message, dict):
        return message
    if isinstance(message, Mapping):
        return dict(message)
    if getattr(message, "model_dump", None) is None:
        raise MessageError(f"the message: {_not_a_dict(message)}")
    return _plain(message)


def as_messages(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """:func:`as_message` of each message: a list of plain dicts (dicts are not copied).

    >>> as_messages([{"role": "user", "content": "hi"}])
    [{'role': 'user', 'content': 'hi'}]
    """
    out = []
    for index, message in enumerate(messages):
        try:
            out.append(as_message(message))
        except MessageError:
            raise MessageError(f"message {index}: {_not_a_dict(message)}", index=index) from None
    return out


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
    checker = MessageChecker()
    for index, message in enumerate(messages):
        yield from checker.check(index, message)
    yield from checker.finish()


def validate_messages(messages: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`ctxlab.MessageError` naming the first problem, or return ``None``.

    Accepts what the Chat Completions API accepts: parallel tool calls, assistant messages
    with both text and tool calls, ``content: None`` on an assistant that only calls tools,
    content given as a list of parts (text, refusal, image_url, input_audio: see
    :mod:`ctxlab.parts`), the keys the SDK's ``model_dump()`` adds (``refusal``, ``audio``,
    ``annotations``, ``function_call``, any of them ``None``), a call id used again by a later
    assistant message, and the course keys ``step`` and ``pinned``. Whatever it accepts,
    :func:`ctxlab.count_messages` can count. An SDK object (``ChatCompletionMessage``) is
    read as its ``model_dump(exclude_none=True)``, as :func:`ctxlab.messages.as_message` gives it.

    >>> validate_messages([{"role": "user", "content": "hi"}, {"role": "assistant"}])
    >>> validate_messages([{"role": "user", "content": ["hi"]}])
    Traceback (most recent call last):
    ...
    ctxlab.errors.MessageError: message 0: content part 0 must be a dict with a 'type', such as {'type': 'text', 'text': '...'}
    """
    for index, problem in message_problems(messages):
        prefix = "message list" if index is None else f"message {index}"
        raise MessageError(f"{prefix}: {problem}", index=index)


def strip_course_keys(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``messages`` without the course keys, ready to send to the API, and without
    the keys the SDK's ``model_dump()`` sets to ``None`` (``tool_calls``, ``audio``,
    ``function_call``, ``refusal``...): they carry nothing, and a prompt should not send them
    back. ``content`` stays, ``None`` or not.

    >>> strip_course_keys([{"role": "user", "content": "hi", "step": 0, "pinned": True}])
    [{'role': 'user', 'content': 'hi'}]
    >>> strip_course_keys([{"role": "assistant", "content": "Done.", "tool_calls": None, "audio": None}])
    [{'role': 'assistant', 'content': 'Done.'}]
    """
    return [{k: v for k, v in m.items() if k not in COURSE_KEYS and (v is not None or k == "content")}
            for m in messages]
