"""What every transcript is made with: messages and laps, prose, time stamps and ids."""

from __future__ import annotations

import json
import random
import re
import textwrap
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

# ---------------------------------------------------------------------------------------------
# Shared helpers: message construction
# ---------------------------------------------------------------------------------------------

_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@dataclass
class Call:
    """One tool call the agent makes in a lap, and the result its tool returned."""

    name: str
    arguments: dict[str, Any]
    result: Any  # a str is sent as it is; anything else is JSON-encoded (see Transcript.indent)


@dataclass
class Transcript:
    """Builds one transcript message by message, following the course's ``step`` rules.

    ``step`` is the lap number: 0 for the system prompt and the first user message; lap k is
    one assistant message plus the tool results answering it; a user message that arrives
    before lap k's assistant message belongs to lap k.
    """

    name: str
    seed: int
    system_prompt: str
    tools: list[dict[str, Any]]
    indent: int | None = None  # how structured tool results are JSON-encoded
    messages: list[dict[str, Any]] = field(default_factory=list)
    lap: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._id_rng = random.Random(self.seed * 7919 + 17)  # call ids: a stream of their own
        self._used_ids: set[str] = set()
        self.messages.append({"role": "system", "content": self.system_prompt, "step": 0})

    # -- messages ---------------------------------------------------------------------------
    def user(self, text: str) -> None:
        """A user message: step 0 before the first lap, otherwise the lap it precedes."""
        step = 0 if self.lap == 0 else self.lap + 1
        self.messages.append({"role": "user", "content": text, "step": step})

    def turn(self, text: str | None, *calls: Call) -> None:
        """One lap: an assistant message (text, tool calls or both) and the tool results."""
        known = {tool["function"]["name"] for tool in self.tools}
        self.lap += 1
        message: dict[str, Any] = {"role": "assistant", "content": text}
        ids = []
        if calls:
            message["tool_calls"] = []
            for call in calls:
                if call.name not in known:
                    raise ValueError(f"{self.name}: lap {self.lap} calls unknown tool {call.name}")
                call_id = self._new_id()
                ids.append(call_id)
                message["tool_calls"].append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(call.arguments, ensure_ascii=False),
                        },
                    }
                )
        message["step"] = self.lap
        self.messages.append(message)
        for call_id, call in zip(ids, calls, strict=True):
            content = call.result
            if not isinstance(content, str):
                content = json.dumps(content, ensure_ascii=False, indent=self.indent)
            self.messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": content, "step": self.lap}
            )

    def answer(self, text: str) -> None:
        """The final lap: a text answer with no tool calls."""
        self.turn(text)

    def _new_id(self) -> str:
        while True:
            call_id = "call_" + "".join(self._id_rng.choice(_ID_ALPHABET) for _ in range(24))
            if call_id not in self._used_ids:
                self._used_ids.add(call_id)
                return call_id


def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    """An OpenAI tool schema."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_LINE_STARTS_ITEM = re.compile(r"^\s*(- |\* |\d+\. |\| |#)")


def prose(text: str) -> str:
    """Hand-written text, wrapped in the source for readability, unwrapped for the transcript.

    Paragraphs (blank-line separated) become single lines; list items, table rows and
    headings start new lines and absorb their indented continuation lines; anything between
    ``` fences is kept exactly as written.
    """
    out: list[str] = []
    fenced = False
    joinable = False  # whether the next plain line continues the previous output line
    for line in textwrap.dedent(text).strip().split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
            out.append(line.strip())
            joinable = False
        elif fenced:
            out.append(line.rstrip())
        elif not line.strip():
            out.append("")
            joinable = False
        elif _LINE_STARTS_ITEM.match(line) or not joinable:
            out.append(line.strip() if not line.lstrip().startswith("|") else line.rstrip())
            joinable = not line.lstrip().startswith(("|", "#"))
        else:
            out[-1] += " " + line.strip()
    return "\n".join(out)


def block(text: str) -> str:
    """Verbatim text (source code, fixed-width output): dedented, exact line breaks."""
    return textwrap.dedent(text).strip("\n") + "\n"


def indented(text: str) -> str:
    """Verbatim code from inside a function body: dedented, then indented one level."""
    return textwrap.indent(block(text), "    ")


# ---------------------------------------------------------------------------------------------
# Shared helpers: realistic bulk
# ---------------------------------------------------------------------------------------------

UTC = timezone.utc


def at(base: datetime, seconds: float) -> datetime:
    return base + timedelta(seconds=seconds)


def iso_ms(moment: datetime) -> str:
    """2024-06-11T02:14:09.882Z"""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def py_log_time(moment: datetime) -> str:
    """Python logging's asctime: 2024-06-11 02:14:09,882"""
    return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{moment.microsecond // 1000:03d}"


def hex_id(rng: random.Random, length: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def uuid4(rng: random.Random) -> str:
    h = hex_id(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def thousands(n: int) -> str:
    return f"{n:,}"


class Timeline:
    """Log lines collected out of order and rendered in time order (stable for equal times)."""

    def __init__(self) -> None:
        self._events: list[tuple[datetime, int, str]] = []

    def add(self, moment: datetime, line: str) -> None:
        self._events.append((moment, len(self._events), line))

    def lines(self) -> list[str]:
        return [line for _, _, line in sorted(self._events)]

    def __len__(self) -> int:
        return len(self._events)
