"""ContextBudget, growth per lap and the billed input of a run."""

from __future__ import annotations

import pytest

import ctxlab
import ctxlab.course


def test_history_allowance_subtracts_everything_else():
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=1_000)
    assert budget.history_allowance(3_000, 800) == 10_200
    assert budget.input_limit == 14_000


def test_scratchpad_over_its_cap_is_refused():
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=1_000)
    assert budget.history_allowance(3_000, 1_000) == 10_000
    with pytest.raises(ctxlab.BudgetError, match="over its cap of 1000") as err:
        budget.history_allowance(3_000, 1_001)
    assert (err.value.needed, err.value.available) == (1_001, 1_000)


@pytest.mark.parametrize("fixed", [13_000, 14_000, 20_000])
def test_nothing_left_for_history_is_refused_with_the_numbers(fixed):
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=1_000)
    with pytest.raises(ctxlab.BudgetError) as err:
        budget.history_allowance(fixed, 1_000)
    for number in (16000, 2000, fixed, 1000):
        assert str(number) in str(err.value)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(window=4_000, reserve_output=4_000), "must be smaller than the window"),
        (dict(window=0), "window"),
        (dict(window=-5), "window"),
        (dict(reserve_output=1.5), "reserve_output"),
        (dict(scratchpad_max=True), "scratchpad_max"),
    ],
)
def test_impossible_budgets_cannot_be_built(kwargs, words):
    with pytest.raises(ctxlab.BudgetError, match=words):
        ctxlab.ContextBudget(**kwargs)


def test_bad_token_counts_are_refused():
    budget = ctxlab.ContextBudget()
    with pytest.raises(ctxlab.BudgetError, match="fixed_tokens"):
        budget.history_allowance(-1, 0)
    with pytest.raises(ctxlab.BudgetError, match="scratchpad_tokens"):
        budget.history_allowance(10, "5")


def test_allocation_reports_over_budget():
    budget = ctxlab.ContextBudget(window=1_000, reserve_output=200, scratchpad_max=100)
    fits = budget.allocate(100, 50, 600)
    assert (fits.used, fits.free, fits.over_budget) == (950, 50, False)
    over = budget.allocate(100, 50, 700)
    assert over.free == -50 and over.over_budget


def reference_context_per_lap(messages, tools):
    """Straight from the definition (quadratic): the prompt before each assistant message."""
    return [
        ctxlab.count_messages(messages[:i]) + ctxlab.count_tools(tools)
        for i, m in enumerate(messages)
        if m["role"] == "assistant"
    ]


@pytest.mark.parametrize("name", ["research", "refund", "parallel"])
def test_context_per_lap_matches_the_definition(name):
    messages, tools = ctxlab.course.load_transcript(name), ctxlab.course.load_tools(name)
    per_lap = ctxlab.budget.context_per_lap(messages, tools)
    assert per_lap == reference_context_per_lap(messages, tools)
    assert per_lap == sorted(per_lap)  # nothing leaves the context by itself
    assert ctxlab.budget.billed_input(messages, tools) == sum(per_lap)
    assert len(per_lap) == len(ctxlab.model_calls(messages))


def test_billed_input_grows_with_the_square_of_the_laps():
    lap = [{"role": "assistant", "content": "step " * 50}, {"role": "user", "content": "next " * 50}]
    short = [{"role": "user", "content": "go"}] + lap * 20
    long = [{"role": "user", "content": "go"}] + lap * 40
    ratio = ctxlab.budget.billed_input(long) / ctxlab.budget.billed_input(short)
    assert 3.8 < ratio < 4.2
