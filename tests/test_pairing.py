"""The API's pairing rule, local to each turn group, as properties over random histories.

Each tool message answers a call of the assistant message before its group; each call is
answered once; ids are unique within one assistant message and may come back in a later one.
Validation, counting, fitting, the growing history and the high/low trimmer all agree on it.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab

IDS = st.sampled_from(["call_a", "call_b", "call_c", "call_d"])  # a small pool: ids come back


def call(call_id, name="lookup"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


@st.composite
def group(draw):
    kind = draw(st.sampled_from(["user", "text", "calls"]))
    if kind == "user":
        return [{"role": "user", "content": draw(st.text(max_size=20))}]
    if kind == "text":
        return [{"role": "assistant", "content": draw(st.text(max_size=20))}]
    ids = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    order = draw(st.permutations(ids))
    assistant = {"role": "assistant", "content": draw(st.none() | st.text(max_size=10)),
                 "tool_calls": [call(i) for i in ids]}
    return [assistant, *({"role": "tool", "tool_call_id": i, "content": draw(st.text(max_size=30))} for i in order)]


@st.composite
def history(draw):
    groups = draw(st.lists(group(), min_size=1, max_size=12))
    return [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}] + [m for g in groups for m in g]


def assistants_with_calls(messages):
    return [i for i, m in enumerate(messages) if m.get("tool_calls")]


@settings(max_examples=150, deadline=None)
@given(history())
def test_every_history_the_api_accepts_passes_everywhere(messages):
    ctxlab.validate_messages(messages)
    assert ctxlab.pairs_ok(messages)
    total = ctxlab.count_messages(messages)
    allowance = max(total // 2, 1)
    try:
        kept, dropped = ctxlab.fit(messages, allowance)
    except ctxlab.BudgetError:
        pass
    else:
        assert ctxlab.pairs_ok(kept)
    grown = ctxlab.history.GrowingHistory(messages)
    assert grown.tokens == total - 3
    trimmer = ctxlab.HighLowTrimmer(high=max(total // 2, 2), low=max(total // 4, 1))
    with contextlib.suppress(ctxlab.BudgetError):  # the newest group may not fit the low mark
        assert ctxlab.pairs_ok(trimmer(messages))


@settings(max_examples=150, deadline=None)
@given(history(), st.data())
def test_a_missing_result_is_named_at_its_call(messages, data):
    calls = assistants_with_calls(messages)
    if not calls:
        return
    at = data.draw(st.sampled_from(calls))
    results = [i for i in range(at + 1, len(messages)) if messages[i]["role"] == "tool"
               and all(messages[j]["role"] == "tool" for j in range(at + 1, i))]
    gone = data.draw(st.sampled_from(results))
    broken = messages[:gone] + messages[gone + 1:]
    with pytest.raises(ctxlab.MessageError) as err:
        ctxlab.validate_messages(broken)
    assert err.value.index == at and "never answered" in str(err.value)
    assert not ctxlab.pairs_ok(broken)
    with pytest.raises(ctxlab.MessageError):
        ctxlab.HighLowTrimmer(high=10**9, low=1)(broken + [{"role": "user", "content": "next"}])


@settings(max_examples=150, deadline=None)
@given(history(), st.data())
def test_a_result_answered_twice_or_out_of_its_group_is_named(messages, data):
    results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    if not results:
        return
    at = data.draw(st.sampled_from(results))
    twice = messages[:at + 1] + [dict(messages[at])] + messages[at + 1:]
    with pytest.raises(ctxlab.MessageError) as err:
        ctxlab.validate_messages(twice)
    assert err.value.index == at + 1 and "answered twice" in str(err.value)
    assert not ctxlab.pairs_ok(twice)
    # the same result after a message of another group answers nothing there
    late = messages + [{"role": "user", "content": "later"}, dict(messages[at])]
    with pytest.raises(ctxlab.MessageError) as err:
        ctxlab.validate_messages(late)
    assert err.value.index == len(late) - 1
    with pytest.raises(ctxlab.MessageError) as err:
        ctxlab.history.GrowingHistory().extend(late)
    assert err.value.index == len(late) - 1


def test_reuse_by_a_later_message_is_the_api_rule_not_an_error():
    messages = [{"role": "user", "content": "go"}]
    for lap in range(3):  # the same id, answered each time by the next message
        messages += [{"role": "assistant", "content": None, "tool_calls": [call("call_1")]},
                     {"role": "tool", "tool_call_id": "call_1", "content": f"result {lap}"}]
    ctxlab.validate_messages(messages)
    kept, dropped = ctxlab.fit(messages, ctxlab.count_messages(messages) - 3 - 20)
    assert ctxlab.pairs_ok(kept) and kept[-1]["content"] == "result 2"


# --- validation and counting accept the same messages ------------------------------------------

PARTS = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
    st.fixed_dictionaries({"type": st.just("text"), "text": st.integers()}),
    st.fixed_dictionaries({"type": st.just("refusal"), "refusal": st.text(max_size=10)}),
    st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries(
        {"url": st.just("https://example.com/a.png"), "detail": st.sampled_from(["low", "high", "auto", "big"])})}),
    st.fixed_dictionaries({"type": st.just("input_audio"), "input_audio": st.fixed_dictionaries(
        {"data": st.just("UklGRg=="), "format": st.sampled_from(["wav", "mp3", "ogg"])})}),
    st.fixed_dictionaries({"type": st.just("file"), "file": st.just({"file_id": "f"})}),
    st.just("plain"),
)
VALUES = st.one_of(st.none(), st.text(max_size=10), st.integers(), st.lists(PARTS, max_size=3), st.just([]),
                   st.just({"id": "audio_1"}))


@st.composite
def one_message(draw):
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    message = {"role": role, "content": draw(st.one_of(st.text(max_size=10), st.lists(PARTS, max_size=3), st.none()))}
    if role == "tool":
        message["tool_call_id"] = "call_a"
    for key in draw(st.lists(st.sampled_from(["refusal", "annotations", "audio", "name", "extra"]), unique=True)):
        message[key] = draw(VALUES)
    return message


@settings(max_examples=400, deadline=None)
@given(one_message())
def test_validation_and_counting_agree(message):
    messages = [message]
    if message["role"] == "tool":
        messages = [{"role": "assistant", "content": None, "tool_calls": [call("call_a")]}, message]
    problems = list(ctxlab.messages.message_problems(messages))
    try:
        ctxlab.count_messages(messages)
    except ctxlab.MessageError as err:  # whatever counting refuses, validation refuses first
        assert problems, f"counting refused what validation accepts: {err}"
        assert str(err).startswith(f"message {len(messages) - 1}:")
    field_problems = [p for _, p in problems if "needs 'content'" not in p]
    if not field_problems:
        ctxlab.count_messages(messages)  # and every part and field validation accepts is counted


# --- SDK objects -------------------------------------------------------------------------------


def sdk_reply():
    from openai.types.chat import ChatCompletionMessage

    return ChatCompletionMessage.model_validate({
        "role": "assistant", "content": None, "refusal": None, "annotations": [], "audio": None,
        "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
    })


def test_sdk_objects_are_read_as_their_dump_and_converted_by_as_messages():
    reply = sdk_reply()
    history = [{"role": "user", "content": "go"}, reply, {"role": "tool", "tool_call_id": "call_9", "content": "ok"}]
    ctxlab.validate_messages(history)  # the reply as it comes back from the SDK
    plain = ctxlab.messages.as_messages(history)
    assert ctxlab.count_message(reply) == ctxlab.count_message(plain[1])
    assert plain[1] == {"role": "assistant", "tool_calls": [call("call_9")]}
    assert plain[0] is history[0]
    ctxlab.validate_messages(plain)
    with_nones = reply.model_dump()  # exclude_none=False: every key the SDK knows, most None
    ctxlab.validate_messages([history[0], with_nones, history[2]])
    assert ctxlab.count_message(with_nones) == ctxlab.count_message(plain[1])
    grown = ctxlab.history.GrowingHistory()
    grown.extend(plain)
    assert grown.tokens == ctxlab.count_messages(plain) - 3


def test_an_async_client_gets_a_clear_error():
    openai = pytest.importorskip("openai")
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9")
    with pytest.raises(TypeError, match="synchronous client"):
        ctxlab.llm.complete(client, [{"role": "user", "content": "hi"}], model="m")

    class Wrapped:  # an async create behind a plain-looking object
        class chat:  # noqa: N801
            class completions:  # noqa: N801
                @staticmethod
                def create(**kwargs):
                    async def later():
                        return None
                    return later()

    with pytest.raises(TypeError, match="synchronous client"):
        ctxlab.llm.complete(Wrapped(), [{"role": "user", "content": "hi"}], model="m")
    with pytest.raises(TypeError, match="openai interface"):
        ctxlab.llm.complete(object(), [{"role": "user", "content": "hi"}], model="m")
