"""Token counts: against tiktoken itself, the OpenAI cookbook formula, and offline loading."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import struct
import subprocess
import sys
import textwrap
import wave

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.tokens import REPLY_PRIMING, TOKENS_PER_MESSAGE, TOKENS_PER_TOOL_CALL


def cookbook_num_tokens_from_messages(messages, model="gpt-4"):
    """The OpenAI cookbook's function, as published, for gpt-4 (an independent reference)."""
    encoding = tiktoken.encoding_for_model(model)
    tokens_per_message = 3
    tokens_per_name = 1
    num_tokens = 0
    for message in messages:
        num_tokens += tokens_per_message
        for key, value in message.items():
            num_tokens += len(encoding.encode(value))
            if key == "name":
                num_tokens += tokens_per_name
    num_tokens += 3  # every reply is primed with <|start|>assistant<|message|>
    return num_tokens


COOKBOOK_EXAMPLE = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."},
]


def test_encoding_is_the_real_cl100k_base():
    enc = ctxlab.encoding()
    assert isinstance(enc, tiktoken.Encoding)
    assert enc.name == "cl100k_base"
    assert enc.n_vocab == 100277
    assert enc.encode_ordinary("hello world") == [15339, 1917]
    assert ctxlab.encoding() is enc  # cached
    assert enc.encode_ordinary("tiktoken is great!") == tiktoken.get_encoding("cl100k_base").encode_ordinary("tiktoken is great!")


def test_matches_the_cookbook_on_its_own_example():
    # The cookbook prints 129 prompt tokens for this example with gpt-4.
    assert cookbook_num_tokens_from_messages(COOKBOOK_EXAMPLE) == 129
    assert ctxlab.count_messages(COOKBOOK_EXAMPLE) == 129


plain_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)
plain_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "developer"]), "content": plain_text},
    optional={"name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True)},
)


@settings(max_examples=200, deadline=None)
@given(st.lists(plain_message, max_size=8))
def test_matches_the_cookbook_on_any_plain_messages(messages):
    # Tool results are not in the cookbook's rule: the bills show them read differently
    # (test_tool_calls_and_null_content, tests/test_billing.py).
    if any("<|" in m["content"] for m in messages):
        return  # the cookbook's encode() raises on special tokens; ctxlab counts them as text
    assert ctxlab.count_messages(messages) == cookbook_num_tokens_from_messages(messages)


def test_each_rule_adds_exactly_its_tokens():
    enc = ctxlab.encoding()
    base = {"role": "user", "content": "Find the export logs."}
    plain = ctxlab.count_messages([base])
    assert plain == TOKENS_PER_MESSAGE + 1 + len(enc.encode_ordinary(base["content"])) + REPLY_PRIMING
    named = ctxlab.count_messages([{**base, "name": "ops"}])
    assert named - plain == len(enc.encode_ordinary("ops")) + 1
    assert ctxlab.count_messages([{**base, "step": 4, "pinned": True}]) == plain
    assert ctxlab.count_messages([]) == REPLY_PRIMING


