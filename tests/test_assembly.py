"""build_context: static first, one roll-up summary, scratchpad last, in budget, every decision logged."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.assembly import AssemblyState, build_context
from ctxlab.compression import stub_reference
from ctxlab.events import MemoryLog
from ctxlab.scratchpad import is_scratchpad_message
from ctxlab.summarising import is_summary

BUDGET = ctxlab.ContextBudget(window=10_000, reserve_output=2_000, scratchpad_max=600)


def research_until(lap):
    """The research record before the model call of ``lap``."""
    research = ctxlab.course.load_transcript("research")
    index = next(i for i, m in enumerate(research) if m["role"] == "assistant" and m["step"] == lap)
    return research[:index]


def pad():
    return ctxlab.Scratchpad(goal="Brief the board on heat pumps", failed={'fetch_pdf {"url": "u"}': "http_403: paywall"})


def check_invariants(context, history, budget, tools=None, scratchpad=None):
    messages = context.messages
    assert messages[0]["role"] == "system" and messages[0]["content"] == history[0]["content"]
    if scratchpad is not None:
        assert messages[-1] == scratchpad.message(max_tokens=budget.scratchpad_max)
        assert sum(map(is_scratchpad_message, messages)) == 1
    assert ctxlab.pairs_ok(messages)
    ctxlab.validate_messages(messages)
    assert all(not (ctxlab.course.COURSE_KEYS & m.keys()) for m in messages)
    assert sum(map(is_summary, messages)) <= 1
    assert context.tokens == ctxlab.count_messages(messages) + ctxlab.count_tools(tools)
    assert context.tokens <= budget.input_limit
    assert context.allocation.free >= 0 and not context.allocation.over_budget


# --- shape ---------------------------------------------------------------------------------


def test_static_first_summary_once_scratchpad_last():
    history = research_until(30)
    tools = ctxlab.course.load_tools("research")
    context = build_context(history, ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser()),
                            tools=tools, scratchpad=pad())
    check_invariants(context, history, BUDGET, tools, pad())
    roles = [m["role"] for m in context.messages]
    summary_at = next(i for i, m in enumerate(context.messages) if is_summary(m))
    assert roles[:2] == ["system", "user"] and summary_at == 2  # the task is pinned above it, nothing else
    assert context.messages[1]["content"] == history[1]["content"]
    assert context.messages[-2] == ctxlab.course.strip_course_keys([history[-1]])[0]  # the newest message is kept
    assert context.summary and context.summary in context.messages[summary_at]["content"]
    assert "published in 2021 or later" in context.summary  # the unpinned constraint was folded in


def test_what_is_pinned_goes_above_the_summary_in_record_order():
    history = research_until(30)
    constraint = next(i for i, m in enumerate(history) if "published in 2021 or later" in (m.get("content") or ""))
    marked = [*history[:constraint], {**history[constraint], "pinned": True}, *history[constraint + 1:]]
    for record, options in ((marked, {}), (history, {"pin_user_messages": True})):
        context = build_context(record,
                                ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser(), **options),
                                scratchpad=pad())
        check_invariants(context, record, BUDGET, scratchpad=pad())
        roles = [m["role"] for m in context.messages]
        assert roles[:3] == ["system", "user", "user"] and is_summary(context.messages[3])
        assert "published in 2021 or later" in context.messages[2]["content"]
        assert context.allocation.pinned == sum(ctxlab.count_message(m) for m in record[1:constraint + 1]
                                               if m["role"] == "user")


def test_what_fits_is_sent_whole_except_old_results():
    history = research_until(4)
    context = build_context(history, BUDGET, scratchpad=pad())
    assert context.messages[:-1] == ctxlab.course.strip_course_keys(history)
    assert context.dropped == [] and context.state == AssemblyState()
    assert [e.kind for e in context.log] == ["assemble"]


def test_without_a_scratchpad_the_history_is_last():
    history = research_until(3)
    context = build_context(history, BUDGET)
    assert context.messages == ctxlab.course.strip_course_keys(history)


def test_old_results_are_compressed_and_can_be_stubbed_with_a_store():
    history = research_until(12)
    with ctxlab.TrajectoryStore(run="research") as store:
        store.extend(history)
        context = build_context(history,
                                ctxlab.MemoryPolicy(ctxlab.ContextBudget(window=64_000, reserve_output=2_000),
                                                    compress_after=4, store=store))
        refs = [stub_reference(m["content"]) for m in context.messages if m["role"] == "tool"]
        assert any(refs)
        for ref in filter(None, refs):
            assert store.resolve(ref) in history
        assert [e.kind for e in context.log] == ["compress", "assemble"]


# --- budget --------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [6_000, 9_000, 20_000])
def test_every_lap_fits_and_state_rolls_the_summary_up(window):
    research = ctxlab.course.load_transcript("research")
    tools = ctxlab.course.load_tools("research")
    budget = ctxlab.ContextBudget(window=window, reserve_output=1_500, scratchpad_max=500)
    state, log, summaries = AssemblyState(), MemoryLog(), []
    client = ctxlab.course.ScriptedClient(default="FACTS:\n- a short summary")
    for index in ctxlab.model_calls(research):
        history = research[:index]
        context = build_context(history, ctxlab.MemoryPolicy(budget, client=client), tools=tools,
                                scratchpad=pad(), state=state, step=research[index]["step"], log=log)
        check_invariants(context, history, budget, tools, pad())
        assert state.cut <= context.state.cut  # a cut never moves back
        state = context.state
        summaries.append(context.summary)
    calls = client.requests
    assert len(calls) == log.count("summarise")
    for request in calls[1:]:  # every later summary folds in the one before (roll up)
        assert "a short summary" in request["messages"][0]["content"]


def test_the_whole_prompt_never_exceeds_the_input_limit_even_with_large_pins():
    history = research_until(20)
    history[5] = {**history[5], "pinned": True}
    budget = ctxlab.ContextBudget(window=9_000, reserve_output=1_000, scratchpad_max=400)
    context = build_context(history, ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()),
                            scratchpad=pad())
    check_invariants(context, history, budget, scratchpad=pad())
    assert ctxlab.course.strip_course_keys([history[5]])[0] in context.messages


def test_a_budget_that_cannot_work_is_refused_with_the_numbers():
    history = research_until(10)
    with pytest.raises(ctxlab.BudgetError, match="nothing left for history"):
        build_context(history, ctxlab.ContextBudget(window=600, reserve_output=400, scratchpad_max=400), scratchpad=pad())
    with pytest.raises(ctxlab.BudgetError, match="allowance is"):
        build_context(history,
                      ctxlab.MemoryPolicy(ctxlab.ContextBudget(window=1_400, reserve_output=300, scratchpad_max=300),
                                          client=ctxlab.OfflineSummariser()), scratchpad=pad())
    with pytest.raises(ctxlab.BudgetError, match="never shed"):
        build_context(history, ctxlab.ContextBudget(window=9_000, reserve_output=300, scratchpad_max=10), scratchpad=pad())


def test_low_water_trims_less_often_than_trimming_every_lap():
    research = ctxlab.course.load_transcript("research")
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600)
    trims = {}
    for low_water in (0.5, 1.0):
        state, log = AssemblyState(), MemoryLog()
        for index in ctxlab.model_calls(research):
            context = build_context(research[:index],
                                    ctxlab.MemoryPolicy(budget, low_water=low_water, keep_full_for=99),
                                    state=state, log=log, step=research[index]["step"])
            state = context.state
        trims[low_water] = log.count("trim")
    assert 0 < trims[0.5] < trims[1.0]


# --- the log -------------------------------------------------------------------------------


def test_every_decision_is_logged_with_what_it_took_out():
    history = research_until(25)
    log = MemoryLog()
    context = build_context(history, ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser()),
                            scratchpad=pad(), log=log)
    assert context.log is log
    assert [e.kind for e in log] == ["compress", "summarise", "assemble"]
    compress, summarise, assemble = log
    assert all(m in history for m in compress.messages)  # the originals, in full
    assert list(summarise.messages) == context.dropped  # every message out of the prompt, in full
    assert summarise.tokens_after < summarise.tokens_before
    assert summarise.data["summary"] == context.summary
    assert assemble.tokens_after == context.tokens
    assert assemble.tokens_before == ctxlab.count_messages(history)


def test_without_a_client_dropped_groups_are_logged_as_a_trim():
    history = research_until(25)
    context = build_context(history, BUDGET, scratchpad=pad())
    (trim,) = context.log.filter("trim")
    assert list(trim.messages) == context.dropped and context.summary is None
    assert not any(is_summary(m) for m in context.messages)


def test_a_shed_scratchpad_is_logged():
    big = ctxlab.Scratchpad(goal="g", done=[f"read page {i} about heat pumps" for i in range(200)])
    context = build_context(research_until(2), BUDGET, scratchpad=big)
    (event,) = context.log.filter("scratchpad")
    assert event.tokens_after <= BUDGET.scratchpad_max < event.tokens_before


# --- bad input -----------------------------------------------------------------------------


def test_an_assembled_prompt_is_not_a_history():
    history = research_until(5)
    summary = ctxlab.summary_message("FACTS:\n- x")
    with pytest.raises(ctxlab.MessageError, match="holds a summary message"):
        build_context([*history[:2], summary, *history[2:]], BUDGET)
    with pytest.raises(ctxlab.MessageError, match="holds a scratchpad message"):
        build_context([*history, pad().message()], BUDGET)


def test_the_small_talk_stage_is_off_unless_asked_for():
    import inspect

    for where in (ctxlab.MemoryPolicy, ctxlab.Assemble):
        assert inspect.signature(where).parameters["small_talk_tokens"].default == 0, where
    record = [*research_until(3), {"role": "user", "content": "Do not touch the payments module.", "step": 3}]
    record += research_until(6)[len(record) - 1:]
    tight = ctxlab.ContextBudget(window=build_context(record, BUDGET).tokens + 2_000 - 3, reserve_output=2_000)
    default = build_context(record, ctxlab.MemoryPolicy(tight, client=ctxlab.OfflineSummariser()))
    assert not default.log.filter("small_talk") and default.log.filter("summarise")
    on = build_context(record,
                       ctxlab.MemoryPolicy(tight, client=ctxlab.OfflineSummariser(),
                                           small_talk_tokens=ctxlab.eviction.SMALL_TALK_MAX_TOKENS))
    assert [m["content"] for m in on.log.messages("small_talk")] == ["Do not touch the payments module."]


def test_a_state_from_another_history_is_refused():
    with pytest.raises(ValueError, match="belongs to another"):
        build_context(research_until(3), BUDGET, state=AssemblyState(cut=500))


@pytest.mark.parametrize("low_water", [0, 1.5, "half", True])
def test_low_water_must_be_a_fraction(low_water):
    with pytest.raises(ValueError, match="low_water"):
        build_context(research_until(3), ctxlab.MemoryPolicy(BUDGET, low_water=low_water))


# --- properties ----------------------------------------------------------------------------


def call(call_id):
    return {"id": call_id, "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": call_id})}}


@st.composite
def records(draw):
    """A random run: system, task, then laps of parallel calls, replies and user instructions."""
    history = [{"role": "system", "content": "You research. " * draw(st.integers(1, 30)), "step": 0},
               {"role": "user", "content": "The task. " * draw(st.integers(1, 20)), "step": 0}]
    for lap in range(1, draw(st.integers(1, 14)) + 1):
        kind = draw(st.sampled_from(["calls", "calls", "calls", "say", "user"]))
        if kind == "user":
            history.append({"role": "user", "content": "Only cite 2021 or later. " * draw(st.integers(1, 5)), "step": lap})
        elif kind == "say":
            history.append({"role": "assistant", "content": "Thinking. " * draw(st.integers(1, 40)), "step": lap})
        else:
            ids = [f"c{lap}_{k}" for k in range(draw(st.integers(1, 3)))]
            history.append({"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids], "step": lap,
                            "pinned": draw(st.booleans()) and draw(st.booleans())})
            for i in ids:
                history.append({"role": "tool", "tool_call_id": i, "step": lap,
                                "content": "result line\n" * draw(st.integers(1, 150))})
    return history


@settings(max_examples=120, deadline=None)
@given(history=records(), window=st.integers(800, 8_000), low_water=st.floats(0.3, 1.0),
       with_client=st.booleans(), keep_full_for=st.integers(0, 4))
def test_any_record_gives_a_valid_prompt_in_budget_or_a_budget_error(history, window, low_water, with_client, keep_full_for):
    budget = ctxlab.ContextBudget(window=window, reserve_output=200, scratchpad_max=150)
    scratchpad = ctxlab.Scratchpad(goal="Answer the task", done=["a", "b"])
    client = ctxlab.course.ScriptedClient(default="FACTS:\n- folded") if with_client else None
    try:
        context = build_context(history,
                                ctxlab.MemoryPolicy(budget, client=client, low_water=low_water,
                                                    keep_full_for=keep_full_for), scratchpad=scratchpad)
    except ctxlab.BudgetError:
        return
    check_invariants(context, history, budget, scratchpad=scratchpad)
    sent = context.messages
    first_user = next(m for m in history if m["role"] == "user")
    for message in history:  # pins are never dropped: system, the task, what is marked pinned
        if message["role"] == "system" or message is first_user or message.get("pinned"):
            assert ctxlab.course.strip_course_keys([message])[0] in sent
    newest_sent = [m for m in sent if not is_scratchpad_message(m)][-1]
    assert newest_sent == ctxlab.course.strip_course_keys([history[-1]])[0]  # the newest message is last
    if context.summary is not None and any(map(is_summary, sent)):
        assert ctxlab.count_message(next(m for m in sent if is_summary(m))) <= budget.summary_cap
    ids = {m.get("tool_call_id") for m in sent} | {c["id"] for m in sent for c in m.get("tool_calls") or []}
    newest = ctxlab.turn_groups(history)[-1]
    assert all(m.get("tool_call_id", None) in ids or m["role"] != "tool" for m in newest)
    assert len({id(m) for m in context.dropped}) == len(context.dropped)
    assert all(any(m is h for h in history) for m in context.dropped)
    from_history = len(sent) - 1 - sum(map(is_summary, sent))  # all but the scratchpad and summary
    assert from_history + len(context.dropped) == len(history)  # prompt and dropped partition the record


def test_build_context_is_an_assembler_run_once(monkeypatch):
    runs = []
    full = ctxlab.Assembler._full

    def counted(self, scratchpad, step):
        runs.append((len(self), self.state))
        return full(self, scratchpad, step)

    monkeypatch.setattr(ctxlab.Assembler, "_full", counted)
    history, state = research_until(30), AssemblyState()
    context = build_context(history, ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser()), state=state)
    assert runs == [(len(history), state)], "one Assembler, given the whole record and the state, built once"
    assert context.log.filter("summarise"), "the lap cuts: the pipeline's stages ran inside the Assembler"


def test_an_assembler_refuses_a_state_that_cannot_belong_to_its_record():
    history = research_until(5)
    groups = ctxlab.trimming.turn_group_spans(history[1:])
    inside = next(a + 1 for a, b in groups if b - a > 1)  # a cut between a call and its result
    for cut, words in ((500, "belongs to another"), (inside, "does not fall between turn groups")):
        assembler = ctxlab.Assembler(BUDGET)
        assembler.extend(history)
        assembler.state = AssemblyState(cut=cut)
        with pytest.raises(ValueError, match=words):
            assembler.build()
        with pytest.raises(ValueError, match=words):
            build_context(history, BUDGET, state=AssemblyState(cut=cut))
