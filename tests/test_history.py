"""GrowingHistory: the same answer as ctxlab.fit, for the cost of what is new."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trimming import histories, incident_like, tool_group

import ctxlab
import ctxlab.course


def outcome(call, *args, **kwargs):
    try:
        kept, dropped = call(*args, **kwargs)
    except ctxlab.BudgetError as err:
        return ("BudgetError", err.needed, err.available)
    return ([id(m) for m in kept], [id(m) for m in dropped])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.data())
def test_every_lap_fits_exactly_as_fit_does(history, data):
    """Appended in random chunks and fitted after each, it answers as ctxlab.fit on the whole."""
    grown = ctxlab.history.GrowingHistory()
    position = 0
    while position < len(history):
        size = data.draw(st.integers(min_value=1, max_value=6))
        grown.extend(history[position:position + size])
        position = min(position + size, len(history))
        if grown._checker.pending:
            continue  # mid-lap: results still to come
        allowance = data.draw(st.integers(min_value=-5, max_value=6_000))
        keep_recent = data.draw(st.integers(min_value=1, max_value=3))
        assert outcome(grown.fit, allowance, keep_recent=keep_recent) == outcome(
            ctxlab.fit, history[:position], allowance, keep_recent=keep_recent
        )
    assert grown.messages == history
    assert grown.tokens == sum(ctxlab.count_message(m) for m in history)


def test_the_research_run_lap_by_lap():
    research = ctxlab.course.load_transcript("research")
    grown = ctxlab.history.GrowingHistory()
    for lap in range(max(m["step"] for m in research) + 1):
        grown.extend(m for m in research if m["step"] == lap)
        for allowance in (3_000, 12_000, 50_000):
            assert outcome(grown.fit, allowance) == outcome(ctxlab.fit, grown.messages, allowance)


def test_each_message_is_counted_once_over_the_whole_run():
    history = incident_like(300)
    counted: dict[int, int] = {}

    def spy(message):
        counted[id(message)] = counted.get(id(message), 0) + 1
        return ctxlab.count_message(message)

    grown = ctxlab.history.GrowingHistory(count=spy)
    for start in range(0, len(history), 3):
        grown.extend(history[start:start + 3])
        if not grown._checker.pending:
            grown.fit(2_000)
    assert len(counted) == len(history) and set(counted.values()) == {1}


def test_a_bad_message_is_refused_and_nothing_is_added():
    grown = ctxlab.history.GrowingHistory(incident_like(2))
    before = (len(grown), grown.tokens)
    with pytest.raises(ctxlab.MessageError, match=r"message 8: .*does not follow") as err:
        grown.extend([{"role": "user", "content": "next"}, {"role": "tool", "tool_call_id": "nope", "content": "r"}])
    assert err.value.index == 8
    assert (len(grown), grown.tokens) == before
    with pytest.raises(ctxlab.MessageError, match="appears twice"):
        grown.extend(tool_group(9, ["c9", "c9"]))  # one message, one id twice
    grown.extend(tool_group(9, ["c9"]))  # the checker was left as it was
    grown.extend(tool_group(10, ["c1"]))  # an id the history used at lap 1: the API accepts it
    assert len(grown) == before[0] + 4


def test_fit_waits_for_the_results_of_the_last_calls():
    grown = ctxlab.history.GrowingHistory(incident_like(1))
    call, result = tool_group(2, ["c2"])
    grown.append(call)
    with pytest.raises(ctxlab.MessageError, match="'c2' is never answered"):
        grown.fit(10_000)
    grown.append(result)
    kept, dropped = grown.fit(10_000)
    assert kept[-1] is result and dropped == [] and len(dropped) == 0


def test_it_is_a_read_only_sequence_of_the_messages():
    history = incident_like(2)
    grown = ctxlab.history.GrowingHistory(history)
    assert len(grown) == len(history) and grown[0] is history[0] and list(grown) == history
    assert grown[-2:] == history[-2:]
    assert not hasattr(grown, "__setitem__")


def test_kept_and_dropped_are_views_that_behave_like_lists():
    history = incident_like(12)
    history[6]["pinned"] = True
    grown = ctxlab.history.GrowingHistory(history)
    kept, dropped = grown.fit(1_200)
    want_kept, want_dropped = ctxlab.fit(history, 1_200)
    assert kept == want_kept and dropped == want_dropped and want_kept == list(kept)
    assert len(kept) == len(want_kept) and [kept[i] for i in range(-len(kept), len(kept))] == want_kept * 2
    assert kept[1:3] == want_kept[1:3] and isinstance(kept[1:3], list)
    with pytest.raises(IndexError):
        kept[len(kept)]
    grown.extend(tool_group(13, ["c13"]))  # the history grows; earlier views do not change
    assert list(kept) == want_kept
    assert repr(dropped) == repr(want_dropped)
