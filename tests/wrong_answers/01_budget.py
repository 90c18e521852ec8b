"""Known wrong answers for lesson 01-budget, one rule broken in each; each must fail the named tests.

``RULES`` maps every rule the lesson states to the test cell that checks it and a wrong answer
below that breaks only that rule.
"""

COUNT_CHAT = '''
def count_chat(messages, enc=None):
    enc = enc or ctxlab.encoding()
    called = {{}}
    total = {priming}
    for message in messages:
        total += {overhead}
        for call in message.get("tool_calls") or []:
            called[call["id"]] = call["function"]["name"]
        for key, value in message.items():
            if {skip}:
                continue
            if {unshown}:
                continue
            if key == "role" and value == "tool" and message.get("tool_call_id") in called:
                value = {author}
            if key == "tool_calls":
                {tool_calls}
            else:
                total += len(enc.encode_ordinary({text}))
                if key == "name":
                    total += {name_extra}
    return total
'''
SKIP = 'key in ("step", "pinned") or value is None'
UNSHOWN = 'message["role"] == "tool" and key in ("tool_call_id", "name")'
AUTHOR = '"functions." + called[message["tool_call_id"]]'
PARALLEL = '''parallel = ctxlab.calls.parallel_arguments(value)
                if parallel is not None:
                    total += 3 + len(enc.encode_ordinary("multi_tool_use.parallel")) + len(enc.encode_ordinary(parallel))
                    continue
                '''
EACH_CALL = '''for call in value:
                    total += 3 + len(enc.encode_ordinary(call["function"]["name"])) + len(enc.encode_ordinary(call["function"]["arguments"]))'''
COUNTED_CALLS = PARALLEL + EACH_CALL


def count_chat(priming=3, overhead=3, skip=SKIP, unshown=UNSHOWN, author=AUTHOR, tool_calls=COUNTED_CALLS,
               text="value", name_extra=1):
    '''The reference count_chat with one part changed.'''
    return COUNT_CHAT.format(priming=priming, overhead=overhead, skip=skip, unshown=unshown, author=author,
                             tool_calls=tool_calls, text=text, name_extra=name_extra)


BILLED = '''
def billed_input(messages, tools=None):
    running = {start}
    total = {total}
    for message in messages:
        {bill}
    return total{end}
'''
RUNNING_BILL = """if message["role"] == "assistant":
            total += running
        running += ctxlab.count_message(message)"""


def billed(start="3 + ctxlab.count_tools(tools)", total="0", bill=RUNNING_BILL, end=""):
    """The reference billed_input with one part changed."""
    return BILLED.format(start=start, total=total, bill=bill, end=end)


BUDGET = '''
from dataclasses import dataclass


@dataclass
class ContextBudget:
    window: int = 128_000
    reserve_output: int = 4_000
    scratchpad_max: int = 6_000

    def history_allowance(self, fixed_tokens, scratchpad_tokens):
        if {over_cap}:
            raise {cap_error}(f"scratchpad {{scratchpad_tokens}} over cap {{self.scratchpad_max}}")
        allowance = {allowance}
        if {refuse}:
            raise {refuse_error}({message})
        return allowance
'''
NUMBERS = ('f"window {self.window} reserved output {self.reserve_output} fixed prefix "\n'
           '                f"{fixed_tokens} scratchpad {scratchpad_tokens}: {allowance} left"')


def budget(over_cap="scratchpad_tokens > self.scratchpad_max", cap_error="ctxlab.BudgetError",
           allowance="self.window - self.reserve_output - fixed_tokens - scratchpad_tokens",
           refuse="allowance <= 0", refuse_error="ctxlab.BudgetError", message=NUMBERS):
    """The reference ContextBudget with one part changed."""
    return BUDGET.format(over_cap=over_cap, cap_error=cap_error, allowance=allowance,
                         refuse=refuse, refuse_error=refuse_error, message=message)


