"""Working memory: a small structured state kept by code, outside the transcript.

The transcript records what happened; the scratchpad says where the task stands. It holds the
goal, the facts established so far, what is done and what remains, the tool calls that failed
and the open questions. Code updates it after every tool result (:func:`update_scratchpad`),
deterministically, so a failure is recorded the first time it happens, whatever the model
noticed. Failures are of two kinds (:func:`retry_when`): a **permanent** one (not found,
invalid arguments, no permission) goes under DO NOT RETRY, since the same call will fail the
same way; a **transient** one (a timeout, a rate limit, a server error) goes under RETRY LATER
with when it may be tried again, since the same call may well succeed then. Calls are matched
by name and canonical arguments (:func:`call_signature`), so key order and spacing do not
hide a repeat. It is rendered as the **last** message of every
prompt (models use the end of a long prompt more reliably than its middle: Liu et al., 2023,
https://arxiv.org/abs/2307.03172), and it is bounded: ``render(max_tokens=...)`` sheds the
lowest-priority lines first and never the goal or the failures.

>>> pad = Scratchpad(goal="Refund order FH-1 in full")
>>> call = {"id": "c1", "type": "function",
...         "function": {"name": "issue_refund", "arguments": '{"order": "FH-1"}'}}
>>> update_scratchpad(pad, call, '{"error": "refund_declined", "message": "card closed"}')
Scratchpad(goal='Refund order FH-1 in full', facts={}, done=[], remaining=[], failed={'issue_refund {"order": "FH-1"}': 'refund_declined: card closed'}, open_questions=[], retry_later={})
>>> lookup = {"id": "c2", "type": "function", "function": {"name": "get_order", "arguments": '{"order": "FH-1"}'}}
>>> _ = update_scratchpad(pad, lookup, '{"error": "rate_limited", "retry_after": 30}', step=4)
>>> print(pad.render())
GOAL: Refund order FH-1 in full
<BLANKLINE>
DO NOT RETRY:
- issue_refund {"order": "FH-1"}: refund_declined: card closed
<BLANKLINE>
RETRY LATER:
- get_order {"order": "FH-1"}: rate_limited (retry_after=30) (lap 4); may be retried after 30 s
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .calls import call_parts
from .errors import BudgetError, ConfigError
from .tokens import count_message, count_text

__all__ = [
    "Scratchpad",
    "SECTIONS",
    "SHED_ORDER",
    "SCRATCHPAD_HEADER",
    "update_scratchpad",
    "call_signature",
    "retry_when",
    "is_scratchpad_message",
]

SECTIONS = (
    ("facts", "ESTABLISHED"),
    ("done", "DONE"),
    ("remaining", "REMAINING"),
    ("failed", "DO NOT RETRY"),
    ("retry_later", "RETRY LATER"),
    ("open_questions", "OPEN QUESTIONS"),
)
"""The sections after the goal, in the order they are rendered: (field, heading)."""

SHED_ORDER = ("done", "retry_later", "open_questions", "facts", "remaining")
"""Which lines a bounded render gives up first. DONE is history the transcript also holds;
a RETRY LATER line only delays a call that may succeed anyway; open questions come next; facts
are what the run has learnt; the remaining plan goes last.
Within a section the oldest lines go first, except REMAINING, which loses its furthest-out
steps first. The goal and the failures are never shed."""

SCRATCHPAD_HEADER = "[Working memory, kept by code. It is current: trust it over older messages.]"
"""The first line of the scratchpad message, so a reader (or a test) can tell it apart."""

GIST_CHARS = 80
"""How much of a successful result :func:`update_scratchpad` writes into DONE."""

REASON_CHARS = 240
"""The longest failure reason :func:`update_scratchpad` records (failures are never shed)."""

CALL_CHARS = 200
"""The longest call a line shows (the full call is still the key that matches a retry)."""



def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class Scratchpad:
    """The agent's working memory: goal, facts, done, remaining, failures, open questions.

    ``facts``, ``failed`` (permanent failures: DO NOT RETRY) and ``retry_later`` (transient
    ones, with when they may be retried) are dicts: a fact or a failed call is recorded once,
    under its key. The other sections are lists of one-line items. :meth:`render` prints the goal
    first and then each non-empty section in a fixed order (:data:`SECTIONS`).

    >>> pad = Scratchpad(goal="Find why the export failed", remaining=["read the 02:00 logs"])
    >>> pad.facts["export step"] = "timed out at 02:14 (lap 3)"
    >>> print(pad.render())
    GOAL: Find why the export failed
    <BLANKLINE>
    ESTABLISHED:
    - export step: timed out at 02:14 (lap 3)
    <BLANKLINE>
    REMAINING:
    - read the 02:00 logs
    """

    goal: str
    facts: dict[str, str] = field(default_factory=dict)
    done: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    open_questions: list[str] = field(default_factory=list)
    retry_later: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.goal, str) or not self.goal.strip():
            raise ConfigError("a scratchpad needs a goal: a non-empty string saying what the run is for")

    # -- lines ---------------------------------------------------------------------------

    def lines(self, section: str) -> list[str]:
        """The rendered items of one section (without the heading), oldest first.

        >>> Scratchpad(goal="g", failed={"fetch_pdf {}": "http_403"}).lines("failed")
        ['- fetch_pdf {}: http_403']
        """
        value = getattr(self, section)
        if isinstance(value, Mapping):
            pairs = [(_clip(_one_line(k), CALL_CHARS), _one_line(v)) for k, v in value.items()]
            return [f"- {k}: {v}" if v else f"- {k}" for k, v in pairs]
        return [f"- {_one_line(item)}" for item in value]

    def _text(self, shed: Mapping[str, int]) -> str:
        parts = [f"GOAL: {self.goal.strip()}"]
        for section, heading in SECTIONS:
            lines = self.lines(section)
            cut = shed.get(section, 0)
            if cut >= len(lines):
                continue  # empty, or shed entirely
            if cut:
                if section == "remaining":
                    lines = lines[: len(lines) - cut] + [f"- (+{cut} later steps not shown)"]
                else:
                    lines = [f"- ({cut} older not shown)"] + lines[cut:]
            parts.append(f"{heading}:\n" + "\n".join(lines))
        return "\n\n".join(parts)

    def _shed_plan(self, k: int) -> dict[str, int]:
        """How many lines of each section the k lowest-priority lines take."""
        plan: dict[str, int] = {}
        for section in SHED_ORDER:
            if k <= 0:
                break
            n = min(k, len(self.lines(section)))
            plan[section] = n
            k -= n
        return plan

    def sheddable(self) -> int:
        """How many lines a bounded render may shed (everything but the goal and failures).

        >>> Scratchpad(goal="g", done=["a", "b"], failed={"x": "y"}).sheddable()
        2
        """
        return sum(len(self.lines(section)) for section in SHED_ORDER)

    # -- rendering -----------------------------------------------------------------------

    def render(self, *, max_tokens: int | None = None, encoding=None) -> str:
        """The scratchpad as text: the goal first, then each non-empty section in order.

        With ``max_tokens``, the text fits in that many tokens (``ctxlab.count_text``): the
        lowest-priority lines are shed first (:data:`SHED_ORDER`), and each section that lost
        lines says how many. The goal and the DO NOT RETRY lines are never shed; when they
        alone do not fit, :class:`ctxlab.BudgetError` says by how much.

        >>> pad = Scratchpad(goal="Fix bug #412", done=[f"read file {i}" for i in range(30)])
        >>> text = pad.render(max_tokens=40)
        >>> text.splitlines()[:3]
        ['GOAL: Fix bug #412', '', 'DONE:']
        >>> count_text(text) <= 40 and "older not shown" in text
        True
        """
        return self._bounded(max_tokens, lambda text: count_text(text, encoding))

    def _bounded(self, max_tokens: int | None, measure: Callable[[str], int]) -> str:
        full = self._text({})
        if max_tokens is None:
            return full
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise ConfigError(f"max_tokens must be a whole number of tokens >= 0, got {max_tokens!r}")
        if measure(full) <= max_tokens:
            return full
        total = self.sheddable()
        floor = self._text(self._shed_plan(total))
        if measure(floor) > max_tokens:
            needed = measure(floor)
            raise BudgetError(
                f"the goal and the {len(self.failed)} DO NOT RETRY line(s) alone take {needed} "
                f"tokens, over the cap of {max_tokens}; they are never shed, so raise the cap "
                "(ContextBudget.scratchpad_max) or state the goal more briefly",
                needed=needed,
                available=max_tokens,
            )
        # The fewest shed lines that fit: renders shrink as lines go, so bisect.
        low, high = 1, total  # shedding `high` lines fits; shedding `low - 1` does not
        while low < high:
            middle = (low + high) // 2
            if measure(self._text(self._shed_plan(middle))) <= max_tokens:
                high = middle
            else:
                low = middle + 1
        return self._text(self._shed_plan(high))

    def message(self, *, max_tokens: int | None = None, encoding=None) -> dict[str, Any]:
        """The scratchpad as the message that goes last in the prompt (role ``user``).

        Its content is :data:`SCRATCHPAD_HEADER`, a newline, then :meth:`render`. With
        ``max_tokens``, the whole message fits in that many tokens as
        ``ctxlab.count_message`` counts it, which is what ``ContextBudget.scratchpad_max`` caps.

        >>> m = Scratchpad(goal="Fix bug #412").message()
        >>> m["role"], m["content"].splitlines()[1]
        ('user', 'GOAL: Fix bug #412')
        """

        def wrap(text: str) -> dict[str, Any]:
            return {"role": "user", "content": f"{SCRATCHPAD_HEADER}\n{text}"}

        text = self._bounded(max_tokens, lambda text: count_message(wrap(text), encoding))
        return wrap(text)

    # -- persistence ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy of the state (for a store or a log).

        >>> Scratchpad(goal="g").to_dict()["goal"]
        'g'
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scratchpad:
        """Rebuild a scratchpad from :meth:`to_dict`.

        >>> Scratchpad.from_dict(Scratchpad(goal="g", done=["a"]).to_dict()).done
        ['a']
        """
        return cls(
            goal=data["goal"],
            facts=dict(data.get("facts", {})),
            done=list(data.get("done", [])),
            remaining=list(data.get("remaining", [])),
            failed=dict(data.get("failed", {})),
            open_questions=list(data.get("open_questions", [])),
            retry_later=dict(data.get("retry_later", {})),
        )


def is_scratchpad_message(message: Mapping[str, Any]) -> bool:
    """True for a message made by :meth:`Scratchpad.message`.

    >>> is_scratchpad_message(Scratchpad(goal="g").message()), is_scratchpad_message({"role": "user", "content": "hi"})
    (True, False)
    """
    content = message.get("content")
    return isinstance(content, str) and content.startswith(SCRATCHPAD_HEADER)


# -- maintained by code ----------------------------------------------------------------------


def _parse(result: Any) -> Any:
    if isinstance(result, str):
        stripped = result.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(stripped)
            except (json.JSONDecodeError, RecursionError):  # not JSON, or nested too deep to read
                return result
    return result


def _failure(result: Any) -> str | None:
    """How ``result`` says its call failed (:func:`ctxlab.summarising.failure_of`, the rule the summaries
    use too), cut to :data:`REASON_CHARS`; ``None`` for a success."""
    from .summarising import failure_of

    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    reason = failure_of(text)
    return None if reason is None else _clip(reason, REASON_CHARS)


_TRANSIENT = re.compile(
    r"time[ _-]?d?[ _-]?outs?\b|rate[ _-]?limit|too[ _-]?many[ _-]?requests|throttl|overload|unavailable|"
    r"temporar|try[ _-]?again|retry[ _-]?later|server[ _-]?error|internal[ _-]?error|bad[ _-]?gateway|"
    r"gateway[ _-]?time|connection[ _-]?(?:reset|refused|error)",
    re.IGNORECASE,
)
_RETRY_AFTER = re.compile(r"retry[ _-]?after\D{0,12}?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?\b",
                          re.IGNORECASE)
_STATUS_KEYS = ("status", "status_code", "http_status", "code")
_AFTER_KEYS = (("retry_after_ms", 0.001), ("retry_after", 1.0), ("retry_after_s", 1.0), ("retry_after_seconds", 1.0))


def retry_when(result: Any) -> str | None:
    """When a failed call may be tried again: ``"after N s"`` or ``"later"`` for a **transient**
    failure, ``None`` for a **permanent** one (or a success).

    Transient: the result says ``"retryable": true``; or its status is 429 or 5xx; or its error
    or message names a timeout, a rate limit, an overloaded or unavailable service, a server or
    gateway error, or asks to try again. Permanent: everything else that failed, such as not
    found, invalid arguments, no permission, a declined payment, or an explicit
    ``"retryable": false``. The wait comes from a ``retry_after`` field (seconds;
    ``retry_after_ms`` in milliseconds) or a "retry after N s" in the text.

    >>> retry_when('{"error": "rate_limited", "message": "Retry after 60 s."}')
    'after 60 s'
    >>> retry_when('{"error": "upstream", "status": 503}'), retry_when("Error: request timed out")
    ('later', 'later')
    >>> retry_when('{"error": "not_found", "status": 404}') is None, retry_when('{"ok": true}') is None
    (True, True)
    """
    if _failure(result) is None:
        return None
    data = _parse(result)
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    wait = None
    if isinstance(data, Mapping):
        error = data.get("error")
        fields = {**data, **error} if isinstance(error, Mapping) else dict(data)
        retryable = fields.get("retryable")
        if retryable is False:
            return None
        for key, scale in _AFTER_KEYS:
            value = fields.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                wait = value * scale
                break
        statuses = [fields.get(key) for key in _STATUS_KEYS]
        numbers = [int(s) for s in statuses if isinstance(s, int) and not isinstance(s, bool)]
        numbers += [int(s) for s in statuses if isinstance(s, str) and s.isdigit()]
        transient = retryable is True or any(n == 429 or 500 <= n <= 599 for n in numbers)
        if not transient and any(400 <= n <= 499 for n in numbers):
            return None  # the request itself was wrong: the same call fails the same way
        words = " ".join(str(fields.get(key, "")) for key in ("error", "type", "code", "message", "detail"))
        transient = transient or bool(_TRANSIENT.search(words))
    else:
        transient = bool(_TRANSIENT.search(text))
    if not transient:
        return None
    if wait is None:
        match = _RETRY_AFTER.search(text)
        if match:
            unit = (match[2] or "s").lower()
            scale = 0.001 if unit.startswith(("ms", "milli")) else 60 if unit.startswith("m") else 1
            wait = float(match[1]) * scale
    if wait is None:
        return "later"
    return f"after {wait:g} s"


def _gist(result: Any) -> str:
    data = _parse(result)
    if isinstance(data, Mapping):
        for key in ("title", "summary", "status", "name", "id"):
            if isinstance(data.get(key), (str, int, float)):
                text = f"{key}: {data[key]}"
                break
        else:
            text = "{" + ", ".join(map(str, list(data)[:6])) + ("…}" if len(data) > 6 else "}")
    elif isinstance(data, list):
        text = f"{len(data)} items"
    else:
        lines = [line for line in str(data).splitlines() if line.strip()]
        titled = [line for line in lines[:5] if line.startswith("Title:")]
        text = (titled or lines or ["(empty)"])[0]
    return _clip(_one_line(text), GIST_CHARS)


def call_signature(call: Mapping[str, Any]) -> str:
    """``name {arguments}`` with the arguments as canonical JSON, so the same call matches.

    >>> call_signature({"function": {"name": "fetch_pdf", "arguments": '{"url":  "u"}'}})
    'fetch_pdf {"url": "u"}'
    """
    parts = call_parts(call)
    if parts is None:
        raise ConfigError(
            "expected an OpenAI tool call {'id': ..., 'type': 'function', 'function': "
            "{'name': str, 'arguments': str}} (or a custom call, 'type': 'custom', 'custom': "
            f"{{'name': str, 'input': str}}), got {call!r}"
        )
    name, arguments = parts
    if call.get("type", "function") == "custom":  # free text: the same text is the same call
        return f"{name} {_one_line(arguments)}"
    try:
        arguments = json.dumps(json.loads(arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except (TypeError, json.JSONDecodeError, RecursionError):
        arguments = _one_line(arguments)
    return f"{name} {arguments}"


def update_scratchpad(
    pad: Scratchpad,
    call: Mapping[str, Any],
    result: Any,
    *,
    step: int | None = None,
    extract: Callable[[Mapping[str, Any], Any], Mapping[str, str]] | None = None,
) -> Scratchpad:
    """Record one tool call and its result in ``pad`` (in place) and return ``pad``.

    * A failure is keyed by the call's name and canonical arguments (:func:`call_signature`):
      the same failing call is recorded once, however often it fails. A result is a failure
      by the rule of :func:`ctxlab.summarising.failure_of` (an object with a truthy ``"error"``, or
      ``"ok": false``, or text that starts with ``Error`` or a traceback), the rule the
      summaries use too. A permanent failure goes under DO NOT RETRY; a transient one
      (:func:`retry_when`) under RETRY LATER, with when it may be tried again, unless the same
      call has already failed for good.
    * A success adds one short line to DONE (the call and the gist of its result, never the
      whole result), and clears a RETRY LATER line of the same call, or a DO NOT RETRY line
      (the world changed: the call works now).
    * ``extract(call, result)``, when given, returns facts to record under ESTABLISHED.

    Deterministic: the same calls and results always give the same scratchpad. ``step``
    (the lap) is noted on each line when given.

    >>> pad = Scratchpad(goal="Summarise the 2022 Nordic study")
    >>> pdf = {"id": "c7", "type": "function",
    ...        "function": {"name": "fetch_pdf", "arguments": '{"url": "https://x.example/a.pdf"}'}}
    >>> for lap in (7, 17):
    ...     _ = update_scratchpad(pad, pdf, '{"error": "http_403", "message": "paywall"}', step=lap)
    >>> pad.failed
    {'fetch_pdf {"url": "https://x.example/a.pdf"}': 'http_403: paywall (lap 7)'}
    """
    signature = call_signature(call)
    where = f" (lap {step})" if step is not None else ""
    reason = _failure(result)
    if reason is not None:
        when = retry_when(result)
        if when is None:
            pad.retry_later.pop(signature, None)
            pad.failed.setdefault(signature, reason + where)
        elif signature not in pad.failed:
            pad.retry_later[signature] = f"{reason}{where}; may be retried {when}"
        return pad
    pad.failed.pop(signature, None)
    pad.retry_later.pop(signature, None)
    pad.done.append(f"{_clip(signature, GIST_CHARS)} -> {_gist(result)}{where}")
    if extract is not None:
        for key, value in extract(call, result).items():
            pad.facts[str(key)] = _one_line(value)
    return pad
