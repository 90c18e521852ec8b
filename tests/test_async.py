"""The async path: ``openai.AsyncOpenAI`` against a local server, beside the synchronous path.

The server (tests/support/compatible_server.py) answers each summary request with what the
offline summariser answers the same prompt, so a run through ``Assembler.acontext`` can be held
to the synchronous run with ``OfflineSummariser``: the same prompts, counts, states and log,
lap by lap. Failures go through the same retries and end in the same errors or fallback.
"""

from __future__ import annotations

import asyncio

import pytest
from support.compatible_server import CompatibleServer

import ctxlab
import ctxlab.course
from ctxlab.aio import acompact

openai = pytest.importorskip("openai")

MODEL = "test-summary-model"


def offline_reply(body: dict) -> str:
    """What the offline summariser answers this request's prompt."""
    reply = ctxlab.OfflineSummariser().chat.completions.create(model=body["model"], messages=body["messages"])
    return reply.choices[0].message.content


def async_client(server: CompatibleServer, timeout: float = 5.0):
    return openai.AsyncOpenAI(api_key="test-key", base_url=server.base_url, timeout=timeout, max_retries=0)


def _policy(client, **options) -> ctxlab.MemoryPolicy:
    budget = ctxlab.ContextBudget(window=6_000, reserve_output=1_000, scratchpad_max=400, model="gpt-4o")
    return ctxlab.MemoryPolicy(budget, client=client, model=MODEL, **options)


async def _no_pause(seconds: float) -> None:
    """acomplete's pause between attempts, shortened: the retries are what is tested."""


def _laps(name: str = "research"):
    record = ctxlab.course.load_transcript(name)
    return record, ctxlab.course.load_tools(name), [(i, record[i]["step"]) for i in ctxlab.model_calls(record)]


def _sync_run(name: str = "research", **options):
    record, tools, laps = _laps(name)
    assembler = ctxlab.Assembler(_policy(ctxlab.OfflineSummariser(), **options), tools=tools)
    contexts = [assembler.context(record[:i], step=step) for i, step in laps]
    return contexts, assembler


def test_an_async_run_gives_the_synchronous_runs_prompts_states_and_log():
    expected, sync_assembler = _sync_run()
    assert len(sync_assembler.log.filter("summarise")) >= 2, "the run must summarise for this test to mean much"
    record, tools, laps = _laps()

    async def run(client):
        assembler = ctxlab.Assembler(_policy(client), tools=tools)
        return [await assembler.acontext(record[:i], step=step) for i, step in laps], assembler

    with CompatibleServer(otherwise=offline_reply) as server:
        contexts, assembler = asyncio.run(run(async_client(server)))
    for lap, (got, want) in enumerate(zip(contexts, expected, strict=True)):
        assert got.messages == want.messages, lap
        assert (got.tokens, got.state, got.allocation) == (want.tokens, want.state, want.allocation), lap
    assert list(assembler.log) == list(sync_assembler.log)  # no trace of a stopped run
    summaries = len(assembler.log.filter("summarise"))
    assert len(server.requests) >= summaries and all(r["model"] == MODEL for r in server.requests)
    assert {r["path"] for r in server.requests} == {"/v1/chat/completions"}


def test_the_event_loop_runs_other_tasks_while_a_summary_is_awaited():
    """Another task gets the loop while the summary request is in flight: its mark comes before
    the lap's. A blocking call would finish the lap first."""
    record, tools, laps = _laps()
    order: list[str] = []

    async def lap_that_summarises(client):
        assembler = ctxlab.Assembler(_policy(client), tools=tools)
        for i, step in laps:
            before = len(assembler.log.filter("summarise"))
            await assembler.acontext(record[:i], step=step)
            if len(assembler.log.filter("summarise")) > before:
                order.append("lap")
                return

    async def other():
        while "lap" not in order:
            order.append("other")
            await asyncio.sleep(0)

    async def both(client):
        await asyncio.gather(lap_that_summarises(client), other())

    with CompatibleServer(otherwise=offline_reply) as server:
        asyncio.run(both(async_client(server)))
    assert order[0] == "other" and order[-1] == "lap", order


