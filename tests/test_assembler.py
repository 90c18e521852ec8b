"""The Assembler over long runs: the same prompts as build_context, every lap in budget, a
bounded summary, the pinned list verbatim, and the compaction trap it defends against."""

from __future__ import annotations

import copy
import functools
import gc
import json
import weakref

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.course.transcripts import repeat_laps
from ctxlab.scratchpad import is_scratchpad_message
from ctxlab.summarising import is_summary

CONSTRAINT = "published in 2021 or later"
BUDGET = ctxlab.ContextBudget(window=32_000, reserve_output=4_000, scratchpad_max=1_000, summary_max=2_000)


@functools.cache
def long_run(laps: int) -> tuple[dict, ...]:
    """The research transcript's laps repeated with fresh ids, its constraint marked pinned."""
    run = repeat_laps(ctxlab.course.load_transcript("research"), laps)
    at = next(i for i, m in enumerate(run) if CONSTRAINT in (m.get("content") or ""))
    run[at] = {**run[at], "pinned": True}
    return tuple(run)


def pad():
    return ctxlab.Scratchpad(goal="Brief the board on heat pumps for cold climates")


COUNTER = ctxlab.TokenCounter()  # the same counts as count_messages, each distinct message encoded once
TOOL_TOKENS = ctxlab.count_tools(ctxlab.course.load_tools("research"))


def check_lap(context, record, budget, scratchpad):
    messages = context.messages
    assert context.tokens <= budget.input_limit
    assert context.tokens == COUNTER.messages(messages) + TOOL_TOKENS
    assert ctxlab.pairs_ok(messages)
    summaries = [m for m in messages if is_summary(m)]
    assert len(summaries) <= 1
    if summaries:
        assert COUNTER.message(summaries[0]) <= budget.summary_cap
        assert context.allocation.summary == COUNTER.message(summaries[0])
    assert messages[-1] == scratchpad.message(max_tokens=budget.scratchpad_max)
    assert messages[-2] == ctxlab.course.strip_course_keys([record[-1]])[0]  # the newest message, last
    task = next(m for m in record if m["role"] == "user")
    pinned = [m for m in record if m.get("pinned")]
    for message in [task, *pinned]:  # the pinned list, verbatim, on every lap
        assert ctxlab.course.strip_course_keys([message])[0] in messages
    assert not any(is_scratchpad_message(m) for m in messages[:-1])


def test_a_thousand_laps_each_in_budget_with_a_bounded_summary():
    run = long_run(1_000)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser()),
                                 tools=ctxlab.course.load_tools("research"))
    scratchpad = pad()
    summaries = 0
    for index in ctxlab.model_calls(run):
        context = assembler.context(run[:index], scratchpad=scratchpad, step=run[index]["step"])
        check_lap(context, run[:index], BUDGET, scratchpad)
        summaries += context.summary is not None
    assert assembler.log.count("summarise") >= 20  # it really compacted, many times
    assert run[ctxlab.model_calls(run)[-1]]["step"] == 1_000 and summaries > 900


def test_the_assembler_gives_what_build_context_gives():
    run = long_run(150)
    tools = ctxlab.course.load_tools("research")
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600, summary_max=600)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()), tools=tools)
    state, counter = ctxlab.assembly.AssemblyState(), ctxlab.TokenCounter()
    seen = 0
    for index in ctxlab.model_calls(run):
        step = run[index]["step"]
        ours = assembler.context(run[:index], scratchpad=pad(), step=step)
        want = ctxlab.build_context(run[:index], ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()),
                                    tools=tools, scratchpad=pad(), state=state, count=counter.message,
                                    step=step)
        state = want.state
        assert (ours.messages, ours.tokens, ours.state, ours.allocation) == (
            want.messages, want.tokens, want.state, want.allocation), f"lap {step}"
        assert ours.dropped == want.dropped
        assert list(assembler.log)[seen:] == list(want.log), f"lap {step}: the log differs"
        seen = len(assembler.log)


