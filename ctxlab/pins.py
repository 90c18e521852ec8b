"""The pinned list, recorded by a call: what an agent pins the moment it appears.

Constraints ("do not touch the payments module"), decisions and identifiers must survive every
compaction word for word, so they go to the pinned list by rule, not by the summariser's
judgement. A message gets there in one of two ways:

* it is marked ``"pinned": True`` when it is recorded (a course key, never sent to the API);
* it is an assistant message that calls the pin tool, :data:`PIN_TOOL`: offer the tool
  (:func:`pin_tool_schema`) and the call on the record is the pin, with no mark to add.

Either way the message and its turn group (the call's results) are pinned exactly alike
(:func:`ctxlab.trimming.pinned_indices` is the one rule; :func:`ctxlab.fit`, :func:`ctxlab.build_context`
and the trimmers all use it): never dropped, never summarised, copied forward verbatim in the
pinned head above the summary on every lap. An explicit ``"pinned": False`` on a pin call takes
it out of the pinned list (a reversed decision, a pin the model got wrong).

A pin call among parallel calls pins the whole group, its sibling results too, since a turn
group is never split: the tool's description asks the model to call it on its own. A call is
a pin call by its name alone, so pinning never depends on parsing arguments: a malformed call
is kept like any other (it costs its tokens), and :func:`pinned_items` names it.

>>> call = {"id": "p1", "type": "function", "function": {"name": PIN_TOOL,
...         "arguments": '{"text": "Do not touch the payments module.", "kind": "constraint"}'}}
>>> record = [{"role": "user", "content": "Speed up checkout."},
...           {"role": "assistant", "content": None, "tool_calls": [call]},
...           {"role": "tool", "tool_call_id": "p1", "content": "pinned"}]
>>> [(pin.kind, pin.text) for pin in pinned_items(record)]
[('constraint', 'Do not touch the payments module.')]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, MessageError
from .summary_format import is_summary

__all__ = ["PIN_TOOL", "PIN_KINDS", "Pin", "pin_tool_schema", "is_pin_call", "marked_caller", "pinned_items"]

Message = Mapping[str, Any]

PIN_TOOL = "pin"
"""The name of the pin tool: an assistant message that calls it is pinned (with its results).
Functions that decide pins take ``pin_tool=`` to recognise another name (``None``: none)."""

PIN_KINDS = ("constraint", "decision", "identifier")
"""What a pinned item may be: the ``kind`` argument of the pin tool."""


@dataclass(frozen=True)
class Pin:
    """One item of the pinned list: its text, its kind, and where the record holds it.

    ``index`` is the message's index in the record; ``call_id`` the pin call's id (``None`` for
    a message marked ``"pinned": True``, whose ``kind`` is ``None`` too).

    >>> Pin("Ticket ID is T-1042.", "identifier", index=3, call_id="p2").line()
    '[identifier] Ticket ID is T-1042.'
    """

    text: str
    kind: str | None
    index: int
    call_id: str | None = None

    def line(self) -> str:
        """The item as one bullet line of the pinned list."""
        return f"[{self.kind}] {self.text}" if self.kind else self.text


def pin_tool_schema(name: str = PIN_TOOL) -> dict[str, Any]:
    """The pin tool's JSON schema, in the Chat Completions ``tools`` format, to offer an agent.

    >>> schema = pin_tool_schema()
    >>> schema["function"]["name"], schema["function"]["parameters"]["required"]
    ('pin', ['text'])

    Raises ``ValueError`` for a name that is not a non-empty string.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"the pin tool's name must be a non-empty string (default {PIN_TOOL!r}), got {name!r}")
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": (
                "Pin a constraint, decision or identifier so that it stays in your context, word "
                "for word, for the rest of the task. Call it the moment one appears, one short "
                "line per call, on its own rather than alongside other tools."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "the line to keep, e.g. 'Do not touch the payments module.'"},
                    "kind": {"type": "string", "enum": list(PIN_KINDS), "description": "what the line is"},
                },
                "required": ["text"],
                "additionalProperties": False,
            },
        },
    }


def _calls(message: Message) -> list[Any]:
    calls = message.get("tool_calls")
    return list(calls) if message.get("role") == "assistant" and isinstance(calls, (list, tuple)) else []


