"""fit, turn_groups and pairs_ok: worked examples and properties over random valid histories."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab.trimming import turn_group_spans


def call(call_id, name="search_logs"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({"id": call_id})}}


def tool_group(step, ids, size=10):
    return [{"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids], "step": step}] + [
        {"role": "tool", "tool_call_id": i, "content": "x " * size, "step": step} for i in ids
    ]


def incident_like(laps=12):
    history = [
        {"role": "system", "content": "You investigate incidents.", "step": 0},
        {"role": "user", "content": "Why did the export job fail?", "step": 0},
    ]
    for lap in range(1, laps + 1):
        history += tool_group(lap, [f"c{lap}"], size=200)
    history.append({"role": "assistant", "content": "Found it.", "step": laps + 1})
    return history


# --- worked examples -------------------------------------------------------------------------


def test_turn_groups_keep_parallel_calls_together():
    history = [{"role": "user", "content": "go"}, *tool_group(1, ["a", "b", "c"]), {"role": "assistant", "content": "done"}]
    assert [len(g) for g in ctxlab.turn_groups(history)] == [1, 4, 1]
    assert sum(ctxlab.turn_groups(history), []) == history


def test_pairs_ok_catches_what_naive_cuts_do():
    history = incident_like(4)
    assert ctxlab.pairs_ok(history)
    assert not ctxlab.pairs_ok(history[:2] + history[-4:])  # a cut by message count orphans a result
    assert not ctxlab.pairs_ok(history[:-2])  # ends with a call that is never answered
    assert ctxlab.pairs_ok([])


@pytest.mark.parametrize("results", [["a"], ["a", "a"], ["a", "b"]])
def test_pairs_ok_refuses_a_message_listing_one_call_id_twice(results):
    twice = {"role": "assistant", "content": None, "tool_calls": [call("a"), call("a")]}
    history = [{"role": "user", "content": "go"}, twice] + [
        {"role": "tool", "tool_call_id": i, "content": "done"} for i in results]
    assert not ctxlab.pairs_ok(history)
    with pytest.raises(ctxlab.MessageError):  # validation refuses the same message
        ctxlab.validate_messages(history)
    assert not ctxlab.pairs_ok(history + [{"role": "user", "content": "next"}])


def test_fit_keeps_pins_and_newest_and_drops_from_the_middle():
    history = incident_like(12)
    history[6]["pinned"] = True  # the assistant message of lap 3
    kept, dropped = ctxlab.fit(history, allowance=1_200)
    assert kept[:2] == history[:2]
    assert history[6] in kept and history[7] in kept  # the pinned call keeps its result
    assert kept[-1] is history[-1]
    assert ctxlab.pairs_ok(kept)
    assert sum(ctxlab.count_message(m) for m in kept) <= 1_200
    assert dropped and all(m["step"] < min(k["step"] for k in kept[4:]) for m in dropped)


def test_fit_returns_everything_when_it_fits():
    history = incident_like(2)
    kept, dropped = ctxlab.fit(history, allowance=10_000)
    assert kept == history and dropped == []


def test_fit_refuses_with_the_numbers():
    history = incident_like(3)
    with pytest.raises(ctxlab.BudgetError) as err:
        ctxlab.fit(history, allowance=20)
    text = str(err.value)
    assert "20" in text and str(err.value.needed) in text and "short" in text
    assert err.value.available == 20 and err.value.needed > 20


def test_keep_recent_keeps_that_many_groups():
    history = incident_like(6)
    kept, _ = ctxlab.fit(history, allowance=800, keep_recent=3)
    assert kept[-5:] == history[-5:]  # the final answer and the last two tool groups
    with pytest.raises(ctxlab.BudgetError, match="keep_recent"):
        ctxlab.fit(history, allowance=600, keep_recent=6)


def test_fit_rejects_a_malformed_history_with_the_index():
    history = incident_like(2)
    del history[2]  # the call of lap 1: its result is orphaned
    with pytest.raises(ctxlab.MessageError, match="message 2"):
        ctxlab.fit(history, allowance=100)


@pytest.mark.parametrize("bad", [1.5, "100", None, True])
def test_fit_wants_a_whole_number_allowance(bad):
    with pytest.raises(TypeError):
        ctxlab.fit(incident_like(1), allowance=bad)


def test_fit_counts_each_message_once_at_2000_messages():
    history = incident_like(999)
    assert len(history) > 2_000
    seen: dict[int, int] = {}

    def spy(message):
        seen[id(message)] = seen.get(id(message), 0) + 1
        return ctxlab.count_message(message)

    kept, dropped = ctxlab.fit(history, allowance=5_000, count=spy)
    assert max(seen.values()) == 1  # never twice
    assert len(kept) + len(dropped) == len(history)
    # early stop: what is kept, plus the one group that did not fit, and nothing older
    assert {id(m) for m in kept} <= seen.keys() and len(seen) < len(kept) + 10 < len(history)


# --- properties --------------------------------------------------------------------------------


@st.composite
def histories(draw):
    """Random valid histories: parallel calls, pins anywhere, sizes from tiny to huge."""
    sizes = st.integers(min_value=0, max_value=400)
    words = lambda n: "word " * n  # noqa: E731
    history = []
    if draw(st.booleans()):
        history.append({"role": "system", "content": words(draw(sizes))})
    history.append({"role": "user", "content": words(draw(sizes))})
    next_id = 0
    for lap in range(draw(st.integers(min_value=0, max_value=25))):
        kind = draw(st.sampled_from(["tools", "tools", "user", "assistant"]))
        if kind == "tools":
            n = draw(st.integers(min_value=1, max_value=4))
            ids = [f"call_{next_id + i}" for i in range(n)]
            next_id += n
            content = draw(st.one_of(st.none(), st.just("Looking.")))
            group = [{"role": "assistant", "content": content, "tool_calls": [call(i) for i in ids]}]
            order = draw(st.permutations(ids))
            group += [{"role": "tool", "tool_call_id": i, "content": words(draw(sizes))} for i in order]
        else:
            group = [{"role": kind, "content": words(draw(sizes))}]
        for message in group:
            message["step"] = lap + 1
            if draw(st.integers(min_value=0, max_value=12)) == 0:
                message["pinned"] = True
        history += group
    return history


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(min_value=0, max_value=8_000), st.integers(min_value=1, max_value=3))
def test_fit_properties(history, allowance, keep_recent):
    counts = {id(m): ctxlab.count_message(m) for m in history}
    spans = turn_group_spans(history)
    pins = ctxlab.trimming.pinned_indices(history)
    try:
        kept, dropped = ctxlab.fit(history, allowance, keep_recent=keep_recent)
    except ctxlab.BudgetError as err:
        required = {g for g, (a, b) in enumerate(spans) if any(i in pins for i in range(a, b))}
        required |= set(range(max(0, len(spans) - keep_recent), len(spans)))
        needed = sum(counts[id(m)] for g in required for m in history[spans[g][0]:spans[g][1]])
        assert needed > allowance == err.available and err.needed == needed
        return
    position = {id(m): i for i, m in enumerate(history)}
    kept_at = [position[id(m)] for m in kept]
    dropped_at = [position[id(m)] for m in dropped]
    # kept and dropped partition the input, each in the original order
    assert sorted(kept_at + dropped_at) == list(range(len(history)))
    assert kept_at == sorted(kept_at) and dropped_at == sorted(dropped_at)
    # within the allowance, pairs intact, pins kept, newest group kept
    assert sum(counts[id(m)] for m in kept) <= allowance
    assert ctxlab.pairs_ok(kept)
    assert pins <= set(kept_at)
    if history:
        assert set(range(*spans[-1])) <= set(kept_at)
    # whole groups only
    for a, b in spans:
        inside = set(range(a, b))
        assert inside <= set(kept_at) or inside <= set(dropped_at)
    # dropped from the middle: nothing unpinned that is kept is older than something dropped
    pinned_groups = {i for a, b in spans if pins & set(range(a, b)) for i in range(a, b)}
    unpinned_kept = [i for i in kept_at if i not in pinned_groups]
    if dropped_at and unpinned_kept:
        assert max(dropped_at) < min(unpinned_kept)


@settings(max_examples=200, deadline=None)
@given(histories())
def test_groups_partition_and_pairs_hold(history):
    assume(history)
    groups = ctxlab.turn_groups(history)
    assert sum(groups, []) == history
    assert ctxlab.pairs_ok(history)
    for group in groups:
        if len(group) > 1:
            assert group[0]["role"] == "assistant" and all(m["role"] == "tool" for m in group[1:])


def fit_reference(messages, allowance, *, keep_recent=1, count=ctxlab.count_message):
    """The algorithm fit had before it stopped early: count everything, then choose."""
    tokens = [count(m) for m in messages]
    if sum(tokens) <= allowance:
        return list(messages), []
    spans = turn_group_spans(messages)
    pins = ctxlab.trimming.pinned_indices(messages)
    group_tokens = [sum(tokens[a:b]) for a, b in spans]
    pinned = {g for g, (a, b) in enumerate(spans) if pins & set(range(a, b))}
    required = pinned | set(range(max(0, len(spans) - keep_recent), len(spans)))
    needed = sum(group_tokens[g] for g in required)
    if needed > allowance:
        raise ctxlab.BudgetError("", needed=needed, available=allowance)
    keep, room = set(required), allowance - needed
    for g in range(len(spans) - 1, -1, -1):
        if g in keep:
            continue
        if group_tokens[g] > room:
            break
        keep.add(g)
        room -= group_tokens[g]
    kept = [m for g, (a, b) in enumerate(spans) if g in keep for m in messages[a:b]]
    dropped = [m for g, (a, b) in enumerate(spans) if g not in keep for m in messages[a:b]]
    return kept, dropped


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.integers(min_value=0, max_value=8_000), st.integers(min_value=1, max_value=3))
def test_early_stopping_fit_gives_the_same_answer_as_counting_everything(history, allowance, keep_recent):
    try:
        want = fit_reference(history, allowance, keep_recent=keep_recent)
    except ctxlab.BudgetError as expected:
        with pytest.raises(ctxlab.BudgetError) as err:
            ctxlab.fit(history, allowance, keep_recent=keep_recent)
        assert (err.value.needed, err.value.available) == (expected.needed, expected.available)
        return
    got = ctxlab.fit(history, allowance, keep_recent=keep_recent)
    assert [list(map(id, part)) for part in got] == [list(map(id, part)) for part in want]
