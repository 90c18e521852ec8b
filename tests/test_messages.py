"""Validation names the index and the problem; it accepts every real transcript."""

from __future__ import annotations

import pytest

import ctxlab
import ctxlab.course


def call(call_id, name="search_logs", arguments="{}"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


VALID = [
    {"role": "system", "content": "You investigate incidents.", "step": 0},
    {"role": "user", "content": "Why did the export fail?", "step": 0, "pinned": True},
    {"role": "assistant", "content": "Two searches at once.", "tool_calls": [call("a"), call("b")], "step": 1},
    {"role": "tool", "tool_call_id": "b", "content": "no errors", "step": 1},
    {"role": "tool", "tool_call_id": "a", "content": "timeout", "step": 1},
    {"role": "assistant", "content": None, "tool_calls": [call("c")], "step": 2},
    {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "ok"}], "step": 2},
    {"role": "developer", "content": "Be brief."},
    {"role": "assistant", "content": "Done.", "name": "investigator", "refusal": None},
]


def test_real_shapes_are_accepted():
    ctxlab.validate_messages(VALID)
    assert list(ctxlab.messages.message_problems(VALID)) == []


@pytest.mark.parametrize("name", ["incident", "refund", "coding", "research", "parallel"])
def test_every_shipped_transcript_is_valid(name):
    messages = ctxlab.course.load_transcript(name)
    ctxlab.validate_messages(messages)
    assert ctxlab.pairs_ok(messages)


BAD = [
    ("unknown role", [{"role": "robot", "content": "hi"}], 0, "unknown role 'robot'"),
    ("legacy function role", [{"role": "function", "content": "hi"}], 0, "now 'tool'"),
    ("missing role", [{"content": "hi"}], 0, "missing 'role'"),
    ("missing content", [{"role": "user"}], 0, "missing 'content'"),
    ("content of the wrong type", [{"role": "user", "content": 42}], 0, "got int"),
    ("dict content", [{"role": "tool", "tool_call_id": "a", "content": {"x": 1}}], 0, "json.dumps"),
    ("user content None", [{"role": "user", "content": None}], 0, "needs 'content'"),
    ("not a dict", [["user", "hi"]], 0, "expected a dict"),
    ("orphan result", [{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "x", "content": "r"}], 1, "does not follow"),
    (
        "result after another message",
        [{"role": "assistant", "content": None, "tool_calls": [call("a")]}, {"role": "user", "content": "wait"},
         {"role": "tool", "tool_call_id": "a", "content": "r"}],
        0,  # the unanswered call is reported first, where it was made
        "never answered",
    ),
    ("call never answered", [{"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
                             {"role": "tool", "tool_call_id": "a", "content": "r"}], 0, "'b' is never answered"),
    ("answered twice", [{"role": "assistant", "content": None, "tool_calls": [call("a")]},
                        {"role": "tool", "tool_call_id": "a", "content": "r"},
                        {"role": "tool", "tool_call_id": "a", "content": "r"}], 2, "answered twice"),
    ("duplicate call id in one message", [{"role": "assistant", "content": None, "tool_calls": [call("a"), call("a")]},
                                          {"role": "tool", "tool_call_id": "a", "content": "r"}], 0, "appears twice"),
    ("result for an earlier group's call", [{"role": "assistant", "content": None, "tool_calls": [call("a")]},
                                            {"role": "tool", "tool_call_id": "a", "content": "r"},
                                            {"role": "assistant", "content": "next"},
                                            {"role": "tool", "tool_call_id": "a", "content": "r"}], 3, "another message comes between"),
    ("image in a tool message", [{"role": "assistant", "content": None, "tool_calls": [call("a")]},
                                 {"role": "tool", "tool_call_id": "a", "content": [
                                     {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}], 1, "content part 0"),
    ("unknown part type", [{"role": "user", "content": [{"type": "video", "url": "v"}]}], 0, "unknown part type 'video'"),
    ("file part", [{"role": "user", "content": [{"type": "file", "file": {"file_id": "f"}}]}], 0, "cannot be counted offline"),
    ("bad image detail", [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "huge"}}]}], 0, "detail"),
    ("a field holding a number", [{"role": "user", "content": "go", "weight": 3}], 0, "field 'weight'"),
    ("bad audio key", [{"role": "assistant", "content": "hi", "audio": "clip"}], 0, "'audio'"),
    ("annotations not a list", [{"role": "assistant", "content": "hi", "annotations": "none"}], 0, "'annotations'"),
    ("arguments not a string", [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"q": 1}}}]}], 0, "json.dumps"),
    ("tool message without id", [{"role": "tool", "content": "r"}], 0, "needs 'tool_call_id'"),
    ("bad step", [{"role": "user", "content": "go", "step": -1}], 0, "'step'"),
    ("bad pinned", [{"role": "user", "content": "go", "pinned": "yes"}], 0, "'pinned'"),
]


@pytest.mark.parametrize("label, messages, index, words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_the_index_and_the_problem(label, messages, index, words):
    with pytest.raises(ctxlab.MessageError) as err:
        ctxlab.validate_messages(messages)
    assert err.value.index == index
    assert str(err.value).startswith(f"message {index}:")
    assert words in str(err.value)


def test_tool_result_in_the_wrong_place_is_explained():
    messages = [{"role": "assistant", "content": None, "tool_calls": [call("a")]}, {"role": "user", "content": "wait"},
                {"role": "tool", "tool_call_id": "a", "content": "r"}]
    problems = list(ctxlab.messages.message_problems(messages))
    assert problems[-1][0] == 2
    assert "made by message 0" in problems[-1][1]


def test_a_dict_instead_of_a_list_is_refused():
    with pytest.raises(ctxlab.MessageError, match="wrap a single message in a list"):
        ctxlab.validate_messages({"role": "user", "content": "hi"})


def test_strip_course_keys_leaves_the_input_alone():
    messages = [{"role": "user", "content": "go", "step": 0, "pinned": True}]
    assert ctxlab.course.strip_course_keys(messages) == [{"role": "user", "content": "go"}]
    assert messages[0]["pinned"] is True
