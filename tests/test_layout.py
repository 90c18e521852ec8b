"""ctxlab.course.layout and ctxlab.course.layout_html: what the context-layout widget computes and draws.

Checked against references: ctxlab.fit's own (kept, dropped), ctxlab.count_messages on the
prompt a layout says is sent, and properties over random budgets and laps.
"""

from __future__ import annotations

import functools
import json
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course
from ctxlab.course.layout import SEGMENT_NAMES, TranscriptLayout, assembler, layout_window
from ctxlab.course.layout_html import render_layout_html

RESEARCH = ctxlab.course.load_transcript("research")
RESEARCH_TOOLS = ctxlab.course.load_tools("research")
REPLAY = TranscriptLayout(RESEARCH, RESEARCH_TOOLS, title="research")


def budget(window=16_000, reserve_output=2_000, scratchpad_max=1_000):
    return ctxlab.ContextBudget(window=window, reserve_output=reserve_output, scratchpad_max=scratchpad_max)


def sent(layout, prompt):
    """The messages a layout says are in the window, from the prompt, in order."""
    return [prompt[b.index] for b in layout.blocks if b.index is not None and not b.dropped]


# --- against the references ----------------------------------------------------------------------


@pytest.mark.parametrize("lap", [1, 5, 17, 29, 40])
@pytest.mark.parametrize("window", [9_000, 16_000, 48_000])
def test_fit_layout_shows_exactly_what_fit_keeps(lap, window):
    view = REPLAY.layout(lap, budget(window), policy=ctxlab.fit)
    prompt = REPLAY.prompt(lap)
    history = prompt[1:]
    kept, dropped = ctxlab.fit(history, view.allowance)
    assert sent(view, prompt) == prompt[:1] + kept
    assert [prompt[b.index] for b in view.blocks if b.dropped] == dropped
    assert view.policy_status == "ok" and not view.problems


@pytest.mark.parametrize("lap", [3, 22, 40])
def test_segments_add_up_to_what_the_api_would_be_sent(lap):
    view = REPLAY.layout(lap, budget(12_000, 1_500), policy=ctxlab.fit)
    prompt = REPLAY.prompt(lap)
    expected = ctxlab.count_messages(sent(view, prompt)) + ctxlab.count_tools(RESEARCH_TOOLS)
    assert view.prompt_tokens == expected
    assert view.tokens("system") == ctxlab.count_messages(prompt[:1])  # reply priming included
    assert view.tokens("tool schemas") == ctxlab.count_tools(RESEARCH_TOOLS)
    assert view.allowance == budget(12_000, 1_500).history_allowance(view.tokens("system") + view.tokens("tool schemas"), 0)
    assert sum(s.tokens for s in view.segments) == view.window
    assert [s.name for s in view.segments] == list(SEGMENT_NAMES)


def test_keeping_everything_overflows_by_the_exact_amount():
    view = REPLAY.layout(40, budget(16_000, 2_000), policy=None)
    need = ctxlab.count_messages(REPLAY.prompt(40)) + ctxlab.count_tools(RESEARCH_TOOLS) + 2_000
    assert view.policy == "keep everything"
    assert view.over_budget and view.free == 16_000 - need
    assert view.problems[0].startswith(f"over budget by {need - 16_000:,} tokens")
    assert view.dropped_messages == 0


def test_layout_window_matches_the_replay_for_the_same_prompt():
    prompt = REPLAY.prompt(25)
    one = layout_window(prompt, budget(), tools=RESEARCH_TOOLS, policy=ctxlab.fit, title="research")
    two = REPLAY.layout(25, budget(), policy=ctxlab.fit)
    assert one.segments == two.segments
    assert [(b.index, b.state, b.tokens) for b in one.blocks] == [(b.index, b.state, b.tokens) for b in two.blocks]


def test_turn_groups_and_pins_come_from_ctxlab():
    view = REPLAY.layout(40, budget(), policy=ctxlab.fit)
    prompt = REPLAY.prompt(40)
    spans = ctxlab.trimming.turn_group_spans(prompt)
    assert [b.group for b in view.blocks] == [g for g, (a, z) in enumerate(spans) for _ in range(a, z)]
    assert {b.index for b in view.blocks if b.pinned} == ctxlab.trimming.pinned_indices(prompt) == {0, 1}