WRONG_ANSWERS = [
    # count_chat
    dict(name="forgets-per-message-overhead", cell="count-chat", source=count_chat(overhead=0),
         fails=["count-chat-visible", "count-chat-per-message-overhead"]),
    dict(name="four-tokens-of-framing", cell="count-chat", source=count_chat(overhead=4),
         fails=["count-chat-visible", "count-chat-per-message-overhead"]),
    dict(name="forgets-reply-priming", cell="count-chat", source=count_chat(priming=0),
         fails=["count-chat-visible", "count-chat-reply-priming"]),
    dict(name="counts-only-content", cell="count-chat",
         source=count_chat(skip='key not in ("content", "name", "tool_call_id", "tool_calls") or value is None'),
         fails=["count-chat-visible", "count-chat-every-string-field"]),
    dict(name="counts-tool-call-id", cell="count-chat",
         source=count_chat(unshown='message["role"] == "tool" and key == "name"'),
         fails=["count-chat-visible", "count-chat-every-string-field", "count-chat-transcripts"]),
    dict(name="counts-a-tool-results-name", cell="count-chat",
         source=count_chat(unshown='message["role"] == "tool" and key == "tool_call_id"'),
         fails=["count-chat-name"]),
    dict(name="keeps-the-role-tool", cell="count-chat", source=count_chat(author="value"),
         fails=["count-chat-visible", "count-chat-every-string-field", "count-chat-transcripts"]),
    dict(name="author-without-the-namespace", cell="count-chat",
         source=count_chat(author='called[message["tool_call_id"]]'),
         fails=["count-chat-visible", "count-chat-every-string-field", "count-chat-transcripts"]),
    dict(name="forgets-name-extra-token", cell="count-chat", source=count_chat(name_extra=0),
         fails=["count-chat-name"]),
    dict(name="ignores-tool-calls", cell="count-chat", source=count_chat(tool_calls="pass"),
         fails=["count-chat-visible", "count-chat-tool-calls", "count-chat-transcripts"]),
    dict(name="tool-calls-without-per-call-overhead", cell="count-chat",
         source=count_chat(tool_calls=COUNTED_CALLS.replace("total += 3 + ", "total += ")),
         fails=["count-chat-visible", "count-chat-tool-calls", "count-chat-transcripts"]),
    dict(name="counts-parallel-calls-each-on-its-own", cell="count-chat", source=count_chat(tool_calls=EACH_CALL),
         fails=["count-chat-tool-calls", "count-chat-transcripts"]),
    dict(name="lists-only-the-first-two-parallel-calls", cell="count-chat",
         source=count_chat(tool_calls=COUNTED_CALLS.replace("parallel_arguments(value)", "parallel_arguments(value[:2])")),
         fails=["count-chat-tool-calls", "count-chat-transcripts"]),
    dict(name="counts-call-id-and-type", cell="count-chat",
         source=count_chat(tool_calls=COUNTED_CALLS + ' + len(enc.encode_ordinary(call["id"])) + len(enc.encode_ordinary(call["type"]))'),
         fails=["count-chat-visible", "count-chat-tool-calls", "count-chat-transcripts"]),
    dict(name="counts-none-as-text", cell="count-chat",
         source=count_chat(skip='key in ("step", "pinned")', text="str(value)"),
         fails=["count-chat-content-none", "count-chat-transcripts"]),
    dict(name="counts-course-keys", cell="count-chat",
         source=count_chat(skip="value is None", text="str(value)"),
         fails=["count-chat-course-keys", "count-chat-transcripts"]),
    dict(name="skips-only-step", cell="count-chat",
         source=count_chat(skip='key == "step" or value is None', text="str(value)"),
         fails=["count-chat-course-keys"]),
    dict(name="ignores-the-given-encoding", cell="count-chat",
         source=count_chat().replace("enc = enc or ctxlab.encoding()", "enc = ctxlab.encoding()"),
         fails=["count-chat-uses-given-encoding"]),
    # billed_input
    dict(name="bills-only-the-final-context", cell="billed-input",
         source='''
def billed_input(messages, tools=None):
    return ctxlab.count_messages(messages) + ctxlab.count_tools(tools)
''',
         fails=["billed-input-visible", "billed-input-every-call"]),
    dict(name="includes-the-reply-in-its-prompt", cell="billed-input",
         source=billed(bill="""running += ctxlab.count_message(message)
        if message["role"] == "assistant":
            total += running"""),
         fails=["billed-input-visible", "billed-input-prompt-before-the-call"]),
    dict(name="bills-every-message", cell="billed-input",
         source=billed(bill="""total += running
        running += ctxlab.count_message(message)"""),
         fails=["billed-input-visible", "billed-input-only-assistant-calls"]),
    dict(name="ignores-tools", cell="billed-input", source=billed(start="3"),
         fails=["billed-input-tool-schemas"]),
    dict(name="bills-tool-schemas-once", cell="billed-input",
         source=billed(start="3", total="ctxlab.count_tools(tools)"),
         fails=["billed-input-tool-schemas"]),
    dict(name="forgets-priming-per-call", cell="billed-input",
         source=billed(start="ctxlab.count_tools(tools)"),
         fails=["billed-input-visible", "billed-input-reply-priming"]),
    dict(name="primes-only-once", cell="billed-input",
         source=billed(start="ctxlab.count_tools(tools)", total="3"),
         fails=["billed-input-visible", "billed-input-reply-priming"]),
    # ContextBudget.history_allowance
    dict(name="does-not-subtract-reserved-output", cell="context-budget",
         source=budget(allowance="self.window - fixed_tokens - scratchpad_tokens"),
         fails=["budget-visible", "budget-reserves-output"]),
    dict(name="forgets-the-fixed-prefix", cell="context-budget",
         source=budget(allowance="self.window - self.reserve_output - scratchpad_tokens"),
         fails=["budget-visible", "budget-subtracts-fixed-prefix"]),
    dict(name="subtracts-the-scratchpad-cap", cell="context-budget",
         source=budget(allowance="self.window - self.reserve_output - fixed_tokens - self.scratchpad_max"),
         fails=["budget-visible", "budget-subtracts-scratchpad-used"]),
    dict(name="scratchpad-not-capped", cell="context-budget", source=budget(over_cap="False"),
         fails=["budget-caps-scratchpad"]),
    dict(name="refuses-a-scratchpad-at-its-cap", cell="context-budget",
         source=budget(over_cap="scratchpad_tokens >= self.scratchpad_max"),
         fails=["budget-scratchpad-at-cap"]),
    dict(name="raises-valueerror-over-the-cap", cell="context-budget", source=budget(cap_error="ValueError"),
         fails=["budget-caps-scratchpad"]),
    dict(name="returns-a-negative-allowance", cell="context-budget", source=budget(refuse="False"),
         fails=["budget-refuses-impossible", "budget-refuses-zero-allowance", "budget-error-gives-numbers"]),
    dict(name="returns-a-zero-allowance", cell="context-budget", source=budget(refuse="allowance < 0"),
         fails=["budget-refuses-zero-allowance"]),
    dict(name="raises-valueerror-when-nothing-left", cell="context-budget",
         source=budget(refuse_error="ValueError"),
         fails=["budget-refuses-impossible", "budget-refuses-zero-allowance", "budget-error-gives-numbers"]),
    dict(name="error-without-numbers", cell="context-budget",
         source=budget(message='"nothing left for history"'),
         fails=["budget-error-gives-numbers"]),
    dict(name="error-gives-only-the-shortfall", cell="context-budget",
         source=budget(message='f"nothing left for history: {allowance} tokens"'),
         fails=["budget-error-gives-numbers"]),
    # concept checks
    dict(name="thinks-the-bill-doubles", cell="q1-answer", source='q1 = "b"', fails=["q1-check"]),
    dict(name="thinks-the-window-only-limits-the-prompt", cell="q2-answer", source='q2 = "a"',
         fails=["q2-check"]),
    dict(name="thinks-chars-over-4-always-overestimates", cell="q3-answer", source='q3 = "c"',
         fails=["q3-check"]),
    # concept checks Q4 and Q5: every wrong option
    dict(name="budget-is-the-whole-window", cell="q4-answer", source='q4 = "a"', fails=["q4-check"]),
    dict(name="budget-is-a-monthly-cap", cell="q4-answer", source='q4 = "c"', fails=["q4-check"]),
    dict(name="budget-counts-only-input", cell="q4-answer", source='q4 = "d"', fails=["q4-check"]),
    dict(name="measures-only-the-final-prompt", cell="q5-answer", source='q5 = "a"', fails=["q5-check"]),
    dict(name="estimates-and-buys-a-bigger-window", cell="q5-answer", source='q5 = "b"', fails=["q5-check"]),
    dict(name="thinks-earlier-messages-are-free", cell="q5-answer", source='q5 = "d"', fails=["q5-check"]),
]

