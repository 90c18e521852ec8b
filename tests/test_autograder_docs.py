"""The instructor guide (autograder/README.md) against the code: options, modules and limits."""

from __future__ import annotations

import argparse
import re

from hostile.cases import CASES
from support.pipeline import REPO

from autograder.__main__ import build_parser

GUIDE = (REPO / "autograder" / "README.md").read_text(encoding="utf-8")


def grade_parser() -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["grade"]


def test_every_option_of_the_grade_command_is_in_the_guide():
    options = [o for action in grade_parser()._actions for o in action.option_strings if o.startswith("--")]
    assert "--no-sandbox" in options
    missing = [o for o in options if o != "--help" and f"`{o}" not in GUIDE]
    assert not missing, f"options missing from autograder/README.md: {missing}"


def test_every_module_is_in_the_guide():
    modules = sorted(p.name for p in (REPO / "autograder").glob("*.py") if p.name != "__init__.py")
    listed = set(re.findall(r"^\| `([a-z_]+\.py)` \|", GUIDE, flags=re.M))
    assert set(modules) == listed


def test_every_partial_defence_in_the_corpus_is_explained_in_the_guide():
    partial = [case for case in CASES if case.limits]
    assert partial
    for case in partial:
        assert case.guide and case.guide in GUIDE, case.student
