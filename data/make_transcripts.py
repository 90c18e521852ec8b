#!/usr/bin/env python3
"""Generate the agent transcripts that the Context Window Lab lessons replay.

    python data/make_transcripts.py           write every file in data/ (from any folder)
    python data/make_transcripts.py --check   exit 1 if a file on disk differs from what
                                              this script would write

Five transcripts are made, each a ``<name>.jsonl`` of Chat Completions messages (one per line,
with the course key ``step``) and a ``<name>.tools.json`` of the tool schemas the agent had.
``transcripts.json`` (the manifest, with probes) and ``README.md`` are written too.

How the content is made:

* The story of each run (the user's request, the agent's reasoning, the decisive results and
  the final answer) is written by hand in the ``build_<name>`` function of that transcript,
  one module each in ``data/generate/`` (``incident.py``, ``refund.py``, ``coding.py``,
  ``research.py``, ``parallel.py``; ``common.py`` holds what they share).
* The bulk around it (log lines, metric tables, search hits, page text, source files, test
  output) comes from templates filled in by ``random.Random(seed)``, one seed per transcript.

Only the standard library is used, nothing reads the clock or the network, and every JSON
object is written with a fixed key order, so every run writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generate.coding import build_coding
from generate.common import Transcript
from generate.incident import build_incident
from generate.parallel import PARALLEL_FAILURE, build_parallel
from generate.refund import REFUND_DECLINE, build_refund
from generate.research import RESEARCH_CONSTRAINT, RESEARCH_FAILURE, build_research

DATA_DIR = Path(__file__).resolve().parent

# =============================================================================================
# The manifest, the README, and writing or checking the files
# =============================================================================================


@dataclass
class Spec:
    """What the manifest says about one transcript, next to the function that builds it."""

    name: str
    build: Callable[[], Transcript]
    title: str
    description: str
    lessons: list[str]
    probes: dict[str, str]


SPECS = [
    Spec(
        "incident", build_incident,
        "Why did the nightly export fail?",
        "An incident investigation of 14 laps, almost every one a log or metrics search with a "
        "bulky result. One line in the lap-3 worker log matters: the export's database step "
        "timed out waiting for a lock held by a maintenance job (SQLSTATE 55P03, pid 39150). "
        "Everything else is routine noise until lap 12, when the agent acts on that line, and "
        "the final answer cites it. Lesson 02 (trimming) uses it to show plain trimming losing "
        "the one finding; lesson 03 (summarising) shows a roll-up summary keeping it.",
        ["02-trimming", "03-summarising"],
        {"goal": "the finance team's 06:00 reconciliation", "finding": "55P03"},
    ),
    Spec(
        "refund", build_refund,
        "A refund the payment processor declines",
        "A support agent of 9 laps: order lookup, return inspection, eligibility, then the "
        "refund to the original card fails with a permanent decline code (card_account_closed, "
        "retryable=false). The agent does not retry the dead card, reads the policy and "
        "escalates to billing with its reason, then writes to the customer. Small enough to "
        "count by hand in lesson 01 (budget); lesson 04 (scratchpad) records the failure as a "
        "DO NOT RETRY line kept by code.",
        ["01-budget", "04-scratchpad"],
        {"goal": "including the shipping I paid", "failure": REFUND_DECLINE},
    ),
    Spec(
        "coding", build_coding,
        "A one-cent bug, and a module the agent must not touch",
        "A coding agent of 13 laps fixing a rounding mismatch between the checkout summary and "
        "the card charge. The first user message forbids changes to the payments module, where "
        "the obvious fix would go. The run reads seven source files (most of 2,500-3,600 tokens, "
        "one of them twice), runs the tests, greps, edits twice and reviews the diff. Lesson 05 "
        "(age compression) shrinks the old file reads; lesson 03 shows the compaction trap: a "
        "summary that drops the constraint.",
        ["05-age-compression", "03-summarising"],
        {"goal": "charged one cent more than the order summary",
         "constraint": "modify the payments module"},
    ),
    Spec(
        "research", build_research,
        "Forty laps of research under a late constraint",
        "A research agent of 40 laps answering a housing authority's questions about heat "
        "pumps in cold climates. The goal is in the first user message; a second user message "
        "before lap 2 adds a constraint (cite only sources published in 2021 or later). "
        "fetch_pdf fails on the same paywalled URL at laps 7, 17 and 31 because the agent "
        "forgot the earlier failures. The final report honours the constraint. Lesson 06 "
        "(assembly) compares memory policies on it: whether the goal, the constraint and the "
        "failure survive to the last lap; lessons 02 and 04 use it for high/low-water trimming "
        "and for DO NOT RETRY.",
        ["06-assembly", "04-scratchpad", "02-trimming"],
        {"goal": "replacing oil and propane boilers", "constraint": RESEARCH_CONSTRAINT,
         "failure": RESEARCH_FAILURE},
    ),
    Spec(
        "parallel", build_parallel,
        "A health check across four regions, in parallel",
        "An on-call agent of 8 laps that calls two to four tools at once: probes, metrics, "
        "deploys and dependencies across four regions. One probe returns an error "
        "(PROBE_AGENT_UNREACHABLE); lap 2's assistant message has both text and tool calls. "
        "Lesson 02 (trimming) uses it to show that a turn group holds all the parallel calls "
        "and all their results; lesson 01 counts tool calls in the budget.",
        ["02-trimming", "01-budget"],
        {"goal": "checkout is slow in Europe", "failure": PARALLEL_FAILURE},
    ),
]

# Token counts measured with tiktoken's cl100k_base by the course's rule (ctxlab.count_messages:
# 3 per message, the tokens of every string field, 1 more for `name`, 3 per tool call plus its
# name and arguments, several calls in one message read as one multi_tool_use.parallel call, a
# tool result read as written by functions.NAME without its tool_call_id, 3 for reply priming;
# ctxlab.count_tools for the schemas, the typed listing the model reads). This script cannot measure them itself (standard library
# only): after changing any content, re-measure and update this table; the test suite compares
# it with ctxlab's own count.
MEASURED_TOKENS: dict[str, dict[str, int]] = {
    "incident": {"messages": 23673, "tool_results": 21790, "largest_message": 2966, "tools": 615},
    "refund": {"messages": 4866, "tool_results": 3622, "largest_message": 1152, "tools": 538},
    "coding": {"messages": 25961, "tool_results": 23220, "largest_message": 3631, "tools": 317},
    "research": {"messages": 44627, "tool_results": 41711, "largest_message": 2504, "tools": 260},
    "parallel": {"messages": 6250, "tool_results": 4570, "largest_message": 395, "tools": 601},
}


def _json_text(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent) + "\n"


def _jsonl_text(messages: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(message, ensure_ascii=False) + "\n" for message in messages)


def _occurrences(messages: list[dict[str, Any]], probe: str) -> list[int]:
    """Indices of the messages whose content or tool-call arguments contain ``probe``."""
    found = []
    for index, message in enumerate(messages):
        texts = [message.get("content") or ""]
        texts += [call["function"]["arguments"] for call in message.get("tool_calls", [])]
        if any(probe in text for text in texts):
            found.append(index)
    return found


def _manifest_entry(spec: Spec, transcript: Transcript) -> dict[str, Any]:
    messages = transcript.messages
    for name, probe in spec.probes.items():
        if not _occurrences(messages, probe):
            raise ValueError(f"{spec.name}: probe {name!r} ({probe!r}) occurs in no message")
    if not messages[1]["content"].count(spec.probes["goal"]):
        raise ValueError(f"{spec.name}: the goal probe is not in the first user message")
    entry: dict[str, Any] = {
        "title": spec.title,
        "description": spec.description,
        "lessons": spec.lessons,
        "laps": transcript.lap,
        "messages": len(messages),
        "tools": [t["function"]["name"] for t in transcript.tools],
        "probes": spec.probes,
        "probe_messages": {name: _occurrences(messages, probe)
                           for name, probe in spec.probes.items()},
    }
    if spec.name in MEASURED_TOKENS:
        entry["tokens"] = MEASURED_TOKENS[spec.name]
    return entry


README_HEAD = """\
# Transcripts

