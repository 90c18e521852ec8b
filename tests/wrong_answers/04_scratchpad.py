"""Known wrong answers for lesson 04-scratchpad, one rule broken in each; each must fail the named tests.

Each wrong answer is the reference answer with one change (``changed``). ``RULES`` maps every
rule the lesson states to the test cell that checks it and a wrong answer that breaks only it.
"""

RENDER = '''
@dataclass
class Scratchpad:
    goal: str
    facts: dict = field(default_factory=dict)
    done: list = field(default_factory=list)
    remaining: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    open_questions: list = field(default_factory=list)

    def render(self):
        parts = [f"GOAL: {self.goal}"]
        sections = [
            ("ESTABLISHED", [f"- {k}: {v}" for k, v in self.facts.items()]),
            ("DONE", [f"- {item}" for item in self.done]),
            ("REMAINING", [f"- {item}" for item in self.remaining]),
            ("DO NOT RETRY", [f"- {k}: {v}" for k, v in self.failed.items()]),
            ("OPEN QUESTIONS", [f"- {item}" for item in self.open_questions]),
        ]
        for heading, lines in sections:
            if lines:
                parts.append(f"{heading}:\\n" + "\\n".join(lines))
        return "\\n\\n".join(parts)
'''

UPDATE = '''
import copy


def update_scratchpad(pad, call, result):
    key = f"{call['function']['name']} {json.dumps(json.loads(call['function']['arguments']), sort_keys=True)}"
    data = result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            data = result
    if isinstance(data, dict) and data.get("error"):
        reason = f"{data['error']}: {data['message']}" if data.get("message") else str(data["error"])
        status = data.get("status")
        if data["error"] in ("timeout", "rate_limited") or (isinstance(status, int) and (status == 429 or status >= 500)):
            wait = data.get("retry_after")
            when = f"retry after {wait} s" if isinstance(wait, (int, float)) and not isinstance(wait, bool) else "retry later"
            if key not in pad.failed:
                pad.retry_later[key] = f"{reason} ({when})"
        else:
            pad.retry_later.pop(key, None)
            pad.failed.setdefault(key, reason)
        return pad
    pad.failed.pop(key, None)
    pad.retry_later.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result)
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    pad.done.append(f"{key} -> {first_line[:80]}")
    return pad
'''

KEY = "key = f\"{call['function']['name']} {json.dumps(json.loads(call['function']['arguments']), sort_keys=True)}\""

BOUNDED = '''
import copy


def render_bounded(pad, max_tokens):
    if ctxlab.count_text(pad.render()) <= max_tokens:
        return pad.render()
    work = copy.deepcopy(pad)
    steps = [(work.done, 0), (work.open_questions, 0), (work.facts, 0), (work.remaining, -1)]
    for section, position in steps:
        while section:
            if isinstance(section, dict):
                del section[next(iter(section))]
            else:
                section.pop(position)
            text = work.render()
            if ctxlab.count_text(text) <= max_tokens:
                return text
    needed = ctxlab.count_text(work.render())
    raise ctxlab.BudgetError(f"the goal and the failures alone take {needed} tokens, over the cap of {max_tokens}")
'''
STEPS = "steps = [(work.done, 0), (work.open_questions, 0), (work.facts, 0), (work.remaining, -1)]"
IMPOSSIBLE = 'raise ctxlab.BudgetError(f"the goal and the failures alone take {needed} tokens, over the cap of {max_tokens}")'


REPLAN = '''
def replan_after(pad, events, min_share=0.25):
    due = any(
        event["kind"] in ("trim", "summarise", "summary_failed")
        and event["tokens_before"] > 0
        and event["tokens_before"] - event["tokens_after"] >= min_share * event["tokens_before"]
        for event in events
    )
    if not due:
        return None
    return ctxlab.replanning.replan_message(pad)
'''
SHARE = 'event["tokens_before"] - event["tokens_after"] >= min_share * event["tokens_before"]'
KINDS = 'event["kind"] in ("trim", "summarise", "summary_failed")\n        and '
MESSAGE = "return ctxlab.replanning.replan_message(pad)"
DUE = '''    due = any(
        event["kind"] in ("trim", "summarise", "summary_failed")
        and event["tokens_before"] > 0
        and event["tokens_before"] - event["tokens_after"] >= min_share * event["tokens_before"]
        for event in events
    )
'''


def changed(source: str, *edits: tuple[str, str]) -> str:
    """``source`` with each ``(old, new)`` replaced; each ``old`` must occur in it."""
    for old, new in edits:
        assert old in source, f"{old!r} is not in the reference answer"
        source = source.replace(old, new)
    return source


def render(*edits):
    return dict(cell="scratchpad-render", source=changed(RENDER, *edits))


def update(*edits):
    return dict(cell="update-scratchpad", source=changed(UPDATE, *edits))


def bounded(*edits):
    return dict(cell="render-bounded", source=changed(BOUNDED, *edits))


def replan(*edits):
    return dict(cell="replan-after", source=changed(REPLAN, *edits))


FACTS_SECTION = '            ("ESTABLISHED", [f"- {k}: {v}" for k, v in self.facts.items()]),\n'
DONE_SECTION = '            ("DONE", [f"- {item}" for item in self.done]),\n'
REMAINING_SECTION = '            ("REMAINING", [f"- {item}" for item in self.remaining]),\n'
FAILED_SECTION = '            ("DO NOT RETRY", [f"- {k}: {v}" for k, v in self.failed.items()]),\n'
OPEN_SECTION = '            ("OPEN QUESTIONS", [f"- {item}" for item in self.open_questions]),\n'

