"""Known wrong answers for lesson 06-assembly; each must fail the named tests when graded.

Each one breaks one rule of an exercise (``RULES`` below says which rule, and which test cell
checks it). They are written from the solution by replacing one marked piece of it.
"""


def variant(template: str, defaults: dict[str, str], changes: dict[str, str]) -> str:
    """``template`` with each ``<NAME>`` slot replaced by ``changes[NAME]``, else ``defaults[NAME]``."""
    unknown = set(changes) - set(defaults)
    assert not unknown, f"no such slot: {sorted(unknown)}"
    text = template
    for name, value in {**defaults, **changes}.items():
        text = text.replace(f"<{name}>", value)
    return text


# --- Exercise 1: build_context ------------------------------------------------------------------

BUILD = '''
def build_context(history, pad, budget, *, tools=None, client=None, summary=None, step=None, log=None):
    log = <LOG>
    client = <CLIENT>
    if step is None:
        step = <STEP>
    static, rest = history[:1], history[1:]
    fixed = <FIXED>
    pad_message = <PAD>
    allowance = budget.history_allowance(fixed, <PAD_TOKENS>)
    view = <VIEW>
    middle = <MIDDLE>
    return <RETURN>
'''
BUILD_SLOTS = dict(
    LOG="log if log is not None else MemoryLog()",
    CLIENT="client if client is not None else ctxlab.get_client()",
    STEP='max(m.get("step", 0) for m in history)',
    FIXED="ctxlab.count_messages(static) + ctxlab.count_tools(tools)",
    PAD="pad.message(max_tokens=budget.scratchpad_max)",
    PAD_TOKENS="ctxlab.count_message(pad_message)",
    VIEW="ctxlab.compress_history(rest, step, keep_full_for=2, max_chars=1_000, log=log)",
    MIDDLE="ctxlab.trim_and_summarise(view, allowance, client=client, prior_summary=summary, log=log, lap=step)",
    RETURN="ctxlab.course.strip_course_keys([*static, *middle, pad_message]), log",
)

# --- Exercise 2: prefix_reuse -------------------------------------------------------------------

PREFIX = '''
def prefix_reuse(previous, current):
    if previous is None:
        return <NONE>
    total = 0
    for old, new in <PAIRS>:
        if <DIFFERS>:
            <ON_DIFFERENCE>
        total += <COUNT>
    return <TOTAL>
'''
PREFIX_SLOTS = dict(
    NONE="0",
    PAIRS="zip(previous, current)",
    DIFFERS="old != new",
    ON_DIFFERENCE="break",
    COUNT="ctxlab.count_message(new)",
    TOTAL="total",
)

# --- Exercise 3: policy_row ---------------------------------------------------------------------

ROW = '''
def policy_row(result):
    tokens = [lap.tokens for lap in result.laps]
    kept = []
    for name in <NAMES>:
        start = result.first_seen.get(name)
        later = [lap for lap in result.laps if start is not None and <FROM>]
        if <KEPT>:
            kept.append(name)
    return {
        "policy": result.policy,
        "peak tokens": <PEAK>,
        "billed input": <BILLED>,
        "prefix reused": <SHARE>,
        "probes kept": kept,
    }
'''
ROW_SLOTS = dict(
    NAMES="result.probes",
    FROM="lap.lap >= start",
    KEPT="later and all(lap.probes.get(name) for lap in later)",
    PEAK="max(tokens)",
    BILLED="sum(tokens)",
    SHARE="sum(lap.reused for lap in result.laps) / sum(tokens)",
)


# --- Exercise 4: small_talk ---------------------------------------------------------------------

TALK = '''
def small_talk(messages, keep_recent=1, max_tokens=40):
    spans = ctxlab.trimming.turn_group_spans(messages)
    pins = <PINS>
    chosen = []
    for start, stop in <OLD>:
        group = range(start, stop)
        if any(i in pins for i in group):
            continue
        if all(
            messages[i]["role"] in <ROLES>
            and <NO_CALLS>
            and <SHORT>
            for i in group
        ):
            chosen.extend(group)
    return chosen
'''
TALK_SLOTS = dict(
    PINS="ctxlab.trimming.pinned_indices(messages)",
    OLD="spans[: max(0, len(spans) - keep_recent)]",
    ROLES='("user", "assistant")',
    NO_CALLS='not messages[i].get("tool_calls")',
    SHORT="ctxlab.count_message(messages[i]) <= max_tokens",
)

# --- Exercise 5: missing_by_lap -----------------------------------------------------------------

MISSING = '''
def missing_by_lap(result):
    missing = {}
    for index, record in enumerate(result.laps):
        names = [
            name
            for name in <NAMES>
            if <SEEN>
            and <FROM>
            and not record.probes.get(name)
        ]
        <STORE>
    return missing
'''
MISSING_SLOTS = dict(
    NAMES="result.probes",
    SEEN="result.first_seen.get(name) is not None",
    FROM="record.lap >= result.first_seen[name]",
    STORE="missing[record.lap] = names",
)


def build(**changes: str) -> str:
    return variant(BUILD, BUILD_SLOTS, changes)


def prefix(**changes: str) -> str:
    return variant(PREFIX, PREFIX_SLOTS, changes)


def row(**changes: str) -> str:
    return variant(ROW, ROW_SLOTS, changes)


def talk(**changes: str) -> str:
    return variant(TALK, TALK_SLOTS, changes)


def missing(**changes: str) -> str:
    return variant(MISSING, MISSING_SLOTS, changes)


TRIM = "ctxlab.trim_and_summarise(view, allowance, client=client{prior}{log}{lap})"

