"""Roll-up summarisation: replace the turn groups a trim drops with ONE summary message.

Plain trimming forgets whatever was in the dropped laps: the one log line that explains an
incident, the tool that already failed three times. Summarising keeps the gist of them:

1. :func:`render_steps` writes the dropped messages as text a summariser can read: the lap,
   who spoke, each tool call with its arguments, each result, and failures marked ``FAILED``;
2. :func:`compaction_prompt` asks for facts with their source tool, decisions with their
   reasons, every failed tool and how it failed, the user's instructions and open questions,
   as terse bullets, and folds in the previous summary (roll up, never stack);
3. :func:`compact` sends it at temperature 0 and returns the new summary;
4. :func:`trim_and_summarise` does all of it to a history: the result holds exactly one
   summary message, right after the pinned head, and the allowance pays for it.

A summary message is a user message whose content starts with :data:`SUMMARY_PREFIX`
(:func:`is_summary` finds it); it is marked ``"pinned": True`` so that a plain
:func:`ctxlab.fit` never drops it.

One name per idea. :func:`compact` is THE summariser call (steps in, one capped summary out);
everything that summarises goes through it: :func:`trim_and_summarise` (a history fitted with
one summary), the policy :class:`ctxlab.Summarise` (that, lap after lap), and
:func:`ctxlab.build_context` and :class:`ctxlab.HighLowTrimmer` when given a ``client``. The
client is what writes the text (:func:`ctxlab.get_client`: a real model, or the offline
:class:`ctxlab.OfflineSummariser`); :func:`ctxlab.llm.complete` is one request with a retry, not a
way to summarise. The offline rules themselves (``offline_summary``) are internal
(:mod:`ctxlab.offline`): use the client.

>>> dropped = [
...     {"role": "assistant", "content": None, "step": 7, "tool_calls": [{"id": "c7", "type": "function",
...      "function": {"name": "fetch_pdf", "arguments": '{"url": "https://a.example/p.pdf"}'}}]},
...     {"role": "tool", "tool_call_id": "c7", "step": 7,
...      "content": '{"error": "http_403", "message": "the full text requires a subscription"}'},
... ]
>>> print(render_steps(dropped))
[lap 7] assistant called fetch_pdf {"url": "https://a.example/p.pdf"} (id c7)
[lap 7] tool fetch_pdf (id c7) FAILED: http_403: the full text requires a subscription
    {"error": "http_403", "message": "the full text requires a subscription"}
>>> import ctxlab
>>> summary = compact(ctxlab.OfflineSummariser(), dropped)
>>> [line for line in summary.splitlines() if "fetch_pdf" in line]
['- fetch_pdf {"url": "https://a.example/p.pdf"} failed at lap 7: http_403: the full text requires a subscription']
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._retired import retired
from .calls import call_parts
from .errors import BudgetError, ConfigError, ConfigTypeError, SummaryError
from .events import MemoryLog
from .llm import complete
from .offline import offline_summary as _offline_summary  # noqa: F401 - a retired name returns it
from .summary_format import (
    COMPACTION_INSTRUCTIONS,
    MIN_SUMMARY_TOKENS,
    PRIOR_CLOSING,
    PRIOR_OPENING,
    SECTIONS,
    STEPS_HEADING,
    SUMMARY_PREFIX,
    _clip,
    bound_summary,
    compaction_prompt,
    is_summary,
    summary_message,
    summary_text,
    summary_tokens,
)
from .tokens import TokenCounter
from .trimming import fit, pinned_indices, turn_group_spans

__all__ = [
    "SUMMARY_PREFIX",
    "SECTIONS",
    "COMPACTION_INSTRUCTIONS",
    "failure_of",
    "render_steps",
    "compaction_prompt",
    "compact",
    "is_summary",
    "summary_message",
    "summary_text",
    "trim_and_summarise",
    "bound_summary",
]

__all__ += ["PRIOR_OPENING", "PRIOR_CLOSING", "STEPS_HEADING", "summary_tokens"]  # the prompt's format

Message = Mapping[str, Any]

_TEXT_FAILURE = re.compile(r"^\s*(error|exception|traceback|fatal)\b", re.IGNORECASE)
_DETAIL_KEY = re.compile(r"code|status|reason|retry", re.IGNORECASE)


def _content_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return ""


def failure_of(content: Any) -> str | None:
    """How a tool result says its call failed, in one line; ``None`` when it did not fail.

    A result failed when it is a JSON object with a truthy ``error`` (or ``"ok": false``,
    ``"success": false``), or text starting with ``Error``, ``Exception``, ``Traceback`` or
    ``Fatal``. The line gives the error, the fields that say why (codes, statuses, whether it
    is retryable) and the message.

    >>> failure_of('{"error": "refund_declined", "decline_code": "card_account_closed", '
    ...            '"retryable": false, "message": "The card account is closed."}')
    'refund_declined (decline_code=card_account_closed, retryable=false): The card account is closed.'
    >>> failure_of('{"ok": true}') is None, failure_of("Traceback (most recent call last):\\n  ...\\nKeyError: 'sku'")
    (True, "KeyError: 'sku'")
    """
    if not isinstance(content, str):
        content = _content_text(content) if isinstance(content, Mapping) else ""
    text = content.strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            obj = None
        if isinstance(obj, dict):
            error = obj.get("error")
            if isinstance(error, dict):  # {"error": {"code": ..., "message": ...}}
                obj = {**obj, **error, "error": error.get("code") or error.get("type") or "error"}
                error = obj["error"]
            failed = bool(error) or obj.get("ok") is False or obj.get("success") is False
            if not failed:
                return None
            head = str(error) if error and not isinstance(error, bool) else "failed"
            details = [
                f"{key}={json.dumps(value) if not isinstance(value, str) else value}"
                for key, value in obj.items()
                if key not in ("error", "message") and _DETAIL_KEY.search(key)
                and isinstance(value, (str, int, float, bool)) and not isinstance(value, dict)
            ]
            message = next((obj[k] for k in ("message", "detail", "reason") if isinstance(obj.get(k), str)), "")
            line = head + (f" ({', '.join(details)})" if details else "") + (f": {message}" if message else "")
            return _clip(line, 400)
    if _TEXT_FAILURE.match(text):
        lines = [line for line in text.splitlines() if line.strip()]
        last = lines[-1] if lines[0].lower().startswith("traceback") else lines[0]
        return _clip(last, 400)
    return None


def _one_line_arguments(arguments: Any) -> str:
    if not isinstance(arguments, str):
        return json.dumps(arguments, ensure_ascii=False)
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except (ValueError, RecursionError):
        return " ".join(arguments.split())


def _indented(text: str) -> list[str]:
    return ["    " + line if line.strip() else "" for line in text.splitlines()]


def render_steps(messages: Sequence[Message]) -> str:
    """The messages as plain text for a summariser: one entry per message or tool call.

    Each entry starts with ``[lap N]`` (``[lap ?]`` without a ``step``) and says who acted:
    ``assistant: text``, ``assistant called TOOL ARGUMENTS (id ID)``, ``tool TOOL (id ID)
    returned:`` or ``tool TOOL (id ID) FAILED: how`` (see :func:`failure_of`), ``user: text``.
    Multi-line text and tool results follow, indented by four spaces, in full. A result's TOOL
    is that of the newest call with its id before it: histories reuse call ids across turns.

    >>> print(render_steps([{"role": "user", "content": "Only cite 2021 or later.", "step": 2},
    ...                     {"role": "assistant", "content": "Understood.", "step": 2}]))
    [lap 2] user: Only cite 2021 or later.
    [lap 2] assistant: Understood.
    """
    tools: dict[str, str] = {}  # call id -> tool, for the calls made so far (an id may be reused later)
    lines: list[str] = []
    for message in messages:
        step = message.get("step")
        tag = f"[lap {step if step is not None else '?'}]"
        role = message.get("role", "unknown")
        text = _content_text(message).strip()
        if role == "tool":
            call_id = message.get("tool_call_id")
            how = failure_of(text)
            status = f"FAILED: {how}" if how else "returned:"
            lines.append(f"{tag} tool {tools.get(call_id, 'unknown_tool')} (id {call_id}) {status}")
            lines += _indented(text)
            continue
        if text:
            first, _, rest = text.partition("\n")
            lines.append(f"{tag} {role}: {first}")
            lines += _indented(rest)
        for call in message.get("tool_calls") or []:
            name, arguments = call_parts(call) or ("unknown_tool", "")
            tools[call.get("id")] = name
            lines.append(f"{tag} {role} called {name} {_one_line_arguments(arguments)} (id {call.get('id')})")
    return "\n".join(lines)


def compact(
    client: Any,
    dropped: Sequence[Message],
    prior_summary: str | None = None,
    *,
    model: str | None = None,
    retries: int = 2,
    backoff: float = 0.5,
    max_tokens: int | None = None,
    count: Callable[[Message], int] | None = None,
) -> str:
    """Fold the ``dropped`` messages (and the ``prior_summary``) into ONE summary; return it.

    One request through ``client`` (any client with the openai interface: see
    :func:`ctxlab.get_client`) at temperature 0, with the prompt of :func:`compaction_prompt`
    as a single user message, retried as :func:`ctxlab.llm.complete` does. With nothing dropped
    it returns ``prior_summary`` unchanged (``""`` without one) and calls nothing.

    With ``max_tokens`` the summary is bounded: the prompt states the cap; a reply over it is
    sent back once to be folded again (the summariser is asked to shorten its own summary
    under the same cap), and one still over it is cut by :func:`bound_summary`'s rule, so the
    summary message never takes more than ``max_tokens`` (counted with ``count``, as in
    :func:`ctxlab.fit`).

    Raises :class:`ctxlab.SummaryError` when the summariser keeps failing: nothing is lost,
    the caller still has ``dropped``.

    >>> import ctxlab
    >>> import ctxlab.course
    >>> client = ctxlab.llm.ScriptedClient(["FACTS:\\n- [search_logs, lap 3] lock timeout 55P03"])
    >>> compact(client, [{"role": "assistant", "content": "Next: pgbouncer.", "step": 9}], "FACTS:\\n- earlier")
    'FACTS:\\n- [search_logs, lap 3] lock timeout 55P03'
    >>> request = client.requests[0]
    >>> request["temperature"], "FACTS:\\n- earlier" in request["messages"][0]["content"]
    (0, True)
    >>> long = compact(ctxlab.OfflineSummariser(), ctxlab.course.load_transcript("research")[2:80], max_tokens=300)
    >>> summary_tokens(long) <= 300
    True
    """
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < MIN_SUMMARY_TOKENS
    ):
        raise ConfigError(
            f"max_tokens must be a whole number of tokens >= {MIN_SUMMARY_TOKENS} (the summary's cap: "
            f"room for its prefix and a line), got {max_tokens!r}"
        )
    if not dropped:
        return bound_summary(prior_summary, max_tokens, count) if prior_summary and max_tokens else prior_summary or ""

    def ask(steps: str, prior: str | None) -> str:
        prompt = compaction_prompt(steps, prior, max_tokens=max_tokens)
        reply = complete(client, [{"role": "user", "content": prompt}], model=model, temperature=0,
                         retries=retries, backoff=backoff)
        return reply.strip()

    text = ask(render_steps(dropped), prior_summary)
    if max_tokens is None or summary_tokens(text, count) <= max_tokens:
        return text
    text = ask("(none: shorten the previous summary to the cap)", text)  # fold it once more
    return bound_summary(text, max_tokens, count)


def _last_step(messages: Sequence[Message]) -> int | None:
    steps = [m["step"] for m in messages if isinstance(m.get("step"), int) and not isinstance(m.get("step"), bool)]
    return max(steps) if steps else None


def trim_and_summarise(
    messages: Sequence[Message],
    allowance: int,
    *,
    client: Any,
    prior_summary: str | None = None,
    keep_recent: int = 1,
    count: Callable[[Message], int] | None = None,
    model: str | None = None,
    summary_reserve: int | None = None,
    summary_max: int | None = None,
    log: MemoryLog | None = None,
    lap: int | None = None,
    on_failure: str = "raise",
    retries: int = 2,
    backoff: float = 0.5,
) -> list[Message]:
    """Fit ``messages`` into ``allowance`` tokens, rolling what is dropped into ONE summary.

    * When everything fits (and there is at most one summary), ``messages`` comes back as it is.
    * Otherwise every summary message in ``messages`` is taken out (its text is the prior
      summary, unless ``prior_summary`` is given), the rest is fitted with :func:`ctxlab.fit`
      into ``allowance - summary_reserve`` (default: a fifth of the allowance), and the
      dropped groups and the prior summary are folded by :func:`compact` into one new summary.
    * The new summary message goes right after the pinned head (system prompt, task). The
      allowance pays for it: if it is longer than the room left, more groups are dropped and
      folded in too (at most three times), so the result always fits, or
      :class:`ctxlab.BudgetError` says why not.
    * Each message is counted once per call (``count``, as in :func:`ctxlab.fit`).
    * ``summary_max`` caps the summary (as :func:`compact`'s ``max_tokens``; the reserve is then
      at most the cap), so it never grows past it however many times it is rolled up.
    * ``log`` gets a ``"summarise"`` event holding the dropped messages and the summary.

    When the summariser fails (:class:`ctxlab.SummaryError`), no step is lost: a
    ``"summary_failed"`` event keeps the messages that were to be summarised, and then
    ``on_failure="raise"`` (the default) re-raises, leaving ``messages`` untouched, while
    ``on_failure="trim"`` (which needs a ``log``) trims without a new summary, keeping the old
    one, and the event holds what was dropped.

    >>> import ctxlab
    >>> history = [{"role": "system", "content": "You investigate."}, {"role": "user", "content": "Why?"}]
    >>> for lap in range(1, 9):
    ...     call = {"id": f"c{lap}", "type": "function", "function": {"name": "search_logs", "arguments": "{}"}}
    ...     history += [{"role": "assistant", "content": None, "tool_calls": [call], "step": lap},
    ...                 {"role": "tool", "tool_call_id": f"c{lap}", "content": "INFO ok\\n" * 50, "step": lap}]
    >>> out = trim_and_summarise(history, 500, client=ctxlab.OfflineSummariser())
    >>> [m["role"] for m in out], sum(map(is_summary, out))
    (['system', 'user', 'user', 'assistant', 'tool', 'assistant', 'tool'], 1)
    >>> sum(ctxlab.count_message(m) for m in out) <= 500
    True
    """
    _check_options(allowance, on_failure, log, summary_max)
    counter = count or TokenCounter().message
    cost = _counted_once(counter)
    old = [m for m in messages if is_summary(m)]
    rest = [m for m in messages if not is_summary(m)]
    if prior_summary is None and old:
        prior_summary = "\n".join(summary_text(m) for m in old)
    before = sum(cost(m) for m in messages)
    if before <= allowance and len(old) <= 1:
        return list(messages)
    lap = _last_step(messages) if lap is None else lap
    reserve, cap = _summary_room(allowance, summary_reserve, summary_max)
    fitted = _Fitter(allowance, keep_recent, cost)
    kept, dropped = fitted(rest, allowance - reserve)
    summarised = list(dropped)  # _roll_up adds what it drops besides
    try:
        kept, message, text = _roll_up(client, kept, summarised, prior_summary, old, fitted, counter, model=model,
                                       cap=cap, retries=retries, backoff=backoff)
    except SummaryError as err:
        if on_failure == "raise":
            if log is not None:
                log.record(
                    "summary_failed", lap=lap, tokens_before=before, tokens_after=before, messages=summarised,
                    detail=f"summariser failed ({err.reason}); history left unchanged, "
                    f"the {len(summarised)} messages it was to summarise are kept here",
                    error=str(err),
                )
            raise
        return _trimmed_after_failure(err, old, rest, fitted, cost, log, lap=lap, before=before)
    out = _with_summary(kept, message, rest)
    if log is not None:
        steps = sorted({m["step"] for m in summarised if isinstance(m.get("step"), int)})
        laps = f"laps {steps[0]}-{steps[-1]}" if steps else "no laps"
        log.record(
            "summarise", lap=lap, tokens_before=before, tokens_after=sum(cost(m) for m in out),
            messages=summarised,
            detail=f"rolled {len(summarised)} messages ({laps}) into one {counter(message)}-token summary"
            + ("; previous summary folded in" if prior_summary else ""),
            summary=text, prior_summary=prior_summary,
        )
    return out


def _check_options(allowance: Any, on_failure: Any, log: MemoryLog | None, summary_max: Any) -> None:
    if isinstance(allowance, bool) or not isinstance(allowance, int):
        raise ConfigTypeError(f"allowance must be a whole number of tokens, got {allowance!r}")
    if on_failure not in ("raise", "trim"):
        raise ConfigError(f"on_failure must be 'raise' or 'trim', got {on_failure!r}")
    if on_failure == "trim" and log is None:
        raise ConfigError("on_failure='trim' needs a log (a ctxlab.MemoryLog): the dropped steps are kept there")
    if summary_max is not None and (
        isinstance(summary_max, bool) or not isinstance(summary_max, int) or summary_max < MIN_SUMMARY_TOKENS
    ):
        raise ConfigError(f"summary_max must be a whole number of tokens >= {MIN_SUMMARY_TOKENS}, got {summary_max!r}")


def _counted_once(counter: Callable[[Message], int]) -> Callable[[Message], int]:
    """``counter``, remembering each message's tokens (by identity) for one call."""
    known: dict[int, int] = {}

    def cost(message: Message) -> int:
        key = id(message)
        if key not in known:
            known[key] = counter(message)
        return known[key]

    return cost