Five generated agent runs that the lessons replay, lap by lap, to show what each memory policy
keeps and loses. Each one is a complete, valid Chat Completions history: the system prompt, the
user's request, every model call with its tool calls, every tool result, and a final answer.

They were written for Context Window Lab and generated by `make_transcripts.py` in this folder.
The companies, people, hosts, orders, papers and web sites in them are invented; web addresses
use the reserved `.example` domain and DOIs the `10.5555` test prefix.

## Files

| file | what it holds |
| --- | --- |
| `<name>.jsonl` | the transcript: one message per line, JSON, UTF-8 |
| `<name>.tools.json` | the tool schemas the agent had, in the OpenAI `tools` format |
| `transcripts.json` | the manifest: title, description, lessons, laps, message count, tool names, probes, measured tokens |
| `make_transcripts.py` | the generator; `python data/make_transcripts.py` rewrites every file here |
| `generate/` | one module per transcript (`incident.py`, ..., `parallel.py`) with its story and its bulk, and `common.py`, what they share |

Load them with `ctxlab.course.load_transcript(name)`, `ctxlab.course.load_tools(name)` and
`ctxlab.course.transcript_info(name)`.

## Message schema

Every message is an OpenAI Chat Completions message dict plus one course key, `step`, the lap.
Keys appear in a fixed order.

