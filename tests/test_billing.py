"""``ctxlab.count_request`` against what the API billed for real recorded requests.

The recordings are read where they lie (``tests/support/recordings.py``): the shared set beside
the clone and the recorded real runs in ``../shared/real-runs/``. Without them these tests are
skipped, with the path they looked at; with ``CTXLAB_REQUIRE_RECORDINGS=1`` (as ``.ci/run``
sets) they fail instead.

A request is counted right when it lands within max(2%, 3 tokens) of its bill. Requests a
published rule cannot count yet are listed in ``PENDING`` by reason, with how many requests of
each kind it leaves off their bill, and requests the tool rendering still misses for reasons not
yet understood in ``UNEXPLAINED`` by label: a fix shows up as a list that must shrink.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import warnings
from pathlib import Path

import pytest
from support import recordings

import ctxlab
import ctxlab.course

TOLERANCE = 0.02


def within(counted: int, billed: int) -> bool:
    """True when ``counted`` is within max(2%, 3 tokens) of ``billed``."""
    return abs(counted - billed) <= max(3, TOLERANCE * billed)


def _remote_images(recorded) -> bool:
    """An image given by URL: its size, and so its price, cannot be known offline."""
    return any(
        isinstance(message.get("content"), list)
        and any(part.get("type") == "image_url"
                and not ctxlab.parts.image_reference(part)["url"].startswith("data:")
                for part in message["content"])
        for message in recorded.request["messages"]
    )


def _tool_history(recorded) -> bool:
    return any(message.get("role") == "tool" for message in recorded.request["messages"])


def _unpriced(recorded) -> bool:
    request = recorded.request
    return bool({"prediction", "web_search_options"} & set(request))


def _audio(recorded) -> bool:
    return any(isinstance(m.get("content"), list) and any(p.get("type") == "input_audio" for p in m["content"])
               for m in recorded.request["messages"])


# What the counter does not model yet, with how many requests of each kind ("plain", "tools")
# each leaves off their bill. Each reason is a rule a later step adds; the counts pin the list so
# that it only shrinks.
PENDING = {
    "an image by remote URL: its size cannot be known offline, so it is counted at the most an image "
    "can cost the model, an upper bound (test_an_image_by_url_is_counted_at_or_above_its_bill)": (
        _remote_images, {"plain": 8, "tools": 2, "format": 0}),
    "keys no published rule prices: prediction (billed as output, yet the bill's input grows), "
    "web_search_options (search models bill their own prompt)": (_unpriced, {"plain": 3, "tools": 0, "format": 0}),
    "audio input: the per-second rate is not published": (_audio, {"plain": 1, "tools": 0, "format": 0}),
    "the real runs keep a run's messages and tools, not its other request keys: native-output was "
    "sent with a response_format (pydantic-ai's NativeOutput)": (
        lambda r: r.label == "real-runs/native-output", {"plain": 0, "tools": 1, "format": 0}),
}

# Requests the rendering still misses, by label, with the model and how far off (billed - counted)
# each was when listed. The clusters to study:
# - beeai's anyOf schemas (+33): the only string "format" here ("date", in an anyOf with null).
#   Showing those two properties' anyOf as JSON lands within 5; no rule found fits it and the
#   type-list rule of ctxlab/tool_text.py at once.
# - langchaingo's GoogleSearch tool on gpt-4 (-8, -9): the only description that starts with a
#   newline and holds quoted lines; the calculator beside it lands on its bill alone on gpt-4o;
# - sublayer's nested objects under a named tool_choice (-5, -9): the other seven tool sets
#   with a nested object land between -4 and +6, with no pattern in the nesting;
UNEXPLAINED = frozenset({
    "tmc/langchaingo agents/testdata/TestExecutorWithOpenAIFunctionAgent.httprr #0",  # gpt-4: -8
    "tmc/langchaingo agents/testdata/TestExecutorWithOpenAIFunctionAgent.httprr #2",  # gpt-4: -9
    "Future-House/ldp packages/lmi/tests/cassettes/TestTooling.test_custom_tool_parser_from_config.yaml #0",  # gpt-4o-mini-2024-07-18: +4
    "Arize-ai/openinference python/instrumentation/openinference-instrumentation-beeai/tests/openinference/instrumentation/beeai/cassettes/test_instrumentor/test_agent.yaml #0",  # gpt-4o-mini: +33
    "Arize-ai/openinference python/instrumentation/openinference-instrumentation-beeai/tests/openinference/instrumentation/beeai/cassettes/test_instrumentor/test_llm_with_tools.yaml #0",  # gpt-4o: +33
    "sublayerapp/sublayer spec/vcr_cassettes/openai/generators/imaginary_movie_review_generator/3_reviews.yml #0",  # gpt-4o: -5
    "sublayerapp/sublayer spec/vcr_cassettes/openai/generators/product_description_generator/super_gadget.yml #0",  # gpt-4o: -9
    "real-runs/capitals-two-questions",  # gpt-4o-mini: +4
})


@pytest.fixture(scope="module")
def shared():
    reason = recordings.shared_available()
    if reason:
        if os.environ.get("CTXLAB_REQUIRE_RECORDINGS") == "1":
            pytest.fail(f"CTXLAB_REQUIRE_RECORDINGS=1 but {reason}")
        pytest.skip(reason)
    return list(recordings.shared())


@pytest.fixture(scope="module")
def everything(shared):
    recordings.require(recordings.real_available())
    return shared + list(recordings.real())


def _pending_reason(recorded) -> str | None:
    if recorded.label in UNEXPLAINED:
        return "unexplained"
    for reason, (applies, _count) in PENDING.items():
        if applies(recorded):
            return reason
    return None


def _count(recorded) -> int | str:
    """The count, a key it leaves out included (its warning is what the next test checks)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ctxlab.billing.UnknownKeyWarning)
            warnings.simplefilter("ignore", ctxlab.billing.UpperBoundWarning)
            return ctxlab.count_request(recorded.request)
    except (ValueError, TypeError) as err:
        return f"refused: {err}"


