"""How a window layout runs a memory policy on one prompt, whatever kind of policy it is.

A policy is ``ctxlab.fit``-like (``policy(history, allowance, **options)`` returning kept and
dropped), a ``build_context``-style assembler wrapped by :func:`assembler`, or one of
:mod:`ctxlab.policies`. Its options are passed by name only when its signature names them
(:data:`POLICY_OPTIONS`), and what it returns is read into the messages it kept, those it
says it dropped and its log. ``ctxlab.course.layout`` lays the result out.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..budget import ContextBudget
from ..errors import CtxlabError

__all__ = ["POLICY_OPTIONS", "policy_label", "assembler"]

Message = Mapping[str, Any]

POLICY_OPTIONS = ("keep_recent", "count", "budget", "tools", "step", "prompt", "system", "scratchpad")
"""Keyword options a policy receives when its signature names them."""


def _keep_everything(history: Sequence[Message], allowance: int) -> tuple[list[Message], list[Message]]:
    """No policy: keep every message, whatever the allowance (``ctxlab.KeepEverything()``)."""
    return list(history), []


def _is_policy_object(policy: Any) -> bool:
    """True for a policy of :mod:`ctxlab.policies` (called as :func:`ctxlab.replay` calls it)."""
    from ..policies import Policy

    return isinstance(policy, Policy)


def policy_label(policy: Callable[..., Any] | None) -> str:
    """A short name for a policy: ``ctxlab.fit`` for ctxlab's own, the function name otherwise.

    >>> import ctxlab
    >>> policy_label(ctxlab.fit), policy_label(ctxlab.KeepEverything()), policy_label(lambda h, a: (h, []))
    ('ctxlab.fit', 'keep everything', 'lambda')
    """
    if policy is None or policy is _keep_everything:
        return "keep everything"
    if _is_policy_object(policy):
        return str(policy.name)
    if isinstance(getattr(policy, "ctxlab_label", None), str):
        return policy.ctxlab_label
    import ctxlab

    if isinstance(policy, functools.partial):
        return policy_label(policy.func)
    name = getattr(policy, "__name__", None) or type(policy).__name__
    if name == "<lambda>":
        return "lambda"
    if getattr(ctxlab, name, None) is policy:
        return f"ctxlab.{name}"
    return name


# --- running a policy ---------------------------------------------------------------------------


def _accepted(function: Callable[..., Any], names: Sequence[str]) -> frozenset[str]:
    """Which of ``names`` ``function`` takes as keyword arguments."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return frozenset()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(n for n, p in parameters.items() if n in names and p.kind in kinds)


def _is_message(item: Any) -> bool:
    return isinstance(item, Mapping) and "role" in item


@dataclass
class _Outcome:
    """What a policy returned: the context it built, and what it says it dropped (if it says)."""

    context: list[Message]
    dropped: list[Message] | None = None
    log: list[Any] = field(default_factory=list)


def _read_result(result: Any, label: str) -> _Outcome:
    if isinstance(result, Mapping) and "messages" in result:
        dropped = result.get("dropped")
        return _Outcome(list(result["messages"]), None if dropped is None else list(dropped), list(result.get("log") or ()))
    if not isinstance(result, (list, tuple)) and hasattr(result, "messages"):
        dropped = getattr(result, "dropped", None)
        log = getattr(result, "log", None) or ()
        return _Outcome(list(result.messages), None if dropped is None else list(dropped), list(log))
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], (list, tuple)):
        first, second = result
        if isinstance(second, (list, tuple)) and all(_is_message(m) for m in second):
            return _Outcome(list(first), list(second))  # (kept, dropped)
        if isinstance(second, Sequence) or hasattr(second, "__iter__"):
            return _Outcome(list(first), None, list(second))  # (messages, log)
    if isinstance(result, list) and all(_is_message(m) for m in result):
        return _Outcome(list(result))
    raise TypeError(
        f"{label} returned {type(result).__name__}; a policy returns (kept, dropped), a list "
        "of messages, or (messages, log)"
    )


