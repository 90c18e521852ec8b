"""``ctxlab.MemoryPolicy``: one object for what ``build_context`` and the ``Assembler`` choose.

Every option is checked where the policy is made; the old style (the options as keyword
arguments beside a budget) gives the same prompts for one release, with a warning that shows
the new call; a policy and loose options together are refused.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import ctxlab
import ctxlab.course
from ctxlab.memory_policy import OPTIONS

BUDGET = ctxlab.ContextBudget(window=6_000, reserve_output=1_000, scratchpad_max=400)
RESEARCH = ctxlab.course.load_transcript("research")
TOOLS = ctxlab.course.load_tools("research")
CALLS = ctxlab.model_calls(RESEARCH)


def record(laps: int) -> list[dict]:
    """The research run up to its ``laps``-th model call (every call answered)."""
    return RESEARCH[: CALLS[laps]]


def test_the_options_are_the_ones_the_signatures_lost():
    # build_context and the Assembler keep only what moves from lap to lap beside the policy
    assert OPTIONS == ("budget", "client", "model", "low_water", "keep_recent", "keep_full_for",
                       "compress_after", "max_chars", "store", "pin_user_messages", "pin_tool",
                       "small_talk_tokens", "on_summary_error")
    assert list(inspect.signature(ctxlab.build_context).parameters) == [
        "history", "policy", "tools", "scratchpad", "state", "step", "log", "count", "options"]
    assert list(inspect.signature(ctxlab.Assembler).parameters) == ["policy", "tools", "log", "counter", "options"]


def test_the_default_policy_is_a_budget_alone():
    history = record(12)
    with_budget = ctxlab.build_context(history, BUDGET, tools=TOOLS)
    with_policy = ctxlab.build_context(history, ctxlab.MemoryPolicy(BUDGET), tools=TOOLS)
    assert with_budget.messages == with_policy.messages and with_budget.tokens == with_policy.tokens


@pytest.mark.parametrize(("change", "error", "words"), [
    ({"budget": 8_000}, TypeError, "must be a ctxlab.ContextBudget"),
    ({"low_water": 0}, ValueError, "low_water must be a fraction"),
    ({"low_water": 1.5}, ValueError, "low_water must be a fraction"),
    ({"low_water": True}, ValueError, "low_water must be a fraction"),
    ({"keep_recent": 0}, ValueError, "keep_recent must be an int >= 1"),
    ({"keep_recent": 1.0}, ValueError, "keep_recent must be an int >= 1"),
    ({"keep_full_for": -1}, ValueError, "keep_full_for"),
    ({"max_chars": 10}, ValueError, "max_chars"),
    ({"compress_after": 1, "keep_full_for": 2}, ValueError, "compress_after"),
    ({"pin_user_messages": "yes"}, TypeError, "pin_user_messages must be True or False"),
    ({"pin_tool": ""}, TypeError, "pin_tool must be a tool's name or None"),
    ({"small_talk_tokens": -1}, ValueError, "small_talk_tokens must be an int >= 0"),
    ({"small_talk_tokens": None}, ValueError, "small_talk_tokens must be an int >= 0"),
    ({"model": 4}, TypeError, "model must be a model's name"),
])
def test_each_option_is_checked_where_the_policy_is_made(change, error, words):
    options = {"budget": BUDGET, **change}
    with pytest.raises(error, match=words):
        ctxlab.MemoryPolicy(**options)
    if "budget" not in change:
        with pytest.raises(error, match=words):
            ctxlab.MemoryPolicy(BUDGET).replace(**change)


def test_replace_names_a_wrong_option_and_the_right_ones():
    with pytest.raises(TypeError, match="no option 'lowwater'; its options are budget, client"):
        ctxlab.MemoryPolicy(BUDGET).replace(lowwater=0.5)
    policy = ctxlab.MemoryPolicy(BUDGET, low_water=0.5)
    assert policy.replace(keep_recent=2) == dataclasses.replace(policy, keep_recent=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.low_water = 0.7  # type: ignore[misc]


def test_the_old_style_warns_and_gives_the_same_prompts():
    options = {"client": ctxlab.OfflineSummariser(), "low_water": 0.5, "keep_full_for": 1, "max_chars": 400}
    policy = ctxlab.MemoryPolicy(BUDGET, **options)
    history = record(36)
    new = ctxlab.build_context(history, policy, tools=TOOLS)
    with pytest.warns(DeprecationWarning, match=r"ctxlab.MemoryPolicy\(budget, client=..., low_water=..."):
        old = ctxlab.build_context(history, BUDGET, tools=TOOLS, **options)
    assert old.messages == new.messages and old.state == new.state
    assert new.log.filter("summarise"), "the case must cut, or it shows little"
    with pytest.warns(DeprecationWarning, match=r"Assembler\(\.\.\., ctxlab.MemoryPolicy\(budget"):
        assembler = ctxlab.Assembler(BUDGET, tools=TOOLS, **options)
    assert assembler.policy == policy
    assert assembler.context(history).messages == new.messages


def test_a_policy_and_loose_options_together_are_refused():
    policy = ctxlab.MemoryPolicy(BUDGET)
    with pytest.raises(TypeError, match=r"put them in the policy, policy.replace\(low_water=...\)"):
        ctxlab.build_context(record(2), policy, low_water=0.5)
    with pytest.raises(TypeError, match=r"put them in the policy"):
        ctxlab.Assembler(policy, keep_recent=2)


def test_an_unknown_keyword_is_refused_as_python_refuses_it():
    with pytest.raises(TypeError, match="unexpected keyword argument 'lowwater'"):
        ctxlab.build_context(record(2), BUDGET, lowwater=0.5)
    with pytest.raises(TypeError, match="takes a ctxlab.MemoryPolicy .* got int"):
        ctxlab.build_context(record(2), 8_000)


def test_the_assembler_follows_its_policy():
    policy = ctxlab.MemoryPolicy(BUDGET, keep_recent=2, pin_tool=None, small_talk_tokens=40, low_water=0.8)
    assembler = ctxlab.Assembler(policy, tools=TOOLS)
    assert assembler.policy is policy and assembler.budget is BUDGET
    assert (assembler.keep_recent, assembler.pin_tool, assembler.small_talk_tokens, assembler.low_water) == (
        2, None, 40, 0.8)
    assert assembler.compression == policy.compression


def test_the_lesson_policy_assemble_makes_its_policy_per_budget():
    assemble = ctxlab.Assemble(ctxlab.OfflineSummariser(), low_water=0.5, keep_full_for=3)
    assemble(record(9), lap=9, budget=BUDGET, tools=TOOLS)
    assert assemble._assembler.policy == ctxlab.MemoryPolicy(
        BUDGET, client=assemble.client, low_water=0.5, keep_full_for=3, pin_user_messages=True)


def test_on_summary_error_trim_lets_the_run_go_on_when_the_summariser_fails():
    """The default stays strict (SummaryError); with "trim", the lap is trimmed without a summary,
    the log says why, and nothing cut is lost (it is in ``dropped``)."""
    import ctxlab.course

    history = ctxlab.course.load_transcript("research")[:61]
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600)

    def failing():
        return ctxlab.course.ScriptedClient([TimeoutError("stalled")] * 3)

    with pytest.raises(ctxlab.SummaryError, match="timeout"):
        ctxlab.build_context(history, policy=ctxlab.MemoryPolicy(budget, client=failing()))
    log = ctxlab.MemoryLog()
    policy = ctxlab.MemoryPolicy(budget, client=failing(), on_summary_error="trim")
    context = ctxlab.build_context(history, policy=policy, log=log)
    (trim,) = [event for event in log if event.kind == "trim"]
    assert "the summariser failed (timeout after 3 attempt(s))" in trim.detail and "on_summary_error='trim'" in trim.detail
    assert not any(ctxlab.is_summary(m) for m in context.messages)
    assert context.dropped and ctxlab.pairs_ok(context.messages)
    assert ctxlab.count_messages(context.messages) <= budget.input_limit
    with pytest.raises(ctxlab.CtxlabError, match="on_summary_error must be 'raise' or 'trim', got 'skip'"):
        ctxlab.MemoryPolicy(budget, on_summary_error="skip")
