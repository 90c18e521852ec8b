"""The providers' settings and their replay on the course's runs (ctxlab.providers).

Each rule the module states from the documentation is held here on the transcripts: when a
request acts, which tool uses it clears, the all-or-nothing minimum, excluded tools, and when a
compaction would fire with the hidden item standing in at a given size.
"""

from __future__ import annotations

import pytest

import ctxlab
import ctxlab.course
from ctxlab.errors import ConfigError, ConfigTypeError
from ctxlab.providers import ClearToolUses, Compaction, clearing_laps, compaction_laps

RUNS = ["incident", "research", "coding", "parallel"]


def _run(name):
    return ctxlab.course.load_transcript(name), ctxlab.course.load_tools(name)


def _prompt_tokens(record, tools, model="gpt-4o"):
    """Each model call's prompt, the whole record so far, as count_request bills it."""
    return {record[i]["step"]: ctxlab.count_request({"model": model, "messages": record[:i], "tools": tools})
            for i in ctxlab.model_calls(record)}


def test_the_settings_are_what_the_apis_take():
    assert ClearToolUses().edit() == {"type": "clear_tool_uses_20250919",
                                      "trigger": {"type": "input_tokens", "value": 100_000},
                                      "keep": {"type": "tool_uses", "value": 3}}
    full = ClearToolUses(trigger=50_000, keep=5, clear_at_least=5_000, exclude_tools=("web_search",),
                         clear_tool_inputs=True).edit()
    assert full["clear_at_least"] == {"type": "input_tokens", "value": 5_000}
    assert full["exclude_tools"] == ["web_search"] and full["clear_tool_inputs"] is True
    assert Compaction(compact_threshold=200_000).entry() == [{"type": "compaction", "compact_threshold": 200_000}]


@pytest.mark.parametrize("make", [lambda: ClearToolUses(trigger=0), lambda: ClearToolUses(keep=-1),
                                  lambda: ClearToolUses(clear_at_least=0), lambda: Compaction(compact_threshold=True)])
def test_impossible_settings_are_refused(make):
    with pytest.raises(ConfigError, match="must be a whole number"):
        make()
    with pytest.raises(ConfigTypeError, match="exclude_tools"):
        ClearToolUses(exclude_tools="web_search")


@pytest.mark.parametrize("name", RUNS)
def test_clearing_acts_on_each_lap_past_the_trigger_and_keeps_the_newest(name):
    record, tools = _run(name)
    billed = _prompt_tokens(record, tools)
    trigger = sorted(billed.values())[len(billed) // 3]
    for keep in (0, 2, 5):
        clearings = clearing_laps(record, ClearToolUses(trigger=trigger, keep=keep), tools=tools)
        assert clearings, (name, keep)
        for clearing in clearings:
            assert clearing.tokens_before == billed[clearing.lap] > trigger  # as the request is billed
            index = next(i for i in ctxlab.model_calls(record) if record[i]["step"] == clearing.lap)
            uses = sum(len(m.get("tool_calls") or ()) for m in record[:index] if m.get("role") == "assistant")
            assert clearing.cleared_tool_uses == uses - keep > 0 and clearing.applied
        laps = [c.lap for c in clearings]
        assert laps == sorted(laps) and [c.cleared_tool_uses for c in clearings] == sorted(c.cleared_tool_uses for c in clearings)
        quiet = [lap for lap, tokens in billed.items() if tokens <= trigger]
        assert not set(quiet) & set(laps)


def test_clear_at_least_is_all_or_nothing_and_exclusions_are_never_cleared():
    record, tools = _run("incident")
    plain = clearing_laps(record, ClearToolUses(trigger=3_000, keep=2), tools=tools)
    floor = plain[1].cleared_input_tokens  # the second lap's amount: the first cannot reach it
    guarded = clearing_laps(record, ClearToolUses(trigger=3_000, keep=2, clear_at_least=floor), tools=tools)
    assert (guarded[0].applied, guarded[0].cleared_tool_uses, guarded[0].cleared_input_tokens) == (False, 0, 0)
    assert guarded[1] == plain[1]
    names = {c["function"]["name"] for m in record for c in m.get("tool_calls") or ()}
    spared = sorted(names)[0]
    without = clearing_laps(record, ClearToolUses(trigger=3_000, keep=2, exclude_tools=(spared,)), tools=tools)
    assert sum(c.cleared_tool_uses for c in without) < sum(c.cleared_tool_uses for c in plain)
    with_inputs = clearing_laps(record, ClearToolUses(trigger=3_000, keep=2, clear_tool_inputs=True), tools=tools)
    assert all(a.cleared_input_tokens > b.cleared_input_tokens for a, b in zip(with_inputs, plain, strict=True))


@pytest.mark.parametrize("name", RUNS)
def test_compaction_fires_where_the_rendered_prompt_crosses_its_threshold(name):
    record, tools = _run(name)
    billed = _prompt_tokens(record, tools)
    threshold = sorted(billed.values())[len(billed) // 2]
    points = compaction_laps(record, Compaction(threshold), item_tokens=0, tools=tools)
    first = min(lap for lap, tokens in billed.items() if tokens > threshold)
    assert points and points[0].lap == first and points[0].tokens_before == billed[first]
    assert all(p.tokens_before > threshold for p in points)
    # the hidden item's size moves every later point: a larger item, a compaction as soon or sooner
    bigger = compaction_laps(record, Compaction(threshold), item_tokens=threshold // 2, tools=tools)
    assert len(bigger) >= len(points) and bigger[0] == points[0]
    # an item alone over the threshold: compaction on every request after the first
    every = compaction_laps(record, Compaction(threshold), item_tokens=threshold + 1, tools=tools)
    assert [p.lap for p in every] == [lap for lap in billed if lap >= first]
    assert compaction_laps(record, Compaction(10 ** 9), item_tokens=0, tools=tools) == []
