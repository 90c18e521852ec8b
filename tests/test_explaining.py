"""ctxlab.course.explain: a concept check's explanation for a learner who never grades, opened by
the right answer; the released notebooks carry them sealed, never in plain text."""

from __future__ import annotations

import ast
import json
import re

import pytest
from support.pipeline import REPO

import ctxlab.course
from ctxlab.course.explaining import LETTERS, opened, seal, sealed_explanations

LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
MARKER = "HIDDEN " + "TESTS"


def concept_checks(lesson: str) -> dict[str, tuple[str, str]]:
    """question -> (right letter, explanation), read from the solution notebook's hidden tests."""
    (path,) = sorted((REPO / "solutions" / lesson).glob("*.ipynb"))
    out = {}
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id", "")
        if re.fullmatch(r"q\d+-check", grade_id):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            (node,) = [n for n in ast.walk(ast.parse(source.split(f"BEGIN {MARKER}")[1])) if isinstance(n, ast.Assert)]
            out[grade_id.split("-")[0]] = (ast.literal_eval(node.test.comparators[0]), ast.literal_eval(node.msg))
    return out


def released(lesson: str):
    (path,) = sorted((REPO / "course" / lesson).glob("*.ipynb"))
    return path


def test_only_the_right_letter_opens_a_seal():
    sealed = seal("07-x", "q2", "b", "Q2: (b). Zürich, because.")
    assert [opened(sealed, "07-x", "q2", letter) for letter in LETTERS] == [None, "Q2: (b). Zürich, because.", None, None]
    assert opened(sealed, "07-y", "q2", "b") is None and opened(sealed, "07-x", "q3", "b") is None


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_released_lesson_carries_every_concept_check_sealed_and_none_in_plain_text(lesson):
    checks = concept_checks(lesson)
    assert checks, f"{lesson} has no concept checks"
    text = released(lesson).read_text(encoding="utf-8")
    meta = json.loads(text)["metadata"]["ctxlab"]
    assert meta["lesson"] == lesson and set(meta["explanations"]) == set(checks)
    for question, (letter, explanation) in checks.items():
        assert opened(meta["explanations"][question], lesson, question, letter) == explanation
        assert explanation[:40] not in text and json.dumps(explanation)[1:41] not in text, (
            f"{lesson}: the explanation of {question} is in the learner's notebook in plain text")


@pytest.mark.parametrize("lesson", LESSONS)
def test_explain_opens_for_the_right_answer_and_points_back_for_a_wrong_one(lesson):
    path = released(lesson)
    for question, (letter, explanation) in concept_checks(lesson).items():
        right = ctxlab.course.explain(question, notebook=path, namespace={question: letter})
        assert right.right is True and str(right) == f"Right. {explanation}"
        wrong = next(x for x in LETTERS if x != letter)
        answer = ctxlab.course.explain(int(question[1:]), notebook=path, namespace={question: wrong})
        assert answer.right is False and explanation[:40] not in str(answer)
        assert f"({wrong}) is not the answer the lesson argues for" in str(answer)


def test_explain_asks_for_an_answer_first_and_says_when_a_notebook_has_no_explanations(tmp_path):
    path = released("01-budget")
    unanswered = ctxlab.course.explain("q1", notebook=path, namespace={})
    assert unanswered.right is None and str(unanswered).startswith("Q1 not answered yet: set q1 to")
    odd = ctxlab.course.explain("Q1", notebook=path, namespace={"q1": "C"})
    assert odd.right is None and "Q1 is 'C'" in str(odd)
    bare = tmp_path / "bare.ipynb"
    bare.write_text(json.dumps({"cells": [], "metadata": {}}))
    assert "carries no explanation for q1" in str(ctxlab.course.explain("q1", notebook=bare, namespace={"q1": "a"}))
    with pytest.raises(ValueError, match="name a concept check as 'q1'"):
        ctxlab.course.explain("question one", namespace={})


def test_a_concept_check_without_its_explanation_is_refused_at_release():
    cell = {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "grade_id": "q1-check", "points": 2}},
            "source": f'assert q1 in "abcd"\n### BEGIN {MARKER}\nassert q1 == "b"\n### END {MARKER}\n'}
    with pytest.raises(ValueError, match="should hold one `assert q1 =="):
        sealed_explanations("01-budget", {"cells": [cell]})
