"""The exceptions ctxlab raises. Each message says what is wrong and what to do.

Every error is a :class:`CtxlabError`, so an agent loop can catch them all in one place::

    >>> import ctxlab
    >>> try:
    ...     ctxlab.validate_messages([{"role": "robot", "content": "hi"}])
    ... except ctxlab.CtxlabError as err:
    ...     print(type(err).__name__)
    MessageError
"""

from __future__ import annotations

__all__ = ["CtxlabError", "MessageError", "BudgetError", "ConfigError", "ConfigTypeError", "UsageError",
           "EncodingUnavailable", "SummaryError", "StoreError", "ReferenceNotFound"]


class CtxlabError(Exception):
    """Base class of every error ctxlab raises on purpose.

    >>> import ctxlab
    >>> issubclass(ctxlab.BudgetError, ctxlab.CtxlabError), issubclass(ctxlab.BudgetError, ValueError)
    (True, True)
    """


class MessageError(CtxlabError, ValueError):
    """A message list is malformed: the text names the index, the field and the fix.

    ``index`` is the position of the offending message (``None`` when the problem is
    the list itself).

    >>> import ctxlab
    >>> try:
    ...     ctxlab.validate_messages([{"role": "user", "content": "hi"}, {"role": "robot", "content": "?"}])
    ... except ctxlab.MessageError as err:
    ...     print(err.index)
    1
    """

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class BudgetError(CtxlabError, ValueError):
    """A budget cannot be met: the text gives the numbers and what to change.

    ``needed`` and ``available`` are token counts when they are known.

    >>> import ctxlab
    >>> try:
    ...     ctxlab.ContextBudget(window=1000, reserve_output=2000)
    ... except ctxlab.BudgetError as err:
    ...     print(err.needed, err.available)
    2000 1000
    """

    def __init__(
        self, message: str, *, needed: int | None = None, available: int | None = None
    ) -> None:
        super().__init__(message)
        self.needed = needed
        self.available = available


class ConfigError(CtxlabError, ValueError):
    """An argument, option or request holds a value ctxlab cannot use: the text names it, says
    what was given and what would do. A ``ValueError`` too, so older ``except`` clauses hold.

    >>> import ctxlab
    >>> try:
    ...     ctxlab.count_request({"model": "gpt-4o"})
    ... except ctxlab.CtxlabError as err:
    ...     print(type(err).__name__, "|", err)
    ConfigError | the request has no 'messages': pass the whole body sent to chat.completions.create
    """


class ConfigTypeError(CtxlabError, TypeError):
    """An argument is of a type ctxlab cannot use (a ``TypeError`` too): the text says which
    type it wants.

    >>> isinstance(ConfigTypeError("x"), CtxlabError) and isinstance(ConfigTypeError("x"), TypeError)
    True
    """


class UsageError(CtxlabError, RuntimeError):
    """A call made in a state that does not allow it (a ``RuntimeError`` too): the text says
    what to do first."""


class EncodingUnavailable(CtxlabError, RuntimeError):
    """A tokenizer's rank file cannot be had on this machine (offline, no local copy)."""


class SummaryError(CtxlabError, RuntimeError):
    """A summary could not be made: the model call failed, or kept failing after its retries.

    The text names what failed (timeout, rate limit, server error, malformed reply, refused
    request), how many attempts were made and what to do. ``attempts`` is that number and
    ``reason`` a short label (``"timeout"``, ``"rate_limited"``, ``"server_error"``,
    ``"malformed_reply"``, ``"connection"`` or ``"refused"``). Whoever raised it left the
    history unchanged, so no step is lost.

    >>> err = SummaryError("the summary call timed out 3 times: retry later", attempts=3, reason="timeout")
    >>> err.attempts, err.reason
    (3, 'timeout')
    """

    def __init__(self, message: str, *, attempts: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.attempts = attempts
        self.reason = reason


class StoreError(CtxlabError):
    """A trajectory store cannot do what was asked (for example, overwrite a stored result)."""


class ReferenceNotFound(StoreError, LookupError):
    """A reference names nothing in the trajectory store; the text says what the store holds.

    ``ref`` is the reference that was asked for.
    """

    def __init__(self, message: str, *, ref: str | None = None) -> None:
        super().__init__(message)
        self.ref = ref

    def __str__(self) -> str:  # LookupError would quote the message like a key
        return str(self.args[0]) if self.args else ""


def _check_tool_list(tools: object, where: str = "tools") -> None:
    """Refuse ``tools`` given as a dict, or as anything but a list (or tuple) of tool schemas.

    >>> _check_tool_list({"search": {"type": "function"}})
    Traceback (most recent call last):
    ...
    ctxlab.errors.ConfigTypeError: tools must be a list of tool schemas, got a dict with keys ['search']: pass list(tools.values()) if its values are the schemas
    """
    if isinstance(tools, dict):
        raise ConfigTypeError(f"{where} must be a list of tool schemas, got a dict with keys {sorted(tools)[:5]}: "
                              f"pass list({where}.values()) if its values are the schemas")
    if not isinstance(tools, (list, tuple)):
        raise ConfigTypeError(f"{where} must be a list of tool schemas, got {type(tools).__name__}")
