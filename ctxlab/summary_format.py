"""What a summary looks like: its message, its headings, the prompt that asks for it, its cap.

Everything here is plain text handling, shared by :mod:`ctxlab.summarising` (which asks a
model) and :mod:`ctxlab.offline` (the offline summariser, which answers by rules), so neither
imports the other.

**The cap.** A rolled-up summary is one line of the budget, like the scratchpad: it has a cap
(``ContextBudget.summary_max``). The compaction prompt states it; a summary that comes back
over it is cut by :func:`bound_summary`, by this rule: whole bullet lines go first, from the
least to the most needed section (OPEN QUESTIONS, DECISIONS, FACTS, USER INSTRUCTIONS, then
FAILURES), oldest line first within a section; a closing line says how many were cut. A
summary still over the cap after that (one huge line) is clipped to fit.

>>> text = "FACTS:\\n" + "\\n".join(f"- fact {i}" for i in range(200)) + "\\nFAILURES:\\n- fetch_pdf failed at lap 7: http_403"
>>> short = bound_summary(text, 120)
>>> summary_tokens(short) <= 120, "fetch_pdf failed at lap 7" in short, "fact 199" in short, "fact 0" in short
(True, True, True, False)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConfigError, ConfigTypeError

__all__ = [
    "SUMMARY_PREFIX",
    "SECTIONS",
    "COMPACTION_INSTRUCTIONS",
    "CUT_ORDER",
    "MIN_SUMMARY_TOKENS",
    "compaction_prompt",
    "summary_cap",
    "bound_summary",
    "summary_tokens",
    "is_summary",
    "summary_message",
    "summary_text",
]

Message = Mapping[str, Any]

SUMMARY_PREFIX = "[Summary of earlier steps]"
"""The first line of every summary message: how a summary is told from other messages."""

SECTIONS = ("FACTS", "DECISIONS", "FAILURES", "USER INSTRUCTIONS", "OPEN QUESTIONS")
"""The headings of a summary, in order."""

COMPACTION_INSTRUCTIONS = """\
The agent steps below are being removed from an agent's context to make room. Your summary is
all the agent will keep of them, so write it for the agent, to carry on its task.

Write terse bullet points, one line each, under exactly these headings:
FACTS: every fact the steps established, each tagged with the tool and the lap it came from,
as [tool, lap N]. Copy error codes, identifiers, hosts, numbers and timestamps exactly.
DECISIONS: every decision the agent made, with its reason.
FAILURES: every tool call that failed: the tool, its arguments, the laps, and how it failed
in the error's own words, so that the agent does not retry it blindly.
USER INSTRUCTIONS: every instruction or constraint the user gave, word for word.
OPEN QUESTIONS: what is still unknown or still to do.
Write "- none" under a heading with nothing to report. Leave out reasoning that led nowhere,
the task itself (the agent still has it) and any commentary."""
"""What the compaction prompt asks for (facts with sources, decisions with reasons, failures
and how they failed, user instructions, open questions), before the steps themselves."""

PRIOR_OPENING = "PREVIOUS SUMMARY"
PRIOR_CLOSING = "END OF PREVIOUS SUMMARY"
STEPS_HEADING = "STEPS TO FOLD IN:"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."



def compaction_prompt(steps_text: str, prior_summary: str | None = None, *, max_tokens: int | None = None) -> str:
    """The request to a summariser: the instructions, the previous summary (if any), the steps.

    With a previous summary the prompt asks for ONE updated summary that keeps every line of
    the old one that is still true: a roll-up, never a second summary stacked on the first.
    With ``max_tokens`` it states the cap, and what to give up first to stay under it
    (:func:`summary_cap` reads it back).

    >>> "under 300 tokens" in compaction_prompt("[lap 1] assistant: ok", max_tokens=300)
    True

    >>> prompt = compaction_prompt("[lap 9] assistant: Checking pgbouncer.", "FACTS:\\n- [search_logs, lap 3] 55P03")
    >>> "every tool call that failed" in prompt, "55P03" in prompt, prompt.endswith("Checking pgbouncer.")
    (True, True, True)
    """
    if not isinstance(steps_text, str):
        raise ConfigTypeError(f"steps_text must be the rendered steps (a str, see render_steps), got {type(steps_text).__name__}")
    parts = [COMPACTION_INSTRUCTIONS]
    if max_tokens is not None:
        parts.append(CAP_LINE.format(max_tokens=max_tokens))
    if prior_summary and prior_summary.strip():
        parts.append(
            f"{PRIOR_OPENING}: fold the new steps into it. Keep every line of it that is still "
            "true, update what the new steps changed, and return ONE summary under the same "
            f"headings. Never drop a failure or a user instruction.\n{prior_summary.strip()}\n{PRIOR_CLOSING}"
        )
    parts.append(f"{STEPS_HEADING}\n{steps_text}")
    return "\n\n".join(parts)


def is_summary(message: Message) -> bool:
    """True for a summary message (a user or system message starting with :data:`SUMMARY_PREFIX`).

    >>> is_summary(summary_message("FACTS:\\n- none")), is_summary({"role": "user", "content": "hi"})
    (True, False)
    """
    content = message.get("content")
    return message.get("role") in ("user", "system") and isinstance(content, str) and content.startswith(SUMMARY_PREFIX)


def summary_message(text: str, *, step: int | None = None) -> dict[str, Any]:
    """The message that carries a summary: ``{"role": "user", "content": PREFIX + text, "pinned": True}``.

    >>> summary_message("FACTS:\\n- none", step=4)
    {'role': 'user', 'content': '[Summary of earlier steps]\\nFACTS:\\n- none', 'pinned': True, 'step': 4}
    """
    message: dict[str, Any] = {"role": "user", "content": f"{SUMMARY_PREFIX}\n{text.strip()}", "pinned": True}
    if step is not None:
        message["step"] = step
    return message


def summary_text(message: Message) -> str:
    """The summary a summary message carries, without the prefix.

    >>> summary_text(summary_message("FACTS:\\n- none"))
    'FACTS:\\n- none'
    """
    if not is_summary(message):
        raise ConfigError(f"not a summary message (its content must start with {SUMMARY_PREFIX!r})")
    return message["content"][len(SUMMARY_PREFIX):].strip()




CAP_LINE = (
    "CAP: keep the whole summary under {max_tokens} tokens. When it would be longer, merge "
    "lines and give up the least needed first: open questions, then decisions, then the oldest "
    "facts. Never drop a failure or a user instruction while anything else can go."
)
_CAP = re.compile(r"^CAP: keep the whole summary under (\d+) tokens", re.MULTILINE)

MIN_SUMMARY_TOKENS = 32
"""The smallest cap a summary can be asked to keep: its prefix, a heading and a line or two."""

CUT_ORDER = ("OPEN QUESTIONS", "DECISIONS", "FACTS", "USER INSTRUCTIONS", "FAILURES")
"""The order :func:`bound_summary` gives up sections' lines in, the least needed first."""