def test_the_replay_counts_each_message_once():
    replay = TranscriptLayout(RESEARCH, RESEARCH_TOOLS)
    calls = replay.counter.encoder_calls
    for lap in range(1, replay.laps + 1):
        replay.layout(lap, budget(10_000), policy=ctxlab.fit, keep_recent=2)
    assert replay.counter.encoder_calls == calls, "stepping laps must not encode anything again"


def test_laps_are_model_calls():
    assert REPLAY.laps == len(ctxlab.model_calls(RESEARCH)) == 40
    assert [m["role"] for m in REPLAY.prompt(1)] == ["system", "user"]
    assert REPLAY.step(40) == 40 and len(REPLAY.prompt(40)) == len(RESEARCH) - 1
    for bad in (0, 41, "3", True):
        with pytest.raises(ValueError, match="lap must be a whole number from 1 to 40"):
            REPLAY.prompt(bad)


# --- policies written by a learner: every mistake shows, nothing crashes ------------------------


def test_a_policy_gets_only_the_options_it_names():
    seen = {}

    def spy(history, allowance, keep_recent, count, step):
        seen.update(keep_recent=keep_recent, step=step, tokens=count(history[0]), first=history[0]["role"])
        return ctxlab.fit(history, allowance, keep_recent=keep_recent, count=count)

    view = REPLAY.layout(12, budget(), policy=spy, keep_recent=3)
    assert seen == {"keep_recent": 3, "step": 12, "tokens": ctxlab.count_message(RESEARCH[1]), "first": "user"}
    assert view.policy == "spy" and view.policy_status == "ok"
    plain = REPLAY.layout(12, budget(), policy=lambda history, allowance: (history, []), keep_recent=3)
    assert any("takes no keep_recent" in note for note in plain.notes)


def test_an_unwritten_policy_is_reported_and_keeps_everything():
    def fit(messages, allowance):
        raise NotImplementedError()

    view = REPLAY.layout(40, budget(), policy=fit)
    assert view.policy_status == "not implemented" and view.dropped_messages == 0
    assert any("fit is not written yet" in p for p in view.problems)
    assert view.over_budget


def test_a_policy_that_raises_is_shown_not_raised():
    view = REPLAY.layout(40, budget(window=2_000, reserve_output=500), policy=ctxlab.fit, keep_recent=5)
    assert view.policy_status == "error"
    assert any("ctxlab.fit raised BudgetError: cannot fit" in p for p in view.problems)
    weird = REPLAY.layout(5, budget(), policy=lambda history, allowance: 42)
    assert weird.policy_status == "error" and any("returned int" in p for p in weird.problems)


def test_dropping_a_pin_splitting_a_pair_reordering_and_losing_are_problems():
    prompt = REPLAY.prompt(10)

    def drops_the_task(history, allowance):
        return history[1:], history[:1]

    def cuts_by_count(history, allowance):
        return history[:1] + history[-3:], history[1:-3]

    def reverses(history, allowance):
        return list(reversed(history)), []

    def forgets(history, allowance):
        return history[:1] + history[-2:], []

    problems = {f.__name__: " ".join(REPLAY.layout(10, budget(), policy=f).problems)
                for f in (drops_the_task, cuts_by_count, reverses, forgets)}
    assert "dropped 1 pinned message(s), the first is message 1 (a user message)" in problems["drops_the_task"]
    assert "splits a tool call from its result" in problems["cuts_by_count"]
    assert "changed the order" in problems["reverses"]
    assert f"lost {len(prompt) - 4} message(s)" in problems["forgets"]
    assert not REPLAY.layout(10, budget(), policy=ctxlab.fit).problems


def test_copies_count_as_the_same_messages():
    def copies(history, allowance):
        kept, dropped = ctxlab.fit(history, allowance)
        return [json.loads(json.dumps(m)) for m in kept], [dict(m) for m in dropped]

    mine = REPLAY.layout(30, budget(), policy=copies)
    ref = REPLAY.layout(30, budget(), policy=ctxlab.fit)
    assert [(b.index, b.state) for b in mine.blocks] == [(b.index, b.state) for b in ref.blocks]
    assert not mine.problems and not any(b.compressed for b in mine.blocks)