def _same_laps(run, budget, *, laps, steps=None, **options):
    """Assembler and build_context with the state carried, lap after lap: the same prompts,
    tokens, state, allocation, dropped messages and log events on every lap. Returns the last
    lap's prompt (``None`` when a lap cannot fit)."""
    tools = ctxlab.course.load_tools("research")
    client = options.pop("client", None)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=client, **options), tools=tools)
    state, counter, seen, last = ctxlab.assembly.AssemblyState(), ctxlab.TokenCounter(), 0, None
    for lap, index in enumerate(ctxlab.model_calls(run)[:laps]):
        step = None if steps is None else steps[lap % len(steps)]
        try:
            want = ctxlab.build_context(run[:index], ctxlab.MemoryPolicy(budget, client=client, **options),
                                        tools=tools, scratchpad=pad(), state=state, count=counter.message,
                                        step=step)
        except ctxlab.BudgetError:
            with pytest.raises(ctxlab.BudgetError):
                assembler.context(run[:index], scratchpad=pad(), step=step)
            return None
        ours = assembler.context(run[:index], scratchpad=pad(), step=step)
        last = copy.deepcopy(ours.messages)  # the prompt before the caller changes it below
        state = want.state
        assert (ours.messages, ours.tokens, ours.state, ours.allocation, ours.dropped) == (
            want.messages, want.tokens, want.state, want.allocation, want.dropped), f"lap {lap}"
        assert list(assembler.log)[seen:] == list(want.log), f"lap {lap}: the log differs"
        seen = len(assembler.log)
        ours.messages[0]["content"] = "changed by the caller"  # the next lap must not see it
        for message in ours.messages:
            for call in message.get("tool_calls") or []:
                call["function"]["name"] = "changed"
            if message.get("tool_calls"):
                message["tool_calls"].append({"id": "x"})
    return last


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    window=st.integers(6_000, 20_000),
    summary_max=st.sampled_from([None, 300, 800]),
    keep_full_for=st.integers(0, 4),
    keep_recent=st.integers(1, 3),
    low_water=st.sampled_from([0.5, 0.6, 1.0]),
    pin_user_messages=st.booleans(),
    pins=st.sets(st.integers(0, 120), max_size=4),
    summarise=st.booleans(),
    steps=st.one_of(st.none(), st.lists(st.integers(0, 40), min_size=1, max_size=5)),
)
def test_the_assembler_gives_what_build_context_gives_whatever_the_options(
        window, summary_max, keep_full_for, keep_recent, low_water, pin_user_messages, pins, summarise, steps):
    run = [dict(m) for m in long_run(40)]
    for at in pins:  # pinned messages anywhere, tool results and assistant calls included
        if at < len(run) and run[at]["role"] != "system":
            run[at]["pinned"] = True
    budget = ctxlab.ContextBudget(window=window, reserve_output=1_500, scratchpad_max=400, summary_max=summary_max)
    _same_laps(run, budget, laps=60, steps=steps, keep_full_for=keep_full_for, keep_recent=keep_recent,
               low_water=low_water, pin_user_messages=pin_user_messages,
               client=ctxlab.OfflineSummariser() if summarise else None)


def test_the_assembler_gives_what_build_context_gives_with_references(tmp_path):
    store = ctxlab.TrajectoryStore(tmp_path / "run")
    budget = ctxlab.ContextBudget(window=14_000, reserve_output=2_000, scratchpad_max=600, summary_max=600)
    _same_laps(list(long_run(40)), budget, laps=80, keep_full_for=1, compress_after=3, store=store,
               client=ctxlab.OfflineSummariser())


# --- pins recorded by a call ---------------------------------------------------------------------


PIN_VARIANTS = {  # how each pin-call group is made: pin_call_group's options
    "alone": {},
    "parallel": {"siblings": 2},
    "unpinned": {"pinned": False},
    "unpinned parallel": {"siblings": 1, "pinned": False},
    "custom": {"name": "remember"},
}