- `{"role": "system", "content": str, "step": 0}`, always first.
- `{"role": "user", "content": str, "step": k}`.
- `{"role": "assistant", "content": str | null, "tool_calls": [...], "step": k}`. `content` is
  `null` when the assistant only calls tools, a string when it says something (with or without
  tool calls). `tool_calls` is left out when there are none. Each call is
  `{"id": "call_<24 letters and digits>", "type": "function", "function": {"name": str,
  "arguments": str}}`, where `arguments` is a JSON-encoded object.
- `{"role": "tool", "tool_call_id": str, "content": str, "step": k}`. `content` is a string:
  plain text for logs, pages, files and test output, JSON text for structured results, and
  JSON such as `{"error": ..., "message": ...}` for failures.

Rules every file follows (the generator checks the ones it can, `ctxlab.validate_messages`
checks the rest):

- `step` is 0 for the system prompt and the first user message. Lap k is one assistant message
  (one model call) and the tool results answering it, all with `step` k. A user message that
  arrives before lap k's assistant message also has `step` k. Steps never decrease.
- Every tool call is answered by exactly one tool message; the answers come right after the
  assistant message that made the calls, before any other message. Call ids are unique within a
  transcript.
- The last message is an assistant message with a text answer and no tool calls.
- There is no `pinned` key (the lessons decide what to pin) and no `name` key.

## The transcripts
"""

README_PROBES = """\
## Probes

A probe is a short exact string that appears in exactly the messages that carry one fact, so a
test can ask whether the fact survived a memory policy: build the context for a lap, then look
for the probe in what was kept. `transcripts.json` lists each transcript's probes under
`probes` and, under `probe_messages`, the indices of the messages (0-based, counting the system
prompt) in which each one occurs, in a message's `content` or in a tool call's `arguments`.

| probe | meaning | transcripts |
| --- | --- | --- |
| `goal` | a piece of the first user message, the task itself | all |
| `constraint` | a rule the user set, which a summary must not lose | coding, research |
| `failure` | the error of the tool call that failed | refund, research, parallel |
| `finding` | the one early result the final answer depends on | incident |

Where the agent repeats a fact later (the research agent acknowledging the constraint, the
final answers citing the finding or the failure), it repeats the probe string exactly, so those
messages count as carrying the fact too.
"""

README_TAIL = """\
## How they were made