def _name(call: Any) -> Any:
    function = call.get("function") if isinstance(call, Mapping) else None
    return function.get("name") if isinstance(function, Mapping) else None


def is_pin_call(message: Message, pin_tool: str | None = PIN_TOOL) -> bool:
    """True when ``message`` is an assistant message with a call of the tool ``pin_tool``.

    >>> call = {"id": "p1", "type": "function", "function": {"name": "pin", "arguments": "{}"}}
    >>> is_pin_call({"role": "assistant", "content": None, "tool_calls": [call]})
    True
    >>> is_pin_call({"role": "assistant", "content": None, "tool_calls": [call]}, pin_tool=None)
    False
    """
    if pin_tool is None or message.get("role") != "assistant":
        return False
    calls = message.get("tool_calls")
    if not isinstance(calls, (list, tuple)):
        return False
    for call in calls:  # a plain loop: the trimmers ask this of every assistant message
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and function.get("name") == pin_tool:
            return True
    return False


def marked_caller(message: Message, pin_tool: str | None = PIN_TOOL) -> Message:
    """``message`` as the assembly pipeline compresses it: a call of the pin tool that is not
    marked either way is marked ``"pinned": True``, so its results are kept verbatim, as a
    marked message's are (:func:`ctxlab.compression.ages`); anything else as it is.

    >>> call = {"id": "p1", "type": "function", "function": {"name": "pin", "arguments": "{}"}}
    >>> marked_caller({"role": "assistant", "content": None, "tool_calls": [call]})["pinned"]
    True
    >>> "pinned" in marked_caller({"role": "assistant", "content": "ok"})
    False
    """
    if message.get("pinned") is None and is_pin_call(message, pin_tool):
        return {**message, "pinned": True}
    return message


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p)
    return ""


def _item(index: int, call: Mapping[str, Any]) -> Pin:
    call_id = call.get("id")
    raw = (call.get("function") or {}).get("arguments")
    fix = ("; the arguments must be a JSON object such as {\"text\": \"...\", \"kind\": \"constraint\"}. "
           "Answer the call with an error so the model pins again, and mark the message "
           "\"pinned\": False to leave it out of the pinned list")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError as err:
        raise MessageError(f"message {index}: pin call {call_id!r} has arguments that are not JSON ({err}){fix}",
                           index=index) from None
    except RecursionError:
        raise MessageError(f"message {index}: pin call {call_id!r} has arguments nested too deeply to read{fix}",
                           index=index) from None
    if not isinstance(arguments, Mapping) or not isinstance(arguments.get("text"), str) or not arguments["text"].strip():
        raise MessageError(f"message {index}: pin call {call_id!r} has no 'text' to pin (arguments {raw!r}){fix}",
                           index=index)
    kind = arguments.get("kind")
    if kind is not None and kind not in PIN_KINDS:
        raise MessageError(f"message {index}: pin call {call_id!r} has kind {kind!r}, not one of {PIN_KINDS}{fix}",
                           index=index)
    return Pin(arguments["text"].strip(), kind, index, call_id)


def pinned_items(messages: Sequence[Message], *, pin_tool: str | None = PIN_TOOL) -> list[Pin]:
    """The pinned list of a record, in order: every pin call's item, and every message marked
    ``"pinned": True`` (its text, no kind). A pin call marked ``"pinned": False`` is left out.

    >>> pinned_items([{"role": "user", "content": "go"},
    ...               {"role": "user", "content": "Reply in French.", "pinned": True}])
    [Pin(text='Reply in French.', kind=None, index=1, call_id=None)]

    Raises :class:`ctxlab.MessageError`, naming the message and the call, for a pin call whose
    arguments are not a JSON object with a ``text`` (and a ``kind`` from :data:`PIN_KINDS`).
    """
    items: list[Pin] = []
    for index, message in enumerate(messages):
        if message.get("pinned") is False:
            continue
        calls = [call for call in _calls(message) if pin_tool is not None and _name(call) == pin_tool]
        if calls:
            items += [_item(index, call) for call in calls]
        elif message.get("pinned") is True and not is_summary(message):  # a prompt's summary is no item
            items.append(Pin(_text(message.get("content")).strip(), None, index))
    return items