WRONG_ANSWERS = [
    # build_context
    dict(name="scratchpad-not-last", cell="build-context",
         source=build(RETURN="ctxlab.course.strip_course_keys([*static, pad_message, *middle]), log"),
         fails=["build-context-visible", "build-context-scratchpad-last"]),
    dict(name="system-not-first", cell="build-context",
         source=build(RETURN="ctxlab.course.strip_course_keys([*middle, *static, pad_message]), log"),
         fails=["build-context-visible", "build-context-system-first"]),
    dict(name="summary-stacked", cell="build-context",
         source=build(MIDDLE="([ctxlab.summary_message(summary)] if summary else []) + "
                      + TRIM.format(prior="", log=", log=log", lap=", lap=step")),
         fails=["build-context-summary-rolled-up"]),
    dict(name="forgets-the-previous-summary", cell="build-context",
         source=build(MIDDLE=TRIM.format(prior="", log=", log=log", lap=", lap=step")),
         fails=["build-context-summary-rolled-up"]),
    dict(name="tool-schemas-not-counted", cell="build-context", source=build(FIXED="ctxlab.count_messages(static)"),
         fails=["build-context-allowance", "build-context-fits-budget"]),
    dict(name="reply-priming-not-counted", cell="build-context",
         source=build(FIXED="ctxlab.count_message(static[0]) + ctxlab.count_tools(tools)"),
         fails=["build-context-allowance"]),
    dict(name="scratchpad-not-counted", cell="build-context", source=build(PAD_TOKENS="0"),
         fails=["build-context-allowance", "build-context-fits-budget"]),
    dict(name="scratchpad-unbounded", cell="build-context", source=build(PAD="pad.message()"),
         fails=["build-context-scratchpad-last"]),
    dict(name="course-keys-not-stripped", cell="build-context", source=build(RETURN="[*static, *middle, pad_message], log"),
         fails=["build-context-visible", "build-context-api-ready"]),
    dict(name="returns-only-the-messages", cell="build-context",
         source=build(RETURN="ctxlab.course.strip_course_keys([*static, *middle, pad_message])"),
         fails=["build-context-visible"]),
    dict(name="no-age-compression", cell="build-context", source=build(VIEW="list(rest)"),
         fails=["build-context-compresses-old-results"]),
    dict(name="default-max-chars", cell="build-context",
         source=build(VIEW="ctxlab.compress_history(rest, step, keep_full_for=2, log=log)"),
         fails=["build-context-compresses-old-results"]),
    dict(name="keeps-only-the-last-lap-in-full", cell="build-context",
         source=build(VIEW="ctxlab.compress_history(rest, step, keep_full_for=1, max_chars=1_000, log=log)"),
         fails=["build-context-compresses-old-results"]),
    dict(name="compresses-after-trimming", cell="build-context",
         source=build(VIEW="rest", MIDDLE="ctxlab.compress_history("
                      + TRIM.format(prior=", prior_summary=summary", log=", log=log", lap=", lap=step")
                      + ", step, keep_full_for=2, max_chars=1_000, log=log)"),
         fails=["build-context-follows-the-steps"]),
    dict(name="decisions-not-logged", cell="build-context",
         source=build(VIEW="ctxlab.compress_history(rest, step, keep_full_for=2, max_chars=1_000)",
                      MIDDLE=TRIM.format(prior=", prior_summary=summary", log="", lap=", lap=step")),
         fails=["build-context-logs-decisions"]),
    dict(name="empty-log-replaced", cell="build-context", source=build(LOG="log or MemoryLog()"),
         fails=["build-context-logs-decisions"]),
    dict(name="lap-not-logged", cell="build-context",
         source=build(MIDDLE=TRIM.format(prior=", prior_summary=summary", log=", log=log", lap="")),
         fails=["build-context-logs-decisions"]),
    dict(name="ignores-the-given-client", cell="build-context",
         source=build(MIDDLE="ctxlab.trim_and_summarise(view, allowance, client=ctxlab.get_client(), "
                      "prior_summary=summary, log=log, lap=step)"),
         fails=["build-context-uses-the-client"]),
    dict(name="client-none-passed-on", cell="build-context", source=build(CLIENT="client"),
         fails=["build-context-default-client-and-log"]),
    dict(name="client-offline-hard-coded", cell="build-context",
         source=build(CLIENT="client if client is not None else ctxlab.OfflineSummariser()"),
         fails=["build-context-default-client-and-log"]),
    dict(name="no-log-made-when-none", cell="build-context", source=build(LOG="log"),
         fails=["build-context-default-client-and-log"]),
    dict(name="step-defaults-to-zero", cell="build-context", source=build(STEP="0"),
         fails=["build-context-default-step"]),
    dict(name="step-defaults-to-the-length", cell="build-context", source=build(STEP="len(history)"),
         fails=["build-context-default-step"]),
    # prefix_reuse
    dict(name="none-on-the-first-lap", cell="prefix-reuse", source=prefix(NONE="None"),
         fails=["prefix-reuse-visible"]),
    dict(name="skips-past-a-difference", cell="prefix-reuse", source=prefix(ON_DIFFERENCE="continue"),
         fails=["prefix-reuse-stops-at-first-difference"]),
    dict(name="counts-the-first-difference", cell="prefix-reuse",
         source=prefix(ON_DIFFERENCE="total += ctxlab.count_message(new)\n            break"),
         fails=["prefix-reuse-stops-at-first-difference"]),
    dict(name="counts-text-only", cell="prefix-reuse", source=prefix(COUNT='ctxlab.count_text(new.get("content") or "")'),
         fails=["prefix-reuse-visible", "prefix-reuse-counts-whole-messages", "prefix-reuse-matches-reference"]),
    dict(name="adds-reply-priming", cell="prefix-reuse", source=prefix(TOTAL="total + 3"),
         fails=["prefix-reuse-visible", "prefix-reuse-counts-whole-messages"]),
    dict(name="compares-content-only", cell="prefix-reuse", source=prefix(DIFFERS='old.get("content") != new.get("content")'),
         fails=["prefix-reuse-any-field-differs"]),
    dict(name="walks-past-the-shorter-prompt", cell="prefix-reuse",
         source=prefix(PAIRS="((previous[i], current[i]) for i in range(len(previous)))"),
         fails=["prefix-reuse-different-lengths"]),
    dict(name="all-or-nothing", cell="prefix-reuse", source='''
def prefix_reuse(previous, current):
    if previous is None or list(current[: len(previous)]) != list(previous):
        return 0
    return sum(ctxlab.count_message(m) for m in previous)
''', fails=["prefix-reuse-stops-at-first-difference"]),
    # policy_row
    dict(name="peak-is-the-last-prompt", cell="policy-row", source=row(PEAK="tokens[-1]"),
         fails=["policy-row-visible", "policy-row-peak-tokens"]),
    dict(name="bills-only-the-final-context", cell="policy-row", source=row(BILLED="tokens[-1]"),
         fails=["policy-row-visible", "policy-row-billed-every-lap"]),
    dict(name="bills-the-largest-prompt", cell="policy-row", source=row(BILLED="max(tokens)"),
         fails=["policy-row-billed-every-lap", "policy-row-matches-the-replays"]),
    dict(name="mean-of-each-laps-share", cell="policy-row",
         source=row(SHARE="sum(lap.reused / lap.tokens for lap in result.laps) / len(result.laps)"),
         fails=["policy-row-prefix-share"]),
    dict(name="share-as-a-percentage", cell="policy-row", source=row(SHARE="100 * sum(lap.reused for lap in result.laps) / sum(tokens)"),
         fails=["policy-row-visible", "policy-row-prefix-share"]),
    dict(name="checks-only-the-last-lap", cell="policy-row", source=row(KEPT="later and later[-1].probes.get(name)"),
         fails=["policy-row-probe-that-comes-back"]),
    dict(name="never-seen-probe-kept", cell="policy-row", source=row(KEPT="all(lap.probes.get(name) for lap in later)"),
         fails=["policy-row-probe-never-seen"]),
    dict(name="laps-before-first-seen-count", cell="policy-row", source=row(FROM="True"),
         fails=["policy-row-probes-from-first-seen"]),
    dict(name="first-seen-lap-excluded", cell="policy-row", source=row(FROM="lap.lap > start"),
         fails=["policy-row-probes-from-first-seen"]),
    dict(name="probes-sorted-by-name", cell="policy-row", source=row(NAMES="sorted(result.probes)"),
         fails=["policy-row-probes-in-order"]),
    # small_talk
    dict(name="small-talk-per-message", cell="small-talk", source='''
def small_talk(messages, keep_recent=1, max_tokens=40):
    pins = ctxlab.trimming.pinned_indices(messages)
    spans = ctxlab.trimming.turn_group_spans(messages)
    recent = {i for start, stop in spans[len(spans) - keep_recent:] if keep_recent for i in range(start, stop)}
    return [i for i, m in enumerate(messages) if i not in pins and i not in recent
            and m["role"] in ("user", "assistant") and ctxlab.count_message(m) <= max_tokens]
''', fails=["small-talk-visible", "small-talk-calls-and-results", "small-talk-matches-reference"]),
    dict(name="small-talk-goal-not-protected", cell="small-talk",
         source=talk(PINS='{i for i, m in enumerate(messages) if m["role"] == "system" or m.get("pinned") is True}'),
         fails=["small-talk-calls-and-results", "small-talk-goal-and-system", "small-talk-pinned",
                "small-talk-recent-turns", "small-talk-user-chatter"]),
    dict(name="small-talk-pinned-key-ignored", cell="small-talk",
         source=talk(PINS='{i for i, m in enumerate(messages) if m["role"] == "system"} | '
                     '{next((j for j, m in enumerate(messages) if m["role"] == "user"), -1)}'),
         fails=["small-talk-pinned"]),
    dict(name="small-talk-newest-turn-dropped", cell="small-talk", source=talk(OLD="spans"),
         fails=["small-talk-calls-and-results", "small-talk-goal-and-system", "small-talk-pinned",
                "small-talk-recent-turns", "small-talk-user-chatter", "small-talk-long-messages",
                "small-talk-matches-reference"]),
    dict(name="small-talk-recent-counted-in-messages", cell="small-talk",
         source=talk(OLD="[s for s in spans if s[0] < len(messages) - keep_recent]"),
         fails=["small-talk-recent-turns", "small-talk-matches-reference"]),
    dict(name="small-talk-assistant-only", cell="small-talk", source=talk(ROLES='("assistant",)'),
         fails=["small-talk-visible", "small-talk-goal-and-system", "small-talk-recent-turns",
                "small-talk-user-chatter", "small-talk-matches-reference"]),
    dict(name="small-talk-no-length-limit", cell="small-talk", source=talk(SHORT="True"),
         fails=["small-talk-long-messages", "small-talk-matches-reference"]),
    dict(name="small-talk-limit-excluded", cell="small-talk",
         source=talk(SHORT="ctxlab.count_message(messages[i]) < max_tokens"),
         fails=["small-talk-long-messages"]),
    # missing_by_lap
    dict(name="missing-keyed-by-position", cell="missing-by-lap", source=missing(STORE="missing[index] = names"),
         fails=["missing-by-lap-visible", "missing-by-lap-keys-are-laps", "missing-by-lap-first-seen-lap",
                "missing-by-lap-never-seen", "missing-by-lap-order",
                "missing-by-lap-matches-the-replays"]),
    dict(name="missing-skips-laps-with-nothing-missing", cell="missing-by-lap",
         source=missing(STORE="if names:\n            missing[record.lap] = names"),
         fails=["missing-by-lap-visible", "missing-by-lap-keys-are-laps", "missing-by-lap-not-yet-seen",
                "missing-by-lap-never-seen", "missing-by-lap-matches-the-replays"]),
    dict(name="missing-before-first-seen", cell="missing-by-lap", source=missing(FROM="True"),
         fails=["missing-by-lap-visible", "missing-by-lap-not-yet-seen", "missing-by-lap-matches-the-replays"]),
    dict(name="missing-first-seen-lap-excluded", cell="missing-by-lap",
         source=missing(FROM="record.lap > result.first_seen[name]"),
         fails=["missing-by-lap-first-seen-lap", "missing-by-lap-order"]),
    dict(name="missing-never-seen-counted", cell="missing-by-lap",
         source=missing(SEEN="True", FROM="(result.first_seen.get(name) is None or record.lap >= result.first_seen[name])"),
         fails=["missing-by-lap-never-seen"]),
    dict(name="missing-sorted-by-name", cell="missing-by-lap", source=missing(NAMES="sorted(result.probes)"),
         fails=["missing-by-lap-order"]),
    # concept checks Q4-Q7
    dict(name="thinks-cheap-means-worse", cell="q4-answer", source='q4 = "a"', fails=["q4-check"]),
    dict(name="thinks-the-api-sorts-messages", cell="q4-answer", source='q4 = "c"', fails=["q4-check"]),
    dict(name="thinks-order-changes-length", cell="q4-answer", source='q4 = "d"', fails=["q4-check"]),
    dict(name="thinks-lost-in-the-middle-is-trimming", cell="q5-answer", source='q5 = "a"', fails=["q5-check"]),
    dict(name="thinks-the-api-drops-the-middle", cell="q5-answer", source='q5 = "b"', fails=["q5-check"]),
    dict(name="avoids-summaries", cell="q5-answer", source='q5 = "d"', fails=["q5-check"]),
    dict(name="sends-the-whole-history", cell="q6-answer", source='q6 = "a"', fails=["q6-check"]),
    dict(name="lets-the-model-delete", cell="q6-answer", source='q6 = "c"', fails=["q6-check"]),
    dict(name="summarises-everything-every-lap", cell="q6-answer", source='q6 = "d"', fails=["q6-check"]),
    dict(name="repeats-the-rule-in-the-middle", cell="q7-answer", source='q7 = "a"', fails=["q7-check"]),
    dict(name="moves-the-system-prompt-last", cell="q7-answer", source='q7 = "c"', fails=["q7-check"]),
    dict(name="unpins-the-rule", cell="q7-answer", source='q7 = "d"', fails=["q7-check"]),
]

