"""Custom tool calls (``"type": "custom"``, free-text ``input``) go everywhere function calls go:
validated, counted by the same rule, compressed, summarised, stubbed and copied alike."""

from __future__ import annotations

import copy

import pytest
from openai.types.chat import ChatCompletionMessage
from openai.types.chat import ChatCompletionMessageCustomToolCall as CustomCall

import ctxlab
import ctxlab.course
from ctxlab.calls import call_parts
from ctxlab.course.transcripts import repeat_laps

PATCH = "*** Begin Patch\n*** Update File: notes.md\n+Heat pumps work at -25 C.\n*** End Patch"


def custom(call_id, name="apply_patch", text=PATCH):
    return {"id": call_id, "type": "custom", "custom": {"name": name, "input": text}}


def function(call_id, name="apply_patch", arguments=PATCH):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def as_custom(run):
    """``run`` with every function call made a custom call of the same name and input text."""
    out = copy.deepcopy(list(run))
    for message in out:
        for k, call in enumerate(message.get("tool_calls") or []):
            f = call["function"]
            message["tool_calls"][k] = {"id": call["id"], "type": "custom",
                                        "custom": {"name": f["name"], "input": f["arguments"]}}
    return out


def test_a_custom_call_from_the_sdk_is_accepted_and_counted_like_a_function_call():
    reply = ChatCompletionMessage(role="assistant", content=None, tool_calls=[
        CustomCall(id="call_c", type="custom", custom={"name": "apply_patch", "input": PATCH})])
    message = ctxlab.messages.as_message(reply)
    assert message["tool_calls"] == [custom("call_c")]
    history = [{"role": "user", "content": "Note the finding."}, message,
               {"role": "tool", "tool_call_id": "call_c", "content": "patched"}]
    ctxlab.validate_messages(history)
    assert ctxlab.pairs_ok(history)
    enc = ctxlab.encoding()
    assert ctxlab.count_message(message) == 3 + 3 + len(enc.encode_ordinary("apply_patch")) + len(enc.encode_ordinary(PATCH)) \
        + len(enc.encode_ordinary("assistant")) \
        + len(enc.encode_ordinary("functions.apply_patch")) - len(enc.encode_ordinary("tool"))  # its result's author
    as_function = {**message, "tool_calls": [function("call_c")]}
    assert ctxlab.count_message(message) == ctxlab.count_message(as_function)
    assert ctxlab.TokenCounter().message(message) == ctxlab.count_message(message)
    kept, dropped = ctxlab.fit(history, 10_000)
    assert kept == history and dropped == []


@pytest.mark.parametrize("call, words", [
    ({"id": "c", "type": "custom", "custom": {"name": "sh", "input": {"cmd": "ls"}}}, "'input' must be a string"),
    ({"id": "c", "type": "custom", "function": {"name": "sh", "arguments": "{}"}}, "needs 'custom'"),
    ({"id": "c", "type": "custom", "custom": {"input": "ls"}}, "needs 'custom'"),
    ({"id": "c", "type": "web_search", "web_search": {}}, "'function'"),
])
def test_a_malformed_call_is_refused_with_its_index_and_the_fix(call, words):
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "c", "content": "r"}]
    for check in (ctxlab.validate_messages, ctxlab.count_messages):
        with pytest.raises(ctxlab.MessageError) as err:
            check(history)
        assert err.value.index == 1 and words in str(err.value), str(err.value)


def test_custom_tool_schemas_are_counted():
    schema = {"type": "custom", "custom": {"name": "apply_patch", "description": "Edit files with a patch."}}
    assert ctxlab.count_tools([schema]) == len(ctxlab.encoding().encode_ordinary(
        '{"type":"custom","custom":{"name":"apply_patch","description":"Edit files with a patch."}}'))
    with pytest.raises(ValueError, match="'custom'"):
        ctxlab.count_tools([{"type": "custom", "function": {"name": "x"}}])


def test_steps_stubs_and_the_scratchpad_name_a_custom_call_and_its_input():
    history = [
        {"role": "user", "content": "Edit the notes.", "step": 0},
        {"role": "assistant", "content": None, "tool_calls": [custom("c1")], "step": 1},
        {"role": "tool", "tool_call_id": "c1", "content": "applied\n" + "line\n" * 900, "step": 1},
    ]
    steps = ctxlab.summarising.render_steps(history[1:])
    assert "called apply_patch *** Begin Patch" in steps and "tool apply_patch (id c1)" in steps
    summary = ctxlab.compact(ctxlab.OfflineSummariser(), history[1:])
    assert "apply_patch" in summary
    store = ctxlab.TrajectoryStore(run="r")
    stub = ctxlab.compress_history(history, step=9, compress_after=3, store=store)[2]["content"]
    assert "lap 1: apply_patch *** Begin Patch" in stub, stub
    assert ctxlab.restore([{**history[2], "content": stub}], store) == [history[2]]
    assert ctxlab.scratchpad.call_signature(custom("c1")) == "apply_patch " + " ".join(PATCH.split())
    pad = ctxlab.scratchpad.update_scratchpad(ctxlab.Scratchpad(goal="g"), custom("c1"), "applied", step=1)
    assert any("apply_patch" in line for line in pad.render().splitlines())
    assert ctxlab.replaying.probe_text(history[1]) == PATCH


def test_a_long_run_of_custom_calls_assembles_as_its_function_twin_does():
    """The same run with every call made a custom call: every lap's prompt is the twin's with
    the calls swapped, with the same tokens, and editing a prompt's calls reaches no later lap."""
    run = repeat_laps(ctxlab.course.load_transcript("research"), 60)
    twin = as_custom(run)
    pristine = copy.deepcopy(twin)
    budget = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600, summary_max=600)
    options = dict(client=ctxlab.OfflineSummariser(), compress_after=6, store=None)
    ours = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, **{**options, "store": ctxlab.TrajectoryStore(run="a")}))
    theirs = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, **{**options, "client": ctxlab.OfflineSummariser(),
                                                             "store": ctxlab.TrajectoryStore(run="a")}))
    compacted = 0
    for index in ctxlab.model_calls(run):
        mine, want = ours.context(twin[:index]), theirs.context(run[:index])
        assert mine.tokens == want.tokens, index
        assert mine.messages == as_custom(want.messages), index
        assert ctxlab.pairs_ok(mine.messages)
        compacted += any(ctxlab.is_summary(m) for m in mine.messages)
        for message in mine.messages:
            for call in message.get("tool_calls") or []:
                call["custom"]["input"] = "changed by the caller"
    assert twin == pristine
    assert compacted, "the run never compacted: it tests less than it says"


def test_call_parts_reads_both_kinds_and_nothing_else():
    assert call_parts(function("a", "f", "{}")) == ("f", "{}")
    assert call_parts(custom("a", "sh", "ls")) == ("sh", "ls")
    for bad in (None, "call", {"id": "a", "type": "custom", "custom": {"name": 3, "input": ""}},
                {"id": "a", "type": "custom"}, {"id": "a", "type": ["function"], "function": {"name": "f"}}):
        assert call_parts(bad) is None