WRONG_ANSWERS = [
    # Scratchpad.render
    dict(name="goal-not-first", fails=["scratchpad-render-visible", "scratchpad-render-goal-first"],
         **render(('parts = [f"GOAL: {self.goal}"]', "parts = []"),
                  ('return "\\n\\n".join(parts)', 'return "\\n\\n".join(parts + [f"GOAL: {self.goal}"])'))),
    dict(name="goal-as-a-section", fails=["scratchpad-render-visible", "scratchpad-render-goal-first"],
         **render(('parts = [f"GOAL: {self.goal}"]', 'parts = [f"GOAL:\\n- {self.goal}"]'))),
    dict(name="plan-before-done", fails=["scratchpad-render-section-order"],
         **render((DONE_SECTION + REMAINING_SECTION, REMAINING_SECTION + DONE_SECTION))),
    dict(name="failures-after-open-questions", fails=["scratchpad-render-section-order"],
         **render((FAILED_SECTION + OPEN_SECTION, OPEN_SECTION + FAILED_SECTION))),
    dict(name="headings-without-colon",
         fails=["scratchpad-render-visible", "scratchpad-render-section-order"],
         **render(('parts.append(f"{heading}:\\n"', 'parts.append(f"{heading}\\n"'))),
    dict(name="keeps-empty-headings", fails=["scratchpad-render-omits-empty"],
         **render(("            if lines:\n                parts.append", "            if True:\n                parts.append"))),
    dict(name="render-leaves-out-failures",
         fails=["scratchpad-render-visible", "scratchpad-render-shows-failures"],
         **render((FAILED_SECTION, ""))),
    dict(name="render-leaves-out-facts", fails=["scratchpad-render-shows-facts"], **render((FACTS_SECTION, ""))),
    dict(name="facts-show-only-keys", fails=["scratchpad-render-shows-facts"],
         **render(('[f"- {k}: {v}" for k, v in self.facts.items()]', '[f"- {k}" for k in self.facts]'))),
    dict(name="bullets-with-asterisks", fails=["scratchpad-render-visible", "scratchpad-render-item-lines"],
         **render(('[f"- {item}" for item in self.done]', '[f"* {item}" for item in self.done]'),
                  ('[f"- {item}" for item in self.remaining]', '[f"* {item}" for item in self.remaining]'),
                  ('[f"- {item}" for item in self.open_questions]', '[f"* {item}" for item in self.open_questions]'))),
    dict(name="items-newest-first", fails=["scratchpad-render-item-order"],
         **render(("for item in self.done]", "for item in reversed(self.done)]"),
                  ("for item in self.remaining]", "for item in reversed(self.remaining)]"))),
    dict(name="no-blank-lines", fails=["scratchpad-render-visible", "scratchpad-render-blank-lines"],
         **render(('return "\\n\\n".join(parts)', 'return "\\n".join(parts)'))),
    # update_scratchpad
    dict(name="failures-missed-in-json-text",
         fails=["update-scratchpad-visible", "update-scratchpad-json-text-failure"],
         **update(("data = json.loads(result)", "data = result"))),
    dict(name="failures-keyed-by-call-id",
         fails=["update-scratchpad-visible", "update-scratchpad-failure-once"],
         **update((KEY, 'key = call["id"]'))),
    dict(name="key-is-the-tool-name-only",
         fails=["update-scratchpad-visible", "update-scratchpad-key-has-arguments"],
         **update((KEY, "key = call['function']['name']"))),
    dict(name="error-key-means-failure", fails=["update-scratchpad-truthy-error-only"],
         **update(('isinstance(data, dict) and data.get("error")', 'isinstance(data, dict) and "error" in data'))),
    dict(name="reason-drops-the-message",
         fails=["update-scratchpad-visible", "update-scratchpad-failure-reason"],
         **update(("reason = f\"{data['error']}: {data['message']}\" if data.get(\"message\") else str(data[\"error\"])",
                   'reason = str(data["error"])'))),
    dict(name="reason-with-empty-message", fails=["update-scratchpad-failure-reason"],
         **update(("reason = f\"{data['error']}: {data['message']}\" if data.get(\"message\") else str(data[\"error\"])",
                   "reason = f\"{data['error']}: {data.get('message', '')}\""))),
    dict(name="failure-also-listed-as-done",
         fails=["update-scratchpad-visible", "update-scratchpad-json-text-failure"],
         **update(("        pad.failed.setdefault(key, reason)\n",
                   '        pad.failed.setdefault(key, reason)\n        pad.done.append(f"{key} -> failed")\n'))),
    dict(name="parses-every-result-as-json",
         fails=["update-scratchpad-visible", "update-scratchpad-non-dict-results"],
         **update(("        try:\n            data = json.loads(result)\n        except json.JSONDecodeError:\n            data = result\n",
                   "        data = json.loads(result)\n"))),
    dict(name="assumes-json-is-a-dict", fails=["update-scratchpad-non-dict-results"],
         **update(('isinstance(data, dict) and data.get("error")', 'not isinstance(data, str) and data.get("error")'))),
    dict(name="done-line-from-a-blank-first-line", fails=["update-scratchpad-done-first-non-blank-line"],
         **update(('first_line = next((line for line in text.splitlines() if line.strip()), "")',
                   'first_line = (text.splitlines() or [""])[0]'))),
    dict(name="cuts-the-whole-done-line-at-80", fails=["update-scratchpad-done-line-cut-at-80"],
         **update(('pad.done.append(f"{key} -> {first_line[:80]}")', 'pad.done.append(f"{key} -> {first_line}"[:80])'))),
    dict(name="adds-an-ellipsis-when-cut", fails=["update-scratchpad-done-line-cut-at-80"],
         **update(('pad.done.append(f"{key} -> {first_line[:80]}")',
                   'pad.done.append(f"{key} -> {first_line[:77] + \'...\' if len(first_line) > 80 else first_line}")'))),
    dict(name="dict-success-shown-with-str", fails=["update-scratchpad-dict-success-as-json"],
         **update(("text = result if isinstance(result, str) else json.dumps(result)",
                   "text = result if isinstance(result, str) else str(result)"))),
    dict(name="unbounded-growth-copies-results", fails=["update-scratchpad-bounded-growth"],
         **update(('pad.done.append(f"{key} -> {first_line[:80]}")', 'pad.done.append(f"{key} -> {text}")'))),
    dict(name="success-keeps-old-failure", fails=["update-scratchpad-success-clears-failure"],
         **update(("    pad.failed.pop(key, None)\n", ""))),
    dict(name="every-failure-never-retried", fails=["update-scratchpad-transient-retry-later"],
         **update(('if data["error"] in ("timeout", "rate_limited") or', 'if False and'))),
    dict(name="transient-by-error-name-only", fails=["update-scratchpad-transient-retry-later"],
         **update((' or (isinstance(status, int) and (status == 429 or status >= 500))', ''))),
    dict(name="retry-after-ignored", fails=["update-scratchpad-transient-retry-later"],
         **update(('when = f"retry after {wait} s" if isinstance(wait, (int, float)) and not isinstance(wait, bool) else "retry later"',
                   'when = "retry later"'))),
    dict(name="first-transient-failure-kept", fails=["update-scratchpad-transient-retry-later"],
         **update(('pad.retry_later[key] = f"{reason} ({when})"', 'pad.retry_later.setdefault(key, f"{reason} ({when})")'))),
    dict(name="success-keeps-retry-later", fails=["update-scratchpad-transient-retry-later"],
         **update(("    pad.failed.pop(key, None)\n    pad.retry_later.pop(key, None)\n", "    pad.failed.pop(key, None)\n"))),
    dict(name="retries-later-what-failed-for-good", fails=["update-scratchpad-transient-retry-later"],
         **update(("if key not in pad.failed:", "if True:"))),
    dict(name="permanent-failure-keeps-retry-later", fails=["update-scratchpad-transient-retry-later"],
         **update(("        else:\n            pad.retry_later.pop(key, None)\n", "        else:\n"))),
    dict(name="returns-a-new-pad", fails=["update-scratchpad-in-place-and-returned"],
         **update(("    key = f\"", "    pad = copy.deepcopy(pad)\n    key = f\""))),
    dict(name="forgets-to-return-the-pad", fails=["update-scratchpad-in-place-and-returned"],
         **update(("return pad", "return"))),
    # render_bounded
    dict(name="unbounded-growth-sheds-only-done", fails=["render-bounded-fits-cap"],
         **bounded((STEPS, "steps = [(work.done, 0)]"), (IMPOSSIBLE, "return work.render()"))),
    dict(name="sheds-at-exactly-the-cap", fails=["render-bounded-unchanged-when-fits"],
         **bounded(("<= max_tokens", "< max_tokens"))),
    dict(name="drops-the-goal-to-fit", fails=["render-bounded-keeps-goal"],
         source='''
def render_bounded(pad, max_tokens):
    lines = pad.render().splitlines()
    while lines and ctxlab.count_text("\\n".join(lines)) > max_tokens:
        lines.pop(0)
    return "\\n".join(lines)
''', cell="render-bounded"),
    dict(name="sheds-failures-last", fails=["render-bounded-keeps-failures"],
         **bounded((STEPS, STEPS[:-1] + ", (work.failed, 0)]"))),
    dict(name="sheds-questions-before-done", fails=["render-bounded-sheds-done-first"],
         **bounded((STEPS, "steps = [(work.open_questions, 0), (work.done, 0), (work.facts, 0), (work.remaining, -1)]"))),
    dict(name="sheds-newest-done-first",
         fails=["render-bounded-visible", "render-bounded-sheds-done-oldest-first"],
         **bounded(("(work.done, 0)", "(work.done, -1)"))),
    dict(name="sheds-facts-before-questions", fails=["render-bounded-sheds-questions-before-facts"],
         **bounded((STEPS, "steps = [(work.done, 0), (work.facts, 0), (work.open_questions, 0), (work.remaining, -1)]"))),
    dict(name="sheds-newest-question-first", fails=["render-bounded-sheds-questions-before-facts"],
         **bounded(("(work.open_questions, 0)", "(work.open_questions, -1)"))),
    dict(name="sheds-plan-before-facts", fails=["render-bounded-sheds-facts-before-plan"],
         **bounded((STEPS, "steps = [(work.done, 0), (work.open_questions, 0), (work.remaining, -1), (work.facts, 0)]"))),
    dict(name="sheds-newest-fact-first", fails=["render-bounded-sheds-facts-before-plan"],
         **bounded(("del section[next(iter(section))]", "del section[list(section)[-1]]"))),
    dict(name="sheds-the-next-step-first", fails=["render-bounded-sheds-plan-from-the-end"],
         **bounded(("(work.remaining, -1)", "(work.remaining, 0)"))),
    dict(name="clears-a-whole-section-at-once", fails=["render-bounded-sheds-no-more-than-needed"],
         **bounded(("""            if isinstance(section, dict):
                del section[next(iter(section))]
            else:
                section.pop(position)""", "            section.clear()"))),
    dict(name="sheds-from-the-callers-pad", fails=["render-bounded-leaves-pad-unchanged"],
         **bounded(("work = copy.deepcopy(pad)", "work = pad"))),
    dict(name="returns-over-cap-when-impossible",
         fails=["render-bounded-refuses-impossible", "render-bounded-error-gives-numbers"],
         **bounded((IMPOSSIBLE, "return work.render()"))),
    dict(name="raises-valueerror-when-impossible",
         fails=["render-bounded-refuses-impossible", "render-bounded-error-gives-numbers"],
         **bounded(("raise ctxlab.BudgetError(", "raise ValueError("))),
    dict(name="refuses-when-floor-equals-cap", fails=["render-bounded-floor-at-the-cap"],
         **bounded(("    work = copy.deepcopy(pad)\n", """    floor = ctxlab.Scratchpad(goal=pad.goal, failed=dict(pad.failed)).render()
    if ctxlab.count_text(floor) >= max_tokens:
        raise ctxlab.BudgetError(f"goal and failures take {ctxlab.count_text(floor)} tokens, cap {max_tokens}")
    work = copy.deepcopy(pad)
"""))),
    dict(name="error-without-numbers", fails=["render-bounded-error-gives-numbers"],
         **bounded((IMPOSSIBLE, 'raise ctxlab.BudgetError("the goal and the failures do not fit")'))),
    # replan_after
    dict(name="any-cut-is-due",
         fails=["replan-after-visible", "replan-after-share-of-tokens-before",
                "replan-after-small-change-is-none", "replan-after-uses-min-share"],
         **replan(("        and " + SHARE + "\n", ""))),
    dict(name="strictly-more-than-the-share", fails=["replan-after-at-exactly-the-share"],
         **replan((SHARE, SHARE.replace(">=", ">")))),
    dict(name="share-of-the-tokens-after",
         fails=["replan-after-share-of-tokens-before", "replan-after-uses-min-share"],
         **replan((SHARE, 'event["tokens_before"] - event["tokens_after"] >= min_share * event["tokens_after"]'))),
    dict(name="due-when-shrunk-to-the-share",
         fails=["replan-after-visible", "replan-after-at-exactly-the-share",
                "replan-after-every-cutting-kind", "replan-after-leaves-inputs-unchanged",
                "replan-after-looks-at-every-event", "replan-after-uses-min-share"],
         **replan((SHARE, 'event["tokens_after"] <= min_share * event["tokens_before"]'))),
    dict(name="fixed-quarter-ignores-min-share", fails=["replan-after-uses-min-share"],
         **replan((SHARE, 'event["tokens_before"] - event["tokens_after"] >= 0.25 * event["tokens_before"]'))),
    dict(name="any-kind-calls-for-a-replan", fails=["replan-after-only-cutting-kinds"], **replan((KINDS, ""))),
    dict(name="forgets-summary-failed", fails=["replan-after-every-cutting-kind"],
         **replan(('("trim", "summarise", "summary_failed")', '("trim", "summarise")'))),
    dict(name="looks-only-at-the-last-event", fails=["replan-after-looks-at-every-event"],
         **replan(("for event in events\n", "for event in events[-1:]\n"))),
    dict(name="divides-by-zero-tokens", fails=["replan-after-zero-tokens-before"],
         **replan(('        and event["tokens_before"] > 0\n        and ' + SHARE,
                   '        and (event["tokens_before"] - event["tokens_after"]) / event["tokens_before"] >= min_share'))),
    dict(name="replan-pastes-the-whole-scratchpad", fails=["replan-after-visible"],
         **replan((MESSAGE, 'return {"role": "user", "content": f"{ctxlab.replanning.REPLAN_HEADER}\\n{pad.render()}"}'))),
    dict(name="replan-returns-the-text", fails=["replan-after-visible"],
         **replan((MESSAGE, MESSAGE + '["content"]'))),
    # Scratchpad.render: repeats, falsy values, added order, read only
    dict(name="drops-repeated-items", fails=["scratchpad-render-item-lines"],
         **render(("for item in self.done]", "for item in dict.fromkeys(self.done)]"),
                  ("for item in self.remaining]", "for item in dict.fromkeys(self.remaining)]"),
                  ("for item in self.open_questions]", "for item in dict.fromkeys(self.open_questions)]"))),
    dict(name="skips-falsy-values", fails=["scratchpad-render-shows-facts"],
         **render(("for k, v in self.facts.items()]", "for k, v in self.facts.items() if v]"),
                  ("for item in self.done]", "for item in self.done if item]"),
                  ("for item in self.remaining]", "for item in self.remaining if item]"),
                  ("for k, v in self.failed.items()]", "for k, v in self.failed.items() if v]"),
                  ("for item in self.open_questions]", "for item in self.open_questions if item]"))),
    dict(name="sorts-facts-and-failures", fails=["scratchpad-render-item-order"],
         **render(("for k, v in self.facts.items()]", "for k, v in sorted(self.facts.items())]"),
                  ("for k, v in self.failed.items()]", "for k, v in sorted(self.failed.items())]"))),
    dict(name="render-empties-done", fails=["scratchpad-render-leaves-pad-unchanged"],
         **render(('parts = [f"GOAL: {self.goal}"]\n',
                   'parts = [f"GOAL: {self.goal}"]\n        done = []\n        while self.done:\n'
                   '            done.append(f"- {self.done.pop(0)}")\n'),
                  ('("DONE", [f"- {item}" for item in self.done])', '("DONE", done)'))),
    # update_scratchpad: the key as given, the first reason, empty results, JSON text, one key cleared
    dict(name="key-holds-the-arguments-as-given", fails=["update-scratchpad-key-has-arguments"],
         **update((KEY, "key = f\"{call['function']['name']} {call['function']['arguments']}\""))),
    dict(name="key-without-sorted-keys", fails=["update-scratchpad-key-has-arguments"],
         **update((KEY, "key = f\"{call['function']['name']} {json.dumps(json.loads(call['function']['arguments']))}\""))),
    dict(name="newest-reason-replaces-the-first", fails=["update-scratchpad-failure-once"],
         **update(("pad.failed.setdefault(key, reason)", "pad.failed[key] = reason"))),
    dict(name="blank-result-crashes", fails=["update-scratchpad-non-dict-results"],
         **update(('first_line = next((line for line in text.splitlines() if line.strip()), "")',
                   "first_line = [line for line in text.splitlines() if line.strip()][0]"))),
    dict(name="re-serialises-json-text", fails=["update-scratchpad-dict-success-as-json"],
         **update(("text = result if isinstance(result, str) else json.dumps(result)",
                   "text = data if isinstance(data, str) else json.dumps(data)"))),
    dict(name="success-clears-every-failure-of-the-tool", fails=["update-scratchpad-success-clears-failure"],
         **update(("    pad.failed.pop(key, None)\n",
                   "    for old in [k for k in pad.failed if k.split(\" \", 1)[0] == call['function']['name']]:\n"
                   "        del pad.failed[old]\n"))),
    # render_bounded: the cap inside the shedding loop
    dict(name="stops-only-under-the-cap", fails=["render-bounded-sheds-no-more-than-needed"],
         **bounded(("if ctxlab.count_text(text) <= max_tokens:", "if ctxlab.count_text(text) < max_tokens:"),
                   ("    needed = ctxlab.count_text(work.render())\n    " + IMPOSSIBLE,
                    "    needed = ctxlab.count_text(work.render())\n    if needed <= max_tokens:\n"
                    "        return work.render()\n    " + IMPOSSIBLE))),
    # replan_after: each event on its own, a growth is no cut, the three documented keys
    dict(name="adds-the-laps-events-together", fails=["replan-after-looks-at-every-event"],
         **replan((DUE, '''    cutting = [e for e in events if e["kind"] in ("trim", "summarise", "summary_failed")]
    before = sum(e["tokens_before"] for e in cutting)
    due = before > 0 and sum(e["tokens_before"] - e["tokens_after"] for e in cutting) >= min_share * before
'''))),
    dict(name="looks-only-at-the-last-cut", fails=["replan-after-looks-at-every-event"],
         **replan(("for event in events\n",
                   'for event in [e for e in events if e["kind"] in ("trim", "summarise", "summary_failed")][-1:]\n'))),
    dict(name="growth-counts-as-a-cut", fails=["replan-after-small-change-is-none"],
         **replan((SHARE, 'abs(event["tokens_before"] - event["tokens_after"]) >= min_share * event["tokens_before"]'))),
    dict(name="reads-the-saved-key", fails=["replan-after-share-of-tokens-before"],
         **replan((SHARE, 'event["saved"] >= min_share * event["tokens_before"]'))),
    # concept checks
    dict(name="thinks-the-api-wants-user-last", cell="q1-answer", source='q1 = "a"', fails=["q1-check"]),
    dict(name="thinks-the-model-cannot-see-results", cell="q2-answer", source='q2 = "b"', fails=["q2-check"]),
    dict(name="cuts-the-text-at-the-cap", cell="q3-answer", source='q3 = "d"', fails=["q3-check"]),
    dict(name="thinks-both-memories-are-the-transcript", cell="q4-answer", source='q4 = "a"', fails=["q4-check"]),
    dict(name="thinks-working-memory-is-never-sent", cell="q4-answer", source='q4 = "c"', fails=["q4-check"]),
    dict(name="thinks-working-memory-is-the-models-head", cell="q4-answer", source='q4 = "d"', fails=["q4-check"]),
]

