"""Known wrong answers for lesson 03-summarising; each must fail the named tests when graded.

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

# --- Exercise 1: render_steps -------------------------------------------------------------------

RENDER_STEPS = '''
def render_steps(messages):
    tool_names = <NAMES>
    lines = []
    for message in messages:
        lap = <LAP>
        text = (message.get("content") or "").strip()
        if message["role"] == "tool":
            call_id = message["tool_call_id"]
            how = ctxlab.summarising.failure_of(text)
            status = <STATUS>
            lines.append(f"{lap} tool {<TOOL>} (id {call_id}) {status}")
            <RESULT>
            continue
        <SKIP>
        if <HAS_TEXT>:
            first, *rest = text.splitlines() or [""]
            lines.append(f"{lap} <ROLE>{first}")
            <REST>
        for call in <CALLS>:
            function = call["function"]
            <NOTE>
            lines.append(f"{lap} {message['role']} called {function['name']}<ARGUMENTS><ID>")
    return "\\n".join(lines)
'''
RENDER_SLOTS = dict(
    NAMES="{}",
    NOTE='tool_names[call["id"]] = function["name"]',
    LAP="f\"[lap {message.get('step', '?')}]\"",
    STATUS='f"FAILED: {how}" if how else "returned:"',
    TOOL="tool_names.get(call_id, 'unknown_tool')",
    RESULT='lines += ["    " + line for line in text.splitlines()]',
    SKIP="",
    HAS_TEXT="text",
    ROLE="{message['role']}: ",
    REST='lines += ["    " + line for line in rest]',
    CALLS='message.get("tool_calls") or []',
    ARGUMENTS=" {function['arguments']}",
    ID=" (id {call['id']})",
)

# --- Exercise 2: compaction_prompt --------------------------------------------------------------

COMPACTION_PROMPT = '''
def compaction_prompt(steps_text, prior_summary=None):
    instructions = (
        "These agent steps are being removed from the agent's context; your summary is all it keeps.\\n"
        <BULLETS>
        <FACTS>
        <DECISIONS>
        <FAILURES>
        "USER INSTRUCTIONS: every instruction or constraint from the user, word for word.\\n"
        <QUESTIONS>
    )
    parts = [instructions]
    if <HAS_PRIOR>:
        parts.append(<PRIOR_BLOCK>)
    parts.append(<STEPS>)
    return "\\n\\n".join(<ORDER>)
'''
PROMPT_SLOTS = dict(
    BULLETS='"Write terse bullet points, one line each, under these headings:\\n"',
    FACTS='"FACTS: every fact established, tagged with the tool (its source) and the lap.\\n"',
    DECISIONS='"DECISIONS: every decision the agent made, and its reason.\\n"',
    FAILURES='"FAILURES: every tool call that failed, with its arguments and how it failed, in the error\'s own words.\\n"',
    QUESTIONS='"OPEN QUESTIONS: what is still unknown or still to do."',
    HAS_PRIOR="prior_summary",
    PRIOR_BLOCK='"PREVIOUS SUMMARY: fold the new steps into it and return ONE updated summary.\\n"'
    ' f"{prior_summary}\\nEND OF PREVIOUS SUMMARY"',
    STEPS='f"STEPS TO FOLD IN:\\n{steps_text}"',
    ORDER="parts",
)

# --- Exercise 3: compact ------------------------------------------------------------------------

COMPACT = '''
def compact(client, dropped, prior_summary=None, *, model=None):
    <EMPTY>
    prompt = ctxlab.summarising.compaction_prompt(<STEPS>, <PRIOR>)
    reply = <CLIENT>.chat.completions.create(
        model=<MODEL>,
        messages=<MESSAGES>,
        <TEMPERATURE>
    )
    return <REPLY>
'''
COMPACT_SLOTS = dict(
    EMPTY='if not dropped:\n        return prior_summary or ""',
    STEPS="ctxlab.summarising.render_steps(dropped)",
    PRIOR="prior_summary",
    CLIENT="client",
    MODEL="model or ctxlab.llm.summary_model()",
    MESSAGES='[{"role": "user", "content": prompt}]',
    TEMPERATURE="temperature=0,",
    REPLY="reply.choices[0].message.content.strip()",
)

# --- Exercise 4: trim_and_summarise -------------------------------------------------------------

TRIM_AND_SUMMARISE = '''
def trim_and_summarise(messages, allowance, *, client, reserve=1_000, keep_recent=1):
    <TAKE_OUT>
    if <FITS>:
        return list(messages)
    prior = <PRIOR>
    kept, dropped = ctxlab.fit(rest, <ROOM>, keep_recent=<KEEP_RECENT>)
    summary = ctxlab.compact(<CLIENT>, <DROPPED>, prior)
    steps = [m["step"] for m in <COVERED> if "step" in m]
    message = ctxlab.summary_message(summary, step=<STEP>)
    <CHECK>
    head = 0
    while head < len(kept) and kept[head]["role"] in ("system", "developer"):
        head += 1
    if head < len(kept) and kept[head]["role"] == "user":
        head += 1
    <HEAD>
    return kept[:head] + [message] + kept[head:]
'''
TAS_SLOTS = dict(
    TAKE_OUT="old = [m for m in messages if ctxlab.is_summary(m)]\n"
    "    rest = [m for m in messages if not ctxlab.is_summary(m)]",
    FITS="len(old) <= 1 and tokens(messages) <= allowance",
    PRIOR='"\\n".join(ctxlab.summarising.summary_text(m) for m in old) or None',
    ROOM="allowance - reserve",
    KEEP_RECENT="keep_recent",
    CLIENT="client",
    DROPPED="dropped",
    COVERED="old + dropped",
    STEP="max(steps) if steps else None",
    CHECK="if tokens(kept) + ctxlab.count_message(message) > allowance:\n"
    '        raise ctxlab.BudgetError(f"the summary does not fit in the allowance of {allowance}; raise reserve")',
    HEAD="",
)


# --- Exercise 5: compaction_due -----------------------------------------------------------------

COMPACTION_DUE = '''
def compaction_due(tokens, ceiling, *, threshold=0.7, boundary=False):
    <CEILING_CHECK>
    if <THRESHOLD_RANGE>:
        raise ValueError(f"threshold must be a fraction above 0 and at most 1, got {threshold!r}")
    return <BOUNDARY>tokens <COMPARE> <LIMIT>
'''
DUE_SLOTS = dict(
    CEILING_CHECK="if isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling <= 0:\n"
    '        raise ValueError(f"ceiling must be a whole number of tokens above 0, got {ceiling!r}")',
    THRESHOLD_RANGE="not 0 < threshold <= 1",
    BOUNDARY="bool(boundary) or ",
    COMPARE=">=",
    LIMIT="threshold * ceiling",
)


def render(**changes: str) -> str:
    return variant(RENDER_STEPS, RENDER_SLOTS, changes)


def prompt(**changes: str) -> str:
    return variant(COMPACTION_PROMPT, PROMPT_SLOTS, changes)


def compact(**changes: str) -> str:
    return variant(COMPACT, COMPACT_SLOTS, changes)


def tas(**changes: str) -> str:
    return variant(TRIM_AND_SUMMARISE, TAS_SLOTS, changes)


def due(**changes: str) -> str:
    return variant(COMPACTION_DUE, DUE_SLOTS, changes)


WRONG_ANSWERS = [
    # render_steps
    dict(name="lap-none-without-step", cell="render-steps", source=render(LAP="f\"[lap {message.get('step')}]\""),
         fails=["render-steps-missing-step"]),
    dict(name="keyerror-without-step", cell="render-steps", source=render(LAP="f\"[lap {message['step']}]\""),
         fails=["render-steps-missing-step"]),
    dict(name="role-not-named", cell="render-steps", source=render(ROLE=""),
         fails=["render-steps-visible", "render-steps-laps-and-roles"]),
    dict(name="skips-system-messages", cell="render-steps",
         source=render(SKIP='if message["role"] == "system":\n            continue'),
         fails=["render-steps-laps-and-roles"]),
    dict(name="text-first-line-only", cell="render-steps", source=render(REST="pass"),
         fails=["render-steps-laps-and-roles"]),
    dict(name="empty-text-entry-for-calls", cell="render-steps", source=render(HAS_TEXT="True"),
         fails=["render-steps-one-entry-each"]),
    dict(name="only-the-first-parallel-call", cell="render-steps", source=render(CALLS='(message.get("tool_calls") or [])[:1]'),
         fails=["render-steps-every-call"]),
    dict(name="call-without-arguments", cell="render-steps", source=render(ARGUMENTS=""),
         fails=["render-steps-every-call", "render-steps-visible"]),
    dict(name="call-without-id", cell="render-steps", source=render(ID=""),
         fails=["render-steps-every-call"]),
    dict(name="result-names-no-tool", cell="render-steps", source=render(TOOL="message.get('name')"),
         fails=["render-steps-results-in-full", "render-steps-failures-marked", "render-steps-success-not-failed"]),
    dict(name="results-clipped", cell="render-steps",
         source=render(RESULT='lines += ["    " + line for line in text.splitlines()[:10]]'),
         fails=["render-steps-results-in-full"]),
    dict(name="results-not-indented", cell="render-steps", source=render(RESULT="lines += text.splitlines()"),
         fails=["render-steps-results-in-full"]),
    dict(name="tool-named-by-a-later-call", cell="render-steps",
         source=render(NAMES='{call["id"]: call["function"]["name"] for m in messages for call in m.get("tool_calls") or []}',
                       NOTE="pass"),
         fails=["render-steps-results-in-full"]),
    dict(name="result-lines-stripped", cell="render-steps",
         source=render(RESULT='lines += ["    " + line.strip() for line in text.splitlines() if line.strip()]'),
         fails=["render-steps-results-in-full"]),
    dict(name="long-results-cut", cell="render-steps",
         source=render(RESULT='lines += ["    " + line for line in text[:1500].splitlines()]'),
         fails=["render-steps-results-in-full"]),
    dict(name="text-later-lines-not-indented", cell="render-steps",
         source=render(REST="lines[-1] = f\"{lap} {message['role']}: {text}\""),
         fails=["render-steps-laps-and-roles"]),
    dict(name="entries-grouped-by-kind", cell="render-steps", source='''
def render_steps(messages):
    tool_names = {}
    texts, calls, results = [], [], []
    for message in messages:
        lap = f"[lap {message.get('step', '?')}]"
        text = (message.get("content") or "").strip()
        if message["role"] == "tool":
            call_id = message["tool_call_id"]
            how = ctxlab.summarising.failure_of(text)
            status = f"FAILED: {how}" if how else "returned:"
            results.append(f"{lap} tool {tool_names.get(call_id, 'unknown_tool')} (id {call_id}) {status}")
            results += ["    " + line for line in text.splitlines()]
            continue
        if text:
            first, *rest = text.splitlines()
            texts.append(f"{lap} {message['role']}: {first}")
            texts += ["    " + line for line in rest]
        for call in message.get("tool_calls") or []:
            function = call["function"]
            tool_names[call["id"]] = function["name"]
            calls.append(f"{lap} {message['role']} called {function['name']} {function['arguments']} (id {call['id']})")
    return "\\n".join(texts + calls + results)
''', fails=["render-steps-one-entry-each"]),
    dict(name="failed-without-how", cell="render-steps", source=render(STATUS='"FAILED" if how else "returned:"'),
         fails=["render-steps-failures-marked"]),
    dict(name="error-key-means-failed", cell="render-steps",
         source=render(STATUS='f"FAILED: {how}" if \'"error"\' in text else "returned:"'),
         fails=["render-steps-success-not-failed"]),
    dict(name="failed-result-body-dropped", cell="render-steps",
         source=render(RESULT='lines += [] if how else ["    " + line for line in text.splitlines()]'),
         fails=["render-steps-failures-marked"]),
    # compaction_prompt
    dict(name="prompt-omits-failures", cell="compaction-prompt", source=prompt(FAILURES='""'),
         fails=["compaction-prompt-visible", "compaction-prompt-asks-for-failures"]),
    dict(name="failures-without-how", cell="compaction-prompt",
         source=prompt(FAILURES='"FAILURES: every tool call that failed.\\n"'),
         fails=["compaction-prompt-asks-for-failures"]),
    dict(name="facts-without-sources", cell="compaction-prompt", source=prompt(FACTS='"FACTS: every fact established.\\n"'),
         fails=["compaction-prompt-facts-with-sources"]),
    dict(name="decisions-without-reasons", cell="compaction-prompt",
         source=prompt(DECISIONS='"DECISIONS: every decision the agent made.\\n"'),
         fails=["compaction-prompt-decisions-with-reasons"]),
    dict(name="prompt-omits-open-questions", cell="compaction-prompt", source=prompt(QUESTIONS='""'),
         fails=["compaction-prompt-visible"]),
    dict(name="asks-for-prose", cell="compaction-prompt",
         source=prompt(BULLETS='"Write a clear, well-organised account of these steps, with these parts:\\n"'),
         fails=["compaction-prompt-terse-bullets"]),
    dict(name="steps-heading-missing", cell="compaction-prompt", source=prompt(STEPS='f"STEPS:\\n{steps_text}"'),
         fails=["compaction-prompt-visible", "compaction-prompt-rolls-up-the-prior"]),
    dict(name="previous-summary-block-always", cell="compaction-prompt", source=prompt(HAS_PRIOR="True"),
         fails=["compaction-prompt-visible"]),
    dict(name="prior-after-the-steps", cell="compaction-prompt", source=prompt(ORDER="[parts[0], *parts[2:], *parts[1:2]]"),
         fails=["compaction-prompt-rolls-up-the-prior"]),
    dict(name="prior-on-the-heading-line", cell="compaction-prompt",
         source=prompt(PRIOR_BLOCK='f"PREVIOUS SUMMARY: {prior_summary}\\nFold the new steps into it and return ONE updated '
                       'summary.\\nEND OF PREVIOUS SUMMARY"'),
         fails=["compaction-prompt-rolls-up-the-prior"]),
    dict(name="prior-without-end-marker", cell="compaction-prompt",
         source=prompt(PRIOR_BLOCK='f"PREVIOUS SUMMARY: fold the new steps into it and return ONE updated summary.\\n{prior_summary}"'),
         fails=["compaction-prompt-rolls-up-the-prior"]),
    dict(name="facts-with-a-separate-tools-list", cell="compaction-prompt",
         source=prompt(FACTS='"FACTS: the key facts learned.\\n"\n        "TOOLS USED: the names of the tools that were called.\\n"'),
         fails=["compaction-prompt-facts-with-sources"]),
    dict(name="decisions-no-need-to-say-why", cell="compaction-prompt",
         source=prompt(DECISIONS='"DECISIONS: what was decided; no need to say why.\\n"'),
         fails=["compaction-prompt-visible"]),
    dict(name="tells-it-not-to-list-open-questions", cell="compaction-prompt",
         source=prompt(QUESTIONS='"Do not list open questions."'),
         fails=["compaction-prompt-visible"]),
    dict(name="no-instructions-with-a-prior", cell="compaction-prompt",
         source=prompt(ORDER="parts[1:] if prior_summary else parts"),
         fails=["compaction-prompt-rolls-up-the-prior"]),
    dict(name="prior-line-asks-for-a-new-one", cell="compaction-prompt",
         source=prompt(PRIOR_BLOCK='"PREVIOUS SUMMARY: already written, do not repeat it; write a new one for the new steps '
                       'only.\\n" f"{prior_summary}\\nEND OF PREVIOUS SUMMARY"'),
         fails=["compaction-prompt-asks-for-one-summary"]),
    dict(name="no-roll-up-instruction", cell="compaction-prompt",
         source=prompt(PRIOR_BLOCK='f"PREVIOUS SUMMARY:\\n{prior_summary}\\nEND OF PREVIOUS SUMMARY"'),
         fails=["compaction-prompt-asks-for-one-summary"]),
    dict(name="empty-prior-gives-a-block", cell="compaction-prompt", source=prompt(HAS_PRIOR="prior_summary is not None"),
         fails=["compaction-prompt-empty-prior"]),
    # compact
    dict(name="non-zero-temperature", cell="compact-summaries", source=compact(TEMPERATURE="temperature=0.7,"),
         fails=["compact-temperature-zero"]),
    dict(name="temperature-left-to-the-server", cell="compact-summaries", source=compact(TEMPERATURE=""),
         fails=["compact-temperature-zero"]),
    dict(name="forgets-the-prior-summary", cell="compact-summaries", source=compact(PRIOR="None"),
         fails=["compact-folds-the-prior"]),
    dict(name="prompt-as-system-message", cell="compact-summaries",
         source=compact(MESSAGES='[{"role": "system", "content": prompt}]'),
         fails=["compact-one-user-message"]),
    dict(name="extra-system-message", cell="compact-summaries",
         source=compact(MESSAGES='[{"role": "system", "content": "You summarise agent steps."}, {"role": "user", "content": prompt}]'),
         fails=["compact-one-user-message"]),
    dict(name="steps-as-json-not-rendered", cell="compact-summaries", source=compact(STEPS="json.dumps(dropped)"),
         fails=["compact-one-user-message", "compact-folds-the-prior"]),
    dict(name="compact-ignores-the-given-client", cell="compact-summaries", source=compact(CLIENT="ctxlab.get_client()"),
         fails=["compact-visible"]),
    dict(name="ignores-the-model-argument", cell="compact-summaries", source=compact(MODEL="ctxlab.llm.summary_model()"),
         fails=["compact-model"]),
    dict(name="hard-coded-default-model", cell="compact-summaries", source=compact(MODEL='model or "gpt-4o"'),
         fails=["compact-model"]),
    # ctxlab's own default: right wherever CTXLAB_SUMMARY_MODEL is unset, so the grader sets it.
    dict(name="hard-coded-lessons-default-model", cell="compact-summaries", source=compact(MODEL='model or "gpt-4o-mini"'),
         fails=["compact-model"]),
    dict(name="caps-the-reply-length", cell="compact-summaries",
         source=compact(TEMPERATURE="temperature=0,\n        max_tokens=200,"),
         fails=["compact-one-user-message"]),
    dict(name="nothing-dropped-strips-the-prior", cell="compact-summaries",
         source=compact(EMPTY='if not dropped:\n        return "" if prior_summary is None else prior_summary.strip()'),
         fails=["compact-nothing-dropped"]),
    dict(name="client-error-returns-the-prior", cell="compact-summaries", source='''
def compact(client, dropped, prior_summary=None, *, model=None):
    if not dropped:
        return prior_summary or ""
    prompt = ctxlab.summarising.compaction_prompt(ctxlab.summarising.render_steps(dropped), prior_summary)
    try:
        reply = client.chat.completions.create(model=model or ctxlab.llm.summary_model(),
                                               messages=[{"role": "user", "content": prompt}], temperature=0)
    except Exception:
        return prior_summary or ""
    return reply.choices[0].message.content.strip()
''', fails=["compact-nothing-dropped"]),
    dict(name="reply-not-stripped", cell="compact-summaries", source=compact(REPLY="reply.choices[0].message.content"),
         fails=["compact-reply-stripped"]),
    dict(name="calls-with-nothing-dropped", cell="compact-summaries", source=compact(EMPTY="pass"),
         fails=["compact-nothing-dropped"]),
    dict(name="none-when-nothing-dropped", cell="compact-summaries",
         source=compact(EMPTY="if not dropped:\n        return prior_summary"),
         fails=["compact-nothing-dropped"]),
    dict(name="nothing-dropped-loses-the-prior", cell="compact-summaries",
         source=compact(EMPTY='if not dropped:\n        return ""'),
         fails=["compact-nothing-dropped"]),
    # trim_and_summarise
    dict(name="stacks-summaries", cell="trim-and-summarise",
         source=tas(TAKE_OUT="old = []\n    rest = list(messages)  # earlier summaries stay where they are",
                    FITS="tokens(messages) <= allowance"),
         fails=["tas-exactly-one-summary", "tas-rolls-up-the-prior"]),
    dict(name="summary-not-counted-in-the-budget", cell="trim-and-summarise", source=tas(ROOM="allowance", CHECK=""),
         fails=["tas-summary-counted"]),
    dict(name="never-checks-the-total", cell="trim-and-summarise", source=tas(CHECK=""),
         fails=["tas-summary-too-big-raises"]),
    dict(name="drops-the-old-summary-unread", cell="trim-and-summarise", source=tas(PRIOR="None"),
         fails=["tas-rolls-up-the-prior"]),
    dict(name="keeps-only-the-first-summary", cell="trim-and-summarise",
         source=tas(PRIOR="ctxlab.summarising.summary_text(old[0]) if old else None"),
         fails=["tas-several-summaries-rolled-into-one"]),
    dict(name="unchanged-with-two-summaries", cell="trim-and-summarise", source=tas(FITS="tokens(messages) <= allowance"),
         fails=["tas-several-summaries-rolled-into-one"]),
    dict(name="exact-fit-refused", cell="trim-and-summarise",
         source=tas(CHECK="if tokens(kept) + ctxlab.count_message(message) >= allowance:\n"
                    '        raise ctxlab.BudgetError(f"the summary does not fit in the allowance of {allowance}; raise reserve")'),
         fails=["tas-summary-too-big-raises"]),
    dict(name="removes-summaries-from-the-input", cell="trim-and-summarise",
         source=tas(TAKE_OUT="old = [m for m in messages if ctxlab.is_summary(m)]\n"
                    "    for m in old:\n"
                    "        messages.remove(m)\n"
                    "    rest = messages"),
         fails=["tas-rolls-up-the-prior"]),
    dict(name="summary-step-ignores-old-summaries", cell="trim-and-summarise", source=tas(COVERED="dropped"),
         fails=["tas-several-summaries-rolled-into-one"]),
    dict(name="summary-after-the-last-pin", cell="trim-and-summarise",
         source=tas(HEAD="pins = ctxlab.trimming.pinned_indices(kept)\n"
                    "    last = max(pins) if pins else -1\n"
                    "    head = next((stop for start, stop in ctxlab.trimming.turn_group_spans(kept) if start <= last < stop), 0)"),
         fails=["tas-summary-placement"]),
    dict(name="strict-fit-check", cell="trim-and-summarise", source=tas(FITS="len(old) <= 1 and tokens(messages) < allowance"),
         fails=["tas-unchanged-when-it-fits"]),
    dict(name="summarises-even-when-it-fits", cell="trim-and-summarise", source=tas(FITS="False"),
         fails=["tas-unchanged-when-it-fits"]),
    dict(name="ignores-reserve", cell="trim-and-summarise", source=tas(ROOM="allowance - 1_000"),
         fails=["tas-reserve"]),
    dict(name="ignores-keep-recent", cell="trim-and-summarise", source=tas(KEEP_RECENT="1"),
         fails=["tas-keep-recent"]),
    dict(name="summarises-the-whole-history", cell="trim-and-summarise", source=tas(DROPPED="rest"),
         fails=["tas-summarises-what-was-dropped"]),
    dict(name="summarises-with-another-client", cell="trim-and-summarise", source=tas(CLIENT="ctxlab.get_client()"),
         fails=["tas-summarises-what-was-dropped"]),
    dict(name="summary-without-step", cell="trim-and-summarise", source=tas(STEP="None"),
         fails=["tas-summarises-what-was-dropped"]),
    dict(name="summary-step-of-the-oldest", cell="trim-and-summarise", source=tas(STEP="min(steps) if steps else None"),
         fails=["tas-summarises-what-was-dropped"]),
    dict(name="summary-right-after-the-system-prompt", cell="trim-and-summarise", source=tas(HEAD="head = 1"),
         fails=["tas-visible", "tas-summary-placement"]),
    dict(name="summary-at-a-fixed-index", cell="trim-and-summarise", source=tas(HEAD="head = 2"),
         fails=["tas-summary-placement"]),
    dict(name="summary-appended-at-the-end", cell="trim-and-summarise", source=tas(HEAD="head = len(kept)"),
         fails=["tas-visible", "tas-summary-placement"]),
    # compaction_due
    dict(name="threshold-must-be-passed", cell="compaction-due", source=due(COMPARE=">"),
         fails=["compaction-due-at-the-threshold"]),
    dict(name="always-seventy-percent", cell="compaction-due", source=due(LIMIT="0.7 * ceiling"),
         fails=["compaction-due-threshold-given"]),
    dict(name="compacts-only-when-full", cell="compaction-due", source=due(LIMIT="ceiling"),
         fails=["compaction-due-visible", "compaction-due-at-the-threshold", "compaction-due-threshold-given",
                "compaction-due-fraction-of-the-ceiling"]),
    dict(name="ceiling-of-ten-thousand", cell="compaction-due", source=due(LIMIT="threshold * 10_000"),
         fails=["compaction-due-fraction-of-the-ceiling"]),
    dict(name="ignores-the-phase-boundary", cell="compaction-due", source=due(BOUNDARY=""),
         fails=["compaction-due-phase-boundary"]),
    dict(name="threshold-as-a-percentage", cell="compaction-due", source=due(LIMIT="threshold / 100 * ceiling"),
         fails=["compaction-due-visible", "compaction-due-threshold-given"]),
    dict(name="threshold-rounded-down", cell="compaction-due", source=due(LIMIT="int(threshold * ceiling)"),
         fails=["compaction-due-at-the-threshold"]),
    # concept checks: every wrong option
    dict(name="thinks-a-failure-is-kept-as-a-fact", cell="q1-answer", source='q1 = "a"', fails=["q1-check"]),
    dict(name="thinks-the-summary-grows", cell="q1-answer", source='q1 = "b"', fails=["q1-check"]),
    dict(name="thinks-the-summariser-refuses", cell="q1-answer", source='q1 = "d"', fails=["q1-check"]),
    dict(name="thinks-they-are-one-thing", cell="q4-answer", source='q4 = "a"', fails=["q4-check"]),
    dict(name="thinks-trimming-is-lossless", cell="q4-answer", source='q4 = "b"', fails=["q4-check"]),
    dict(name="thinks-compaction-keeps-the-oldest", cell="q4-answer", source='q4 = "c"', fails=["q4-check"]),
    dict(name="blames-attention-first", cell="q5-answer", source='q5 = "a"', fails=["q5-check"]),
    dict(name="thinks-a-bigger-window-fixes-it", cell="q5-answer", source='q5 = "c"', fails=["q5-check"]),
    dict(name="thinks-temperature-zero-keeps-rules", cell="q5-answer", source='q5 = "d"', fails=["q5-check"]),
]

RULES = [
    # render_steps
    dict(rule="each entry starts with [lap N], N the message's step", test="render-steps-visible", wrong="role-not-named"),
    dict(rule='a message without a step is lap "?" (no "None", no KeyError)', test="render-steps-missing-step",
         wrong="lap-none-without-step"),
    dict(rule="the step is read with .get: a missing step does not raise", test="render-steps-missing-step",
         wrong="keyerror-without-step"),
    dict(rule="a text entry names who spoke: [lap N] ROLE: TEXT", test="render-steps-laps-and-roles", wrong="role-not-named"),
    dict(rule="system text is rendered too", test="render-steps-laps-and-roles", wrong="skips-system-messages"),
    dict(rule="texts are rendered in full, later lines indented", test="render-steps-laps-and-roles",
         wrong="text-first-line-only"),
    dict(rule="a message without text gets no text entry (one entry per text, call and result)",
         test="render-steps-one-entry-each", wrong="empty-text-entry-for-calls"),
    dict(rule="every call of a parallel group has its own entry", test="render-steps-every-call",
         wrong="only-the-first-parallel-call"),
    dict(rule="a call's entry shows its arguments", test="render-steps-every-call", wrong="call-without-arguments"),
    dict(rule="a call's entry ends with (id CALL_ID)", test="render-steps-every-call", wrong="call-without-id"),
    dict(rule="a result's entry names the tool of the call it answers", test="render-steps-results-in-full",
         wrong="result-names-no-tool"),
    dict(rule="a result follows in full", test="render-steps-results-in-full", wrong="results-clipped"),
    dict(rule="a result's lines are indented by four spaces", test="render-steps-results-in-full",
         wrong="results-not-indented"),
    dict(rule="a result names the newest call with its id before it (call ids are reused across turns)",
         test="render-steps-results-in-full", wrong="tool-named-by-a-later-call"),
    dict(rule="a result's lines keep their own indentation after the four spaces", test="render-steps-results-in-full",
         wrong="result-lines-stripped"),
    dict(rule="a result follows in full however long (nothing cut at 1,500 characters)", test="render-steps-results-in-full",
         wrong="long-results-cut"),
    dict(rule="a text's later lines follow on their own lines, indented by four spaces", test="render-steps-laps-and-roles",
         wrong="text-later-lines-not-indented"),
    dict(rule="entries follow the order of the messages", test="render-steps-one-entry-each", wrong="entries-grouped-by-kind"),
    dict(rule="a failed result is marked FAILED: HOW, HOW from ctxlab.summarising.failure_of", test="render-steps-failures-marked",
         wrong="failed-without-how"),
    dict(rule="a failed result still follows in full", test="render-steps-failures-marked",
         wrong="failed-result-body-dropped"),
    dict(rule='a successful result is "returned:", even with "error": null', test="render-steps-success-not-failed",
         wrong="error-key-means-failed"),
    # compaction_prompt
    dict(rule="the prompt asks for the tools that failed", test="compaction-prompt-visible", wrong="prompt-omits-failures"),
    dict(rule="the prompt asks how each tool failed", test="compaction-prompt-asks-for-failures",
         wrong="failures-without-how"),
    dict(rule="the prompt asks for facts with their source tool", test="compaction-prompt-facts-with-sources",
         wrong="facts-without-sources"),
    dict(rule="the prompt asks for decisions with their reasons", test="compaction-prompt-decisions-with-reasons",
         wrong="decisions-without-reasons"),
    dict(rule="the prompt asks for open questions", test="compaction-prompt-visible", wrong="prompt-omits-open-questions"),
    dict(rule="the prompt asks for terse bullets", test="compaction-prompt-terse-bullets", wrong="asks-for-prose"),
    dict(rule='the prompt ends with "STEPS TO FOLD IN:" and the steps on the next line', test="compaction-prompt-visible",
         wrong="steps-heading-missing"),
    dict(rule="no PREVIOUS SUMMARY block without a previous summary", test="compaction-prompt-visible",
         wrong="previous-summary-block-always"),
    dict(rule="an empty previous summary is none: no block", test="compaction-prompt-empty-prior",
         wrong="empty-prior-gives-a-block"),
    dict(rule="the previous summary comes before the steps", test="compaction-prompt-rolls-up-the-prior",
         wrong="prior-after-the-steps"),
    dict(rule="the previous summary starts on the line after its heading", test="compaction-prompt-rolls-up-the-prior",
         wrong="prior-on-the-heading-line"),
    dict(rule='the previous summary is closed by "END OF PREVIOUS SUMMARY"', test="compaction-prompt-rolls-up-the-prior",
         wrong="prior-without-end-marker"),
    dict(rule="the FACTS: line itself asks for each fact's source (a separate list of tools does not)",
         test="compaction-prompt-facts-with-sources", wrong="facts-with-a-separate-tools-list"),
    dict(rule="each heading's line asks in positive words (no 'no', 'not', 'never', 'without')",
         test="compaction-prompt-visible", wrong="decisions-no-need-to-say-why"),
    dict(rule="open questions are asked for on an OPEN QUESTIONS: line, not refused", test="compaction-prompt-visible",
         wrong="tells-it-not-to-list-open-questions"),
    dict(rule="the instructions come first with a previous summary too", test="compaction-prompt-rolls-up-the-prior",
         wrong="no-instructions-with-a-prior"),
    dict(rule="the PREVIOUS SUMMARY line never asks for a new, second or separate summary",
         test="compaction-prompt-asks-for-one-summary", wrong="prior-line-asks-for-a-new-one"),
    dict(rule="the PREVIOUS SUMMARY line asks to fold the steps in and return ONE summary",
         test="compaction-prompt-asks-for-one-summary", wrong="no-roll-up-instruction"),
    # compact
    dict(rule="the request asks for temperature 0", test="compact-temperature-zero", wrong="non-zero-temperature"),
    dict(rule="the temperature is given, not left to the server's default", test="compact-temperature-zero",
         wrong="temperature-left-to-the-server"),
    dict(rule="the request is one message", test="compact-one-user-message", wrong="extra-system-message"),
    dict(rule="that message is a user message", test="compact-one-user-message", wrong="prompt-as-system-message"),
    dict(rule="the prompt holds the steps rendered with ctxlab.summarising.render_steps", test="compact-one-user-message",
         wrong="steps-as-json-not-rendered"),
    dict(rule="the previous summary is folded into the request", test="compact-folds-the-prior",
         wrong="forgets-the-prior-summary"),
    dict(rule="the request goes through the client given", test="compact-visible", wrong="compact-ignores-the-given-client"),
    dict(rule="the model given is sent", test="compact-model", wrong="ignores-the-model-argument"),
    dict(rule="without a model, ctxlab.llm.summary_model() is sent", test="compact-model", wrong="hard-coded-default-model"),
    dict(rule="ctxlab.llm.summary_model() honours CTXLAB_SUMMARY_MODEL: the default's name is not the model",
         test="compact-model", wrong="hard-coded-lessons-default-model"),
    dict(rule="the reply's text is returned stripped", test="compact-reply-stripped", wrong="reply-not-stripped"),
    dict(rule="the request sets no max_tokens: the reply is not cut", test="compact-one-user-message",
         wrong="caps-the-reply-length"),
    dict(rule="nothing dropped: the previous summary comes back as it is, not stripped", test="compact-nothing-dropped",
         wrong="nothing-dropped-strips-the-prior"),
    dict(rule="an error from the client goes through; the previous summary is not returned instead",
         test="compact-nothing-dropped", wrong="client-error-returns-the-prior"),
    dict(rule="nothing dropped: no call", test="compact-nothing-dropped", wrong="calls-with-nothing-dropped"),
    dict(rule='nothing dropped and no previous summary: "" (not None)', test="compact-nothing-dropped",
         wrong="none-when-nothing-dropped"),
    dict(rule="nothing dropped: the previous summary comes back", test="compact-nothing-dropped",
         wrong="nothing-dropped-loses-the-prior"),
    # trim_and_summarise
    dict(rule="summary messages are taken out and rolled up, never stacked", test="tas-exactly-one-summary",
         wrong="stacks-summaries"),
    dict(rule="the rest is fitted into allowance - reserve: the summary is counted", test="tas-summary-counted",
         wrong="summary-not-counted-in-the-budget"),
    dict(rule="a result over the allowance raises ctxlab.BudgetError", test="tas-summary-too-big-raises",
         wrong="never-checks-the-total"),
    dict(rule="the old summary's text is the prior summary", test="tas-rolls-up-the-prior",
         wrong="drops-the-old-summary-unread"),
    dict(rule="several summaries: their texts joined are the prior summary", test="tas-several-summaries-rolled-into-one",
         wrong="keeps-only-the-first-summary"),
    dict(rule="several summaries are rolled into one even when everything fits",
         test="tas-several-summaries-rolled-into-one", wrong="unchanged-with-two-summaries"),
    dict(rule="a result of exactly the allowance is not refused (>, not >=)", test="tas-summary-too-big-raises",
         wrong="exact-fit-refused"),
    dict(rule="the messages given are left unchanged", test="tas-rolls-up-the-prior", wrong="removes-summaries-from-the-input"),
    dict(rule="the summary's step counts the old summaries it rolls up", test="tas-several-summaries-rolled-into-one",
         wrong="summary-step-ignores-old-summaries"),
    dict(rule="the summary goes after the system prompt and the task even when a later message is pinned",
         test="tas-summary-placement", wrong="summary-after-the-last-pin"),
    dict(rule="a history that fits exactly (tokens == allowance) comes back unchanged", test="tas-unchanged-when-it-fits",
         wrong="strict-fit-check"),
    dict(rule="a history that fits comes back unchanged, without a call", test="tas-unchanged-when-it-fits",
         wrong="summarises-even-when-it-fits"),
    dict(rule="the reserve given is used", test="tas-reserve", wrong="ignores-reserve"),
    dict(rule="keep_recent is passed on to ctxlab.fit", test="tas-keep-recent", wrong="ignores-keep-recent"),
    dict(rule="the summary is made from what the fit dropped", test="tas-summarises-what-was-dropped",
         wrong="summarises-the-whole-history"),
    dict(rule="the summary is made by the client given", test="tas-summarises-what-was-dropped",
         wrong="summarises-with-another-client"),
    dict(rule="the summary message has a step", test="tas-summarises-what-was-dropped", wrong="summary-without-step"),
    dict(rule="its step is the largest step it summarises", test="tas-summarises-what-was-dropped",
         wrong="summary-step-of-the-oldest"),
    dict(rule="the summary goes after the system prompt AND the task", test="tas-visible",
         wrong="summary-right-after-the-system-prompt"),
    dict(rule="the summary goes after the leading system messages, however many, and the first user message",
         test="tas-summary-placement", wrong="summary-at-a-fixed-index"),
    dict(rule="the summary goes near the start, not at the end", test="tas-visible", wrong="summary-appended-at-the-end"),
    # compaction_due
    dict(rule="reaching the threshold exactly counts (>=)", test="compaction-due-at-the-threshold",
         wrong="threshold-must-be-passed"),
    dict(rule="the threshold given is used", test="compaction-due-threshold-given", wrong="always-seventy-percent"),
    dict(rule="compaction is due at the threshold, before the window is full", test="compaction-due-at-the-threshold",
         wrong="compacts-only-when-full"),
    dict(rule="the threshold is a fraction of the ceiling given", test="compaction-due-fraction-of-the-ceiling",
         wrong="ceiling-of-ten-thousand"),
    dict(rule="a phase boundary compacts whatever the tokens", test="compaction-due-phase-boundary",
         wrong="ignores-the-phase-boundary"),
    dict(rule="the threshold is a fraction, not a percentage", test="compaction-due-visible",
         wrong="threshold-as-a-percentage"),
    dict(rule="the threshold is compared as it is, not rounded down", test="compaction-due-at-the-threshold",
         wrong="threshold-rounded-down"),
    # concept checks
    dict(rule="Q1: (a) a failure is not kept unless the prompt asks for it", test="q1-check",
         wrong="thinks-a-failure-is-kept-as-a-fact"),
    dict(rule="Q1: (b) leaving a request out does not make the summary longer", test="q1-check",
         wrong="thinks-the-summary-grows"),
    dict(rule="Q1: (d) a summariser does not refuse over a missing line", test="q1-check",
         wrong="thinks-the-summariser-refuses"),
    dict(rule="Q4: (a) the three differ in what they lose and what they cost", test="q4-check",
         wrong="thinks-they-are-one-thing"),
    dict(rule="Q4: (b) trimming loses every unpinned group it drops", test="q4-check", wrong="thinks-trimming-is-lossless"),
    dict(rule="Q4: (c) compaction keeps the newest turns verbatim", test="q4-check",
         wrong="thinks-compaction-keeps-the-oldest"),
    dict(rule="Q5: (a) after compactions the rule is likelier gone than ignored", test="q5-check",
         wrong="blames-attention-first"),
    dict(rule="Q5: (c) a bigger window only delays the compaction that loses the rule", test="q5-check",
         wrong="thinks-a-bigger-window-fixes-it"),
    dict(rule="Q5: (d) temperature 0 picks the likeliest wording, not a more faithful summary", test="q5-check",
         wrong="thinks-temperature-zero-keeps-rules"),
]

# Concept checks: the wrong options of the questions listed above with fewer (each fails its check).
WRONG_ANSWERS += [
    dict(name="stacks-the-summaries", cell="q2-answer", source='q2 = "a"', fails=["q2-check"]),
    dict(name="thinks-rolling-up-means-every-lap", cell="q2-answer", source='q2 = "c"', fails=["q2-check"]),
    dict(name="keeps-raw-steps-beside-the-summary", cell="q2-answer", source='q2 = "d"', fails=["q2-check"]),
    dict(name="thinks-summaries-always-help", cell="q3-answer", source='q3 = "a"', fails=["q3-check"]),
    dict(name="thinks-summaries-are-free", cell="q3-answer", source='q3 = "b"', fails=["q3-check"]),
    dict(name="thinks-summaries-need-parallel-calls", cell="q3-answer", source='q3 = "d"', fails=["q3-check"]),
]
RULES += [
    dict(rule="Q2: roll up: one current summary that folds in the previous one", test="q2-check", wrong="stacks-the-summaries"),
    dict(rule="Q2: roll up: one current summary that folds in the previous one", test="q2-check", wrong="thinks-rolling-up-means-every-lap"),
    dict(rule="Q2: roll up: one current summary that folds in the previous one", test="q2-check", wrong="keeps-raw-steps-beside-the-summary"),
    dict(rule="Q3: a short run that fits needs no summary", test="q3-check", wrong="thinks-summaries-always-help"),
    dict(rule="Q3: a short run that fits needs no summary", test="q3-check", wrong="thinks-summaries-are-free"),
    dict(rule="Q3: a short run that fits needs no summary", test="q3-check", wrong="thinks-summaries-need-parallel-calls"),
]

WRONG_ANSWERS += [
    dict(name='own-budgeterror-class', cell='trim-and-summarise', source=r'''
class BudgetError(ValueError):
    pass


def trim_and_summarise(messages, allowance, *, client, reserve=1_000, keep_recent=1):
    old = [m for m in messages if ctxlab.is_summary(m)]
    rest = [m for m in messages if not ctxlab.is_summary(m)]
    if len(old) <= 1 and tokens(messages) <= allowance:
        return list(messages)
    prior = "\n".join(ctxlab.summarising.summary_text(m) for m in old) or None
    kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)
    summary = ctxlab.compact(client, dropped, prior)
    steps = [m["step"] for m in old + dropped if "step" in m]
    message = ctxlab.summary_message(summary, step=max(steps) if steps else None)
    if tokens(kept) + ctxlab.count_message(message) > allowance:
        raise BudgetError(f"summary {ctxlab.count_message(message)} tokens, {allowance - tokens(kept)} left of {allowance}")
    head = 0
    while head < len(kept) and kept[head]["role"] in ("system", "developer"):
        head += 1
    if head < len(kept) and kept[head]["role"] == "user":
        head += 1
    return kept[:head] + [message] + kept[head:]
''', fails=['tas-summary-too-big-raises']),
]
RULES += [
    dict(rule="the refusal is ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name", test='tas-summary-too-big-raises', wrong='own-budgeterror-class'),
]


# Answers that hand the exercise to ctxlab's own code by a way around the switch-off: each must
# lose the named tests' points, whatever the error (tests/test_lessons.py).
ATTACKS = [
]
ATTACKS += [
    dict(name='compact-copies-the-code-object', cell='compact-summaries', source='''
import types
_c = ctxlab.compact
compact = types.FunctionType(_c.__code__, _c.__globals__, "compact", _c.__defaults__, _c.__closure__)
compact.__kwdefaults__ = dict(_c.__kwdefaults__ or {})
''', fails=['compact-visible', 'compact-temperature-zero']),
]
ATTACKS += [
    dict(name='render-steps-copies-the-code-object', cell='render-steps', source='''
import types
render_steps = types.FunctionType(ctxlab.summarising.render_steps.__code__, ctxlab.summarising.render_steps.__globals__, "render_steps")
''', fails=['render-steps-visible', 'render-steps-laps-and-roles']),
]

WRONG_ANSWERS += [
    dict(name='failures-line-names-no-tool', cell='compaction-prompt', source=r'''
def compaction_prompt(steps_text, prior_summary=None):
    """The text of the request to the summariser.

    Layout:
      INSTRUCTIONS, always first: ask for terse bullet points under four headings. Each heading,
      in capitals, starts a line of its own, and the rest of that line says what to write under
      it, in positive words (no "no", "not", "never" or "without" on these four lines):
        FACTS: ...          each fact with its source (the tool it came from)
        DECISIONS: ...      each decision with its reason
        FAILURES: ...       every tool call that failed, and how it failed
        OPEN QUESTIONS: ... what is still unknown
      (other lines and headings may come too, before, between or after them)
      (only when prior_summary is given and not empty:)
      "PREVIOUS SUMMARY:" + on the same line, an instruction to fold the steps into it and
      return ONE summary (an updated one, never a second or separate summary of the new steps)
      the previous summary itself, from the next line on
      "END OF PREVIOUS SUMMARY"
      "STEPS TO FOLD IN:" and, from the next line on, steps_text (the prompt ends with it)

    >>> compaction_prompt("[lap 1] assistant: Looking.").endswith("STEPS TO FOLD IN:\\n[lap 1] assistant: Looking.")
    True
    """
    instructions = (
        "These agent steps are being removed from the agent's context; your summary is all it keeps.\n"
        "Write terse bullet points, one line each, under these headings:\n"
        "FACTS: every fact established, tagged with the tool (its source) and the lap.\n"
        "DECISIONS: every decision the agent made, and its reason.\n"
        "FAILURES: every error message, in its own words.\n"
        "USER INSTRUCTIONS: every instruction or constraint from the user, word for word.\n"
        "OPEN QUESTIONS: what is still unknown or still to do.\n"
        'Write "- none" under a heading with nothing to report.'
    )
    parts = [instructions]
    if prior_summary:
        parts.append(
            "PREVIOUS SUMMARY: fold the new steps into it, keep every line that is still true, "
            "and return ONE updated summary under the same headings.\n"
            f"{prior_summary}\nEND OF PREVIOUS SUMMARY"
        )
    parts.append(f"STEPS TO FOLD IN:\n{steps_text}")
    return "\n\n".join(parts)
''', fails=['compaction-prompt-asks-for-failures']),
    dict(name='prose-rather-than-bullets', cell='compaction-prompt', source=r'''
def compaction_prompt(steps_text, prior_summary=None):
    """The text of the request to the summariser.

    Layout:
      INSTRUCTIONS, always first: ask for terse bullet points under four headings. Each heading,
      in capitals, starts a line of its own, and the rest of that line says what to write under
      it, in positive words (no "no", "not", "never" or "without" on these four lines):
        FACTS: ...          each fact with its source (the tool it came from)
        DECISIONS: ...      each decision with its reason
        FAILURES: ...       every tool call that failed, and how it failed
        OPEN QUESTIONS: ... what is still unknown
      (other lines and headings may come too, before, between or after them)
      (only when prior_summary is given and not empty:)
      "PREVIOUS SUMMARY:" + on the same line, an instruction to fold the steps into it and
      return ONE summary (an updated one, never a second or separate summary of the new steps)
      the previous summary itself, from the next line on
      "END OF PREVIOUS SUMMARY"
      "STEPS TO FOLD IN:" and, from the next line on, steps_text (the prompt ends with it)

    >>> compaction_prompt("[lap 1] assistant: Looking.").endswith("STEPS TO FOLD IN:\\n[lap 1] assistant: Looking.")
    True
    """
    instructions = (
        "These agent steps are being removed from the agent's context; your summary is all it keeps.\n"
        "Write short paragraphs of prose rather than bullet points, under these headings:\n"
        "FACTS: every fact established, tagged with the tool (its source) and the lap.\n"
        "DECISIONS: every decision the agent made, and its reason.\n"
        "FAILURES: every tool call that failed, with its arguments and how it failed, in the error's own words.\n"
        "USER INSTRUCTIONS: every instruction or constraint from the user, word for word.\n"
        "OPEN QUESTIONS: what is still unknown or still to do.\n"
        'Write "- none" under a heading with nothing to report.'
    )
    parts = [instructions]
    if prior_summary:
        parts.append(
            "PREVIOUS SUMMARY: fold the new steps into it, keep every line that is still true, "
            "and return ONE updated summary under the same headings.\n"
            f"{prior_summary}\nEND OF PREVIOUS SUMMARY"
        )
    parts.append(f"STEPS TO FOLD IN:\n{steps_text}")
    return "\n\n".join(parts)
''', fails=['compaction-prompt-terse-bullets']),
    dict(name='stop-sequence-in-the-request', cell='compact-summaries', source=r'''
def compact(client, dropped, prior_summary=None, *, model=None):
    """Fold the `dropped` messages and the `prior_summary` into ONE summary; return its text.

    Send one request through `client`: client.chat.completions.create(model=..., messages=[one
    user message whose content is ctxlab.summarising.compaction_prompt(ctxlab.summarising.render_steps(dropped),
    prior_summary)], temperature=0), with model = `model`, or ctxlab.llm.summary_model() when it is
    None, and nothing else (no max_tokens: a summary cut off mid-line loses its last headings).
    Return the reply's text (reply.choices[0].message.content), stripped. With nothing
    dropped, return prior_summary as it is (or "" when there is none) without calling the
    client. An error from the client goes through: never return the previous summary in its
    place, since the dropped steps would then be lost without a word.

    >>> compact(ctxlab.course.ScriptedClient(["FACTS:\\n- disk full"]), [{"role": "user", "content": "hi", "step": 1}])
    'FACTS:\\n- disk full'
    """
    if not dropped:
        return prior_summary or ""
    prompt = ctxlab.summarising.compaction_prompt(ctxlab.summarising.render_steps(dropped), prior_summary)
    reply = client.chat.completions.create(
        model=model or ctxlab.llm.summary_model(),
        messages=[{"role": "user", "content": prompt}],
        temperature=0,
        stop=["\n\n"],
    )
    return reply.choices[0].message.content.strip()
''', fails=['compact-one-user-message']),
    dict(name='fit-check-leaves-out-the-old-summary', cell='trim-and-summarise', source=r'''
def trim_and_summarise(messages, allowance, *, client, reserve=1_000, keep_recent=1):
    """Fit `messages` into `allowance` tokens, replacing what is dropped with ONE summary.

    Tokens are counted as sum(ctxlab.count_message(m) for m in ...), like `tokens` above.
    - Summary messages in `messages` (ctxlab.is_summary) are taken out; their text
      (ctxlab.summarising.summary_text; joined with newlines if there are several) is the prior summary.
    - If all of `messages` fits (tokens <= allowance) and it holds at most one summary,
      return it unchanged, without calling the client.
    - Otherwise kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)
      (a ctxlab.BudgetError from it goes through), then
      summary = ctxlab.compact(client, dropped, prior), and the summary message is
      ctxlab.summary_message(summary, step=the largest step among what it summarises).
    - Return kept with that one message inserted after the leading system message(s) and the
      first user message (even when a message further on is pinned). Raise ctxlab.BudgetError
      if the result would exceed `allowance` (a result of exactly `allowance` fits).
    - `messages` itself is never changed: build new lists.

    >>> history = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    >>> trim_and_summarise(history, 100, client=ctxlab.course.ScriptedClient([])) == history
    True
    """
    old = [m for m in messages if ctxlab.is_summary(m)]
    rest = [m for m in messages if not ctxlab.is_summary(m)]
    if len(old) <= 1 and tokens(rest) <= allowance:
        return list(messages)
    prior = "\n".join(ctxlab.summarising.summary_text(m) for m in old) or None

    kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)
    summary = ctxlab.compact(client, dropped, prior)
    steps = [m["step"] for m in old + dropped if "step" in m]
    message = ctxlab.summary_message(summary, step=max(steps) if steps else None)
    if tokens(kept) + ctxlab.count_message(message) > allowance:
        raise ctxlab.BudgetError(
            f"the summary takes {ctxlab.count_message(message)} tokens, more than the "
            f"{allowance - tokens(kept)} left in the allowance of {allowance}; raise reserve"
        )

    head = 0
    while head < len(kept) and kept[head]["role"] in ("system", "developer"):
        head += 1
    if head < len(kept) and kept[head]["role"] == "user":
        head += 1
    return kept[:head] + [message] + kept[head:]
''', fails=['tas-summary-counted']),
    dict(name='counts-only-the-summary-text', cell='trim-and-summarise', source=r'''
def trim_and_summarise(messages, allowance, *, client, reserve=1_000, keep_recent=1):
    """Fit `messages` into `allowance` tokens, replacing what is dropped with ONE summary.

    Tokens are counted as sum(ctxlab.count_message(m) for m in ...), like `tokens` above.
    - Summary messages in `messages` (ctxlab.is_summary) are taken out; their text
      (ctxlab.summarising.summary_text; joined with newlines if there are several) is the prior summary.
    - If all of `messages` fits (tokens <= allowance) and it holds at most one summary,
      return it unchanged, without calling the client.
    - Otherwise kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)
      (a ctxlab.BudgetError from it goes through), then
      summary = ctxlab.compact(client, dropped, prior), and the summary message is
      ctxlab.summary_message(summary, step=the largest step among what it summarises).
    - Return kept with that one message inserted after the leading system message(s) and the
      first user message (even when a message further on is pinned). Raise ctxlab.BudgetError
      if the result would exceed `allowance` (a result of exactly `allowance` fits).
    - `messages` itself is never changed: build new lists.

    >>> history = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    >>> trim_and_summarise(history, 100, client=ctxlab.course.ScriptedClient([])) == history
    True
    """
    old = [m for m in messages if ctxlab.is_summary(m)]
    rest = [m for m in messages if not ctxlab.is_summary(m)]
    if len(old) <= 1 and tokens(messages) <= allowance:
        return list(messages)
    prior = "\n".join(ctxlab.summarising.summary_text(m) for m in old) or None

    kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)
    summary = ctxlab.compact(client, dropped, prior)
    steps = [m["step"] for m in old + dropped if "step" in m]
    message = ctxlab.summary_message(summary, step=max(steps) if steps else None)
    if tokens(kept) + ctxlab.count_text(summary) > allowance:
        raise ctxlab.BudgetError(
            f"the summary takes {ctxlab.count_message(message)} tokens, more than the "
            f"{allowance - tokens(kept)} left in the allowance of {allowance}; raise reserve"
        )

    head = 0
    while head < len(kept) and kept[head]["role"] in ("system", "developer"):
        head += 1
    if head < len(kept) and kept[head]["role"] == "user":
        head += 1
    return kept[:head] + [message] + kept[head:]
''', fails=['tas-summary-too-big-raises']),
    dict(name='threshold-rounded-to-the-nearest-token', cell='compaction-due', source='''
def compaction_due(tokens, ceiling, *, threshold=0.7, boundary=False):
    """Whether the agent should compact now, checked after each lap.

    Return True at a phase boundary (`boundary` is True), whatever the tokens. Otherwise return
    True once `tokens` (what the prompt takes now) reaches `threshold` of `ceiling` (reaching it
    exactly counts), and False below it.
    `ceiling` is the working ceiling in tokens: a whole number above 0. `threshold` is a fraction
    of it, above 0 and at most 1 (0.7 means 70 %). Raise ValueError for any other ceiling or
    threshold, saying what is allowed (70 is a percentage, not a fraction: refuse it; 8000.5
    is not a whole number; NaN is not a fraction). Check them first, at a phase boundary too.

    >>> compaction_due(6_000, 10_000), compaction_due(7_500, 10_000)
    (False, True)
    """
    if isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling <= 0:
        raise ValueError(f"ceiling must be a whole number of tokens above 0, got {ceiling!r}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be a fraction above 0 and at most 1 (0.7 means 70 %), got {threshold!r}")
    return bool(boundary) or tokens >= round(threshold * ceiling)
''', fails=['compaction-due-at-the-threshold']),
]
RULES += [
    dict(rule='the FAILURES: line asks for the tool calls that failed, not only the errors', test='compaction-prompt-asks-for-failures', wrong='failures-line-names-no-tool'),
    dict(rule='the prompt asks for bullet points, not for prose instead of them', test='compaction-prompt-terse-bullets', wrong='prose-rather-than-bullets'),
    dict(rule='the request sets model, messages and temperature, and nothing else', test='compact-one-user-message', wrong='stop-sequence-in-the-request'),
    dict(rule='the history is returned unchanged only when all of it fits, its summary included', test='tas-summary-counted', wrong='fit-check-leaves-out-the-old-summary'),
    dict(rule='the summary is counted as a message (framing included) against the allowance', test='tas-summary-too-big-raises', wrong='counts-only-the-summary-text'),
    dict(rule='the threshold is threshold * ceiling itself, not rounded to a whole number', test='compaction-due-at-the-threshold', wrong='threshold-rounded-to-the-nearest-token'),
]

WRONG_ANSWERS += [
    dict(name='joins-summaries-with-spaces', cell='trim-and-summarise', source='''
def trim_and_summarise(messages, allowance, *, client, reserve=1_000, keep_recent=1):
    """Fit `messages` into `allowance` tokens, replacing what is dropped with ONE summary.

    Tokens are counted as sum(ctxlab.count_message(m) for m in ...), like `tokens` above.
    - Summary messages in `messages` (ctxlab.is_summary) are taken out; their text
      (ctxlab.summarising.summary_text; joined with newlines if there are several) is the prior summary.
    - If all of `messages` fits (tokens <= allowance) and it holds at most one summary,
      return it unchanged, without calling the client.
    - Otherwise kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)
      (a ctxlab.BudgetError from it goes through), then
      summary = ctxlab.compact(client, dropped, prior), and the summary message is
      ctxlab.summary_message(summary, step=the largest step among what it summarises).
    - Return kept with that one message inserted after the leading system message(s) and the
      first user message (even when a message further on is pinned). Raise ctxlab.BudgetError
      if the result would exceed `allowance` (a result of exactly `allowance` fits).
    - `messages` itself is never changed: build new lists.

    >>> history = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"}]
    >>> trim_and_summarise(history, 100, client=ctxlab.course.ScriptedClient([])) == history
    True
    """
    old = [m for m in messages if ctxlab.is_summary(m)]
    rest = [m for m in messages if not ctxlab.is_summary(m)]
    if len(old) <= 1 and tokens(messages) <= allowance:
        return list(messages)
    prior = " ".join(ctxlab.summarising.summary_text(m) for m in old) or None

    kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)
    summary = ctxlab.compact(client, dropped, prior)
    steps = [m["step"] for m in old + dropped if "step" in m]
    message = ctxlab.summary_message(summary, step=max(steps) if steps else None)
    if tokens(kept) + ctxlab.count_message(message) > allowance:
        raise ctxlab.BudgetError(
            f"the summary takes {ctxlab.count_message(message)} tokens, more than the "
            f"{allowance - tokens(kept)} left in the allowance of {allowance}; raise reserve"
        )

    head = 0
    while head < len(kept) and kept[head]["role"] in ("system", "developer"):
        head += 1
    if head < len(kept) and kept[head]["role"] == "user":
        head += 1
    return kept[:head] + [message] + kept[head:]
''', fails=['tas-several-summaries-rolled-into-one']),
]
RULES += [
    dict(rule='several summaries are joined with newlines into the prior summary', test='tas-several-summaries-rolled-into-one', wrong='joins-summaries-with-spaces'),
]

# Probed again: each passed every test before the test named in it checked the rule.
WRONG_ANSWERS += [
    dict(name="first-line-of-a-text-cut", cell="render-steps",
         source=render().replace("{message['role']}: {first}\")", "{message['role']}: {first[:80]}\")"),
         fails=["render-steps-laps-and-roles"]),
    dict(name="fit-check-counts-the-old-summary-as-text", cell="trim-and-summarise",
         source=tas(FITS="len(old) <= 1 and tokens(rest) + sum(ctxlab.count_text(ctxlab.summarising.summary_text(m)) for m in old) <= allowance"),
         fails=["tas-summary-counted"]),
    dict(name="new-summary-where-the-old-one-was", cell="trim-and-summarise",
         source=tas(HEAD="where = [i for i, m in enumerate(messages) if ctxlab.is_summary(m)]\n"
                         "    if where:\n"
                         "        head = min(where[0], len(kept))"),
         fails=["tas-summary-placement"]),
]
RULES += [
    dict(rule="a text's first line is in its entry in full", test="render-steps-laps-and-roles",
         wrong="first-line-of-a-text-cut"),
    dict(rule="the fit check counts an old summary as the message it is", test="tas-summary-counted",
         wrong="fit-check-counts-the-old-summary-as-text"),
    dict(rule="the new summary goes after the head, wherever the old one stood", test="tas-summary-placement",
         wrong="new-summary-where-the-old-one-was"),
]

# A trivial answer that passed the one test whose property it meets by doing nothing.
WRONG_ANSWERS += [
    dict(name="tas-returns-everything", cell="trim-and-summarise",
         source="def trim_and_summarise(messages, allowance, *, client, reserve=1_000, keep_recent=1):\n    return list(messages)\n",
         fails=["tas-unchanged-when-it-fits"]),
]
RULES += [
    dict(rule="a history one token over the allowance is trimmed and summarised", test="tas-unchanged-when-it-fits",
         wrong="tas-returns-everything"),
]

# Texts and results in full, blank lines included, and the prior summary's block closed on a line of its own.
WRONG_ANSWERS += [
    dict(name="blank-result-lines-skipped", cell="render-steps",
         source=render(RESULT='lines += ["    " + line for line in text.splitlines() if line.strip()]'),
         fails=["render-steps-results-in-full"]),
    dict(name="blank-text-lines-skipped", cell="render-steps",
         source=render(REST='lines += ["    " + line for line in rest if line.strip()]'),
         fails=["render-steps-laps-and-roles"]),
    dict(name="end-marker-on-the-summarys-last-line", cell="compaction-prompt",
         source=prompt(PRIOR_BLOCK='"PREVIOUS SUMMARY: fold the new steps into it and return ONE updated summary.\\n"'
                                   ' f"{prior_summary} END OF PREVIOUS SUMMARY"'),
         fails=["compaction-prompt-rolls-up-the-prior"]),
]
RULES += [
    dict(rule="a result is rendered in full, every line of it, blank lines included", test="render-steps-results-in-full",
         wrong="blank-result-lines-skipped"),
    dict(rule="a text is rendered in full, every line of it, blank lines included", test="render-steps-laps-and-roles",
         wrong="blank-text-lines-skipped"),
    dict(rule="'END OF PREVIOUS SUMMARY' comes on a line after the previous summary, not on its last line",
         test="compaction-prompt-rolls-up-the-prior", wrong="end-marker-on-the-summarys-last-line"),
]

# Probed again: each passed every test before the test named in it checked the rule.
WRONG_ANSWERS += [
    dict(name="default-model-fixed-in-the-signature", cell="compact-summaries",
         source=compact(MODEL="model").replace("*, model=None):", "*, model=ctxlab.llm.summary_model()):"),
         fails=["compact-model"]),
    dict(name="failures-line-asks-for-every-call", cell="compaction-prompt",
         source=prompt(FAILURES='"FAILURES: every tool call the agent made, and how it went.\\n"'),
         fails=["compaction-prompt-asks-for-failures"]),
    dict(name="re-summarises-a-fitting-history-with-one-summary", cell="trim-and-summarise",
         source=tas(FITS="not old and tokens(messages) <= allowance"),
         fails=["tas-unchanged-when-it-fits"]),
    dict(name="refuses-a-summary-bigger-than-the-reserve", cell="trim-and-summarise",
         source=tas(CHECK="if ctxlab.count_message(message) > reserve:\n"
                          '        raise ctxlab.BudgetError(f"the summary is bigger than the reserve of {reserve}")'),
         fails=["tas-summary-too-big-raises"]),
]
RULES += [
    dict(rule="model=None given explicitly means ctxlab.llm.summary_model(), chosen when compact is called",
         test="compact-model", wrong="default-model-fixed-in-the-signature"),
    dict(rule="the FAILURES: line asks for the calls that failed, not for every call", test="compaction-prompt-asks-for-failures",
         wrong="failures-line-asks-for-every-call"),
    dict(rule="a history that fits with one summary in it comes back unchanged, without a summariser call",
         test="tas-unchanged-when-it-fits", wrong="re-summarises-a-fitting-history-with-one-summary"),
    dict(rule="a summary bigger than the reserve is refused only when the result exceeds the allowance",
         test="tas-summary-too-big-raises", wrong="refuses-a-summary-bigger-than-the-reserve"),
]


# Right answers in wordings of their own: each must pass every test of its exercise. They pin the
# prose tests to the rules the docstring states (tests/test_lessons.py runs them in seconds).
FAIR_ANSWERS = [
    dict(name="prior-line-in-the-docstrings-own-words", cell="compaction-prompt", source=prompt(
        PRIOR_BLOCK='"PREVIOUS SUMMARY: fold the steps into it and return ONE summary (an updated one, never a second '
                    'or separate summary of the new steps).\\n" f"{prior_summary}\\nEND OF PREVIOUS SUMMARY"')),
    dict(name="prior-line-refuses-a-second-then-asks-to-update", cell="compaction-prompt", source=prompt(
        PRIOR_BLOCK='"PREVIOUS SUMMARY: do not write a separate one; update this summary and return one.\\n"'
                    ' f"{prior_summary}\\nEND OF PREVIOUS SUMMARY"')),
    dict(name="no-prose-terse-bullets-only", cell="compaction-prompt",
         source=prompt(BULLETS='"No prose: terse bullet points only, one line each, under these headings:\\n"')),
    dict(name="avoid-prose-and-use-bullets", cell="compaction-prompt",
         source=prompt(BULLETS='"Avoid long prose and use bullet points, one line each, under these headings:\\n"')),
    dict(name="heading-lines-with-words-the-docstring-allows", cell="compaction-prompt", source=prompt(
        FAILURES='"FAILURES: every tool call that failed and how it failed, so the agent can skip it next time.\\n"',
        QUESTIONS='"OPEN QUESTIONS: what is still unknown; omit a question once it is answered."')),
]

WRONG_ANSWERS += [
    dict(name="prior-line-refuses-one-and-asks-for-a-separate-one", cell="compaction-prompt", source=prompt(
        PRIOR_BLOCK='"PREVIOUS SUMMARY: update: not one summary but a separate summary of the new steps.\\n"'
                    ' f"{prior_summary}\\nEND OF PREVIOUS SUMMARY"'),
         fails=["compaction-prompt-asks-for-one-summary"]),
]
RULES += [
    dict(rule="a refusal near the stacked wording does not excuse it: 'not one summary but a separate one' asks for a second",
         test="compaction-prompt-asks-for-one-summary", wrong="prior-line-refuses-one-and-asks-for-a-separate-one"),
]

# The words of each exercise's text that state each rule (tests/test_rule_map.py checks them).
_BY_ITSELF = "ctxlab's own version of what it asks for is switched off, so your answer has to do that work itself"
_CALL = "[lap N] assistant called TOOL ARGUMENTS (id CALL_ID) (one entry per call)"
_FAILED = "[lap N] tool TOOL (id CALL_ID) FAILED: HOW (HOW = ctxlab.summarising.failure_of(result))"
_TEXT = "[lap N] ROLE: TEXT (system, user or assistant text, in full; its later lines follow, indented by four spaces)"
_UNCUT = "nothing is cut, however long"
_RESULT = "the full result, every line indented by four spaces"
_TOOL = "TOOL in a result's entry is the name of the call it answers: the newest call with that id before the result"
_OWN_INDENT = "Lines keep their own indentation, after the four spaces"
_FAILURES = "FAILURES: ... every tool call that failed, and how it failed"
_ONE = ("and return ONE summary (the word one or single: an updated one, never a second or separate summary)")
_FOLD = "PREVIOUS SUMMARY:\" + on the same line, an instruction to fold the steps into it"
_ONLY_WHEN = "(only when prior_summary is given and not empty:)"
_FACTS = "FACTS: ... each fact with its source (the tool it came from)"
_POSITIVE = "in positive words (none of \"no\", \"not\", \"n't\", \"never\" or \"without\" on these four lines)"
_LINE = "Each heading, in capitals, starts a line of its own, and the rest of that line says what to write under it"
_FIRST = "INSTRUCTIONS, always first: ask for terse bullet points under four headings"
_PRIOR = "the previous summary itself, from the next line on"
_END = "\"END OF PREVIOUS SUMMARY\", on a line of its own after the previous summary"
_STEPS = "\"STEPS TO FOLD IN:\" and, from the next line on, steps_text (the prompt ends with it)"
_MODEL = "with model = model, or ctxlab.llm.summary_model() when it is None"
_NOTHING = "With nothing dropped, return prior_summary as it is (or \"\" when there is none) without calling the client"
_REQUEST = ("messages=[one user message whose content is ctxlab.summarising.compaction_prompt("
            "ctxlab.summarising.render_steps(dropped), prior_summary)], temperature=0)")
_NOTHING_ELSE = "and nothing else (no max_tokens: a summary cut off mid-line loses its last headings)"
_TAKEN_OUT = "Summary messages in messages (ctxlab.is_summary) are taken out"
_PRIOR_TEXT = "their text (ctxlab.summarising.summary_text; joined with newlines if there are several) is the prior summary"
_FITS = "If all of messages fits (tokens <= allowance) and it holds at most one summary, return it unchanged, without calling the client"
_COUNTED = "Tokens are counted as sum(ctxlab.count_message(m) for m in ...)"
_FIT = "Otherwise kept, dropped = ctxlab.fit(rest, allowance - reserve, keep_recent=keep_recent)"
_COMPACT = "summary = ctxlab.compact(client, dropped, prior)"
_STEP = "ctxlab.summary_message(summary, step=the largest step among what it summarises)"
_PLACE = ("Return kept with that one message inserted after the leading system message(s) and the first user "
          "message (even when a message further on is pinned)")
_TOO_BIG = "Raise ctxlab.BudgetError if the result would exceed allowance (a result of exactly allowance fits)"
_REACHES = "return True once tokens (what the prompt takes now) reaches threshold of ceiling (reaching it exactly counts"
_UNROUNDED = "compare with threshold * ceiling as it is, never rounded"
_FRACTION = "threshold is a fraction of it, above 0 and at most 1"
_BOUNDARY = "Return True at a phase boundary (boundary is True), whatever the tokens"
_THREE = ("**Trimming** drops whole turn groups, with no model call; what it drops is gone, and the pins only "
          "protect what they pin. **Summarisation** rewrites content into a shorter text, at the cost of a model "
          "call. **Compaction** does both: the older turns are folded into one summary and the newest turns are "
          "kept word for word")
_NO_FAILURES = "Leave this line out and summaries quietly erase failure history; the agent then calls the same failing tool again"
_TRAP = "After a few compactions, a rule the agent breaks is far more likely gone from its prompt than ignored"
_PIN = "Constraints and decisions go to the pinned list the moment they appear, by a rule in code"
TAUGHT = {
    # render_steps
    "each entry starts with [lap N], N the message's step": "Each starts with \"[lap N]\" (N is the message's \"step\"",
    "a call's entry ends with (id CALL_ID)": _CALL,
    "a call's entry shows its arguments": _CALL,
    "every call of a parallel group has its own entry": _CALL,
    "a failed result is marked FAILED: HOW, HOW from ctxlab.summarising.failure_of": _FAILED,
    "a failed result still follows in full": (_FAILED, "the full result, indented"),
    "a text entry names who spoke: [lap N] ROLE: TEXT": _TEXT,
    "a text is rendered in full, every line of it, blank lines included": (_TEXT, _UNCUT),
    "a text's first line is in its entry in full": _TEXT,
    "a text's later lines follow on their own lines, indented by four spaces": _TEXT,
    "system text is rendered too": _TEXT,
    "texts are rendered in full, later lines indented": _TEXT,
    "a message without a step is lap \"?\" (no \"None\", no KeyError)": "\"?\" when it has none",
    "the step is read with .get: a missing step does not raise": "\"?\" when it has none",
    "a message without text gets no text entry (one entry per text, call and result)":
        "A message without text (content None or \"\") gets no text entry",
    "entries follow the order of the messages": "Entries follow the order of the messages",
    "a result follows in full": (_RESULT, _UNCUT),
    "a result follows in full however long (nothing cut at 1,500 characters)": _UNCUT,
    "a result is rendered in full, every line of it, blank lines included": (_RESULT, _UNCUT),
    "a result names the newest call with its id before it (call ids are reused across turns)": _TOOL,
    "a result's entry names the tool of the call it answers": _TOOL,
    "a result's lines are indented by four spaces": _RESULT,
    "a result's lines keep their own indentation after the four spaces": _OWN_INDENT,
    "a successful result is \"returned:\", even with \"error\": null":
        "a successful result (even {\"error\": null}) is marked returned:",
    # compaction_prompt
    "the FAILURES: line asks for the calls that failed, not for every call": _FAILURES,
    "the FAILURES: line asks for the tool calls that failed, not only the errors": _FAILURES,
    "the prompt asks how each tool failed": _FAILURES,
    "a refusal near the stacked wording does not excuse it: 'not one summary but a separate one' asks for a second": _ONE,
    "the PREVIOUS SUMMARY line asks to fold the steps in and return ONE summary": (_FOLD, _ONE),
    "the PREVIOUS SUMMARY line never asks for a new, second or separate summary": _ONE,
    "the prompt asks for decisions with their reasons": "DECISIONS: ... each decision with its reason",
    "an empty previous summary is none: no block": _ONLY_WHEN,
    "the FACTS: line itself asks for each fact's source (a separate list of tools does not)": (_LINE, _FACTS),
    "the prompt asks for facts with their source tool": _FACTS,
    "'END OF PREVIOUS SUMMARY' comes on a line after the previous summary, not on its last line": _END,
    "the instructions come first with a previous summary too": _FIRST,
    "the previous summary comes before the steps": (_PRIOR, _END, _STEPS),
    "the previous summary is closed by \"END OF PREVIOUS SUMMARY\"": _END,
    "the previous summary starts on the line after its heading": _PRIOR,
    "the prompt asks for bullet points, not for prose instead of them": _FIRST,
    "the prompt asks for terse bullets": _FIRST,
    "each heading's line asks in positive words (no 'no', 'not', 'never', 'without')": _POSITIVE,
    "no PREVIOUS SUMMARY block without a previous summary": _ONLY_WHEN,
    "open questions are asked for on an OPEN QUESTIONS: line, not refused": (
        "OPEN QUESTIONS: ... what is still unknown", _POSITIVE),
    "the prompt asks for open questions": "OPEN QUESTIONS: ... what is still unknown",
    "the prompt asks for the tools that failed": _FAILURES,
    "the prompt ends with \"STEPS TO FOLD IN:\" and the steps on the next line": _STEPS,
    # compact
    "the previous summary is folded into the request": _REQUEST,
    "ctxlab.llm.summary_model() honours CTXLAB_SUMMARY_MODEL: the default's name is not the model": _MODEL,
    "model=None given explicitly means ctxlab.llm.summary_model(), chosen when compact is called": _MODEL,
    "the model given is sent": _MODEL,
    "without a model, ctxlab.llm.summary_model() is sent": _MODEL,
    "an error from the client goes through; the previous summary is not returned instead":
        "An error from the client goes through: never return the previous summary in its place",
    "nothing dropped and no previous summary: \"\" (not None)": _NOTHING,
    "nothing dropped: no call": _NOTHING,
    "nothing dropped: the previous summary comes back": _NOTHING,
    "nothing dropped: the previous summary comes back as it is, not stripped": _NOTHING,
    "that message is a user message": _REQUEST,
    "the prompt holds the steps rendered with ctxlab.summarising.render_steps": _REQUEST,
    "the request is one message": _REQUEST,
    "the request sets model, messages and temperature, and nothing else": _NOTHING_ELSE,
    "the request sets no max_tokens: the reply is not cut": _NOTHING_ELSE,
    "the reply's text is returned stripped": "Return the reply's text (reply.choices[0].message.content), stripped",
    "the request asks for temperature 0": _REQUEST,
    "the temperature is given, not left to the server's default": _REQUEST,
    "the request goes through the client given": "Send one request through client",
    # trim_and_summarise
    "summary messages are taken out and rolled up, never stacked": (
        "replacing what is dropped with ONE summary", _TAKEN_OUT),
    "keep_recent is passed on to ctxlab.fit": _FIT,
    "the reserve given is used": _FIT,
    "the messages given are left unchanged": "messages itself is never changed: build new lists",
    "the old summary's text is the prior summary": _PRIOR_TEXT,
    "several summaries are joined with newlines into the prior summary": _PRIOR_TEXT,
    "several summaries are rolled into one even when everything fits": _FITS,
    "several summaries: their texts joined are the prior summary": _PRIOR_TEXT,
    "the summary's step counts the old summaries it rolls up": _STEP,
    "its step is the largest step it summarises": _STEP,
    "the summary is made by the client given": _COMPACT,
    "the summary is made from what the fit dropped": (_FIT, _COMPACT),
    "the summary message has a step": _STEP,
    "the fit check counts an old summary as the message it is": (_COUNTED, _FITS),
    "the history is returned unchanged only when all of it fits, its summary included": _FITS,
    "the rest is fitted into allowance - reserve: the summary is counted": _FIT,
    "the new summary goes after the head, wherever the old one stood": _PLACE,
    "the summary goes after the leading system messages, however many, and the first user message": _PLACE,
    "the summary goes after the system prompt and the task even when a later message is pinned": _PLACE,
    "a result of exactly the allowance is not refused (>, not >=)": _TOO_BIG,
    "a result over the allowance raises ctxlab.BudgetError": _TOO_BIG,
    "a summary bigger than the reserve is refused only when the result exceeds the allowance": _TOO_BIG,
    "the refusal is ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name": _TOO_BIG,
    "the summary is counted as a message (framing included) against the allowance": (_COUNTED, _TOO_BIG),
    "a history one token over the allowance is trimmed and summarised": (_FITS, _FIT),
    "a history that fits comes back unchanged, without a call": _FITS,
    "a history that fits exactly (tokens == allowance) comes back unchanged": _FITS,
    "a history that fits with one summary in it comes back unchanged, without a summariser call": _FITS,
    "the summary goes after the system prompt AND the task": _PLACE,
    "the summary goes near the start, not at the end": _PLACE,
    # compaction_due
    "compaction is due at the threshold, before the window is full": _REACHES,
    "reaching the threshold exactly counts (>=)": _REACHES,
    "the threshold is compared as it is, not rounded down": _UNROUNDED,
    "the threshold is threshold * ceiling itself, not rounded to a whole number": _UNROUNDED,
    "the threshold is a fraction, not a percentage": (_FRACTION, "0.7 means 70 %"),
    "the threshold is a fraction of the ceiling given": (_REACHES, _FRACTION),
    "a phase boundary compacts whatever the tokens": _BOUNDARY,
    "the threshold given is used": _REACHES,
    # concept checks: the lesson's text that makes the right answer right
    "Q1: (a) a failure is not kept unless the prompt asks for it": _NO_FAILURES,
    "Q1: (b) leaving a request out does not make the summary longer": _NO_FAILURES,
    "Q1: (d) a summariser does not refuse over a missing line": _NO_FAILURES,
    "Q2: roll up: one current summary that folds in the previous one": (
        "one request with the previous summary and the new steps, asking for ONE updated summary"),
    "Q3: a short run that fits needs no summary": (
        "A run that never outgrows its allowance needs nothing",
        "Every compaction is an extra model call that reads the dropped steps"),
    "Q4: (a) the three differ in what they lose and what they cost": _THREE,
    "Q4: (b) trimming loses every unpinned group it drops": _THREE,
    "Q4: (c) compaction keeps the newest turns verbatim": _THREE,
    "Q5: (a) after compactions the rule is likelier gone than ignored": (_TRAP, _PIN),
    "Q5: (c) a bigger window only delays the compaction that loses the rule":
        "A larger window does not remove the trap, it only delays the compaction that springs it",
    "Q5: (d) temperature 0 picks the likeliest wording, not a more faithful summary":
        "temperature 0 picks the likeliest wording of a summary, not a more faithful one",
}
