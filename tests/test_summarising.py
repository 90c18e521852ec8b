"""Roll-up summarisation: rendering, the prompt, compact, the offline summariser, and
trim-and-summarise (exactly one summary, counted in the budget, nothing ever lost)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.budget import model_calls

INCIDENT = ctxlab.course.transcript_info("incident")["probes"]
RESEARCH = ctxlab.course.transcript_info("research")["probes"]


def text_of(messages):
    return "\n".join(json.dumps(m) for m in messages)


def tokens(messages):
    return sum(ctxlab.count_message(m) for m in messages)


# --- render_steps and failure_of -------------------------------------------------------------------


def test_render_steps_shows_laps_roles_calls_results_and_failures():
    research = ctxlab.course.load_transcript("research")
    text = ctxlab.summarising.render_steps(research[15:19])  # lap 7: fetch_pdf fails; lap 8: read_page
    lines = text.splitlines()
    assert lines[0] == '[lap 7] assistant called fetch_pdf {"url": "https://www.njbp.example/doi/pdf/10.5555/njbp.2022.0931"} (id ' + research[15]["tool_calls"][0]["id"] + ")"
    assert lines[1].startswith("[lap 7] tool fetch_pdf (id ") and " FAILED: http_403 (status=403): " in lines[1]
    assert RESEARCH["failure"] in lines[1]
    assert any(line.startswith("[lap 8] tool read_page (id ") and line.endswith("returned:") for line in lines)
    # results are there in full, indented under their entry
    assert all(("    " + line if line.strip() else "") in lines for line in research[18]["content"].splitlines())


def test_render_steps_keeps_parallel_calls_and_assistant_text():
    parallel = ctxlab.course.load_transcript("parallel")
    group = next(g for g in ctxlab.turn_groups(parallel) if g[0]["role"] == "assistant" and g[0].get("content") and g[0].get("tool_calls"))
    text = ctxlab.summarising.render_steps(group)
    lap = group[0]["step"]
    assert text.startswith(f"[lap {lap}] assistant: {group[0]['content'].splitlines()[0]}")
    for call in group[0]["tool_calls"]:
        assert f"called {call['function']['name']} " in text and f"(id {call['id']})" in text
    assert text.count(f"[lap {lap}] tool ") == len(group) - 1


def test_render_steps_names_the_tool_of_the_call_before_a_result_when_ids_are_reused():
    def call(tool):
        return {"id": "call_0", "type": "function", "function": {"name": tool, "arguments": "{}"}}

    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call("search_logs")], "step": 1},
        {"role": "tool", "tool_call_id": "call_0", "content": "no match", "step": 1},
        {"role": "assistant", "content": None, "tool_calls": [call("restart_job")], "step": 2},
        {"role": "tool", "tool_call_id": "call_0", "content": "restarted", "step": 2},
    ]
    results = [line for line in ctxlab.summarising.render_steps(messages).splitlines() if " tool " in line]
    assert results == ["[lap 1] tool search_logs (id call_0) returned:", "[lap 2] tool restart_job (id call_0) returned:"]
    # a result whose call is not before it names no tool rather than a later one
    assert ctxlab.summarising.render_steps(messages[1:3]).splitlines()[0] == "[lap 1] tool unknown_tool (id call_0) returned:"


def test_failure_of_reads_every_failure_in_the_transcripts():
    failures = {}
    for name in ctxlab.course.transcript_names():
        for message in ctxlab.course.load_transcript(name):
            if message["role"] == "tool" and ctxlab.summarising.failure_of(message["content"]):
                failures.setdefault(name, []).append(ctxlab.summarising.failure_of(message["content"]))
    assert set(failures) == {"refund", "research", "parallel"}
    assert len(failures["research"]) == 3
    for name in failures:
        probe = ctxlab.course.transcript_info(name)["probes"]["failure"]
        assert all(probe in line for line in failures[name]), (name, failures[name])


@pytest.mark.parametrize("content, expected", [
    ('{"ok": false, "message": "quota exceeded"}', "failed: quota exceeded"),
    ('{"error": {"code": "rate_limit", "message": "slow down"}}', "rate_limit (code=rate_limit): slow down"),
    ("Error: file not found: src/app.py", "Error: file not found: src/app.py"),
    ("Traceback (most recent call last):\n  File 'x'\nValueError: bad", "ValueError: bad"),
    ('{"status": "ok", "errors": []}', None),
    ("2024-06-11 ERROR something in a log line", None),
    ("", None),
])
def test_failure_of_rules(content, expected):
    assert ctxlab.summarising.failure_of(content) == expected


# --- the compaction prompt ----------------------------------------------------------------------------


def test_prompt_asks_for_facts_decisions_failures_and_open_questions():
    prompt = ctxlab.summarising.compaction_prompt("[lap 1] assistant: Looking.")
    for asked in ("every fact", "tool and the lap", "every decision", "with its reason",
                  "every tool call that failed", "how it failed", "OPEN QUESTIONS", "terse bullet points"):
        assert asked in prompt, asked
    assert "PREVIOUS SUMMARY" not in prompt
    assert prompt.endswith("STEPS TO FOLD IN:\n[lap 1] assistant: Looking.")


def test_prompt_with_a_prior_summary_asks_for_one_rolled_up_summary():
    prior = "FACTS:\n- [search_logs, lap 3] 55P03"
    prompt = ctxlab.summarising.compaction_prompt("[lap 9] assistant: Next.", prior)
    assert prior in prompt and "ONE summary" in prompt
    assert prompt.index(prior) < prompt.index("STEPS TO FOLD IN:")
    assert ctxlab.summarising.compaction_prompt("x", "   ") == ctxlab.summarising.compaction_prompt("x")
    with pytest.raises(TypeError, match="render_steps"):
        ctxlab.summarising.compaction_prompt([{"role": "user", "content": "x"}])


# --- compact ----------------------------------------------------------------------------------------


def test_compact_sends_one_request_at_temperature_zero_with_the_prior():
    client = ctxlab.course.ScriptedClient(["FACTS:\n- new"])
    dropped = ctxlab.course.load_transcript("incident")[6:8]
    assert ctxlab.compact(client, dropped, "FACTS:\n- old", model="cheap") == "FACTS:\n- new"
    (request,) = client.requests
    assert request["temperature"] == 0 and request["model"] == "cheap"
    assert request["messages"] == [{"role": "user", "content": ctxlab.summarising.compaction_prompt(ctxlab.summarising.render_steps(dropped), "FACTS:\n- old")}]


def test_compact_with_nothing_dropped_calls_nothing():
    client = ctxlab.course.ScriptedClient([])
    assert ctxlab.compact(client, [], "FACTS:\n- old") == "FACTS:\n- old"
    assert ctxlab.compact(client, []) == ""
    assert client.requests == []


# --- the offline summariser -----------------------------------------------------------------------


def test_offline_summary_keeps_the_incident_finding_with_its_tool():
    incident = ctxlab.course.load_transcript("incident")
    summary = ctxlab.compact(ctxlab.OfflineSummariser(), incident[2:24])  # laps 1-11, before the agent acts
    finding = [line for line in summary.splitlines() if INCIDENT["finding"] in line]
    assert finding and finding[0].startswith("- [search_logs, lap 3] ")
    assert ctxlab.count_text(summary) < tokens(incident[2:24]) / 10


def test_offline_summary_keeps_the_research_failure_once_with_all_its_laps():
    research = ctxlab.course.load_transcript("research")
    summary = ctxlab.compact(ctxlab.OfflineSummariser(), research[2:70])
    failures = summary.split("FAILURES:\n")[1].split("USER INSTRUCTIONS:")[0].strip().splitlines()
    assert len(failures) == 1
    assert failures[0].startswith("- fetch_pdf {") and "failed at laps 7, 17, 31: http_403" in failures[0]
    assert RESEARCH["failure"] in failures[0]
    assert RESEARCH["constraint"] in summary.split("USER INSTRUCTIONS:\n")[1]


def test_offline_summary_folds_the_prior_in_and_merges_repeated_failures():
    research = ctxlab.course.load_transcript("research")
    client = ctxlab.OfflineSummariser()
    first = ctxlab.compact(client, research[2:30])
    second = ctxlab.compact(client, research[30:70], first)
    for line in first.splitlines():
        if line.startswith("- ") and "fetch_pdf" not in line and line != "- none":
            assert line in second, line
    assert second.count("fetch_pdf {") == 1 and "failed at laps 7, 17, 31" in second
    assert ctxlab.compact(client, research[30:70], first) == second  # deterministic


def test_offline_summariser_has_the_openai_shape_and_refuses_bad_requests():
    client = ctxlab.OfflineSummariser()
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], temperature=0)
    assert reply.choices[0].message.content.startswith("FACTS:")
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens > 0
    assert client.requests[0]["temperature"] == 0
    with pytest.raises(ValueError, match="temperature"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], temperature=3)
    with pytest.raises(ValueError, match="messages"):
        client.chat.completions.create(model="m", messages=[], temperature=0)


# --- trim_and_summarise -----------------------------------------------------------------------------


def replay_incident(allowance, client, log=None):
    """The incident run lap by lap: before each model call, trim-and-summarise the prompt."""
    incident = ctxlab.course.load_transcript("incident")
    history, prompts, seen = [], [], 0
    for index in model_calls(incident):
        history += incident[seen:index]
        seen = index
        history = ctxlab.trim_and_summarise(history, allowance, client=client, log=log)
        prompts.append(list(history))
    return prompts


def test_exactly_one_summary_after_repeated_trim_and_summarise():
    log = ctxlab.MemoryLog()
    prompts = replay_incident(7_000, ctxlab.OfflineSummariser(), log)
    assert log.count("summarise") >= 3
    for prompt in prompts:
        summaries = [i for i, m in enumerate(prompt) if ctxlab.is_summary(m)]
        assert len(summaries) <= 1
        if summaries:
            assert summaries == [2], "the summary goes right after the system prompt and the task"
        assert tokens(prompt) <= 7_000
        assert ctxlab.pairs_ok(prompt)
    assert sum(map(ctxlab.is_summary, prompts[-1])) == 1


def test_the_roll_up_keeps_the_finding_that_plain_trimming_loses():
    incident = ctxlab.course.load_transcript("incident")
    before_acting = incident[:24]  # the prompt of lap 12, where the agent acts on the finding
    kept, _ = ctxlab.fit(before_acting, 7_000)
    assert INCIDENT["finding"] not in text_of(kept)
    prompts = replay_incident(7_000, ctxlab.OfflineSummariser())
    assert INCIDENT["finding"] in text_of(prompts[11])
    assert INCIDENT["goal"] in text_of(prompts[11])


def test_the_summary_is_counted_in_the_allowance():
    incident = ctxlab.course.load_transcript("incident")[:24]
    for allowance in (5_000, 6_000, 8_000, 12_000):
        out = ctxlab.trim_and_summarise(incident, allowance, client=ctxlab.OfflineSummariser())
        assert tokens(out) <= allowance
        assert any(map(ctxlab.is_summary, out))


def test_a_summary_longer_than_its_reserve_makes_room_by_dropping_more():
    incident = ctxlab.course.load_transcript("incident")[:24]
    log = ctxlab.MemoryLog()
    long_summary = "FACTS:\n" + "- [search_logs, lap 3] sqlstate=55P03 lock timeout on order_lines\n" * 60
    client = ctxlab.course.ScriptedClient([long_summary, long_summary])
    out = ctxlab.trim_and_summarise(incident, 8_000, client=client, summary_reserve=50, log=log)
    assert tokens(out) <= 8_000
    assert len(client.requests) == 2  # the second request folds the extra groups into the first summary
    assert long_summary.strip() in client.requests[1]["messages"][0]["content"]
    (event,) = log.filter("summarise")
    assert [m for m in incident if m not in out] == list(event.messages)


def test_the_prior_summary_is_folded_into_the_next_one():
    incident = ctxlab.course.load_transcript("incident")
    old = ctxlab.summary_message("FACTS:\n- [get_job_runs, lap 1] the run failed in extract_orders", step=1)
    history = [*incident[:2], old, *incident[4:24]]
    client = ctxlab.course.ScriptedClient(["FACTS:\n- rolled up"])
    out = ctxlab.trim_and_summarise(history, 6_000, client=client)
    assert "the run failed in extract_orders" in client.requests[0]["messages"][0]["content"]
    assert [ctxlab.summarising.summary_text(m) for m in out if ctxlab.is_summary(m)] == ["FACTS:\n- rolled up"]
    assert old not in out


def test_stacked_summaries_are_rolled_into_one():
    incident = ctxlab.course.load_transcript("incident")
    one, two = ctxlab.summary_message("FACTS:\n- a", step=1), ctxlab.summary_message("FACTS:\n- b", step=2)
    history = [*incident[:2], one, two, *incident[6:10]]
    client = ctxlab.course.ScriptedClient(["FACTS:\n- a\n- b"])
    out = ctxlab.trim_and_summarise(history, 50_000, client=client)
    (summary,) = [ctxlab.summarising.summary_text(m) for m in out if ctxlab.is_summary(m)]
    assert "- a" in summary and "- b" in summary
    assert client.requests == []  # nothing was dropped, so the two are joined without a model call


def test_nothing_happens_when_everything_fits():
    incident = ctxlab.course.load_transcript("incident")[:8]
    client = ctxlab.course.ScriptedClient([])
    assert ctxlab.trim_and_summarise(incident, 50_000, client=client) == incident
    assert client.requests == []


def test_each_message_is_counted_once_per_call():
    incident = ctxlab.course.load_transcript("incident")[:24]
    seen: dict[int, int] = {}

    def spy(message):
        seen[id(message)] = seen.get(id(message), 0) + 1
        return ctxlab.count_message(message)

    ctxlab.trim_and_summarise(incident, 6_000, client=ctxlab.OfflineSummariser(), count=spy)
    assert max(seen.values()) == 1 and len(seen) == len(incident) + 1  # + the summary message


def test_an_impossible_allowance_is_refused_with_the_numbers():
    incident = ctxlab.course.load_transcript("incident")[:24]
    with pytest.raises(ctxlab.BudgetError, match="for the summary"):
        ctxlab.trim_and_summarise(incident, 1_000, client=ctxlab.OfflineSummariser())
    with pytest.raises(ctxlab.BudgetError, match="summary_reserve"):
        ctxlab.trim_and_summarise(incident, 1_000, client=ctxlab.OfflineSummariser(), summary_reserve=1_000)


# --- when the summariser fails, nothing is lost -------------------------------------------------------


def test_a_failing_summariser_raises_and_leaves_the_history_as_it_was():
    incident = ctxlab.course.load_transcript("incident")[:24]
    original = copy.deepcopy(incident)
    log = ctxlab.MemoryLog()
    client = ctxlab.course.ScriptedClient([TimeoutError("stalled")] * 3)
    with pytest.raises(ctxlab.SummaryError, match="failed 3 times"):
        ctxlab.trim_and_summarise(incident, 6_000, client=client, log=log, backoff=0)
    assert incident == original
    (event,) = log
    assert event.kind == "summary_failed" and event.messages
    assert "unchanged" in event.detail and "stalled" in event.data["error"]


def test_a_failing_summariser_can_trim_and_keep_the_dropped_steps_in_the_log():
    incident = ctxlab.course.load_transcript("incident")
    old = ctxlab.summary_message("FACTS:\n- [search_logs, lap 3] 55P03", step=3)
    history = [*incident[:2], old, *incident[8:24]]
    log = ctxlab.MemoryLog()
    client = ctxlab.course.ScriptedClient([ConnectionError("refused")] * 3)
    out = ctxlab.trim_and_summarise(history, 6_000, client=client, log=log, backoff=0, on_failure="trim")
    assert tokens(out) <= 6_000 and ctxlab.pairs_ok(out)
    assert [m for m in out if ctxlab.is_summary(m)] == [old], "the old summary stays"
    (event,) = log.filter("summary_failed")
    assert [m for m in history if m not in out] == list(event.messages)
    with pytest.raises(ValueError, match="needs a log"):
        ctxlab.trim_and_summarise(history, 6_000, client=client, on_failure="trim")


# --- properties over random histories -----------------------------------------------------------------


@st.composite
def runs(draw):
    """Random valid runs: tool groups (parallel calls), chat turns, pins, an old summary or two."""
    words = lambda n: "word " * n  # noqa: E731
    history = [{"role": "system", "content": "You help."}, {"role": "user", "content": "Do the task."}]
    next_id = 0
    for lap in range(1, draw(st.integers(1, 14)) + 1):
        kind = draw(st.sampled_from(["tools", "tools", "assistant", "user", "summary"]))
        if kind == "tools":
            ids = [f"c{next_id + i}" for i in range(draw(st.integers(1, 3)))]
            next_id += len(ids)
            group = [{"role": "assistant", "content": None, "step": lap, "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "probe", "arguments": json.dumps({"n": i})}} for i in ids]}]
            group += [{"role": "tool", "tool_call_id": i, "step": lap,
                       "content": draw(st.sampled_from(["ERROR disk full\n", '{"error": "gone"}', "ok\n"])) + words(draw(st.integers(0, 300)))}
                      for i in ids]
        elif kind == "summary":
            group = [ctxlab.summary_message(f"FACTS:\n- fact {lap}", step=lap)]
        else:
            group = [{"role": kind, "content": words(draw(st.integers(1, 120))), "step": lap}]
        if kind != "summary" and draw(st.integers(0, 10)) == 0:
            group[0]["pinned"] = True
        history += group
    return history


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.integers(min_value=150, max_value=3_000))
def test_trim_and_summarise_properties(history, allowance):
    log = ctxlab.MemoryLog()
    try:
        out = ctxlab.trim_and_summarise(history, allowance, client=ctxlab.OfflineSummariser(), log=log)
    except ctxlab.BudgetError:
        event("refused")
        return
    event("summarised" if log.count("summarise") else "unchanged")
    summaries = [i for i, m in enumerate(out) if ctxlab.is_summary(m)]
    assert len(summaries) <= 1
    assert tokens(out) <= allowance or out == history
    assert ctxlab.pairs_ok(out)
    rest = [m for m in history if not ctxlab.is_summary(m)]
    kept = [m for m in out if not ctxlab.is_summary(m)]
    position = {id(m): i for i, m in enumerate(rest)}
    assert [position[id(m)] for m in kept] == sorted(position[id(m)] for m in kept)  # order kept
    assert {id(rest[i]) for i in ctxlab.trimming.pinned_indices(rest)} <= {id(m) for m in kept}  # pins kept
    if log.count("summarise"):
        (recorded,) = log
        assert {id(m) for m in kept} | {id(m) for m in recorded.messages} == {id(m) for m in rest}  # nothing lost
        head, pins = out[: summaries[0]], ctxlab.trimming.pinned_indices(out)
        for start, stop in ctxlab.trimming.turn_group_spans(head):  # right after the pinned head
            assert pins & set(range(start, stop)), "only pinned turn groups come before the summary"
        assert ctxlab.pairs_ok(head)
        new_summary = ctxlab.summarising.summary_text(out[summaries[0]])
        for old in history:
            if ctxlab.is_summary(old):  # rolled up: every line of an earlier summary is carried over
                assert all(line in new_summary for line in ctxlab.summarising.summary_text(old).splitlines()[1:])
    else:
        assert out == history


def test_a_capped_roll_up_never_grows_past_its_cap():
    research = ctxlab.course.load_transcript("research")
    counter = ctxlab.TokenCounter()
    history, seen, sizes = [], 0, []
    for index in ctxlab.model_calls(research)[1:]:  # the roll-up of a whole run, lap by lap
        history = [*history, *research[seen:index]]
        seen = index
        history = ctxlab.trim_and_summarise(history, 4_000, client=ctxlab.OfflineSummariser(), summary_max=300,
                                            count=counter.message)
        sizes += [counter.message(m) for m in history if ctxlab.is_summary(m)]
    assert len(sizes) > 10 and max(sizes) <= 300
    with pytest.raises(ValueError, match="summary_max"):
        ctxlab.trim_and_summarise(history, 4_000, client=ctxlab.OfflineSummariser(), summary_max=5)
