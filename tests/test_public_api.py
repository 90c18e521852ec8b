"""The public surface is deliberate, documented, and light to import."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys

import pytest

import ctxlab

CONTRACT = {  # names DESIGN.md promises; tests, lessons and benchmarks rely on them
    "encoding", "count_messages", "count_request", "turn_groups", "pairs_ok", "fit", "BudgetError",
    "ContextBudget",
}


def test_contract_names_are_exported():
    assert set(ctxlab.__all__) >= CONTRACT


def test_all_lists_exactly_the_public_names():
    public = {n for n in dir(ctxlab) if not n.startswith("_")}
    modules = {n for n in public if inspect.ismodule(getattr(ctxlab, n))}
    assert set(ctxlab.__all__) - {"__version__"} == public - modules


def test_every_public_name_is_documented_and_functions_show_an_example():
    for name in ctxlab.__all__:
        obj = getattr(ctxlab, name)
        if callable(obj):
            doc = inspect.getdoc(obj) or ""
            assert doc, f"ctxlab.{name} has no docstring"
            if inspect.isfunction(obj) or (inspect.isclass(obj) and not issubclass(obj, Exception)):
                assert ">>>" in doc, f"ctxlab.{name}: add a tiny example to the docstring"


def test_compaction_trigger_is_exported():
    assert {"compaction_due", "CompactionTrigger", "Compaction"} <= set(ctxlab.__all__)
    assert ctxlab.CompactionTrigger.__module__ == "ctxlab.compaction"


def test_replanning_hook_is_exported():
    assert {"replan_after", "replan_due", "replan_message", "REPLAN_HEADER", "REPLAN_KINDS"} <= set(ctxlab.__all__)
    assert ctxlab.replan_after.__module__ == "ctxlab.replanning"


def test_eviction_order_is_exported():
    assert {"EVICTION_ORDER", "SMALL_TALK_MAX_TOKENS", "small_talk"} <= set(ctxlab.__all__)
    assert ctxlab.small_talk.__module__ == "ctxlab.eviction"
    assert ctxlab.SMALL_TALK_MAX_TOKENS == 40


def test_import_does_not_pull_in_display_libraries():
    code = "import sys, ctxlab; print(sorted(m for m in ('ipywidgets', 'matplotlib', 'openai', 'IPython') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_pinned_list_is_exported():
    assert {"PIN_TOOL", "PIN_KINDS", "Pin", "pin_tool_schema", "pinned_items"} <= set(ctxlab.__all__)
    assert ctxlab.pinned_items.__module__ == "ctxlab.pins" and ctxlab.PIN_TOOL == "pin"


def test_one_public_name_per_idea():
    names = set(ctxlab.__all__)
    assert {n for n in names if "replay" in n.lower()} == {"replay", "ReplayResult"}  # one replay
    assert {n for n in names if "everything" in n.lower()} == {"KeepEverything"}
    assert {n for n in names if "summar" in n.lower() and callable(getattr(ctxlab, n))} == {
        "trim_and_summarise", "Summarise", "OfflineSummariser", "is_summary", "summary_message",
        "summary_text", "summary_model", "SummaryError"}


RETIRED = {  # old name: (what the warning names, the module that defines it)
    "keep_everything": ("ctxlab.KeepEverything()", "ctxlab.layout"),
    "WindowReplay": ("ctxlab.TranscriptLayout", "ctxlab.layout"),
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
        assert ctxlab.WindowReplay is ctxlab.TranscriptLayout
    with pytest.warns(DeprecationWarning):
        assert [len(p) for p in ctxlab.replay_prompts(run, lambda h: h)] == [1, 3]
    with pytest.warns(DeprecationWarning, match="OfflineSummariser"):
        from ctxlab.summarising import offline_summary
    assert callable(offline_summary)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ctxlab.no_such_name  # noqa: B018