def _summary_room(allowance: int, summary_reserve: Any, summary_max: int | None) -> tuple[int, int | None]:
    """The tokens kept for the summary (a fifth of the allowance unless given, at most
    ``summary_max``), and the cap the summariser is asked to keep to."""
    reserve = allowance // 5 if summary_reserve is None else summary_reserve
    if summary_max is not None:
        reserve = min(reserve, summary_max) if isinstance(reserve, int) and not isinstance(reserve, bool) else reserve
    cap = summary_max if summary_max is None else max(MIN_SUMMARY_TOKENS, min(summary_max, reserve))
    if isinstance(reserve, bool) or not isinstance(reserve, int) or not 0 <= reserve < allowance:
        raise BudgetError(
            f"summary_reserve must be a whole number of tokens from 0 to below the allowance "
            f"({allowance}), got {reserve!r}",
            needed=reserve if isinstance(reserve, int) else None,
            available=allowance,
        )
    return reserve, cap


class _Fitter:
    """:func:`ctxlab.fit` into the room the summary leaves, saying so when it cannot."""

    def __init__(self, allowance: int, keep_recent: int, cost: Callable[[Message], int]) -> None:
        self.allowance, self.keep_recent, self.cost = allowance, keep_recent, cost

    def __call__(self, candidates: Sequence[Message], room: int) -> tuple[list[Message], list[Message]]:
        allowance = self.allowance
        if room <= 0:
            raise BudgetError(
                f"the summary needs {allowance - room} tokens, which leaves nothing of the "
                f"allowance of {allowance} for the history; raise the allowance, lower "
                "summary_reserve, or ask the summariser for a shorter summary",
                needed=allowance - room,
                available=allowance,
            )
        try:
            return fit(candidates, room, keep_recent=self.keep_recent, count=self.cost)
        except BudgetError as err:
            raise BudgetError(
                f"{err} (The room was the allowance of {allowance} tokens minus "
                f"{allowance - room} for the summary.)",
                needed=err.needed,
                available=err.available,
            ) from None


