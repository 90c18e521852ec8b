"""High-water/low-water trimming: rare, deep trims that keep the prompt prefix stable."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course

RESEARCH = ctxlab.course.load_transcript("research")


def prompts_per_call(history, trim):
    """The prompt each model call of ``history`` gets when ``trim`` runs before it."""
    return [list(trim(list(history[:i]))) for i in ctxlab.model_calls(history)]


def tokens(messages):
    return sum(ctxlab.count_message(m) for m in messages)


def reference_trims(history, high, low):
    """An independent, slow replay: the view grows lap by lap and is fitted to low above high."""
    view, seen, trims = [], 0, 0
    for index, message in enumerate(history):
        if message["role"] != "assistant":
            continue
        view += history[seen:index]
        seen = index
        if tokens(view) > high:
            view, _ = ctxlab.fit(view, low)
            trims += 1
    return trims


def prefix_breaks(prompts):
    """Laps whose prompt does not start with the whole previous prompt (a prompt-cache miss)."""
    return [k for k in range(1, len(prompts)) if prompts[k][: len(prompts[k - 1])] != prompts[k - 1]]


def test_nothing_is_trimmed_until_the_high_mark():
    trimmer = ctxlab.HighLowTrimmer(high=9_000, low=5_000)
    for end in range(2, len(RESEARCH)):
        prompt = trimmer(RESEARCH[:end])
        if tokens(RESEARCH[:end]) <= 9_000:
            assert prompt == RESEARCH[:end] and trimmer.trims == 0
        else:
            break
    assert trimmer.trims == 1 and tokens(prompt) <= 5_000


def test_a_trim_goes_down_to_the_low_mark_and_keeps_pins_and_pairs():
    prompts = prompts_per_call(RESEARCH, ctxlab.HighLowTrimmer(high=10_000, low=5_000))
    for prompt in prompts:
        assert tokens(prompt) <= 10_000
        assert prompt[:2] == RESEARCH[:2]
        assert ctxlab.pairs_ok(prompt)


def test_count_trims_matches_an_independent_replay():
    for high, low in [(12_000, 6_000), (9_000, 8_000), (20_000, 4_000), (6_500, 6_000)]:
        assert ctxlab.watermarks.count_trims(RESEARCH, high=high, low=low) == reference_trims(RESEARCH, high, low), (high, low)


def test_the_prefix_is_stable_between_trims():
    trimmer = ctxlab.HighLowTrimmer(high=12_000, low=6_000)
    prompts = prompts_per_call(RESEARCH, trimmer)
    breaks = prefix_breaks(prompts)
    assert len(breaks) == trimmer.trims == len(trimmer.log)
    assert [e.lap for e in trimmer.log] == [prompts[k][-1]["step"] for k in breaks]


def test_high_low_trims_far_less_often_than_trimming_to_a_limit_every_lap():
    every_lap = prompts_per_call(RESEARCH, lambda history: ctxlab.fit(history, 12_000)[0])
    trimmer = ctxlab.HighLowTrimmer(high=12_000, low=6_000)
    high_low = prompts_per_call(RESEARCH, trimmer)
    assert len(prefix_breaks(every_lap)) > 3 * len(prefix_breaks(high_low))
    assert ctxlab.watermarks.count_trims(RESEARCH, high=12_000, low=11_000) > ctxlab.watermarks.count_trims(RESEARCH, high=12_000, low=6_000)


def test_each_message_is_counted_once_over_the_whole_run():
    seen: dict[int, int] = {}

    def spy(message):
        seen[id(message)] = seen.get(id(message), 0) + 1
        return ctxlab.count_message(message)

    long_run = RESEARCH[:2] + [dict(m) for _ in range(12) for m in RESEARCH[2:]]
    ids = iter(range(10**6))
    for message in long_run:  # unique call ids, so the repeated laps form a valid history
        if message.get("tool_calls"):
            message["tool_calls"] = [{**c, "id": f"c{next(ids)}"} for c in message["tool_calls"]]
    for i, message in enumerate(long_run):
        if message["role"] == "tool":
            j = i - 1
            while long_run[j]["role"] == "tool":
                j -= 1
            long_run[i] = {**message, "tool_call_id": long_run[j]["tool_calls"][0]["id"]}
    ctxlab.validate_messages(long_run)
    assert len(long_run) > 900
    trimmer = ctxlab.HighLowTrimmer(high=12_000, low=6_000, count=spy)
    prompts_per_call(long_run, trimmer)
    assert trimmer.trims > 20
    assert max(seen.values()) == 1
    assert len(seen) == len(long_run) - 1  # every message but the final answer was sent


def test_the_log_keeps_every_dropped_message():
    trimmer = ctxlab.HighLowTrimmer(high=12_000, low=6_000)
    prompts = prompts_per_call(RESEARCH, trimmer)
    dropped = trimmer.log.messages("trim")
    sent = RESEARCH[: ctxlab.model_calls(RESEARCH)[-1]]
    assert sorted(map(id, dropped + prompts[-1])) == sorted(map(id, sent))
    for event in trimmer.log:
        assert event.kind == "trim" and event.tokens_before > 12_000 >= 6_000 >= event.tokens_after


def test_with_a_client_dropped_laps_are_rolled_into_one_summary():
    log = ctxlab.MemoryLog()
    trimmer = ctxlab.HighLowTrimmer(high=12_000, low=7_000, client=ctxlab.OfflineSummariser(), log=log)
    prompts = prompts_per_call(RESEARCH, trimmer)
    assert trimmer.trims == log.count("summarise") > 1
    for prompt in prompts:
        assert sum(map(ctxlab.is_summary, prompt)) <= 1 and tokens(prompt) <= 12_000
    failure = ctxlab.course.transcript_info("research")["probes"]["failure"]
    assert failure in json.dumps(prompts[-1])  # the failed fetch_pdf survives in the summary
    assert len(prefix_breaks(prompts)) == trimmer.trims


def test_the_trimmer_follows_one_growing_history():
    trimmer = ctxlab.HighLowTrimmer(high=12_000, low=6_000)
    trimmer(RESEARCH[:10])
    with pytest.raises(ValueError, match="reset"):
        trimmer(RESEARCH[:5])
    with pytest.raises(ValueError, match="reset"):
        trimmer([dict(m) for m in RESEARCH[:12]])
    trimmer.reset()
    assert trimmer(RESEARCH[:5]) == RESEARCH[:5] and trimmer.trims == 0


@pytest.mark.parametrize("high, low", [(100, 100), (100, 200), (0, -5), (1.5, 1), (True, 1)])
def test_marks_must_leave_a_gap(high, low):
    with pytest.raises(ValueError):
        ctxlab.HighLowTrimmer(high=high, low=low)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=600), min_size=1, max_size=40), st.integers(300, 3_000), st.integers(1, 2_500))
def test_high_low_properties(sizes, high, gap):
    low = max(1, high - gap)
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    for lap, size in enumerate(sizes, start=1):
        history.append({"role": "assistant", "content": "x " * size, "step": lap})
    trimmer = ctxlab.HighLowTrimmer(high=high, low=low)
    try:
        prompts = prompts_per_call(history, trimmer)
    except ctxlab.BudgetError:
        return
    for before, prompt in zip([[], *prompts[:-1]], prompts, strict=True):
        assert tokens(prompt) <= high
        assert prompt[:2] == history[:2]
        positions = [history.index(m) for m in prompt]
        assert positions == sorted(positions)
        if tokens(before + [m for m in prompt if m not in before]) <= high:
            assert prompt[: len(before)] == before  # no trim below the high mark
    assert trimmer.trims == len(prefix_breaks(prompts))


def test_a_failing_summariser_can_fall_back_to_plain_trimming(monkeypatch):
    monkeypatch.setattr("ctxlab.llm.time.sleep", lambda seconds: None)
    client = ctxlab.course.ScriptedClient([TimeoutError("stalled")] * 3)
    trimmer = ctxlab.HighLowTrimmer(high=12_000, low=7_000, client=client, on_failure="trim")
    prompt = trimmer(RESEARCH[:31])
    assert trimmer.trims == 1 and tokens(prompt) <= 7_000
    (event,) = trimmer.log
    assert event.kind == "summary_failed" and [m for m in RESEARCH[:31] if m not in prompt] == list(event.messages)
    with pytest.raises(ctxlab.SummaryError):
        ctxlab.HighLowTrimmer(high=12_000, low=7_000, client=ctxlab.course.ScriptedClient([TimeoutError()] * 3))(RESEARCH[:31])