def test_a_learners_budget_drives_the_allowance_or_falls_back_with_a_note():
    class ContextBudget:
        def __init__(self, window, reserve_output, scratchpad_max):
            self.window, self.reserve_output, self.scratchpad_max = window, reserve_output, scratchpad_max

        def history_allowance(self, fixed_tokens, scratchpad_tokens):
            return self.window - fixed_tokens - scratchpad_tokens  # forgets the reserved output

    wrong = REPLAY.layout(40, ContextBudget(16_000, 2_000, 0), policy=ctxlab.fit)
    right = REPLAY.layout(40, budget(16_000, 2_000, 0), policy=ctxlab.fit)
    assert wrong.allowance == right.allowance + 2_000
    assert wrong.over_budget and not right.over_budget, "forgetting the reserve overflows the window"

    class Unwritten(ContextBudget):
        def history_allowance(self, fixed_tokens, scratchpad_tokens):
            raise NotImplementedError()

    fallback = REPLAY.layout(40, Unwritten(16_000, 2_000, 0), policy=ctxlab.fit)
    assert fallback.allowance == right.allowance
    assert any("Unwritten.history_allowance is not written yet" in n for n in fallback.notes)


def test_a_budget_with_no_room_skips_the_policy_and_says_why():
    view = REPLAY.layout(40, budget(window=2_000, reserve_output=1_800), policy=ctxlab.fit)
    assert view.allowance is None and view.policy_status == "skipped"
    assert any("nothing left for history" in p for p in view.problems)
    assert view.over_budget


# --- summaries, compression, scratchpads, assemblers ---------------------------------------------


def test_a_summary_is_its_own_segment_and_marks_what_it_replaced():
    policy = functools.partial(ctxlab.trim_and_summarise, client=ctxlab.OfflineSummariser())
    view = REPLAY.layout(40, budget(), policy=policy)
    (summary,) = [b for b in view.blocks if b.kind == "summary"]
    assert view.policy == "ctxlab.trim_and_summarise"
    assert view.tokens("summary") == summary.tokens > 0 and summary.pinned
    dropped = [b for b in view.blocks if b.dropped]
    assert dropped and all(b.summarised and b.state == "summarised" for b in dropped)
    assert not view.over_budget and not view.problems
    # the summary sits where the policy put it: after what it replaced, before what is kept
    order = [b.kind if b.index is None else b.state for b in view.blocks]
    assert order.index("summary") == max(i for i, s in enumerate(order) if s == "summarised") + 1


def test_compressed_results_are_marked_and_counted_at_their_new_size():
    def compress_then_fit(history, allowance, step, count):
        view = ctxlab.compress_history(history, step, keep_full_for=2, max_chars=300)
        kept, _ = ctxlab.fit(view, allowance, count=count)
        return kept

    view = REPLAY.layout(40, budget(), policy=compress_then_fit)
    squeezed = [b for b in view.blocks if b.compressed]
    assert squeezed and all(b.role == "tool" and b.tokens < b.original_tokens for b in squeezed)
    shrunk = {m.get("tool_call_id"): m for m in ctxlab.compress_history(REPLAY.prompt(40), 40, max_chars=300)}
    prompt = REPLAY.prompt(40)
    assert all(b.tokens == ctxlab.count_message(shrunk[prompt[b.index]["tool_call_id"]]) for b in squeezed)
    assert f"{squeezed[0].original_tokens:,} → {squeezed[0].tokens:,} tokens" in render_layout_html(view)
    assert view.prompt_tokens == ctxlab.count_messages(
        ctxlab.fit(ctxlab.compress_history(REPLAY.prompt(40)[1:], 40, max_chars=300), view.allowance)[0]
    ) - 3 + view.tokens("system") + view.tokens("tool schemas")
    assert not view.problems


def test_a_scratchpad_goes_last_and_its_cap_bounds_it():
    pad = ctxlab.Scratchpad(goal="Brief the board", done=[f"read source {i}" for i in range(60)])
    roomy = REPLAY.layout(20, budget(scratchpad_max=2_000), policy=ctxlab.fit, scratchpad=pad)
    tight = REPLAY.layout(20, budget(scratchpad_max=200), policy=ctxlab.fit, scratchpad=pad)
    assert roomy.blocks[-1].kind == "scratchpad" and tight.blocks[-1].kind == "scratchpad"
    assert tight.tokens("scratchpad") <= 200 < roomy.tokens("scratchpad")
    assert tight.allowance - roomy.allowance == roomy.tokens("scratchpad") - tight.tokens("scratchpad")
    assert roomy.scratchpad_max == 2_000 and REPLAY.layout(20, budget()).scratchpad_max is None
    text = REPLAY.layout(20, budget(scratchpad_max=5), policy=ctxlab.fit, scratchpad="x " * 50)
    assert text.allowance is None and any("over its cap" in p for p in text.problems)


