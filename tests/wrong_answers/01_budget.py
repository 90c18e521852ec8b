"""Known wrong answers for lesson 01-budget, one rule broken in each; each must fail the named tests.

``RULES`` maps every rule the lesson states to the test cell that checks it and a wrong answer
below that breaks only that rule.
"""

COUNT_CHAT = '''
def count_chat(messages, enc=None):
    enc = enc or ctxlab.encoding()
    total = {priming}
    for message in messages:
        total += {overhead}
        for key, value in message.items():
            if {skip}:
                continue
            if key == "tool_calls":
                {tool_calls}
            else:
                total += len(enc.encode_ordinary({text}))
                if key == "name":
                    total += {name_extra}
    return total
'''
SKIP = 'key in ("step", "pinned") or value is None'
COUNTED_CALLS = """for call in value:
                    total += 3 + len(enc.encode_ordinary(call["function"]["name"])) + len(enc.encode_ordinary(call["function"]["arguments"]))"""


def count_chat(priming=3, overhead=3, skip=SKIP, tool_calls=COUNTED_CALLS, text="value", name_extra=1):
    """The reference count_chat with one part changed."""
    return COUNT_CHAT.format(priming=priming, overhead=overhead, skip=skip, tool_calls=tool_calls,
                             text=text, name_extra=name_extra)


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
    dict(name="skips-tool-call-id", cell="count-chat",
         source=count_chat(skip='key in ("step", "pinned", "tool_call_id") or value is None'),
         fails=["count-chat-visible", "count-chat-every-string-field", "count-chat-transcripts"]),
    dict(name="forgets-name-extra-token", cell="count-chat", source=count_chat(name_extra=0),
         fails=["count-chat-name"]),
    dict(name="ignores-tool-calls", cell="count-chat", source=count_chat(tool_calls="pass"),
         fails=["count-chat-visible", "count-chat-tool-calls", "count-chat-transcripts"]),
    dict(name="tool-calls-without-per-call-overhead", cell="count-chat",
         source=count_chat(tool_calls=COUNTED_CALLS.replace("total += 3 + ", "total += ")),
         fails=["count-chat-visible", "count-chat-tool-calls", "count-chat-transcripts"]),
    dict(name="counts-only-the-first-tool-call", cell="count-chat",
         source=count_chat(tool_calls=COUNTED_CALLS.replace("for call in value:", "for call in value[:1]:")),
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
    dict(rule="a tool result's tool_call_id is a string field and is counted",
         test="count-chat-every-string-field", wrong="skips-tool-call-id"),
    dict(rule="a name costs its tokens plus 1", test="count-chat-name", wrong="forgets-name-extra-token"),
    dict(rule="tool_calls are counted even when content is None", test="count-chat-tool-calls",
         wrong="ignores-tool-calls"),
    dict(rule="each tool call costs 3 tokens of its own", test="count-chat-tool-calls",
         wrong="tool-calls-without-per-call-overhead"),
    dict(rule="every entry of tool_calls is counted (parallel calls)", test="count-chat-tool-calls",
         wrong="counts-only-the-first-tool-call"),
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
         test="count-chat-transcripts", wrong="counts-only-the-first-tool-call"),
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
