"""Known wrong answers for lesson 06-assembly; each must fail the named tests when graded."""

BUILD = '''
def build_context(history, pad, budget, *, tools=None, client=None, summary=None, step=None, log=None):
    log = log if log is not None else MemoryLog()
    client = client if client is not None else ctxlab.get_client()
    if step is None:
        step = max(m.get("step", 0) for m in history)
    static, rest = history[:1], history[1:]
    fixed = ctxlab.count_messages(static) + ctxlab.count_tools(tools)
    pad_message = pad.message(max_tokens=budget.scratchpad_max)
    allowance = budget.history_allowance(fixed, {pad_tokens})
    view = ctxlab.compress_history(rest, step, keep_full_for=2, max_chars=1_000{log_compress})
    middle = {middle}
    return {messages}, log
'''
PAD_TOKENS = "ctxlab.count_message(pad_message)"
LOG = ", log=log"
MIDDLE = "ctxlab.trim_and_summarise(view, allowance, client=client, prior_summary=summary, lap=step{log})"
ORDERED = "ctxlab.strip_course_keys([*static, *middle, pad_message])"
LOGGED_MIDDLE = MIDDLE.format(log=LOG)


def build(pad_tokens=PAD_TOKENS, log_compress=LOG, middle=LOGGED_MIDDLE, messages=ORDERED):
    return BUILD.format(pad_tokens=pad_tokens, log_compress=log_compress, middle=middle, messages=messages)


WRONG_ANSWERS = [
    dict(
        name="scratchpad-not-last",
        cell="build-context",
        source=build(messages="ctxlab.strip_course_keys([*static, pad_message, *middle])"),
        fails=["build-context-scratchpad-last"],
    ),
    dict(
        name="system-not-first",
        cell="build-context",
        source=build(messages="ctxlab.strip_course_keys([*middle, *static, pad_message])"),
        fails=["build-context-system-first"],
    ),
    dict(
        name="summary-stacked",
        cell="build-context",
        source=build(
            middle="([ctxlab.summary_message(summary)] if summary else []) + "
            "ctxlab.trim_and_summarise(view, allowance, client=client, log=log, lap=step)"
        ),
        fails=["build-context-summary-rolled-up"],
    ),
    dict(
        name="budget-exceeded-scratchpad-not-counted",
        cell="build-context",
        source=build(pad_tokens="0"),
        fails=["build-context-fits-budget"],
    ),
    dict(
        name="decisions-not-logged",
        cell="build-context",
        source=build(log_compress="", middle=MIDDLE.format(log="")),
        fails=["build-context-logs-decisions"],
    ),
    dict(
        name="course-keys-sent",
        cell="build-context",
        source=build(messages="[*static, *middle, pad_message]"),
        fails=["build-context-api-ready"],
    ),
    dict(
        name="prefix-skips-a-difference",
        cell="prefix-reuse",
        source='''
def prefix_reuse(previous, current):
    if previous is None:
        return 0
    return sum(ctxlab.count_message(new) for old, new in zip(previous, current) if old == new)
''',
        fails=["prefix-reuse-stops-at-first-difference"],
    ),
    dict(
        name="bills-only-the-last-lap",
        cell="policy-row",
        source='''
def policy_row(result):
    tokens = [lap.tokens for lap in result.laps]
    kept = [n for n in result.probes if result.laps[-1].probes.get(n)]
    return {"policy": result.policy, "peak tokens": max(tokens), "billed input": tokens[-1],
            "prefix reused": sum(lap.reused for lap in result.laps) / sum(tokens), "probes kept": kept}
''',
        fails=["policy-row-billed-every-lap", "policy-row-probes-kept"],
    ),
]
