"""compress and compress_history: bounded, honest about cuts, and only ever touching tool results."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.compression import MIN_CHARS, stub_reference


def call(call_id, name="read_page", **arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def history(laps=10, size=3_000):
    """A small run: system, goal, then one tool call per lap with a bulky result."""
    messages = [
        {"role": "system", "content": "You research.", "step": 0},
        {"role": "user", "content": "Find the seasonal COP.", "step": 0},
    ]
    for lap in range(1, laps + 1):
        messages.append({"role": "assistant", "content": f"lap {lap}", "tool_calls": [call(f"c{lap}", url=f"u{lap}")], "step": lap})
        messages.append({"role": "tool", "tool_call_id": f"c{lap}", "content": f"page {lap}\n" + "text " * (size // 5), "step": lap})
    return messages


# --- compress -------------------------------------------------------------------------------


def test_text_that_fits_is_unchanged():
    assert ctxlab.compress("short", 200) == "short"
    text = '{"a":  1}'
    assert ctxlab.compress(text, 200) is text


def test_long_text_keeps_head_and_tail_and_says_what_was_cut():
    log = "\n".join(f"02:{m:02d} LOG routine line {m}" for m in range(60)) + "\nSUMMARY: 1 failed, 40 passed"
    out = ctxlab.compress(log, 400)
    assert len(out) <= 400
    assert out.startswith("02:00 LOG routine line 0\n")
    assert out.endswith("SUMMARY: 1 failed, 40 passed")
    assert f"of {len(log):,} chars" in out and "lines) cut" in out


def test_lists_keep_their_first_items_and_count_the_rest():
    out = ctxlab.compress([{"rank": i, "title": f"paper {i}"} for i in range(50)], 600)
    assert len(out) <= 600
    assert '"rank": 0' in out and "more of 50 items" in out and "list items" in out


def test_json_text_is_compressed_by_structure():
    search = json.dumps({"query": "heat pumps", "results": [{"rank": i, "snippet": "s" * 500} for i in range(8)]}, indent=2)
    out = ctxlab.compress(search, 800)
    assert len(out) <= 800
    assert out.startswith('{"query": "heat pumps", "results": [{"rank": 0')
    assert "chars]" in out and f"[cut from {len(search):,} chars" in out


def test_research_results_shrink_to_the_cap():
    for message in ctxlab.course.load_transcript("research"):
        if message["role"] == "tool":
            out = ctxlab.compress(message["content"], 1_000)
            assert len(out) <= 1_000
            assert out == message["content"] or "cut" in out


@pytest.mark.parametrize("max_chars", [MIN_CHARS - 1, 0, 1.5, True])
def test_compress_refuses_a_cap_too_small_for_its_note(max_chars):
    with pytest.raises(ValueError, match="max_chars"):
        ctxlab.compress("x" * 1_000, max_chars)


def test_a_cap_below_the_minimum_is_refused_with_both_numbers_not_exceeded():
    """A cap smaller than the cut note cannot be kept; it is refused, never silently overrun."""
    with pytest.raises(ValueError) as refused:
        ctxlab.compress("x" * 200, 10)
    assert f">= {MIN_CHARS}" in str(refused.value) and "got 10" in str(refused.value)
    with pytest.raises(ValueError, match=f">= {MIN_CHARS}"):
        ctxlab.compress_history(history(3), 9, max_chars=10)


@pytest.mark.parametrize("size", [2 * MIN_CHARS, 1_000, 100_000, 2_000_000])
def test_the_smallest_accepted_cap_holds_for_long_text_and_data(size):
    for result in ("x" * size, "line\n" * (size // 5), "\n" * size, list(range(size // 5)), {"body": "b" * size}):
        out = ctxlab.compress(result, MIN_CHARS)
        assert len(out) <= MIN_CHARS
        assert "cut" in out


lines_of_text = st.lists(st.text(max_size=120), max_size=300).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(text=lines_of_text, max_chars=st.integers(min_value=MIN_CHARS, max_value=5_000))
def test_text_cut_at_line_ends_never_exceeds_max_chars(text, max_chars):
    out = ctxlab.compress(text, max_chars)
    assert len(out) <= max_chars
    assert out == text if len(text) <= max_chars else "cut" in out


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=300)),
    lambda inner: st.lists(inner, max_size=30) | st.dictionaries(st.text(max_size=12), inner, max_size=12),
    max_leaves=120,
)


@settings(max_examples=200, deadline=None)
@given(value=json_values, max_chars=st.integers(min_value=MIN_CHARS, max_value=3_000), as_text=st.booleans())
def test_compress_never_exceeds_max_chars_and_is_deterministic(value, max_chars, as_text):
    result = json.dumps(value) if as_text else value
    out = ctxlab.compress(result, max_chars)
    assert isinstance(out, str)
    assert len(out) <= max_chars
    assert ctxlab.compress(copy.deepcopy(result), max_chars) == out
    original = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    if len(original) <= max_chars:
        assert out == original
    else:
        assert "cut" in out  # it says so


# --- compress_history -----------------------------------------------------------------------


def test_age_tiers_full_then_compressed_then_reference():
    messages = history(10)
    with ctxlab.TrajectoryStore(run="t") as store:
        view = ctxlab.compress_history(messages, 10, keep_full_for=2, compress_after=5, max_chars=500, store=store)
        tiers = {}
        for message in view:
            if message["role"] == "tool":
                content = message["content"]
                tiers[message["step"]] = "ref" if stub_reference(content) else "full" if len(content) > 500 else "compressed"
        assert tiers == {**dict.fromkeys(range(1, 5), "ref"), **dict.fromkeys(range(5, 8), "compressed"), **dict.fromkeys(range(8, 11), "full")}
        stub = view[3]["content"]
        assert "lap 1" in stub and 'read_page {"url": "u1"}' in stub and stub_reference(stub) in stub


def test_only_tool_contents_change():
    messages = history(8)
    before = copy.deepcopy(messages)
    with ctxlab.TrajectoryStore(run="t") as store:
        view = ctxlab.compress_history(messages, 8, keep_full_for=1, compress_after=3, max_chars=300, store=store)
    assert messages == before  # the input is not mutated
    assert len(view) == len(messages)
    for old, new in zip(messages, view, strict=True):
        if old["role"] != "tool":
            assert new is old
        else:
            assert {k: v for k, v in new.items() if k != "content"} == {k: v for k, v in old.items() if k != "content"}
    assert ctxlab.pairs_ok(view)


def test_recent_results_are_untouched():
    messages = history(6)
    view = ctxlab.compress_history(messages, 6, keep_full_for=2, max_chars=300)
    for old, new in zip(messages, view, strict=True):
        if old["role"] == "tool" and old["step"] >= 4:
            assert new is old


def test_pinned_results_and_results_without_a_lap_are_untouched():
    messages = history(6)
    messages[2] = {**messages[2], "pinned": True}  # lap 1's call pins its result
    messages[5] = {k: v for k, v in messages[5].items() if k != "step"}
    view = ctxlab.compress_history(messages, 6, keep_full_for=0, max_chars=300)
    assert view[3] is messages[3] and view[5] is messages[5]
    assert len(view[7]["content"]) <= 300


def test_references_need_a_store():
    with pytest.raises(ValueError, match="store="):
        ctxlab.compress_history(history(3), 3, compress_after=2)


@pytest.mark.parametrize("kwargs", [dict(step=-1), dict(keep_full_for=-1), dict(compress_after=0, keep_full_for=2), dict(max_chars=10)])
def test_bad_options_are_refused(kwargs):
    kwargs = {"step": 5, **kwargs}
    with ctxlab.TrajectoryStore() as store, pytest.raises(ValueError):
        ctxlab.compress_history(history(3), store=store, **kwargs)


def test_a_log_records_what_changed_with_tokens_before_and_after():
    messages = history(6)
    log = ctxlab.events.MemoryLog()
    with ctxlab.TrajectoryStore(run="t") as store:
        view = ctxlab.compress_history(messages, 6, keep_full_for=1, compress_after=3, max_chars=300, store=store, log=log)
    (event,) = log
    assert event.kind == "compress" and event.lap == 6
    changed = [i for i, (a, b) in enumerate(zip(messages, view, strict=True)) if a is not b]
    assert [m["tool_call_id"] for m in event.messages] == [messages[i]["tool_call_id"] for i in changed]
    assert list(event.messages) == [messages[i] for i in changed]  # the originals, in full
    assert event.tokens_before == sum(ctxlab.count_message(messages[i]) for i in changed)
    assert event.tokens_after == sum(ctxlab.count_message(view[i]) for i in changed)
    assert [c["tier"] for c in event.data["changes"]] == ["reference"] * 2 + ["compressed"] * 2


def test_on_the_coding_transcript_old_file_reads_shrink():
    coding = ctxlab.course.load_transcript("coding")
    with ctxlab.TrajectoryStore(run="coding") as store:
        store.extend(coding)
        view = ctxlab.compress_history(coding, coding[-1]["step"], compress_after=5, store=store)
        assert ctxlab.count_messages(view) < ctxlab.count_messages(coding) / 3
        assert ctxlab.restore(view, store) == coding
        ctxlab.validate_messages(view)


@settings(max_examples=60, deadline=None)
@given(
    laps=st.integers(1, 12),
    step=st.integers(0, 15),
    keep_full_for=st.integers(0, 4),
    extra=st.one_of(st.none(), st.integers(0, 5)),
    max_chars=st.integers(MIN_CHARS, 2_000),
)
def test_every_reference_resolves_and_a_second_pass_changes_nothing(laps, step, keep_full_for, extra, max_chars):
    messages = history(laps, size=1_000)
    compress_after = None if extra is None else keep_full_for + extra
    with ctxlab.TrajectoryStore(run="prop") as store:
        view = ctxlab.compress_history(messages, step, keep_full_for=keep_full_for, compress_after=compress_after,
                                       max_chars=max_chars, store=store)
        assert ctxlab.pairs_ok(view)
        for old, new in zip(messages, view, strict=True):
            ref = stub_reference(new.get("content"))
            if ref is not None:
                assert store.resolve(ref) == old
            if old["role"] == "tool" and step - old["step"] <= keep_full_for:
                assert new is old
        again = ctxlab.compress_history(view, step, keep_full_for=keep_full_for, compress_after=compress_after,
                                        max_chars=max_chars, store=store)
        assert again == view
        assert ctxlab.restore(view, store) == messages


@pytest.mark.parametrize("depth", [400, 600, 995, 5_000])
def test_json_nested_too_deep_to_walk_is_cut_as_text_and_a_run_goes_on(depth):
    """A tool may return JSON nested hundreds of levels deep (json.loads gives up near 1,000,
    the structural cut sooner): it is cut by head and tail, and compression, summaries, the
    scratchpad and the Assembler all go on."""
    text = "[" * depth + '"' + "x" * 3_000 + '"' + "]" * depth
    cut = ctxlab.compress(text, 1_200)
    assert len(cut) <= 1_200 and "cut" in cut and cut.startswith("[[[")
    if depth < 990:
        assert len(ctxlab.compress(json.loads(text), 1_200)) <= 1_200
    call = {"id": "c1", "type": "function", "function": {"name": "deep", "arguments": "{}"}}
    run = [{"role": "system", "content": "s"}, {"role": "user", "content": "go", "step": 0},
           {"role": "assistant", "content": None, "tool_calls": [call], "step": 1},
           {"role": "tool", "tool_call_id": "c1", "content": text, "step": 1}]
    for lap in range(2, 40):
        c = {**call, "id": f"c{lap}", "function": {"name": "read", "arguments": "{}"}}
        run += [{"role": "assistant", "content": None, "tool_calls": [c], "step": lap},
                {"role": "tool", "tool_call_id": f"c{lap}", "content": "y " * 700, "step": lap}]
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=1_000, scratchpad_max=500)
    context = ctxlab.build_context(run, ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser()), step=40)
    assert [e.kind for e in context.log] == ["compress", "summarise", "assemble"]
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser(),
                                                     compress_after=5, store=ctxlab.TrajectoryStore(run="deep")))
    for index in ctxlab.model_calls(run):
        assert assembler.context(run[:index]).tokens <= budget.input_limit
    pad = ctxlab.scratchpad.update_scratchpad(ctxlab.Scratchpad(goal="g"), call, text, step=1)
    assert "deep" in pad.render()


def test_data_nested_too_deep_to_write_as_json_is_refused_with_what_to_do():
    deep: list = []
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(ValueError, match="too deeply to write as JSON"):
        ctxlab.compress(deep, 1_200)


# --- results given as text parts ----------------------------------------------------------------


def _as_parts(message, pieces=2):
    """``message`` with its content as ``pieces`` text parts, as the API also accepts it."""
    text = message["content"]
    cut = [len(text) * k // pieces for k in range(pieces + 1)]
    return {**message, "content": [{"type": "text", "text": text[a:b]} for a, b in zip(cut, cut[1:], strict=False)]}


def test_a_result_of_text_parts_ages_like_a_string():
    """A tool result whose content is a list of text parts is compressed by age as the text of
    its parts joined by newlines, into one string; one that fits, or that holds any other part,
    is left as it is. Before, every such result stayed in full until it was trimmed."""
    messages = history(6)
    messages = [_as_parts(m) if m["role"] == "tool" else m for m in messages]
    with ctxlab.TrajectoryStore(run="parts") as store:
        log = ctxlab.MemoryLog()
        view = ctxlab.compress_history(messages, 6, keep_full_for=2, compress_after=4, max_chars=300, store=store, log=log)
        aged = {m["step"]: m["content"] for m in view if m["role"] == "tool" and m["step"] <= 3}
        assert all(isinstance(c, str) and len(c) <= 300 for c in aged.values()), aged
        assert stub_reference(aged[1]) and not stub_reference(aged[3])
        joined = "\n".join(p["text"] for p in messages[7]["content"])
        assert aged[3] == ctxlab.compress(joined, 300)
        assert [m for m in view if m["role"] == "tool" and m["step"] > 3] == [m for m in messages if m["role"] == "tool" and m["step"] > 3]
        (event,) = list(log)
        assert [c["chars_before"] for c in event.data["changes"]] == [len(joined)] * 3
        assert ctxlab.restore(view, store) == messages  # the parts come back as they were
        assert ctxlab.compress_history(view, 6, keep_full_for=2, compress_after=4, max_chars=300, store=store) == view
    short = {"role": "tool", "tool_call_id": "c1", "step": 1, "content": [{"type": "text", "text": "ok"}]}
    image = {**short, "content": [{"type": "text", "text": "x " * 900}, {"type": "image_url", "image_url": {"url": "u"}}]}
    for result in (short, image):
        run = [messages[2], result]
        assert ctxlab.compress_history(run, 9, keep_full_for=0, max_chars=300)[1] is result


def test_the_assembler_ages_results_of_text_parts_as_build_context_does():
    """Research laps with a third of their results given as text parts: the Assembler and
    build_context give the same prompts lap after lap, and old results of parts are
    compressed in them."""
    from test_assembler import _same_laps, long_run

    run = [_as_parts(m, 3) if m["role"] == "tool" and k % 3 == 0 else dict(m) for k, m in enumerate(long_run(40))]
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=1_500, scratchpad_max=400, summary_max=600)
    last = _same_laps(run, budget, laps=70, client=ctxlab.OfflineSummariser())
    assert last is not None
    parts_ids = {m["tool_call_id"] for m in run if m["role"] == "tool" and isinstance(m["content"], list)}
    shrunk = [m for m in last if m.get("tool_call_id") in parts_ids and isinstance(m["content"], str)]
    assert shrunk and all(len(m["content"]) <= 1_200 for m in shrunk)


def test_a_stub_names_the_recall_tool_that_reads_its_result_back(tmp_path):
    """The model gets back an old result by calling recall with the stub's ref, not by calling the
    tool again; a ref the store does not hold is an error result the scratchpad never retries."""
    coding = ctxlab.course.load_transcript("coding")
    with ctxlab.TrajectoryStore(tmp_path / "runs.sqlite3", run="coding") as store:
        store.extend(coding)
        view = ctxlab.compress_history(coding, step=13, keep_full_for=2, compress_after=6, max_chars=1_000, store=store)
        stubs = [(i, m) for i, m in enumerate(view) if stub_reference(m.get("content"))]
        assert stubs
        for index, stub in stubs:
            assert "call recall with this ref" in stub["content"]
            answer = ctxlab.compression.recall(store, json.dumps({"ref": stub_reference(stub["content"])}))
            assert answer == coding[index]["content"]
        call = {"id": "c9", "type": "function", "function": {"name": "recall", "arguments": '{"ref": "coding#999"}'}}
        missing = ctxlab.compression.recall(store, call["function"]["arguments"])
        assert json.loads(missing)["error"] == "unknown_ref" and "coding#999" in missing
        assert ctxlab.compression.recall(store, "{not json")
        with ctxlab.TrajectoryStore(store.path, run="other") as other:  # another session, same file
            other.append({"role": "tool", "tool_call_id": "x", "content": "another session's secret"})
        assert store.content("other#0") == "another session's secret"  # the file does hold it
        stolen = ctxlab.compression.recall(store, {"ref": "other#0"})
        assert json.loads(stolen)["error"] == "unknown_ref" and "secret" not in stolen
        assert json.loads(ctxlab.compression.recall(store, {}))["error"] == "invalid_arguments"
        pad = ctxlab.scratchpad.update_scratchpad(ctxlab.Scratchpad(goal="g"), call, missing)
        assert list(pad.failed) == ['recall {"ref": "coding#999"}'] and not pad.retry_later
    tools = [*ctxlab.course.load_tools("coding"), ctxlab.compression.RECALL_TOOL]
    request = {"model": "gpt-4o", "messages": view, "tools": tools}
    assert ctxlab.count_request(request) > ctxlab.count_request({**request, "tools": tools[:-1]})


def test_a_history_with_no_laps_at_all_is_told_so():
    """Straight from the API no message has a step: nothing can age, and a warning says how to
    number the laps; numbered, the same history is compressed. A numbered history with one
    result without a step leaves that one alone, silently (lesson 05's rule)."""
    import warnings

    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "c1", "content": "x" * 5_000},
               {"role": "assistant", "content": "read it"}, {"role": "assistant", "content": "still here"},
               {"role": "assistant", "content": "and here"}]
    with pytest.warns(ctxlab.compression.UnnumberedWarning, match="number_laps"):
        assert ctxlab.compress_history(history, step=9) == history
    numbered = ctxlab.assembly.number_laps(history)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(ctxlab.compress_history(numbered, step=9)[2]["content"]) == 1_200
        mixed = [*numbered, {**numbered[1], "tool_calls": [{**call, "id": "c2"}]},
                 {"role": "tool", "tool_call_id": "c2", "content": "y" * 5_000}]
        assert ctxlab.compress_history(mixed, step=9)[-1]["content"] == "y" * 5_000
