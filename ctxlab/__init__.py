"""ctxlab: short-term memory for LLM agents, done right; the library of Context Window Lab.

Token counts with the model's own tokenizer, offline, as the API bills them (within max(2%, 3
tokens) of the bill for 1,199 of 1,233 recorded requests: ``tests/test_billing.py``), trimming
that never orphans a tool result or drops a pin, roll-up summaries, a bounded scratchpad,
age-based compression of tool results, and the context assembler that puts them together.
Every public name is re-exported here; anything else is internal.

One name per idea: :func:`replay` is the one replay (a policy measured over a run);
:class:`TranscriptLayout` lays a run out lap by lap for the widget; the policies
(:class:`KeepEverything`, :class:`TruncateOldest`, :class:`Summarise`, :class:`Assemble`) work
in both; :func:`compact` is the one summariser call, which :func:`trim_and_summarise`,
:class:`Summarise` and :func:`build_context` use, with a client (:func:`get_client`,
:class:`OfflineSummariser`). Names retired from this list still import for one release, with a
``DeprecationWarning`` naming the replacement: ``keep_everything``, ``WindowReplay``,
``replay_prompts``.

>>> import ctxlab
>>> ctxlab.count_messages([{"role": "user", "content": "Hello!"}])
9
"""

__version__ = "0.1.0"

from . import parts as parts  # the content-part rules: ctxlab.parts
from ._retired import retired as _retired
from .billing import count_request
from .budget import Allocation, ContextBudget, billed_input, context_per_lap, model_calls
from .checking import check, check_all, yours_or_reference
from .environment import check_environment
from .errors import BudgetError, CtxlabError, EncodingUnavailable, MessageError
from .messages import (
    MessageChecker,
    as_message,
    as_messages,
    message_problems,
    strip_course_keys,
    validate_messages,
)
from .pins import PIN_KINDS, PIN_TOOL, Pin, pin_tool_schema, pinned_items
from .tokens import (
    COURSE_KEYS,
    TokenCounter,
    count_message,
    count_messages,
    count_text,
    count_tools,
    encoding,
    encoding_for_model,
)
from .transcripts import load_tools, load_transcript, transcript_info, transcript_names
from .trimming import fit, pairs_ok, pinned_indices, turn_group_spans, turn_groups

# isort: split
from .history import GrowingHistory, MessageRuns

# watermarks, summarising, llm, events (lessons 02 and 03)
# isort: split
from .errors import SummaryError
from .events import EVENT_KINDS, MemoryEvent, MemoryLog
from .llm import (
    OfflineSummariser,
    ScriptedClient,
    complete,
    describe_client,
    get_client,
    summary_model,
)
from .summarising import (
    SUMMARY_PREFIX,
    compact,
    compaction_prompt,
    failure_of,
    is_summary,
    render_steps,
    summary_message,
    summary_text,
    trim_and_summarise,
)
from .watermarks import HighLowTrimmer, count_trims

# when to compact (lesson 03)
# isort: split
from .compaction import Compaction, CompactionTrigger, compaction_due

# scratchpad, compression, store (lessons 04 and 05)
# isort: split
from .compression import compress, compress_history, restore
from .errors import ReferenceNotFound, StoreError
from .replanning import REPLAN_HEADER, REPLAN_KINDS, replan_after, replan_due, replan_message
from .scratchpad import Scratchpad, is_scratchpad_message, update_scratchpad
from .store import TrajectoryStore

# assembly, policies, replay, prompt-cache reuse (lesson 06)
# isort: split
from .assembler import Assembler
from .assembly import AssemblyState, Context, build_context
from .caching import prefix_reuse
from .eviction import EVICTION_ORDER, SMALL_TALK_MAX_TOKENS, small_talk
from .policies import Assemble, KeepEverything, Summarise, TruncateOldest
from .replaying import LapRecord, ReplayResult, compare_runs, replay