def test_a_cache_hit_is_1024_tokens_and_then_steps_of_128(shared):
    """What lesson 06 prices a served prefix by: every non-zero cached_tokens the API reported is
    1,024 plus a multiple of 128, but two that read 1, both from one project's token-count tests.
    The lesson quotes these counts (27 of 29): a change in the recordings must reach its text."""
    served = [(label, n) for label, n in recordings.cached_tokens() if n]
    off = [label for label, n in served if n < 1024 or n % 128]
    assert (len(served) - len(off), len(served)) == (27, 29), served
    assert all("Arize-ai/openinference" in label and "token_counts" in label.lower() for label in off), off


def test_the_recordings_are_what_their_readme_says(shared):
    assert len(shared) == 1219
    kinds = [r.kind for r in shared]
    assert kinds.count("tools") == 347
    assert all(r.billed > 0 and r.request["messages"] for r in shared)


@pytest.mark.parametrize("kind", ["plain", "tools", "format"])
def test_requests_land_on_their_bill(everything, kind):
    """Requests without tools, with tools (or legacy functions), with a response format."""
    chosen = [r for r in everything if r.kind == kind]
    assert len(chosen) > 100
    off, pending = [], {reason: [] for reason in [*PENDING, "unexplained"]}
    for recorded in chosen:
        counted = _count(recorded)
        if isinstance(counted, int) and within(counted, recorded.billed):
            continue
        reason = _pending_reason(recorded)
        if reason is None:
            off.append(f"{recorded.label} ({recorded.model}): counted {counted}, billed {recorded.billed}")
        else:
            pending[reason].append(recorded.label)
    assert not off, f"{len(off)} of {len(chosen)} {kind} requests are off their bill:\n" + "\n".join(off)
    listed = {label for label in UNEXPLAINED if any(r.label == label for r in chosen)}
    assert set(pending["unexplained"]) == listed, (
        f"now on their bill, drop them from UNEXPLAINED: {sorted(listed - set(pending['unexplained']))}")
    for reason, (_applies, counts) in PENDING.items():
        expected = counts[kind]
        assert len(pending[reason]) == expected, (
            f"{len(pending[reason])} requests are still off for '{reason}', the table says {expected}: "
            "when a fix brings some onto their bill, lower the number (or drop the reason)"
        )