RULES = [
    # build_context
    dict(rule="the scratchpad is the last message", test="build-context-scratchpad-last", wrong="scratchpad-not-last"),
    dict(rule="the system message comes first", test="build-context-system-first", wrong="system-not-first"),
    dict(rule="a previous summary is rolled into the new one, never stacked", test="build-context-summary-rolled-up",
         wrong="summary-stacked"),
    dict(rule="the previous summary is passed on as prior_summary", test="build-context-summary-rolled-up",
         wrong="forgets-the-previous-summary"),
    dict(rule="the fixed part counts the tool schemas", test="build-context-allowance", wrong="tool-schemas-not-counted"),
    dict(rule="the fixed part counts the 3 tokens of reply priming (count_messages)", test="build-context-allowance",
         wrong="reply-priming-not-counted"),
    dict(rule="the allowance counts the scratchpad", test="build-context-allowance", wrong="scratchpad-not-counted"),
    dict(rule="every prompt fits the input limit", test="build-context-fits-budget", wrong="tool-schemas-not-counted"),
    dict(rule="the scratchpad is bounded by budget.scratchpad_max", test="build-context-scratchpad-last",
         wrong="scratchpad-unbounded"),
    dict(rule="course keys are stripped", test="build-context-api-ready", wrong="course-keys-not-stripped"),
    dict(rule="build_context returns a pair (messages, log)", test="build-context-visible", wrong="returns-only-the-messages"),
    dict(rule="tool results older than 2 laps are compressed", test="build-context-compresses-old-results",
         wrong="no-age-compression"),
    dict(rule="they are compressed to max_chars=1_000", test="build-context-compresses-old-results", wrong="default-max-chars"),
    dict(rule="results of the last 2 laps are kept in full (keep_full_for=2)", test="build-context-compresses-old-results",
         wrong="keeps-only-the-last-lap-in-full"),
    dict(rule="compress first, then trim and summarise the compressed view", test="build-context-follows-the-steps",
         wrong="compresses-after-trimming"),
    dict(rule="compression and summary are logged", test="build-context-logs-decisions", wrong="decisions-not-logged"),
    dict(rule="the log given is used even when it is empty (log is None, not falsy)", test="build-context-logs-decisions",
         wrong="empty-log-replaced"),
    dict(rule="the summary is logged at the lap (lap=step)", test="build-context-logs-decisions", wrong="lap-not-logged"),
    dict(rule="the summary is written by the client given", test="build-context-uses-the-client",
         wrong="ignores-the-given-client"),
    dict(rule="client None means ctxlab.get_client()", test="build-context-default-client-and-log",
         wrong="client-none-passed-on"),
    dict(rule="client None means ctxlab.get_client(), not an OfflineSummariser() made by hand",
         test="build-context-default-client-and-log", wrong="client-offline-hard-coded"),
    dict(rule="log None means a new MemoryLog, returned", test="build-context-default-client-and-log",
         wrong="no-log-made-when-none"),
    dict(rule="step None means the largest step in the history", test="build-context-default-step",
         wrong="step-defaults-to-zero"),
    dict(rule="the default step is a step, not a message count", test="build-context-default-step",
         wrong="step-defaults-to-the-length"),
    # prefix_reuse
    dict(rule="previous None (the first lap) reuses 0", test="prefix-reuse-visible", wrong="none-on-the-first-lap"),
    dict(rule="the prefix stops at the first difference", test="prefix-reuse-stops-at-first-difference",
         wrong="skips-past-a-difference"),
    dict(rule="the first differing message is not counted", test="prefix-reuse-stops-at-first-difference",
         wrong="counts-the-first-difference"),
    dict(rule="a partly shared prompt reuses its shared part, not all or nothing", test="prefix-reuse-stops-at-first-difference",
         wrong="all-or-nothing"),
    dict(rule="each shared message counts with ctxlab.count_message (framing included)",
         test="prefix-reuse-counts-whole-messages", wrong="counts-text-only"),
    dict(rule="reply priming is not part of the prefix", test="prefix-reuse-counts-whole-messages", wrong="adds-reply-priming"),
    dict(rule="messages are compared whole, every field", test="prefix-reuse-any-field-differs", wrong="compares-content-only"),
    dict(rule="prompts of different lengths share at most the shorter one", test="prefix-reuse-different-lengths",
         wrong="walks-past-the-shorter-prompt"),
    # policy_row
    dict(rule="peak tokens is the largest prompt", test="policy-row-peak-tokens", wrong="peak-is-the-last-prompt"),
    dict(rule="billed input is the sum over every lap", test="policy-row-billed-every-lap", wrong="bills-only-the-final-context"),
    dict(rule="billed input is not the largest prompt", test="policy-row-billed-every-lap", wrong="bills-the-largest-prompt"),
    dict(rule="prefix reused is a ratio of sums", test="policy-row-prefix-share", wrong="mean-of-each-laps-share"),
    dict(rule="prefix reused is a share (0 to 1), not a percentage", test="policy-row-prefix-share",
         wrong="share-as-a-percentage"),
    dict(rule="a probe that disappears and comes back is lost", test="policy-row-probe-that-comes-back",
         wrong="checks-only-the-last-lap"),
    dict(rule="a probe that never appears is not kept", test="policy-row-probe-never-seen", wrong="never-seen-probe-kept"),
    dict(rule="laps before a probe's first-seen lap do not count", test="policy-row-probes-from-first-seen",
         wrong="laps-before-first-seen-count"),
    dict(rule="the first-seen lap itself counts (>=, not >)", test="policy-row-probes-from-first-seen",
         wrong="first-seen-lap-excluded"),
    dict(rule="probes kept are in the order of result.probes", test="policy-row-probes-in-order", wrong="probes-sorted-by-name"),
    # small_talk (eviction, stage 2)
    dict(rule="a tool call and its results are never small talk", test="small-talk-calls-and-results",
         wrong="small-talk-per-message"),
    dict(rule="the goal (first user message) is never small talk", test="small-talk-goal-and-system",
         wrong="small-talk-goal-not-protected"),
    dict(rule="a pinned message is never small talk", test="small-talk-pinned", wrong="small-talk-pinned-key-ignored"),
    dict(rule="the newest keep_recent turns are kept", test="small-talk-recent-turns", wrong="small-talk-newest-turn-dropped"),
    dict(rule="recent turns are counted in turn groups, not messages", test="small-talk-recent-turns",
         wrong="small-talk-recent-counted-in-messages"),
    dict(rule="user chit-chat is small talk too", test="small-talk-user-chatter", wrong="small-talk-assistant-only"),
    dict(rule="only short messages (at most max_tokens) are small talk", test="small-talk-long-messages",
         wrong="small-talk-no-length-limit"),
    dict(rule="a message of exactly max_tokens counts (<=)", test="small-talk-long-messages", wrong="small-talk-limit-excluded"),
    # missing_by_lap (measure success by lap)
    dict(rule="the keys are lap numbers (record.lap)", test="missing-by-lap-keys-are-laps", wrong="missing-keyed-by-position"),
    dict(rule="every lap has a key, [] when nothing is missing", test="missing-by-lap-keys-are-laps",
         wrong="missing-skips-laps-with-nothing-missing"),
    dict(rule="a probe not yet seen is not missing", test="missing-by-lap-not-yet-seen", wrong="missing-before-first-seen"),
    dict(rule="the first-seen lap counts (>=)", test="missing-by-lap-first-seen-lap", wrong="missing-first-seen-lap-excluded"),
    dict(rule="a probe never seen is never missing", test="missing-by-lap-never-seen", wrong="missing-never-seen-counted"),
    dict(rule="names are in the order of result.probes", test="missing-by-lap-order", wrong="missing-sorted-by-name"),
    # concept checks
    dict(rule="Q4: cost and quality agree on static first, state last", test="q4-check", wrong="thinks-cheap-means-worse"),
    dict(rule="Q4: the API does not reorder messages", test="q4-check", wrong="thinks-the-api-sorts-messages"),
    dict(rule="Q4: order moves tokens, it does not remove them", test="q4-check", wrong="thinks-order-changes-length"),
    dict(rule="Q5: lost in the middle is about attention, not trimming", test="q5-check",
         wrong="thinks-lost-in-the-middle-is-trimming"),
    dict(rule="Q5: the API sends every message", test="q5-check", wrong="thinks-the-api-drops-the-middle"),
    dict(rule="Q5: summaries are still used", test="q5-check", wrong="avoids-summaries"),
    dict(rule="Q6: the whole history every lap overflows", test="q6-check", wrong="sends-the-whole-history"),
    dict(rule="Q6: memory is kept by code, not the model's judgement", test="q6-check", wrong="lets-the-model-delete"),
    dict(rule="Q6: summarising everything every lap loses the recent turns", test="q6-check",
         wrong="summarises-everything-every-lap"),
    dict(rule="Q7: repeating in the middle does not help", test="q7-check", wrong="repeats-the-rule-in-the-middle"),
    dict(rule="Q7: the system prompt stays first", test="q7-check", wrong="moves-the-system-prompt-last"),
    dict(rule="Q7: unpinning a rule invites the compaction trap", test="q7-check", wrong="unpins-the-rule"),
]