# layout: what the context-layout widget shows (ctxlab.widgets draws it; imported only when used)
# isort: split
from .layout import TranscriptLayout, WindowLayout, layout_window
from .layout_html import render_layout_html

__all__ = [
    "__version__",
    # errors
    "CtxlabError",
    "MessageError",
    "BudgetError",
    "EncodingUnavailable",
    # tokens
    "COURSE_KEYS",
    "encoding",
    "encoding_for_model",
    "count_text",
    "count_message",
    "count_messages",
    "count_tools",
    "count_request",
    "TokenCounter",
    # messages
    "validate_messages",
    "message_problems",
    "MessageChecker",
    "as_message",
    "as_messages",
    "strip_course_keys",
    # transcripts
    "transcript_names",
    "transcript_info",
    "load_transcript",
    "load_tools",
    # budget
    "ContextBudget",
    "Allocation",
    "model_calls",
    "context_per_lap",
    "billed_input",
    # trimming
    "turn_groups",
    "turn_group_spans",
    "pairs_ok",
    "pinned_indices",
    "fit",
    # the pinned list, recorded by a call of the pin tool
    "PIN_TOOL",
    "PIN_KINDS",
    "Pin",
    "pin_tool_schema",
    "pinned_items",
    "GrowingHistory",
    "MessageRuns",
    # environment
    "check_environment",
    # checking answers as a learner goes (the lesson's visible tests)
    "check",
    "check_all",
    "yours_or_reference",
    # watermarks, summarising, llm, events (lessons 02 and 03)
    "HighLowTrimmer",
    "count_trims",
    "SUMMARY_PREFIX",
    "render_steps",
    "failure_of",
    "compaction_prompt",
    "compact",
    "is_summary",
    "summary_message",
    "summary_text",
    "trim_and_summarise",
    "get_client",
    "describe_client",
    "summary_model",
    "complete",
    "OfflineSummariser",
    "ScriptedClient",
    "SummaryError",
    "MemoryEvent",
    "MemoryLog",
    "EVENT_KINDS",
    "compaction_due",
    "CompactionTrigger",
    "Compaction",
    # scratchpad, compression, store (lessons 04 and 05)
    "Scratchpad",
    "update_scratchpad",
    "is_scratchpad_message",
    "replan_after",
    "replan_due",
    "replan_message",
    "REPLAN_HEADER",
    "REPLAN_KINDS",
    "compress",
    "compress_history",
    "restore",
    "TrajectoryStore",
    "StoreError",
    "ReferenceNotFound",
    # assembly, policies, replay, prompt-cache reuse (lesson 06)
    "build_context",
    "Assembler",
    "AssemblyState",
    "Context",
    "EVICTION_ORDER",
    "SMALL_TALK_MAX_TOKENS",
    "small_talk",
    "prefix_reuse",
    "KeepEverything",
    "TruncateOldest",
    "Summarise",
    "Assemble",
    "replay",
    "ReplayResult",
    "LapRecord",
    "compare_runs",
    # layout (the context-layout widget's model; the widget itself is ctxlab.widgets)
    "TranscriptLayout",
    "WindowLayout",
    "layout_window",
    "render_layout_html",
]

from .layout import _keep_everything  # noqa: E402, F401 - what the retired names return
from .watermarks import _prompts_per_call  # noqa: E402, F401

__getattr__ = _retired(__name__, {
    "keep_everything": ("_keep_everything", "use the policy ctxlab.KeepEverything(), which the window "
                        "layout and ctxlab.replay both take (or policy=None in the layout)"),
    "WindowReplay": ("TranscriptLayout", "use ctxlab.TranscriptLayout, the same class renamed "
                     "(ctxlab.replay is the one replay)"),
    "replay_prompts": ("_prompts_per_call", "call the trimmer before each model call, "
                       "[trim(history[:i]) for i in ctxlab.model_calls(history)]; to measure a policy "
                       "lap by lap, use ctxlab.replay"),
}, globals())