def test_a_scratchpad_that_is_not_written_or_fails_is_reported():
    def unwritten(max_tokens):
        raise NotImplementedError()

    def too_small(max_tokens):
        raise ctxlab.BudgetError(f"the goal alone needs 90 tokens, over {max_tokens}")

    one = REPLAY.layout(20, budget(scratchpad_max=50), policy=ctxlab.fit, scratchpad=unwritten)
    two = REPLAY.layout(20, budget(scratchpad_max=50), policy=ctxlab.fit, scratchpad=too_small)
    assert one.tokens("scratchpad") == two.tokens("scratchpad") == 0
    assert any("scratchpad is not written yet" in n for n in one.notes) and not one.problems
    assert two.problems == ("the scratchpad could not be rendered: BudgetError: the goal alone needs 90 tokens, over 50",)
    assert one.policy_status == two.policy_status == "ok"


def test_build_context_through_the_assembler_adapter():
    pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps")
    view = REPLAY.layout(40, budget(window=14_000, scratchpad_max=600), policy=assembler(), scratchpad=pad)
    context = ctxlab.assembly.build_context(REPLAY.prompt(40),
                                            ctxlab.MemoryPolicy(budget(window=14_000, scratchpad_max=600),
                                                                client=ctxlab.OfflineSummariser()),
                                            tools=RESEARCH_TOOLS, scratchpad=pad)
    assert view.policy == "ctxlab.build_context"
    assert view.prompt_tokens == context.tokens, "the picture counts what build_context sends"
    assert [b.kind for b in view.blocks if b.index is None] == ["summary", "scratchpad"]
    assert view.blocks[-1].kind == "scratchpad"
    assert any(b.compressed for b in view.blocks) and any(b.summarised for b in view.blocks)
    assert view.log and view.log[-1].startswith("lap 40: assemble")
    assert not view.problems


def test_an_assembler_with_its_own_signature_and_a_log():
    """The lesson-06 shape: build_context(history, pad, budget, *, tools, client, step) -> (messages, log)."""

    def build_context(history, pad, budget, *, tools=None, client=None, step=None):
        log = ctxlab.MemoryLog()
        static, rest = history[:1], history[1:]
        pad_message = pad.message(max_tokens=budget.scratchpad_max)
        fixed = ctxlab.count_messages(static) + ctxlab.count_tools(tools)
        allowance = budget.history_allowance(fixed, ctxlab.count_message(pad_message))
        view = ctxlab.compress_history(rest, step, max_chars=1_000, log=log)
        middle = ctxlab.trim_and_summarise(view, allowance, client=client, log=log, lap=step)
        return ctxlab.course.strip_course_keys([*static, *middle, pad_message]), log

    pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps")
    policy = assembler(build_context)
    early = REPLAY.layout(2, budget(10_000, 2_000, 800), policy=policy, scratchpad=pad)
    late = REPLAY.layout(40, budget(10_000, 2_000, 800), policy=policy, scratchpad=pad)
    assert early.policy == late.policy == "build_context"
    assert not early.problems and not early.log and early.dropped_messages == 0
    assert not late.problems and not late.over_budget
    assert late.blocks[-1].kind == "scratchpad" and late.tokens("summary") > 0
    assert [line.split(":")[1].strip() for line in late.log] == ["compress", "summarise"]


def test_compressed_copies_declared_dropped_are_not_lost():
    def compress_then_fit(history, allowance, step):
        return ctxlab.fit(ctxlab.compress_history(history, step, max_chars=300), allowance)

    view = REPLAY.layout(40, budget(5_000, 1_000), policy=compress_then_fit)
    assert view.dropped_messages and not view.problems


# --- properties ------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lap=st.integers(1, 40),
    window=st.integers(2_000, 60_000),
    reserve=st.integers(0, 4_000),
    keep_recent=st.integers(1, 4),
)
def test_every_layout_partitions_the_prompt_and_adds_up(lap, window, reserve, keep_recent):
    if reserve >= window:
        reserve = window // 2
    view = REPLAY.layout(lap, budget(window, reserve, 0), policy=ctxlab.fit, keep_recent=keep_recent)
    prompt = REPLAY.prompt(lap)
    assert [b.index for b in view.blocks] == list(range(len(prompt)))  # each message once, in order
    assert view.used + view.free == window
    kept = sent(view, prompt)
    assert ctxlab.pairs_ok(kept[1:])
    if view.policy_status == "ok":
        assert not view.over_budget and all(not b.dropped for b in view.blocks if b.pinned)
    else:  # the budget cannot hold the pins and the newest groups: said, never hidden
        assert view.problems and view.policy_status in ("error", "skipped")


