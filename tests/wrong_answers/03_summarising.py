"""Known wrong answers for lesson 03-summarising; each must fail the named tests when graded."""

COMPACT = '''
def compact(client, dropped, prior_summary=None, *, model=None):
    if not dropped:
        return prior_summary or ""
    prompt = compaction_prompt(ctxlab.render_steps(dropped){prior})
    reply = client.chat.completions.create(
        model=model or ctxlab.summary_model(),
        messages=[{{"role": "user", "content": prompt}}],
        temperature={temperature},
    )
    return reply.choices[0].message.content.strip()
'''

TRIM_AND_SUMMARISE = '''
def trim_and_summarise(messages, allowance, *, client, reserve=1_000, keep_recent=1):
{take_out}
    if tokens(messages) <= allowance:
        return list(messages)
    kept, dropped = ctxlab.fit(rest, {room}, keep_recent=keep_recent)
    summary = compact(client, dropped, prior)
    steps = [m["step"] for m in dropped if "step" in m]
    message = ctxlab.summary_message(summary, step=max(steps) if steps else None)
    head = 0
    while head < len(kept) and kept[head]["role"] in ("system", "developer"):
        head += 1
    if head < len(kept) and kept[head]["role"] == "user":
        head += 1
    return kept[:head] + [message] + kept[head:]
'''
TAKE_OUT = """    old = [m for m in messages if ctxlab.is_summary(m)]
    rest = [m for m in messages if not ctxlab.is_summary(m)]
    prior = "\\n".join(ctxlab.summary_text(m) for m in old) or None"""
LEAVE_IN = """    rest = list(messages)  # earlier summaries stay where they are
    prior = None"""

WRONG_ANSWERS = [
    dict(
        name="stacks-summaries",
        cell="trim-and-summarise",
        source=TRIM_AND_SUMMARISE.format(take_out=LEAVE_IN, room="allowance - reserve"),
        fails=["tas-exactly-one-summary"],
    ),
    dict(
        name="summary-not-counted-in-the-budget",
        cell="trim-and-summarise",
        source=TRIM_AND_SUMMARISE.format(take_out=TAKE_OUT, room="allowance"),
        fails=["tas-summary-counted"],
    ),
    dict(
        name="forgets-the-prior-summary",
        cell="compact-summaries",
        source=COMPACT.format(prior="", temperature=0),
        fails=["compact-folds-the-prior"],
    ),
    dict(
        name="non-zero-temperature",
        cell="compact-summaries",
        source=COMPACT.format(prior=", prior_summary", temperature=0.7),
        fails=["compact-temperature-zero"],
    ),
    dict(
        name="prompt-omits-failures",
        cell="compaction-prompt",
        source='''
def compaction_prompt(steps_text, prior_summary=None):
    instructions = (
        "Summarise these agent steps for the agent, as terse bullet points:\\n"
        "FACTS: every fact established, with the tool (its source) and the lap.\\n"
        "DECISIONS: every decision and its reason.\\n"
        "OPEN QUESTIONS: what is still unknown."
    )
    parts = [instructions]
    if prior_summary:
        parts.append(f"PREVIOUS SUMMARY: update it.\\n{prior_summary}\\nEND OF PREVIOUS SUMMARY")
    parts.append(f"STEPS TO FOLD IN:\\n{steps_text}")
    return "\\n\\n".join(parts)
''',
        fails=["compaction-prompt-asks-for-failures"],
    ),
]