def summary_cap(prompt: str) -> int | None:
    """The cap a compaction prompt states, in tokens (``None`` when it states none).

    >>> summary_cap(compaction_prompt("[lap 2] user: hi", max_tokens=250)), summary_cap("no cap")
    (250, None)
    """
    match = _CAP.search(prompt)
    return int(match[1]) if match else None


def summary_tokens(text: str, count: Callable[[Message], int] | None = None) -> int:
    """Tokens the summary message carrying ``text`` takes in a prompt (``count`` as in fit).

    >>> summary_tokens("FACTS:\\n- none")
    15
    """
    if count is None:
        from .tokens import count_message

        count = count_message
    return count(summary_message(text))


def _lines(text: str) -> list[tuple[str | None, str]]:
    """``(section, line)`` for each line; headings are lines with section ``None``."""
    out: list[tuple[str | None, str]] = []
    current = "FACTS"  # text before any heading is treated as facts
    for raw in text.strip().splitlines():
        line = raw.rstrip()
        heading = line.strip().rstrip(":").upper()
        if line.strip().endswith(":") and heading in SECTIONS:
            current = heading
            out.append((None, line))
        elif line.strip():
            out.append((current, line))
    return out


def bound_summary(text: str, max_tokens: int, count: Callable[[Message], int] | None = None) -> str:
    """``text`` cut to fit ``max_tokens`` (as :func:`summary_tokens` counts), by the module's rule.

    >>> bound_summary("FACTS:\\n- one", 100)
    'FACTS:\\n- one'
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"max_tokens must be a whole number of tokens >= 1, got {max_tokens!r}")
    text = text.strip()
    if summary_tokens(text, count) <= max_tokens:
        return text
    lines = _lines(text)
    rank = {section: order for order, section in enumerate(CUT_ORDER)}
    droppable = sorted(
        (i for i, (section, line) in enumerate(lines) if section is not None and line.strip().lower() != "- none"),
        key=lambda i: (rank.get(lines[i][0], 0), i),
    )

    def without(k: int) -> str:
        gone = set(droppable[:k])
        kept = [line for i, (_, line) in enumerate(lines) if i not in gone]
        return "\n".join(kept + ([f"({k} older summary lines cut to keep under {max_tokens} tokens)"] if k else []))

    low, high = 0, len(droppable)  # the fewest lines to cut: a bisection, since fewer lines fit better
    while low < high:
        middle = (low + high) // 2
        if summary_tokens(without(middle), count) <= max_tokens:
            high = middle
        else:
            low = middle + 1
    short = without(low)
    if summary_tokens(short, count) <= max_tokens:
        return short
    low, high = 0, len(short)  # one line too long for the cap: clip characters
    while low < high:
        middle = (low + high + 1) // 2
        if summary_tokens(short[:middle].rstrip() + " ...", count) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    return (short[:low].rstrip() + " ...") if low else ""
