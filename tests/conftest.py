"""Shared fixtures. Tests run offline: see support/offline for the network guard."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))

from support.pipeline import GradedLesson, grade_lesson, grade_lessons  # noqa: E402

# tests/wrong_answers/accepted/ holds answer cells kept as files, not modules: they use the names
# a lesson's setup cell binds (json, ctxlab), so importing them, or running their docstrings as
# doctests, fails for reasons that have nothing to do with the answers.
collect_ignore_glob = ["wrong_answers/accepted/*"]


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch):
    """Tests never reach a real model: the offline summariser is always used unless a test
    points the client at its own local server."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


_graded: dict[tuple[str, str], GradedLesson] = {}


def _lessons_wanted(session, engine: str) -> list[str]:
    """The lessons the collected tests grade with ``engine`` (a test's ``engine`` parameter, or
    the judge when it has none)."""
    wanted = set()
    for item in session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if ("graded_lesson" in getattr(item, "fixturenames", ()) and "lesson" in params
                and params.get("engine", "judge") == engine):
            wanted.add(params["lesson"])
    return sorted(wanted)


@pytest.fixture(scope="session")
def graded_lesson(tmp_path_factory, request):
    """``graded_lesson("01-budget")``: the lesson graded for real by ``python -m autograder grade``
    (the judge), with the solution, the blank notebook and every listed wrong answer as students;
    ``graded_lesson("01-budget", engine="nbgrader")``: the solution and the blank notebook graded
    by plain nbgrader, with the tests in the learner's kernel. Once per test session each.

    The first request grades every lesson the session's tests will ask for at once: the judge's
    in one run of the grade command (as a class is graded), plain nbgrader's in parallel."""

    def get(lesson: str, engine: str = "judge") -> GradedLesson:
        if (lesson, engine) not in _graded:
            batch = [x for x in _lessons_wanted(request.session, engine) if (x, engine) not in _graded]
            if lesson not in batch:
                batch.append(lesson)
            folder = tmp_path_factory.mktemp(f"grade-{engine}")
            if engine == "judge":
                _graded.update({(x, engine): graded for x, graded in grade_lessons(batch, folder).items()})
            else:
                with ThreadPoolExecutor(max_workers=3) as pool:
                    done = pool.map(lambda x: grade_lesson(x, folder / x, engine=engine), batch)
                    _graded.update({(x, engine): graded for x, graded in zip(batch, done, strict=True)})
        return _graded[(lesson, engine)]

    return get