RULES = [
    # Scratchpad.render
    dict(rule="the first line is 'GOAL: ' and the goal", test="scratchpad-render-goal-first", wrong="goal-not-first"),
    dict(rule="the goal is a line of its own, not a section", test="scratchpad-render-goal-first",
         wrong="goal-as-a-section"),
    dict(rule="DONE comes before REMAINING", test="scratchpad-render-section-order", wrong="plan-before-done"),
    dict(rule="DO NOT RETRY comes before OPEN QUESTIONS", test="scratchpad-render-section-order",
         wrong="failures-after-open-questions"),
    dict(rule="each heading is followed by a colon", test="scratchpad-render-section-order",
         wrong="headings-without-colon"),
    dict(rule="an empty section is left out, heading and all", test="scratchpad-render-omits-empty",
         wrong="keeps-empty-headings"),
    dict(rule="every failure appears as '- call: reason' under DO NOT RETRY", test="scratchpad-render-shows-failures",
         wrong="render-leaves-out-failures"),
    dict(rule="facts appear under ESTABLISHED", test="scratchpad-render-shows-facts", wrong="render-leaves-out-facts"),
    dict(rule="dict sections show '- key: value'", test="scratchpad-render-shows-facts", wrong="facts-show-only-keys"),
    dict(rule="each item is one line starting with '- '", test="scratchpad-render-item-lines",
         wrong="bullets-with-asterisks"),
    dict(rule="items appear in the order they were added", test="scratchpad-render-item-order",
         wrong="items-newest-first"),
    dict(rule="a blank line separates the goal and the sections", test="scratchpad-render-blank-lines",
         wrong="no-blank-lines"),
    dict(rule="the documented example renders exactly", test="scratchpad-render-visible", wrong="no-blank-lines"),
    # update_scratchpad
    dict(rule="a failure given as JSON text is recognised", test="update-scratchpad-json-text-failure",
         wrong="failures-missed-in-json-text"),
    dict(rule="the key is the call's name and arguments, not its id", test="update-scratchpad-failure-once",
         wrong="failures-keyed-by-call-id"),
    dict(rule="the key holds the arguments: different arguments are different calls",
         test="update-scratchpad-key-has-arguments", wrong="key-is-the-tool-name-only"),
    dict(rule="only a truthy error is a failure ({'error': null} is a success)",
         test="update-scratchpad-truthy-error-only", wrong="error-key-means-failure"),
    dict(rule="the reason is 'error: message'", test="update-scratchpad-failure-reason",
         wrong="reason-drops-the-message"),
    dict(rule="the reason is just the error when there is no message", test="update-scratchpad-failure-reason",
         wrong="reason-with-empty-message"),
    dict(rule="a failure adds nothing to DONE", test="update-scratchpad-json-text-failure",
         wrong="failure-also-listed-as-done"),
    dict(rule="plain text that is not JSON is a success, not an error", test="update-scratchpad-non-dict-results",
         wrong="parses-every-result-as-json"),
    dict(rule="JSON that is not a dict is a success", test="update-scratchpad-non-dict-results",
         wrong="assumes-json-is-a-dict"),
    dict(rule="the DONE line uses the first non-blank line of the result",
         test="update-scratchpad-done-first-non-blank-line", wrong="done-line-from-a-blank-first-line"),
    dict(rule="the result's line is cut to 80 characters, not the whole DONE line",
         test="update-scratchpad-done-line-cut-at-80", wrong="cuts-the-whole-done-line-at-80"),
    dict(rule="the cut adds nothing: exactly the first 80 characters", test="update-scratchpad-done-line-cut-at-80",
         wrong="adds-an-ellipsis-when-cut"),
    dict(rule="a dict success is written as json.dumps(result)", test="update-scratchpad-dict-success-as-json",
         wrong="dict-success-shown-with-str"),
    dict(rule="a success adds one short line, never the whole result", test="update-scratchpad-bounded-growth",
         wrong="unbounded-growth-copies-results"),
    dict(rule="a success clears an earlier failure of the same call", test="update-scratchpad-success-clears-failure",
         wrong="success-keeps-old-failure"),
    dict(rule="a timeout or a rate limit is transient: RETRY LATER, not DO NOT RETRY",
         test="update-scratchpad-transient-retry-later", wrong="every-failure-never-retried"),
    dict(rule="a status of 429 or 500 and above is transient", test="update-scratchpad-transient-retry-later",
         wrong="transient-by-error-name-only"),
    dict(rule="a RETRY LATER line gives the result's retry_after", test="update-scratchpad-transient-retry-later",
         wrong="retry-after-ignored"),
    dict(rule="a later transient failure replaces the RETRY LATER line", test="update-scratchpad-transient-retry-later",
         wrong="first-transient-failure-kept"),
    dict(rule="a transient failure of a call under DO NOT RETRY adds no RETRY LATER line",
         test="update-scratchpad-transient-retry-later", wrong="retries-later-what-failed-for-good"),
    dict(rule="a permanent failure removes the call's RETRY LATER line",
         test="update-scratchpad-transient-retry-later", wrong="permanent-failure-keeps-retry-later"),
    dict(rule="a success clears the call's RETRY LATER line", test="update-scratchpad-transient-retry-later",
         wrong="success-keeps-retry-later"),
    dict(rule="the pad given is changed in place", test="update-scratchpad-in-place-and-returned",
         wrong="returns-a-new-pad"),
    dict(rule="the pad is returned", test="update-scratchpad-in-place-and-returned", wrong="forgets-to-return-the-pad"),
    dict(rule="a dict failure is recorded with its key (the worked example)", test="update-scratchpad-visible",
         wrong="key-is-the-tool-name-only"),
    # render_bounded
    dict(rule="the result always fits the cap", test="render-bounded-fits-cap", wrong="unbounded-growth-sheds-only-done"),
    dict(rule="a pad that fits, even exactly at the cap, comes back unchanged", test="render-bounded-unchanged-when-fits",
         wrong="sheds-at-exactly-the-cap"),
    dict(rule="the goal is never shed", test="render-bounded-keeps-goal", wrong="drops-the-goal-to-fit"),
    dict(rule="a failure is never shed", test="render-bounded-keeps-failures", wrong="sheds-failures-last"),
    dict(rule="DONE is shed before anything else", test="render-bounded-sheds-done-first",
         wrong="sheds-questions-before-done"),
    dict(rule="DONE is shed oldest first", test="render-bounded-sheds-done-oldest-first", wrong="sheds-newest-done-first"),
    dict(rule="OPEN QUESTIONS go before ESTABLISHED", test="render-bounded-sheds-questions-before-facts",
         wrong="sheds-facts-before-questions"),
    dict(rule="OPEN QUESTIONS are shed oldest first", test="render-bounded-sheds-questions-before-facts",
         wrong="sheds-newest-question-first"),
    dict(rule="ESTABLISHED goes before REMAINING", test="render-bounded-sheds-facts-before-plan",
         wrong="sheds-plan-before-facts"),
    dict(rule="ESTABLISHED is shed oldest first", test="render-bounded-sheds-facts-before-plan",
         wrong="sheds-newest-fact-first"),
    dict(rule="REMAINING is shed from its end: the next step goes last", test="render-bounded-sheds-plan-from-the-end",
         wrong="sheds-the-next-step-first"),
    dict(rule="lines are shed one at a time, no more than needed", test="render-bounded-sheds-no-more-than-needed",
         wrong="clears-a-whole-section-at-once"),
    dict(rule="the pad given is not changed (work on a copy)", test="render-bounded-leaves-pad-unchanged",
         wrong="sheds-from-the-callers-pad"),
    dict(rule="goal and failures over the cap raise ctxlab.BudgetError", test="render-bounded-refuses-impossible",
         wrong="returns-over-cap-when-impossible"),
    dict(rule="the error is ctxlab.BudgetError, not another error", test="render-bounded-refuses-impossible",
         wrong="raises-valueerror-when-impossible"),
    dict(rule="goal and failures exactly at the cap fit (no error)", test="render-bounded-floor-at-the-cap",
         wrong="refuses-when-floor-equals-cap"),
    dict(rule="the error gives the tokens needed and the cap", test="render-bounded-error-gives-numbers",
         wrong="error-without-numbers"),
    dict(rule="thirty DONE lines under a 60-token cap keep the newest", test="render-bounded-visible",
         wrong="sheds-newest-done-first"),
    # replan_after
    dict(rule="a change that took out less than min_share gives None", test="replan-after-small-change-is-none",
         wrong="any-cut-is-due"),
    dict(rule="exactly min_share taken out is due (>=)", test="replan-after-at-exactly-the-share",
         wrong="strictly-more-than-the-share"),
    dict(rule="the share is what was taken out, not what is left", test="replan-after-at-exactly-the-share",
         wrong="due-when-shrunk-to-the-share"),
    dict(rule="the share is of tokens_before", test="replan-after-share-of-tokens-before",
         wrong="share-of-the-tokens-after"),
    dict(rule="min_share is the threshold", test="replan-after-uses-min-share", wrong="fixed-quarter-ignores-min-share"),
    dict(rule="only trim, summarise and summary_failed events count", test="replan-after-only-cutting-kinds",
         wrong="any-kind-calls-for-a-replan"),
    dict(rule="each of the three kinds counts, summary_failed too", test="replan-after-every-cutting-kind",
         wrong="forgets-summary-failed"),
    dict(rule="every event of the lap is looked at, not only the last", test="replan-after-looks-at-every-event",
         wrong="looks-only-at-the-last-event"),
    dict(rule="tokens_before of 0 is not due and raises nothing", test="replan-after-zero-tokens-before",
         wrong="divides-by-zero-tokens"),
    dict(rule="the message is ctxlab.replanning.replan_message(pad), not the whole scratchpad", test="replan-after-visible",
         wrong="replan-pastes-the-whole-scratchpad"),
    dict(rule="the result is ctxlab.replanning.replan_message(pad) itself, not its text", test="replan-after-visible",
         wrong="replan-returns-the-text"),
    # Scratchpad.render: repeats, falsy values, added order, read only
    dict(rule="a repeated item gives a repeated line", test="scratchpad-render-item-lines", wrong="drops-repeated-items"),
    dict(rule="an empty or zero value still shows", test="scratchpad-render-shows-facts", wrong="skips-falsy-values"),
    dict(rule="facts and failures keep the order they were added (not sorted)", test="scratchpad-render-item-order",
         wrong="sorts-facts-and-failures"),
    dict(rule="render only reads the pad: a second render gives the same text",
         test="scratchpad-render-leaves-pad-unchanged", wrong="render-empties-done"),
    # update_scratchpad: the key as given, the first reason, empty results, JSON text, one key cleared
    dict(rule="the key holds the arguments parsed and written with sorted keys, whatever their spacing",
         test="update-scratchpad-key-has-arguments", wrong="key-holds-the-arguments-as-given"),
    dict(rule="the key's arguments have their keys sorted", test="update-scratchpad-key-has-arguments",
         wrong="key-without-sorted-keys"),
    dict(rule="a repeated failure keeps the reason of its first failure", test="update-scratchpad-failure-once",
         wrong="newest-reason-replaces-the-first"),
    dict(rule="an empty or blank result is a success with nothing after ' -> '", test="update-scratchpad-non-dict-results",
         wrong="blank-result-crashes"),
    dict(rule="a JSON text success shows its own first non-blank line", test="update-scratchpad-dict-success-as-json",
         wrong="re-serialises-json-text"),
    dict(rule="a success clears only its own key: the same tool with other arguments keeps its line",
         test="update-scratchpad-success-clears-failure", wrong="success-clears-every-failure-of-the-tool"),
    # render_bounded
    dict(rule="shedding stops as soon as the text fits, at exactly the cap too",
         test="render-bounded-sheds-no-more-than-needed", wrong="stops-only-under-the-cap"),
    # replan_after
    dict(rule="each event is judged on its own share, not added to the others", test="replan-after-looks-at-every-event",
         wrong="adds-the-laps-events-together"),
    dict(rule="a big cut is due even when a small one comes after it", test="replan-after-looks-at-every-event",
         wrong="looks-only-at-the-last-cut"),
    dict(rule="an event that grew the context took nothing out", test="replan-after-small-change-is-none",
         wrong="growth-counts-as-a-cut"),
    dict(rule="the cut comes from tokens_before and tokens_after alone", test="replan-after-share-of-tokens-before",
         wrong="reads-the-saved-key"),
    # concept checks
    dict(rule="Q1: the scratchpad goes last for attention, after the cacheable prefix", test="q1-check",
         wrong="thinks-the-api-wants-user-last"),
    dict(rule="Q2: code records failures deterministically", test="q2-check", wrong="thinks-the-model-cannot-see-results"),
    dict(rule="Q3: shed by priority, keep goal and failures", test="q3-check", wrong="cuts-the-text-at-the-cap"),
    dict(rule="Q4: short-term is the growing transcript, working memory the rewritten scratchpad", test="q4-check",
         wrong="thinks-both-memories-are-the-transcript"),
    dict(rule="Q4: working memory is sent to the model as the last message", test="q4-check",
         wrong="thinks-working-memory-is-never-sent"),
    dict(rule="Q4: the model keeps nothing between calls", test="q4-check",
         wrong="thinks-working-memory-is-the-models-head"),
]