RULES = [
    # count_chat
    dict(rule="every message costs 3 tokens of framing", test="count-chat-per-message-overhead",
         wrong="forgets-per-message-overhead"),
    dict(rule="the framing is exactly 3 tokens, not 4", test="count-chat-per-message-overhead",
         wrong="four-tokens-of-framing"),
    dict(rule="the list costs 3 tokens of reply priming, once", test="count-chat-reply-priming",
         wrong="forgets-reply-priming"),
    dict(rule="the role is a string field and is counted", test="count-chat-every-string-field",
         wrong="counts-only-content"),
    dict(rule="a tool result's tool_call_id is not shown and not counted",
         test="count-chat-every-string-field", wrong="counts-tool-call-id"),
    dict(rule="a tool result's name is not shown and not counted", test="count-chat-name",
         wrong="counts-a-tool-results-name"),
    dict(rule="a tool result's role is read as functions.NAME, its call's function",
         test="count-chat-every-string-field", wrong="keeps-the-role-tool"),
    dict(rule="the author is 'functions.' and the name, not the name alone",
         test="count-chat-every-string-field", wrong="author-without-the-namespace"),
    dict(rule="a name costs its tokens plus 1", test="count-chat-name", wrong="forgets-name-extra-token"),
    dict(rule="tool_calls are counted even when content is None", test="count-chat-tool-calls",
         wrong="ignores-tool-calls"),
    dict(rule="each tool call costs 3 tokens of its own", test="count-chat-tool-calls",
         wrong="tool-calls-without-per-call-overhead"),
    dict(rule="several calls in one message are one multi_tool_use.parallel call", test="count-chat-tool-calls",
         wrong="counts-parallel-calls-each-on-its-own"),
    dict(rule="the parallel call lists every call of the message", test="count-chat-tool-calls",
         wrong="lists-only-the-first-two-parallel-calls"),
    dict(rule="a tool call's id and type are not counted", test="count-chat-tool-calls",
         wrong="counts-call-id-and-type"),
    dict(rule="content None counts nothing", test="count-chat-content-none", wrong="counts-none-as-text"),
    dict(rule="the course keys step and pinned are not counted", test="count-chat-course-keys",
         wrong="counts-course-keys"),
    dict(rule="pinned is a course key too, not only step", test="count-chat-course-keys",
         wrong="skips-only-step"),
    dict(rule="the enc argument is used to tokenize when given", test="count-chat-uses-given-encoding",
         wrong="ignores-the-given-encoding"),
    dict(rule="every course transcript is counted as ctxlab.count_messages counts it",
         test="count-chat-transcripts", wrong="counts-parallel-calls-each-on-its-own"),
    dict(rule="with enc None, ctxlab.encoding() is used (the hand-counted examples)",
         test="count-chat-visible", wrong="forgets-reply-priming"),
    # billed_input
    dict(rule="every model call is billed, not only the final context", test="billed-input-every-call",
         wrong="bills-only-the-final-context"),
    dict(rule="a call's prompt is the messages before it, not the reply it produces",
         test="billed-input-prompt-before-the-call", wrong="includes-the-reply-in-its-prompt"),
    dict(rule="only assistant messages are model calls", test="billed-input-only-assistant-calls",
         wrong="bills-every-message"),
    dict(rule="the tools argument is billed", test="billed-input-tool-schemas", wrong="ignores-tools"),
    dict(rule="the tool schemas are billed on every call, not once", test="billed-input-tool-schemas",
         wrong="bills-tool-schemas-once"),
    dict(rule="every call's prompt has 3 tokens of reply priming", test="billed-input-reply-priming",
         wrong="forgets-priming-per-call"),
    dict(rule="the priming is billed per call, not once per run", test="billed-input-reply-priming",
         wrong="primes-only-once"),
    dict(rule="a two-call run is billed as counted by hand", test="billed-input-visible",
         wrong="includes-the-reply-in-its-prompt"),
    # ContextBudget.history_allowance
    dict(rule="the reserved output is subtracted", test="budget-reserves-output",
         wrong="does-not-subtract-reserved-output"),
    dict(rule="the fixed prefix is subtracted", test="budget-subtracts-fixed-prefix",
         wrong="forgets-the-fixed-prefix"),
    dict(rule="the scratchpad's tokens are subtracted, not its cap", test="budget-subtracts-scratchpad-used",
         wrong="subtracts-the-scratchpad-cap"),
    dict(rule="the docstring's worked example gives 5,500", test="budget-visible",
         wrong="subtracts-the-scratchpad-cap"),
    dict(rule="a scratchpad over its cap raises ctxlab.BudgetError", test="budget-caps-scratchpad",
         wrong="scratchpad-not-capped"),
    dict(rule="the over-cap error is ctxlab.BudgetError, not another error", test="budget-caps-scratchpad",
         wrong="raises-valueerror-over-the-cap"),
    dict(rule="a scratchpad exactly at its cap is allowed (> not >=)", test="budget-scratchpad-at-cap",
         wrong="refuses-a-scratchpad-at-its-cap"),
    dict(rule="a negative allowance raises ctxlab.BudgetError", test="budget-refuses-impossible",
         wrong="returns-a-negative-allowance"),
    dict(rule="the impossible-budget error is ctxlab.BudgetError, not another error",
         test="budget-refuses-impossible", wrong="raises-valueerror-when-nothing-left"),
    dict(rule="an allowance of exactly zero is refused (<= 0, not < 0)", test="budget-refuses-zero-allowance",
         wrong="returns-a-zero-allowance"),
    dict(rule="the error gives the window, reserved output, fixed prefix and scratchpad",
         test="budget-error-gives-numbers", wrong="error-without-numbers"),
    dict(rule="the error gives the four inputs, not only the shortfall", test="budget-error-gives-numbers",
         wrong="error-gives-only-the-shortfall"),
    # concept checks
    dict(rule="Q1: doubling the laps quadruples the bill", test="q1-check", wrong="thinks-the-bill-doubles"),
    dict(rule="Q2: prompt and reply share the window", test="q2-check",
         wrong="thinks-the-window-only-limits-the-prompt"),
    dict(rule="Q3: characters per token vary by kind of text", test="q3-check",
         wrong="thinks-chars-over-4-always-overestimates"),
    # concept checks Q4 and Q5: every wrong option breaks the one right answer
    dict(rule="Q4: the budget is the window minus reserved output, checked every call",
         test="q4-check", wrong="budget-is-the-whole-window"),
    dict(rule="Q4: the budget is the window minus reserved output, checked every call",
         test="q4-check", wrong="budget-is-a-monthly-cap"),
    dict(rule="Q4: the budget is the window minus reserved output, checked every call",
         test="q4-check", wrong="budget-counts-only-input"),
    dict(rule="Q5: measure the sent prompt with the tokenizer every lap; the bill is the sum",
         test="q5-check", wrong="measures-only-the-final-prompt"),
    dict(rule="Q5: measure the sent prompt with the tokenizer every lap; the bill is the sum",
         test="q5-check", wrong="estimates-and-buys-a-bigger-window"),
    dict(rule="Q5: measure the sent prompt with the tokenizer every lap; the bill is the sum",
         test="q5-check", wrong="thinks-earlier-messages-are-free"),
]

# Concept checks: the wrong options of the questions listed above with fewer (each fails its check).
WRONG_ANSWERS += [
    dict(name="thinks-the-bill-stays-the-same", cell="q1-answer", source='q1 = "a"', fails=["q1-check"]),
    dict(name="thinks-the-bill-grows-forty-fold", cell="q1-answer", source='q1 = "d"', fails=["q1-check"]),
    dict(name="thinks-the-api-compresses-the-prompt", cell="q2-answer", source='q2 = "c"', fails=["q2-check"]),
    dict(name="thinks-the-model-forgets-the-oldest-tokens", cell="q2-answer", source='q2 = "d"', fails=["q2-check"]),
    dict(name="thinks-the-tokenizer-is-faster-than-len", cell="q3-answer", source='q3 = "a"', fails=["q3-check"]),
    dict(name="thinks-the-api-checks-the-count", cell="q3-answer", source='q3 = "d"', fails=["q3-check"]),
]
RULES += [
    dict(rule="Q1: doubling the laps quadruples the bill", test="q1-check", wrong="thinks-the-bill-stays-the-same"),
    dict(rule="Q1: doubling the laps quadruples the bill", test="q1-check", wrong="thinks-the-bill-grows-forty-fold"),
    dict(rule="Q2: prompt and reply share the window", test="q2-check", wrong="thinks-the-api-compresses-the-prompt"),
    dict(rule="Q2: prompt and reply share the window", test="q2-check", wrong="thinks-the-model-forgets-the-oldest-tokens"),
    dict(rule="Q3: characters per token vary by kind of text", test="q3-check", wrong="thinks-the-tokenizer-is-faster-than-len"),
    dict(rule="Q3: characters per token vary by kind of text", test="q3-check", wrong="thinks-the-api-checks-the-count"),
]