def pin_call_group(text, *, call_id, step, name=ctxlab.pins.PIN_TOOL, siblings=0, pinned=None):
    """An assistant message calling the pin tool ``name`` (among ``siblings`` other calls) and
    its results, each long enough to be compressed by age unless the group is pinned."""
    arguments = json.dumps({"text": text, "kind": "constraint"})
    calls = [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]
    calls += [{"id": f"{call_id}_s{k}", "type": "function", "function": {"name": "search", "arguments": "{}"}}
              for k in range(siblings)]
    calls.insert(siblings // 2, calls.pop(0))  # the pin call among its siblings
    caller = {"role": "assistant", "content": None, "tool_calls": calls, "step": step}
    if pinned is not None:
        caller["pinned"] = pinned
    results = [{"role": "tool", "tool_call_id": c["id"], "step": step,
                "content": f"Pinned: {text} " + "(kept word for word) " * 80 if c["id"] == call_id else "result " * 300}
               for c in calls]
    return [caller, *results]


def with_pin_calls(run, variants):
    """``run`` with a pin-call group before each model call named in ``variants`` (model-call
    number -> a key of PIN_VARIANTS), at that call's lap; returns the run and the groups."""
    run = [dict(m) for m in run]
    calls = ctxlab.model_calls(run)
    groups = {}
    for number in sorted(variants, reverse=True):
        at = calls[number]
        group = pin_call_group(f"Constraint {number}: cite nothing before 2015.", call_id=f"pin_{number}",
                               step=run[at]["step"], **PIN_VARIANTS[variants[number]])
        run[at:at] = group
        groups[number] = group
    return run, groups


def _pinned_by(group, pin_tool):
    caller = group[0]
    return caller.get("pinned") is not False and any(c["function"]["name"] == pin_tool for c in caller["tool_calls"])


def _verbatim(group, prompt):
    needle = ctxlab.course.strip_course_keys(group)
    return any(prompt[i:i + len(needle)] == needle for i in range(len(prompt) - len(needle) + 1))


@pytest.mark.parametrize("pin_tool", [ctxlab.pins.PIN_TOOL, "remember", None])
def test_the_assembler_keeps_pin_calls_like_build_context(pin_tool):
    """Pin calls alone, among parallel calls, marked "pinned": False, and of another tool's
    name: the same prompts, state and events as build_context on every lap of a long run, and
    the groups pin_tool pins are in the last prompt word for word, their results uncompressed."""
    variants = {2: "alone", 6: "parallel", 10: "unpinned", 14: "unpinned parallel", 18: "custom"}
    run, groups = with_pin_calls(long_run(60), variants)
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600, summary_max=600)
    last = _same_laps(run, budget, laps=200, keep_full_for=1, client=ctxlab.OfflineSummariser(), pin_tool=pin_tool)
    assert last is not None
    kept = {number: _verbatim(group, last) for number, group in groups.items()}
    assert kept == {number: _pinned_by(group, pin_tool) for number, group in groups.items()}


def test_the_assemble_policy_passes_its_pin_tool_on():
    run, groups = with_pin_calls(long_run(40), {3: "alone", 8: "custom"})
    budget = ctxlab.ContextBudget(window=10_000, reserve_output=2_000, scratchpad_max=600, summary_max=600)
    for pin_tool in (ctxlab.pins.PIN_TOOL, "remember", None):
        policy = ctxlab.Assemble(ctxlab.OfflineSummariser(), pin_tool=pin_tool, keep_full_for=1)
        for index in ctxlab.model_calls(run):
            prompt = policy(run[:index], lap=run[index]["step"], budget=budget)
        assert policy.log.count("summarise") >= 1
        assert {n: _verbatim(g, prompt) for n, g in groups.items()} == {n: _pinned_by(g, pin_tool) for n, g in groups.items()}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variants=st.dictionaries(st.integers(0, 39), st.sampled_from(sorted(PIN_VARIANTS)), max_size=5),
    pin_tool=st.sampled_from([ctxlab.pins.PIN_TOOL, "remember", None]),
    window=st.integers(6_000, 16_000),
    keep_full_for=st.integers(0, 3),
    keep_recent=st.integers(1, 3),
    low_water=st.sampled_from([0.5, 0.6, 1.0]),
    summarise=st.booleans(),
    steps=st.one_of(st.none(), st.lists(st.integers(0, 40), min_size=1, max_size=4)),
)
def test_the_assembler_keeps_pin_calls_like_build_context_on_random_runs(
        variants, pin_tool, window, keep_full_for, keep_recent, low_water, summarise, steps):
    run, _groups = with_pin_calls(long_run(40), variants)
    budget = ctxlab.ContextBudget(window=window, reserve_output=1_500, scratchpad_max=400, summary_max=400)
    _same_laps(run, budget, laps=60, steps=steps, keep_full_for=keep_full_for, keep_recent=keep_recent,
               low_water=low_water, pin_tool=pin_tool, client=ctxlab.OfflineSummariser() if summarise else None)