# Concept checks: the wrong options of the questions listed above with fewer (each fails its check).
WRONG_ANSWERS += [
    dict(name="thinks-the-pad-goes-last-to-be-trimmed-first", cell="q1-answer", source='q1 = "c"', fails=["q1-check"]),
    dict(name="thinks-the-pad-can-go-anywhere", cell="q1-answer", source='q1 = "d"', fails=["q1-check"]),
    dict(name="thinks-code-writes-better-english", cell="q2-answer", source='q2 = "a"', fails=["q2-check"]),
    dict(name="thinks-the-model-may-not-write-the-pad", cell="q2-answer", source='q2 = "d"', fails=["q2-check"]),
    dict(name="raises-the-cap-instead", cell="q3-answer", source='q3 = "a"', fails=["q3-check"]),
    dict(name="thinks-the-first-message-holds-the-goal", cell="q3-answer", source='q3 = "b"', fails=["q3-check"]),
]
RULES += [
    dict(rule="Q1: the scratchpad goes last for attention, after the cacheable prefix", test="q1-check", wrong="thinks-the-pad-goes-last-to-be-trimmed-first"),
    dict(rule="Q1: the scratchpad goes last for attention, after the cacheable prefix", test="q1-check", wrong="thinks-the-pad-can-go-anywhere"),
    dict(rule="Q2: code records failures deterministically", test="q2-check", wrong="thinks-code-writes-better-english"),
    dict(rule="Q2: code records failures deterministically", test="q2-check", wrong="thinks-the-model-may-not-write-the-pad"),
    dict(rule="Q3: shed by priority, keep goal and failures", test="q3-check", wrong="raises-the-cap-instead"),
    dict(rule="Q3: shed by priority, keep goal and failures", test="q3-check", wrong="thinks-the-first-message-holds-the-goal"),
]

