"""ctxlab: short-term memory for LLM agents, done right; the library of Context Window Lab.

Exact token counts with the model's tokenizer (offline), trimming that never orphans a tool
result or drops a pin, roll-up summaries, a bounded scratchpad, age-based compression of tool
results, and the context assembler that puts them together. Every public name is re-exported
here; anything else is internal.

>>> import ctxlab
>>> ctxlab.count_messages([{"role": "user", "content": "Hello!"}])
9
"""

__version__ = "0.1.0"

from .budget import Allocation, ContextBudget, billed_input, context_per_lap, model_calls
from .environment import check_environment
from .errors import BudgetError, CtxlabError, EncodingUnavailable, MessageError
from .messages import message_problems, strip_course_keys, validate_messages
from .tokens import (
    COURSE_KEYS,
    TokenCounter,
    count_message,
    count_messages,
    count_text,
    count_tools,
    encoding,
)
from .transcripts import load_tools, load_transcript, transcript_info, transcript_names
from .trimming import fit, pairs_ok, pinned_indices, turn_group_spans, turn_groups

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
    "count_text",
    "count_message",
    "count_messages",
    "count_tools",
    "TokenCounter",
    # messages
    "validate_messages",
    "message_problems",
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
    # environment
    "check_environment",
]
