"""The transcripts in data/: valid, generated without drift, and described truthfully."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import recordings
from support.pipeline import REPO

import ctxlab
import ctxlab.course

NAMES = ctxlab.course.transcript_names()


def test_the_five_transcripts_are_there():
    assert set(NAMES) == {"incident", "refund", "coding", "research", "parallel"}


def test_files_are_what_the_generator_writes():
    result = subprocess.run(
        [sys.executable, str(REPO / "data" / "make_transcripts.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_manifest_matches_the_transcript(name):
    info = ctxlab.course.transcript_info(name)
    messages, tools = ctxlab.course.load_transcript(name), ctxlab.course.load_tools(name)
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
    info = ctxlab.course.transcript_info(name)
    messages = ctxlab.course.load_transcript(name)
    assert "goal" in info["probes"]
    for probe, text in info["probes"].items():
        where = [i for i, m in enumerate(messages) if text in visible_text(m)]
        assert where == info["probe_messages"][probe], f"{name}: probe {probe!r} found in {where}"
    assert info["probe_messages"]["goal"] == [1]


@pytest.mark.parametrize("name", NAMES)
def test_laps_are_well_formed(name):
    messages = ctxlab.course.load_transcript(name)
    steps = [m["step"] for m in messages]
    assert steps == sorted(steps)
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    assert messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls")
    assert all("pinned" not in m for m in messages)


def test_sizes_are_realistic():
    results = [ctxlab.count_message(m) for n in NAMES for m in ctxlab.course.load_transcript(n) if m["role"] == "tool"]
    assert min(results) < 400 and max(results) > 2_500
    research = ctxlab.course.load_transcript("research")
    assert len(ctxlab.model_calls(research)) == 40


def test_the_research_tool_fails_three_times():
    messages = ctxlab.course.load_transcript("research")
    failure = ctxlab.course.transcript_info("research")["probes"]["failure"]
    assert sum(1 for m in messages if m["role"] == "tool" and failure in m["content"]) == 3


def test_parallel_calls_and_text_with_calls_are_present():
    messages = ctxlab.course.load_transcript("parallel")
    assert max(len(m.get("tool_calls") or []) for m in messages) >= 3
    assert any(m.get("tool_calls") and m.get("content") for m in messages)


# --- recorded real runs (../shared/real-runs/, read where they lie) and the course's own -------

REAL = ctxlab.course.transcripts.real_names() if recordings.real_available() is None else []


def test_the_recorded_real_runs_are_read_where_they_lie_with_their_provenance():
    import json

    recordings.require(recordings.real_available())
    assert not (REPO / "data" / "real").exists(), "another project's recordings are read where they lie, never committed"
    folder = ctxlab.course.transcripts.real_runs_dir()
    assert len(REAL) >= 10
    sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    licence = (folder / "LICENSE.pydantic-ai").read_text(encoding="utf-8")
    assert licence.startswith("The MIT License")
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for name, source in sources.items():
        assert (folder / f"{name}.jsonl").exists()
        assert source["licence"] == "MIT" and len(source["commit"]) == 40 and source["path"].endswith(".yaml")
        assert source["commit"] in readme and "pydantic-ai" in source["repository"], name


def test_without_the_real_runs_the_loader_says_where_to_put_them(monkeypatch, tmp_path):
    monkeypatch.setenv("CTXLAB_REAL_RUNS", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="not part of the course.*set CTXLAB_REAL_RUNS"):
        ctxlab.course.transcripts.load_real("human-in-the-loop")


def real_shapes():
    """Keys and part types that occur in the real trajectories: what they exercise."""
    keys, parts = set(), set()
    for name in REAL:
        for message in ctxlab.course.transcripts.load_real(name)[0]:
            keys |= set(message)
            if isinstance(message.get("content"), list):
                parts |= {p["type"] for p in message["content"]}
    return keys, parts


def test_real_trajectories_hold_the_shapes_the_sdk_produces():
    recordings.require(recordings.real_available())
    keys, parts = real_shapes()
    assert {"refusal", "annotations", "tool_calls", "tool_call_id"} <= keys
    assert {"text", "image_url", "input_audio"} <= parts


@pytest.mark.parametrize("name", REAL + [f"course:{n}" for n in ctxlab.course.transcript_names()])
def test_every_trajectory_validates_counts_and_fits(name):
    if name.startswith("course:"):
        messages, tools = ctxlab.course.load_transcript(name[7:]), ctxlab.course.load_tools(name[7:])
        model = "gpt-4o"
    else:
        messages, tools, source = ctxlab.course.transcripts.load_real(name)
        model = source["model"]
    ctxlab.validate_messages(messages)
    assert ctxlab.pairs_ok(messages)
    counter = ctxlab.TokenCounter(ctxlab.tokens.encoding_for_model(model))
    total = counter.messages(messages)
    assert total == ctxlab.count_messages(messages, counter.encoding) > 3
    assert counter.tools(tools) == ctxlab.count_tools(tools, counter.encoding)
    grown = ctxlab.history.GrowingHistory(messages, count=counter.message)
    for share in (0.25, 0.5, 0.8, 1.0):
        allowance = int((total - 3) * share)
        try:
            kept, dropped = ctxlab.fit(messages, allowance, count=counter.message)
        except ctxlab.BudgetError as err:
            assert err.needed > allowance >= 0  # only when the pins and the newest group cannot fit
            continue
        assert ctxlab.pairs_ok(kept) and sum(map(counter.message, kept)) <= allowance
        assert list(grown.fit(allowance)[0]) == kept
    budget = ctxlab.ContextBudget(window=total + counter.tools(tools) + 2_000, reserve_output=1_000,
                                  scratchpad_max=200)
    context = ctxlab.build_context(messages, budget, tools=tools, count=counter.message)
    assert context.tokens <= budget.input_limit and ctxlab.pairs_ok(context.messages)


@pytest.mark.parametrize("name", REAL + [f"course:{n}" for n in ctxlab.course.transcript_names()])
def test_summarising_never_fails_where_plain_trimming_fits(name):
    if name.startswith("course:"):
        messages = ctxlab.course.load_transcript(name[7:])
    else:
        messages = ctxlab.course.transcripts.load_real(name)[0]
    calls = ctxlab.model_calls(messages) or [len(messages)]
    record = messages[: calls[-1]] if calls[-1] > 1 else messages
    static = 0
    while static < len(record) and record[static]["role"] in ("system", "developer"):
        static += 1
    fixed = ctxlab.count_messages(record[:static])
    elastic = sum(ctxlab.count_message(m) for m in record[static:])
    for share in (0.25, 0.5, 0.8):
        allowance = max(1, int(elastic * share))
        budget = ctxlab.ContextBudget(window=fixed + allowance + 500, reserve_output=500, scratchpad_max=100)
        try:
            plain = ctxlab.build_context(record, ctxlab.MemoryPolicy(budget, keep_full_for=99))
        except ctxlab.BudgetError as err:
            assert err.available is None or err.available >= 0
            continue
        summarised = ctxlab.build_context(record,
                                          ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser(),
                                                              keep_full_for=99))
        for context in (plain, summarised):
            assert context.tokens <= budget.input_limit and ctxlab.pairs_ok(context.messages)
            assert context.messages[-1] == ctxlab.course.strip_course_keys([record[-1]])[0]


def test_installed_from_a_wheel_the_transcripts_are_found_in_the_package(tmp_path):
    """Outside a checkout (a wheel, as the hub installs), the transcripts are the files of the
    namespace package ``ctxlab.data``: a real folder, not the text of a ``MultiplexedPath``.
    The package is laid out as pyproject.toml has the wheel lay it out (``data/`` as
    ``ctxlab/data/``), and imported in a Python that does not see the editable install."""
    import shutil

    shutil.copytree(REPO / "ctxlab", tmp_path / "ctxlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "data", tmp_path / "ctxlab" / "data", ignore=shutil.ignore_patterns("generate", "__pycache__"))
    code = ("import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
            f"sys.path.insert(0, {str(tmp_path)!r})\n"
            "import ctxlab, ctxlab.course\n"
            "assert ctxlab.__file__.startswith(sys.path[0]), ctxlab.__file__\n"
            "print(ctxlab.course.transcripts.data_dir(), len(ctxlab.course.load_transcript('research')))\n")
    env = {k: v for k, v in os.environ.items() if k != "CTXLAB_DATA"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    folder, laps = result.stdout.split()
    assert folder == str(tmp_path / "ctxlab" / "data") and int(laps) > 0, result.stdout