# Edge cases of the stated rules: each wrong answer passes every other test of its exercise.
WRONG_ANSWERS += [
    # count_chat
    dict(name="tokenizes-with-encode", cell="count-chat",
         source=count_chat().replace("enc.encode_ordinary(", "enc.encode("),
         fails=["count-chat-every-string-field"]),
    dict(name="counts-only-known-fields", cell="count-chat", source='''
def count_chat(messages, enc=None):
    if enc is None:
        enc = ctxlab.encoding()
    tok = lambda t: len(enc.encode_ordinary(t))
    total = 3
    for message in messages:
        total += 3
        for key in ("role", "content", "name", "tool_call_id"):
            if message.get(key) is not None:
                total += tok(message[key])
        if message.get("name") is not None:
            total += 1
        for call in message.get("tool_calls") or []:
            total += 3 + tok(call["function"]["name"]) + tok(call["function"]["arguments"])
    return total
''', fails=["count-chat-every-string-field"]),
    dict(name="a-none-name-costs-one", cell="count-chat", source='''
def count_chat(messages, enc=None):
    if enc is None:
        enc = ctxlab.encoding()
    total = 3
    for message in messages:
        total += 3
        if "name" in message:
            total += 1
        for key, value in message.items():
            if key in ("step", "pinned") or value is None:
                continue
            if key == "tool_calls":
                for call in value:
                    total += 3 + len(enc.encode_ordinary(call["function"]["name"])) + len(enc.encode_ordinary(call["function"]["arguments"]))
            else:
                total += len(enc.encode_ordinary(value))
    return total
''', fails=["count-chat-name"]),
    dict(name="removes-the-course-keys-from-the-input", cell="count-chat", source='''
def count_chat(messages, enc=None):
    if enc is None:
        enc = ctxlab.encoding()
    total = 3
    for message in messages:
        message.pop("step", None)
        message.pop("pinned", None)
        total += 3
        for key, value in message.items():
            if value is None:
                continue
            if key == "tool_calls":
                for call in value:
                    total += 3 + len(enc.encode_ordinary(call["function"]["name"])) + len(enc.encode_ordinary(call["function"]["arguments"]))
            else:
                total += len(enc.encode_ordinary(value))
                if key == "name":
                    total += 1
    return total
''', fails=["count-chat-course-keys"]),
    dict(name="tool-calls-ignore-the-given-encoding", cell="count-chat",
         source=count_chat(tool_calls="""for call in value:
                    total += 3 + ctxlab.count_text(call["function"]["name"]) + ctxlab.count_text(call["function"]["arguments"])"""),
         fails=["count-chat-uses-given-encoding"]),
    dict(name="calls-ctxlabs-private-formula", cell="count-chat", source='''
import importlib
def count_chat(messages, enc=None):
    enc = enc or ctxlab.encoding()
    helper = getattr(importlib.import_module("ctxlab.tokens"), "_message_tokens")
    return 3 + sum(helper(m, lambda t: len(enc.encode_ordinary(t)), i) for i, m in enumerate(messages))
''', fails=["count-chat-visible", "count-chat-transcripts"]),
    # billed_input
    dict(name="skips-a-call-at-index-zero", cell="billed-input", source='''
def billed_input(messages, tools=None):
    fixed = 3 + ctxlab.count_tools(tools)
    total = 0
    running = 0
    for i in range(1, len(messages)):
        running += ctxlab.count_message(messages[i - 1])
        if messages[i]["role"] == "assistant":
            total += fixed + running
    return total
''', fails=["billed-input-prompt-before-the-call"]),
    dict(name="counts-repeated-messages-once", cell="billed-input", source='''
import json as _json
def billed_input(messages, tools=None):
    running = 3 + ctxlab.count_tools(tools)
    seen = set()
    total = 0
    for message in messages:
        if message["role"] == "assistant":
            total += running
        key = _json.dumps({k: v for k, v in message.items() if k != "step"}, sort_keys=True)
        if key not in seen:
            seen.add(key)
            running += ctxlab.count_message(message)
    return total
''', fails=["billed-input-prompt-before-the-call"]),
    dict(name="finds-each-call-with-list-index", cell="billed-input", source='''
def billed_input(messages, tools=None):
    schemas = ctxlab.count_tools(tools)
    total = 0
    for m in messages:
        if m["role"] == "assistant":
            i = messages.index(m)
            total += 3 + schemas + sum(ctxlab.count_message(x) for x in messages[:i])
    return total
''', fails=["billed-input-prompt-before-the-call"]),
    dict(name="bills-consecutive-assistant-messages-once", cell="billed-input",
         source=billed(start="3 + ctxlab.count_tools(tools)\n    previous = None", bill="""if message["role"] == "assistant" and previous != "assistant":
            total += running
        running += ctxlab.count_message(message)
        previous = message["role"]"""),
         fails=["billed-input-only-assistant-calls"]),
    dict(name="bills-one-call-per-step", cell="billed-input",
         source=billed(start="3 + ctxlab.count_tools(tools)\n    billed_steps = set()", bill="""step = message.get("step", id(message))
        if message["role"] == "assistant" and step not in billed_steps:
            billed_steps.add(step)
            total += running
        running += ctxlab.count_message(message)"""),
         fails=["billed-input-only-assistant-calls"]),
    dict(name="bills-with-ctxlab-replay", cell="billed-input", source='''
def billed_input(messages, tools=None):
    run = ctxlab.replay(list(messages), lambda history, **kw: history,
                        budget=ctxlab.ContextBudget(window=10**9, reserve_output=0), tools=tools)
    return run.laps[-1].billed if run.laps else 0
''', fails=["billed-input-visible", "billed-input-every-call"]),
    # ContextBudget.history_allowance
    dict(name="a-zero-cap-means-no-cap", cell="context-budget",
         source=budget(over_cap="self.scratchpad_max and scratchpad_tokens > self.scratchpad_max"),
         fails=["budget-caps-scratchpad"]),
    dict(name="error-numbers-under-the-wrong-names", cell="context-budget",
         source=budget(message='f"nothing left: window {self.reserve_output}, reserved output {self.window}, "\n'
                               '                f"fixed prefix {scratchpad_tokens}, scratchpad {fixed_tokens}"'),
         fails=["budget-error-gives-numbers"]),
]
RULES += [
    dict(rule="text is tokenized with encode_ordinary: special-token text such as <|endoftext|> is plain text",
         test="count-chat-every-string-field", wrong="tokenizes-with-encode"),
    dict(rule="every string field is counted, not a fixed list of keys (refusal too)",
         test="count-chat-every-string-field", wrong="counts-only-known-fields"),
    dict(rule="a name of None counts nothing, not even the extra token", test="count-chat-name",
         wrong="a-none-name-costs-one"),
    dict(rule="the messages given are left unchanged (the course keys are skipped, not removed)",
         test="count-chat-course-keys", wrong="removes-the-course-keys-from-the-input"),
    dict(rule="tool calls are tokenized with the enc given too", test="count-chat-uses-given-encoding",
         wrong="tool-calls-ignore-the-given-encoding"),
    dict(rule="count_chat counts by itself: ctxlab's counting, its private per-message formula included, "
              "is off while it is graded", test="count-chat-visible", wrong="calls-ctxlabs-private-formula"),
    dict(rule="an assistant message at index 0 is a call too, with an empty prompt",
         test="billed-input-prompt-before-the-call", wrong="skips-a-call-at-index-zero"),
    dict(rule="a repeated message is counted in every later prompt, each time it appears",
         test="billed-input-prompt-before-the-call", wrong="counts-repeated-messages-once"),
    dict(rule="a repeated assistant message is billed with the prompt before its own position",
         test="billed-input-prompt-before-the-call", wrong="finds-each-call-with-list-index"),
    dict(rule="two assistant messages in a row are two calls", test="billed-input-only-assistant-calls",
         wrong="bills-consecutive-assistant-messages-once"),
    dict(rule="two assistant messages in one lap (step) are two calls", test="billed-input-only-assistant-calls",
         wrong="bills-one-call-per-step"),
    dict(rule="billed_input sums the prompts by itself: ctxlab.replay is off while it is graded",
         test="billed-input-visible", wrong="bills-with-ctxlab-replay"),
    dict(rule="a scratchpad cap of 0 allows no scratchpad (0 is not \"no cap\")", test="budget-caps-scratchpad",
         wrong="a-zero-cap-means-no-cap"),
    dict(rule="each number in the impossible-budget error follows its own name", test="budget-error-gives-numbers",
         wrong="error-numbers-under-the-wrong-names"),
]