def test_without_room_for_a_summary_it_trims_and_says_so():
    history = list(long_run(30))[: ctxlab.model_calls(long_run(30))[-1]]
    big = {**history[-1], "content": history[-1]["content"] * 8} if history[-1]["role"] == "tool" else history[-1]
    history[-1] = big
    need = ctxlab.count_message(big) + sum(ctxlab.count_message(m) for m in history if m.get("pinned") or m is history[1])
    budget = ctxlab.ContextBudget(window=need + 1_400, reserve_output=500, scratchpad_max=300, summary_max=1_000)
    context = ctxlab.build_context(history,
                                   ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser(),
                                                       keep_full_for=99), tools=None)
    assert context.tokens <= budget.input_limit
    (trim,) = context.log.filter("trim")
    assert "no room for a summary" in trim.detail
    assert not any(is_summary(m) for m in context.messages)


def test_errors_never_report_a_negative_allowance():
    history = list(long_run(12))[: ctxlab.model_calls(long_run(12))[-1]]
    for window in range(1_000, 6_000, 250):
        budget = ctxlab.ContextBudget(window=window, reserve_output=300, scratchpad_max=200, summary_max=400)
        try:
            ctxlab.build_context(history,
                                 ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser(), keep_full_for=0,
                                                     max_chars=100))
        except ctxlab.BudgetError as err:
            assert err.available is None or err.available >= 0, str(err)
            assert "= -" not in str(err) or "nothing left for history" in str(err)


def test_the_compaction_trap_and_the_pinned_list_measured_in_replay():
    research = ctxlab.course.load_transcript("research")
    at = next(i for i, m in enumerate(research) if CONSTRAINT in (m.get("content") or ""))
    pinned = [*research[:at], {**research[at], "pinned": True}, *research[at + 1:]]
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=800, summary_max=150)
    probes = ctxlab.course.transcript_info("research")["probes"]
    kept = {}
    for name, record in (("in the summary only", research), ("pinned", pinned)):
        policy = ctxlab.Assemble(ctxlab.OfflineSummariser(), pin_user_messages=False)
        result = ctxlab.replay(record, policy, budget=budget, tools=ctxlab.course.load_tools("research"), probes=probes)
        assert result.log.count("summarise") >= 1
        kept[name] = result.survived()["constraint"]
    assert kept == {"in the summary only": False, "pinned": True}


def test_a_record_that_does_not_continue_is_refused():
    run = long_run(10)
    end = ctxlab.model_calls(run)[6]
    assembler = ctxlab.Assembler(BUDGET)
    assembler.context(list(run[:end]))
    with pytest.raises(ValueError, match="does not continue"):
        assembler.context(list(run[:10]))
    with pytest.raises(ctxlab.MessageError, match=f"message {end}: tool result"):
        assembler.extend([{"role": "tool", "tool_call_id": "nope", "content": "x"}])
    assert len(assembler) == end
    with pytest.raises(ctxlab.MessageError, match="holds a summary message"):
        assembler.append(ctxlab.summary_message("FACTS:\n- x"))
    assembler.append(run[end])  # calls still waiting for their results: no prompt yet
    if run[end].get("tool_calls"):
        with pytest.raises(ctxlab.MessageError, match="never answered"):
            assembler.build()