WRONG_ANSWERS += [
    dict(name='own-budgeterror-class', cell='render-bounded', source='''
import copy


class BudgetError(Exception):
    pass


def render_bounded(pad, max_tokens):
    if ctxlab.count_text(pad.render()) <= max_tokens:
        return pad.render()
    work = copy.deepcopy(pad)
    steps = [(work.done, 0), (work.open_questions, 0), (work.facts, 0), (work.remaining, -1)]
    for section, position in steps:
        while section:
            if isinstance(section, dict):
                del section[next(iter(section))]
            else:
                section.pop(position)
            text = work.render()
            if ctxlab.count_text(text) <= max_tokens:
                return text
    needed = ctxlab.count_text(work.render())
    raise BudgetError(f"the goal and the failures alone take {needed} tokens, over the cap of {max_tokens}")
''', fails=['render-bounded-refuses-impossible', 'render-bounded-error-gives-numbers']),
]
RULES += [
    dict(rule="the refusal is ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name", test='render-bounded-refuses-impossible', wrong='own-budgeterror-class'),
]


# Answers that hand the exercise to ctxlab's own code by a way around the switch-off: each must
# lose the named tests' points, whatever the error (tests/test_lessons.py).
ATTACKS = [
]
ATTACKS += [
    dict(name='replan-copies-the-code-object', cell='replan-after', source=r'''
import types
_d = ctxlab.replanning.replan_due
_due = types.FunctionType(_d.__code__, _d.__globals__, "replan_due", _d.__defaults__, _d.__closure__)
_due.__kwdefaults__ = dict(_d.__kwdefaults__ or {})
def replan_after(pad, events, min_share=0.25):
    import inspect
    try:
        due = _due(events, min_share=min_share)
    except TypeError:
        due = _due(events, min_share)
    if not due:
        return None
    parts = [f"{ctxlab.replanning.REPLAN_HEADER}\nGOAL: {pad.goal}"]
    if pad.remaining:
        parts.append("REMAINING:\n" + "\n".join(f"- {step}" for step in pad.remaining))
    if pad.failed:
        parts.append("DO NOT RETRY:\n" + "\n".join(f"- {call}: {reason}" for call, reason in pad.failed.items()))
    return {"role": "user", "content": "\n\n".join(parts)}
''', fails=['replan-after-visible', 'replan-after-small-change-is-none']),
]
ATTACKS += [
    dict(name='render-bounded-copies-the-code-objects', cell='render-bounded', source='''
import types
_S = ctxlab.Scratchpad
def _clone(f):
    return types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
_bounded, _plan, _sheddable = _clone(_S._bounded), _clone(_S._shed_plan), _clone(_S.sheddable)
class _Shim:
    def __init__(self, pad):
        self.__dict__.update(vars(pad))
        self._pad = pad
    def _text(self, shed):
        return self._pad._text(shed)
    def lines(self, section):
        return self._pad.lines(section)
    def sheddable(self):
        return _sheddable(self)
    def _shed_plan(self, k):
        return _plan(self, k)
def render_bounded(pad, max_tokens):
    return _bounded(_Shim(pad), max_tokens, ctxlab.count_text)
''', fails=['render-bounded-visible', 'render-bounded-fits-cap']),
]
ATTACKS += [
    dict(name='render-copies-the-code-objects', cell='scratchpad-render', source='''
import types
def _clone(f, name):
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g
@dataclass
class Scratchpad:
    goal: str
    facts: dict = field(default_factory=dict)
    done: list = field(default_factory=list)
    remaining: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    open_questions: list = field(default_factory=list)
    lines = _clone(ctxlab.Scratchpad.lines, "lines")
    _text = _clone(ctxlab.Scratchpad._text, "_text")

    def render(self):
        return self._text({})
''', fails=['scratchpad-render-visible', 'scratchpad-render-goal-first']),
]
ATTACKS += [
    dict(name='subclasses-ctxlabs-scratchpad', cell='scratchpad-render', source='''
@dataclass
class Scratchpad(ctxlab.Scratchpad):
    def render(self):
        return ctxlab.Scratchpad.render(self)
''', fails=['scratchpad-render-visible', 'scratchpad-render-goal-first']),
]


# Found by grading probes against the stated rules; each now fails the named test.
WRONG_ANSWERS += [
    dict(name='reason-by-string-concatenation', cell='update-scratchpad', source='''
def update_scratchpad(pad, call, result):
    """Record one tool call and its result in `pad` (in place) and return `pad`.

    >>> pad = update_scratchpad(ctxlab.Scratchpad(goal="g"),
    ...     {"id": "c1", "type": "function", "function": {"name": "fetch_pdf", "arguments": "{}"}},
    ...     '{"error": "http_403", "message": "paywall"}')
    >>> pad.failed
    {'fetch_pdf {}': 'http_403: paywall'}
    """
    key = f"{call['function']['name']} {call['function']['arguments']}"
    data = result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            data = result
    if isinstance(data, dict) and data.get("error"):
        reason = data['error'] + ': ' + data['message'] if data.get("message") else data["error"]
        pad.failed.setdefault(key, reason)
        return pad
    pad.failed.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result)
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    pad.done.append(f"{key} -> {first_line[:80]}")
    return pad
''', fails=['update-scratchpad-failure-reason']),
    dict(name='strips-the-done-line', cell='update-scratchpad', source='''
def update_scratchpad(pad, call, result):
    """Record one tool call and its result in `pad` (in place) and return `pad`.

    >>> pad = update_scratchpad(ctxlab.Scratchpad(goal="g"),
    ...     {"id": "c1", "type": "function", "function": {"name": "fetch_pdf", "arguments": "{}"}},
    ...     '{"error": "http_403", "message": "paywall"}')
    >>> pad.failed
    {'fetch_pdf {}': 'http_403: paywall'}
    """
    key = f"{call['function']['name']} {call['function']['arguments']}"
    data = result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            data = result
    if isinstance(data, dict) and data.get("error"):
        reason = f"{data['error']}: {data['message']}" if data.get("message") else str(data["error"])
        pad.failed.setdefault(key, reason)
        return pad
    pad.failed.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result)
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    pad.done.append(f"{key} -> {first_line[:80]}")
    return pad
''', fails=['update-scratchpad-done-first-non-blank-line']),
    dict(name='rounds-the-share', cell='replan-after', source='''
def replan_after(pad, events, min_share=0.25):
    """The message asking the model to restate its plan after a big change, or None.

    >>> replan_after(ctxlab.Scratchpad(goal="g"), [{"kind": "trim", "tokens_before": 900, "tokens_after": 850}]) is None
    True
    """
    due = any(
        event["kind"] in ("trim", "summarise", "summary_failed")
        and event["tokens_before"] > 0
        and round((event["tokens_before"] - event["tokens_after"]) / event["tokens_before"], 2) >= min_share
        for event in events
    )
    if not due:
        return None
    parts = [f"{ctxlab.replanning.REPLAN_HEADER}\\nGOAL: {pad.goal}"]
    if pad.remaining:
        parts.append("REMAINING:\\n" + "\\n".join(f"- {step}" for step in pad.remaining))
    if pad.failed:
        parts.append("DO NOT RETRY:\\n" + "\\n".join(f"- {call}: {reason}" for call, reason in pad.failed.items()))
    return {"role": "user", "content": "\\n\\n".join(parts)}
''', fails=['replan-after-small-change-is-none']),
    dict(name='skips-empty-items', cell='scratchpad-render', source='''
@dataclass
class Scratchpad:
    """Working memory: goal, facts, done, remaining, failed calls, open questions."""

    goal: str
    facts: dict = field(default_factory=dict)
    done: list = field(default_factory=list)
    remaining: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    open_questions: list = field(default_factory=list)

    def render(self):
        """The scratchpad as text: "GOAL: ..." first, then each non-empty section in order.

        >>> print(Scratchpad(goal="Fix bug #412", remaining=["run the tests"]).render())
        GOAL: Fix bug #412
        <BLANKLINE>
        REMAINING:
        - run the tests
        """
        parts = [f"GOAL: {self.goal}"]
        sections = [
            ("ESTABLISHED", [f"- {k}: {v}" for k, v in self.facts.items()]),
            ("DONE", [f"- {item}" for item in self.done if item]),
            ("REMAINING", [f"- {item}" for item in self.remaining if item]),
            ("DO NOT RETRY", [f"- {k}: {v}" for k, v in self.failed.items()]),
            ("OPEN QUESTIONS", [f"- {item}" for item in self.open_questions if item]),
        ]
        for heading, lines in sections:
            if lines:
                parts.append(f"{heading}:\\n" + "\\n".join(lines))
        return "\\n\\n".join(parts)
''', fails=['scratchpad-render-item-lines']),
    dict(name='empty-message-kept-after-a-colon', cell='update-scratchpad', source='''
def update_scratchpad(pad, call, result):
    """Record one tool call and its result in `pad` (in place) and return `pad`.

    >>> pad = update_scratchpad(ctxlab.Scratchpad(goal="g"),
    ...     {"id": "c1", "type": "function", "function": {"name": "fetch_pdf", "arguments": "{}"}},
    ...     '{"error": "http_403", "message": "paywall"}')
    >>> pad.failed
    {'fetch_pdf {}': 'http_403: paywall'}
    """
    key = f"{call['function']['name']} {call['function']['arguments']}"
    data = result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            data = result
    if isinstance(data, dict) and data.get("error"):
        reason = f"{data['error']}: {data['message']}" if "message" in data and data['message'] is not None else str(data["error"])
        pad.failed.setdefault(key, reason)
        return pad
    pad.failed.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result)
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    pad.done.append(f"{key} -> {first_line[:80]}")
    return pad
''', fails=['update-scratchpad-failure-reason']),
    dict(name='dict-success-without-ascii-escapes', cell='update-scratchpad', source='''
def update_scratchpad(pad, call, result):
    """Record one tool call and its result in `pad` (in place) and return `pad`.

    >>> pad = update_scratchpad(ctxlab.Scratchpad(goal="g"),
    ...     {"id": "c1", "type": "function", "function": {"name": "fetch_pdf", "arguments": "{}"}},
    ...     '{"error": "http_403", "message": "paywall"}')
    >>> pad.failed
    {'fetch_pdf {}': 'http_403: paywall'}
    """
    key = f"{call['function']['name']} {call['function']['arguments']}"
    data = result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            data = result
    if isinstance(data, dict) and data.get("error"):
        reason = f"{data['error']}: {data['message']}" if data.get("message") else str(data["error"])
        pad.failed.setdefault(key, reason)
        return pad
    pad.failed.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    pad.done.append(f"{key} -> {first_line[:80]}")
    return pad
''', fails=['update-scratchpad-dict-success-as-json']),
    dict(name='status-error-counts-as-failure', cell='update-scratchpad', source='''
def update_scratchpad(pad, call, result):
    """Record one tool call and its result in `pad` (in place) and return `pad`.

    >>> pad = update_scratchpad(ctxlab.Scratchpad(goal="g"),
    ...     {"id": "c1", "type": "function", "function": {"name": "fetch_pdf", "arguments": "{}"}},
    ...     '{"error": "http_403", "message": "paywall"}')
    >>> pad.failed
    {'fetch_pdf {}': 'http_403: paywall'}
    """
    key = f"{call['function']['name']} {call['function']['arguments']}"
    data = result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            data = result
    if isinstance(data, dict) and (data.get("error") or data.get("status") == "error"):
        reason = f"{data['error']}: {data['message']}" if data.get("message") else str(data["error"])
        pad.failed.setdefault(key, reason)
        return pad
    pad.failed.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result)
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    pad.done.append(f"{key} -> {first_line[:80]}")
    return pad
''', fails=['update-scratchpad-truthy-error-only']),
]
RULES += [
    dict(rule='the reason is f"{error}: {message}" for any error value (a number, true), not string concatenation', test='update-scratchpad-failure-reason', wrong='reason-by-string-concatenation'),
    dict(rule='the DONE line holds the first non-blank line as it is, leading spaces included', test='update-scratchpad-done-first-non-blank-line', wrong='strips-the-done-line'),
    dict(rule='the cut is compared exactly with min_share * tokens_before: 24.9% is under a quarter', test='replan-after-small-change-is-none', wrong='rounds-the-share'),
    dict(rule="a zero or empty item of a list section still gives its '- ' line", test='scratchpad-render-item-lines', wrong='skips-empty-items'),
    dict(rule='an empty or null message gives the error alone as the reason', test='update-scratchpad-failure-reason', wrong='empty-message-kept-after-a-colon'),
    dict(rule='a dict success is written with json.dumps and its defaults (characters outside ASCII escaped)', test='update-scratchpad-dict-success-as-json', wrong='dict-success-without-ascii-escapes'),
    dict(rule="only a truthy 'error' key makes a failure: a 'status' of 'error' is a success", test='update-scratchpad-truthy-error-only', wrong='status-error-counts-as-failure'),
]