# The requests of the second shared file (projects the rules were not fitted on) that are off
# their bill, each with its model, its kind and how far off it is (counted - billed) or why it
# is refused. The harmony rules, one-line nested objects and empty parameters (ctxlab/billing.py,
# ctxlab/tool_text.py) took 43 of the 65 listed before them off this table: a fix shows up as a
# label that must leave it. The images by URL are upper bounds, checked as such below.
MORE_OFF = {
    "DataDog/dd-trace-py tests/cassettes/openai/openai_chat_completions_post_3eb1f03d.yaml #0": "gpt-4o, plain: +340 on 1118, an image by URL",
    "DataDog/dd-trace-py tests/contrib/openai/cassettes/v1/chat_completion.yaml #0": "gpt-3.5-turbo, plain: -4 on 57",
    "DataDog/dd-trace-py tests/contrib/openai/cassettes/v1/chat_completion_custom_tool_call.yaml #0": "gpt-5, tools: -223 on 241, a custom tool left out",
    "DataDog/dd-trace-py tests/contrib/openai/cassettes/v1/chat_completion_image_input.yaml #0": "gpt-4-vision-preview, plain: +340 on 1118, an image by URL",
    "DataDog/dd-trace-py tests/contrib/openai/cassettes/v1/chat_completion_tool_call_follow_up.yaml #0": "gpt-3.5-turbo, plain: +20 on 143",
    "DataDog/dd-trace-py tests/contrib/openai/cassettes/v1/chat_completion_tool_call_streamed.yaml #0": "gpt-3.5-turbo, plain: -149 on 166",
    "DataDog/dd-trace-py tests/contrib/openai_agents/cassettes/test_multiple_agent_handoffs_with_chat_completions.yaml #0": "gpt-4o, tools: -4 on 117",
    "DataDog/dd-trace-py tests/contrib/openai_agents/cassettes/test_multiple_agent_handoffs_with_chat_completions.yaml #1": "gpt-4o, tools: -6 on 174",
    "DataDog/dd-trace-py tests/contrib/openai_agents/cassettes/test_multiple_agent_handoffs_with_chat_completions.yaml #2": "gpt-4o, plain: -8 on 151",
    "DataDog/dd-trace-py tests/contrib/openai_agents/cassettes/test_oai_agents_with_guardrail_spans.yaml #1": "gpt-4o, tools: -4 on 100",
    "braintrustdata/braintrust-sdk-ruby test/fixtures/vcr_cassettes/openai/vision.yml #0": "gpt-4o-mini, plain: +39669 on 8513, an image by URL",
    "llmrb/llm spec/fixtures/cassettes/openai/files/describe_freebsd_sysctl_3_pdf.yml #1": "gpt-4.1, plain: PDF",
    "llmrb/llm spec/fixtures/cassettes/openai/files/describe_freebsd_sysctl_4_pdf.yml #1": "gpt-4.1, plain: PDF",
    "lmnr-ai/lmnr-python tests/test_instrumentations/test_openai/traces/cassettes/test_vision/test_vision.yaml #0": "gpt-4-vision-preview, plain: +1020 on 438, an image by URL",
    "posit-dev/chatlas tests/_vcr/test_provider_openai_completions/test_openai_completions_pdf_url.yaml #1": "gpt-5.4, plain: PDF",
    "posit-dev/chatlas tests/_vcr/test_provider_openai_completions/test_openai_images.yaml #0": "gpt-5.4, plain: +207 on 15, a data: image",
    "posit-dev/chatlas tests/_vcr/test_provider_openai_completions/test_openai_images.yaml #1": "gpt-5.4, plain: +1103 on 108, an image by URL",
    "posit-dev/chatlas tests/_vcr/test_provider_openai_completions/test_openai_pdf.yaml #1": "gpt-5.4, plain: PDF",
    "tidyverse/ellmer tests/testthat/_vcr/openai-image.yml #1": "gpt-4.1-mini, plain: +2372 on 145, an image by URL",
    "tidyverse/ellmer tests/testthat/_vcr/openai-pdf.yml #0": "gpt-4.1-nano, plain: PDF",
    "tidyverse/ellmer tests/testthat/_vcr/openai-pdf.yml #1": "gpt-4.1-nano, plain: PDF",
    "tidyverse/ellmer tests/testthat/_vcr/openai-pdf.yml #2": "gpt-4.1-nano, plain: PDF",
}
# PDF: a file part, refused, since its cost depends on the model's own parser.


def test_the_second_file_is_off_its_bill_only_where_listed():
    recordings.require(recordings.more_available())
    more = list(recordings.shared(recordings.MORE))
    assert len(more) >= 400 and len({r.label for r in more}) == len(more)
    off = {r.label for r in more if not (isinstance(_count(r), int) and within(_count(r), r.billed))}
    assert not off - set(MORE_OFF), f"newly off their bill: {sorted(off - set(MORE_OFF))}"
    assert not set(MORE_OFF) - off, f"now on their bill, drop them from MORE_OFF: {sorted(set(MORE_OFF) - off)}"


def _held(recorded) -> bool:
    """On its bill, or, for a request with an image given by URL, an upper bound of it (the
    counter says so, and a budget built on it stays safe)."""
    counted = _count(recorded)
    if not isinstance(counted, int):
        return False
    return within(counted, recorded.billed) or (_remote_images(recorded) and counted >= recorded.billed)


FAMILIES = (("gpt-3.5", "gpt-3.5"), ("gpt-4o", "gpt-4o"), ("chatgpt-4o", "gpt-4o"), ("gpt-4.1", "gpt-4.1"),
            ("gpt-4.5", "gpt-4.5"), ("gpt-4", "gpt-4"), ("gpt-5", "gpt-5"), ("o", "o-series"))