WRONG_ANSWERS += [
    dict(name='own-budgeterror-class', cell='context-budget', source='''
class BudgetError(ValueError):
    pass


from dataclasses import dataclass


@dataclass
class ContextBudget:
    window: int = 128_000
    reserve_output: int = 4_000
    scratchpad_max: int = 6_000

    def history_allowance(self, fixed_tokens, scratchpad_tokens):
        if scratchpad_tokens > self.scratchpad_max:
            raise BudgetError(f"scratchpad {scratchpad_tokens} over cap {self.scratchpad_max}")
        allowance = self.window - self.reserve_output - fixed_tokens - scratchpad_tokens
        if allowance <= 0:
            raise BudgetError(f"window {self.window} reserved output {self.reserve_output} "
                              f"fixed prefix {fixed_tokens} scratchpad {scratchpad_tokens}: {allowance}")
        return allowance
''', fails=['budget-caps-scratchpad', 'budget-refuses-impossible']),
]
RULES += [
    dict(rule="the errors are ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name", test='budget-caps-scratchpad', wrong='own-budgeterror-class'),
]


# Answers that hand the exercise to ctxlab's own code by a way around the switch-off: each must
# lose the named tests' points, whatever the error (tests/test_lessons.py).
ATTACKS = [
]
ATTACKS += [
    dict(name='copies-the-code-object', cell='context-budget', source='''
import types
_ref = ctxlab.ContextBudget.history_allowance
from dataclasses import dataclass


@dataclass
class ContextBudget:
    window: int = 128_000
    reserve_output: int = 4_000
    scratchpad_max: int = 6_000

    history_allowance = types.FunctionType(_ref.__code__, _ref.__globals__, "history_allowance")
''', fails=['budget-visible', 'budget-reserves-output']),
]
ATTACKS += [
    dict(name='delegates-to-ctxlabs-budget-in-a-method', cell='context-budget', source='''
from dataclasses import dataclass


@dataclass
class ContextBudget:
    window: int = 128_000
    reserve_output: int = 4_000
    scratchpad_max: int = 6_000

    def history_allowance(self, fixed_tokens, scratchpad_tokens):
        return ctxlab.ContextBudget(window=self.window, reserve_output=self.reserve_output,
                                    scratchpad_max=self.scratchpad_max).history_allowance(fixed_tokens, scratchpad_tokens)
''', fails=['budget-visible', 'budget-reserves-output']),
]
ATTACKS += [
    dict(name='renames-an-exception-budgeterror', cell='context-budget', source='''
class _Fake(Exception):
    pass
_Fake.__name__ = "BudgetError"
from dataclasses import dataclass


@dataclass
class ContextBudget:
    window: int = 128_000
    reserve_output: int = 4_000
    scratchpad_max: int = 6_000

    def history_allowance(self, fixed_tokens, scratchpad_tokens):
        if scratchpad_tokens > self.scratchpad_max:
            raise _Fake("over cap")
        allowance = self.window - self.reserve_output - fixed_tokens - scratchpad_tokens
        if allowance <= 0:
            raise _Fake(f"{self.window} {self.reserve_output} {fixed_tokens} {scratchpad_tokens}")
        return allowance
''', fails=['budget-caps-scratchpad', 'budget-refuses-impossible']),
]
ATTACKS += [
    dict(name='binds-ctxlabs-class', cell='context-budget', source='''
ContextBudget = ctxlab.ContextBudget
''', fails=['budget-visible', 'budget-reserves-output', 'budget-subtracts-fixed-prefix',
              'budget-subtracts-scratchpad-used', 'budget-caps-scratchpad', 'budget-scratchpad-at-cap',
              'budget-refuses-impossible', 'budget-refuses-zero-allowance', 'budget-error-gives-numbers']),
]
ATTACKS += [
    dict(name='inherits-ctxlabs-method', cell='context-budget', source='''
class ContextBudget(ctxlab.ContextBudget):
    pass
''', fails=['budget-visible', 'budget-reserves-output']),
]
ATTACKS += [
    dict(name='puts-the-saved-code-back', cell='billed-input', source='''
_saved = ctxlab.budget.context_per_lap.__code__
def billed_input(messages, tools=None):
    f = ctxlab.budget.context_per_lap
    off = f.__code__
    f.__code__ = _saved
    try:
        return sum(f(messages, tools))
    finally:
        f.__code__ = off
''', fails=['billed-input-visible', 'billed-input-every-call']),
]
ATTACKS += [
    dict(name='count-chat-copies-the-code-object', cell='count-chat', source='''
import types
_ref = ctxlab.count_messages
_copy = types.FunctionType(_ref.__code__, _ref.__globals__, "copy", _ref.__defaults__, _ref.__closure__)
_copy.__kwdefaults__ = _ref.__kwdefaults__
def count_chat(messages, enc=None):
    return _copy(messages, enc)
''', fails=['count-chat-visible', 'count-chat-transcripts']),
]
ATTACKS += [
    dict(name='count-chat-through-message-token-ids', cell='count-chat', source='''
def count_chat(messages, enc=None):
    return 3 + sum(len(ctxlab.caching.message_token_ids(m, enc or ctxlab.encoding())) for m in messages)
''', fails=['count-chat-visible', 'count-chat-transcripts']),
]
ATTACKS += [
    dict(name='count-chat-through-count-request', cell='count-chat', source='''
def count_chat(messages, enc=None):
    return ctxlab.count_request({"model": "gpt-4", "messages": messages})
''', fails=['count-chat-per-message-overhead']),
]

