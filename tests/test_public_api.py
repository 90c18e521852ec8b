"""The public surface is deliberate, documented, and light to import.

``ctxlab`` is the practitioner's library: at most about 40 names, each with a docstring example.
``ctxlab.course`` is the course's machinery around it. The library never imports the course part (one listed crossing).
Names that moved out of ``ctxlab.__all__`` read for one release with a warning naming their home
(as httpx's ``test_exported_members.py`` pins its surface, these tests pin ours).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ctxlab
import ctxlab.course

PACKAGE = Path(ctxlab.__file__).parent

CONTRACT = {  # names DESIGN.md promises; tests, lessons and benchmarks rely on them
    "encoding", "count_messages", "count_request", "turn_groups", "pairs_ok", "fit", "BudgetError",
    "ContextBudget",
}

PRACTITIONER = [  # what an agent builder needs, in the order ctxlab.__all__ lists it
    "__version__",
    "CtxlabError", "MessageError", "BudgetError", "SummaryError",
    "encoding", "count_text", "count_message", "count_messages", "count_tools", "count_request", "TokenCounter",
    "validate_messages", "ContextBudget", "model_calls",
    "turn_groups", "pairs_ok", "fit", "HighLowTrimmer",
    "compact", "trim_and_summarise", "summary_message", "is_summary", "get_client", "OfflineSummariser",
    "CompactionTrigger",
    "Scratchpad", "compress", "compress_history", "restore", "TrajectoryStore",
    "MemoryPolicy", "build_context", "Assembler", "KeepEverything", "TruncateOldest", "Summarise", "Assemble", "replay",
    "ReplayResult", "MemoryLog",
]

ADDED_SINCE = {"MemoryPolicy"}  # names ctxlab.__all__ gained after the split
COURSE_ADDED_SINCE = {"explain"}  # names ctxlab.course gained after the split (never in ctxlab's top level)

COURSE = [
    "check", "check_all", "yours_or_reference", "explain", "check_environment",
    "transcript_names", "transcript_info", "load_transcript", "load_tools", "replay", "COURSE_KEYS",
    "strip_course_keys",
    "ScriptedClient",
    "TranscriptLayout", "WindowLayout", "layout_window", "render_layout_html",
]

# The old paths of the course's modules, kept for one release: each warns and hands over to
# ctxlab/course/ (they import nothing themselves; test_old_module_paths_warn_and_hand_over).
OLD_PATHS = ("checking", "environment", "transcripts", "layout", "layout_html", "widgets", "plots")
COURSE_MODULES = {path.stem for path in (PACKAGE / "course").glob("*.py")} - {"__init__"}
# What still crosses from the library to the course's part, each with its reason; the list only
# shrinks.
KNOWN_CROSSINGS = {
    ("replaying", "course"): "ctxlab.replay given a course transcript's name, deprecated for "
                             "ctxlab.course.replay: it imports the transcripts then, and only then",
}


def _public(module) -> set[str]:
    public = {n for n in vars(module) if not n.startswith("_")}
    return public - {n for n in public if inspect.ismodule(getattr(module, n))}


def test_the_practitioner_api_is_exactly_this_list():
    assert ctxlab.__all__ == PRACTITIONER
    # "about 40": 40 before MemoryPolicy, which took the place of eleven keyword arguments on
    # each of build_context and Assembler
    assert len(ctxlab.__all__) <= 41
    assert set(ctxlab.__all__) >= CONTRACT


def test_all_lists_exactly_the_public_names():
    assert set(ctxlab.__all__) - {"__version__"} == _public(ctxlab)
    assert set(ctxlab.course.__all__) == _public(ctxlab.course) == set(COURSE)


@pytest.mark.parametrize("owner", [ctxlab, ctxlab.course], ids=["ctxlab", "ctxlab.course"])
def test_every_public_name_is_documented_with_an_example(owner):
    for name in owner.__all__:
        if name == "__version__":
            continue
        obj = getattr(owner, name)
        doc = inspect.getdoc(obj) or ""
        if not callable(obj):
            continue  # a constant: documented where it is defined
        assert doc, f"{owner.__name__}.{name} has no docstring"
        assert ">>>" in doc, f"{owner.__name__}.{name}: add a tiny example to the docstring"


def test_no_course_name_in_the_library_and_none_twice():
    # replay is the one exception: ctxlab.course.replay is ctxlab.replay on a transcript named
    assert set(ctxlab.__all__) & set(ctxlab.course.__all__) == {"replay"}


def test_replay_by_name_moved_to_the_course():
    budget = ctxlab.ContextBudget(window=16_000, reserve_output=2_000)
    run = ctxlab.course.replay("refund", ctxlab.KeepEverything(), budget=budget)
    with pytest.warns(DeprecationWarning, match=re.escape("use ctxlab.course.replay(name, ...)")):
        old = ctxlab.replay("refund", ctxlab.KeepEverything(), budget=budget)
    assert [lap.tokens for lap in old.laps] == [lap.tokens for lap in run.laps]
    assert old.survived() == run.survived() == {"goal": True, "failure": True}


def test_every_moved_name_reads_with_a_warning_naming_its_home():
    for old, home in ctxlab._MOVED.items():
        module, _, attribute = home.partition(":")
        expected = getattr(importlib.import_module(module), attribute)
        with pytest.warns(DeprecationWarning, match=re.escape(f"ctxlab.{old} moved to {module}.{attribute}")):
            assert getattr(ctxlab, old) is expected
        assert old not in ctxlab.__all__ and old not in dir(ctxlab)


def test_the_names_that_moved_are_the_ones_that_left():
    before = (set(ctxlab._MOVED) | set(ctxlab.__all__)) - ADDED_SINCE
    assert len(before) == 103  # ctxlab.__all__ before the split: nothing lost
    assert set(COURSE) - {"replay"} - COURSE_ADDED_SINCE <= set(ctxlab._MOVED)


def _imports(path: Path) -> set[str]:
    """The ctxlab modules ``path`` imports (relative or absolute), by their short names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found.update(alias.name for alias in node.names)
            elif node.module and node.module.startswith("ctxlab."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("ctxlab."))
    return found