def test_a_scratchpad_changed_between_laps_is_rendered_again():
    """The scratchpad's message is reused while its fields stay the same: edits in place
    (a new fact, a done step, a failure), a field replaced, and a pad that sheds lines all give
    build_context's prompt and its scratchpad event."""
    run = list(long_run(30))
    tools = ctxlab.course.load_tools("research")
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=120, summary_max=600)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()), tools=tools)
    state, counter, seen = ctxlab.assembly.AssemblyState(), ctxlab.TokenCounter(), 0
    scratchpad = pad()
    for lap, index in enumerate(ctxlab.model_calls(run)[:40]):
        if lap % 3 == 1:
            scratchpad.done.append(f"read source {lap}")
        if lap % 5 == 2:
            scratchpad.facts[f"fact {lap}"] = "COP 2.1 at -15 C"
        if lap == 20:
            scratchpad.remaining = ["write the brief"]
        if lap == 25:
            scratchpad.failed["fetch_pdf {}"] = "http_403"
        want = ctxlab.build_context(run[:index], ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()),
                                    tools=tools, scratchpad=scratchpad, state=state, count=counter.message)
        ours = assembler.context(run[:index], scratchpad=scratchpad)
        state = want.state
        assert ours.messages == want.messages and ours.tokens == want.tokens, f"lap {lap}"
        assert list(assembler.log)[seen:] == list(want.log), f"lap {lap}: the log differs"
        seen = len(assembler.log)
        ours.messages[-1]["content"] = "changed by the caller"  # the next lap must not see it
    assert assembler.log.count("scratchpad") > 10  # it shed lines, lap after lap


def test_pad_keys_tell_apart_what_renders_differently():
    from ctxlab.assembler import _pad_key

    base = ctxlab.Scratchpad(goal="g", facts={"a": "b"}, done=["x"])
    assert _pad_key(base) == _pad_key(ctxlab.Scratchpad(goal="g", facts={"a": "b"}, done=["x"]))
    others = [
        ctxlab.Scratchpad(goal="g", facts={"a": "b"}, remaining=["x"]),
        ctxlab.Scratchpad(goal="g", failed={"a": "b"}, done=["x"]),
        ctxlab.Scratchpad(goal="g", facts={"a": "b", "x": ""}),
        ctxlab.Scratchpad(goal="g ", facts={"a": "b"}, done=["x"]),
    ]
    assert all(_pad_key(other) != _pad_key(base) for other in others)
    assert _pad_key(ctxlab.Scratchpad(goal="g", done=[["a list"]])) is None  # may change in place: no reuse

    class Loud(ctxlab.Scratchpad):
        pass

    assert _pad_key(Loud(goal="g")) is None


_parts = st.one_of(st.text(max_size=5), st.integers(), st.none())
_calls = st.lists(st.one_of(
    st.fixed_dictionaries({"id": st.text(max_size=4), "type": st.just("function"),
                           "function": st.fixed_dictionaries({"name": st.text(max_size=4), "arguments": st.text(max_size=6)})}),
    st.fixed_dictionaries({"id": st.text(max_size=4), "type": st.just("custom"),
                           "custom": st.fixed_dictionaries({"name": st.text(max_size=4), "input": st.text(max_size=6)})}),
    st.dictionaries(st.sampled_from(["id", "function", "custom"]), _parts, max_size=2),
    _parts,
), max_size=3)


@settings(max_examples=200, deadline=None)
@given(calls=st.one_of(st.none(), _calls),
       content=st.one_of(st.text(max_size=5), st.none(),
                         st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}),
                                            _parts), max_size=3)))
def test_a_copy_shares_nothing_the_caller_can_change(calls, content):
    from ctxlab.assembler import _copy

    message = {"role": "assistant", "content": content}
    if calls is not None:
        message["tool_calls"] = calls
    copy = _copy(message)
    assert copy == message and copy is not message

    def containers(value, path=()):
        if isinstance(value, (dict, list)):
            yield path, value
            for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
                yield from containers(item, (*path, key))

    mine = dict(containers(copy))
    for path, original in containers(message):
        assert mine[path] is not original, f"{path} is shared with the cache"


