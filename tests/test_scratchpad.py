"""Scratchpad: rendering order, updates kept by code, and the bounded render's guarantees."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.scratchpad import SCRATCHPAD_HEADER, SECTIONS, SHED_ORDER, call_signature

HEADINGS = {heading: section for section, heading in SECTIONS}


def tool_call(name, **arguments):
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def parse(text):
    """{section: [item lines]} of a rendered scratchpad, plus the goal line."""
    blocks = text.split("\n\n")
    goal = blocks[0]
    sections = {}
    for block in blocks[1:]:
        heading, *lines = block.split("\n")
        sections[HEADINGS[heading.rstrip(":")]] = lines
    return goal, sections


def full_pad():
    return ctxlab.Scratchpad(
        goal="Find why the nightly export failed",
        facts={"export step": "timed out at 02:14", "lock holder": "vacuum job pid 39150"},
        done=["read job runs", "searched 01:00 logs"],
        remaining=["check the maintenance schedule", "write the report"],
        failed={'search_logs {"host": "db-9"}': "host_not_found"},
        open_questions=["was the vacuum job moved recently?"],
    )


# --- rendering ------------------------------------------------------------------------------


def test_render_puts_the_goal_first_and_sections_in_a_fixed_order():
    text = full_pad().render()
    assert text.startswith("GOAL: Find why the nightly export failed\n\n")
    headings = [line for line in text.splitlines() if line.rstrip(":") in HEADINGS]
    assert headings == ["ESTABLISHED:", "DONE:", "REMAINING:", "DO NOT RETRY:", "OPEN QUESTIONS:"]
    assert '- search_logs {"host": "db-9"}: host_not_found' in text.splitlines()


def test_render_omits_empty_sections():
    pad = ctxlab.Scratchpad(goal="g", remaining=["next"])
    assert pad.render() == "GOAL: g\n\nREMAINING:\n- next"
    assert ctxlab.Scratchpad(goal="only a goal").render() == "GOAL: only a goal"


def test_items_are_one_line_each():
    pad = ctxlab.Scratchpad(goal="g", done=["two\nlines"], facts={"k": "a\n  b"})
    assert "- two lines" in pad.render() and "- k: a b" in pad.render()


def test_a_scratchpad_needs_a_goal():
    with pytest.raises(ValueError, match="needs a goal"):
        ctxlab.Scratchpad(goal="  ")


def test_message_is_a_user_message_that_says_what_it_is():
    message = full_pad().message()
    assert message["role"] == "user"
    assert message["content"] == f"{SCRATCHPAD_HEADER}\n{full_pad().render()}"
    assert ctxlab.scratchpad.is_scratchpad_message(message)
    assert not ctxlab.scratchpad.is_scratchpad_message({"role": "user", "content": "GOAL: x"})
    ctxlab.validate_messages([message])


def test_round_trip_through_a_dict():
    pad = full_pad()
    assert ctxlab.Scratchpad.from_dict(json.loads(json.dumps(pad.to_dict()))) == pad


# --- failures and updates -------------------------------------------------------------------


def failure(result):
    pad = ctxlab.Scratchpad(goal="g")
    ctxlab.scratchpad.update_scratchpad(pad, tool_call("f"), result)
    return next(iter(pad.failed.values()), None), pad.done


@pytest.mark.parametrize(
    "result, reason",
    [
        ('{"error": "http_403", "status": 403, "message": "paywall"}', "http_403 (status=403): paywall"),
        ({"error": "not_found", "message": "no such file"}, "not_found: no such file"),
        ({"ok": False, "message": "quota exceeded"}, "failed: quota exceeded"),
        ('{"success": false}', "failed"),
        ("Error: permission denied\nmore", "Error: permission denied"),
        ("Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'sku'", "KeyError: 'sku'"),
    ],
)
def test_error_shaped_results_are_failures(result, reason):
    assert failure(result) == (reason, [])
    assert reason == ctxlab.summarising.failure_of(result if isinstance(result, str) else json.dumps(result))  # one rule


@pytest.mark.parametrize(
    "result",
    ['{"results": []}', {"error": None, "rows": 3}, {"ok": True}, "3 errors found in the log", "[1, 2]", "", "{not json"],
)
def test_other_results_are_successes(result):
    reason, done = failure(result)
    assert reason is None and len(done) == 1


def test_refund_decline_code_is_kept_in_the_reason():
    refund = ctxlab.course.load_transcript("refund")
    reason, _ = failure(refund[9]["content"])
    assert ctxlab.course.transcript_info("refund")["probes"]["failure"] in reason
    assert "retryable=false" in reason


def test_a_very_long_reason_is_cut():
    reason, _ = failure({"error": "boom", "message": "why " * 200})
    assert len(reason) <= 240 and reason.endswith("…")


def test_a_repeated_failure_is_recorded_once_with_its_first_lap():
    pad = ctxlab.Scratchpad(goal="g")
    call = tool_call("fetch_pdf", url="https://x.example/a.pdf")
    for lap in (7, 17, 31):
        ctxlab.scratchpad.update_scratchpad(pad, call, {"error": "http_403", "message": "paywall"}, step=lap)
    assert pad.failed == {'fetch_pdf {"url": "https://x.example/a.pdf"}': "http_403: paywall (lap 7)"}
    assert pad.done == []


def test_the_same_call_matches_whatever_its_argument_order():
    a = {"function": {"name": "f", "arguments": '{"b": 1, "a": 2}'}}
    b = {"function": {"name": "f", "arguments": '{"a":2,"b":1}'}}
    assert call_signature(a) == call_signature(b) == 'f {"a": 2, "b": 1}'


def test_a_success_adds_one_short_done_line_and_clears_an_earlier_failure():
    pad = ctxlab.Scratchpad(goal="g")
    call = tool_call("read_page", url="https://x.example")
    ctxlab.scratchpad.update_scratchpad(pad, call, "Error: timeout", step=3)
    assert pad.retry_later == {'read_page {"url": "https://x.example"}': "Error: timeout (lap 3); may be retried later"}
    page = "URL: https://x.example\nTitle: Heat pumps in the cold\n" + "body text " * 2_000
    ctxlab.scratchpad.update_scratchpad(pad, call, page, step=4)
    assert pad.failed == {} and pad.retry_later == {}
    assert pad.done == ['read_page {"url": "https://x.example"} -> Title: Heat pumps in the cold (lap 4)']


@pytest.mark.parametrize(
    "result, when",
    [
        # transient: the same call may succeed later
        ('{"error": "rate_limited", "message": "Retry after 60 s."}', "after 60 s"),
        ({"error": "rate_limited", "retry_after": 30}, "after 30 s"),
        ({"error": "throttled", "retry_after_ms": 1500}, "after 1.5 s"),
        ({"error": {"code": "overloaded", "message": "try again in a minute"}}, "later"),
        ({"error": "upstream", "status": 503}, "later"),
        ({"error": "upstream", "status_code": "502"}, "later"),
        ({"error": "quota", "status": 429, "message": "retry after 2 minutes"}, "after 120 s"),
        ({"error": "boom", "retryable": True}, "later"),
        ("Error: request timed out after 30 s", "later"),
        ("Error: connection reset by peer", "later"),
        ({"error": "gateway_timeout"}, "later"),
        # permanent: the same call fails the same way
        ({"error": "not_found", "status": 404}, None),
        ({"error": "invalid_arguments", "message": "url is required"}, None),
        ({"error": "permission_denied", "status": 403}, None),
        ({"error": "timeout", "retryable": False}, None),
        ({"error": "bad_request", "status": 400, "message": "request timed out?"}, None),
        ("Error: permission denied", None),
        ("Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'sku'", None),
        # not a failure at all
        ({"ok": True, "message": "timeout raised to 60 s"}, None),
        # words that only look like a transient cause
        ({"error": "invalid_format", "message": "unknown time output format"}, None),
        ("Error: ETIMEDOUT connecting to db-9", "later"),
    ],
)
def test_a_failure_is_transient_or_permanent(result, when):
    assert ctxlab.scratchpad.retry_when(result) == when


def test_a_transient_failure_is_a_retry_later_line_and_a_permanent_one_do_not_retry():
    pad = ctxlab.Scratchpad(goal="g")
    search = tool_call("search", q="heat pumps")
    fetch = tool_call("fetch_pdf", url="https://x.example/a.pdf")
    ctxlab.scratchpad.update_scratchpad(pad, search, {"error": "rate_limited", "retry_after": 60}, step=2)
    ctxlab.scratchpad.update_scratchpad(pad, fetch, {"error": "http_403", "status": 403, "message": "paywall"}, step=3)
    assert pad.failed == {'fetch_pdf {"url": "https://x.example/a.pdf"}': "http_403 (status=403): paywall (lap 3)"}
    assert list(pad.retry_later) == ['search {"q": "heat pumps"}']
    assert pad.retry_later['search {"q": "heat pumps"}'].endswith("(lap 2); may be retried after 60 s")
    _, sections = parse(pad.render())
    assert sections["retry_later"] == pad.lines("retry_later") and sections["failed"] == pad.lines("failed")
    # a retry that fails transiently again updates its line; one that fails for good moves it
    ctxlab.scratchpad.update_scratchpad(pad, search, {"error": "timeout"}, step=5)
    assert pad.retry_later['search {"q": "heat pumps"}'] == "timeout (lap 5); may be retried later"
    ctxlab.scratchpad.update_scratchpad(pad, search, {"error": "invalid_query", "status": 400}, step=6)
    assert 'search {"q": "heat pumps"}' in pad.failed and pad.retry_later == {}
    # a call that failed for good stays under DO NOT RETRY, whatever a later attempt says
    ctxlab.scratchpad.update_scratchpad(pad, fetch, {"error": "upstream", "status": 503}, step=7)
    assert pad.retry_later == {} and pad.failed['fetch_pdf {"url": "https://x.example/a.pdf"}'].endswith("(lap 3)")


def test_the_same_call_with_other_spacing_or_key_order_is_the_same_failure():
    pad = ctxlab.Scratchpad(goal="g")
    for arguments in ('{"url": "u", "page": 2}', '{"page":2,"url":"u"}', '{ "url" : "u" ,\n "page" : 2 }'):
        ctxlab.scratchpad.update_scratchpad(pad, {"function": {"name": "fetch", "arguments": arguments}}, {"error": "not_found"})
    assert pad.failed == {'fetch {"page": 2, "url": "u"}': "not_found"}


def test_update_is_deterministic_and_bounded_per_call():
    research = ctxlab.course.load_transcript("research")
    pads = []
    for _ in range(2):
        pad = ctxlab.Scratchpad(goal="research heat pumps")
        calls = {}
        for message in research:
            for call in message.get("tool_calls") or []:
                calls[call["id"]] = call
            if message["role"] == "tool":
                ctxlab.scratchpad.update_scratchpad(pad, calls[message["tool_call_id"]], message["content"], step=message["step"])
        pads.append(pad)
    assert pads[0] == pads[1]
    assert all(len(line) <= 200 for line in pads[0].done)
    assert ctxlab.count_text(pads[0].render()) < ctxlab.count_messages(research) / 20


def test_extract_adds_facts():
    pad = ctxlab.Scratchpad(goal="g")
    ctxlab.scratchpad.update_scratchpad(pad, tool_call("lookup_doi", doi="10.5555/x"), '{"published": "2022-03-01"}',
                             extract=lambda call, result: {"10.5555/x published": json.loads(result)["published"]})
    assert pad.facts == {"10.5555/x published": "2022-03-01"}


def test_research_run_would_have_said_do_not_retry_after_the_first_failure():
    research = ctxlab.course.load_transcript("research")
    probe = ctxlab.course.transcript_info("research")["probes"]["failure"]
    pad = ctxlab.Scratchpad(goal="research heat pumps")
    calls, warned_at = {}, []
    for message in research:
        for call in message.get("tool_calls") or []:
            calls[call["id"]] = call
            if call_signature(call) in pad.failed:
                warned_at.append(message["step"])
        if message["role"] == "tool":
            ctxlab.scratchpad.update_scratchpad(pad, calls[message["tool_call_id"]], message["content"], step=message["step"])
    assert warned_at == [17, 31]  # the retries the agent made although the pad already said no
    assert probe in pad.render() and "DO NOT RETRY" in pad.render()


# --- bounded render -------------------------------------------------------------------------


def test_bounded_render_returns_the_full_text_when_it_fits():
    pad = full_pad()
    assert pad.render(max_tokens=10_000) == pad.render()


def test_bounded_render_sheds_done_first_and_says_how_many():
    pad = full_pad()
    pad.done = [f"searched the logs of hour {h:02d}:00" for h in range(24)]
    text = pad.render(max_tokens=ctxlab.count_text(pad.render()) - 40)
    _, sections = parse(text)
    assert sections["done"][0].startswith("- (") and "older not shown" in sections["done"][0]
    assert sections["done"][-1] == "- searched the logs of hour 23:00"  # the newest stay
    assert sections["facts"] == full_pad().lines("facts")


def test_bounded_render_refuses_when_goal_and_failures_alone_do_not_fit():
    pad = ctxlab.Scratchpad(goal="a goal " * 30, failed={"f {}": "boom " * 30}, done=["x"])
    with pytest.raises(ctxlab.BudgetError, match="never shed") as err:
        pad.render(max_tokens=50)
    assert err.value.available == 50 and err.value.needed > 50


def test_bounded_message_fits_the_scratchpad_cap_of_a_budget():
    pad = full_pad()
    pad.done = [f"step {i}: read a page about heat pumps" for i in range(200)]
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=300)
    message = pad.message(max_tokens=budget.scratchpad_max)
    tokens = ctxlab.count_message(message)
    assert tokens <= 300
    budget.history_allowance(fixed_tokens=1_000, scratchpad_tokens=tokens)  # does not raise


@pytest.mark.parametrize("cap", [-1, 2.5, True])
def test_bounded_render_rejects_a_bad_cap(cap):
    with pytest.raises(ValueError, match="max_tokens"):
        full_pad().render(max_tokens=cap)


words = st.text(alphabet="abcdefgh ijk.-:0123456789", min_size=1, max_size=40).filter(lambda s: s.strip())
pads = st.builds(
    ctxlab.Scratchpad,
    goal=words,
    facts=st.dictionaries(words, words, max_size=6),
    done=st.lists(words, max_size=15),
    remaining=st.lists(words, max_size=6),
    failed=st.dictionaries(words, words, max_size=3),
    open_questions=st.lists(words, max_size=4),
    retry_later=st.dictionaries(words, words, max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(pad=pads, cap=st.integers(min_value=0, max_value=400))
def test_bounded_render_fits_keeps_goal_and_failures_and_sheds_in_order(pad, cap):
    floor = ctxlab.Scratchpad(goal=pad.goal, failed=pad.failed).render()
    try:
        text = pad.render(max_tokens=cap)
    except ctxlab.BudgetError:
        assert ctxlab.count_text(floor) > cap
        return
    assert ctxlab.count_text(text) <= cap
    goal, sections = parse(text)
    assert goal == f"GOAL: {pad.goal.strip()}"
    assert sections.get("failed", []) == pad.lines("failed")
    # a section loses lines only once every lower-priority section is gone entirely
    lost = [s for s in SHED_ORDER if len([x for x in sections.get(s, []) if "not shown)" not in x]) < len(pad.lines(s))]
    for section in lost[:-1]:
        assert section not in sections
    if lost and lost[-1] in sections:
        kept = [x for x in sections[lost[-1]] if "not shown)" not in x]
        original = pad.lines(lost[-1])
        assert kept == (original[: len(kept)] if lost[-1] == "remaining" else original[len(original) - len(kept) :])
    if ctxlab.count_text(pad.render()) <= cap:
        assert text == pad.render()