def _log_line(entry: Any) -> str:
    """One line for a decision-log entry: a string, a mapping or a ctxlab.events.MemoryEvent."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, Mapping):
        return ", ".join(f"{k}={v}" for k, v in entry.items() if k != "messages")
    kind = getattr(entry, "kind", None)
    if kind is not None:
        lap = getattr(entry, "lap", None)
        before, after = getattr(entry, "tokens_before", 0), getattr(entry, "tokens_after", 0)
        line = f"lap {lap}: {kind}" if lap is not None else str(kind)
        detail = getattr(entry, "detail", "")
        if detail:
            line += f": {detail}"
        if before or after:
            line += f" ({before:,} -> {after:,} tokens)"
        return line
    return str(entry)


def _replay_style(policy: Any, offered: Mapping[str, Any]) -> Callable[..., Any]:
    """A policy of :mod:`ctxlab.policies` as a layout policy: reset, then given the lap's whole
    prompt as :func:`ctxlab.replay` gives it (the policy works out its own allowance)."""

    def run(history: list[Message], allowance: int) -> Any:
        policy.reset()
        step = offered["step"]
        return policy(offered["prompt"], lap=step if step is not None else 0, budget=offered["budget"],
                      tools=offered["tools"] or None)

    return run


def _run_policy(
    policy: Callable[..., Any] | None,
    label: str,
    history: list[Message],
    allowance: int,
    offered: Mapping[str, Any],
    problems: list[str],
    notes: list[str],
) -> tuple[_Outcome, str]:
    """Call the policy with the options it takes; a policy that raises keeps everything."""
    if _is_policy_object(policy):
        run, accepted = _replay_style(policy, offered), frozenset()
    else:
        run = policy or _keep_everything
        accepted = _accepted(run, POLICY_OPTIONS)
    if policy is not None and "keep_recent" not in accepted and offered["keep_recent"] != 1:
        notes.append(f"{label} takes no keep_recent option, so that control has no effect")
    try:
        result = run(list(history), allowance, **{k: v for k, v in offered.items() if k in accepted})
        return _read_result(result, label), "ok"
    except NotImplementedError:
        problems.append(
            f"{label} is not written yet (it raises NotImplementedError): finish its exercise to "
            "see what it keeps; nothing is trimmed meanwhile"
        )
        return _Outcome(list(history), []), "not implemented"
    except Exception as err:  # show a learner's error in the picture rather than crash
        problems.append(f"{label} raised {type(err).__name__}: {err}; nothing is trimmed meanwhile")
        return _Outcome(list(history), []), "error"


def _allowance(budget: Any, fixed: int, pad_tokens: int, problems: list[str], notes: list[str]) -> int | None:
    """``budget.history_allowance(...)``; ``None``, with the reason, when it refuses."""
    try:
        return budget.history_allowance(fixed, pad_tokens)
    except NotImplementedError:
        notes.append(
            f"{type(budget).__name__}.history_allowance is not written yet (NotImplementedError); "
            "the allowance shown is ctxlab.ContextBudget's"
        )
        try:
            reference = ContextBudget(
                window=budget.window, reserve_output=budget.reserve_output,
                scratchpad_max=getattr(budget, "scratchpad_max", 0) or 0,
            )
            return reference.history_allowance(fixed, pad_tokens)
        except CtxlabError as err:
            problems.append(str(err))
    except CtxlabError as err:
        problems.append(str(err))
    except Exception as err:  # a learner's budget: show what went wrong instead of failing
        problems.append(f"{type(budget).__name__}.history_allowance raised {type(err).__name__}: {err}")
    return None


def assembler(build: Callable[..., Any] | None = None, **options: Any) -> Callable[..., Any]:
    """Make a policy of a ``build_context``-style assembler (default ``ctxlab.build_context``).

    The policy calls ``build(prompt, **named)``: the lap's whole prompt first, then, by name,
    whichever of ``budget``, ``scratchpad`` (or ``pad``), ``tools``, ``step``,
    ``keep_recent``, ``count`` and ``client`` ``build`` takes, then ``options``. Unless
    ``options`` names a ``client``, ctxlab's offline summariser writes the summaries, so moving
    a slider never calls a model. ``build`` may return the messages, ``(messages, log)``, or an
    object with ``messages`` (and ``log``, ``dropped``). Each lap is assembled afresh (no state
    is carried over from the lap before).

    >>> import ctxlab
    >>> from ctxlab.course.layout import TranscriptLayout
    >>> layouts = TranscriptLayout(ctxlab.course.transcripts.load_transcript("research"), tools=ctxlab.course.transcripts.load_tools("research"))
    >>> budget = ctxlab.ContextBudget(window=14_000, reserve_output=2_000, scratchpad_max=600)
    >>> pad = ctxlab.Scratchpad(goal="Brief the board on heat pumps")
    >>> view = layouts.layout(40, budget, policy=assembler(), scratchpad=pad)
    >>> view.policy, view.tokens("summary") > 0, view.tokens("scratchpad") > 0, view.over_budget
    ('ctxlab.build_context', True, True, False)
    """
    if build is None:
        from ..assembly import build_context as build
    wanted = _accepted(build, ("budget", "scratchpad", "pad", "tools", "step", "keep_recent", "count", "client",
                               "policy"))
    if "policy" in wanted:  # ctxlab's own: the budget, keep_recent and the client go in its MemoryPolicy
        wanted |= {"budget", "keep_recent", "client"}

    def policy(history, allowance, *, prompt, budget, tools, step, keep_recent, count, scratchpad):
        offered = {
            "budget": budget, "scratchpad": scratchpad, "pad": scratchpad, "tools": tools, "step": step,
            "keep_recent": keep_recent, "count": count,
        }
        named = {k: v for k, v in offered.items() if k in wanted and k not in options}
        extra = dict(options)
        if "client" in wanted and "client" not in options:
            from ..llm import OfflineSummariser

            named["client"] = OfflineSummariser()
        if "policy" in wanted:
            from ..memory_policy import OPTIONS, MemoryPolicy

            chosen = {k: named.pop(k) for k in list(named) if k in OPTIONS}
            chosen.update({k: extra.pop(k) for k in list(extra) if k in OPTIONS})
            named["policy"] = MemoryPolicy(**chosen)
        return build(prompt, **named, **extra)

    policy.__name__ = getattr(build, "__name__", "assembler")
    policy.ctxlab_label = policy_label(build)  # type: ignore[attr-defined]
    # the options this policy is handed but ``build`` never sees (a widget greys their controls)
    policy.ctxlab_ignores = frozenset({"keep_recent", "count"} - wanted)  # type: ignore[attr-defined]
    return policy
