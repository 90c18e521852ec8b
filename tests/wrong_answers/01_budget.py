"""Known wrong answers for lesson 01-budget; each must fail the named tests when graded."""

COUNT_CHAT = '''
def count_chat(messages, enc=None):
    enc = enc or ctxlab.encoding()
    total = {priming}
    for message in messages:
        total += {overhead}
        for key, value in message.items():
            if key in ("step", "pinned") or value is None:
                continue
            if key == "tool_calls":
                {tool_calls}
            else:
                total += len(enc.encode_ordinary(value))
                if key == "name":
                    total += 1
    return total
'''
COUNTED_CALLS = """for call in value:
                    total += 3 + len(enc.encode_ordinary(call["function"]["name"])) + len(enc.encode_ordinary(call["function"]["arguments"]))"""

BUDGET = '''
from dataclasses import dataclass


@dataclass
class ContextBudget:
    window: int = 128_000
    reserve_output: int = 4_000
    scratchpad_max: int = 6_000

    def history_allowance(self, fixed_tokens, scratchpad_tokens):
{body}
'''
CAP = """        if scratchpad_tokens > self.scratchpad_max:
            raise ctxlab.BudgetError(f"scratchpad {scratchpad_tokens} over cap {self.scratchpad_max}")
"""
REFUSE = """        if allowance <= 0:
            raise ctxlab.BudgetError(
                f"window {self.window} reserved output {self.reserve_output} fixed prefix "
                f"{fixed_tokens} scratchpad {scratchpad_tokens}: {allowance} left")
"""

WRONG_ANSWERS = [
    dict(
        name="forgets-per-message-overhead",
        cell="count-chat",
        source=COUNT_CHAT.format(priming=3, overhead=0, tool_calls=COUNTED_CALLS),
        fails=["count-chat-per-message-overhead"],
    ),
    dict(
        name="forgets-reply-priming",
        cell="count-chat",
        source=COUNT_CHAT.format(priming=0, overhead=3, tool_calls=COUNTED_CALLS),
        fails=["count-chat-reply-priming"],
    ),
    dict(
        name="ignores-tool-calls",
        cell="count-chat",
        source=COUNT_CHAT.format(priming=3, overhead=3, tool_calls="pass"),
        fails=["count-chat-tool-calls"],
    ),
    dict(
        name="bills-only-the-final-context",
        cell="billed-input",
        source='''
def billed_input(messages, tools=None):
    return ctxlab.count_messages(messages) + ctxlab.count_tools(tools)
''',
        fails=["billed-input-every-call"],
    ),
    dict(
        name="does-not-subtract-reserved-output",
        cell="context-budget",
        source=BUDGET.format(body=CAP + "        allowance = self.window - fixed_tokens - scratchpad_tokens\n" + REFUSE + "        return allowance"),
        fails=["budget-reserves-output"],
    ),
    dict(
        name="scratchpad-not-capped",
        cell="context-budget",
        source=BUDGET.format(body="        allowance = self.window - self.reserve_output - fixed_tokens - scratchpad_tokens\n" + REFUSE + "        return allowance"),
        fails=["budget-caps-scratchpad"],
    ),
    dict(
        name="returns-a-negative-allowance",
        cell="context-budget",
        source=BUDGET.format(body=CAP + "        return self.window - self.reserve_output - fixed_tokens - scratchpad_tokens"),
        fails=["budget-refuses-impossible", "budget-error-gives-numbers"],
    ),
]