def _roll_up(
    client: Any, kept: list[Message], summarised: list[Message], prior: str | None, old: list[Message],
    fitted: _Fitter, counter: Callable[[Message], int], *, model: str | None, cap: int | None, retries: int,
    backoff: float,
) -> tuple[list[Message], dict[str, Any], str]:
    """Fold ``summarised`` (what was dropped) and the prior summary into one summary message the
    allowance can hold: when it is longer than the room ``kept`` leaves, more groups are dropped
    and folded in too (at most three times), and added to ``summarised``. The messages kept, the
    summary message and its text."""
    dropped, text, allowance = list(summarised), prior or "", fitted.allowance
    for _ in range(3):
        text = compact(client, dropped, text or None, model=model, retries=retries, backoff=backoff,
                       max_tokens=cap, count=counter)
        candidate = summary_message(text, step=_last_step([*old, *summarised]))
        candidate_tokens = counter(candidate)  # not cost(): a new dict may reuse a dead one's id
        if candidate_tokens <= allowance - sum(fitted.cost(m) for m in kept):
            return kept, candidate, text
        kept, dropped = fitted(kept, allowance - candidate_tokens)
        summarised += dropped
    raise BudgetError(
        f"the summary keeps outgrowing the room left for it ({candidate_tokens} tokens "
        f"after three tries, in an allowance of {allowance}); raise summary_reserve or "
        "the allowance, or ask the summariser for a shorter summary",
        needed=candidate_tokens,
        available=allowance,
    )


