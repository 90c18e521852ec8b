"""Replaying transcripts through the reference policies: tokens, bill, cached prefix, probes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.caching import message_token_ids, prefix_reuse
from ctxlab.policies import Assemble, KeepEverything, Summarise, TruncateOldest
from ctxlab.replaying import LapRecord, ReplayResult, compare_runs, replay

BUDGET = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=1_000)


@pytest.fixture(scope="module")
def research_runs():
    """The four reference policies over the 40-lap research transcript (computed once)."""
    policies = [KeepEverything(), TruncateOldest(), Summarise(ctxlab.OfflineSummariser()), Assemble(ctxlab.OfflineSummariser())]
    return {p.name: ctxlab.course.replay("research", p, budget=BUDGET) for p in policies}


# --- prefix reuse --------------------------------------------------------------------------


def test_token_ids_match_the_counting_rule_on_every_transcript():
    for name in ctxlab.course.transcript_names():
        for message in ctxlab.course.load_transcript(name):
            assert len(message_token_ids(message)) == ctxlab.count_message(message)


def test_a_prompt_that_extends_the_last_one_reuses_all_of_it():
    research = ctxlab.course.load_transcript("research")
    tools = ctxlab.course.load_tools("research")
    assert prefix_reuse(research[:10], research[:14], tools=tools) == ctxlab.count_messages(research[:10]) - 3 + ctxlab.count_tools(tools)
    assert prefix_reuse(None, research[:14], tools=tools) == 0


def test_a_change_near_the_start_breaks_the_prefix_there():
    research = ctxlab.course.load_transcript("research")
    changed = [*research[:3], {**research[3], "content": "compressed"}, *research[4:10]]
    head = sum(map(ctxlab.count_message, research[:3]))
    assert head + 3 <= prefix_reuse(research[:10], changed) < head + ctxlab.count_message(research[3])
    assert prefix_reuse(research[:10], changed, within_message=False) == head


messages = st.lists(
    st.builds(lambda r, c: {"role": r, "content": c}, st.sampled_from(["user", "assistant"]), st.text("abc .", max_size=30)),
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(a=messages, b=messages)
def test_prefix_reuse_properties(a, b):
    both = prefix_reuse(a, b)
    assert both == prefix_reuse(b, a)  # what two prompts share does not depend on the order
    assert prefix_reuse(a, b, within_message=False) <= both
    assert both <= min(sum(map(ctxlab.count_message, a)), sum(map(ctxlab.count_message, b)))
    assert prefix_reuse(a, a + b) == sum(map(ctxlab.count_message, a))


# --- replays -------------------------------------------------------------------------------


def test_keep_everything_matches_the_bill_of_lesson_01(research_runs):
    run = research_runs["keep everything"]
    research, tools = ctxlab.course.load_transcript("research"), ctxlab.course.load_tools("research")
    assert [r.tokens for r in run.laps] == ctxlab.budget.context_per_lap(research, tools)
    assert run.laps[-1].billed == ctxlab.budget.billed_input(research, tools)
    assert all(r.reused == p.tokens - 3 for r, p in zip(run.laps[1:], run.laps, strict=False))
    assert run.summary()["laps over budget"] > 0
    assert run.survived() == {"goal": True, "constraint": True, "failure": True}


def test_truncate_oldest_stays_in_budget_and_loses_the_goal_and_the_constraint(research_runs):
    run = research_runs["truncate oldest"]
    assert not any(r.over_budget for r in run.laps)
    assert run.survived() == {"goal": False, "constraint": False, "failure": False}
    assert run.first_seen == {"goal": 1, "constraint": 2, "failure": 8}


def test_the_assembler_keeps_every_probe_in_budget_for_less(research_runs):
    full, assembled = research_runs["keep everything"], research_runs[Assemble().name]
    summary = assembled.summary()
    assert summary["laps over budget"] == 0
    assert summary["probes kept"] == ["goal", "constraint", "failure"]
    assert summary["billed input"] < research_runs["summarise"].summary()["billed input"] < full.summary()["billed input"]
    assert summary["decisions"] == len(assembled.log) > 40
    assert all(r.events >= 1 for r in assembled.laps)  # at least the assembly itself, every lap


def test_trimming_rarely_keeps_a_longer_cached_prefix_than_trimming_every_lap():
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=800)
    client = ctxlab.OfflineSummariser()
    rare = ctxlab.course.replay("research", Assemble(client, low_water=0.5, keep_full_for=99), budget=budget)
    every = ctxlab.course.replay("research", Assemble(client, low_water=1.0, keep_full_for=99), budget=budget)
    assert rare.log.count("summarise") < every.log.count("summarise")
    assert rare.summary()["prefix reused"] > every.summary()["prefix reused"]
    assert rare.summary()["uncached input"] < every.summary()["uncached input"]


def test_a_message_list_and_custom_probes_can_be_replayed():
    refund = ctxlab.course.load_transcript("refund")
    run = replay(refund, lambda history, **_: history, budget=BUDGET, probes={"card": "card_account_closed"})
    assert run.policy == "<lambda>"
    assert run.first_seen == {"card": 5} and run.survived() == {"card": True}
    assert len(run.laps) == 9 and run.log is None


def test_policies_refuse_a_history_that_goes_backwards():
    policy = KeepEverything()
    research = ctxlab.course.load_transcript("research")
    policy(research[:10], lap=5, budget=BUDGET)
    with pytest.raises(ValueError, match="reset"):
        policy(research[:5], lap=3, budget=BUDGET)
    policy.reset()
    policy(research[:5], lap=3, budget=BUDGET)


def test_compare_runs_prints_one_row_per_run(research_runs):
    table = compare_runs(list(research_runs.values())).splitlines()
    assert len(table) == 1 + len(research_runs)
    assert table[2].startswith("truncate oldest") and table[2].endswith("goal, constraint, failure")


def test_lap_table_and_an_empty_run():
    run = ReplayResult("x", [LapRecord(1, 1, 10, 10, 0, probes={"goal": True})], {"goal": "g"}, {"goal": 1})
    assert run.table().splitlines()[1].split()[:4] == ["1", "10", "10", "0"]
    assert ReplayResult("empty", []).summary()["peak tokens"] == 0


def test_plots_draw_the_replays(research_runs, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    from ctxlab.course.plots import plot_probe_survival, plot_replay

    runs = list(research_runs.values())
    fig = plot_replay(runs, title="research")
    assert [ax.get_title() for ax in fig.axes] == ["Prompt tokens per lap", "Billed input so far", "Prefix reused from the previous lap"]
    assert len(fig.axes[0].lines) == len(runs) + 1  # one per run and the input limit
    grid = plot_probe_survival(runs)
    assert [ax.get_title(loc="left") for ax in grid.axes] == [r.policy for r in runs]
    import matplotlib.pyplot as plt

    plt.close("all")


# --- success by lap: compactions and what is missing --------------------------------------------


def test_compactions_are_counted_per_lap_from_the_log(research_runs):
    for run in research_runs.values():
        kinds = run.log.counts() if run.log is not None else {}
        assert sum(r.compactions for r in run.laps) == kinds.get("summarise", 0) + kinds.get("trim", 0)
        rows = run.by_lap()
        assert [row["lap"] for row in rows] == [r.lap for r in run.laps]
        assert [row["tokens"] for row in rows] == [r.tokens for r in run.laps]
        totals = [row["compactions"] for row in rows]
        assert totals == sorted(totals)  # a running total
    assert research_runs["keep everything"].by_lap()[-1]["compactions"] == 0


def test_missing_by_lap_agrees_with_survived(research_runs):
    for run in research_runs.values():
        missing = run.missing_by_lap()
        assert list(missing) == [r.lap for r in run.laps]
        for name, kept in run.survived().items():
            assert kept == (run.first_seen[name] is not None and not any(name in m for m in missing.values()))
    truncated = research_runs["truncate oldest"].missing_by_lap()
    assert "goal" in truncated[40] and truncated[1] == []


def test_missing_by_lap_rules():
    run = ReplayResult("rules", [
        LapRecord(1, 1, 10, 10, 0, probes={"a": False, "b": False, "c": False}),
        LapRecord(2, 2, 10, 20, 0, probes={"a": False, "b": True, "c": False}),
    ], {"c": "c", "a": "a", "b": "b"}, {"a": 1, "b": 2, "c": None})
    assert run.missing_by_lap() == {1: ["a"], 2: ["a"]}
    assert ReplayResult("none", []).missing_by_lap() == {} and ReplayResult("none", []).by_lap() == []