WRONG_ANSWERS += [
    dict(name='empty-name-costs-no-extra-token', cell='count-chat', source='''
def count_chat(messages, enc=None):
    """Return the prompt tokens of `messages` by the OpenAI chat formula.

    - 3 tokens per message, plus the tokens of each of its string fields (`role`, `content`,
      `name`, `tool_call_id`, ...);
    - 1 more token when the message has a `name`;
    - each entry of `tool_calls`: 3 tokens + tokens of its function name + tokens of its
      arguments (the call's `id` and `type` are not counted);
    - `None` values count nothing (a `name` of None adds no extra token either); the course
      keys `step` and `pinned` are never counted, and `messages` is left as it was given;
    - 3 tokens of reply priming for the whole list.

    `enc` is the encoding to tokenize every text with, tool calls included (anything with
    `encode_ordinary`); when it is None, use ctxlab.encoding().

    >>> count_chat([{"role": "user", "content": "Hello!"}])
    9
    """
    if enc is None:
        enc = ctxlab.encoding()

    def tokens(text):
        return len(enc.encode_ordinary(text))

    total = 3  # reply priming
    for message in messages:
        total += 3  # framing of every message
        for key, value in message.items():
            if key in ("step", "pinned") or value is None:
                continue
            if key == "tool_calls":
                for call in value:
                    function = call["function"]
                    total += 3 + tokens(function["name"]) + tokens(function["arguments"])
            else:
                total += tokens(value)
                if key == "name" and value:
                    total += 1
    return total
''', fails=['count-chat-name']),
]
RULES += [
    dict(rule='a `name` that is an empty string is still a name: it costs the 1 extra token', test='count-chat-name', wrong='empty-name-costs-no-extra-token'),
]

# Probed again: each passed every test before the test named in it checked the rule.
WRONG_ANSWERS += [
    dict(name="tokenizes-with-encode-and-no-special-tokens", cell="count-chat",
         source=count_chat().replace("enc.encode_ordinary(", "ordinary(").replace(
             "enc = enc or ctxlab.encoding()",
             "enc = enc or ctxlab.encoding()\n"
             "    ordinary = lambda text: enc.encode(text, disallowed_special=())  # special-token text as plain text"),
         fails=["count-chat-uses-given-encoding"]),
    dict(name="name-extra-token-only-for-users", cell="count-chat",
         source=count_chat().replace('if key == "name":', 'if key == "name" and message.get("role") == "user":'),
         fails=["count-chat-name"]),
    dict(name="re-serialises-the-arguments", cell="count-chat",
         source=count_chat(tool_calls="""for call in value:
                    arguments = json.dumps(json.loads(call["function"]["arguments"]))
                    total += 3 + len(enc.encode_ordinary(call["function"]["name"])) + len(enc.encode_ordinary(arguments))"""),
         fails=["count-chat-tool-calls"]),
    dict(name="an-empty-reply-is-no-call", cell="billed-input",
         source=billed(bill="""if message["role"] == "assistant" and (message.get("content") or message.get("tool_calls")):
            total += running
        running += ctxlab.count_message(message)"""),
         fails=["billed-input-only-assistant-calls"]),
    dict(name="remembers-the-first-allowance", cell="context-budget",
         source=budget(allowance='getattr(self, "_allowance", None) or '
                                 '(self.window - self.reserve_output - fixed_tokens - scratchpad_tokens)').replace(
             "        return allowance", "        self._allowance = allowance\n        return allowance"),
         fails=["budget-subtracts-fixed-prefix"]),
    dict(name="spends-the-window-in-place", cell="context-budget",
         source=budget().replace(
             "        return allowance", "        self.window = allowance  # the room that is left\n        return allowance"),
         fails=["budget-subtracts-fixed-prefix"]),
]
RULES += [
    dict(rule="enc may have encode_ordinary and nothing else: every text is tokenized with it",
         test="count-chat-uses-given-encoding", wrong="tokenizes-with-encode-and-no-special-tokens"),
    dict(rule="a name costs the extra token on a message of any role", test="count-chat-name",
         wrong="name-extra-token-only-for-users"),
    dict(rule="a call's arguments string is counted as it is, not parsed and re-serialised",
         test="count-chat-tool-calls", wrong="re-serialises-the-arguments"),
    dict(rule="an empty assistant message (content '' or None) is a model call too",
         test="billed-input-only-assistant-calls", wrong="an-empty-reply-is-no-call"),
    dict(rule="each allowance comes from the arguments of its own call (one budget is asked on every lap)",
         test="budget-subtracts-fixed-prefix", wrong="remembers-the-first-allowance"),
    dict(rule="history_allowance leaves the budget's fields as they are", test="budget-subtracts-fixed-prefix",
         wrong="spends-the-window-in-place"),
]
WRONG_ANSWERS += [
    dict(name="a-zero-window-means-the-default", cell="context-budget",
         source=budget(allowance="(self.window or 128_000) - self.reserve_output - fixed_tokens - scratchpad_tokens"),
         fails=["budget-refuses-impossible"]),
]
RULES += [
    dict(rule="a window of 0 is a window of 0 tokens (refused), not the default", test="budget-refuses-impossible",
         wrong="a-zero-window-means-the-default"),
]

# A None value other than content, and a cap of 0 with an empty scratchpad.
WRONG_ANSWERS += [
    dict(name="tool-calls-none-crashes", cell="count-chat", source='''
def count_chat(messages, enc=None):
    enc = enc or ctxlab.encoding()
    tok = lambda t: len(enc.encode_ordinary(t))
    total = 3
    for message in messages:
        total += 3
        for key, value in message.items():
            if key in ("step", "pinned", "tool_calls") or value is None:
                continue
            total += tok(value)
            if key == "name":
                total += 1
        for call in message.get("tool_calls", []):
            total += 3 + tok(call["function"]["name"]) + tok(call["function"]["arguments"])
    return total
''', fails=["count-chat-content-none"]),
    dict(name="a-zero-cap-refuses-an-empty-scratchpad", cell="context-budget",
         source=budget(over_cap="self.scratchpad_max == 0 or scratchpad_tokens > self.scratchpad_max"),
         fails=["budget-scratchpad-at-cap"]),
]
RULES += [
    dict(rule='every None value counts nothing, "tool_calls": None (a reply that calls no tool) included',
         test="count-chat-content-none", wrong="tool-calls-none-crashes"),
    dict(rule="a scratchpad of 0 tokens at a cap of 0 is exactly at its cap, so it is allowed",
         test="budget-scratchpad-at-cap", wrong="a-zero-cap-refuses-an-empty-scratchpad"),
]