# Concept checks: the wrong options of the questions listed above with fewer (each fails its check).
WRONG_ANSWERS += [
    dict(name="thinks-the-api-needs-a-system-message-first", cell="q1-answer", source='q1 = "a"', fails=["q1-check"]),
    dict(name="thinks-the-prefix-is-the-largest-part", cell="q1-answer", source='q1 = "c"', fails=["q1-check"]),
    dict(name="thinks-trimming-starts-from-the-end", cell="q1-answer", source='q1 = "d"', fails=["q1-check"]),
    dict(name="thinks-the-transcript-has-everything", cell="q2-answer", source='q2 = "a"', fails=["q2-check"]),
    dict(name="thinks-the-log-undoes-the-retry", cell="q2-answer", source='q2 = "b"', fails=["q2-check"]),
    dict(name="thinks-the-log-makes-the-model-deterministic", cell="q2-answer", source='q2 = "d"', fails=["q2-check"]),
    dict(name="thinks-deep-trims-send-fewer-tokens", cell="q3-answer", source='q3 = "a"', fails=["q3-check"]),
    dict(name="thinks-caches-need-short-prompts", cell="q3-answer", source='q3 = "c"', fails=["q3-check"]),
    dict(name="thinks-it-never-summarises", cell="q3-answer", source='q3 = "d"', fails=["q3-check"]),
]
RULES += [
    dict(rule="Q1: the static prefix goes first for the cache and the rules", test="q1-check", wrong="thinks-the-api-needs-a-system-message-first"),
    dict(rule="Q1: the static prefix goes first for the cache and the rules", test="q1-check", wrong="thinks-the-prefix-is-the-largest-part"),
    dict(rule="Q1: the static prefix goes first for the cache and the rules", test="q1-check", wrong="thinks-trimming-starts-from-the-end"),
    dict(rule="Q2: the log shows what each prompt held and what was cut", test="q2-check", wrong="thinks-the-transcript-has-everything"),
    dict(rule="Q2: the log shows what each prompt held and what was cut", test="q2-check", wrong="thinks-the-log-undoes-the-retry"),
    dict(rule="Q2: the log shows what each prompt held and what was cut", test="q2-check", wrong="thinks-the-log-makes-the-model-deterministic"),
    dict(rule="Q3: rare deep trims keep the cached prefix", test="q3-check", wrong="thinks-deep-trims-send-fewer-tokens"),
    dict(rule="Q3: rare deep trims keep the cached prefix", test="q3-check", wrong="thinks-caches-need-short-prompts"),
    dict(rule="Q3: rare deep trims keep the cached prefix", test="q3-check", wrong="thinks-it-never-summarises"),
]

# Readings of the exercises' words that the rules above did not yet rule out.
WRONG_ANSWERS += [
    # build_context
    dict(name="every-system-message-moved-first", cell="build-context", source='''
def build_context(history, pad, budget, *, tools=None, client=None, summary=None, step=None, log=None):
    log = log if log is not None else MemoryLog()
    client = client if client is not None else ctxlab.get_client()
    if step is None:
        step = max(m.get("step", 0) for m in history)
    static = [m for m in history if m["role"] == "system"]
    rest = [m for m in history if m["role"] != "system"]
    fixed = ctxlab.count_messages(static) + ctxlab.count_tools(tools)
    pad_message = pad.message(max_tokens=budget.scratchpad_max)
    allowance = budget.history_allowance(fixed, ctxlab.count_message(pad_message))
    view = ctxlab.compress_history(rest, step, keep_full_for=2, max_chars=1_000, log=log)
    middle = ctxlab.trim_and_summarise(view, allowance, client=client, prior_summary=summary, log=log, lap=step)
    return ctxlab.course.strip_course_keys([*static, *middle, pad_message]), log
''', fails=["build-context-system-first"]),
    dict(name="step-of-the-last-message", cell="build-context", source=build(STEP='history[-1].get("step", 0)'),
         fails=["build-context-default-step"]),
    dict(name="step-zero-replaced", cell="build-context", source='''
def build_context(history, pad, budget, *, tools=None, client=None, summary=None, step=None, log=None):
    log = log if log is not None else MemoryLog()
    client = client if client is not None else ctxlab.get_client()
    step = step or max(m.get("step", 0) for m in history)
    static, rest = history[:1], history[1:]
    fixed = ctxlab.count_messages(static) + ctxlab.count_tools(tools)
    pad_message = pad.message(max_tokens=budget.scratchpad_max)
    allowance = budget.history_allowance(fixed, ctxlab.count_message(pad_message))
    view = ctxlab.compress_history(rest, step, keep_full_for=2, max_chars=1_000, log=log)
    middle = ctxlab.trim_and_summarise(view, allowance, client=client, prior_summary=summary, log=log, lap=step)
    return ctxlab.course.strip_course_keys([*static, *middle, pad_message]), log
''', fails=["build-context-default-step"]),
    dict(name="impossible-budget-swallowed", cell="build-context", source='''
def build_context(history, pad, budget, *, tools=None, client=None, summary=None, step=None, log=None):
    log = log if log is not None else MemoryLog()
    client = client if client is not None else ctxlab.get_client()
    if step is None:
        step = max(m.get("step", 0) for m in history)
    static, rest = history[:1], history[1:]
    fixed = ctxlab.count_messages(static) + ctxlab.count_tools(tools)
    pad_message = pad.message(max_tokens=budget.scratchpad_max)
    try:
        allowance = budget.history_allowance(fixed, ctxlab.count_message(pad_message))
    except ctxlab.BudgetError:
        return ctxlab.course.strip_course_keys([*static, pad_message]), log
    view = ctxlab.compress_history(rest, step, keep_full_for=2, max_chars=1_000, log=log)
    middle = ctxlab.trim_and_summarise(view, allowance, client=client, prior_summary=summary, log=log, lap=step)
    return ctxlab.course.strip_course_keys([*static, *middle, pad_message]), log
''', fails=["build-context-fits-budget"]),
    # prefix_reuse
    dict(name="compares-json-without-sorted-keys", cell="prefix-reuse", source='''
import json


def prefix_reuse(previous, current):
    if previous is None:
        return 0
    total = 0
    for old, new in zip(previous, current):
        if json.dumps(old) != json.dumps(new):
            break
        total += ctxlab.count_message(new)
    return total
''', fails=["prefix-reuse-any-field-differs"]),
    dict(name="compares-the-repr", cell="prefix-reuse", source=prefix(DIFFERS="str(old) != str(new)"),
         fails=["prefix-reuse-any-field-differs"]),
    dict(name="compares-a-list-of-fields", cell="prefix-reuse",
         source=prefix(DIFFERS='any(old.get(k) != new.get(k) for k in ("role", "content", "tool_calls", "tool_call_id"))'),
         fails=["prefix-reuse-any-field-differs"]),
    # policy_row
    dict(name="first-seen-compared-with-the-step", cell="policy-row", source=row(FROM="lap.step >= start"),
         fails=["policy-row-probes-from-first-seen"]),
    dict(name="first-seen-as-a-position", cell="policy-row", source='''
def policy_row(result):
    tokens = [lap.tokens for lap in result.laps]
    kept = []
    for name in result.probes:
        start = result.first_seen.get(name)
        later = result.laps[start - 1:] if start is not None else []
        if later and all(lap.probes.get(name) for lap in later):
            kept.append(name)
    return {
        "policy": result.policy,
        "peak tokens": max(tokens),
        "billed input": sum(tokens),
        "prefix reused": sum(lap.reused for lap in result.laps) / sum(tokens),
        "probes kept": kept,
    }
''', fails=["policy-row-probes-from-first-seen"]),
    dict(name="probes-in-first-seen-order", cell="policy-row", source=row(NAMES="result.first_seen"),
         fails=["policy-row-probes-in-order"]),
    dict(name="probe-read-without-get", cell="policy-row",
         source=row(KEPT="later and all(lap.probes[name] for lap in later)"),
         fails=["policy-row-probe-that-comes-back"]),
    # small_talk
    dict(name="small-talk-questions-kept", cell="small-talk",
         source=talk(SHORT='ctxlab.count_message(messages[i]) <= max_tokens and not (messages[i]["role"] == "user" '
                     'and (messages[i].get("content") or "").rstrip().endswith("?"))'),
         fails=["small-talk-user-chatter"]),
    dict(name="small-talk-recent-counted-among-unpinned", cell="small-talk", source='''
def small_talk(messages, keep_recent=1, max_tokens=40):
    spans = ctxlab.trimming.turn_group_spans(messages)
    pins = ctxlab.trimming.pinned_indices(messages)
    unpinned = [(a, b) for a, b in spans if not any(i in pins for i in range(a, b))]
    chosen = []
    for start, stop in unpinned[: max(0, len(unpinned) - keep_recent)]:
        group = range(start, stop)
        if all(messages[i]["role"] in ("user", "assistant") and not messages[i].get("tool_calls")
               and ctxlab.count_message(messages[i]) <= max_tokens for i in group):
            chosen.extend(group)
    return chosen
''', fails=["small-talk-recent-turns"]),
    dict(name="small-talk-tool-calls-key-present", cell="small-talk", source=talk(NO_CALLS='"tool_calls" not in messages[i]'),
         fails=["small-talk-calls-and-results"]),
    # missing_by_lap
    dict(name="missing-compared-with-the-step", cell="missing-by-lap",
         source=missing(FROM="record.step >= result.first_seen[name]"), fails=["missing-by-lap-not-yet-seen"]),
    dict(name="missing-only-when-false", cell="missing-by-lap", source='''
def missing_by_lap(result):
    missing = {}
    for record in result.laps:
        missing[record.lap] = [name for name in result.probes
                               if result.first_seen.get(name) is not None
                               and record.lap >= result.first_seen[name]
                               and record.probes.get(name) is False]
    return missing
''', fails=["missing-by-lap-absent-is-missing"]),
    dict(name="missing-read-without-get", cell="missing-by-lap", source='''
def missing_by_lap(result):
    missing = {}
    for record in result.laps:
        missing[record.lap] = [name for name in result.probes
                               if result.first_seen.get(name) is not None
                               and record.lap >= result.first_seen[name]
                               and not record.probes[name]]
    return missing
''', fails=["missing-by-lap-absent-is-missing"]),
    dict(name="missing-walks-the-record", cell="missing-by-lap", source='''
def missing_by_lap(result):
    missing = {}
    for record in result.laps:
        missing[record.lap] = [name for name, present in record.probes.items()
                               if not present and result.first_seen.get(name) is not None
                               and record.lap >= result.first_seen[name]]
    return missing
''', fails=["missing-by-lap-order", "missing-by-lap-absent-is-missing"]),
    # concept checks: a look-alike of a letter
    dict(name="answers-with-a-string-equal-to-anything", cell="q1-answer", source='''
class Letter(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


q1 = Letter("a")
''', fails=["q1-check"]),
]
RULES += [
    dict(rule="the static prefix is history[:1]: a later system message keeps its place", test="build-context-system-first",
         wrong="every-system-message-moved-first"),
    dict(rule="step None means the largest step, wherever it is in the history", test="build-context-default-step",
         wrong="step-of-the-last-message"),
    dict(rule="an explicit step=0 is kept (step is None, not falsy)", test="build-context-default-step",
         wrong="step-zero-replaced"),
    dict(rule="a budget with no room for the history raises ctxlab.BudgetError", test="build-context-fits-budget",
         wrong="impossible-budget-swallowed"),
    dict(rule="equal messages match whatever the order of their keys", test="prefix-reuse-any-field-differs",
         wrong="compares-json-without-sorted-keys"),
    dict(rule="equal messages match whatever the order of their keys", test="prefix-reuse-any-field-differs",
         wrong="compares-the-repr"),
    dict(rule="a message differing in a field outside role, content and the tool keys ends the prefix",
         test="prefix-reuse-any-field-differs", wrong="compares-a-list-of-fields"),
    dict(rule="first_seen is compared with the record's lap, not its step", test="policy-row-probes-from-first-seen",
         wrong="first-seen-compared-with-the-step"),
    dict(rule="laps are matched by number, not by position", test="policy-row-probes-from-first-seen",
         wrong="first-seen-as-a-position"),
    dict(rule="probes kept follow result.probes, not first_seen", test="policy-row-probes-in-order",
         wrong="probes-in-first-seen-order"),
    dict(rule="a name a lap's probes lacks is not present", test="policy-row-probe-that-comes-back",
         wrong="probe-read-without-get"),
    dict(rule="a short question is small talk too", test="small-talk-user-chatter", wrong="small-talk-questions-kept"),
    dict(rule="pinned turns count among the newest keep_recent", test="small-talk-recent-turns",
         wrong="small-talk-recent-counted-among-unpinned"),
    dict(rule='"tool_calls": None is no tool call', test="small-talk-calls-and-results",
         wrong="small-talk-tool-calls-key-present"),
    dict(rule="first_seen is compared with record.lap, not record.step", test="missing-by-lap-not-yet-seen",
         wrong="missing-compared-with-the-step"),
    dict(rule="a name the record lacks, or None, is missing", test="missing-by-lap-absent-is-missing",
         wrong="missing-only-when-false"),
    dict(rule="a record without a name does not raise", test="missing-by-lap-absent-is-missing",
         wrong="missing-read-without-get"),
    dict(rule="names follow result.probes, not the record's probes", test="missing-by-lap-order",
         wrong="missing-walks-the-record"),
    dict(rule="a concept-check answer is a plain str", test="q1-check", wrong="answers-with-a-string-equal-to-anything"),
]

