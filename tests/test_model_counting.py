"""A budget that names its model: the Assembler, build_context and count_request count one number.

``ContextBudget(model=...)`` picks the counter (:meth:`ctxlab.ContextBudget.counter`): the
model's encoding, its image rates, the harmony format's markers, and the tool schemas joined
to the system message as the API joins them. These tests hold the assembled prompts' counts to
:func:`ctxlab.count_request`'s on every lap of the course's transcripts, for models of each
family, and check the errors a wrong model or a mismatched counter gets.
"""

from __future__ import annotations

import warnings

import pytest
from support import recordings

import ctxlab
import ctxlab.course
import ctxlab.policies
from ctxlab.errors import ConfigError
from ctxlab.tokens import TokenCounter

MODELS = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-5-mini", "gpt-4", "o3"]
"""One model of each counting family: o200k_base without and with harmony, and cl100k_base."""


def _has_parallel_calls(record: list[dict]) -> bool:
    return any(len(message.get("tool_calls") or []) > 1 for message in record)


SERIAL = [name for name in ctxlab.course.transcript_names()
          if not _has_parallel_calls(ctxlab.course.load_transcript(name))]


def _billed(model: str, messages: list[dict], tools) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ctxlab.billing.UpperBoundWarning)
        return ctxlab.count_request({"model": model, "messages": messages, "tools": tools})


def _run(name: str, model: str, window: int = 10_000):
    """Each lap's context from an Assembler whose budget names ``model``, with the record so far."""
    record, tools = ctxlab.course.load_transcript(name), ctxlab.course.load_tools(name)
    budget = ctxlab.ContextBudget(window=window, reserve_output=2_000, scratchpad_max=600, model=model)
    policy = ctxlab.MemoryPolicy(budget, client=ctxlab.OfflineSummariser())
    assembler = ctxlab.Assembler(policy, tools=tools)
    pad = ctxlab.Scratchpad(goal="Finish the task", facts={"owner": "Ask before deleting anything"})
    for index in ctxlab.model_calls(record):
        state, step = assembler.state, record[index]["step"]
        context = assembler.context(record[:index], step=step, scratchpad=pad)
        yield record[:index], tools, policy, (pad, step), state, context


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", SERIAL)
def test_assembler_counts_what_the_request_bills(name, model):
    laps = 0
    for _, tools, _, _, _, context in _run(name, model):
        assert context.tokens == _billed(model, context.messages, tools), (name, model, laps)
        assert context.allocation.used - context.allocation.reserved_output == context.tokens
        laps += 1
    assert laps > 5


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-5-mini"])
def test_build_context_counts_the_same(model):
    """build_context, given the state the Assembler had, makes the same prompt with the same count."""
    for lap, (history, tools, policy, (pad, step), state, context) in enumerate(_run("research", model)):
        if lap % 7 == 0:
            again = ctxlab.build_context(history, policy, tools=tools, state=state, step=step, scratchpad=pad)
            assert again.messages == context.messages
            assert again.tokens == context.tokens == _billed(model, again.messages, tools)


def test_no_model_keeps_the_old_count_and_says_which():
    budget = ctxlab.ContextBudget(window=8_000)
    assert budget.model is None and budget.counter().encoding.name == "cl100k_base"
    assert ctxlab.ContextBudget(window=8_000, model="gpt-4o").counter().encoding.name == "o200k_base"
    assert ctxlab.ContextBudget(window=8_000, model="gpt-3.5-turbo").counter().encoding.name == "cl100k_base"
    assert "cl100k_base" in ctxlab.ContextBudget.__doc__ and "name the model" in ctxlab.ContextBudget.__doc__


def test_a_model_changes_the_count_where_it_should():
    """Japanese text tokenizes shorter in o200k_base; a harmony reply costs its channel."""
    reply = {"role": "assistant", "content": "ログを確認してください。"}
    counts = [TokenCounter(model=m).message(reply) if m else TokenCounter().message(reply)
              for m in (None, "gpt-4o", "gpt-5")]
    assert counts[1] < counts[0] and counts[2] == counts[1] + ctxlab.harmony.HARMONY_FINAL