# Another probe round: each broke a stated rule with full marks, and now fails the named test.
WRONG_ANSWERS += [
    # count_chat
    dict(name="name-extra-token-once-per-list", cell="count-chat",
         source=count_chat(name_extra=0).replace(
             "    return total",
             '    if any(m.get("name") is not None for m in messages):\n'
             "        total += 1  # the name token\n"
             "    return total"),
         fails=["count-chat-name"]),
    dict(name="strips-the-text", cell="count-chat", source=count_chat(text="value.strip()"),
         fails=["count-chat-every-string-field"]),
    dict(name="strips-the-arguments", cell="count-chat",
         source=count_chat(tool_calls=COUNTED_CALLS.replace('call["function"]["arguments"]',
                                                             'call["function"]["arguments"].strip()')),
         fails=["count-chat-tool-calls"]),
    dict(name="removes-call-id-and-type-from-the-input", cell="count-chat",
         source=count_chat(tool_calls=COUNTED_CALLS.replace(
             "for call in value:\n",
             'for call in value:\n                    call.pop("id", None)  # not counted\n'
             '                    call.pop("type", None)\n')),
         fails=["count-chat-course-keys"]),
    dict(name="deletes-none-values-from-the-input", cell="count-chat",
         source=count_chat().replace(
             "        total += 3\n",
             "        total += 3\n"
             "        for key in [k for k, v in message.items() if v is None]:\n"
             "            del message[key]  # None counts nothing\n"),
         fails=["count-chat-course-keys"]),
    dict(name="turns-none-content-into-empty-text", cell="count-chat",
         source=count_chat().replace(
             "        total += 3\n",
             "        total += 3\n"
             '        if message.get("content", "") is None:\n'
             '            message["content"] = ""  # None counts nothing\n'),
         fails=["count-chat-course-keys"]),
    dict(name="other-fields-with-the-default-encoding", cell="count-chat",
         source=count_chat().replace(
             "total += len(enc.encode_ordinary(value))",
             'total += len(enc.encode_ordinary(value)) if key in ("role", "content") else ctxlab.count_text(value)'),
         fails=["count-chat-uses-given-encoding"]),
    dict(name="name-with-the-default-encoding", cell="count-chat",
         source=count_chat().replace(
             "total += len(enc.encode_ordinary(value))",
             'total += ctxlab.count_text(value) if key == "name" else len(enc.encode_ordinary(value))'),
         fails=["count-chat-uses-given-encoding"]),
    dict(name="ignores-a-real-given-encoding", cell="count-chat",
         source=count_chat().replace(
             "enc = enc or ctxlab.encoding()",
             'enc = ctxlab.encoding() if enc is None or hasattr(enc, "encode") else enc  # tiktoken: cl100k_base'),
         fails=["count-chat-uses-given-encoding"]),
    # ContextBudget.history_allowance
    dict(name="error-omits-a-zero-scratchpad", cell="context-budget",
         source=budget(message='f"window {self.window} reserved output {self.reserve_output} fixed prefix "\n'
                               '                f"{fixed_tokens}" + (f" scratchpad {scratchpad_tokens}" if scratchpad_tokens else "")'),
         fails=["budget-error-gives-numbers"]),
    dict(name="zero-allowance-error-without-numbers", cell="context-budget",
         source=budget().replace(
             "        if allowance <= 0:\n",
             "        if allowance == 0:\n"
             '            raise ctxlab.BudgetError("the fixed parts fill the window exactly: no room left for history")\n'
             "        if allowance <= 0:\n"),
         fails=["budget-error-gives-numbers"]),
]
RULES += [
    dict(rule="every message that has a name costs its own extra token, not one per list", test="count-chat-name",
         wrong="name-extra-token-once-per-list"),
    dict(rule="each string field is counted as it is, leading spaces and newlines too",
         test="count-chat-every-string-field", wrong="strips-the-text"),
    dict(rule="a call's arguments string is counted as it is, its surrounding whitespace too",
         test="count-chat-tool-calls", wrong="strips-the-arguments"),
    dict(rule="the messages given are left unchanged: a call's id and type are skipped, not removed",
         test="count-chat-course-keys", wrong="removes-call-id-and-type-from-the-input"),
    dict(rule="the messages given are left unchanged: None values are skipped, not deleted",
         test="count-chat-course-keys", wrong="deletes-none-values-from-the-input"),
    dict(rule="the messages given are left unchanged: a None content stays None",
         test="count-chat-course-keys", wrong="turns-none-content-into-empty-text"),
    dict(rule="every string field (tool_call_id too) is tokenized with the enc given",
         test="count-chat-uses-given-encoding", wrong="other-fields-with-the-default-encoding"),
    dict(rule="a name is tokenized with the enc given", test="count-chat-uses-given-encoding",
         wrong="name-with-the-default-encoding"),
    dict(rule="the enc given is used whatever encoding it is, a real tiktoken one too",
         test="count-chat-uses-given-encoding", wrong="ignores-a-real-given-encoding"),
    dict(rule="the impossible-budget error gives all four numbers, a scratchpad of 0 too",
         test="budget-error-gives-numbers", wrong="error-omits-a-zero-scratchpad"),
    dict(rule="an allowance of exactly 0 is refused with the same numbers in its error",
         test="budget-error-gives-numbers", wrong="zero-allowance-error-without-numbers"),
]

# One object in two places of a test's argument now reaches the learner's code as one object,
# as in Python: this answer scored full marks until then.
WRONG_ANSWERS += [
    dict(name="counts-each-message-object-once", cell="count-chat",
         source=count_chat().replace("    for message in messages:\n", "    seen = set()\n    for message in messages:\n"
                                     "        if id(message) in seen:  # counted already\n            continue\n"
                                     "        seen.add(id(message))\n"),
         fails=["count-chat-per-message-overhead"]),
]
RULES += [
    dict(rule="every message in the list costs its framing, the same message twice too",
         test="count-chat-per-message-overhead", wrong="counts-each-message-object-once"),
]

# The words of each exercise's text that state each rule (tests/test_rule_map.py checks them).
_BY_ITSELF = "ctxlab's own version of what it asks for is switched off, so your answer has to do that work itself"
_NAME = "1 more token when the message has a name (any string, an empty one too)"
_ENC = "enc is the encoding to tokenize every text with, tool calls included (anything with encode_ordinary)"
_AS_GIVEN = "messages is left as it was given"
_AS_IT_IS = "every string is counted exactly as it is, spaces and newlines included"
_CALL_PROMPT = "The prompt of the call that produced assistant message i is messages[:i] (without message i itself)"
_ONE_CALL = "Each assistant message is one model call"
_FOUR_NUMBERS = ("with the window, reserved output, fixed prefix and scratchpad in the message, each name "
                 "followed by its number")