# --- the picture -------------------------------------------------------------------------------------


class Tags(HTMLParser):
    """Collects every start tag with its attributes and checks that tags balance."""

    VOID = {"br"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.stack, self.titles = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)
        self.titles += [v for k, v in attrs if k == "title"]

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()


def parse(html):
    parser = Tags()
    parser.feed(html)
    parser.close()
    assert not parser.stack, f"unclosed tags: {parser.stack}"
    return parser


@pytest.mark.parametrize("policy", [None, ctxlab.fit])
def test_the_picture_is_well_formed_and_says_what_the_layout_says(policy):
    view = REPLAY.layout(40, budget(), policy=policy)
    html = render_layout_html(view)
    tags = parse(html)
    allowed = {"class", "style", "title"}
    for tag, attrs in tags.tags:
        odd = {a for a in attrs if a not in allowed and not a.startswith("data-")}
        assert not odd, f"<{tag}> has stray attributes {odd}: a quote inside a style ends it early"
    root = tags.tags[0][1]
    assert root["class"] == "ctxlab-window" and root["data-lap"] == "40"
    assert root["data-over-budget"] == str(view.over_budget).lower()
    assert root["data-kept"] == str(view.kept_messages) and root["data-dropped"] == str(view.dropped_messages)
    blocks = [a for t, a in tags.tags if a.get("class") == "ctxlab-block"]
    assert [a["data-state"] for a in blocks] == [b.state for b in view.blocks]
    segments = {a["data-segment"]: int(a["data-tokens"]) for t, a in tags.tags if a.get("class") == "ctxlab-segment"}
    assert segments == {s.name: s.tokens for s in view.segments if s.tokens > 0}
    assert ("OVER BUDGET" in html) == view.over_budget


def test_hovering_a_block_reads_the_message_escaped_and_cut():
    prompt = [
        {"role": "system", "content": "You answer."},
        {"role": "user", "content": "Why is <script>alert(1)</script> in the page & what is \"x\"?"},
        {"role": "assistant", "content": "word " * 400, "step": 1},
    ]
    view = layout_window(prompt, budget(4_000, 500))
    html = render_layout_html(view)
    assert "<script>" not in html
    titles = parse(html).titles
    user = next(t for t in titles if t.startswith("#1 · user"))
    assert 'Why is <script>alert(1)</script> in the page & what is "x"?' in user and "pinned" in user
    long = next(t for t in titles if t.startswith("#2 · assistant"))
    assert f"{ctxlab.count_message(prompt[2]):,} tokens" in long
    assert long.endswith(f"… (+{2_000 - 280:,} more characters)")


def test_describe_is_a_readable_summary():
    text = REPLAY.layout(40, budget(), policy=None).describe()
    assert text.splitlines()[0] == "Context window: 16,000 tokens; research; lap 40 of 40; policy keep everything"
    assert "OVER BUDGET by" in text and "prompt: 81 of 81 messages kept, 0 dropped" in text


def _style(attrs):
    return dict(part.split(":", 1) for part in attrs["style"].split(";") if ":" in part)


def _cells(html):
    """(attributes, inner HTML) of each segment of the bar."""
    import re

    found = []
    for match in re.finditer(r'<div class="ctxlab-segment"([^>]*)>(.*?)</div>', html):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', match.group(1)))
        found.append((attrs, match.group(2)))
    return found


@given(lap=st.integers(1, REPLAY.laps), window=st.integers(4_001, 60_000), reserve=st.integers(0, 4_000))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_bar_is_to_scale_over_budget_or_not(lap, window, reserve):
    view = REPLAY.layout(lap, budget(window, reserve), policy=None)
    html = render_layout_html(view)
    scale = max(view.window, view.used)
    cells = _cells(html)
    shares = {a["data-segment"]: float(_style(a)["flex-basis"].rstrip("%")) for a, _ in cells}
    for name, share in shares.items():
        assert share == pytest.approx(100 * view.tokens(name) / scale, abs=1e-3), name
        assert _style(next(a for a, _ in cells if a["data-segment"] == name))["flex-shrink"] == "0"
    assert sum(shares.values()) == pytest.approx(100, abs=0.01)
    if reserve:
        assert shares["reserved output"] > 0, "the reserved output keeps its width, over budget too"
    overflow = [a for t, a in parse(html).tags if a.get("class") == "ctxlab-overflow"]
    if view.over_budget:
        (hatch,) = overflow
        edge = float(_style(hatch)["left"].rstrip("%"))
        assert edge == pytest.approx(100 * view.window / scale, abs=1e-3)
        # a see-through hatch: what lies past the edge is still drawn, in its own colours
        assert "rgba(" in hatch["style"] and "pointer-events:none" in hatch["style"]
        assert f"+{-view.free:,}" in html.split('class="ctxlab-overflow-label"')[1].split("</span>")[0]
    else:
        assert not overflow and "ctxlab-overflow-label" not in html


