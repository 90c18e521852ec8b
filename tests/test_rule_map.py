"""The rule map: every graded test checks rules, and each rule is stated where the learner reads
the exercise, so no point is lost on a rule no text teaches.

``RULES`` in ``tests/wrong_answers/<lesson>.py`` lists, for every rule, the test cell that checks it
and a wrong answer that breaks it; ``TAUGHT`` there maps each rule to the words of the exercise's
text that state it (a string, or a tuple of strings that must all be there). Here "the exercise's
text" is what the learner's notebook (``course/``) shows in the lesson's introduction (how it is
graded) and from the heading of the section that holds the exercise down to the test: its
markdown and its answer cells with their docstrings, but no test cell. A concept check's text is the
whole lesson before its question.
Quotes are compared with emphasis, code marks and figure markers taken out and the spacing
folded, so a quote may run across a line break or a docstring's bullet.

A test worth 0 points is an optional challenge: its rules need no ``taught`` words.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.pipeline import _answers_module

REPO = Path(__file__).resolve().parents[1]
LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
CONCEPT_ANSWER = re.compile(r"q\d+-answer")
SECTION = re.compile(r"^## ", re.MULTILINE)


def source_of(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def normalise(text: str) -> str:
    """Text as compared: no HTML comments, emphasis, code marks or bullets ("- "); spacing folded;
    lower case."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = re.sub(r"[*`]", "", text)
    text = re.sub(r"(^|\s)[-*]\s", r"\1", text)
    return " ".join(text.split()).lower()


def load_rules(lesson: str) -> list[dict]:
    """RULES, each with its `taught` words from TAUGHT (None where there are none)."""
    module = _answers_module(lesson)
    taught = getattr(module, "TAUGHT", {})
    return [dict(rule, taught=taught.get(rule["rule"])) for rule in module.RULES]


def is_stated(taught, text: str) -> bool:
    """Whether every quote of `taught` (a string or a tuple of them) is in `text`."""
    quotes = (taught,) if isinstance(taught, str) else tuple(taught or ())
    return bool(quotes) and all(normalise(quote) in normalise(text) for quote in quotes)


def graded_tests(lesson: str) -> dict[str, float]:
    """Every graded test cell of the lesson's solution notebook, with its points."""
    (path,) = sorted((REPO / "solutions" / lesson).glob("*.ipynb"))
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    meta = [c["metadata"].get("nbgrader", {}) for c in cells]
    return {m["grade_id"]: m.get("points", 0) for m in meta if m.get("grade") and not m.get("solution")}


def exercise_texts(lesson: str) -> dict[str, tuple[str, str]]:
    """For every test cell of the learner's notebook: (its answer cell's id, the exercise's text)."""
    (path,) = sorted((REPO / "course" / lesson).glob("*.ipynb"))
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    texts: dict[str, tuple[str, str]] = {}
    first = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and SECTION.search(source_of(c)))
    intro = "\n\n".join(source_of(c) for c in cells[:first] if c["cell_type"] == "markdown")
    answer = None
    for index, cell in enumerate(cells):
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            answer = index
        elif meta.get("grade") and answer is not None:
            answer_id = cells[answer]["metadata"]["nbgrader"]["grade_id"]
            if CONCEPT_ANSWER.fullmatch(answer_id):
                start, head = 0, 0
            else:
                start = max(i for i in range(answer + 1) if cells[i]["cell_type"] == "markdown"
                            and SECTION.search(source_of(cells[i])))
                head = [m.start() for m in SECTION.finditer(source_of(cells[start]))][-1]
            parts = []
            for i in range(start, index):
                shown = cells[i]["cell_type"] == "markdown" or cells[i]["metadata"].get("nbgrader", {}).get("solution")
                if shown:
                    parts.append(source_of(cells[i])[head if i == start else 0:])
            texts[meta["grade_id"]] = (answer_id, "\n\n".join([intro] * bool(start) + parts))
    return texts


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_graded_test_traces_to_a_rule_its_exercise_states(lesson):
    rules = load_rules(lesson)
    tests = graded_tests(lesson)
    texts = exercise_texts(lesson)
    unnamed = sorted(t for t, points in tests.items() if points and t not in {r["test"] for r in rules})
    assert not unnamed, (
        f"{lesson}: graded tests that name no rule: {unnamed}; add the rules they check to RULES in "
        f"tests/wrong_answers/{lesson.replace('-', '_')}.py, or make them optional (0 points)")
    untaught = []
    for rule in rules:
        if not tests.get(rule["test"]):
            continue
        answer, text = texts[rule["test"]]
        if not is_stated(rule["taught"], text):
            untaught.append(f"{rule['test']}: {rule['rule']!r} (taught={rule['taught']!r})")
    assert not untaught, (
        f"{lesson}: rules whose exercise text does not state them; state each in the exercise's text "
        "(its section or the answer cell's docstring) and quote those words in TAUGHT, or make its "
        "test optional (0 points):\n" + "\n".join(untaught))


def test_the_exercise_text_is_what_the_learner_reads():
    """The text a rule is looked for in holds the exercise's docstring and the table above it,
    and none of its tests."""
    answer, text = exercise_texts("01-budget")["count-chat-name"]
    assert answer == "count-chat"
    assert "def count_chat(messages, enc=None):" in text
    assert "| every message |" in text
    assert "_count_chat" not in text, "a test cell's code is not the exercise's text"
    assert "## 1 · Tokens" not in text, "the text starts at the exercise's own section"
    assert "How this notebook is graded" in text, "the lesson's introduction applies to every exercise"
    answer, text = exercise_texts("01-budget")["q1-check"]
    assert answer == "q1-answer" and "## 2 · What a message list costs" in text
    assert is_stated("the **bill grows\n  with the square**", "The bill grows with the square")
    assert not is_stated(("bill grows", "halves"), "The bill grows with the square")
    assert not is_stated(None, "any text") and not is_stated((), "any text")


def test_rules_quote_only_rules_their_table_lists():
    """A TAUGHT entry for a rule RULES no longer has is a stale quote."""
    for lesson in LESSONS:
        module = _answers_module(lesson)
        stale = set(getattr(module, "TAUGHT", {})) - {rule["rule"] for rule in module.RULES}
        assert not stale, f"{lesson}: TAUGHT quotes rules that RULES does not list: {sorted(stale)}"