_EACH_LAP = "One budget is asked again on every lap: work from this call's arguments and leave the budget's fields as they are"
_CHECKED = "count the assembled prompt with the model's tokenizer before every call"
TAUGHT = {
    # count_chat
    "every message costs 3 tokens of framing": "3 tokens per message",
    "every message in the list costs its framing, the same message twice too": "3 tokens per message",
    "the framing is exactly 3 tokens, not 4": "3 tokens per message",
    "the list costs 3 tokens of reply priming, once": "3 tokens of reply priming for the whole list",
    "the role is a string field and is counted": "plus the tokens of each of its string fields (role, content, name, ...)",
    "every string field is counted, not a fixed list of keys (refusal too)":
        "plus the tokens of each of its string fields (role, content, name, ...)",
    "each string field is counted as it is, leading spaces and newlines too": _AS_IT_IS,
    "text is tokenized with encode_ordinary: special-token text such as <|endoftext|> is plain text":
        "text such as <|endoftext|> is plain text to encode_ordinary",
    "a tool result's tool_call_id is not shown and not counted": "its tool_call_id and name are not counted",
    "a tool result's name is not shown and not counted": "its tool_call_id and name are not counted",
    "a tool result's role is read as functions.NAME, its call's function":
        "its role is counted as \"functions.NAME\", NAME the function of the call whose id is its tool_call_id",
    "the author is 'functions.' and the name, not the name alone": "its role is counted as \"functions.NAME\"",
    "a name costs its tokens plus 1": _NAME,
    "a `name` that is an empty string is still a name: it costs the 1 extra token": _NAME,
    "a name costs the extra token on a message of any role": _NAME,
    "every message that has a name costs its own extra token, not one per list": _NAME,
    "a name of None counts nothing, not even the extra token": "a name of None adds no extra token either",
    "tool_calls are counted even when content is None":
        "one entry in tool_calls: 3 tokens + tokens of its function name + tokens of its arguments",
    "each tool call costs 3 tokens of its own":
        "one entry in tool_calls: 3 tokens + tokens of its function name + tokens of its arguments",
    "several calls in one message are one multi_tool_use.parallel call":
        "two or more: one call, 3 tokens + tokens of \"multi_tool_use.parallel\"",
    "the parallel call lists every call of the message": "tokens of ctxlab.calls.parallel_arguments(calls)",
    "a tool call's id and type are not counted": "the call's id and type are not counted",
    "a call's arguments string is counted as it is, not parsed and re-serialised":
        "a call's arguments are never parsed or re-serialised",
    "a call's arguments string is counted as it is, its surrounding whitespace too": (
        _AS_IT_IS, "a call's arguments are never parsed or re-serialised"),
    "content None counts nothing": "content: None (an assistant message that only calls tools) costs nothing",
    "every None value counts nothing, \"tool_calls\": None (a reply that calls no tool) included":
        "None values count nothing",
    "the course keys step and pinned are not counted": "the course keys step and pinned are never counted",
    "pinned is a course key too, not only step": "the course keys step and pinned are never counted",
    "the messages given are left unchanged (the course keys are skipped, not removed)": (
        _AS_GIVEN, "skip the course keys, do not remove them"),
    "the messages given are left unchanged: None values are skipped, not deleted": _AS_GIVEN,
    "the messages given are left unchanged: a None content stays None": _AS_GIVEN,
    "the messages given are left unchanged: a call's id and type are skipped, not removed": _AS_GIVEN,
    "the enc argument is used to tokenize when given": _ENC,
    "a name is tokenized with the enc given": _ENC,
    "enc may have encode_ordinary and nothing else: every text is tokenized with it": _ENC,
    "every string field (tool_call_id too) is tokenized with the enc given": _ENC,
    "the enc given is used whatever encoding it is, a real tiktoken one too": _ENC,
    "tool calls are tokenized with the enc given too": _ENC,
    "with enc None, ctxlab.encoding() is used (the hand-counted examples)": "when it is None, use ctxlab.encoding()",
    "every course transcript is counted as ctxlab.count_messages counts it":
        "agreement with ctxlab on every course transcript",
    "count_chat counts by itself: ctxlab's counting, its private per-message formula included, is off while it is graded":
        _BY_ITSELF,
    # billed_input
    "every model call is billed, not only the final context": "The run's bill is the sum over all calls",
    "a call's prompt is the messages before it, not the reply it produces": _CALL_PROMPT,
    "a repeated assistant message is billed with the prompt before its own position": _CALL_PROMPT,
    "a repeated message is counted in every later prompt, each time it appears": _CALL_PROMPT,
    "an assistant message at index 0 is a call too, with an empty prompt": (_ONE_CALL, _CALL_PROMPT),
    "only assistant messages are model calls": (_ONE_CALL, "Other messages are not calls"),
    "an empty assistant message (content '' or None) is a model call too": _ONE_CALL,
    "two assistant messages in a row are two calls": _ONE_CALL,
    "two assistant messages in one lap (step) are two calls": _ONE_CALL,
    "the tools argument is billed": "plus the tool schemas tools (None: no tools)",
    "the tool schemas are billed on every call, not once": (_CALL_PROMPT, "plus the tool schemas tools"),
    "every call's prompt has 3 tokens of reply priming": "plus 3 tokens of reply priming",
    "the priming is billed per call, not once per run": (_CALL_PROMPT, "plus 3 tokens of reply priming"),
    "a two-call run is billed as counted by hand": "Input tokens billed over a run: the sum of the prompts of all model calls",
    "billed_input sums the prompts by itself: ctxlab.replay is off while it is graded": _BY_ITSELF,
    # ContextBudget.history_allowance
    "the reserved output is subtracted": "window - reserved output - fixed prefix - scratchpad",
    "the fixed prefix is subtracted": "window - reserved output - fixed prefix - scratchpad",
    "the scratchpad's tokens are subtracted, not its cap": "Subtract the scratchpad's tokens (what it uses now, at most its cap)",
    "the docstring's worked example gives 5,500": "ContextBudget(8_000, 1_000, 500).history_allowance(1_200, 300) 5500",
    "each allowance comes from the arguments of its own call (one budget is asked on every lap)": _EACH_LAP,
    "history_allowance leaves the budget's fields as they are": _EACH_LAP,
    "a scratchpad over its cap raises ctxlab.BudgetError": "Raise ctxlab.BudgetError when scratchpad_tokens exceeds scratchpad_max",
    "the over-cap error is ctxlab.BudgetError, not another error":
        "Raise ctxlab.BudgetError when scratchpad_tokens exceeds scratchpad_max",
    "the errors are ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name":
        "Raise ctxlab.BudgetError when scratchpad_tokens exceeds scratchpad_max",
    "a scratchpad cap of 0 allows no scratchpad (0 is not \"no cap\")":
        "a cap of 0 allows no scratchpad at all (0 does not mean \"no cap\")",
    "a scratchpad exactly at its cap is allowed (> not >=)": "exactly at the cap is fine",
    "a scratchpad of 0 tokens at a cap of 0 is exactly at its cap, so it is allowed": "exactly at the cap is fine",
    "a negative allowance raises ctxlab.BudgetError": "and when the allowance would be <= 0",
    "the impossible-budget error is ctxlab.BudgetError, not another error":
        "when the allowance would be zero or less, raise ctxlab.BudgetError",
    "a window of 0 is a window of 0 tokens (refused), not the default": (
        "window - reserved output - fixed prefix - scratchpad", "and when the allowance would be <= 0"),
    "an allowance of exactly zero is refused (<= 0, not < 0)": "and when the allowance would be <= 0",
    "the error gives the window, reserved output, fixed prefix and scratchpad": _FOUR_NUMBERS,
    "the error gives the four inputs, not only the shortfall": _FOUR_NUMBERS,
    "each number in the impossible-budget error follows its own name": _FOUR_NUMBERS,
    "the impossible-budget error gives all four numbers, a scratchpad of 0 too": _FOUR_NUMBERS,
    "an allowance of exactly 0 is refused with the same numbers in its error": _FOUR_NUMBERS,
    # concept checks: the lesson's text that makes the right answer right
    "Q1: doubling the laps quadruples the bill": "the bill grows with the square of the laps",
    "Q2: prompt and reply share the window": "input must never eat it, or the answer is cut short",
    "Q3: characters per token vary by kind of text":
        "The guess is wrong by different amounts for different kinds of text",
    "Q4: the budget is the window minus reserved output, checked every call": (
        "The reply is reserved first, so input can never eat into it", _CHECKED),
    "Q5: measure the sent prompt with the tokenizer every lap; the bill is the sum": (
        _CHECKED, "The run's bill is the sum over all calls"),
}