def _trimmed_after_failure(
    err: SummaryError, old: list[Message], rest: list[Message], fitted: _Fitter, cost: Callable[[Message], int],
    log: MemoryLog, *, lap: int | None, before: int,
) -> list[Message]:
    """``on_failure="trim"``: the history trimmed without a new summary (the old one kept when
    there was one), what was dropped kept in the log."""
    keep_old = old[-1:] if len(old) == 1 else []
    kept, dropped = fitted(rest, fitted.allowance - sum(cost(m) for m in keep_old))
    out = _with_summary(kept, keep_old[0] if keep_old else None, rest)
    log.record(
        "summary_failed", lap=lap, tokens_before=before, tokens_after=sum(cost(m) for m in out),
        messages=dropped,
        detail=f"summariser failed ({err.reason}); trimmed without a new summary, the "
        f"{len(dropped)} dropped messages are kept here",
        error=str(err),
    )
    return out


def _with_summary(kept: list[Message], message: Message | None, rest: Sequence[Message]) -> list[Message]:
    """``kept`` with ``message`` inserted after its pinned head: the leading turn groups that
    hold a pinned message (the system prompt and the task, at least)."""
    if message is None:
        return list(kept)
    pinned = {id(rest[i]) for i in pinned_indices(rest)}
    head = 0
    for start, stop in turn_group_spans(kept):
        if not any(id(m) in pinned for m in kept[start:stop]):
            break
        head = stop
    return [*kept[:head], message, *kept[head:]]




__getattr__ = retired(__name__, {
    "offline_summary": ("_offline_summary", "summarise offline with the client ctxlab.OfflineSummariser() "
                        "(compact(ctxlab.OfflineSummariser(), steps)); its rules are ctxlab.offline"),
}, globals())