# Answers that hand an exercise to ctxlab's own code; each must lose the named tests' points.
ATTACKS = [
    dict(name="policy-row-from-missing-by-lap", cell="policy-row", source='''
def policy_row(result):
    tokens = [lap.tokens for lap in result.laps]
    missing = result.missing_by_lap()
    lost = {name for names in missing.values() for name in names}
    kept = [n for n in result.probes if result.first_seen.get(n) is not None and n not in lost
            and any(lap.lap >= result.first_seen[n] for lap in result.laps)]
    return {
        "policy": result.policy,
        "peak tokens": max(tokens),
        "billed input": sum(tokens),
        "prefix reused": sum(lap.reused for lap in result.laps) / sum(tokens),
        "probes kept": kept,
    }
''', fails=["policy-row-visible", "policy-row-probe-that-comes-back", "policy-row-probes-from-first-seen",
            "policy-row-probes-in-order", "policy-row-matches-the-replays"]),
    # The replays the last test of each exercise builds in the judge hold a log, so they reach
    # the answer as handles whose methods run in the judge: the judge switches them off too.
    dict(name="policy-row-asks-the-tests-replay-for-its-summary", cell="policy-row", source='''
def policy_row(result):
    return dict(result.summary())
''', fails=["policy-row-visible", "policy-row-matches-the-replays"]),
    dict(name="missing-by-lap-asks-the-tests-replay", cell="missing-by-lap", source='''
def missing_by_lap(result):
    return dict(result.missing_by_lap())
''', fails=["missing-by-lap-visible", "missing-by-lap-matches-the-replays"]),
]
ATTACKS += [
    dict(name='missing-by-lap-copies-the-code-object', cell='missing-by-lap', source='''
import types
_m = ctxlab.ReplayResult.missing_by_lap
_copy = types.FunctionType(_m.__code__, _m.__globals__, "missing_by_lap", _m.__defaults__, _m.__closure__)
def missing_by_lap(result):
    return _copy(result)
''', fails=['missing-by-lap-visible', 'missing-by-lap-keys-are-laps']),
]
ATTACKS += [
    dict(name='prefix-reuse-copies-the-code-object', cell='prefix-reuse', source='''
import types
_p = ctxlab.caching.prefix_reuse
_copy = types.FunctionType(_p.__code__, _p.__globals__, "prefix_reuse", _p.__defaults__, _p.__closure__)
_copy.__kwdefaults__ = dict(_p.__kwdefaults__ or {})
def prefix_reuse(previous, current):
    return _copy(previous, current, within_message=False)
''', fails=['prefix-reuse-visible', 'prefix-reuse-stops-at-first-difference']),
]
ATTACKS += [
    dict(name='small-talk-copies-the-code-object', cell='small-talk', source='''
import types, importlib
_ev = importlib.import_module("ctxlab.eviction")
_g = _ev.small_talk_groups
_groups = types.FunctionType(_g.__code__, _g.__globals__, "small_talk_groups", _g.__defaults__, _g.__closure__)
_groups.__kwdefaults__ = dict(_g.__kwdefaults__ or {})
def small_talk(messages, keep_recent=1, max_tokens=40):
    spans = ctxlab.trimming.turn_group_spans(messages)
    pins = ctxlab.trimming.pinned_indices(messages)
    pinned = {g for g, (a, b) in enumerate(spans) if any(i in pins for i in range(a, b))}
    chosen = _groups(messages, spans, pinned, keep_recent=keep_recent, count=ctxlab.count_message, max_tokens=max_tokens)
    return [i for g in chosen for i in range(*spans[g])]
''', fails=['small-talk-visible', 'small-talk-calls-and-results']),
]