def test_a_failing_summariser_raises_and_the_run_can_go_on(monkeypatch):
    """Three 500s: SummaryError after the retries, the assembler's state as it was before that
    lap, and the log as the synchronous path leaves it; the lap asked again goes through."""
    monkeypatch.setattr("ctxlab.llm.time.sleep", lambda seconds: None)
    monkeypatch.setattr("ctxlab.llm._asleep", _no_pause)
    record, tools, laps = _laps()
    expected, _ = _sync_run()
    first_summary = next(n for n, context in enumerate(expected) if context.state.summary)

    def offline(**request):
        return offline_reply(request)

    async def run(client):
        assembler = ctxlab.Assembler(_policy(client), tools=tools)
        for i, step in laps[:first_summary]:
            await assembler.acontext(record[:i], step=step)
        state = assembler.state
        i, step = laps[first_summary]
        with pytest.raises(ctxlab.SummaryError) as failure:
            await assembler.acontext(record[:i], step=step)
        assert assembler.state == state
        again = await assembler.acontext(record[:i], step=step)  # the server answers now
        return failure.value, again, assembler.log

    with CompatibleServer(*[("status", 500)] * 3, otherwise=offline_reply) as server:
        failure, again, log = asyncio.run(run(async_client(server)))
    assert failure.attempts == 3 and failure.reason == "server_error" and "Nothing was changed" in str(failure)
    assert again.messages == expected[first_summary].messages

    sync = ctxlab.Assembler(_policy(ctxlab.course.ScriptedClient([TimeoutError("down")] * 3 + [offline] * 50)),
                            tools=tools)
    for i, step in laps[:first_summary]:
        sync.context(record[:i], step=step)
    i, step = laps[first_summary]
    with pytest.raises(ctxlab.SummaryError):
        sync.context(record[:i], step=step)
    sync.context(record[:i], step=step)
    assert list(log) == list(sync.log)


def test_on_summary_error_trim_goes_on_as_the_synchronous_fallback_does(monkeypatch):
    monkeypatch.setattr("ctxlab.llm.time.sleep", lambda seconds: None)
    monkeypatch.setattr("ctxlab.llm._asleep", _no_pause)
    record, tools, laps = _laps()
    down = ctxlab.course.ScriptedClient([TimeoutError("the summariser is down")] * 1_000)
    sync_assembler = ctxlab.Assembler(_policy(down, on_summary_error="trim"), tools=tools)
    expected = [sync_assembler.context(record[:i], step=step) for i, step in laps]

    async def run(client):
        assembler = ctxlab.Assembler(_policy(client, on_summary_error="trim"), tools=tools)
        return [await assembler.acontext(record[:i], step=step) for i, step in laps], assembler

    with CompatibleServer(*[("status", 503)] * 1_000) as server:
        contexts, assembler = asyncio.run(run(async_client(server)))
    assert [c.messages for c in contexts] == [c.messages for c in expected]
    trims = [e for e in assembler.log.filter("trim") if "summariser" in e.detail]
    assert trims and len(trims) == len([e for e in sync_assembler.log.filter("trim") if "summariser" in e.detail])


def test_acompact_is_compact_with_an_async_client():
    steps = ctxlab.course.load_transcript("research")[2:60]
    want = ctxlab.compact(ctxlab.OfflineSummariser(), steps, "FACTS:\n- earlier", model=MODEL, max_tokens=300)
    with CompatibleServer(("status", 429), otherwise=offline_reply) as server:
        got = asyncio.run(acompact(async_client(server), steps, "FACTS:\n- earlier", model=MODEL, max_tokens=300,
                                   backoff=0.01))
    assert got == want
    assert server.requests[0]["messages"] == server.requests[1]["messages"]  # the 429 was retried as is


def test_a_synchronous_client_works_on_the_async_path_too():
    expected, _ = _sync_run("incident")
    record, tools, laps = _laps("incident")

    async def run():
        assembler = ctxlab.Assembler(_policy(ctxlab.OfflineSummariser()), tools=tools)
        return [await assembler.acontext(record[:i], step=step) for i, step in laps]

    assert [c.messages for c in asyncio.run(run())] == [c.messages for c in expected]