`make_transcripts.py` uses only the Python standard library and no network. The story of each
run (the request, the agent's reasoning, the decisive results, the final answer) is written by
hand in one function per transcript (`build_<name>` in `generate/<name>.py`). The bulk around it (log lines, metric tables, search
results, web pages, source files, test output) is produced from templates filled in by
`random.Random` with a fixed seed per transcript, and where one result depends on another it is
computed from it: the coding agent's grep hits, edit summaries and diff come from the source
files it reads, and the test output from the test file.

```
python data/make_transcripts.py          # rewrite every file in data/, byte for byte the same
python data/make_transcripts.py --check  # exit 1 and name the files that differ
```

Run `--check` in the tests to catch hand edits or drift. The token counts cannot be measured
without the tokenizer, so the generator carries them as a table (`MEASURED_TOKENS`); after
changing any content, re-measure with `ctxlab.count_messages` and `ctxlab.count_tools` and update
it.

## Real recorded runs: not here

Fourteen short agent runs recorded against the real OpenAI API (by pydantic-ai's test suite,
MIT) are what the library's tests check real histories and real bills against. They are another
project's recordings, so they are not part of this one: the tests read them where they lie,
`../shared/real-runs/` beside the clone (its README gives the source, the commit and the
licence), or the folder `CTXLAB_REAL_RUNS` names. CI has them; elsewhere the tests that need
them are skipped and say where they looked. Lesson 01 counts one of them when it is there, and
otherwise quotes the figures measured on it.

## Licence

The five transcripts above were written for Context Window Lab and are released under the same
licence as the rest of the project (MIT); nothing in them is copied from another source.
"""


def _readme(entries: dict[str, dict[str, Any]]) -> str:
    parts = [README_HEAD]
    for spec in SPECS:
        entry = entries[spec.name]
        probes = ", ".join(f"`{name}`: `{value}`" for name, value in spec.probes.items())
        parts.append(f"### `{spec.name}`: {spec.title}\n\n{spec.description}\n\n"
                     f"Lessons: {', '.join(spec.lessons)}. Tools: "
                     f"{', '.join(f'`{name}`' for name in entry['tools'])}. Probes: {probes}.\n")
    parts.append("## Sizes\n\n"
                 "Tokens are measured, not estimated: tiktoken's `cl100k_base`, counted by the "
                 "course's rule (`ctxlab.count_messages`): 3 tokens per message, the tokens of "
                 "every string field, 1 more when `name` is set, 3 per tool call plus the tokens of "
                 "its name and arguments (several calls in one message are read as one "
                 "`multi_tool_use.parallel` call), a tool result read as written by `functions.NAME` "
                 "without its `tool_call_id`, and 3 for priming the reply; `step` is not counted. Tool "
                 "schemas are counted apart (`ctxlab.count_tools`: the typed listing the model reads, "
                 "not their JSON), because they are sent with every request.\n")
    rows = ["| transcript | messages | laps | tokens | of which tool results | largest message "
            "| tool schemas |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for spec in SPECS:
        entry = entries[spec.name]
        tokens = entry.get("tokens")
        if tokens:
            share = 100 * tokens["tool_results"] / tokens["messages"]
            rows.append(f"| {spec.name} | {entry['messages']} | {entry['laps']} | "
                        f"{tokens['messages']:,} | {tokens['tool_results']:,} ({share:.0f} %) | "
                        f"{tokens['largest_message']:,} | {tokens['tools']:,} |")
        else:
            rows.append(f"| {spec.name} | {entry['messages']} | {entry['laps']} | not measured "
                        "| | | |")
    parts.append("\n".join(rows) + "\n")
    parts.append(README_PROBES)
    parts.append(README_TAIL)
    return "\n".join(parts)


def render_all() -> dict[str, str]:
    """Every file this script writes, by file name, as text."""
    files: dict[str, str] = {}
    manifest: dict[str, dict[str, Any]] = {}
    for spec in SPECS:
        transcript = spec.build()
        files[f"{spec.name}.jsonl"] = _jsonl_text(transcript.messages)
        files[f"{spec.name}.tools.json"] = _json_text(transcript.tools)
        manifest[spec.name] = _manifest_entry(spec, transcript)
    files["transcripts.json"] = _json_text(manifest)
    files["README.md"] = _readme(manifest)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the files on disk instead of writing; exit 1 on drift")
    args = parser.parse_args(argv)
    files = render_all()
    if args.check:
        stale = []
        for name, text in files.items():
            path = DATA_DIR / name
            if not path.exists() or path.read_bytes() != text.encode("utf-8"):
                stale.append(name)
        if stale:
            print("out of date: " + ", ".join(stale) +
                  "\nrun `python data/make_transcripts.py` to regenerate", file=sys.stderr)
            return 1
        print(f"all {len(files)} files up to date")
        return 0
    for name, text in files.items():
        (DATA_DIR / name).write_bytes(text.encode("utf-8"))
    print(f"wrote {len(files)} files to {DATA_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
