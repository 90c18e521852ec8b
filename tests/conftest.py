"""Shared fixtures. Tests run offline: see support/offline for the network guard."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))

from support.pipeline import GradedLesson, grade_lesson  # noqa: E402


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch):
    """Tests never reach a real model: the offline summariser is always used unless a test
    points the client at its own local server."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


_graded: dict[tuple[str, str], GradedLesson] = {}


@pytest.fixture(scope="session")
def graded_lesson(tmp_path_factory):
    """``graded_lesson("01-budget")``: the lesson graded for real by ``python -m autograder grade``
    (the judge), with the solution, the blank notebook and every listed wrong answer as students;
    ``graded_lesson("01-budget", engine="nbgrader")``: the solution and the blank notebook graded
    by plain nbgrader, with the tests in the learner's kernel. Once per test session each."""

    def get(lesson: str, engine: str = "judge") -> GradedLesson:
        if (lesson, engine) not in _graded:
            folder = tmp_path_factory.mktemp(f"grade-{lesson}-{engine}")
            _graded[(lesson, engine)] = grade_lesson(lesson, folder, engine=engine)
        return _graded[(lesson, engine)]

    return get
