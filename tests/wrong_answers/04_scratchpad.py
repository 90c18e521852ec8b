"""Known wrong answers for lesson 04-scratchpad; each must fail the named tests when graded."""

SCRATCHPAD = '''
@dataclass
class Scratchpad:
    goal: str
    facts: dict = field(default_factory=dict)
    done: list = field(default_factory=list)
    remaining: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)
    open_questions: list = field(default_factory=list)

    def render(self):
        sections = [
{sections}
        ]
        parts = [f"{{heading}}:\\n" + "\\n".join(lines) for heading, lines in sections if lines]
        return "\\n\\n".join({join})
'''
FACTS = '            ("ESTABLISHED", [f"- {k}: {v}" for k, v in self.facts.items()]),'
DONE_TO_REMAINING = """            ("DONE", [f"- {item}" for item in self.done]),
            ("REMAINING", [f"- {item}" for item in self.remaining]),"""
FAILED = '            ("DO NOT RETRY", [f"- {k}: {v}" for k, v in self.failed.items()]),'
OPEN = '            ("OPEN QUESTIONS", [f"- {item}" for item in self.open_questions]),'

UPDATE = '''
def update_scratchpad(pad, call, result):
    key = {key}
    data = {parse}
    if isinstance(data, dict) and data.get("error"):
        pad.failed.setdefault(key, f"{{data['error']}}: {{data.get('message', '')}}")
        return pad
    pad.failed.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result)
    pad.done.append({done})
    return pad
'''
KEY = "f\"{call['function']['name']} {call['function']['arguments']}\""
PARSE = "json.loads(result) if isinstance(result, str) and result.lstrip().startswith('{') else result"
SHORT_DONE = 'f"{key} -> {text.splitlines()[0][:80]}"'

WRONG_ANSWERS = [
    dict(
        name="goal-not-first",
        cell="scratchpad-render",
        source=SCRATCHPAD.format(
            sections="\n".join([FACTS, DONE_TO_REMAINING, FAILED, OPEN]),
            join='parts[:1] + [f"GOAL: {self.goal}"] + parts[1:]',
        ),
        fails=["scratchpad-render-goal-first"],
    ),
    dict(
        name="render-leaves-out-failures",
        cell="scratchpad-render",
        source=SCRATCHPAD.format(sections="\n".join([FACTS, DONE_TO_REMAINING, OPEN]), join='[f"GOAL: {self.goal}"] + parts'),
        fails=["scratchpad-render-shows-failures"],
    ),
    dict(
        name="failures-missed-in-json-text",
        cell="update-scratchpad",
        source=UPDATE.format(key=KEY, parse="result", done=SHORT_DONE),
        fails=["update-scratchpad-json-text-failure"],
    ),
    dict(
        name="failures-keyed-by-call-id",
        cell="update-scratchpad",
        source=UPDATE.format(key='call["id"]', parse=PARSE, done=SHORT_DONE),
        fails=["update-scratchpad-failure-once"],
    ),
    dict(
        name="unbounded-growth-copies-results",
        cell="update-scratchpad",
        source=UPDATE.format(key=KEY, parse=PARSE, done='f"{key} -> {text}"'),
        fails=["update-scratchpad-bounded-growth"],
    ),
    dict(
        name="unbounded-growth-sheds-only-done",
        cell="render-bounded",
        source='''
import copy


def render_bounded(pad, max_tokens):
    work = copy.deepcopy(pad)
    while work.done and ctxlab.count_text(work.render()) > max_tokens:
        work.done.pop(0)
    return work.render()
''',
        fails=["render-bounded-fits-cap"],
    ),
    dict(
        name="drops-the-goal-to-fit",
        cell="render-bounded",
        source='''
def render_bounded(pad, max_tokens):
    lines = pad.render().splitlines()
    while lines and ctxlab.count_text("\\n".join(lines)) > max_tokens:
        lines.pop(0)
    return "\\n".join(lines)
''',
        fails=["render-bounded-keeps-goal"],
    ),
]