# A further probe round: each breaks one stated rule and now fails the named test.
WRONG_ANSWERS += [
    dict(name="failure-with-empty-reason-skipped", fails=["scratchpad-render-shows-failures"],
         **render(("for k, v in self.failed.items()]", "for k, v in self.failed.items() if v]"))),
    dict(name="fact-with-empty-value-skipped", fails=["scratchpad-render-shows-facts"],
         **render(("for k, v in self.facts.items()]", 'for k, v in self.facts.items() if v != ""]'))),
    dict(name="render-sorts-questions-in-place", fails=["scratchpad-render-leaves-pad-unchanged"],
         **render(('        parts = [f"GOAL: {self.goal}"]\n',
                   '        self.open_questions.sort()\n        parts = [f"GOAL: {self.goal}"]\n'))),
    dict(name="render-keeps-its-first-text", fails=["scratchpad-render-leaves-pad-unchanged"],
         **render(('        parts = [f"GOAL: {self.goal}"]\n',
                   '        if getattr(self, "_text", None) is not None:\n            return self._text\n'
                   '        parts = [f"GOAL: {self.goal}"]\n'),
                  ('        return "\\n\\n".join(parts)',
                   '        self._text = "\\n\\n".join(parts)\n        return self._text'))),
    dict(name="repeated-failure-moves-to-the-end", fails=["update-scratchpad-failure-once"],
         **update(("pad.failed.setdefault(key, reason)",
                   "reason = pad.failed.pop(key, reason)\n        pad.failed[key] = reason"))),
    dict(name="empty-list-error-is-a-failure", fails=["update-scratchpad-truthy-error-only"],
         **update(('isinstance(data, dict) and data.get("error")',
                   'isinstance(data, dict) and data.get("error") not in (None, "", False)'))),
    dict(name="json-detected-by-a-leading-brace", fails=["update-scratchpad-json-text-failure"],
         **update(("    if isinstance(result, str):\n        try:",
                   '    if isinstance(result, str) and result.startswith("{"):\n        try:'))),
    dict(name="lines-split-on-newline-only", fails=["update-scratchpad-done-first-non-blank-line"],
         **update(("for line in text.splitlines() if line.strip()", 'for line in text.split("\\n") if line.strip()'))),
    dict(name="same-success-listed-once", fails=["update-scratchpad-bounded-growth"],
         **update(('    pad.done.append(f"{key} -> {first_line[:80]}")',
                   '    line = f"{key} -> {first_line[:80]}"\n    if line not in pad.done:\n        pad.done.append(line)'))),
    dict(name="replan-clears-done", fails=["replan-after-leaves-inputs-unchanged"],
         **replan((MESSAGE, "pad.done.clear()\n    " + MESSAGE))),
]
RULES += [
    dict(rule="a failure with an empty reason still shows under DO NOT RETRY", test="scratchpad-render-shows-failures",
         wrong="failure-with-empty-reason-skipped"),
    dict(rule="a fact with an empty value still shows", test="scratchpad-render-shows-facts",
         wrong="fact-with-empty-value-skipped"),
    dict(rule="render leaves every field as it was, open questions in their order too",
         test="scratchpad-render-leaves-pad-unchanged", wrong="render-sorts-questions-in-place"),
    dict(rule="render builds the text from the fields each time: a line added later shows",
         test="scratchpad-render-leaves-pad-unchanged", wrong="render-keeps-its-first-text"),
    dict(rule="a later failure of a recorded call changes nothing, not even its place in DO NOT RETRY",
         test="update-scratchpad-failure-once", wrong="repeated-failure-moves-to-the-end"),
    dict(rule="only a truthy 'error' is a failure: an empty list is not", test="update-scratchpad-truthy-error-only",
         wrong="empty-list-error-is-a-failure"),
    dict(rule="JSON text of a dict is recognised with white space before it", test="update-scratchpad-json-text-failure",
         wrong="json-detected-by-a-leading-brace"),
    dict(rule="the first non-blank line ends at any line end (\\r\\n too)",
         test="update-scratchpad-done-first-non-blank-line", wrong="lines-split-on-newline-only"),
    dict(rule="each success adds its own DONE line, the same one again included", test="update-scratchpad-bounded-growth",
         wrong="same-success-listed-once"),
    dict(rule="replan_after only reads the pad: DONE, facts and questions stay in it", test="replan-after-leaves-inputs-unchanged",
         wrong="replan-clears-done"),
]

# Trivial answers that passed the tests whose property they meet by doing nothing (a pad never
# shed keeps its goal and failures; None is right when no re-plan is due).
WRONG_ANSWERS += [
    dict(name="render-bounded-never-sheds", cell="render-bounded",
         source="import copy\n\n\ndef render_bounded(pad, max_tokens):\n    return pad.render()\n",
         fails=["render-bounded-unchanged-when-fits", "render-bounded-keeps-goal", "render-bounded-keeps-failures",
                "render-bounded-sheds-done-first", "render-bounded-leaves-pad-unchanged"]),
    dict(name="replan-never", cell="replan-after",
         source="def replan_after(pad, events, min_share=0.25):\n    return None\n",
         fails=["replan-after-small-change-is-none", "replan-after-only-cutting-kinds", "replan-after-zero-tokens-before"]),
]
RULES += [
    dict(rule="a pad over the cap is shed until it fits", test="render-bounded-keeps-goal", wrong="render-bounded-never-sheds"),
    dict(rule="a cut of a quarter or more by a cutting kind calls for a re-plan", test="replan-after-small-change-is-none",
         wrong="replan-never"),
]

