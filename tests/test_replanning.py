"""Re-planning after a big context change: when it is due, and what the message says."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab.replanning import REPLAN_SHARE


def event(kind="trim", before=1_000, after=500, lap=5):
    return {"kind": kind, "tokens_before": before, "tokens_after": after, "lap": lap}


PAD = ctxlab.Scratchpad(
    goal="Brief the board on heat pumps",
    facts={"design temperature": "-24 C"},
    done=["searched field studies"],
    remaining=["read the Nordic study", "write the brief"],
    failed={'fetch_pdf {"url": "u"}': "http_403: paywall"},
    open_questions=["is the 2020 paper citable?"],
)


def test_message_is_header_goal_plan_then_failures():
    message = ctxlab.replanning.replan_message(PAD)
    assert set(message) == {"role", "content"} and message["role"] == "user"
    assert message["content"] == (
        f"{ctxlab.replanning.REPLAN_HEADER}\n"
        "GOAL: Brief the board on heat pumps\n\n"
        "REMAINING:\n- read the Nordic study\n- write the brief\n\n"
        'DO NOT RETRY:\n- fetch_pdf {"url": "u"}: http_403: paywall'
    )


def test_message_leaves_out_done_facts_questions_and_empty_sections():
    content = ctxlab.replanning.replan_message(ctxlab.Scratchpad(goal="g", done=["x"], facts={"a": "1"}))["content"]
    assert content == f"{ctxlab.replanning.REPLAN_HEADER}\nGOAL: g"


def test_message_is_not_a_scratchpad_message():
    assert not ctxlab.scratchpad.is_scratchpad_message(ctxlab.replanning.replan_message(PAD))


@pytest.mark.parametrize("kind", ["trim", "summarise", "summary_failed"])
def test_a_big_cut_of_each_kind_is_due(kind):
    assert ctxlab.replanning.replan_due([event(kind)])["kind"] == kind


@pytest.mark.parametrize("kind", ["compress", "scratchpad", "assemble"])
def test_other_kinds_are_never_due(kind):
    assert ctxlab.replanning.replan_due([event(kind, before=1_000, after=10)]) is None


def test_exactly_the_share_is_due_just_under_is_not():
    assert ctxlab.replanning.replan_due([event(before=1_000, after=750)]) is not None
    assert ctxlab.replanning.replan_due([event(before=1_000, after=751)]) is None


def test_every_event_is_looked_at_not_only_the_last():
    events = [event("summarise", 9_000, 3_000), event("scratchpad", 400, 300), event("assemble", 20_000, 9_000)]
    assert ctxlab.replanning.replan_due(events)["kind"] == "summarise"


def test_a_summary_failure_that_changed_nothing_is_not_due():
    assert ctxlab.replanning.replan_due([event("summary_failed", 5_000, 5_000)]) is None


def test_zero_tokens_before_is_not_due_and_does_not_divide():
    assert ctxlab.replanning.replan_due([event(before=0, after=0)]) is None


def test_memory_events_and_a_log_work_as_well_as_dicts():
    log = ctxlab.MemoryLog()
    log.record("trim", lap=3, tokens_before=8_000, tokens_after=4_000)
    assert ctxlab.replanning.replan_due(log) is log[0]
    assert ctxlab.replanning.replan_after(PAD, log.rows()) == ctxlab.replanning.replan_message(PAD)


def test_min_share_is_used():
    assert ctxlab.replanning.replan_due([event(before=1_000, after=600)], min_share=0.5) is None
    assert ctxlab.replanning.replan_due([event(before=1_000, after=400)], min_share=0.5) is not None


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, True, "0.25"])
def test_min_share_must_be_a_fraction(bad):
    with pytest.raises(ValueError, match="min_share"):
        ctxlab.replanning.replan_due([], min_share=bad)


def test_replan_message_needs_a_scratchpad():
    with pytest.raises(TypeError, match="Scratchpad"):
        ctxlab.replanning.replan_message({"goal": "g"})


def test_replan_after_a_build_context_that_trimmed():
    """The hook as an agent loop uses it: after build_context, from context.log."""
    history = [{"role": "system", "content": "You investigate."}, {"role": "user", "content": "Why?", "step": 0}]
    for lap in range(1, 30):
        call = {"id": f"c{lap}", "type": "function", "function": {"name": "search_logs", "arguments": "{}"}}
        history.append({"role": "assistant", "content": None, "tool_calls": [call], "step": lap})
        history.append({"role": "tool", "tool_call_id": f"c{lap}", "content": "log line " * 40, "step": lap})
    pad = ctxlab.Scratchpad(goal="Find why the export failed", remaining=["write the note"])
    budget = ctxlab.ContextBudget(window=3_000, reserve_output=500)
    context = ctxlab.build_context(history, budget, scratchpad=pad)
    assert ctxlab.replanning.replan_after(pad, context.log) == ctxlab.replanning.replan_message(pad)
    quiet = ctxlab.build_context(history[:4], budget, scratchpad=pad)
    assert ctxlab.replanning.replan_after(pad, quiet.log) is None


events_strategy = st.lists(
    st.builds(
        event,
        kind=st.sampled_from(["trim", "summarise", "summary_failed", "compress", "assemble", "scratchpad"]),
        before=st.integers(min_value=0, max_value=50_000),
        after=st.integers(min_value=0, max_value=50_000),
    ),
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(events=events_strategy, share=st.floats(min_value=0.01, max_value=1.0))
def test_due_exactly_when_some_cutting_event_took_out_the_share(events, share):
    due = ctxlab.replanning.replan_due(events, min_share=share)
    expected = [
        e for e in events
        if e["kind"] in ctxlab.replanning.REPLAN_KINDS and e["tokens_before"] > 0
        and e["tokens_before"] - e["tokens_after"] >= share * e["tokens_before"]
    ]
    assert due == (expected[0] if expected else None)
    message = ctxlab.replanning.replan_after(PAD, events, min_share=share)
    assert (message is None) == (not expected)


@settings(max_examples=100, deadline=None)
@given(
    goal=st.text(alphabet="abcdefgh ", min_size=1, max_size=30).filter(str.strip),
    remaining=st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=12), max_size=5),
)
def test_message_starts_with_header_then_goal_and_keeps_the_plan_in_order(goal, remaining):
    lines = ctxlab.replanning.replan_message(ctxlab.Scratchpad(goal=goal, remaining=remaining))["content"].splitlines()
    assert lines[0] == ctxlab.replanning.REPLAN_HEADER and lines[1] == f"GOAL: {goal.strip()}"
    assert [line[2:] for line in lines if line.startswith("- ")] == remaining


def test_default_share_is_a_quarter():
    assert REPLAN_SHARE == 0.25