def test_the_library_never_imports_the_course_part():
    assert set(OLD_PATHS) | {"runs", "window", "layout_policies", "explaining"} == COURSE_MODULES
    crossings = set()
    for path in sorted(PACKAGE.glob("*.py")):
        if path.stem in OLD_PATHS:
            continue
        crossings |= {(path.stem, module) for module in _imports(path) & (COURSE_MODULES | {"course"})}
    assert crossings == set(KNOWN_CROSSINGS), "a library module imports the course's: move it, or list it with its reason"


def test_the_course_part_imports_the_library_and_itself_only():
    for path in sorted((PACKAGE / "course").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                assert node.module.split(".")[0] in COURSE_MODULES, f"{path.name}: from .{node.module}"


@pytest.mark.parametrize("old", OLD_PATHS)
def test_old_module_paths_warn_and_hand_over(old):
    code = (f"import warnings; warnings.simplefilter('error')\n"
            f"try:\n    import ctxlab.{old}\nexcept DeprecationWarning as w:\n    print(w)\n"
            f"warnings.simplefilter('ignore')\nimport ctxlab.{old} as m, ctxlab.course.{old} as n\nprint(m is n)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0].startswith(f"ctxlab.{old} moved to ctxlab.course.{old}") and out[1] == "True"
    assert len((PACKAGE / f"{old}.py").read_text(encoding="utf-8").splitlines()) < 12  # a hand-over, nothing else


def test_import_does_not_pull_in_display_libraries_or_the_course():
    code = ("import sys, ctxlab; print(sorted(m for m in ('ipywidgets', 'matplotlib', 'openai', 'IPython', "
            "'ctxlab.course', 'ctxlab.course.transcripts', 'ctxlab.course.layout') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_one_public_name_per_idea():
    names = set(ctxlab.__all__)
    assert {n for n in names if "replay" in n.lower()} == {"replay", "ReplayResult"}  # one replay
    assert {n for n in names if "everything" in n.lower()} == {"KeepEverything"}
    assert {n for n in names if "summar" in n.lower() and callable(getattr(ctxlab, n))} == {
        "trim_and_summarise", "Summarise", "OfflineSummariser", "is_summary", "summary_message", "SummaryError"}


def test_finer_parts_stay_public_in_their_modules():
    assert ctxlab.compaction.CompactionTrigger is ctxlab.CompactionTrigger
    assert ctxlab.replanning.replan_after.__module__ == "ctxlab.replanning"
    assert ctxlab.eviction.small_talk.__module__ == "ctxlab.eviction"
    assert ctxlab.eviction.SMALL_TALK_MAX_TOKENS == 40
    assert ctxlab.pins.pinned_items.__module__ == "ctxlab.pins" and ctxlab.pins.PIN_TOOL == "pin"


RETIRED = {  # old name: (what the warning names, the module that defines it)
    "keep_everything": ("ctxlab.KeepEverything()", "ctxlab.course.layout"),
    "WindowReplay": ("ctxlab.course.TranscriptLayout", "ctxlab.course.layout"),
    "replay_prompts": ("ctxlab.model_calls", "ctxlab.watermarks"),
}


@pytest.mark.parametrize("old", sorted(RETIRED))
def test_a_retired_name_imports_for_one_release_with_a_warning_naming_its_replacement(old):
    new, module = RETIRED[old]
    assert old not in ctxlab.__all__ and old not in dir(ctxlab)
    for owner in (ctxlab, sys.modules[module]):
        with pytest.warns(DeprecationWarning, match=re.escape(new)):
            assert callable(getattr(owner, old))


def test_retired_names_still_work_as_before():
    run = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "a"},
           {"role": "user", "content": "more"}, {"role": "assistant", "content": "b"}]
    with pytest.warns(DeprecationWarning):
        assert ctxlab.keep_everything(run, 1) == (run, [])
    with pytest.warns(DeprecationWarning):
        assert ctxlab.WindowReplay is ctxlab.course.TranscriptLayout
    with pytest.warns(DeprecationWarning):
        assert [len(p) for p in ctxlab.replay_prompts(run, lambda h: h)] == [1, 3]
    with pytest.warns(DeprecationWarning, match="OfflineSummariser"):
        from ctxlab.summarising import offline_summary
    assert callable(offline_summary)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ctxlab.no_such_name  # noqa: B018