# A later probe round: each broke a stated rule with full marks, and now fails the named test.
WRONG_ANSWERS += [
    dict(name="questions-in-reverse-order", fails=["scratchpad-render-item-order"],
         **render(("for item in self.open_questions]", "for item in reversed(self.open_questions)]"))),
    dict(name="questions-sorted", fails=["scratchpad-render-item-order"],
         **render(("for item in self.open_questions]", "for item in sorted(self.open_questions, key=str)]"))),
    dict(name="repeated-questions-shown-once", fails=["scratchpad-render-item-lines"],
         **render(("for item in self.open_questions]", "for item in dict.fromkeys(self.open_questions)]"))),
    dict(name="failure-returns-nothing", fails=["update-scratchpad-in-place-and-returned"],
         **update(("        pad.failed.setdefault(key, reason)\n        return pad", "        pad.failed.setdefault(key, reason)\n        return"))),
    dict(name="first-line-without-its-trailing-spaces", fails=["update-scratchpad-done-first-non-blank-line"],
         **update(("first_line = next((line for line", "first_line = next((line.rstrip() for line"))),
    dict(name="cut-line-without-its-trailing-spaces", fails=["update-scratchpad-done-first-non-blank-line"],
         **update(("{first_line[:80]}", "{first_line[:80].rstrip()}"))),
    dict(name="sheds-two-lines-at-a-time-after-done", fails=["render-bounded-sheds-no-more-than-needed"],
         **bounded(("                section.pop(position)",
                    "                section.pop(position)\n                if section and section is not work.done:\n"
                    "                    section.pop(position)"),
                   ("                del section[next(iter(section))]",
                    "                del section[next(iter(section))]\n                if section:\n"
                    "                    del section[next(iter(section))]"))),
    dict(name="replan-writes-the-share-into-the-events", fails=["replan-after-leaves-inputs-unchanged"],
         **replan(("    due = any(", '    for event in events:\n        event["share"] = (event["tokens_before"] - '
                   'event["tokens_after"]) / event["tokens_before"] if event["tokens_before"] else 0\n    due = any('))),
    dict(name="replan-sorts-the-events", fails=["replan-after-leaves-inputs-unchanged"],
         **replan(("    due = any(", '    events.sort(key=lambda e: e["tokens_before"], reverse=True)\n    due = any('))),
]
RULES += [
    dict(rule="open questions show in the order they were added", test="scratchpad-render-item-order",
         wrong="questions-in-reverse-order"),
    dict(rule="open questions show in the order they were added, not sorted", test="scratchpad-render-item-order",
         wrong="questions-sorted"),
    dict(rule="a repeated open question gives a repeated line", test="scratchpad-render-item-lines",
         wrong="repeated-questions-shown-once"),
    dict(rule="update_scratchpad returns the pad after a failure too", test="update-scratchpad-in-place-and-returned",
         wrong="failure-returns-nothing"),
    dict(rule="the DONE line holds the first non-blank line as it is, trailing spaces included",
         test="update-scratchpad-done-first-non-blank-line", wrong="first-line-without-its-trailing-spaces"),
    dict(rule="the DONE line holds the line's first 80 characters as they are, not stripped after the cut",
         test="update-scratchpad-done-first-non-blank-line", wrong="cut-line-without-its-trailing-spaces"),
    dict(rule="lines are shed one at a time in every section, stopping as soon as it fits",
         test="render-bounded-sheds-no-more-than-needed", wrong="sheds-two-lines-at-a-time-after-done"),
    dict(rule="replan_after only reads the events: it adds nothing to them", test="replan-after-leaves-inputs-unchanged",
         wrong="replan-writes-the-share-into-the-events"),
    dict(rule="replan_after only reads the events: their order stays", test="replan-after-leaves-inputs-unchanged",
         wrong="replan-sorts-the-events"),
]

# Another probe round: each broke a stated rule with full marks, and now fails the named test.
WRONG_ANSWERS += [
    dict(name="blank-items-skipped", fails=["scratchpad-render-item-lines"],
         **render(("for item in self.done]", "for item in self.done if str(item).strip()]"),
                  ("for item in self.remaining]", "for item in self.remaining if str(item).strip()]"),
                  ("for item in self.open_questions]", "for item in self.open_questions if str(item).strip()]"))),
    dict(name="none-items-skipped", fails=["scratchpad-render-item-lines"],
         **render(("for item in self.done]", "for item in self.done if item is not None]"),
                  ("for item in self.open_questions]", "for item in self.open_questions if item is not None]"))),
    dict(name="facts-with-none-skipped", fails=["scratchpad-render-shows-facts"],
         **render(("for k, v in self.facts.items()]", "for k, v in self.facts.items() if v is not None]"))),
    dict(name="lines-split-on-newline-and-crlf-only", fails=["update-scratchpad-done-first-non-blank-line"],
         **update(("for line in text.splitlines() if", 'for line in text.replace("\\r\\n", "\\n").split("\\n") if'))),
    dict(name="sheds-failures-without-a-reason", fails=["render-bounded-keeps-failures"],
         **bounded((STEPS, STEPS + "\n    for key in [k for k, v in work.failed.items() if not v]:\n        del work.failed[key]"))),
    dict(name="copy-shares-the-plan", fails=["render-bounded-leaves-pad-unchanged"],
         **bounded(("work = copy.deepcopy(pad)",
                    "work = ctxlab.Scratchpad(goal=pad.goal, facts=dict(pad.facts), done=list(pad.done), "
                    "remaining=pad.remaining, failed=dict(pad.failed), open_questions=list(pad.open_questions))"))),
    dict(name="copy-shares-the-facts", fails=["render-bounded-leaves-pad-unchanged"],
         **bounded(("work = copy.deepcopy(pad)",
                    "work = ctxlab.Scratchpad(goal=pad.goal, facts=pad.facts, done=list(pad.done), "
                    "remaining=list(pad.remaining), failed=dict(pad.failed), open_questions=list(pad.open_questions))"))),
    dict(name="copy-shares-the-questions", fails=["render-bounded-leaves-pad-unchanged"],
         **bounded(("work = copy.deepcopy(pad)",
                    "work = ctxlab.Scratchpad(goal=pad.goal, facts=dict(pad.facts), done=list(pad.done), "
                    "remaining=list(pad.remaining), failed=dict(pad.failed), open_questions=pad.open_questions)"))),
    dict(name="small-talk-calls-for-a-replan", fails=["replan-after-only-cutting-kinds"],
         **replan(('("trim", "summarise", "summary_failed")', '("trim", "summarise", "summary_failed", "small_talk")'))),
]
RULES += [
    dict(rule="an empty item of DONE, REMAINING or OPEN QUESTIONS still gives its '- ' line",
         test="scratchpad-render-item-lines", wrong="blank-items-skipped"),
    dict(rule="an item None still gives its line", test="scratchpad-render-item-lines", wrong="none-items-skipped"),
    dict(rule="a fact whose value is None still shows", test="scratchpad-render-shows-facts",
         wrong="facts-with-none-skipped"),
    dict(rule="the first non-blank line ends at any line end, a lone \\r too",
         test="update-scratchpad-done-first-non-blank-line", wrong="lines-split-on-newline-and-crlf-only"),
    dict(rule="a failure with an empty reason is never shed either", test="render-bounded-keeps-failures",
         wrong="sheds-failures-without-a-reason"),
    dict(rule="shedding works on a copy of every field: the plan given stays whole",
         test="render-bounded-leaves-pad-unchanged", wrong="copy-shares-the-plan"),
    dict(rule="shedding works on a copy of every field: the facts given stay whole",
         test="render-bounded-leaves-pad-unchanged", wrong="copy-shares-the-facts"),
    dict(rule="shedding works on a copy of every field: the open questions given stay whole",
         test="render-bounded-leaves-pad-unchanged", wrong="copy-shares-the-questions"),
    dict(rule="only ctxlab.replanning.REPLAN_KINDS make a re-plan due: small_talk does not", test="replan-after-only-cutting-kinds",
         wrong="small-talk-calls-for-a-replan"),
]

# The judge now hands back the test's own objects where the answer returns them, so identity
# can be asked there as in Python: this answer scored full marks until then.
WRONG_ANSWERS += [
    dict(name="failure-returns-a-copy-of-the-pad", fails=["update-scratchpad-in-place-and-returned"],
         **update(("        pad.failed.setdefault(key, reason)\n        return pad",
                   "        pad.failed.setdefault(key, reason)\n        return copy.copy(pad)"))),
]
RULES += [
    dict(rule="update_scratchpad returns the pad it was given, not an equal copy", test="update-scratchpad-in-place-and-returned",
         wrong="failure-returns-a-copy-of-the-pad"),
]

# The words of each exercise's text that state each rule (tests/test_rule_map.py checks them).
_ORDER = ("then the sections in this order: ESTABLISHED (from facts), DONE, REMAINING, DO NOT RETRY (from failed), "
          "OPEN QUESTIONS")
_ITEMS = "then one - line per item, in the order the items were added"
_VALUES = "an empty, zero or None value still shows"
_REPEATED = "a repeated item gives a repeated line"
_READS = ("render only reads the pad: the agent renders it on every lap, so rendering it twice gives the same text and "
          "leaves every field as it was")
_DICT = "Dict sections show - key: value"
_KEY = "The key for a call is its name, a space, and its arguments written canonically"
_CANONICAL = "f\"{name} {json.dumps(json.loads(arguments), sort_keys=True)}\""
_FAILURE = "A result is a failure when it is a dict, or JSON text of a dict, with a truthy \"error\""
_REASON = "Its reason is f\"{error}: {message}\" (just the error when there is no \"message\", or it is empty or null)"
_TRANSIENT = ("A failure is transient when its \"error\" is \"timeout\" or \"rate_limited\", or its \"status\" is 429 "
              "or 500 and above")
_RETRY_LATER = ("Record pad.retry_later[key]: the reason, then (retry after N s) when the result has a number "
                "\"retry_after\" (N as it is), else (retry later)")
_ONCE = ("record pad.failed[key] = reason (DO NOT RETRY) once, the first time the call fails; a later failure of the "
         "same call changes nothing, not even the reason")
_SUCCESS = "Anything else is a success, including plain text, an empty result and JSON that is not a dict"
_ONE_LINE = ("Add one line to pad.done: the key, -> , and the first non-blank line of the result cut to its first 80 "
             "characters (nothing when the result is empty or blank)")
_AS_IS = "The line is taken as it is, its spaces included, and ends at any line end"
_JSON = "A dict result is written as json.dumps(result) first; a text result, JSON text included, is used as it is"
_CLEARS = ("Remove the key from pad.failed and from pad.retry_later if it was there (that key only: the same tool "
           "called with other arguments keeps its line)")
_IN_PLACE = "Change pad in place and return it"
_FITS = "a text fits when it has at most max_tokens tokens"
_SHED = "Otherwise shed lines one at a time in the order above, no more than needed, until the rendering fits"
_SHED_ORDER = ("Shed DONE (oldest first), then OPEN QUESTIONS (oldest first), then ESTABLISHED (oldest first), then "
               "REMAINING (last first)")