def test_images_at_the_models_rate():
    image = {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                         {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}
    for model in ("gpt-4o", "gpt-4.1-mini", "gpt-5"):
        count = TokenCounter(model=model).message(image)
        assert count + ctxlab.tokens.REPLY_PRIMING == _billed(model, [image], None)


@pytest.mark.parametrize("model", ["llama-3-70b", "", 42, "claude-sonnet-4"])
def test_an_unknown_model_is_refused_when_the_budget_is_made(model):
    with pytest.raises(ConfigError, match="model"):
        ctxlab.ContextBudget(window=8_000, model=model)


def test_a_counter_for_another_model_is_refused():
    budget = ctxlab.ContextBudget(window=8_000, model="gpt-4o")
    with pytest.raises(ConfigError, match="the budget is for 'gpt-4o'"):
        ctxlab.Assembler(budget, counter=TokenCounter())
    with pytest.raises(ConfigError, match="the budget is for 'gpt-4o'"):
        ctxlab.Assembler(budget, counter=TokenCounter(model="gpt-4"))
    assert ctxlab.Assembler(budget, counter=TokenCounter(model="gpt-4o")).counter.model == "gpt-4o"
    with pytest.raises(ConfigError, match="not 'gpt-4o'"):
        TokenCounter("cl100k_base", model="gpt-4o")


def test_the_prefix_joins_the_tools_to_the_system_message():
    tools = ctxlab.course.load_tools("research")
    for static in ([], [{"role": "system", "content": "You research."}],
                   [{"role": "system", "content": "You research."}, {"role": "developer", "content": "Cite."}]):
        for model in MODELS:
            counter = TokenCounter(model=model)
            expected = _billed(model, static, tools) if static else counter.tools(tools) + ctxlab.tokens.REPLY_PRIMING
            assert counter.prefix(static, tools) == expected, (model, static)
        # with no model the schemas stay a message of their own: never under the bill
        assert TokenCounter().prefix(static, tools) >= (_billed("gpt-4", static, tools) if static else 0)


def _leading_system(messages: list[dict]) -> int:
    n = 0
    while n < len(messages) and messages[n].get("role") in ("system", "developer"):
        n += 1
    return n


def test_the_counter_adds_up_to_count_request_on_every_recording():
    """Message by message, with the prefix, a counter for the request's model gives what
    count_request gives the whole request: on every recorded request sent with only messages and
    tools (parallel calls' results, images, harmony models and all)."""
    recordings.require(recordings.shared_available())
    recordings.require(recordings.more_available())
    recordings.require(recordings.real_available())
    every = [*recordings.shared(), *recordings.shared(recordings.MORE), *recordings.real()]
    checked, parallel, off = 0, 0, []
    for recorded in every:
        request = recorded.request
        if set(request) - {"model", "messages", "tools"} - ctxlab.billing.FREE_KEYS:
            continue  # tool_choice, response_format...: a request's own, not its messages'
        if any(tool.get("type", "function") != "function" for tool in request.get("tools") or ()):
            continue  # a custom tool: count_request leaves it out (with a warning), the counter its JSON in
        try:
            billed = _billed(request["model"], request["messages"], request.get("tools"))
        except (ctxlab.MessageError, ConfigError):
            continue  # refused by count_request too (PDF parts): nothing to agree on
        counter, messages = TokenCounter(model=request["model"]), request["messages"]
        n = _leading_system(messages)
        ours = counter.prefix(messages[:n], request.get("tools")) + sum(counter.message(m) for m in messages[n:])
        if ours != billed:
            off.append((recorded.label, ours - billed))
        checked += 1
        parallel += _has_parallel_calls(messages)
    assert not off, off[:10]
    assert checked > 1_100 and parallel > 20, (checked, parallel)  # 1,126 and 29 when written


def _parallel_lap(step: int, ids: tuple[str, str], texts: tuple[str, str]) -> list[dict]:
    calls = [{"id": ident, "type": "function", "function": {"name": "lookup", "arguments": f'{{"q": {n}}}'}}
             for n, ident in enumerate(ids)]
    return [{"role": "assistant", "content": None, "tool_calls": calls, "step": step},
            *({"role": "tool", "tool_call_id": ident, "content": text, "step": step} for ident, text in zip(ids, texts, strict=True))]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-5-mini"])
def test_parallel_results_are_one_list_even_when_ids_come_back(model):
    """Some servers number calls call_0, call_1 on every lap: each lap's results are still read
    as their own list, in their own place (first, last), however often the run is counted."""
    record = [{"role": "user", "content": "Compare the two regions.", "step": 0}]
    for step, texts in enumerate([('{"eu": "up", "ms": 41}', "Plain text —\nwith a newline"),
                                  ("second lap", '[1, 2, {"three": "drei"}]'),
                                  ('{\n  "pretty": true\n}', "Ünïcode ok")], 1):
        record += _parallel_lap(step, ("call_0", "call_1"), texts)
    counter = TokenCounter(model=model)
    expected = _billed(model, record, None)
    for _ in range(2):  # counted again from memory: the same
        assert counter.messages(record) == expected
    budget = ctxlab.ContextBudget(window=4_000, reserve_output=500, model=model)
    context = ctxlab.build_context(record, budget)
    assert context.tokens == _billed(model, context.messages, None)


def test_the_scratchpad_is_bounded_in_the_models_tokens():
    """Its cap holds as the model counts, and is filled as the model counts: Japanese notes take
    fewer o200k_base tokens, so more of them fit than cl100k_base would let in."""
    pad = ctxlab.Scratchpad(goal="エクスポートが失敗した理由を調べる",
                            done=[f"ログ {n} を確認した: ロックのタイムアウトが見つかった" for n in range(40)])
    history = [{"role": "user", "content": "昨夜のエクスポートはなぜ失敗したのか。", "step": 0}]
    budget = ctxlab.ContextBudget(window=4_000, reserve_output=500, scratchpad_max=300, model="gpt-4o")
    context = ctxlab.build_context(history, budget, scratchpad=pad)
    sent = context.messages[-1]
    assert sent == pad.message(max_tokens=300, encoding=ctxlab.encoding("o200k_base"))
    assert context.allocation.scratchpad == TokenCounter(model="gpt-4o").message(sent) <= 300
    assert len(sent["content"]) > len(pad.message(max_tokens=300)["content"])


@pytest.mark.parametrize("make", [lambda: ctxlab.policies.TruncateOldest(),
                                  lambda: ctxlab.policies.Summarise(ctxlab.OfflineSummariser()),
                                  lambda: ctxlab.policies.Assemble(ctxlab.OfflineSummariser())],
                         ids=["truncate", "summarise", "assemble"])
def test_the_reference_policies_count_for_the_budgets_model(make):
    """Lesson 06's policies take the budget each lap: one naming a model makes them count as it
    bills, so every prompt fits as count_request counts it."""
    record, tools = ctxlab.course.load_transcript("research"), ctxlab.course.load_tools("research")
    budget = ctxlab.ContextBudget(window=10_000, reserve_output=2_000, scratchpad_max=600, model="gpt-5-mini")
    policy = make()
    for index in ctxlab.model_calls(record):
        prompt = policy(record[:index], lap=record[index]["step"], budget=budget, tools=tools)
        assert _billed("gpt-5-mini", prompt, tools) <= budget.input_limit
    assert policy.counter.model == "gpt-5-mini"


def test_a_budget_without_a_model_field_still_drives_the_reference_policies():
    """Lesson 01's learners write a budget class of their own, with no ``model``: the policies
    take it as one naming none (the browser test runs that lesson's widget on it)."""

    class OwnBudget:
        window, reserve_output, scratchpad_max = 10_000, 2_000, 600

        def history_allowance(self, fixed_tokens, scratchpad_tokens):
            return self.window - self.reserve_output - fixed_tokens - scratchpad_tokens

    record = ctxlab.course.load_transcript("incident")
    policy = ctxlab.policies.KeepEverything()
    index = ctxlab.model_calls(record)[2]
    assert policy(record[:index], lap=record[index]["step"], budget=OwnBudget())
    assert policy.counter.model is None