def family(model: str) -> str:
    """The model family a recorded request's model belongs to, by the first matching prefix."""
    return next((name for prefix, name in FAMILIES if model.startswith(prefix)), model)


@pytest.fixture(scope="module")
def both_files(everything):
    recordings.require(recordings.more_available())
    return everything + list(recordings.shared(recordings.MORE))


def test_the_exceptions_are_at_most_two_percent_of_the_recordings(both_files):
    """The requests of both shared files and the real runs that are neither on their bill nor
    (an image by URL) above it, whatever their reason, are at most 2% of them all."""
    off = [f"{r.label} ({r.model})" for r in both_files if not _held(r)]
    assert len(off) <= TOLERANCE * len(both_files), (
        f"{len(off)} of {len(both_files)} recorded requests are off their bill, more than 2%:\n" + "\n".join(off))


def test_every_model_family_with_30_recordings_is_held_at_95_percent(both_files):
    by_family: dict[str, list] = {}
    for recorded in both_files:
        by_family.setdefault(family(recorded.model), []).append(recorded)
    low = {name: f"{sum(map(_held, chosen))} of {len(chosen)}" for name, chosen in by_family.items()
           if len(chosen) >= 30 and sum(map(_held, chosen)) < 0.95 * len(chosen)}
    assert not low, f"model families under 95% of their recorded requests held: {low}"
    assert {"gpt-3.5", "gpt-4", "gpt-4o", "gpt-4.1", "gpt-5"} <= {n for n, c in by_family.items() if len(c) >= 30}


def test_a_key_the_counter_does_not_know_is_left_out_with_a_warning_or_refused_when_strict():
    """New request parameters appear every few months: a count goes on without the key, says so,
    and strict=True refuses as before. A known key no rule prices says why."""
    plain = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    for key, value, why in (("a_parameter_from_2027", {"x": 1}, None),
                            ("web_search_options", {}, "search models bill a prompt of their own")):
        with pytest.warns(ctxlab.billing.UnknownKeyWarning, match=f"not counted: request key.*'{key}'") as caught:
            assert ctxlab.count_request({**plain, key: value}) == ctxlab.count_request(plain)
        assert why is None or why in str(caught[0].message)
        with pytest.raises(ValueError, match=f"cannot count request key.*'{key}'"):
            ctxlab.count_request({**plain, key: value}, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # keys that add nothing, or are unset, pass in silence
        ctxlab.count_request({**plain, "store": True, "metadata": {"a": "b"}, "user": "u", "prompt_cache_key": "k",
                              "safety_identifier": "s", "tool_choice": None, "response_format": {"type": "text"}})


def test_count_request_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="model"):
        ctxlab.count_request({"model": "claude-3", "messages": [{"role": "user", "content": "Hi"}]})
    with pytest.raises(ValueError, match="'messages'"):
        ctxlab.count_request({"model": "gpt-4o"})


def test_the_encoding_follows_the_model():
    messages = [{"role": "user", "content": "naïve café — 東京"}]
    assert ctxlab.count_request({"model": "gpt-4o-mini", "messages": messages}) == ctxlab.count_messages(
        messages, ctxlab.encoding("o200k_base"))
    assert ctxlab.count_request({"model": "gpt-4", "messages": messages}) == ctxlab.count_messages(
        messages, ctxlab.encoding("cl100k_base"))


# --- count_request's rules, one at a time (no recordings needed) ---------------------------

def _call(call_id, name="get_weather", arguments='{"city":"Paris"}'):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def test_tool_call_ids_are_not_billed():
    def request(call_id):
        return {"model": "gpt-4o", "tools": [WEATHER], "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [_call(call_id)]},
            {"role": "tool", "tool_call_id": call_id, "content": "sunny"}]}
    assert ctxlab.count_request(request("c1")) == ctxlab.count_request(request("call_" + "x" * 40))