_NEVER = "Never shed the goal or a failure"
_COPY = "Work on a copy (copy.deepcopy(pad)): the pad given stays as it was"
_REFUSE = "If the goal and the failures alone do not fit, raise ctxlab.BudgetError with both numbers in the message"
_DUE = "tokens_before - tokens_after >= min_share * tokens_before"
_ANY_EVENT = "A re-plan is due when at least one event (any of them, not only the last) has a kind in"
_KINDS = "ctxlab.replanning.REPLAN_KINDS (\"trim\", \"summarise\", \"summary_failed\")"
_MESSAGE = "Otherwise return ctxlab.replanning.replan_message(pad), the message built for you"
_ONLY_READS = "replan_after only reads pad and events: it changes neither"
TAUGHT = {
    # Scratchpad.render
    "a blank line separates the goal and the sections": "a blank line separates the goal and the sections",
    "the first line is 'GOAL: ' and the goal": "the first line is GOAL: followed by the goal",
    "the goal is a line of its own, not a section": (
        "the first line is GOAL: followed by the goal", "a blank line separates the goal and the sections"),
    "a repeated item gives a repeated line": _REPEATED,
    "a repeated open question gives a repeated line": _REPEATED,
    "a zero or empty item of a list section still gives its '- ' line": _VALUES,
    "an empty item of DONE, REMAINING or OPEN QUESTIONS still gives its '- ' line": _VALUES,
    "an item None still gives its line": _VALUES,
    "each item is one line starting with '- '": _ITEMS,
    "facts and failures keep the order they were added (not sorted)": _ITEMS,
    "items appear in the order they were added": _ITEMS,
    "open questions show in the order they were added": _ITEMS,
    "open questions show in the order they were added, not sorted": _ITEMS,
    "render builds the text from the fields each time: a line added later shows": _READS,
    "render leaves every field as it was, open questions in their order too": _READS,
    "render only reads the pad: a second render gives the same text": _READS,
    "an empty section is left out, heading and all": "an empty section is left out",
    "DO NOT RETRY comes before OPEN QUESTIONS": _ORDER,
    "DONE comes before REMAINING": _ORDER,
    "each heading is followed by a colon": "each section is its heading followed by a colon",
    "a fact whose value is None still shows": _VALUES,
    "a fact with an empty value still shows": _VALUES,
    "an empty or zero value still shows": _VALUES,
    "dict sections show '- key: value'": _DICT,
    "facts appear under ESTABLISHED": _ORDER,
    "a failure with an empty reason still shows under DO NOT RETRY": (_ORDER, _VALUES),
    "every failure appears as '- call: reason' under DO NOT RETRY": (_ORDER, _DICT),
    "the documented example renders exactly": ("GOAL: <goal>", "ESTABLISHED: - <fact>: <value>"),
    # update_scratchpad
    "a success adds one short line, never the whole result": _ONE_LINE,
    "each success adds its own DONE line, the same one again included": (_SUCCESS, _ONE_LINE),
    "a JSON text success shows its own first non-blank line": _JSON,
    "a dict success is written as json.dumps(result)": _JSON,
    "a dict success is written with json.dumps and its defaults (characters outside ASCII escaped)": _JSON,
    "the DONE line holds the first non-blank line as it is, leading spaces included": _AS_IS,
    "the DONE line holds the first non-blank line as it is, trailing spaces included": _AS_IS,
    "the DONE line holds the line's first 80 characters as they are, not stripped after the cut": (_ONE_LINE, _AS_IS),
    "the DONE line uses the first non-blank line of the result": _ONE_LINE,
    "the first non-blank line ends at any line end (\\r\\n too)": "ends at any line end (\\n, \\r\\n or a lone \\r",
    "the first non-blank line ends at any line end, a lone \\r too": "ends at any line end (\\n, \\r\\n or a lone \\r",
    "the cut adds nothing: exactly the first 80 characters": _ONE_LINE,
    "the result's line is cut to 80 characters, not the whole DONE line": _ONE_LINE,
    "a later failure of a recorded call changes nothing, not even its place in DO NOT RETRY": _ONCE,
    "a repeated failure keeps the reason of its first failure": _ONCE,
    "the key is the call's name and arguments, not its id": _KEY,
    "an empty or null message gives the error alone as the reason": _REASON,
    "the reason is 'error: message'": _REASON,
    "the reason is f\"{error}: {message}\" for any error value (a number, true), not string concatenation": _REASON,
    "the reason is just the error when there is no message": _REASON,
    "the pad given is changed in place": _IN_PLACE,
    "the pad is returned": _IN_PLACE,
    "update_scratchpad returns the pad after a failure too": _IN_PLACE,
    "update_scratchpad returns the pad it was given, not an equal copy": _IN_PLACE,
    "JSON text of a dict is recognised with white space before it": _FAILURE,
    "a failure adds nothing to DONE": "Add nothing to pad.done",
    "a failure given as JSON text is recognised": _FAILURE,
    "the key holds the arguments parsed and written with sorted keys, whatever their spacing": (_KEY, _CANONICAL),
    "the key holds the arguments: different arguments are different calls": _KEY,
    "the key's arguments have their keys sorted": _CANONICAL,
    "JSON that is not a dict is a success": _SUCCESS,
    "an empty or blank result is a success with nothing after ' -> '": (_SUCCESS, _ONE_LINE),
    "plain text that is not JSON is a success, not an error": _SUCCESS,
    "a success clears an earlier failure of the same call": _CLEARS,
    "a success clears only its own key: the same tool with other arguments keeps its line": _CLEARS,
    "a RETRY LATER line gives the result's retry_after": _RETRY_LATER,
    "a later transient failure replaces the RETRY LATER line":
        "A later transient failure of the same call replaces the line",
    "a status of 429 or 500 and above is transient": _TRANSIENT,
    "a success clears the call's RETRY LATER line": _CLEARS,
    "a transient failure of a call under DO NOT RETRY adds no RETRY LATER line":
        "its permanent failure removes its RETRY LATER line, and a later transient failure of it adds none",
    "a permanent failure removes the call's RETRY LATER line":
        "its permanent failure removes its RETRY LATER line, and a later transient failure of it adds none",
    "a timeout or a rate limit is transient: RETRY LATER, not DO NOT RETRY": (_TRANSIENT, _RETRY_LATER),
    "only a truthy 'error' is a failure: an empty list is not": _FAILURE,
    "only a truthy 'error' key makes a failure: a 'status' of 'error' is a success": _FAILURE,
    "only a truthy error is a failure ({'error': null} is a success)": "({\"error\": null} is not a failure)",
    "a dict failure is recorded with its key (the worked example)": (_FAILURE, _KEY),
    # render_bounded
    "the error gives the tokens needed and the cap": "with both numbers in the message: the tokens they take and max_tokens",
    "the result always fits the cap": _SHED,
    "goal and failures exactly at the cap fit (no error)": (_FITS, _REFUSE),
    "a failure is never shed": _NEVER,
    "a failure with an empty reason is never shed either": _NEVER,
    "a pad over the cap is shed until it fits": _SHED,
    "the goal is never shed": _NEVER,
    "shedding works on a copy of every field: the facts given stay whole": _COPY,
    "shedding works on a copy of every field: the open questions given stay whole": _COPY,
    "shedding works on a copy of every field: the plan given stays whole": _COPY,
    "the pad given is not changed (work on a copy)": _COPY,
    "goal and failures over the cap raise ctxlab.BudgetError": _REFUSE,
    "the error is ctxlab.BudgetError, not another error": _REFUSE,
    "the refusal is ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name": _REFUSE,
    "DONE is shed before anything else": _SHED_ORDER,
    "DONE is shed oldest first": _SHED_ORDER,
    "ESTABLISHED goes before REMAINING": _SHED_ORDER,
    "ESTABLISHED is shed oldest first": _SHED_ORDER,
    "lines are shed one at a time in every section, stopping as soon as it fits": _SHED,
    "lines are shed one at a time, no more than needed": _SHED,
    "shedding stops as soon as the text fits, at exactly the cap too": (_SHED, _FITS),
    "REMAINING is shed from its end: the next step goes last": (_SHED_ORDER, "the next step is the last to go"),
    "OPEN QUESTIONS are shed oldest first": _SHED_ORDER,
    "OPEN QUESTIONS go before ESTABLISHED": _SHED_ORDER,
    "a pad that fits, even exactly at the cap, comes back unchanged": (
        "If pad.render() fits in max_tokens, return it unchanged", _FITS),
    "thirty DONE lines under a 60-token cap keep the newest": _SHED_ORDER,
    # replan_after
    "exactly min_share taken out is due (>=)": _DUE,
    "the share is what was taken out, not what is left": _DUE,
    "each of the three kinds counts, summary_failed too": _KINDS,
    "the message is ctxlab.replanning.replan_message(pad), not the whole scratchpad": _MESSAGE,
    "the result is ctxlab.replanning.replan_message(pad) itself, not its text": _MESSAGE,
    "replan_after only reads the events: it adds nothing to them": _ONLY_READS,
    "replan_after only reads the events: their order stays": _ONLY_READS,
    "replan_after only reads the pad: DONE, facts and questions stay in it": _ONLY_READS,
    "a big cut is due even when a small one comes after it": _ANY_EVENT,
    "each event is judged on its own share, not added to the others": (_ANY_EVENT, _DUE),
    "every event of the lap is looked at, not only the last": _ANY_EVENT,
    "only ctxlab.replanning.REPLAN_KINDS make a re-plan due: small_talk does not": (_KINDS, "Other kinds never do"),
    "only trim, summarise and summary_failed events count": (_KINDS, "Other kinds never do"),
    "the cut comes from tokens_before and tokens_after alone": _DUE,
    "the share is of tokens_before": _DUE,
    "a change that took out less than min_share gives None": ("When no re-plan is due, return None", _DUE),
    "a cut of a quarter or more by a cutting kind calls for a re-plan": (_ANY_EVENT, _DUE),
    "an event that grew the context took nothing out": _DUE,
    "the cut is compared exactly with min_share * tokens_before: 24.9% is under a quarter": _DUE,
    "min_share is the threshold": _DUE,
    "tokens_before of 0 is not due and raises nothing": "An event with tokens_before of 0 never makes one due",
    # concept checks: the lesson's text that makes the right answer right
    "Q1: the scratchpad goes last for attention, after the cacheable prefix": (
        "The scratchpad is the final message of every prompt",
        "the start belongs to the static prefix (system prompt, tool schemas), so the current state goes at the end"),
    "Q2: code records failures deterministically": (
        "Code is deterministic, costs no tokens and needs no model call", "the failures never depend on it noticing"),
    "Q3: shed by priority, keep goal and failures": ("Two things are never shed", "DONE, oldest first"),
    "Q4: short-term is the growing transcript, working memory the rewritten scratchpad": (
        "the run's transcript: user, assistant and tool messages, in order",
        "in the window, as one small message that code rewrites"),
    "Q4: the model keeps nothing between calls": "The model itself keeps nothing between calls",
    "Q4: working memory is sent to the model as the last message": "The scratchpad is the final message of every prompt",
}
