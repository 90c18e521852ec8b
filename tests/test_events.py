"""The memory decision log: events keep what they took out, and the log can be read back."""

from __future__ import annotations

import dataclasses

import pytest

import ctxlab


def sample_log():
    log = ctxlab.MemoryLog()
    log.record("trim", lap=4, tokens_before=9_000, tokens_after=5_000,
               messages=[{"role": "tool", "tool_call_id": "a", "content": "one"}], detail="dropped lap 2")
    log.record("summarise", lap=9, tokens_before=8_000, tokens_after=4_500,
               messages=[{"role": "tool", "tool_call_id": "b", "content": "two"}], detail="rolled up", summary="FACTS:")
    log.record("compress", lap=9, tokens_before=4_500, tokens_after=3_000, detail="lap 7 result")
    return log


def test_events_are_kept_in_order_and_can_be_filtered():
    log = sample_log()
    assert len(log) == 3 and [e.kind for e in log] == ["trim", "summarise", "compress"]
    assert [e.kind for e in log.filter(lap=9)] == ["summarise", "compress"]
    assert [e.kind for e in log.filter(["trim", "compress"])] == ["trim", "compress"]
    assert log.count("trim") == 1 and log.count() == 3
    assert log.counts() == {"trim": 1, "summarise": 1, "compress": 1}
    assert log[1].data == {"summary": "FACTS:"} and log[-1].saved == 1_500


def test_what_was_taken_out_is_retrievable():
    log = sample_log()
    assert [m["content"] for m in log.messages()] == ["one", "two"]
    assert [m["content"] for m in log.messages("summarise")] == ["two"]


def test_events_are_immutable_and_need_a_kind():
    event = sample_log()[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.kind = "other"
    assert isinstance(event.messages, tuple)
    with pytest.raises(ValueError, match="kind"):
        ctxlab.events.MemoryEvent("")
    with pytest.raises(TypeError):
        ctxlab.MemoryLog().append({"kind": "trim"})
    assert set(ctxlab.events.EVENT_KINDS) >= {"trim", "summarise", "summary_failed", "compress", "small_talk"}


def test_the_log_renders_as_a_table_and_rows():
    log = sample_log()
    lines = log.table().splitlines()
    assert lines[0].split() == ["lap", "kind", "before", "after", "saved", "messages", "detail"]
    assert lines[1].split()[:6] == ["4", "trim", "9,000", "5,000", "4,000", "1"]
    assert len(lines) == 4 and str(log) == log.table()
    assert log.rows()[1] == {"lap": 9, "kind": "summarise", "tokens_before": 8_000, "tokens_after": 4_500,
                             "saved": 3_500, "messages": 1, "detail": "rolled up"}
    long = ctxlab.MemoryLog([ctxlab.events.MemoryEvent("trim", detail="x" * 500)])
    assert max(len(line) for line in long.table(width=80).splitlines()) <= 80
    assert repr(log) == "MemoryLog(3 events: trim=1, summarise=1, compress=1)"
