"""Why a concept check's answer is right, for a learner who has answered it.

Grading explains every concept check, but a learner working alone never grades. So a lesson
notebook made by ``make release`` carries each concept check's explanation, sealed with the
answer it explains, and ``ctxlab.course.explain("q1")`` opens it once your ``q1`` is that
answer: it says whether your answer is the one the lesson argues for and, when it is, why it
is right and the others wrong. A wrong answer gets a pointer back to the lesson, not the answer.

The seal keeps the answers out of plain sight in the notebook file; it is no lock. With four
options, a learner can find the right one by trying each, so concept checks teach more than
they measure (see ``autograder/README.md``, "Concept checks").

>>> sealed = seal("01-budget", "q9", "c", "Q9: (c). Because.")
>>> opened(sealed, "01-budget", "q9", "c"), opened(sealed, "01-budget", "q9", "a")
('Q9: (c). Because.', None)
"""

from __future__ import annotations

import ast
import base64
import hashlib
import html
import os
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = ["explain", "Explanation", "seal", "opened", "sealed_explanations", "LETTERS"]

LETTERS = ("a", "b", "c", "d")
_QUESTION = re.compile(r"q(\d+)", re.IGNORECASE)
_CHECK = re.compile(r"q(\d+)-check")
_MARKER = "HIDDEN " + "TESTS"  # spelt in two parts: a learner's copy may not hold the marker


def _key(lesson: str, question: str, letter: str) -> bytes:
    return hashlib.sha256(f"ctxlab-explain/{lesson}/{question}/{letter}".encode()).digest()


def seal(lesson: str, question: str, letter: str, text: str) -> dict[str, str]:
    """``text`` sealed with the right answer ``letter``: opened only with that letter."""
    key = _key(lesson, question, letter)
    data = text.encode("utf-8")
    stream = hashlib.shake_256(key).digest(len(data))
    return {
        "check": hashlib.sha256(key + b"/check").hexdigest()[:32],
        "text": base64.b64encode(bytes(a ^ b for a, b in zip(data, stream))).decode("ascii"),
    }


def opened(sealed: Mapping[str, str], lesson: str, question: str, letter: str) -> str | None:
    """The sealed text when ``letter`` is the answer it was sealed with, else None."""
    key = _key(lesson, question, letter)
    if hashlib.sha256(key + b"/check").hexdigest()[:32] != sealed.get("check"):
        return None
    data = base64.b64decode(sealed["text"])
    stream = hashlib.shake_256(key).digest(len(data))
    return bytes(a ^ b for a, b in zip(data, stream)).decode("utf-8")


def sealed_explanations(lesson: str, solution: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Every concept check of a solution notebook, sealed: ``{"q1": {"check": ..., "text": ...}}``.

    A concept check's hidden test is ``assert qN == "<letter>", "<explanation>"``; anything else
    is refused, so that no check goes out without its explanation.
    """
    out: dict[str, dict[str, str]] = {}
    for cell in solution.get("cells", []):
        grade_id = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id", "")
        match = _CHECK.fullmatch(grade_id)
        if not match:
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        hidden = source.split(f"### BEGIN {_MARKER}")[-1].split(f"### END {_MARKER}")[0]
        question = f"q{match.group(1)}"
        found = [
            node for node in ast.walk(ast.parse(hidden)) if isinstance(node, ast.Assert)
            and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Name)
            and node.test.left.id == question and isinstance(node.test.ops[0], ast.Eq) and node.msg is not None
        ]
        if len(found) != 1:
            raise ValueError(
                f"{lesson}: the hidden test of {grade_id} should hold one `assert {question} == \"<letter>\", "
                f"\"<explanation>\"`; found {len(found)}")
        letter = ast.literal_eval(found[0].test.comparators[0])
        text = ast.literal_eval(found[0].msg)
        if letter not in LETTERS or not isinstance(text, str) or not text.strip():
            raise ValueError(f"{lesson}: {grade_id} should compare {question} with one of {LETTERS} and explain it")
        out[question] = seal(lesson, question, letter, text)
    return out


@dataclass(frozen=True)
class Explanation:
    """What ``explain`` found: ``right`` is None when there was nothing to judge."""

    question: str
    answer: str | None
    right: bool | None
    text: str

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = {True: "#1a7f37", False: "#b42318"}.get(self.right, "inherit")
        return (f'<pre style="white-space:pre-wrap;word-break:normal;overflow-wrap:break-word;margin:0;'
                f'color:{colour}">{html.escape(self.text)}</pre>')


def _question(question: str | int) -> str:
    if isinstance(question, int) and not isinstance(question, bool):
        return f"q{question}"
    match = _QUESTION.fullmatch(str(question).strip())
    if not match:
        raise ValueError(f"name a concept check as 'q1', 'q2', ... or by its number; got {question!r}")
    return f"q{match.group(1)}"


def explain(
    question: str | int,
    *,
    notebook: str | os.PathLike[str] | None = None,
    namespace: MutableMapping[str, Any] | None = None,
) -> Explanation:
    """Why concept check ``question`` ("q1", or 1) has the answer it has, once yours is that one.

    Reads your answer (the variable ``q1``) from your notebook's names and the sealed
    explanations from the lesson's notebook file. Never raises for a missing or unexpected
    answer: the result says what to do.

    >>> import json, pathlib, tempfile
    >>> sealed = {"q1": seal("01-x", "q1", "b", "Q1: (b). Because.")}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lesson.ipynb"
    >>> _ = path.write_text(json.dumps({"cells": [], "metadata": {"ctxlab": {"lesson": "01-x", "explanations": sealed}}}))
    >>> print(explain("q1", notebook=path, namespace={"q1": "b"}))
    Right. Q1: (b). Because.
    """
    from ctxlab.course import checking

    name = _question(question)
    scope = checking._namespace(namespace)
    answer = scope.get(name)
    if answer not in LETTERS:
        got = "not answered yet" if name not in scope else f"is {answer!r}"
        return Explanation(name, None, None, (
            f"{name.upper()} {got}: set {name} to \"a\", \"b\", \"c\" or \"d\" in its answer cell and run that "
            f"cell, then run explain({name!r}) again."))
    try:
        path, data = checking._read(notebook, scope)
    except (FileNotFoundError, ValueError) as err:
        return Explanation(name, answer, None, f"Cannot explain {name}: {err}")
    sealed = ((data.get("metadata") or {}).get("ctxlab") or {}).get("explanations") or {}
    lesson = ((data.get("metadata") or {}).get("ctxlab") or {}).get("lesson", "")
    if name not in sealed:
        return Explanation(name, answer, None, (
            f"{path.name} carries no explanation for {name}: explanations come with the lesson as `make release` "
            "writes it; grading explains every concept check too."))
    text = opened(sealed[name], lesson, name, answer)
    if text is None:
        return Explanation(name, answer, False, (
            f"({answer}) is not the answer the lesson argues for. Read the question again against the lesson's "
            f"sections and its Summary, change {name}, run its cell, then run explain({name!r}) again."))
    return Explanation(name, answer, True, f"Right. {text}")
