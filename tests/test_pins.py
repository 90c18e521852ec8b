"""The pinned list fed by a call on the record: a call of the pin tool is pinned like a marked message."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.course.transcripts import repeat_laps
from ctxlab.pins import is_pin_call

CONSTRAINT = "Do not cite any source published before 2015."


def pin_group(text, *, call_id="pin_1", step=None, kind="constraint", name=ctxlab.pins.PIN_TOOL, siblings=0, arguments=None):
    """An assistant message calling the pin tool (among ``siblings`` other calls), and its results."""
    args = arguments if arguments is not None else json.dumps({"text": text, "kind": kind})
    calls = [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}]
    calls += [{"id": f"{call_id}_s{k}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
              for k in range(siblings)]
    calls.insert(siblings // 2, calls.pop(0))  # the pin call in the middle of its siblings
    group = [{"role": "assistant", "content": None, "tool_calls": calls}]
    group += [{"role": "tool", "tool_call_id": c["id"], "content": "pinned" if c["id"] == call_id else "result " * 300}
              for c in calls]
    if step is not None:
        for message in group:
            message["step"] = step
    return group


def chatter(lap, words=40):
    return {"role": "assistant", "content": f"lap {lap}: " + "still looking " * words, "step": lap}


def contiguous(needle, haystack):
    return any(haystack[i:i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


TASK = [{"role": "system", "content": "You research."}, {"role": "user", "content": "Brief me.", "step": 0}]


# --- the rule -------------------------------------------------------------------------------------


def test_the_schema_can_be_offered_and_names_the_tool():
    schema = ctxlab.pins.pin_tool_schema()
    assert schema["type"] == "function" and schema["function"]["name"] == ctxlab.pins.PIN_TOOL == "pin"
    assert schema["function"]["parameters"]["properties"]["kind"]["enum"] == list(ctxlab.pins.PIN_KINDS)
    assert ctxlab.count_tools([schema]) > 0
    assert ctxlab.pins.pin_tool_schema("remember")["function"]["name"] == "remember"
    with pytest.raises(ValueError, match="non-empty string"):
        ctxlab.pins.pin_tool_schema("")


def test_a_pin_call_is_pinned_like_a_marked_message():
    history = [*TASK, chatter(1), *pin_group(CONSTRAINT), chatter(2)]
    assert ctxlab.trimming.pinned_indices(history) == {0, 1, 3}
    marked = [*TASK, chatter(1), {**history[3], "pinned": True}, *history[4:]]
    assert ctxlab.trimming.pinned_indices(marked) == ctxlab.trimming.pinned_indices(history)


def test_the_pin_tool_name_is_configurable_and_can_be_turned_off():
    history = [*TASK, *pin_group(CONSTRAINT, name="remember")]
    assert 2 not in ctxlab.trimming.pinned_indices(history)
    assert 2 in ctxlab.trimming.pinned_indices(history, pin_tool="remember")
    assert 2 not in ctxlab.trimming.pinned_indices([*TASK, *pin_group(CONSTRAINT)], pin_tool=None)


def test_pinned_false_takes_a_pin_call_out_of_the_pinned_list():
    group = pin_group(CONSTRAINT)
    history = [*TASK, {**group[0], "pinned": False}, group[1]]
    assert ctxlab.trimming.pinned_indices(history) == {0, 1}
    assert ctxlab.pins.pinned_items(history) == []


def test_fit_keeps_the_pin_call_with_its_result_and_drops_the_middle():
    group = pin_group(CONSTRAINT)
    history = [*TASK, chatter(1), *group, *[chatter(lap) for lap in range(2, 30)]]
    kept, dropped = ctxlab.fit(history, 300)
    assert contiguous(group, kept) and dropped
    assert all(m is not g for m in dropped for g in group)


def test_a_pin_call_among_parallel_calls_pins_the_whole_group():
    group = pin_group(CONSTRAINT, siblings=2)
    assert [c["function"]["name"] for c in group[0]["tool_calls"]] == ["search", "pin", "search"]
    history = [*TASK, *group, *[chatter(lap) for lap in range(2, 30)]]
    kept, _ = ctxlab.fit(history, ctxlab.count_messages(group) + 400)
    assert contiguous(group, kept)


def test_growing_history_agrees_with_fit_on_pin_calls():
    history = [*TASK, chatter(1), *pin_group(CONSTRAINT, siblings=1), *[chatter(lap) for lap in range(2, 25)]]
    grown = ctxlab.history.GrowingHistory(history)
    for allowance in (900, 1_500, 3_000):
        kept, dropped = grown.fit(allowance)
        assert (list(kept), list(dropped)) == ctxlab.fit(history, allowance)
    other = [*TASK, *pin_group(CONSTRAINT, name="remember"), *[chatter(lap) for lap in range(2, 25)]]
    assert list(ctxlab.history.GrowingHistory(other, pin_tool="remember").fit(900)[0]) == ctxlab.fit(
        other, 900, pin_tool="remember")[0]


# --- the items ------------------------------------------------------------------------------------


def test_pinned_items_reads_the_pinned_list_in_order():
    history = [*TASK, {"role": "user", "content": "Reply in French.", "pinned": True, "step": 1},
               *pin_group("Ticket T-1042", kind="identifier", call_id="p2"),
               *pin_group(CONSTRAINT, kind=None, call_id="p3", arguments=json.dumps({"text": CONSTRAINT}))]
    items = ctxlab.pins.pinned_items(history)
    assert [(p.text, p.kind, p.index, p.call_id) for p in items] == [
        ("Reply in French.", None, 2, None), ("Ticket T-1042", "identifier", 3, "p2"), (CONSTRAINT, None, 5, "p3")]
    assert [p.line() for p in items][1] == "[identifier] Ticket T-1042"


def test_a_prompts_summary_is_not_an_item():
    summary = ctxlab.summary_message("FACTS:\n- none")
    assert ctxlab.pins.pinned_items([*TASK, summary]) == []


@pytest.mark.parametrize("arguments, problem", [
    ("{not json", "not JSON"),
    ('{"kind": "constraint"}', "no 'text'"),
    ('["a list"]', "no 'text'"),
    ('{"text": "x", "kind": "wish"}', "kind 'wish'"),
])
def test_a_malformed_pin_call_is_still_kept_and_pinned_items_names_it(arguments, problem):
    history = [*TASK, chatter(1), *pin_group("", arguments=arguments, call_id="bad"), chatter(2)]
    ctxlab.validate_messages(history)  # the API accepts it, and so does ctxlab
    assert 3 in ctxlab.trimming.pinned_indices(history)
    with pytest.raises(ctxlab.MessageError, match=rf"message 3: pin call 'bad' .*{problem}.*\"pinned\": False") as err:
        ctxlab.pins.pinned_items(history)
    assert err.value.index == 3


# --- build_context ---------------------------------------------------------------------------------


def test_build_context_copies_an_old_pin_call_into_the_pinned_head_verbatim():
    group = pin_group(CONSTRAINT, step=1, siblings=1)
    history = [*TASK, *group, *[chatter(lap, 60) for lap in range(2, 40)]]
    budget = ctxlab.ContextBudget(window=3_000, reserve_output=500)
    context = ctxlab.build_context(history, ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()))
    sent = ctxlab.course.strip_course_keys(group)
    assert context.summary is not None and context.messages[2:2 + len(sent)] == sent  # above the summary
    assert ctxlab.is_summary(context.messages[2 + len(sent)])
    assert context.allocation.pinned >= ctxlab.count_messages(sent) - 3  # the pinned list's line of the budget
    off = ctxlab.build_context(history,
                               ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser(), pin_tool=None))
    assert not contiguous(sent, off.messages)


def test_an_old_pin_calls_results_are_not_compressed():
    group = pin_group(CONSTRAINT, step=1, siblings=1)
    history = [*TASK, *group, *[chatter(lap, 5) for lap in range(2, 12)]]
    context = ctxlab.build_context(history, ctxlab.ContextBudget(window=16_000, reserve_output=500), step=11)
    assert contiguous(ctxlab.course.strip_course_keys(group), context.messages)


# --- the property: a pin call on a long random record survives, verbatim ---------------------------


@st.composite
def records_with_a_pin(draw):
    laps = draw(st.integers(30, 90))
    pin_lap = draw(st.integers(1, laps - 1))
    siblings = draw(st.integers(0, 2))
    record = [dict(m) for m in TASK]
    group: list[dict] = []
    for lap in range(1, laps + 1):
        if lap == pin_lap:
            group = pin_group(draw(st.text(min_size=1, max_size=60).filter(str.strip)), call_id=f"pin{lap}",
                              step=lap, siblings=siblings)
            record += group
        kind = draw(st.sampled_from(["say", "call", "user"]))
        size = draw(st.integers(1, 120))
        if kind == "say":
            record.append(chatter(lap, size))
        elif kind == "user":
            record.append({"role": "user", "content": "and " * size, "step": lap})
        else:
            call = {"id": f"c{lap}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
            record += [{"role": "assistant", "content": None, "tool_calls": [call], "step": lap},
                       {"role": "tool", "tool_call_id": f"c{lap}", "content": "row " * (size * 3), "step": lap}]
    return record, group, draw(st.floats(0.1, 1.0))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(records_with_a_pin())
def test_a_pin_call_survives_fit_and_build_context_verbatim(case):
    record, group, share = case
    total = ctxlab.count_messages(record)
    newest = ctxlab.trimming.turn_group_spans(record)[-1][0]
    floor = 2 * (ctxlab.count_messages(record[:2]) + ctxlab.count_messages(group)
                 + ctxlab.count_messages(record[newest:])) + 600
    allowance = max(floor, int(total * share))

    kept, dropped = ctxlab.fit(record, allowance)
    assert contiguous(group, kept) and not any(m is g for m in dropped for g in group)

    budget = ctxlab.ContextBudget(window=allowance + 400, reserve_output=200)
    sent = ctxlab.course.strip_course_keys(group)
    calls = ctxlab.model_calls(record)
    state = None
    for index in calls[::8] + [len(record)]:  # laps of the run, the state carried from one to the next
        context = ctxlab.build_context(record[:index],
                                       ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()),
                                       state=state)
        state = context.state
        if index > record.index(group[-1]):
            assert contiguous(sent, context.messages)
    plain = ctxlab.build_context(record, budget)
    assert contiguous(sent, plain.messages)


# --- the compaction trap, offline ------------------------------------------------------------------


def _runs():
    """A 40-lap research run with a constraint stated once at lap 3, and the same with it pinned."""
    run = repeat_laps(ctxlab.course.load_transcript("research"), 40)
    at = next(i for i, m in enumerate(run) if m.get("step") == 3 and m["role"] == "assistant")
    said = {"role": "user", "content": CONSTRAINT, "step": 3}
    return [*run[:at], said, *run[at:]], [*run[:at], said, *pin_group(CONSTRAINT, step=3), *run[at:]]


class Assembled:
    """``build_context`` lap after lap with its state, a summary capped by the budget."""

    name = "build_context"

    def __init__(self):
        self.log = ctxlab.MemoryLog()
        self.reset()

    def reset(self):
        self.state = None

    def __call__(self, history, *, lap, budget, tools=None):
        context = ctxlab.build_context(history, ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()),
                                       tools=tools, state=self.state, step=lap, log=self.log)
        self.state = context.state
        return context.messages


def test_the_compaction_trap_a_constraint_said_once_is_lost_and_survives_when_pinned():
    said, pinned = _runs()
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=600, summary_max=100)
    tools = ctxlab.course.load_tools("research")
    probes = {"constraint": CONSTRAINT}
    lost = ctxlab.replay(said, Assembled(), budget=budget, tools=tools, probes=probes)
    kept = ctxlab.replay(pinned, Assembled(), budget=budget, tools=tools, probes=probes)
    missing = [lap for lap, names in lost.missing_by_lap().items() if "constraint" in names]
    assert lost.survived() == {"constraint": False} and len(missing) >= 5  # summarised away, for good
    assert kept.survived() == {"constraint": True} and not any(kept.missing_by_lap().values())
    assert sum(r.compactions for r in kept.laps) >= 1  # the pinned run was compacted too
    assert max(r.tokens for r in kept.laps) <= budget.input_limit
    assert is_pin_call(pinned[[m.get("content") for m in pinned].index(CONSTRAINT) + 1])


def test_the_assembler_keeps_an_old_pin_call_like_build_context():
    group = pin_group(CONSTRAINT, step=1)
    history = [*TASK, *group, *[chatter(lap, 60) for lap in range(2, 40)]]
    budget = ctxlab.ContextBudget(window=3_000, reserve_output=500)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()))
    for index in ctxlab.model_calls(history)[::5] + [len(history)]:
        context = assembler.context(history[:index])
    assert contiguous(ctxlab.course.strip_course_keys(group), context.messages)