def test_a_narrow_segment_is_named_and_a_wide_one_says_its_number():
    view = REPLAY.layout(40, budget(16_000, 2_000), policy=None)  # reserved output: 4% of the bar
    cells = {a["data-segment"]: (float(_style(a)["flex-basis"].rstrip("%")), inner) for a, inner in _cells(render_layout_html(view))}
    from ctxlab.course.layout_html import SHORT_NAMES

    for name, (share, inner) in cells.items():
        if share >= 11:
            assert inner.startswith(name) and f"{view.tokens(name):,}" in inner
        elif share >= 2.2:
            assert inner.startswith(SHORT_NAMES[name]), f"{name} ({share:.1f}% of the bar) shows {inner!r}"
    assert 2.2 <= cells["reserved output"][0] < 11, "the example has a narrow segment"


@pytest.mark.parametrize("lap", [1, 12, 40])
def test_the_widget_and_the_lessons_growth_numbers_agree_about_a_lap(lap):
    """What lesson 01 plots for lap k (ctxlab.budget.context_per_lap) is what the widget shows at lap k."""
    per_lap = ctxlab.budget.context_per_lap(RESEARCH, RESEARCH_TOOLS)
    view = REPLAY.layout(lap, budget(), policy=None)
    assert view.prompt_tokens == per_lap[lap - 1]
    last_call = ctxlab.model_calls(RESEARCH)[lap - 1]
    assert view.tokens("history") == sum(ctxlab.count_message(m) for m in RESEARCH[1:last_call])


# --- the lessons' plots ------------------------------------------------------------------------------


@pytest.fixture
def pyplot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_a_named_growth_series_is_in_the_legend_even_alone(pyplot):
    from ctxlab.course.plots import plot_growth

    fig = plot_growth({"keep everything": ctxlab.budget.context_per_lap(RESEARCH, RESEARCH_TOOLS)})
    legend = fig.axes[0].get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["keep everything"]
    assert plot_growth([1, 2, 3]).axes[0].get_legend() is None, "an unnamed series needs no legend"


def _replays():
    client = ctxlab.OfflineSummariser()
    small = ctxlab.ContextBudget(window=16_000, reserve_output=2_000, scratchpad_max=1_000)
    policies = [ctxlab.KeepEverything(), ctxlab.TruncateOldest(), ctxlab.Summarise(client), ctxlab.Assemble(client)]
    return [ctxlab.course.replay("research", p, budget=small) for p in policies]


def _overlaps(one, other):
    return one.x0 < other.x1 and other.x0 < one.x1 and one.y0 < other.y1 and other.y0 < one.y1


def test_replay_and_survival_legends_cover_no_panel_and_explain_every_colour(pyplot):
    from ctxlab.course.plots import SURVIVAL_COLOURS, plot_probe_survival, plot_replay

    runs = _replays()
    for fig in (plot_replay(runs, title="Four policies"), plot_probe_survival(runs, title="Facts, lap by lap")):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        (legend,) = fig.legends
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            assert ax.get_legend() is None
            assert not _overlaps(box, ax.get_tightbbox(renderer)), f"the legend covers {ax.get_title()!r}"
        title = fig._suptitle.get_window_extent(renderer)
        assert not any(_overlaps(title, ax.get_tightbbox(renderer)) for ax in fig.axes), "the title covers a panel"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert sorted(labels) == sorted(SURVIVAL_COLOURS) and "#ffffff" in SURVIVAL_COLOURS.values()
    replay_fig = plot_replay(runs)
    replay_fig.canvas.draw()
    assert [t.get_text() for t in replay_fig.legends[0].get_texts()] == [r.policy for r in runs]
    limit = next(t for t in replay_fig.axes[0].texts if t.get_text().startswith("input limit"))
    lines = replay_fig.axes[0].get_lines()
    assert limit.get_text() == f"input limit {runs[0].input_limit:,}" and lines