@pytest.mark.parametrize("client", [None, "offline"])
def test_a_dropped_assembler_is_freed_at_once_not_by_the_garbage_collector(client):
    """Nothing in an assembler refers back to it, so dropping it frees its record, counts and
    caches then: a cycle would leave them to a full collection, which frees them all during
    some later, unrelated call (about 200 ms for a 10,000-message run)."""
    run = long_run(120)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(BUDGET,
                                                     client=ctxlab.OfflineSummariser() if client else None),
                                 tools=ctxlab.course.load_tools("research"))
    for i in ctxlab.model_calls(run):  # fast laps from the kept window, and laps that cut
        context = assembler.context(run[:i], scratchpad=pad(), step=run[i]["step"])
    assert assembler.log.count("trim" if client is None else "summarise")
    gone = weakref.ref(assembler)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del assembler, context
        assert gone() is None, "the assembler outlived its last reference: something in it refers back to it"
    finally:
        if collecting:
            gc.enable()


def test_compress_events_of_two_laps_share_no_entries():
    """The compress event's entries are made once per change and copied each lap: an entry
    changed by a reader of one lap's event is not the next lap's."""
    run = long_run(40)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser()),
                                 tools=ctxlab.course.load_tools("research"))
    calls = ctxlab.model_calls(run)
    assembler.context(run[:calls[30]], scratchpad=pad())
    (first,) = [e for e in assembler.log if e.kind == "compress"][-1:]
    first.data["changes"][0]["age"] = -1
    first.data["changes"].clear()
    assembler.context(run[:calls[31]], scratchpad=pad())
    second = [e for e in assembler.log if e.kind == "compress"][-1]
    assert second is not first and second.data["changes"] and all(c["age"] >= 0 for c in second.data["changes"])


def test_a_lap_that_does_not_cut_lists_the_dropped_messages_without_copying_the_record():
    run = long_run(150)
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600, summary_max=600)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()),
                                 tools=ctxlab.course.load_tools("research"))
    views = 0
    for index in ctxlab.model_calls(run):
        context = assembler.context(run[:index], scratchpad=pad(), step=run[index]["step"])
        dropped = context.dropped
        if isinstance(dropped, ctxlab.history.MessageRuns):  # a lap that did not cut: a view of the record
            views += 1
            assert not hasattr(dropped, "append") and not hasattr(dropped, "__setitem__")
            where = {id(m): i for i, m in enumerate(run[:index])}
            positions = [where[id(m)] for m in dropped]  # the record's own messages
            assert positions == sorted(set(positions))  # in order, each once
    assert views > 50  # most laps do not cut
    record_before = list(dropped)
    assembler.extend(run[len(assembler):])  # the record grows to the end of the run
    assembler.build(scratchpad=pad())
    assert list(dropped) == record_before  # a view handed out earlier does not change


def _vandalise(value):
    """Change every container inside ``value`` in place: each dict gets a new key and its string
    values are replaced, each list gets an item appended."""
    if isinstance(value, dict):
        for key, item in list(value.items()):
            _vandalise(item)
            if isinstance(item, str):
                value[key] = "changed by the caller"
        value["added_by_the_caller"] = "x"
    elif isinstance(value, list):
        for item in value:
            _vandalise(item)
        value.append({"type": "text", "text": "appended by the caller"})


def _with_parts_and_parallel_calls(run):
    """``run`` with list contents (text parts) on its assistant texts and user messages, and a
    second call beside each first call of the first laps: every shape a prompt copy handles."""
    out, extra = [], {}
    for message in run:
        message = copy.deepcopy(message)
        if message["role"] in ("user", "assistant") and isinstance(message.get("content"), str):
            message["content"] = [{"type": "text", "text": message["content"]}]
        if message.get("tool_calls") and message.get("step", 0) <= 12:
            first = message["tool_calls"][0]
            twin = {**first, "id": first["id"] + "_twin", "function": dict(first["function"])}
            message["tool_calls"].append(twin)
            extra[first["id"]] = twin["id"]
        out.append(message)
        if message["role"] == "tool" and message["tool_call_id"] in extra:
            out.append({**message, "tool_call_id": extra[message["tool_call_id"]], "content": "the twin's result"})
    return out


