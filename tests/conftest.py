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


_graded: dict[str, GradedLesson] = {}


@pytest.fixture(scope="session")
def graded_lesson(tmp_path_factory):
    """``graded_lesson("01-budget")``: the lesson released and autograded for real with nbgrader
    (solution, blank and every listed wrong answer as students), once per test session."""

    def get(lesson: str) -> GradedLesson:
        if lesson not in _graded:
            _graded[lesson] = grade_lesson(lesson, tmp_path_factory.mktemp(f"grade-{lesson}"))
        return _graded[lesson]

    return get
