"""The LLM client layer: the real `openai` client against a local OpenAI-compatible server.

The server is the standard library's http.server on 127.0.0.1, started by each test; it answers
each request with the next scripted behaviour (a reply, an HTTP error, a malformed body, a
stall) and records what it received. Timeouts and backoff are tiny so the tests stay fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from support.compatible_server import CompatibleServer

import ctxlab
import ctxlab.course

SUMMARY = "FACTS:\n- [search_logs, lap 3] sqlstate=55P03 lock timeout\nDECISIONS:\n- none"


@pytest.fixture
def real_client(monkeypatch):
    """``real_client(server, timeout=...)``: ctxlab.get_client() configured by environment."""
    made = []

    def make(server, timeout=2.0):
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("CTXLAB_SUMMARY_MODEL", "test-summary-model")
        client = ctxlab.get_client(timeout=timeout)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def dropped_laps():
    incident = ctxlab.course.load_transcript("incident")
    return incident[6:10]  # laps 3 and 4: the worker log with the finding, and the next window


PRIOR = "FACTS:\n- [get_job_runs, lap 1] run nce-20240611-020000 failed at extract_orders"


# --- choosing the client -------------------------------------------------------------------------


def test_without_a_key_the_offline_summariser_is_used_and_openai_is_not_imported():
    code = (
        "import os, sys, ctxlab; os.environ.pop('OPENAI_API_KEY', None); "
        "c = ctxlab.get_client(); print(type(c).__name__, 'openai' in sys.modules); "
        "print(ctxlab.llm.describe_client())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin"}).stdout.splitlines()
    assert out[0] == "OfflineSummariser False"
    assert out[1].startswith("offline summariser")


def test_with_a_key_the_real_client_honours_base_url_and_model(real_client):
    import openai

    with CompatibleServer() as server:
        client = real_client(server)
        assert isinstance(client, openai.OpenAI)
        assert str(client.base_url).rstrip("/") == server.base_url
        assert ctxlab.llm.summary_model() == "test-summary-model"
        assert server.base_url in ctxlab.llm.describe_client(client)
        assert "test-summary-model" in ctxlab.llm.describe_client()


def test_a_base_url_alone_is_a_local_server_that_needs_no_key(monkeypatch):
    """A learner who points OPENAI_BASE_URL at a local server gets it, not the offline summariser."""
    import openai

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with CompatibleServer(("reply", SUMMARY)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        client = ctxlab.get_client(timeout=2.0)
        try:
            assert isinstance(client, openai.OpenAI)
            assert str(client.base_url).rstrip("/") == server.base_url
            assert client.api_key == ctxlab.llm.LOCAL_SERVER_KEY
            assert ctxlab.llm.describe_client(client).startswith(f"OpenAI-compatible API at {server.base_url}")
            assert "(no key)" in ctxlab.llm.describe_client()
            summary = ctxlab.compact(client, dropped_laps(), PRIOR)
        finally:
            client.close()
    assert summary == SUMMARY
    assert len(server.requests) == 1
    assert server.headers[0]["authorization"] == f"Bearer {ctxlab.llm.LOCAL_SERVER_KEY}"


def test_the_request_carries_the_roll_up_prompt_temperature_zero_and_the_model(real_client):
    with CompatibleServer(("reply", SUMMARY)) as server:
        client = real_client(server)
        summary = ctxlab.compact(client, dropped_laps(), PRIOR)
    assert summary == SUMMARY
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["model"] == "test-summary-model"
    assert request["temperature"] == 0
    assert server.headers[0]["authorization"] == "Bearer test-key"
    (message,) = request["messages"]
    assert message == {"role": "user", "content": ctxlab.summarising.compaction_prompt(ctxlab.summarising.render_steps(dropped_laps()), PRIOR)}
    prompt = message["content"]
    assert PRIOR in prompt  # rolled up: the prior summary is folded into the one request
    assert "every tool call that failed" in prompt and "with the tool and the lap" in prompt
    assert "sqlstate=55P03" in prompt  # the dropped steps themselves, results included


def test_an_explicit_model_wins_over_the_setting(real_client):
    with CompatibleServer(("reply", SUMMARY)) as server:
        ctxlab.compact(real_client(server), dropped_laps(), model="local-llama")
    assert server.requests[0]["model"] == "local-llama"


# --- retry, then a clear error ---------------------------------------------------------------------

FAILURES = {
    "rate_limited": ("status", 429),
    "server_error": ("status", 500),
    "malformed_reply": ("raw", b"{this is not json"),
    "timeout": ("stall", 1.5),
}


@pytest.mark.parametrize("reason", FAILURES)
def test_a_passing_failure_is_retried(reason, real_client):
    with CompatibleServer(FAILURES[reason], ("reply", SUMMARY)) as server:
        client = real_client(server, timeout=0.3)
        assert ctxlab.compact(client, dropped_laps(), backoff=0.01) == SUMMARY
    assert len(server.requests) == 2
    assert server.requests[0]["messages"] == server.requests[1]["messages"]


@pytest.mark.parametrize("reason", FAILURES)
def test_a_lasting_failure_ends_in_a_clear_summary_error(reason, real_client):
    with CompatibleServer(*[FAILURES[reason]] * 3) as server:
        client = real_client(server, timeout=0.3)
        with pytest.raises(ctxlab.SummaryError) as err:
            ctxlab.compact(client, dropped_laps(), retries=2, backoff=0.01)
    assert len(server.requests) == 3
    assert err.value.attempts == 3 and err.value.reason == reason
    text = str(err.value)
    assert "failed 3 times" in text and reason in text and "Nothing was changed" in text
    assert isinstance(err.value, ctxlab.CtxlabError)


def test_a_reply_without_choices_is_malformed(real_client):
    with CompatibleServer(("raw", b'{"id": "x", "object": "chat.completion"}'), ("reply", SUMMARY)) as server:
        assert ctxlab.compact(real_client(server), dropped_laps(), backoff=0.01) == SUMMARY
    assert len(server.requests) == 2


@pytest.mark.parametrize("status, hint", [(401, "OPENAI_API_KEY"), (404, "CTXLAB_SUMMARY_MODEL"), (400, "refused")])
def test_a_refused_request_is_not_retried(status, hint, real_client):
    with CompatibleServer(("status", status), ("reply", SUMMARY)) as server, pytest.raises(ctxlab.SummaryError) as err:
        ctxlab.compact(real_client(server), dropped_laps(), backoff=0.01)
    assert len(server.requests) == 1
    assert err.value.reason == "refused" and err.value.attempts == 1
    assert hint in str(err.value)


# What the API answers a reasoning model sent a temperature (o-series, gpt-5): see, among many,
# https://github.com/tmc/langchaingo/issues/1355 and https://github.com/cline/cline/issues/341.
TEMPERATURE_REFUSED = {
    "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
    "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value",
}


def test_a_model_that_refuses_the_temperature_is_asked_again_without_it(real_client):
    model = f"reasoning-{uuid.uuid4().hex[:8]}"  # the refusal is remembered per model for the process
    with CompatibleServer(("error", 400, TEMPERATURE_REFUSED), ("reply", SUMMARY), ("reply", SUMMARY)) as server:
        client = real_client(server)
        with pytest.warns(RuntimeWarning, match=f"{model} refused temperature=0"):
            assert ctxlab.compact(client, dropped_laps(), model=model, retries=0) == SUMMARY
        assert ctxlab.compact(client, dropped_laps(), model=model, retries=0) == SUMMARY
    first, again, later = server.requests
    assert first["temperature"] == 0 and "temperature" not in again and "temperature" not in later
    assert first["messages"] == again["messages"] == later["messages"]


def test_another_bad_parameter_is_still_refused_at_once(real_client):
    refused = {**TEMPERATURE_REFUSED, "param": "max_tokens", "message": "Unsupported parameter: 'max_tokens'."}
    with CompatibleServer(("error", 400, refused), ("reply", SUMMARY)) as server, pytest.raises(ctxlab.SummaryError) as err:
        ctxlab.compact(real_client(server), dropped_laps(), model=f"other-{uuid.uuid4().hex[:8]}")
    assert len(server.requests) == 1 and err.value.reason == "refused"


def test_retries_are_bounded_with_growing_backoff(monkeypatch):
    pauses = []
    monkeypatch.setattr("ctxlab.llm.time.sleep", pauses.append)
    client = ctxlab.course.ScriptedClient([TimeoutError("stalled")] * 5)
    with pytest.raises(ctxlab.SummaryError):
        ctxlab.llm.complete(client, [{"role": "user", "content": "x"}], model="m", retries=4, backoff=0.5, max_backoff=3)
    assert pauses == [0.5, 1.0, 2.0, 3]
    assert len(client.requests) == 5


def test_a_bug_in_the_caller_is_not_disguised_as_a_summary_error():
    client = ctxlab.course.ScriptedClient([KeyError("oops")])
    with pytest.raises(KeyError):
        ctxlab.llm.complete(client, [{"role": "user", "content": "x"}], model="m")


# --- a failing server inside trim-and-summarise: nothing is lost -----------------------------


def test_trim_and_summarise_keeps_every_step_when_the_server_keeps_failing(real_client):
    incident = ctxlab.course.load_transcript("incident")[:20]
    snapshot = json.dumps(incident)
    log = ctxlab.MemoryLog()
    with CompatibleServer(*[("status", 503)] * 6) as server:
        client = real_client(server)
        with pytest.raises(ctxlab.SummaryError):
            ctxlab.trim_and_summarise(incident, 8_000, client=client, log=log, backoff=0.01)
        assert json.dumps(incident) == snapshot  # the history is untouched
        (failed,) = log.filter("summary_failed")
        assert failed.messages and all(m in incident for m in failed.messages)

        out = ctxlab.trim_and_summarise(incident, 8_000, client=client, log=log, backoff=0.01, on_failure="trim")
    assert len(server.requests) == 6
    assert not any(map(ctxlab.is_summary, out))
    assert sum(ctxlab.count_message(m) for m in out) <= 8_000
    second = log.filter("summary_failed")[1]
    assert [m for m in incident if m not in out] == list(second.messages)  # every dropped step is in the log
    assert "kept here" in second.detail


def test_a_dropped_offline_summariser_is_freed_at_once_and_keeps_its_latest_requests():
    """Nothing in the client refers back to it (a cycle would wait for a full collection),
    and a long run keeps only the latest requests, not one deep copy per compaction forever."""
    import gc
    import weakref

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        client = ctxlab.OfflineSummariser()
        for lap in range(client.KEPT_REQUESTS + 5):
            ctxlab.llm.complete(client, [{"role": "user", "content": f"STEPS TO FOLD IN:\n[lap {lap}] user: go"}], model="m")
        assert len(client.requests) == client.KEPT_REQUESTS
        assert client.requests[-1]["messages"][0]["content"].endswith(f"[lap {client.KEPT_REQUESTS + 4}] user: go")
        assert client.requests[0]["messages"][0]["content"].endswith("[lap 5] user: go")
        gone = weakref.ref(client)
        del client
        assert gone() is None, "the client outlived its last reference: something in it refers back to it"
    finally:
        if was_enabled:
            gc.enable()


def test_get_client_labels_offline_summaries_when_told(monkeypatch):
    """CTXLAB_OFFLINE_LABEL puts a first line on get_client()'s offline summaries (the grader
    sets it, so a hand-made OfflineSummariser() can be told from it); folding a labelled
    summary into the next one keeps one label line, not a fact per fold."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(ctxlab.llm.OFFLINE_LABEL_VARIABLE, raising=False)
    prompt = ctxlab.summarising.compaction_prompt("[lap 2] assistant: Use the EU mirror.")
    ask = lambda client, text: client.chat.completions.create(  # noqa: E731
        model="m", temperature=0, messages=[{"role": "user", "content": text}]).choices[0].message.content
    plain = ask(ctxlab.get_client(), prompt)
    assert plain == ask(ctxlab.OfflineSummariser(), prompt) and not plain.startswith("(")
    monkeypatch.setenv(ctxlab.llm.OFFLINE_LABEL_VARIABLE, "graded run")
    client = ctxlab.get_client()
    assert repr(client) == "OfflineSummariser(label='graded run')"
    labelled = ask(client, prompt)
    assert labelled == f"(graded run)\n{plain}"
    folded = ask(client, ctxlab.summarising.compaction_prompt("[lap 3] assistant: Mirror chosen.", prior_summary=labelled))
    assert folded.splitlines()[0] == "(graded run)" and folded.count("graded run") == 1, folded
    for bad in ("", "two\nlines", 3):
        with pytest.raises(ValueError, match="label must be one line"):
            ctxlab.OfflineSummariser(label=bad)