def test_editing_every_part_of_a_prompt_never_reaches_a_later_lap_or_the_record():
    """The caller owns the prompt: every message, its tool calls, each call and its function,
    list contents and their parts. Changing all of them after each lap leaves the next laps'
    prompts equal to build_context's, and the record and the log's messages as they were."""
    run = _with_parts_and_parallel_calls(long_run(60))
    pristine = copy.deepcopy(run)
    tools = ctxlab.course.load_tools("research")
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600, summary_max=600)
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()), tools=tools)
    state, counter, seen = ctxlab.assembly.AssemblyState(), ctxlab.TokenCounter(), 0
    for lap, index in enumerate(ctxlab.model_calls(run)):
        want = ctxlab.build_context(pristine[:index],
                                    ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()), tools=tools,
                                    scratchpad=pad(), state=state, count=counter.message)
        ours = assembler.context(run[:index], scratchpad=pad())
        state = want.state
        assert ours.messages == want.messages and ours.tokens == want.tokens, f"lap {lap}"
        assert [(e.kind, e.data) for e in list(assembler.log)[seen:]] == [(e.kind, e.data) for e in want.log]
        seen = len(assembler.log)
        _vandalise(ours.messages)
    assert run == pristine
    assert all("changed by the caller" not in json.dumps(m) for m in assembler.log.messages())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "Z", "é", "9", "12", "'s", "'", ".", ",", "/", "(", "[", "{", "\"", "-",
                                 " ", "  ", "\t", "\n", "\n\n", "\r", "\r\n", "\u00a0", "\u2028", "\x1c", "中", "😀"]),
                max_size=40).map("".join))
def test_a_line_start_is_a_clean_cut_for_cl100k(text):
    """What lets the Assembler count a compressed result from the pieces of the full one:
    cl100k_base encodes a text cut at a line start (ctxlab.tokens._line_start) into its two
    parts' tokens."""
    from ctxlab.tokens import _line_start

    encode = ctxlab.encoding().encode_ordinary
    whole = len(encode(text))
    for at in range(len(text) + 1):
        if _line_start(text, at):
            assert len(encode(text[:at])) + len(encode(text[at:])) == whole, at


def test_a_compressed_result_is_counted_from_its_pieces_exactly():
    """A long text result is encoded in pieces when it arrives; its compressed view, counted
    from the pieces, has count_message's count, and so does every prompt."""
    text = "\n".join(f"line {k}: reading {k * 7 % 13} of the meter" + (" " if k % 5 else "") for k in range(120))
    run = [{"role": "system", "content": "You read meters."}, {"role": "user", "content": "Read them.", "step": 0}]
    for lap in range(1, 9):
        call = {"id": f"c{lap}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        run += [{"role": "assistant", "content": None, "tool_calls": [call], "step": lap},
                {"role": "tool", "tool_call_id": f"c{lap}", "content": f"  lap {lap}\n" + text, "step": lap}]
    run.append({"role": "assistant", "content": "Done.", "step": 9})
    assembler = ctxlab.Assembler(ctxlab.ContextBudget(window=60_000, reserve_output=1_000))
    kept = []
    for index in ctxlab.model_calls(run):
        context = assembler.context(run[:index], step=run[index]["step"])
        assert context.tokens == ctxlab.count_messages(context.messages)
        kept.append(sum(p is not None for p in assembler._pieces))
    assert kept[-1] == 2 == max(kept)  # each result came in pieces; those of the aged ones were used
    assert any("cut ...]" in (m.get("content") or "") for m in context.messages)


def test_a_message_given_where_a_list_is_wanted_is_refused_with_the_fix():
    message = {"role": "user", "content": "Fix bug #412."}
    for wrong in (message, "Fix bug #412.", 42):
        with pytest.raises(ctxlab.MessageError, match="expected a list of message dicts.*wrap a single message"):
            ctxlab.Assembler(BUDGET).extend(wrong)
        with pytest.raises(ctxlab.MessageError, match="expected a list of message dicts"):
            ctxlab.build_context(wrong, BUDGET)