def test_tool_calls_and_null_content():
    enc = ctxlab.encoding()

    def tokens(text):
        return len(enc.encode_ordinary(text))

    args = json.dumps({"query": "export failed", "hour": "02:00"})
    one = {"id": "call_a", "type": "function", "function": {"name": "search_logs", "arguments": args}}
    two = {"id": "call_b", "type": "function", "function": {"name": "get_metrics", "arguments": "{}"}}
    single = {"role": "assistant", "content": None, "tool_calls": [one]}
    # One call: 3 + its name + its arguments as sent, and its result's author, functions.NAME,
    # instead of the role 'tool' (counted with the call, so that each message counts alone).
    named = tokens("functions.search_logs") - tokens("tool")
    assert ctxlab.count_message(single) == (
        TOKENS_PER_MESSAGE + tokens("assistant") + TOKENS_PER_TOOL_CALL + tokens("search_logs") + tokens(args) + named
    )
    with_text = {**single, "content": "Searching."}
    assert ctxlab.count_message(with_text) - ctxlab.count_message(single) == tokens("Searching.")
    # Several calls: one multi_tool_use.parallel call whose arguments list them compactly.
    parallel = {"role": "assistant", "content": None, "tool_calls": [one, two]}
    listed = ('{"tool_uses":[{"recipient_name":"functions.search_logs","parameters":{"query":"export failed",'
              '"hour":"02:00"}},{"recipient_name":"functions.get_metrics","parameters":{}}]}')
    assert ctxlab.count_message(parallel) == (
        TOKENS_PER_MESSAGE + tokens("assistant") + TOKENS_PER_TOOL_CALL + tokens("multi_tool_use.parallel")
        + tokens(listed) + named + tokens("functions.get_metrics") - tokens("tool")
    )
    # A result: its role, its content; not its tool_call_id nor a name.
    result = {"role": "tool", "tool_call_id": "call_a", "name": "search_logs", "content": "02:13 timeout"}
    assert ctxlab.count_message(result) == TOKENS_PER_MESSAGE + tokens("tool") + tokens("02:13 timeout")
    # A call and its result cost what the model reads: the result written by functions.search_logs.
    assert ctxlab.count_messages([single, result]) == (
        TOKENS_PER_MESSAGE + tokens("assistant") + TOKENS_PER_TOOL_CALL + tokens("search_logs") + tokens(args)
        + TOKENS_PER_MESSAGE + tokens("functions.search_logs") + tokens("02:13 timeout") + REPLY_PRIMING
    )


def test_text_parts_count_their_text():
    parts = {"role": "user", "content": [{"type": "text", "text": "first "}, {"type": "text", "text": "second"}]}
    enc = ctxlab.encoding()
    assert ctxlab.count_message(parts) == TOKENS_PER_MESSAGE + 1 + len(enc.encode_ordinary("first ")) + len(enc.encode_ordinary("second"))