# Found by grading probes against the stated rules; each now fails the named test.
WRONG_ANSWERS += [
    dict(name='length-of-the-content', cell='small-talk', source='''
def small_talk(messages, keep_recent=1, max_tokens=40):
    """Indices of the old small talk in `messages`, ascending (see the rules above).

    >>> small_talk([{"role": "user", "content": "Fix bug #412."}, {"role": "assistant", "content": "On it."},
    ...             {"role": "assistant", "content": "Fixed."}])
    [1]
    """
    spans = ctxlab.trimming.turn_group_spans(messages)
    pins = ctxlab.trimming.pinned_indices(messages)
    chosen = []
    for start, stop in spans[: max(0, len(spans) - keep_recent)]:
        group = range(start, stop)
        if any(i in pins for i in group):
            continue
        if all(
            messages[i]["role"] in ("user", "assistant")
            and not messages[i].get("tool_calls")
            and ctxlab.count_text(messages[i].get('content') or '') <= max_tokens
            for i in group
        ):
            chosen.extend(group)
    return chosen
''', fails=['small-talk-long-messages']),
    dict(name='recent-beyond-the-groups', cell='small-talk', source='''
def small_talk(messages, keep_recent=1, max_tokens=40):
    """Indices of the old small talk in `messages`, ascending (see the rules above).

    >>> small_talk([{"role": "user", "content": "Fix bug #412."}, {"role": "assistant", "content": "On it."},
    ...             {"role": "assistant", "content": "Fixed."}])
    [1]
    """
    spans = ctxlab.trimming.turn_group_spans(messages)
    pins = ctxlab.trimming.pinned_indices(messages)
    chosen = []
    for start, stop in spans[: len(spans) - keep_recent]:
        group = range(start, stop)
        if any(i in pins for i in group):
            continue
        if all(
            messages[i]["role"] in ("user", "assistant")
            and not messages[i].get("tool_calls")
            and ctxlab.count_message(messages[i]) <= max_tokens
            for i in group
        ):
            chosen.extend(group)
    return chosen
''', fails=['small-talk-recent-turns']),
]
RULES += [
    dict(rule="the length limit is on ctxlab.count_message(m), framing included, not on the content's tokens", test='small-talk-long-messages', wrong='length-of-the-content'),
    dict(rule='a keep_recent larger than the number of turn groups keeps them all: nothing is small talk', test='small-talk-recent-turns', wrong='recent-beyond-the-groups'),
]


# A further probe round: each breaks one stated rule and now fails the named test.
_FIELDS = '("role", "content", "name", "tool_calls", "tool_call_id")'
WRONG_ANSWERS += [
    dict(name="billed-from-the-last-record", cell="policy-row", source=row(BILLED="result.laps[-1].billed"),
         fails=["policy-row-billed-every-lap"]),
    dict(name="reused-of-the-first-record-skipped", cell="policy-row",
         source=row(SHARE="sum(lap.reused for lap in result.laps[1:]) / sum(tokens)"), fails=["policy-row-prefix-share"]),
    dict(name="probe-seen-after-the-last-lap-kept", cell="policy-row",
         source=row(KEPT="start is not None and all(lap.probes.get(name) for lap in later)"),
         fails=["policy-row-probe-never-seen"]),
    dict(name="first-seen-zero-as-never", cell="policy-row", source=row(FROM="start and lap.lap >= start"),
         fails=["policy-row-probes-from-first-seen"]),
    dict(name="missing-first-seen-zero-as-never", cell="missing-by-lap", source=missing(SEEN="result.first_seen.get(name)"),
         fails=["missing-by-lap-first-seen-lap"]),
    dict(name="small-talk-default-limit-of-60", cell="small-talk",
         source=talk().replace("max_tokens=40):", "max_tokens=60):"), fails=["small-talk-long-messages"]),
    dict(name="small-talk-empty-reply-kept", cell="small-talk",
         source=talk(NO_CALLS='not messages[i].get("tool_calls") and (messages[i].get("content") or "").strip()'),
         fails=["small-talk-calls-and-results"]),
    dict(name="compares-five-fields", cell="prefix-reuse",
         source=prefix(DIFFERS=f"tuple(old.get(k) for k in {_FIELDS}) != tuple(new.get(k) for k in {_FIELDS})"),
         fails=["prefix-reuse-any-field-differs"]),
]
RULES += [
    dict(rule="billed input sums the records' tokens, not the running total .billed", test="policy-row-billed-every-lap",
         wrong="billed-from-the-last-record"),
    dict(rule="prefix reused sums .reused over every record, the first one too", test="policy-row-prefix-share",
         wrong="reused-of-the-first-record-skipped"),
    dict(rule="a probe first seen after the last lap is not kept", test="policy-row-probe-never-seen",
         wrong="probe-seen-after-the-last-lap-kept"),
    dict(rule="a first_seen of 0 is a lap, not None (policy_row)", test="policy-row-probes-from-first-seen",
         wrong="first-seen-zero-as-never"),
    dict(rule="a first_seen of 0 is a lap, not None (missing_by_lap)", test="missing-by-lap-first-seen-lap",
         wrong="missing-first-seen-zero-as-never"),
    dict(rule="max_tokens defaults to 40", test="small-talk-long-messages", wrong="small-talk-default-limit-of-60"),
    dict(rule="an empty assistant reply with no tool call is small talk", test="small-talk-calls-and-results",
         wrong="small-talk-empty-reply-kept"),
    dict(rule="a message differing in a field outside any fixed list ends the prefix", test="prefix-reuse-any-field-differs",
         wrong="compares-five-fields"),
]

# A stub that returns the system message and the scratchpad, and nothing of the history, met
# five properties vacuously (nothing old kept uncompressed, no call left unanswered, ...).
WRONG_ANSWERS += [
    dict(name="system-and-scratchpad-only", cell="build-context", source='''
def build_context(history, pad, budget, *, tools=None, client=None, summary=None, step=None, log=None):
    log = log if log is not None else MemoryLog()
    return ctxlab.course.strip_course_keys([history[0], pad.message(max_tokens=budget.scratchpad_max)]), log
''', fails=["build-context-visible", "build-context-scratchpad-last", "build-context-api-ready",
            "build-context-compresses-old-results", "build-context-default-step"]),
]
RULES += [
    dict(rule="the newest message of the history is kept, just before the scratchpad", test="build-context-scratchpad-last",
         wrong="system-and-scratchpad-only"),
]

# A later probe round: it broke a stated rule with full marks, and now fails the named test.
WRONG_ANSWERS += [
    dict(name="missing-in-first-seen-order", cell="missing-by-lap", source=missing(NAMES="result.first_seen"),
         fails=["missing-by-lap-order"]),
]
RULES += [
    dict(rule="missing names follow result.probes, not first_seen's order", test="missing-by-lap-order",
         wrong="missing-in-first-seen-order"),
]

# Another probe round: it broke a stated rule with full marks, and now fails the named test.
WRONG_ANSWERS += [
    dict(name="probes-counted-from-the-record-of-the-first-seen-lap", cell="policy-row",
         source=row().replace("        later = [lap for lap in result.laps if start is not None and lap.lap >= start]\n",
                              "        at = next((i for i, lap in enumerate(result.laps) if lap.lap == start), None)\n"
                              "        later = result.laps[at:] if at is not None else []\n"),
         fails=["policy-row-probes-from-first-seen"]),
]
RULES += [
    dict(rule="a probe first seen before the first record counts from the first record (lap >= first_seen)",
         test="policy-row-probes-from-first-seen", wrong="probes-counted-from-the-record-of-the-first-seen-lap"),
]

