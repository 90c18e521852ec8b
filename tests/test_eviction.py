"""Eviction in a fixed order: compress, then old small talk (only when turned on), then summarise,
then trim; never the system prompt, the goal, what is pinned or the scratchpad; each stage
logged; it stops as soon as the prompt fits; the Assembler gives the same prompts as
build_context."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.eviction import SMALL_TALK_MAX_TOKENS

REFUND = ctxlab.course.load_transcript("refund")
TOOLS = ctxlab.course.load_tools("refund")
PAD = ctxlab.Scratchpad(goal="Refund Priya in full, shipping included")


def chat(role, text, step):
    return {"role": role, "content": text, "step": step}


CHATTY = [
    *REFUND[:4], chat("user", "Thanks, that is the right order.", 2),
    chat("assistant", "Glad it matches. Looking at the return next.", 2),
    *REFUND[4:6], chat("user", "Great, thank you!", 3), chat("assistant", "You're welcome; one moment.", 3),
    *REFUND[6:],
]
CHATTER = [4, 5, 8, 9]
ON = {"small_talk_tokens": SMALL_TALK_MAX_TOKENS}  # the small-talk stage turned on


OFFLINE = ctxlab.OfflineSummariser()


def build(window, *, client=OFFLINE, history=CHATTY, **options):
    budget = ctxlab.ContextBudget(window=window, reserve_output=1_000, scratchpad_max=200)
    return ctxlab.build_context(history, ctxlab.MemoryPolicy(budget, client=client, **options), tools=TOOLS,
                                scratchpad=PAD)


def stages(context):
    return context.log.filter("assemble")[-1].data["stages"]


FULL = build(50_000).tokens  # the prompt when nothing has to go


def test_small_talk_is_short_chatter_that_nothing_pins():
    assert ctxlab.eviction.small_talk(CHATTY) == CHATTER
    assert ctxlab.eviction.small_talk(REFUND) == []  # every message of the course run has a tool call or is long
    pinned = [dict(m) for m in CHATTY]
    pinned[8]["pinned"] = True
    assert ctxlab.eviction.small_talk(pinned) == [4, 5, 9]
    assert ctxlab.eviction.small_talk(CHATTY, max_tokens=5) == []


def test_the_goal_system_and_newest_turns_are_never_small_talk():
    history = [chat("system", "s", 0), chat("user", "Hi!", 0), chat("assistant", "Hello.", 1), chat("user", "Ok.", 2)]
    assert ctxlab.eviction.small_talk(history) == [2]
    assert ctxlab.eviction.small_talk(history, keep_recent=2) == []
    assert ctxlab.eviction.small_talk(history, keep_recent=0) == [2, 3]


def test_a_prompt_that_fits_is_only_compressed():
    context = build(FULL + 1_000)
    assert stages(context) == ("compress",)
    assert not context.log.filter(["small_talk", "summarise", "trim"])


def test_small_talk_goes_first_and_eviction_stops_when_it_is_enough():
    context = build(FULL + 1_000 - 20, **ON)
    assert stages(context) == ("compress", "small_talk")
    assert context.summary is None and not context.log.filter(["summarise", "trim"])
    event = context.log.filter("small_talk")[0]
    assert [m["content"] for m in event.messages] == [CHATTY[i]["content"] for i in CHATTER]
    assert event.tokens_before - event.tokens_after == sum(ctxlab.count_message(CHATTY[i]) for i in CHATTER)
    texts = [m.get("content") for m in context.messages]
    assert not any(CHATTY[i]["content"] in texts for i in CHATTER)
    assert CHATTY[1]["content"] in texts  # the goal
    assert context.tokens <= FULL - 20


def test_then_summarise_then_trim():
    summarised = build(3_500, **ON)
    assert stages(summarised) == ("compress", "small_talk", "summarise")
    assert [e.kind for e in summarised.log][:3] == ["compress", "small_talk", "summarise"]
    trimmed = build(3_500, client=None, **ON)
    assert stages(trimmed) == ("compress", "small_talk", "trim")
    # the small talk was dropped, not folded into the summary
    summary = summarised.summary or ""
    assert "Great, thank you!" not in summary


def test_the_stage_is_off_by_default_and_can_be_turned_off():
    assert stages(build(FULL + 1_000 - 20)) == ("compress", "summarise")
    assert stages(build(FULL + 1_000 - 20, small_talk_tokens=0)) == ("compress", "summarise")
    assert build(FULL + 1_000 - 20).messages == build(FULL + 1_000 - 20, small_talk_tokens=0).messages
    assert "small_talk" in ctxlab.events.EVENT_KINDS


INSTRUCTION = chat("user", "Do not touch the payments module.", 3)  # short, unpinned, mid-run
INSTRUCTED = [*REFUND[:6], INSTRUCTION, *REFUND[6:]]


@pytest.mark.parametrize("client", [OFFLINE, None], ids=["summarised", "trimmed"])
def test_by_default_a_short_user_instruction_is_summarised_or_trimmed_not_dropped_as_small_talk(client):
    assert ctxlab.count_message(INSTRUCTION) <= SMALL_TALK_MAX_TOKENS
    assert ctxlab.eviction.small_talk(INSTRUCTED) == [6]  # by length alone it looks like small talk
    window = build(50_000, history=INSTRUCTED).tokens + 1_000 - 5  # 5 tokens short
    context = build(window, history=INSTRUCTED, client=client)
    kind = "summarise" if client else "trim"
    assert stages(context) == ("compress", kind)
    assert not context.log.filter("small_talk")
    cut = context.log.filter(kind)[0]
    assert INSTRUCTION["content"] in [m.get("content") for m in cut.messages]  # as the log shows
    if client:
        assert "payments module" in (context.summary or "")  # its gist stays in the prompt
    # turned on, the same instruction is dropped outright, and logged as small talk
    on = build(window, history=INSTRUCTED, client=client, **ON)
    assert stages(on) == ("compress", "small_talk")
    event = on.log.filter("small_talk")[0]
    assert [m["content"] for m in event.messages] == [INSTRUCTION["content"]]
    assert INSTRUCTION["content"] not in [m.get("content") for m in on.messages] and on.summary is None
    # pinned, it survives with the stage on
    pinned = [*REFUND[:6], {**INSTRUCTION, "pinned": True}, *REFUND[6:]]
    kept = build(window, history=pinned, client=client, **ON)
    assert INSTRUCTION["content"] in [m.get("content") for m in kept.messages]
    assert not kept.log.filter("small_talk")


@pytest.mark.parametrize("window", [3_000, 3_500, 4_200, FULL + 1_000 - 20])
def test_never_the_system_the_goal_the_pins_or_the_scratchpad(window):
    history = [dict(m) for m in CHATTY]
    history[8]["pinned"] = True  # a short user message that must stay
    context = build(window, history=history, **ON)
    assert context.messages[0]["content"] == history[0]["content"]
    assert context.messages[1]["content"] == history[1]["content"]
    assert history[8]["content"] in [m.get("content") for m in context.messages]
    assert context.messages[-1] == PAD.message(max_tokens=200)
    assert context.tokens <= window - 1_000


@pytest.mark.parametrize("options", [ON, {}], ids=["stage on", "default"])
def test_the_assembler_gives_the_same_prompts_lap_after_lap(options):
    budget = ctxlab.ContextBudget(window=4_200, reserve_output=1_000, scratchpad_max=200)
    client = ctxlab.OfflineSummariser()
    assembler = ctxlab.Assembler(ctxlab.MemoryPolicy(budget, client=client, **options), tools=TOOLS)
    state = ctxlab.assembly.AssemblyState()
    for index in ctxlab.model_calls(CHATTY):
        step = CHATTY[index]["step"]
        want = ctxlab.build_context(CHATTY[:index], ctxlab.MemoryPolicy(budget, client=client, **options),
                                    tools=TOOLS, scratchpad=PAD, state=state, step=step)
        got = assembler.context(CHATTY[:index], scratchpad=PAD, step=step)
        assert got.messages == want.messages and got.state == want.state and got.tokens == want.tokens
        state = want.state
    assert bool(assembler.log.filter("small_talk")) == bool(options)


def test_the_assemble_policy_passes_the_stage_on():
    budget = ctxlab.ContextBudget(window=4_200, reserve_output=1_000, scratchpad_max=400)
    runs = {
        on: ctxlab.replay(CHATTY, ctxlab.Assemble(OFFLINE, pin_user_messages=False, goal=PAD.goal,
                                                  small_talk_tokens=on), budget=budget, tools=TOOLS)
        for on in (0, SMALL_TALK_MAX_TOKENS)
    }
    assert not runs[0].log.filter("small_talk") and runs[SMALL_TALK_MAX_TOKENS].log.filter("small_talk")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["user", "assistant", "call", "pinned"]), min_size=1, max_size=12),
       st.integers(0, 3))
def test_small_talk_never_holds_a_pin_a_call_or_a_recent_turn(kinds, keep_recent):
    history = [chat("system", "s", 0), chat("user", "the task", 0)]
    for k, kind in enumerate(kinds, start=1):
        if kind == "call":
            call = {"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            history += [{"role": "assistant", "content": None, "tool_calls": [call], "step": k},
                        {"role": "tool", "tool_call_id": f"c{k}", "content": "ok", "step": k}]
        else:
            role = "user" if kind in ("user", "pinned") else "assistant"
            history.append({**chat(role, f"{kind} {k}", k), **({"pinned": True} if kind == "pinned" else {})})
    chosen = ctxlab.eviction.small_talk(history, keep_recent=keep_recent)
    spans = ctxlab.trimming.turn_group_spans(history)
    recent = {i for a, b in spans[len(spans) - keep_recent:] if keep_recent for i in range(a, b)}
    pins = ctxlab.trimming.pinned_indices(history)
    for i in chosen:
        message = history[i]
        assert i not in pins and i not in recent
        assert message["role"] in ("user", "assistant") and not message.get("tool_calls")
        assert ctxlab.count_message(message) <= SMALL_TALK_MAX_TOKENS
    assert chosen == sorted(chosen)
