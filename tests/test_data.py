"""The transcripts in data/: valid, generated without drift, and described truthfully."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.pipeline import REPO

import ctxlab

NAMES = ctxlab.transcript_names()


def test_the_five_transcripts_are_there():
    assert set(NAMES) == {"incident", "refund", "coding", "research", "parallel"}


def test_files_are_what_the_generator_writes():
    result = subprocess.run(
        [sys.executable, str(REPO / "data" / "make_transcripts.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_manifest_matches_the_transcript(name):
    info = ctxlab.transcript_info(name)
    messages, tools = ctxlab.load_transcript(name), ctxlab.load_tools(name)
    assert info["messages"] == len(messages)
    assert info["laps"] == len(ctxlab.model_calls(messages)) == max(m["step"] for m in messages)
    assert info["tools"] == [t["function"]["name"] for t in tools]
    assert info["tokens"]["messages"] == ctxlab.count_messages(messages)
    assert info["tokens"]["tools"] == ctxlab.count_tools(tools)
    tool_results = [m for m in messages if m["role"] == "tool"]
    assert info["tokens"]["tool_results"] == sum(ctxlab.count_message(m) for m in tool_results)


def visible_text(message) -> str:
    """Everything the model reads in a message: its content and its calls' arguments."""
    calls = [c["function"]["arguments"] for c in message.get("tool_calls") or []]
    return "\n".join([message.get("content") or "", *calls])


@pytest.mark.parametrize("name", NAMES)
def test_probes_are_where_the_manifest_says(name):
    info = ctxlab.transcript_info(name)
    messages = ctxlab.load_transcript(name)
    assert "goal" in info["probes"]
    for probe, text in info["probes"].items():
        where = [i for i, m in enumerate(messages) if text in visible_text(m)]
        assert where == info["probe_messages"][probe], f"{name}: probe {probe!r} found in {where}"
    assert info["probe_messages"]["goal"] == [1]


@pytest.mark.parametrize("name", NAMES)
def test_laps_are_well_formed(name):
    messages = ctxlab.load_transcript(name)
    steps = [m["step"] for m in messages]
    assert steps == sorted(steps)
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    assert messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls")
    assert all("pinned" not in m for m in messages)


def test_sizes_are_realistic():
    results = [ctxlab.count_message(m) for n in NAMES for m in ctxlab.load_transcript(n) if m["role"] == "tool"]
    assert min(results) < 400 and max(results) > 2_500
    research = ctxlab.load_transcript("research")
    assert len(ctxlab.model_calls(research)) == 40


def test_the_research_tool_fails_three_times():
    messages = ctxlab.load_transcript("research")
    failure = ctxlab.transcript_info("research")["probes"]["failure"]
    assert sum(1 for m in messages if m["role"] == "tool" and failure in m["content"]) == 3


def test_parallel_calls_and_text_with_calls_are_present():
    messages = ctxlab.load_transcript("parallel")
    assert max(len(m.get("tool_calls") or []) for m in messages) >= 3
    assert any(m.get("tool_calls") and m.get("content") for m in messages)