def test_a_tool_result_is_authored_by_the_function_it_answers():
    short = {"model": "gpt-4o", "messages": [
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", name="f")]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    long = {"model": "gpt-4o", "messages": [
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", name="fetch_the_quarterly_report")]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    enc = ctxlab.encoding("o200k_base")
    extra = len(enc.encode_ordinary("fetch_the_quarterly_report")) - len(enc.encode_ordinary("f"))
    assert ctxlab.count_request(long) - ctxlab.count_request(short) == 2 * extra  # the call and the result


def test_parallel_calls_are_one_wrapped_call():
    rendered = ctxlab.billing.as_rendered([
        {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b", arguments='{"city":"Oslo"}')]}])
    (call,) = rendered[0]["tool_calls"]
    assert call["function"]["name"] == "multi_tool_use.parallel"
    assert json.loads(call["function"]["arguments"]) == {"tool_uses": [
        {"recipient_name": "functions.get_weather", "parameters": {"city": "Paris"}},
        {"recipient_name": "functions.get_weather", "parameters": {"city": "Oslo"}}]}


def test_the_results_of_parallel_calls_are_read_as_one_message():
    """The results of a parallel call are one message from multi_tool_use.parallel holding their
    JSON list: a JSON result re-serialised, text escaped. A result read alone (one call) is its
    text. On recorded bills: crewAI's three 87,000-character web pages (+4,394 tokens read one by
    one, +2 as one list), agno's pretty-printed JSON (-503, +4)."""
    pretty = json.dumps({"temp": 21, "sky": "clear"}, indent=4)
    text = 'He said "no".\nLine two — done.'
    calls = {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b", arguments='{"city":"Oslo"}')]}
    results = [{"role": "tool", "tool_call_id": "a", "content": pretty}, {"role": "tool", "tool_call_id": "b", "content": text}]
    assert ctxlab.billing.parallel_results_text([pretty, text]) == (
        '[{"temp": 21, "sky": "clear"}, "He said \\"no\\".\\nLine two \\u2014 done."]')
    rendered = ctxlab.billing.as_rendered([calls, *results])
    assert rendered[1:] == [{"role": "multi_tool_use.parallel",
                             "content": ctxlab.billing.parallel_results_text([pretty, text])}]
    enc = ctxlab.encoding("o200k_base")
    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather?"}, calls, *results]}
    assert ctxlab.count_request(request) == _read_plainly(rendered, enc) + _read_plainly(request["messages"][:1], enc) + 3
    # gpt-4o reads the em dash as it is, not as \u2014 (ctxlab.billing.escapes_non_ascii)
    plain = [rendered[0], {**rendered[1], "content": rendered[1]["content"].replace("\\u2014", "\u2014")}]
    assert plain[1]["content"].endswith('Line two \u2014 done."]')
    assert ctxlab.count_request({**request, "model": "gpt-4o"}) == (
        _read_plainly(plain, enc) + _read_plainly(request["messages"][:1], enc) + 3)
    one = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Weather?"},
                                            {**calls, "tool_calls": calls["tool_calls"][:1]}, results[0]]}
    assert ctxlab.billing.as_rendered(one["messages"])[2] == {"role": "functions.get_weather", "content": pretty}
    assert ctxlab.billing.parallel_results_difference(one["messages"], enc) == 0
    run = ctxlab.course.strip_course_keys(ctxlab.course.transcripts.repeat_laps(ctxlab.course.load_transcript("parallel"), 1_000))
    groups = sum(1 for m in run if len(m.get("tool_calls") or []) > 1)
    read = ctxlab.billing.as_rendered(run)
    assert groups > 100 and sum(m["role"] == "multi_tool_use.parallel" for m in read) == groups
    assert not any(m["role"] == "tool" for m in read)
    assert ctxlab.count_request({"model": "gpt-4o", "messages": run}) == _read_plainly(read, enc) + 3


def _read_plainly(messages, enc) -> int:
    """3 per message, every string, 3 plus name and arguments per call (no priming)."""
    total = 0
    for message in messages:
        total += 3 + sum(len(enc.encode_ordinary(v)) for v in message.values() if isinstance(v, str))
        for call in message.get("tool_calls") or []:
            total += 3 + len(enc.encode_ordinary(call["function"]["name"])) + len(enc.encode_ordinary(call["function"]["arguments"]))
    return total


def test_tools_join_the_system_message_or_make_one():
    user = {"role": "user", "content": "Hi"}
    with_system = {"model": "gpt-4o", "tools": [WEATHER],
                   "messages": [{"role": "system", "content": "Be brief."}, user]}
    without = {"model": "gpt-4o", "tools": [WEATHER], "messages": [user]}
    enc = ctxlab.encoding("o200k_base")
    block = ctxlab.tool_text.tool_block([WEATHER])
    assert "type get_weather = (_: {\ncity: string,\n}) => any;" in block
    assert ctxlab.count_request(with_system) == ctxlab.count_messages(
        [{"role": "system", "content": "Be brief.\n\n" + block}, user], enc) + ctxlab.billing.TOOL_BLOCK_ADJUSTMENT
    assert ctxlab.count_request(without) == ctxlab.count_messages(
        [{"role": "system", "content": block}, user], enc) + ctxlab.billing.TOOL_BLOCK_ADJUSTMENT


def test_tool_choice_and_response_format_are_priced():
    base = {"model": "gpt-4o", "tools": [WEATHER], "messages": [{"role": "user", "content": "Hi"}]}
    named = {**base, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    enc = ctxlab.encoding("o200k_base")
    assert ctxlab.count_request(named) - ctxlab.count_request(base) == (
        len(enc.encode_ordinary("get_weather")) + ctxlab.billing.TOOL_CHOICE_NAMED)
    assert ctxlab.count_request({**base, "tool_choice": "auto"}) == ctxlab.count_request(base)
    plain = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    assert ctxlab.count_request({**plain, "response_format": {"type": "json_object"}}) == ctxlab.count_request(plain)
    schema = {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": {
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
        "additionalProperties": False}}}
    assert ctxlab.count_request({**plain, "response_format": schema}) > ctxlab.count_request(plain) + 10
    with pytest.raises(ValueError, match="tool_choice"):
        ctxlab.count_request({**base, "tool_choice": "sometimes"})
    with pytest.raises(ValueError, match="response_format"):
        ctxlab.count_request({**plain, "response_format": {"type": "json_schema"}})


def test_a_response_format_shows_its_schema_without_what_the_decoding_enforces():
    """required, additionalProperties, $schema and the bounds are left out at every depth;
    titles, descriptions, defaults and data values stay, property names too."""
    schema = {"type": "json_schema", "json_schema": {"name": "plan", "strict": True, "schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "title": "Plan",
        "additionalProperties": False, "required": ["steps", "required"],
        "properties": {
            "steps": {"type": "array", "title": "Steps", "maxItems": 5, "items": {
                "type": "object", "additionalProperties": False, "required": ["n"],
                "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1}}}},
            "required": {"enum": [{"required": True}], "description": "a property named like a keyword"}}}}}
    text = ctxlab.billing.response_format_text(schema)
    assert text == "# Response Formats\n\n## plan\n\n" + json.dumps(
        {"type": "object", "title": "Plan", "properties": {
            "steps": {"type": "array", "title": "Steps", "items": {
                "type": "object", "properties": {"n": {"type": "integer", "default": 1}}}},
            "required": {"enum": [{"required": True}], "description": "a property named like a keyword"}}},
        separators=(",", ":"))
    assert ctxlab.billing.response_format_text({**schema, "json_schema": {**schema["json_schema"], "description": "A plan"}}) == (
        text.replace("## plan\n\n", "## plan\n\n// A plan\n"))


def test_a_response_format_costs_its_text_and_four_tokens_more_without_tools():
    schema = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
        "type": "object", "properties": {"answer": {"type": "string"}}}}}
    enc = ctxlab.encoding("o200k_base")
    text = ctxlab.billing.response_format_text(schema)
    user = {"role": "user", "content": "Hi"}
    plain = {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."}, user]}
    assert ctxlab.count_request({**plain, "response_format": schema}) == ctxlab.count_messages(
        [{"role": "system", "content": "Be brief.\n\n" + text}, user], enc) + ctxlab.billing.RESPONSE_FORMAT_ADJUSTMENT
    tools = {"model": "gpt-4o", "tools": [WEATHER], "messages": [user]}
    assert ctxlab.count_request({**tools, "response_format": schema}) - ctxlab.count_request(tools) == (
        len(enc.encode_ordinary("\n\n" + text)))


def test_images_follow_the_model_and_files_are_refused():
    png = "data:image/png;base64," + base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + b"\0\0\0\rIHDR" + struct.pack(">II", 640, 480)).decode()
    message = {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                           {"type": "image_url", "image_url": {"url": png}}]}
    text_only = {"role": "user", "content": [{"type": "text", "text": "What is this?"}]}
    for model in ("gpt-4o", "gpt-4o-mini", "o4-mini", "gpt-5"):
        difference = (ctxlab.count_request({"model": model, "messages": [message]})
                      - ctxlab.count_request({"model": model, "messages": [text_only]}))
        assert difference == ctxlab.images.image_cost(model, 640, 480)
    document = {"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}
    with pytest.raises(ctxlab.MessageError, match="file"):
        ctxlab.count_request({"model": "gpt-4o", "messages": [document]})
    custom = {"type": "custom", "custom": {"name": "grep"}}
    with pytest.raises(ValueError, match="tool 0 \\(of type 'custom'\\): only function tools"):
        ctxlab.count_request({"model": "gpt-5", "messages": [text_only], "tools": [custom]}, strict=True)
    with pytest.warns(ctxlab.billing.UnknownKeyWarning, match="not counted: tool 1 \\(of type 'custom'\\)"):
        mixed = ctxlab.count_request({"model": "gpt-5", "messages": [text_only], "tools": [WEATHER, custom]})
    assert mixed == ctxlab.count_request({"model": "gpt-5", "messages": [text_only], "tools": [WEATHER]})


def test_histories_straight_from_the_api_and_long_runs_are_counted():
    """SDK dumps (refusal, annotations, audio and function_call set to None or []) count as the
    plain dicts do, and so does an SDK object; a 1,000-lap run is counted whole, each tool
    result authored by its function."""
    tools = ctxlab.course.load_tools("research")
    call = _call("c1", name="web_search", arguments="{}")
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    dumped = [plain[0], {**plain[1], "refusal": None, "annotations": [], "audio": None, "function_call": None},
              plain[2]]
    assert ctxlab.count_request({"model": "gpt-4o-mini", "messages": dumped, "tools": tools}) == ctxlab.count_request(
        {"model": "gpt-4o-mini", "messages": plain, "tools": tools})
    from openai.types.chat import ChatCompletionMessage

    assert ctxlab.count_request({"model": "gpt-4o", "messages": [ChatCompletionMessage(role="assistant", content="hi")]}) == (
        ctxlab.count_request({"model": "gpt-4o", "messages": [{"role": "assistant", "content": "hi"}]}))
    run = ctxlab.course.strip_course_keys(ctxlab.course.transcripts.repeat_laps(ctxlab.course.load_transcript("research"), 1_000))
    rendered = ctxlab.billing.as_rendered(run)
    assert not any(m["role"] == "tool" or "tool_call_id" in m for m in rendered)
    assert ctxlab.count_request({"model": "gpt-4o", "messages": run, "tools": tools}) > 1_000_000


@pytest.mark.parametrize("encoding_name, model", [("cl100k_base", "gpt-4"), ("o200k_base", "gpt-4o")])
def test_count_tools_is_what_the_tools_add_to_a_request(encoding_name, model):
    """count_messages + count_tools is count_request for a request without a system message;
    with one, the listing joins it and the bill is at most 4 tokens less (the safe side)."""
    enc = ctxlab.encoding(encoding_name)
    for name in ctxlab.course.transcript_names():
        messages, tools = ctxlab.course.strip_course_keys(ctxlab.course.load_transcript(name)[:3]), ctxlab.course.load_tools(name)
        for sent in (messages, messages[1:]):  # the call at the end is unanswered: counted unchecked
            added = (ctxlab.count_request({"model": model, "messages": sent, "tools": tools}, validate=False)
                     - ctxlab.count_request({"model": model, "messages": sent}, validate=False))
            assert ctxlab.count_request({"model": model, "messages": sent}, validate=False) == ctxlab.count_messages(sent, enc)
            if sent[0]["role"] == "system":
                assert 0 <= ctxlab.count_tools(tools, enc) - added <= 4, name
            else:
                assert ctxlab.count_tools(tools, enc) == added, name


def test_count_tools_agrees_with_the_bills_parts(shared):
    """On every recorded request with function tools (no tool_choice, no response format, not
    gpt-5), the tools add count_tools exactly without a system message, 0 to 4 less with one."""
    checked = 0
    for recorded in shared:
        request = recorded.request
        if (not request.get("tools") or request.get("tool_choice") not in (None, "auto")
                or request.get("response_format") or recorded.model.startswith("gpt-5")):
            continue
        try:
            full = ctxlab.count_request(request)
        except (ValueError, ctxlab.MessageError):
            continue  # refused with its reason (test_requests_land_on_their_bill)
        rest = {key: value for key, value in request.items() if key not in ("tools", "tool_choice", "parallel_tool_calls")}
        enc = ctxlab.encoding(ctxlab.billing.encoding_name_for(recorded.model))
        gap = ctxlab.count_tools(request["tools"], enc) - (full - ctxlab.count_request(rest))
        carried = any(m.get("role") in ("system", "developer") and isinstance(m.get("content"), str)
                      for m in request["messages"])
        assert (0 <= gap <= 4) if carried else gap == 0, recorded.label
        checked += 1
    assert checked > 200


def test_the_accuracy_the_docs_state_is_the_one_measured(both_files):
    """ctxlab's docstring and the README state how many recorded requests land on their bill:
    the figures must be this run's."""
    import re

    everything = both_files
    on_bill = sum(1 for r in everything if isinstance(_count(r), int) and within(_count(r), r.billed))
    stated = f"{on_bill:,} of {len(everything):,} recorded requests"
    assert stated in " ".join(ctxlab.__doc__.split()), f"ctxlab/__init__.py should say {stated!r}"
    readme = " ".join((Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8").split())
    kinds = {kind: [r for r in everything if r.kind == kind] for kind in ("plain", "tools", "format")}
    for kind, label in (("plain", "without tools"), ("tools", "with tools"), ("format", "with a response format")):
        landed = sum(1 for r in kinds[kind] if isinstance(_count(r), int) and within(_count(r), r.billed))
        assert re.search(rf"\b{landed} of {len(kinds[kind])} (requests )?{label}", readme), (
            f"README.md should say {landed} of {len(kinds[kind])} {label}")
    assert f"Checked against {len(everything):,} real recorded requests" in readme


def test_an_image_by_url_is_counted_at_or_above_its_bill(everything):
    """An image whose size cannot be read is counted at the most an image can cost the model,
    and says so: on every recorded request with one, of both files and the real runs, the
    count is an upper bound of the bill."""
    recordings.require(recordings.more_available())
    every = everything + list(recordings.shared(recordings.MORE))
    checked = 0
    for recorded in every:
        if not _remote_images(recorded):
            continue
        with pytest.warns(ctxlab.billing.UpperBoundWarning, match=r"counted at the most an image can cost"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", ctxlab.billing.UnknownKeyWarning)
            counted = ctxlab.count_request(recorded.request)
        assert counted >= recorded.billed, f"{recorded.label} ({recorded.model}): {counted} < {recorded.billed}"
        checked += 1
    assert checked >= 14, checked


def test_an_image_by_url_costs_the_ceiling_of_its_model_and_detail():
    def request(model: str, detail: str | None, url: str = "https://example.com/cat.png") -> dict:
        image = {"url": url} | ({"detail": detail} if detail else {})
        return {"model": model, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": image}]}]}

    text_only = {"model": "gpt-4o", "messages": [{"role": "user", "content": []}]}
    base = ctxlab.count_request(text_only)
    for model, detail, ceiling in (("gpt-4o", None, 85 + 170 * 8), ("gpt-4o", "low", 85),
                                   ("gpt-4o-mini", "high", 2833 + 5667 * 8), ("gpt-4.1-mini", None, 2489)):
        with pytest.warns(ctxlab.billing.UpperBoundWarning, match=rf"1 image\(s\) counted at the most .* {model}"):
            counted = ctxlab.count_request(request(model, detail))
        assert counted - base == ceiling == ctxlab.images.image_cost_ceiling(model, detail or "auto"), model
    png = "data:image/png;base64," + base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + b"\0\0\0\rIHDR" + struct.pack(">II", 640, 480)).decode()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a data: image is sized exactly, with no warning
        assert ctxlab.count_request(request("gpt-4o", None, png)) - base == ctxlab.images.image_cost("gpt-4o", 640, 480)


def test_harmony_models_bill_each_reply_and_tool_exchange_with_its_channel():
    """gpt-5 and o4-mini write earlier replies and tool exchanges with channels: 2 tokens a reply,
    8 a call with its result, beyond the same messages on a model of the same encoding."""
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello! How can I help?"},
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "4 C, rain"}]
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    plain = {"messages": messages[:4]}
    with_tools = {"messages": messages, "tools": tools}
    for model in ("gpt-5-mini", "o4-mini"):
        assert ctxlab.billing.is_harmony(model)
        preamble = ctxlab.tool_text.GPT5_TOOL_PREAMBLE if model.startswith("gpt-5") else 0
        assert ctxlab.count_request({"model": model, **plain}) == ctxlab.count_request({"model": "gpt-4.1", **plain}) + 2
        assert ctxlab.count_request({"model": model, **with_tools}) == (
            ctxlab.count_request({"model": "gpt-4.1", **with_tools}) + 2 + 8 + preamble)
    assert not ctxlab.billing.is_harmony("o3-mini")  # its recorded tool requests land without them
    form = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {
        "type": "object", "properties": {"a": {"type": "string"}}}}}
    formatted = {"messages": messages[:4], "response_format": form}
    assert ctxlab.count_request({"model": "gpt-5", **formatted}) == (
        ctxlab.count_request({"model": "gpt-4.1", **formatted}) + 5 - 5)  # a constrained reply; the format's -5


@pytest.mark.parametrize("messages, refusal", [
    ([{"role": "bot", "content": "hi"}], r"message 0: unknown role 'bot'"),
    ([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "r"}],
     r"message 1: tool result for call 'x' does not follow an assistant message that made that call"),
    ([{"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c"}],
     r"message 0: a Responses API item \(type 'function_call'\), not a Chat Completions message"),
], ids=["unknown role", "orphan result", "responses item"])
def test_count_request_checks_the_messages_as_validate_messages_does(messages, refusal):
    request = {"model": "gpt-4o", "messages": messages}
    with pytest.raises(ctxlab.MessageError, match=refusal) as counted:
        ctxlab.count_request(request)
    with pytest.raises(ctxlab.MessageError) as validated:
        ctxlab.validate_messages(messages)
    assert str(counted.value) == str(validated.value)
    assert ctxlab.count_request(request, validate=False) > 0  # a history known to be good, unchecked