# Another probe round: each broke a stated rule with full marks, and now fails the named test.
_SIX = '("role", "content", "name", "tool_calls", "tool_call_id", "refusal")'
WRONG_ANSWERS += [
    dict(name="step-of-the-last-assistant-message", cell="build-context",
         source=build(STEP='next(m["step"] for m in reversed(history) if m["role"] == "assistant")'),
         fails=["build-context-default-step"]),
    dict(name="step-largest-among-assistant-messages", cell="build-context",
         source=build(STEP='max(m.get("step", 0) for m in history if m["role"] == "assistant")'),
         fails=["build-context-default-step"]),
    dict(name="step-of-the-last-message-with-one", cell="build-context",
         source=build(STEP='next(m["step"] for m in reversed(history) if "step" in m)'),
         fails=["build-context-default-step"]),
    dict(name="trim-keeps-two-recent-groups", cell="build-context",
         source=build(MIDDLE="ctxlab.trim_and_summarise(view, allowance, client=client, prior_summary=summary, "
                      "log=log, lap=step, keep_recent=2)"),
         fails=["build-context-follows-the-steps"]),
    dict(name="compares-the-text-stripped", cell="prefix-reuse",
         source=prefix(DIFFERS='{**old, "content": (old.get("content") or "").strip()} != '
                       '{**new, "content": (new.get("content") or "").strip()}'),
         fails=["prefix-reuse-any-field-differs"]),
    dict(name="compares-six-fields", cell="prefix-reuse",
         source=prefix(DIFFERS=f"any(old.get(k) != new.get(k) for k in {_SIX})"),
         fails=["prefix-reuse-any-field-differs"]),
    dict(name="compares-the-keys-and-four-fields", cell="prefix-reuse",
         source=prefix(DIFFERS='set(old) != set(new) or any(old.get(k) != new.get(k) '
                       'for k in ("role", "content", "tool_calls", "tool_call_id"))'),
         fails=["prefix-reuse-any-field-differs"]),
    dict(name="billed-from-differences-of-running-totals", cell="policy-row",
         source=row(BILLED="result.laps[-1].billed - result.laps[0].billed + result.laps[0].tokens"),
         fails=["policy-row-billed-every-lap"]),
    dict(name="peak-skips-the-first-lap", cell="policy-row", source=row(PEAK="max(tokens[1:] or tokens)"),
         fails=["policy-row-peak-tokens"]),
    dict(name="small-talk-pins-messages-0-and-1", cell="small-talk",
         source=talk(PINS='{0, 1} | {i for i, m in enumerate(messages) if m.get("pinned")}'),
         fails=["small-talk-goal-and-system"]),
    dict(name="small-talk-goal-taken-as-message-1", cell="small-talk",
         source=talk(PINS='{i for i, m in enumerate(messages) if m["role"] == "system" or m.get("pinned")} | {1}'),
         fails=["small-talk-goal-and-system"]),
    dict(name="small-talk-empty-tool-calls-as-a-call", cell="small-talk",
         source=talk(NO_CALLS='messages[i].get("tool_calls") is None'), fails=["small-talk-calls-and-results"]),
    dict(name="small-talk-newest-kept-when-keep-recent-is-0", cell="small-talk",
         source=talk(OLD="spans[: max(0, len(spans) - max(keep_recent, 1))]"), fails=["small-talk-recent-turns"]),
]
RULES += [
    dict(rule="step None means the largest step of any message, a user message's too", test="build-context-default-step",
         wrong="step-of-the-last-assistant-message"),
    dict(rule="step None means the largest step of any message, not only the assistant messages'",
         test="build-context-default-step", wrong="step-largest-among-assistant-messages"),
    dict(rule="step None means the largest step, not the last message's that has one", test="build-context-default-step",
         wrong="step-of-the-last-message-with-one"),
    dict(rule="step 6 is called as given (keep_recent left at its default)", test="build-context-follows-the-steps",
         wrong="trim-keeps-two-recent-groups"),
    dict(rule="messages are compared as they are: text differing in whitespace alone differs",
         test="prefix-reuse-any-field-differs", wrong="compares-the-text-stripped"),
    dict(rule="a message differing in a field no fixed list names ends the prefix", test="prefix-reuse-any-field-differs",
         wrong="compares-six-fields"),
    dict(rule="a field both messages have, with different values, ends the prefix", test="prefix-reuse-any-field-differs",
         wrong="compares-the-keys-and-four-fields"),
    dict(rule="billed input sums the records' .tokens, even when the records skip laps", test="policy-row-billed-every-lap",
         wrong="billed-from-differences-of-running-totals"),
    dict(rule="peak tokens is the largest prompt, the first lap's included", test="policy-row-peak-tokens",
         wrong="peak-skips-the-first-lap"),
    dict(rule="the goal is the first user message wherever it stands", test="small-talk-goal-and-system",
         wrong="small-talk-pins-messages-0-and-1"),
    dict(rule="the goal is the first user message, not message 1", test="small-talk-goal-and-system",
         wrong="small-talk-goal-taken-as-message-1"),
    dict(rule='"tool_calls": [] is no tool call', test="small-talk-calls-and-results",
         wrong="small-talk-empty-tool-calls-as-a-call"),
    dict(rule="keep_recent=0 keeps no turn group as recent, the newest neither", test="small-talk-recent-turns",
         wrong="small-talk-newest-kept-when-keep-recent-is-0"),
]

# Tuples now cross to the judge as tuples, as in Python: these answers scored full marks until then.
WRONG_ANSWERS += [
    dict(name="probes-kept-as-a-tuple", cell="policy-row",
         source=row().replace('"probes kept": kept,', '"probes kept": tuple(kept),'), fails=["policy-row-visible"]),
    dict(name="missing-names-as-tuples", cell="missing-by-lap", source=missing(STORE="missing[record.lap] = tuple(names)"),
         fails=["missing-by-lap-visible"]),
]
RULES += [
    dict(rule="'probes kept' is a list of names", test="policy-row-visible", wrong="probes-kept-as-a-tuple"),
    dict(rule="each lap's missing names are a list", test="missing-by-lap-visible", wrong="missing-names-as-tuples"),
]

# The tests that check an answer against ctxlab's on real replays, and the small-talk example.
RULES += [
    dict(rule="prefix_reuse agrees with ctxlab.caching.prefix_reuse(within_message=False) on a real replay",
         test="prefix-reuse-matches-reference", wrong="counts-text-only"),
    dict(rule="policy_row agrees with ReplayResult.summary() on real replays", test="policy-row-matches-the-replays",
         wrong="bills-the-largest-prompt"),
    dict(rule="small talk is found by turn groups: the chatty refund run's chit-chat and nothing else",
         test="small-talk-visible", wrong="small-talk-per-message"),
    dict(rule="small_talk agrees with ctxlab.eviction.small_talk on other runs", test="small-talk-matches-reference",
         wrong="small-talk-per-message"),
    dict(rule="missing_by_lap agrees with ReplayResult.missing_by_lap() on a real replay",
         test="missing-by-lap-matches-the-replays", wrong="missing-keyed-by-position"),
]

# The words of each exercise's text that state each rule (tests/test_rule_map.py checks them).
_STATIC = "the static prefix is history[:1] (the system message), and rest = history[1:]"
_FIXED = "fixed = ctxlab.count_messages(static) + ctxlab.count_tools(tools) (this includes the 3 tokens of reply priming)"
_PAD = "pad_message = pad.message(max_tokens=budget.scratchpad_max), the scratchpad bounded to its cap"
_ALLOWANCE = "allowance = budget.history_allowance(fixed, ctxlab.count_message(pad_message))"
_VIEW = "view = ctxlab.compress_history(rest, step, keep_full_for=2, max_chars=1_000, log=log)"
_FIRST = "compress first, then trim, so that the trim measures what is really sent"
_MIDDLE = ("middle = ctxlab.trim_and_summarise(view, allowance, client=client, prior_summary=summary, log=log, "
           "lap=step)")
_ONE = "rolls what it drops and the previous summary into one summary message"
_RETURN = ("return (messages, log), where messages is static, middle, scratchpad, with course keys stripped "
           "(ctxlab.course.strip_course_keys)")
_LOG = "When log is None, make a new MemoryLog() (test log is None: an empty log you are given is still the one to fill)"
_STEP = ("When step is None, use the largest step in history, wherever it is (an explicit step=0 is a step: "
         "keep it)")
_CLIENT = "When client is None, use ctxlab.get_client()"
_NOTHING = "When the budget leaves nothing for the history, budget.history_allowance raises ctxlab.BudgetError: let it out"
_IDENTICAL = ("the longest run of leading messages that are identical in both prompts (every field equal, not only "
              "the text; the order in which a message's keys were written does not matter)")
_TOKENS = "the tokens (ctxlab.count_message of each message, framing included, no reply priming)"
_ENDS = "the first difference ends the reusable prefix, even if everything after it is the same again"
_BILLED = ("\"billed input\": the sum of every prompt's tokens (.tokens), because every lap is billed (a record's "
           ".billed is the run's running total, which may have begun before the first record)")
_PEAK = "\"peak tokens\": the largest prompt (not the last one)"
_SHARE = ("sum(reused) / sum(tokens) (a ratio of sums, not the mean of each lap's share), a number from 0 to 1, "
          "not a percentage")
_KEPT = ("\"probes kept\": the names, in the order of result.probes, of the probes present in every prompt from "
         "their first-seen lap (that lap included) to the last. Laps before it do not count")
_NEVER = ("A probe that never appears is not kept, nor one first seen after the last lap (no prompt could hold it), "
          "and neither is one that disappears and comes back")
_LACKS = "a name a lap's .probes lacks counts as not present"
_FIRST_SEEN = ("result.first_seen[name] is the lap (a .lap number) at which a probe first appears in the transcript "
               "(None when it never does)")
_NUMBERED = "Laps need not be numbered from 1, and .lap need not equal .step"
_NO_CALL = ("every message in it is a user or assistant message with no tool_calls (so a tool call and its results "
            "never are; \"tool_calls\": None, as the OpenAI SDK writes a plain reply, is no call, and neither is "
            "\"tool_calls\": [])")
_GOAL = "the goal, which is the first user message"
_SHORT = "every message in it is short: ctxlab.count_message(m) <= max_tokens"
_NOT_PINNED = "it is not pinned: none of its messages is in ctxlab.trimming.pinned_indices(messages)"
_RECENT = ("it is not one of the newest keep_recent turn groups (turns, not messages; pinned turns count among "
           "them)")
_GROUPS = "Work by turn groups (ctxlab.trimming.turn_group_spans(messages))"
_ABSENT = "record.probes.get(name) is false (a name the record lacks, False or None)"
_SEEN = ("it has been seen by then (result.first_seen[name] is not None and is at most record.lap, not "
         "record.step: the first-seen lap counts)")
