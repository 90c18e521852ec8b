"""The public surface is deliberate, documented, and light to import."""

from __future__ import annotations

import inspect
import subprocess
import sys

import ctxlab

CONTRACT = {  # names DESIGN.md promises; tests, lessons and benchmarks rely on them
    "encoding", "count_messages", "turn_groups", "pairs_ok", "fit", "BudgetError", "ContextBudget",
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
