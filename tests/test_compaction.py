"""When to compact: the threshold decision, the trigger's record, phase boundaries, bad arguments."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab.compaction import Compaction, CompactionTrigger, compaction_due

ceilings = st.integers(min_value=1, max_value=2_000_000)
thresholds = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(millis=st.integers(1, 1_000), ceiling=st.integers(1, 200_000))
@example(millis=550, ceiling=100).via("0.55 * 100 == 55.00000000000001")
@example(millis=35, ceiling=200).via("0.035 * 200 == 7.000000000000001")
def test_a_threshold_in_decimals_is_reached_where_exact_arithmetic_says(millis, ceiling):
    """0.55 of 100 is 55 tokens, though 0.55 * 100 is 55.00000000000001 in floating point: due
    exactly when tokens * 1000 >= millis * ceiling, for thresholds of up to three decimals."""
    exact = -(-millis * ceiling // 1_000)  # the first whole number of tokens at or above the threshold
    assert compaction_due(exact, ceiling, threshold=millis / 1_000) is True
    if exact > 0:
        assert compaction_due(exact - 1, ceiling, threshold=millis / 1_000) is False


def test_threshold_is_reached_exactly_and_not_before():
    assert compaction_due(7_000, 10_000) is True
    assert compaction_due(6_999, 10_000) is False
    assert compaction_due(10_000, 10_000, threshold=1.0) is True
    assert compaction_due(9_999, 10_000, threshold=1.0) is False
    assert compaction_due(0, 10_000, threshold=0.01) is False


def test_a_phase_boundary_compacts_whatever_the_tokens():
    assert compaction_due(0, 10_000, boundary=True) is True
    assert compaction_due(9_000, 10_000, boundary=True) is True


@pytest.mark.parametrize("threshold", [0, -0.2, 1.01, 70, float("nan"), True, "0.7", None])
def test_bad_thresholds_are_refused_with_the_rule(threshold):
    with pytest.raises(ValueError, match="threshold must be a fraction of the ceiling"):
        compaction_due(100, 1_000, threshold=threshold)
    with pytest.raises(ValueError, match="threshold must be a fraction"):
        CompactionTrigger(1_000, threshold=threshold)


def test_a_percentage_gets_a_hint():
    with pytest.raises(ValueError, match=r"did you mean 0\.7\?"):
        CompactionTrigger(1_000, threshold=70)


@pytest.mark.parametrize("ceiling", [0, -5, 1.5, True, "8000", None])
def test_bad_ceilings_are_refused(ceiling):
    with pytest.raises(ValueError, match="ceiling must be a whole number of tokens above 0"):
        compaction_due(100, ceiling)
    with pytest.raises(ValueError, match="ceiling must be"):
        CompactionTrigger(ceiling)


@pytest.mark.parametrize("tokens", [-1, 2.5, None, False])
def test_bad_token_counts_are_refused(tokens):
    with pytest.raises(ValueError, match="tokens must be a whole number"):
        compaction_due(tokens, 1_000)


def test_the_trigger_records_each_decision_in_order():
    trigger = CompactionTrigger(12_000)
    assert trigger.after_lap(8_399, lap=3) is None
    first = trigger.after_lap(8_400, lap=4)
    assert first == Compaction("threshold", first.detail, 4) and "8,400 of 12,000" in first.detail
    start = trigger.phase_boundary(starting="the fix", lap=7)
    end = trigger.phase_boundary(finished="the fix", lap=10)
    assert (start.reason, end.reason) == ("phase-start", "phase-end")
    assert "clean window" in start.detail and "the fix" in end.detail
    assert trigger.fired == [first, start, end]


@pytest.mark.parametrize("kwargs", [{}, {"starting": "a", "finished": "b"}])
def test_a_phase_boundary_names_one_sub_task(kwargs):
    with pytest.raises(ValueError, match="exactly one of starting="):
        CompactionTrigger(1_000).phase_boundary(**kwargs)
    assert CompactionTrigger(1_000).fired == []


def test_the_names_are_public():
    assert ctxlab.compaction.compaction_due is compaction_due and ctxlab.CompactionTrigger is CompactionTrigger


@given(ceilings, thresholds, st.integers(min_value=0, max_value=4_000_000))
def test_the_decision_is_the_comparison_with_the_threshold(ceiling, threshold, tokens):
    assert compaction_due(tokens, ceiling, threshold=threshold) == (tokens >= threshold * ceiling)
    assert compaction_due(tokens, ceiling, threshold=threshold, boundary=True)


@given(ceilings, thresholds, st.integers(min_value=0, max_value=4_000_000), st.integers(min_value=0, max_value=1_000))
def test_more_tokens_never_undo_a_decision(ceiling, threshold, tokens, more):
    if compaction_due(tokens, ceiling, threshold=threshold):
        assert compaction_due(tokens + more, ceiling, threshold=threshold)


@given(ceilings, thresholds, st.lists(st.integers(min_value=0, max_value=4_000_000), max_size=30))
def test_the_trigger_fires_exactly_on_the_laps_the_decision_says(ceiling, threshold, laps):
    trigger = CompactionTrigger(ceiling, threshold=threshold)
    fired = [lap for lap, tokens in enumerate(laps, 1) if trigger.after_lap(tokens, lap=lap)]
    assert fired == [lap for lap, tokens in enumerate(laps, 1) if compaction_due(tokens, ceiling, threshold=threshold)]
    assert [c.lap for c in trigger.fired] == fired and all(c.reason == "threshold" for c in trigger.fired)


@given(ceilings)
def test_a_full_prompt_always_compacts(ceiling):
    assert compaction_due(ceiling, ceiling, threshold=1.0)
    assert CompactionTrigger(ceiling).after_lap(ceiling) is not None
