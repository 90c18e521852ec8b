"""The offline summariser's rules: the summary a careful model would write, made by code.

:class:`ctxlab.OfflineSummariser` answers a compaction prompt (:func:`ctxlab.summarising.compaction_prompt`)
with :func:`offline_summary`: facts from the tool results, the assistant's decisions and
questions, every failure with its laps, the user's words verbatim, the previous summary folded
in, and, when the prompt states a cap, the result cut to it (:func:`ctxlab.summary_format.bound_summary`).
It reads no model and no network, and the same prompt always gives the same summary.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .summary_format import (
    PRIOR_CLOSING,
    PRIOR_OPENING,
    SECTIONS,
    STEPS_HEADING,
    SUMMARY_PREFIX,
    _clip,
    bound_summary,
    compaction_prompt,  # noqa: F401 (the doctests use it)
    summary_cap,
)

__all__ = ["offline_summary"]

_ENTRY = re.compile(r"^\[lap (?P<lap>[^\]]*)\] (?P<rest>.*)$")
_NOTABLE = re.compile(r"\b(ERROR|FATAL|CRITICAL|PANIC|FAILED|Traceback)\b")


def _bullets_by_section(text: str) -> dict[str, list[str]]:
    """Lines of a summary under each heading; stray lines go to FACTS."""
    out: dict[str, list[str]] = {section: [] for section in SECTIONS}
    current = "FACTS"
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line == SUMMARY_PREFIX:
            continue
        heading = line.rstrip(":").upper()
        if line.endswith(":") and heading in out:
            current = heading
            continue
        bullet = line if line.startswith("- ") else f"- {line}"
        if bullet.lower() != "- none":
            out[current].append(bullet)
    return out


def _parse_steps(text: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for line in text.splitlines():
        match = _ENTRY.match(line)
        if match:
            entries.append({"lap": match["lap"], "head": match["rest"], "body": []})
        elif entries:
            entries[-1]["body"].append(line[4:] if line.startswith("    ") else line)
    return entries


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


def _gist(body: str) -> str:
    stripped = body.strip()
    if stripped.startswith(("{", "[")):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            obj = None
        if isinstance(obj, dict):
            fields = [f"{k}={v}" for k, v in obj.items() if isinstance(v, (str, int, float, bool))][:6]
            if fields:
                return _clip(", ".join(fields), 200)
        if isinstance(obj, list):
            return f"a list of {len(obj)} items"
    lines = [line.strip() for line in stripped.splitlines() if line.strip()]
    return _clip(" | ".join(lines[:2]), 200)


_FAILURE_BULLET = re.compile(r"^- (?P<what>.+?) failed at laps? (?P<laps>[^:]+): (?P<how>.*)$")


def _lap_key(lap: str) -> tuple[int, str]:
    return (int(lap), lap) if lap.isdigit() else (10**9, lap)


def offline_summary(prompt: str, *, label: str | None = None) -> str:
    """The summary :class:`ctxlab.OfflineSummariser` writes for a compaction prompt (by rules).

    ``label``, when given, is the summary's first line, in parentheses (a previous summary's
    label line is not folded in as a fact): it says which summariser wrote the summary.

    >>> print(offline_summary(compaction_prompt("[lap 4] assistant: Is the disk full? Checking df.")))
    FACTS:
    - none
    DECISIONS:
    - [lap 4] Is the disk full? Checking df.
    FAILURES:
    - none
    USER INSTRUCTIONS:
    - none
    OPEN QUESTIONS:
    - [lap 4] Is the disk full?
    """
    prior = ""
    start = prompt.find(f"{PRIOR_OPENING}:")
    if start != -1:
        end = prompt.find(PRIOR_CLOSING, start)
        body = prompt[start:end if end != -1 else len(prompt)]
        prior = body.partition("\n")[2]
        if label:
            prior = "\n".join(line for line in prior.splitlines() if line.strip() != f"({label})")
    steps_at = prompt.find(STEPS_HEADING, max(start, 0))
    steps = prompt[steps_at + len(STEPS_HEADING):] if steps_at != -1 else ""

    sections = _bullets_by_section(prior)
    failures: dict[tuple[str, str], list[str]] = {}
    for bullet in sections.pop("FAILURES"):
        match = _FAILURE_BULLET.match(bullet)
        key = (match["what"], match["how"]) if match else (bullet[2:], "")
        laps = [lap.strip() for lap in match["laps"].split(",")] if match else []
        failures.setdefault(key, []).extend(laps)

    arguments: dict[str, str] = {}
    for entry in _parse_steps(steps):
        lap, head, body = entry["lap"], entry["head"], "\n".join(entry["body"])
        called = re.match(r"^assistant called (\S+) (.*) \(id ([^)]*)\)$", head)
        result = re.match(r"^tool (\S+) \(id ([^)]*)\) (?:FAILED: (.*)|returned:)$", head)
        said = re.match(r"^(\w+): (.*)$", head)
        if called:
            arguments[called[3]] = _clip(called[2], 200)
        elif result:
            tool, call_id, how = result[1], result[2], result[3]
            if how is not None:
                what = f"{tool} {arguments.get(call_id, '')}".strip()
                failures.setdefault((what, how), []).append(lap)
                continue
            gist = _gist(body)
            if gist:
                sections["FACTS"].append(f"- [{tool}, lap {lap}] {gist}")
            notable = [line for line in body.splitlines() if _NOTABLE.search(line)][:3]
            sections["FACTS"] += [f"- [{tool}, lap {lap}] {_clip(line, 300)}" for line in notable]
        elif said:
            role, text = said[1], "\n".join([said[2], body]).strip()
            if role == "assistant":
                sections["DECISIONS"].append(f"- [lap {lap}] {_clip(' '.join(_sentences(text)[:2]), 300)}")
                sections["OPEN QUESTIONS"] += [f"- [lap {lap}] {_clip(s, 200)}" for s in _sentences(text) if s.endswith("?")]
            elif role == "user":
                sections["USER INSTRUCTIONS"].append(f"- [lap {lap}] {_clip(text, 1000)}")

    sections["FAILURES"] = [
        f"- {what} failed at lap{'s' if len(set(laps)) > 1 else ''} "
        f"{', '.join(sorted(set(laps), key=_lap_key)) or '?'}: {how}".replace(" : ", ": ")
        for (what, how), laps in failures.items()
    ]
    lines: list[str] = []
    for section in SECTIONS:
        bullets = list(dict.fromkeys(sections[section]))
        lines += [f"{section}:", *(bullets or ["- none"])]
    if label:
        lines.insert(0, f"({label})")
    cap = summary_cap(prompt)
    return bound_summary("\n".join(lines), cap) if cap else "\n".join(lines)