@pytest.mark.parametrize(
    "message, words",
    [
        ({"role": "user", "content": [{"type": "file", "file": {"file_id": "f"}}]}, "cannot be counted offline"),
        ({"role": "user", "content": {"text": "hi"}}, "cannot count field 'content'"),
        ({"role": "assistant", "content": None, "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {"q": 1}}}]}, "json.dumps"),
    ],
)
def test_uncountable_fields_are_named(message, words):
    with pytest.raises(ctxlab.MessageError, match="message 0") as err:
        ctxlab.count_messages([message])
    assert words in str(err.value)


def test_special_token_text_is_counted_as_text():
    assert ctxlab.count_text("<|endoftext|>") == len(ctxlab.encoding().encode_ordinary("<|endoftext|>"))


def test_count_tools_counts_the_typed_listing_the_model_reads():
    tools = [{"type": "function", "function": {"name": "search_logs", "description": "Search logs by hour.",
              "parameters": {"type": "object", "properties": {"hour": {"type": "string"}}, "required": ["hour"]}}}]
    enc = ctxlab.encoding()
    listing = ("# Tools\n\n## functions\n\nnamespace functions {\n\n// Search logs by hour.\n"
               "type search_logs = (_: {\nhour: string,\n}) => any;\n\n} // namespace functions")
    # a system message of its own: 3 of framing, its role, the listing, and the measured adjustment
    assert ctxlab.count_tools(tools) == 3 + len(enc.encode_ordinary("system")) + len(enc.encode_ordinary(listing)) - 1
    assert ctxlab.count_tools(tools) < len(enc.encode_ordinary(json.dumps(tools[0], separators=(",", ":")))) + 3
    assert ctxlab.count_tools([]) == 0 and ctxlab.count_tools(None) == 0
    assert ctxlab.count_tools(tools) < ctxlab.count_tools(tools * 2) < 2 * ctxlab.count_tools(tools)  # one header
    custom = {"type": "custom", "custom": {"name": "apply_patch", "description": "Apply a patch."}}
    assert ctxlab.count_tools([custom]) == len(enc.encode_ordinary(json.dumps(custom, separators=(",", ":"))))
    assert ctxlab.count_tools([*tools, custom]) == ctxlab.count_tools(tools) + ctxlab.count_tools([custom])
    with pytest.raises(ValueError, match="tool 0"):
        ctxlab.count_tools([{"name": "search_logs"}])


def test_token_counter_agrees_and_remembers():
    messages = ctxlab.course.load_transcript("incident")
    counter = ctxlab.TokenCounter()
    assert counter.messages(messages) == ctxlab.count_messages(messages)
    calls = counter.encoder_calls
    assert counter.messages(messages) == ctxlab.count_messages(messages)
    assert counter.encoder_calls == calls  # nothing re-encoded
    changed = [*messages[:-1], {**messages[-1], "content": "a different answer"}]
    assert counter.messages(changed) == ctxlab.count_messages(changed)
    assert counter.encoder_calls == calls + 1  # only the changed content


def test_token_counter_is_bounded():
    counter = ctxlab.TokenCounter(max_entries=10)
    for i in range(50):
        counter.message({"role": "user", "content": f"message number {i}"})
    assert len(counter._cache) <= 10


OFFLINE_PRELUDE = textwrap.dedent(
    """
    import socket
    def refuse(*args, **kwargs):
        raise OSError("network disabled for this test")
    socket.socket.connect = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    """
)


def run_offline(code: str, cache_dir) -> subprocess.CompletedProcess:
    env = {"TIKTOKEN_CACHE_DIR": str(cache_dir), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", OFFLINE_PRELUDE + textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=120,
    )


def test_works_offline_on_a_fresh_machine(tmp_path):
    cache = tmp_path / "empty-cache"
    result = run_offline(
        """
        import ctxlab, tiktoken
        enc = ctxlab.encoding()
        assert enc.name == "cl100k_base", enc.name
        assert tiktoken.get_encoding("cl100k_base").encode_ordinary("hi") == enc.encode_ordinary("hi")
        print("ok")
        """,
        cache,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert len(list(cache.iterdir())) == 1  # the genuine file, under tiktoken's own key


def test_a_corrupted_cached_file_is_replaced(tmp_path):
    cache = tmp_path / "cache"
    run_offline("import ctxlab; ctxlab.encoding()", cache)
    (cached,) = cache.iterdir()
    cached.write_bytes(b"not a rank file")
    result = run_offline("import ctxlab; print(ctxlab.encoding().encode_ordinary('hello world'))", cache)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[15339, 1917]"


def test_an_encoding_with_no_offline_source_says_what_to_do(tmp_path):
    result = run_offline(
        """
        import ctxlab
        try:
            ctxlab.encoding("p50k_base")
        except ctxlab.errors.EncodingUnavailable as err:
            print(err)
        """,
        tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr
    assert "cl100k_base, o200k_base" in result.stdout and "network" in result.stdout


def test_unknown_encoding_lists_the_known_ones():
    with pytest.raises(ValueError, match="cl100k_base"):
        ctxlab.encoding("no_such_encoding")


# --- every part and key the API accepts is counted by a documented rule -------------------


def png_url(width, height):
    header = b"\x89PNG\r\n\x1a\n" + b"\0\0\0\rIHDR" + struct.pack(">II", width, height) + b"\x08\x02\0\0\0"
    return "data:image/png;base64," + base64.b64encode(header).decode()


def wav_b64(seconds, rate=8_000):
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\0\0" * int(seconds * rate))
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.parametrize(
    "width, height, detail, tokens",
    [  # OpenAI's published examples for gpt-4o, and the edges of the rule
        (1024, 1024, "high", 765),
        (2048, 4096, "high", 1105),
        (4096, 8192, "low", 85),
        (512, 512, "auto", 255),
        (513, 512, "high", 425),
        (100, 3000, "high", 85 + 170 * 4),  # 68 x 2048 after the first scaling
    ],
)
def test_image_parts_follow_the_published_rule(width, height, detail, tokens):
    part = {"type": "image_url", "image_url": {"url": png_url(width, height), "detail": detail}}
    message = {"role": "user", "content": [part]}
    assert ctxlab.count_message(message) == TOKENS_PER_MESSAGE + 1 + tokens
    ctxlab.validate_messages([message])


def test_an_image_of_unknown_size_costs_the_configured_amount():
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}
    assert ctxlab.count_message(message) == TOKENS_PER_MESSAGE + 1 + ctxlab.parts.UNKNOWN_IMAGE_TOKENS
    assert ctxlab.count_message(message, unknown_image_tokens=2_000) == TOKENS_PER_MESSAGE + 1 + 2_000
    assert ctxlab.TokenCounter(unknown_image_tokens=10).message(message) == TOKENS_PER_MESSAGE + 1 + 10


def test_audio_refusal_and_sdk_keys_are_counted():
    enc = ctxlab.encoding()
    audio = {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": wav_b64(2.5), "format": "wav"}}]}
    assert ctxlab.count_message(audio) == TOKENS_PER_MESSAGE + 1 + 25
    refusal = {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}
    assert ctxlab.count_message(refusal) == TOKENS_PER_MESSAGE + 1 + len(enc.encode_ordinary("I can't help with that."))
    dumped = {"role": "assistant", "content": "Done.", "refusal": None, "annotations": [], "audio": None,
              "function_call": None, "tool_calls": None, "name": None}
    assert ctxlab.count_message(dumped) == ctxlab.count_message({"role": "assistant", "content": "Done."})
    replayed = {"role": "assistant", "content": None, "audio": {"id": "audio_abc"}}
    assert ctxlab.count_message(replayed) == TOKENS_PER_MESSAGE + 1 + len(enc.encode_ordinary("audio_abc"))
    for message in (audio, refusal, dumped, replayed):
        ctxlab.validate_messages([message])


def test_errors_name_the_index_or_say_the_message_never_none():
    bad = {"role": "user", "content": [{"type": "file", "file": {}}]}
    for call in (lambda: ctxlab.count_message(bad), lambda: ctxlab.TokenCounter().message(bad)):
        with pytest.raises(ctxlab.MessageError) as err:
            call()
        assert "None" not in str(err.value) and str(err.value).startswith("the message:")
    with pytest.raises(ctxlab.MessageError, match="^message 1:"):
        ctxlab.count_messages([{"role": "user", "content": "ok"}, bad])


def test_o200k_base_is_genuine_and_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    ctxlab.encoding.cache_clear()
    try:
        enc = ctxlab.encoding("o200k_base")
        assert enc.name == "o200k_base" and enc.n_vocab == 200_019
        assert enc.encode_ordinary("hello world") == [24912, 2375]  # tiktoken's published example
        assert ctxlab.tokens.encoding_for_model("gpt-4o-mini") is enc
        assert ctxlab.tokens.encoding_for_model("gpt-4").name == "cl100k_base"
        # the seeded file is the genuine one: tiktoken loads it by name, hash-checked, offline
        url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
        cached = tmp_path / hashlib.sha1(url.encode()).hexdigest()  # tiktoken's own cache key
        assert hashlib.sha256(cached.read_bytes()).hexdigest() == (
            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # tiktoken's expected_hash
        )
    finally:
        ctxlab.encoding.cache_clear()


def _read_as_sent(messages, enc):
    """The lookup rule, written plainly: the messages as the model reads them
    (ctxlab.billing.as_rendered), then 3 per message, every string, 1 more per name, 3 plus
    name and arguments per call, 3 of priming."""
    total = 3
    for message in ctxlab.billing.as_rendered(ctxlab.course.strip_course_keys(messages)):
        total += 3
        for key, value in message.items():
            if isinstance(value, str):
                total += len(enc.encode_ordinary(value)) + (key == "name")
            elif key == "tool_calls" and value:
                for call in value:
                    function = call["function"]
                    total += 3 + len(enc.encode_ordinary(function["name"])) + len(enc.encode_ordinary(function["arguments"]))
    return total


@pytest.mark.parametrize("encoding_name", ["cl100k_base", "o200k_base"])
def test_each_message_counted_alone_adds_up_to_the_exchange_as_the_model_reads_it(encoding_name):
    """count_messages counts a result's author with its call, so that each message's count
    stands alone; on a history whose calls are all answered that is the lookup rule exactly,
    once the results of each parallel call are read as the one message they are."""
    enc = ctxlab.encoding(encoding_name)
    for name in ctxlab.course.transcript_names():
        history = ctxlab.course.load_transcript(name)
        assert ctxlab.count_messages(history, enc) + ctxlab.billing.parallel_results_difference(
            ctxlab.course.strip_course_keys(history), enc) == _read_as_sent(history, enc), name
        assert ctxlab.count_messages(history, enc) == 3 + sum(ctxlab.count_message(m, enc) for m in history)
