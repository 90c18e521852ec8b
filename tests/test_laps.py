"""A history without laps (``step``), as the API gives it, is numbered by model call, so its
tool results age as a course transcript's do: the same prompts, tokens and decisions."""

from __future__ import annotations

import copy

import pytest
from support import recordings

import ctxlab
import ctxlab.course
from ctxlab.assembly import number_laps
from ctxlab.course.transcripts import load_real, real_names, repeat_laps

BUDGET = ctxlab.ContextBudget(window=12_000, reserve_output=2_000, scratchpad_max=600, summary_max=800)


def without_laps(run):
    return [{k: v for k, v in m.items() if k != "step"} for m in run]


def events(log):
    return [(e.kind, e.lap, e.data) for e in log]


@pytest.mark.parametrize("name", ctxlab.course.transcript_names())
def test_numbering_finds_the_laps_every_course_transcript_carries(name):
    run = ctxlab.course.load_transcript(name)
    assert number_laps(without_laps(run)) == run
    assert all(a is b for a, b in zip(number_laps(run), run, strict=True))  # nothing copied when laps are there


@pytest.mark.parametrize("options", [dict(), dict(compress_after=6, store="yes"), dict(keep_full_for=0, max_chars=400)])
def test_a_run_without_laps_assembles_as_the_same_run_with_them(options):
    """The Assembler (and build_context, on a share of the laps), lap by lap, on the research
    run repeated to 120 laps with and without its steps: the same prompts, tokens, cuts and
    log events."""
    run = repeat_laps(ctxlab.course.load_transcript("research"), 120)
    bare = without_laps(run)
    pristine = copy.deepcopy(bare)

    def opts(run_name):
        if options.get("store"):
            return {**options, "store": ctxlab.TrajectoryStore(run=run_name)}
        return dict(options)

    stepped = ctxlab.Assembler(ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser(), **opts("a")))
    numbered = ctxlab.Assembler(ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser(), **opts("a")))
    state, compressed, seen = ctxlab.assembly.AssemblyState(), 0, 0
    for lap, index in enumerate(ctxlab.model_calls(run)):
        want = stepped.context(run[:index])
        ours = numbered.context(bare[:index])
        assert ours.messages == want.messages and ours.tokens == want.tokens, f"lap {lap}"
        assert numbered.state == stepped.state
        if not options.get("store") and (lap % 7 == 0 or lap > 100):  # build_context too, on some laps
            # (with a store, its references are numbered by each call's own saves)
            alone = ctxlab.build_context(bare[:index],
                                         ctxlab.MemoryPolicy(BUDGET, client=ctxlab.OfflineSummariser(),
                                                             **opts("a")), state=state)
            assert alone.messages == want.messages and alone.tokens == want.tokens, f"lap {lap}"
        state = numbered.state
        compressed += any(e.kind == "compress" for e in list(numbered.log)[seen:])
        seen = len(numbered.log)
    assert events(numbered.log) == events(stepped.log)
    assert bare == pristine, "the caller's messages were changed"
    assert compressed > 50 and stepped.state.cut > 0


def test_laps_go_on_from_the_last_step_given():
    """A run resumed without steps after a stored part that has them goes on counting."""
    call = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    record = [{"role": "user", "content": "go", "step": 0},
              {"role": "assistant", "content": None, "tool_calls": [call], "step": 9},
              {"role": "tool", "tool_call_id": "c9", "content": "r", "step": 9},
              {"role": "assistant", "content": "next"}, {"role": "user", "content": "and?"},
              {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "c10"}]},
              {"role": "tool", "tool_call_id": "c10", "content": "r"}]
    assert [m["step"] for m in number_laps(record)] == [0, 9, 9, 10, 11, 11, 11]
    assembler = ctxlab.Assembler(BUDGET)
    for message in record:
        assembler.append(message)
    assert assembler.build().log.filter("assemble")[0].lap == 11


def test_real_api_histories_age_their_tool_results():
    """The recorded API runs carry no steps: their old tool results are compressed by age."""
    recordings.require(recordings.real_available())
    aged = 0
    for name in real_names():
        run, tools, _ = load_real(name)
        assert not any("step" in m for m in run)
        context = ctxlab.build_context(run,
                                       ctxlab.MemoryPolicy(ctxlab.ContextBudget(window=128_000, reserve_output=4_000),
                                                           keep_full_for=0, max_chars=100), tools=tools)
        aged += sum(len(e.data["changes"]) for e in context.log.filter("compress"))
        assert all("step" not in m for m in context.messages)
    assert aged > 0


def test_the_assembler_still_refuses_a_record_that_does_not_continue():
    bare = without_laps(ctxlab.course.load_transcript("incident"))
    first, second = ctxlab.model_calls(bare)[2:4]
    assembler = ctxlab.Assembler(BUDGET)
    assembler.context(bare[:first])
    assembler.context(bare[:second])
    with pytest.raises(ValueError, match="does not continue"):
        assembler.context([*bare[:second - 1], dict(bare[second - 1])])
    assert len(assembler) == second
