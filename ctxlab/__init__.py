"""ctxlab: short-term memory for LLM agents, done right; the library of Context Window Lab.

Token counts with the model's own tokenizer, offline, as the API bills them (within max(2%, 3
tokens) of the bill for 1,597 of 1,642 recorded requests: ``tests/test_billing.py``), trimming
that never orphans a tool result or drops a pin, roll-up summaries, a bounded scratchpad,
age-based compression of tool results, and the context assembler that puts them together.
The names here (``ctxlab.__all__``) are what an agent builder needs; each module keeps its
finer parts public under its own name (``ctxlab.pins.Pin``, ``ctxlab.summarising.render_steps``).
The course's machinery, which an agent does not need (checks, transcripts, the lessons' window
layouts, the scripted client), is :mod:`ctxlab.course`, which the library never imports.

One name per idea: :func:`replay` is the one replay (a policy measured over a run); the
policies (:class:`KeepEverything`, :class:`TruncateOldest`, :class:`Summarise`,
:class:`Assemble`) work in it and in the course's window layout; :func:`compact` is the one
summariser call, which :func:`trim_and_summarise`, :class:`Summarise` and :func:`build_context`
use, with a client (:func:`get_client`, :class:`OfflineSummariser`). A name that moved out of
this list still reads for one release, with a ``DeprecationWarning`` naming its new home;
``keep_everything``, ``WindowReplay`` and ``replay_prompts`` are retired the same way.

>>> import ctxlab
>>> ctxlab.count_messages([{"role": "user", "content": "Hello!"}])
9
"""

__version__ = "0.1.0"

# the modules whose finer parts are public under their own names (ctxlab.pins.Pin, ...)
from . import (  # noqa: F401
    assembly,
    billing,
    budget,
    caching,
    calls,
    compaction,
    errors,
    events,
    eviction,
    history,
    images,
    llm,
    memory_policy,
    messages,
    offline,
    parts,
    pins,
    replanning,
    replaying,
    scratchpad,
    summarising,
    summary_format,
    tokens,
    tool_text,
    trimming,
    watermarks,
)
from ._retired import moved as _moved
from ._retired import retired as _retired
from .assembler import Assembler
from .assembly import build_context
from .billing import count_request
from .budget import ContextBudget, model_calls
from .compaction import CompactionTrigger
from .compression import compress, compress_history, restore
from .errors import BudgetError, CtxlabError, MessageError, SummaryError
from .events import MemoryLog
from .llm import OfflineSummariser, get_client
from .memory_policy import MemoryPolicy
from .messages import validate_messages
from .policies import Assemble, KeepEverything, Summarise, TruncateOldest
from .replaying import ReplayResult, replay
from .scratchpad import Scratchpad
from .store import TrajectoryStore
from .summarising import compact, is_summary, summary_message, trim_and_summarise
from .tokens import TokenCounter, count_message, count_messages, count_text, count_tools, encoding
from .trimming import fit, pairs_ok, turn_groups
from .watermarks import HighLowTrimmer

__all__ = [
    "__version__",
    # errors
    "CtxlabError",
    "MessageError",
    "BudgetError",
    "SummaryError",
    # counting tokens as the API bills them
    "encoding",
    "count_text",
    "count_message",
    "count_messages",
    "count_tools",
    "count_request",
    "TokenCounter",
    # messages and the budget of a window
    "validate_messages",
    "ContextBudget",
    "model_calls",
    # trimming by turn groups
    "turn_groups",
    "pairs_ok",
    "fit",
    "HighLowTrimmer",
    # summarising
    "compact",
    "trim_and_summarise",
    "summary_message",
    "is_summary",
    "get_client",
    "OfflineSummariser",
    "CompactionTrigger",
    # the scratchpad, age-based compression and the trajectory store
    "Scratchpad",
    "compress",
    "compress_history",
    "restore",
    "TrajectoryStore",
    # assembling a context, policies and replay
    "MemoryPolicy",
    "build_context",
    "Assembler",
    "KeepEverything",
    "TruncateOldest",
    "Summarise",
    "Assemble",
    "replay",
    "ReplayResult",
    "MemoryLog",
]

from .watermarks import _prompts_per_call  # noqa: E402, F401

_MOVED = {name: f"ctxlab.course:{name}" for name in (
    "check", "check_all", "yours_or_reference", "check_environment", "COURSE_KEYS", "strip_course_keys",
    "load_transcript", "load_tools", "transcript_info", "transcript_names", "ScriptedClient",
    "TranscriptLayout", "WindowLayout", "layout_window", "render_layout_html")}