_NOT_YET = "A probe not yet seen, or never seen, is not missing"
_KEYS = "Return a dict that maps each lap's number (record.lap, for every record of result.laps, in order)"
_EVERY_KEY = "give every lap a key, with [] when nothing is missing"
_ORDER = "List the names in the order of result.probes"
_BY_CODE = "pins, the scratchpad and the store decide what survives, not the model's judgement on each lap"
TAUGHT = {
    # build_context
    "the allowance counts the scratchpad": _ALLOWANCE,
    "the fixed part counts the 3 tokens of reply priming (count_messages)": _FIXED,
    "the fixed part counts the tool schemas": _FIXED,
    "course keys are stripped": _RETURN,
    "results of the last 2 laps are kept in full (keep_full_for=2)": _VIEW,
    "they are compressed to max_chars=1_000": _VIEW,
    "tool results older than 2 laps are compressed": _VIEW,
    "client None means ctxlab.get_client()": _CLIENT,
    "client None means ctxlab.get_client(), not an OfflineSummariser() made by hand": _CLIENT,
    "log None means a new MemoryLog, returned": (_LOG, _RETURN),
    "an explicit step=0 is kept (step is None, not falsy)": _STEP,
    "step None means the largest step in the history": _STEP,
    "step None means the largest step of any message, a user message's too": _STEP,
    "step None means the largest step of any message, not only the assistant messages'": _STEP,
    "step None means the largest step, not the last message's that has one": _STEP,
    "step None means the largest step, wherever it is in the history": _STEP,
    "the default step is a step, not a message count": _STEP,
    "a budget with no room for the history raises ctxlab.BudgetError": _NOTHING,
    "every prompt fits the input limit": (_ALLOWANCE, _MIDDLE),
    "compress first, then trim and summarise the compressed view": (_VIEW, _FIRST, _MIDDLE),
    "step 6 is called as given (keep_recent left at its default)": _MIDDLE,
    "compression and summary are logged": (_VIEW, _MIDDLE),
    "the log given is used even when it is empty (log is None, not falsy)": _LOG,
    "the summary is logged at the lap (lap=step)": _MIDDLE,
    "the newest message of the history is kept, just before the scratchpad": (
        "It trims by turn groups, keeps the pins", _RETURN),
    "the scratchpad is bounded by budget.scratchpad_max": _PAD,
    "the scratchpad is the last message": _RETURN,
    "a previous summary is rolled into the new one, never stacked": (_MIDDLE, _ONE),
    "the previous summary is passed on as prior_summary": _MIDDLE,
    "the static prefix is history[:1]: a later system message keeps its place": _STATIC,
    "the system message comes first": (_STATIC, _RETURN),
    "the summary is written by the client given": _MIDDLE,
    "build_context returns a pair (messages, log)": _RETURN,
    # prefix_reuse
    "a field both messages have, with different values, ends the prefix": _IDENTICAL,
    "a message differing in a field no fixed list names ends the prefix": _IDENTICAL,
    "a message differing in a field outside any fixed list ends the prefix": _IDENTICAL,
    "a message differing in a field outside role, content and the tool keys ends the prefix": _IDENTICAL,
    "equal messages match whatever the order of their keys": _IDENTICAL,
    "messages are compared as they are: text differing in whitespace alone differs": _IDENTICAL,
    "messages are compared whole, every field": _IDENTICAL,
    "each shared message counts with ctxlab.count_message (framing included)": _TOKENS,
    "reply priming is not part of the prefix": _TOKENS,
    "prompts of different lengths share at most the shorter one": _IDENTICAL,
    "a partly shared prompt reuses its shared part, not all or nothing": (_TOKENS, _IDENTICAL),
    "the first differing message is not counted": _ENDS,
    "the prefix stops at the first difference": _ENDS,
    "previous None (the first lap) reuses 0": "Return 0 when previous is None, as on the first lap",
    "prefix_reuse agrees with ctxlab.caching.prefix_reuse(within_message=False) on a real replay":
        "Called with within_message=False and no tools, it gives the same answer as yours",
    # policy_row
    "billed input is not the largest prompt": _BILLED,
    "billed input is the sum over every lap": _BILLED,
    "billed input sums the records' .tokens, even when the records skip laps": _BILLED,
    "billed input sums the records' tokens, not the running total .billed": _BILLED,
    "peak tokens is the largest prompt": _PEAK,
    "peak tokens is the largest prompt, the first lap's included": _PEAK,
    "prefix reused is a ratio of sums": _SHARE,
    "prefix reused is a share (0 to 1), not a percentage": _SHARE,
    "prefix reused sums .reused over every record, the first one too": _SHARE,
    "a probe first seen after the last lap is not kept": _NEVER,
    "a probe that never appears is not kept": _NEVER,
    "a name a lap's probes lacks is not present": _LACKS,
    "a probe that disappears and comes back is lost": _NEVER,
    "a first_seen of 0 is a lap, not None (policy_row)": _FIRST_SEEN,
    "a probe first seen before the first record counts from the first record (lap >= first_seen)": _KEPT,
    "first_seen is compared with the record's lap, not its step": (_FIRST_SEEN, _NUMBERED),
    "laps are matched by number, not by position": (_FIRST_SEEN, _NUMBERED),
    "laps before a probe's first-seen lap do not count": _KEPT,
    "the first-seen lap itself counts (>=, not >)": _KEPT,
    "probes kept are in the order of result.probes": _KEPT,
    "probes kept follow result.probes, not first_seen": _KEPT,
    "'probes kept' is a list of names": _KEPT,
    "policy_row agrees with ReplayResult.summary() on real replays": "rows of real replays against ReplayResult.summary()",
    # small_talk
    "\"tool_calls\": None is no tool call": _NO_CALL,
    "\"tool_calls\": [] is no tool call": _NO_CALL,
    "a tool call and its results are never small talk": _NO_CALL,
    "an empty assistant reply with no tool call is small talk": (_NO_CALL, _SHORT),
    "the goal (first user message) is never small talk": (_NOT_PINNED, _GOAL),
    "the goal is the first user message wherever it stands": _GOAL,
    "the goal is the first user message, not message 1": _GOAL,
    "a message of exactly max_tokens counts (<=)": _SHORT,
    "max_tokens defaults to 40": "small_talk(messages, keep_recent=1, max_tokens=40)",
    "only short messages (at most max_tokens) are small talk": _SHORT,
    "the length limit is on ctxlab.count_message(m), framing included, not on the content's tokens": _SHORT,
    "a pinned message is never small talk": _NOT_PINNED,
    "a keep_recent larger than the number of turn groups keeps them all: nothing is small talk": _RECENT,
    "keep_recent=0 keeps no turn group as recent, the newest neither": _RECENT,
    "pinned turns count among the newest keep_recent": _RECENT,
    "recent turns are counted in turn groups, not messages": _RECENT,
    "the newest keep_recent turns are kept": _RECENT,
    "a short question is small talk too": (_NO_CALL, _SHORT),
    "user chit-chat is small talk too": _NO_CALL,
    "small talk is found by turn groups: the chatty refund run's chit-chat and nothing else": _GROUPS,
    "small_talk agrees with ctxlab.eviction.small_talk on other runs":
        "Hidden tests check agreement with ctxlab.eviction.small_talk on other runs",
    # missing_by_lap
    "a name the record lacks, or None, is missing": _ABSENT,
    "a record without a name does not raise": _ABSENT,
    "a first_seen of 0 is a lap, not None (missing_by_lap)": _SEEN,
    "the first-seen lap counts (>=)": _SEEN,
    "every lap has a key, [] when nothing is missing": _EVERY_KEY,
    "the keys are lap numbers (record.lap)": _KEYS,
    "a probe never seen is never missing": _NOT_YET,
    "a probe not yet seen is not missing": _NOT_YET,
    "first_seen is compared with record.lap, not record.step": _SEEN,
    "missing names follow result.probes, not first_seen's order": _ORDER,
    "names are in the order of result.probes": _ORDER,
    "names follow result.probes, not the record's probes": _ORDER,
    "each lap's missing names are a list": "to the list of probe names missing from that lap's prompt",
    "missing_by_lap agrees with ReplayResult.missing_by_lap() on a real replay":
        "a real replay against ReplayResult.missing_by_lap()",
    # concept checks: the lesson's text that makes the right answer right
    "a concept-check answer is a plain str": "Answer each question by setting the variable to \"a\", \"b\", \"c\" or \"d\"",
    "Q1: the static prefix goes first for the cache and the rules": (
        "it never changes, so a prompt cache can reuse it on every lap", "The start holds the rules"),
    "Q2: the log shows what each prompt held and what was cut": (
        "the first question is what it could see at lap 30", "Without a log, that prompt is gone"),
    "Q3: rare deep trims keep the cached prefix": "The prompts between two trims extend one another, and the cache serves all of them",
    "Q4: cost and quality agree on static first, state last": (
        "whatever never changes should come first, and whatever changes every lap should come last",
        "The start holds the rules, and the end holds the current state, which is also what changes every lap"),
    "Q4: order moves tokens, it does not remove them": "it moves tokens about, it does not remove any",
    "Q4: the API does not reorder messages": "The API sends the messages in the order given and never sorts them",
    "Q5: lost in the middle is about attention, not trimming": "The effect is one of attention, not of transmission",
    "Q5: summaries are still used": "what sits in the middle, a summary included, is still read and used, only less reliably",
    "Q5: the API sends every message": "the API sends every message",
    "Q6: memory is kept by code, not the model's judgement": _BY_CODE,
    "Q6: summarising everything every lap loses the recent turns":
        "Summarise only what was cut, so that the recent turns reach the model word for word",
    "Q6: the whole history every lap overflows": "its prompt grows every lap and passes the input limit long before the end",
    "Q7: repeating in the middle does not help": (
        "the assembler puts the goal and the constraints near the start, keeps the middle lean",
        "A rule that matters for the next step can also be restated near the end, just before the scratchpad"),
    "Q7: the system prompt stays first": "static prefix | the system prompt and the tool schemas",
    "Q7: unpinning a rule invites the compaction trap": "pin every message that must survive",
}