"""Names that moved out of ``ctxlab.__all__``: to the course's package, or to the module
they are public in. Each still reads for one release, with a warning naming its new home."""
_MOVED.update({
    "EncodingUnavailable": "ctxlab.errors:EncodingUnavailable",
    "StoreError": "ctxlab.errors:StoreError",
    "ReferenceNotFound": "ctxlab.errors:ReferenceNotFound",
    "encoding_for_model": "ctxlab.tokens:encoding_for_model",
    "message_problems": "ctxlab.messages:message_problems",
    "MessageChecker": "ctxlab.messages:MessageChecker",
    "as_message": "ctxlab.messages:as_message",
    "as_messages": "ctxlab.messages:as_messages",
    "Allocation": "ctxlab.budget:Allocation",
    "context_per_lap": "ctxlab.budget:context_per_lap",
    "billed_input": "ctxlab.budget:billed_input",
    "turn_group_spans": "ctxlab.trimming:turn_group_spans",
    "pinned_indices": "ctxlab.trimming:pinned_indices",
    "PIN_TOOL": "ctxlab.pins:PIN_TOOL",
    "PIN_KINDS": "ctxlab.pins:PIN_KINDS",
    "Pin": "ctxlab.pins:Pin",
    "pin_tool_schema": "ctxlab.pins:pin_tool_schema",
    "pinned_items": "ctxlab.pins:pinned_items",
    "GrowingHistory": "ctxlab.history:GrowingHistory",
    "MessageRuns": "ctxlab.history:MessageRuns",
    "count_trims": "ctxlab.watermarks:count_trims",
    "SUMMARY_PREFIX": "ctxlab.summarising:SUMMARY_PREFIX",
    "render_steps": "ctxlab.summarising:render_steps",
    "failure_of": "ctxlab.summarising:failure_of",
    "compaction_prompt": "ctxlab.summarising:compaction_prompt",
    "summary_text": "ctxlab.summarising:summary_text",
    "describe_client": "ctxlab.llm:describe_client",
    "summary_model": "ctxlab.llm:summary_model",
    "complete": "ctxlab.llm:complete",
    "MemoryEvent": "ctxlab.events:MemoryEvent",
    "EVENT_KINDS": "ctxlab.events:EVENT_KINDS",
    "compaction_due": "ctxlab.compaction:compaction_due",
    "Compaction": "ctxlab.compaction:Compaction",
    "update_scratchpad": "ctxlab.scratchpad:update_scratchpad",
    "is_scratchpad_message": "ctxlab.scratchpad:is_scratchpad_message",
    "replan_after": "ctxlab.replanning:replan_after",
    "replan_due": "ctxlab.replanning:replan_due",
    "replan_message": "ctxlab.replanning:replan_message",
    "REPLAN_HEADER": "ctxlab.replanning:REPLAN_HEADER",
    "REPLAN_KINDS": "ctxlab.replanning:REPLAN_KINDS",
    "AssemblyState": "ctxlab.assembly:AssemblyState",
    "Context": "ctxlab.assembly:Context",
    "EVICTION_ORDER": "ctxlab.eviction:EVICTION_ORDER",
    "SMALL_TALK_MAX_TOKENS": "ctxlab.eviction:SMALL_TALK_MAX_TOKENS",
    "small_talk": "ctxlab.eviction:small_talk",
    "prefix_reuse": "ctxlab.caching:prefix_reuse",
    "LapRecord": "ctxlab.replaying:LapRecord",
    "compare_runs": "ctxlab.replaying:compare_runs",
})

__getattr__ = _moved(__name__, _MOVED, fallback=_retired(__name__, {
    "keep_everything": ("ctxlab.course.layout:_keep_everything", "use the policy ctxlab.KeepEverything(), which the window "
                        "layout and ctxlab.replay both take (or policy=None in the layout)"),
    "WindowReplay": ("ctxlab.course.layout:TranscriptLayout", "use ctxlab.course.TranscriptLayout, the same class renamed "
                     "(ctxlab.replay is the one replay)"),
    "replay_prompts": ("_prompts_per_call", "call the trimmer before each model call, "
                       "[trim(history[:i]) for i in ctxlab.model_calls(history)]; to measure a policy "
                       "lap by lap, use ctxlab.replay"),
}, globals()))
