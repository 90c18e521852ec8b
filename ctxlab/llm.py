"""LLM clients behind one interface: the ``openai`` client's ``chat.completions.create``.

* :func:`get_client` returns the real ``openai.OpenAI`` when ``OPENAI_API_KEY`` is set
  (``OPENAI_BASE_URL`` points it at any compatible server: Ollama, vLLM, a proxy), and
  otherwise an :class:`OfflineSummariser`, a deterministic stand-in that needs no network. So
  every lesson runs offline, and with a real model when a key is there.
* :func:`complete` makes one request through any such client with a bounded retry: timeouts,
  dropped connections, rate limits (429), server errors (5xx) and malformed replies are tried
  again after a growing pause, then reported as :class:`ctxlab.SummaryError`, which says what
  failed and what to do. A refused request (a bad key, an unknown model) is not retried; a
  model that refuses the temperature itself (reasoning models take only their default) is asked
  again without it, with a warning, and is not sent one again.
* :class:`ScriptedClient` answers with replies you give it and records every request: the
  fake model for tests.

These are the clients, not ways to summarise: a summary is made by :func:`ctxlab.compact`
with one of them, and everything that summarises calls it (:mod:`ctxlab.summarising`).

The model is ``CTXLAB_SUMMARY_MODEL`` when set, else :data:`DEFAULT_MODEL`, a cheap one:
summaries do not need a large model. ``openai`` is imported only when a real client is made.

>>> client = OfflineSummariser()
>>> reply = client.chat.completions.create(
...     model="gpt-4o-mini", temperature=0,
...     messages=[{"role": "user", "content": "STEPS TO FOLD IN:\\n[lap 2] assistant: Use the EU mirror."}])
>>> print(reply.choices[0].message.content)
FACTS:
- none
DECISIONS:
- [lap 2] Use the EU mirror.
FAILURES:
- none
USER INSTRUCTIONS:
- none
OPEN QUESTIONS:
- none
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
import sys
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, ConfigTypeError, SummaryError, UsageError
from .offline import offline_summary

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_VARIABLE",
    "OFFLINE_LABEL_VARIABLE",
    "summary_model",
    "get_client",
    "describe_client",
    "complete",
    "acomplete",
    "is_async",
    "OfflineSummariser",
    "ScriptedClient",
]

DEFAULT_MODEL = "gpt-4o-mini"
"""The summariser model when ``CTXLAB_SUMMARY_MODEL`` is not set."""

MODEL_VARIABLE = "CTXLAB_SUMMARY_MODEL"
"""The environment variable that names the summariser model."""

OFFLINE_LABEL_VARIABLE = "CTXLAB_OFFLINE_LABEL"
"""The environment variable whose text :func:`get_client`'s offline summariser puts on the first
line of each summary (unset: no label). The course's grader sets it, so a summary written by
the client ``get_client()`` gives can be told from one written by an ``OfflineSummariser()``
made by hand."""

OFFLINE_MODEL = "ctxlab-offline-summariser"

Message = Mapping[str, Any]


def summary_model() -> str:
    """The model summaries are asked of: ``CTXLAB_SUMMARY_MODEL``, else :data:`DEFAULT_MODEL`.

    >>> summary_model() == (os.environ.get("CTXLAB_SUMMARY_MODEL") or DEFAULT_MODEL)
    True
    """
    return os.environ.get(MODEL_VARIABLE) or DEFAULT_MODEL


def get_client(*, timeout: float = 60.0) -> Any:
    """The client the course uses: ``openai.OpenAI`` when a key or a server is named, else the
    offline summariser.

    With ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` set it returns ``openai.OpenAI(api_key=...,
    base_url=OPENAI_BASE_URL or the default, timeout=timeout, max_retries=0)``. A base URL alone
    is a local OpenAI-compatible server (llama.cpp, vLLM, Ollama), which needs no key: the client
    is given the placeholder key :data:`LOCAL_SERVER_KEY`. Retries are left to :func:`complete`,
    which bounds them and reports the outcome. With neither set it returns an
    :class:`OfflineSummariser`, so nothing reaches the network; its summaries carry the label
    ``CTXLAB_OFFLINE_LABEL`` names, when that is set. :func:`describe_client` says which is in use.

    >>> real = os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    >>> type(get_client()).__name__ if not real else "OfflineSummariser"
    'OfflineSummariser'
    """
    key, base_url = os.environ.get("OPENAI_API_KEY"), os.environ.get("OPENAI_BASE_URL") or None
    if not key and not base_url:
        return OfflineSummariser(label=os.environ.get(OFFLINE_LABEL_VARIABLE) or None)
    try:
        import openai
    except ImportError as err:  # pragma: no cover - openai is a dependency of ctxlab
        raise ImportError("OPENAI_API_KEY or OPENAI_BASE_URL is set but the openai package is missing: "
                          "run `pip install openai`") from err
    return openai.OpenAI(api_key=key or LOCAL_SERVER_KEY, base_url=base_url, timeout=timeout, max_retries=0)


LOCAL_SERVER_KEY = "no-key-local-server"  # what get_client() sends a server named by OPENAI_BASE_URL alone


def describe_client(client: Any = None) -> str:
    """One line saying which summariser is in use (``client``, or what :func:`get_client` gives).

    >>> describe_client(OfflineSummariser())
    'offline summariser (deterministic, no network; set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server, to use a real model)'
    """
    real = os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
    if client is None and not real:
        client = OfflineSummariser()
    if isinstance(client, OfflineSummariser):
        return ("offline summariser (deterministic, no network; set OPENAI_API_KEY, or OPENAI_BASE_URL "
                "for a local server, to use a real model)")
    if isinstance(client, ScriptedClient):
        return f"scripted test client ({len(client.replies)} replies left)"
    if client is None:
        base_url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        keyed = bool(os.environ.get("OPENAI_API_KEY"))
    else:
        base_url = str(getattr(client, "base_url", "an unknown endpoint"))
        keyed = getattr(client, "api_key", None) != LOCAL_SERVER_KEY
    return f"OpenAI-compatible API at {base_url}{'' if keyed else ' (no key)'}, model {summary_model()}"


# --- replies, as the openai client shapes them ------------------------------------------------


@dataclass(frozen=True)
class ReplyMessage:
    """The ``message`` of a choice: ``.content`` is the text."""

    content: str
    role: str = "assistant"


@dataclass(frozen=True)
class Choice:
    """One choice of a completion: ``.message.content`` is the text."""

    message: ReplyMessage
    index: int = 0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class Usage:
    """Tokens of the request and of the reply, as the API reports them."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class Completion:
    """A chat completion shaped like the openai client's: ``.choices[0].message.content``, ``.usage``."""

    choices: list[Choice]
    usage: Usage
    model: str
    id: str = "chatcmpl-offline"
    object: str = "chat.completion"


def _completion(text: str, *, model: str, messages: Sequence[Message]) -> Completion:
    from .tokens import count_messages, count_text

    prompt = count_messages([{k: v for k, v in m.items() if k in ("role", "content", "name")} for m in messages])
    reply = count_text(text)
    return Completion([Choice(ReplyMessage(text))], Usage(prompt, reply, prompt + reply), model)


class _Completions:
    def __init__(self, create: Callable[..., Completion]) -> None:
        self.create = create


class _Chat:
    def __init__(self, create: Callable[..., Completion]) -> None:
        self.completions = _Completions(create)


def _check_request(model: Any, messages: Any, temperature: Any) -> None:
    """Refuse what the API would refuse, with the same kind of message."""
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a model name, got {model!r}")
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence) or not messages:
        raise ConfigError("messages must be a non-empty list of message dicts")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message:
            raise ConfigError(f"messages[{index}] must be a dict with a 'role'")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2
    ):
        raise ConfigError(f"temperature must be a number from 0 to 2, got {temperature!r}")


class OfflineSummariser:
    """A deterministic summariser with the openai client's interface, for offline work.

    ``client.chat.completions.create(model=..., messages=..., temperature=...)`` reads the
    compaction prompt in the last user message (the format of :func:`ctxlab.summarising.compaction_prompt`
    and :func:`ctxlab.summarising.render_steps`) and answers with the summary a careful model would write,
    built by rules instead of judgement:

    * FACTS: from each tool result, its first two lines (for JSON, its short top-level fields) and
      up to three lines that report an error (``ERROR``, ``FATAL``, ``FAILED``...), each tagged
      with the tool and the lap;
    * DECISIONS: the first two sentences of each thing the assistant said;
    * FAILURES: every failed tool call, its arguments, the laps it failed at and how it failed;
      the same failure repeated is one line with all its laps;
    * USER INSTRUCTIONS: what the user said, word for word (up to 1,000 characters each);
    * OPEN QUESTIONS: the assistant's questions.

    A previous summary in the prompt is folded in: its lines are kept, and the new ones added
    after them. The same prompt always gives the same reply. With a ``label``, every summary
    starts with that line, in parentheses. ``requests`` records each call's
    arguments (the latest :attr:`KEPT_REQUESTS` calls). The reply's ``usage`` counts tokens with ``cl100k_base``.

    >>> reply = OfflineSummariser().chat.completions.create(model="m", temperature=0, messages=[
    ...     {"role": "user", "content": "STEPS TO FOLD IN:\\n[lap 7] tool fetch_pdf (id c1) FAILED: http_403: paywall\\n    {}"}])
    >>> [line for line in reply.choices[0].message.content.splitlines() if "fetch_pdf" in line]
    ['- fetch_pdf failed at lap 7: http_403: paywall']
    """

    model = OFFLINE_MODEL
    KEPT_REQUESTS = 200
    """How many of the latest requests ``requests`` keeps: an agent's run may go on for thousands."""

    def __init__(self, *, label: str | None = None) -> None:
        if label is not None and (not isinstance(label, str) or not label.strip() or "\n" in label):
            raise ConfigError(f"label must be one line of text or None, got {label!r}")
        self.label = label
        self.requests: list[dict[str, Any]] = []
        # A function of the list, not a bound method: the client's parts never refer back to
        # it, so a dropped client is freed at once rather than by a full garbage collection.
        self.chat = _Chat(functools.partial(_offline_create, self.requests, self.KEPT_REQUESTS, label))

    def __repr__(self) -> str:
        return f"OfflineSummariser(label={self.label!r})" if self.label else "OfflineSummariser()"


def _offline_create(
    requests: list[dict[str, Any]], kept: int, label: str | None, *, model: str, messages: Sequence[Message],
    temperature: float | None = None, **options: Any,
) -> Completion:
    """``OfflineSummariser().chat.completions.create``: record the request (the last ``kept``
    are kept) and answer with the rule-built summary of the prompt's last user message."""
    _check_request(model, messages, temperature)
    requests.append({"model": model, "messages": copy.deepcopy(list(messages)), "temperature": temperature, **options})
    if len(requests) > kept:
        del requests[: len(requests) - kept]
    prompt = next(
        (m.get("content") for m in reversed(messages) if m.get("role") == "user" and isinstance(m.get("content"), str)),
        "",
    )
    return _completion(offline_summary(prompt, label=label), model=model, messages=messages)


class ScriptedClient:
    """A fake client that answers with the replies it was given and records every request.

    Each reply is a string (returned as the completion's text), an exception (raised, to test
    failures), or a function of the request's keyword arguments returning a string. ``requests``
    holds a deep copy of each call's arguments (``model``, ``messages``, ``temperature``...).

    >>> client = ScriptedClient(["FACTS:\\n- the disk is full"])
    >>> complete(client, [{"role": "user", "content": "summarise"}], model="m")
    'FACTS:\\n- the disk is full'
    >>> client.requests[0]["temperature"], client.requests[0]["model"]
    (0.0, 'm')
    """

    def __init__(self, replies: Iterable[str | BaseException | Callable[..., str]] = (), *, default: str | None = None) -> None:
        self.replies: deque[str | BaseException | Callable[..., str]] = deque(replies)
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.chat = _Chat(self._create)

    def __repr__(self) -> str:
        return f"ScriptedClient({len(self.replies)} replies left, {len(self.requests)} requests)"

    def _create(self, *, model: str, messages: Sequence[Message], temperature: float | None = None, **options: Any) -> Completion:
        _check_request(model, messages, temperature)
        request = {"model": model, "messages": copy.deepcopy(list(messages)), "temperature": temperature, **options}
        self.requests.append(request)
        if self.replies:
            reply = self.replies.popleft()
        elif self.default is not None:
            reply = self.default
        else:
            raise UsageError(
                f"ScriptedClient has no reply left for request {len(self.requests)}; give it more "
                "replies or a default"
            )
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(**request)
        return _completion(str(reply), model=model, messages=messages)


# --- one request, with a bounded retry --------------------------------------------------------


_ASYNC_CLIENT = (
    "ctxlab's summaries need a synchronous client, but this client's chat.completions.create is "
    "async (openai.AsyncOpenAI or similar): use the async path (await Assembler.acontext(...), "
    "ctxlab.summarising.acompact(...) or ctxlab.llm.acomplete(...)), or pass openai.OpenAI(...) "
    "or ctxlab.get_client() instead"
)


def _create_of(client: Any) -> Callable[..., Any]:
    """``client.chat.completions.create``, refusing a client that lacks it."""
    create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
    if create is None:
        raise ConfigTypeError(
            f"the client must have the openai interface, client.chat.completions.create(...); "
            f"got {type(client).__name__}. Use ctxlab.get_client(), openai.OpenAI(...) or "
            "ctxlab.llm.ScriptedClient([...])"
        )
    return create


def is_async(client: Any) -> bool:
    """Whether ``client``'s ``chat.completions.create`` is async (``openai.AsyncOpenAI``): such a
    client summarises through :meth:`ctxlab.Assembler.acontext` and
    :func:`ctxlab.summarising.acompact`. Refuses a client without the openai interface.

    >>> is_async(ScriptedClient()), is_async(OfflineSummariser())
    (False, False)
    """
    create = _create_of(client)
    return inspect.iscoroutinefunction(create) or type(client).__name__.startswith("Async")


def sync_create(client: Any) -> Callable[..., Any]:
    """``client.chat.completions.create``, refusing a client that lacks it or is async."""
    if is_async(client):
        raise ConfigTypeError(_ASYNC_CLIENT)
    return _create_of(client)


class _MalformedReply(Exception):
    """The reply arrived but has no usable text."""


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _reply_text(response: Any) -> str:
    choices = _get(response, "choices")
    if not choices:
        raise _MalformedReply("the reply has no choices")
    content = _get(_get(choices[0], "message"), "content")
    if not isinstance(content, str) or not content.strip():
        raise _MalformedReply("the reply's first choice has no text content")
    return content


_HINTS = {
    "timeout": "the server did not answer in time; check it is up, or give get_client(timeout=...) longer",
    "connection": "the server could not be reached; check OPENAI_BASE_URL and the network",
    "rate_limited": "the API is rate limiting this key (HTTP 429); wait, lower the request rate, or raise retries/backoff",
    "server_error": "the server failed (HTTP 5xx); try again later or use another endpoint",
    "malformed_reply": "the server's reply was not a chat completion with text; check OPENAI_BASE_URL points at an OpenAI-compatible /v1 endpoint",
}


def _classify(err: BaseException) -> str | None:
    """``reason`` label of an error from a client call, or ``None`` for a bug to re-raise."""
    if isinstance(err, (_MalformedReply, json.JSONDecodeError)):
        return "malformed_reply"
    openai = sys.modules.get("openai")
    if openai is not None:
        if isinstance(err, openai.APITimeoutError):
            return "timeout"
        if isinstance(err, openai.APIConnectionError):
            return "connection"
        if isinstance(err, openai.APIResponseValidationError):
            return "malformed_reply"
    if isinstance(err, TimeoutError):
        return "timeout"
    if isinstance(err, ConnectionError):
        return "connection"
    status = getattr(err, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return "rate_limited"
        if status == 408:
            return "timeout"
        if status >= 500:
            return "server_error"
        return "refused"
    if openai is not None and isinstance(err, openai.OpenAIError):
        return "refused"
    return None


def _refused_hint(err: BaseException) -> str:
    status = getattr(err, "status_code", None)
    if status in (401, 403):
        return "the API refused the credentials: check OPENAI_API_KEY (and OPENAI_BASE_URL)"
    if status == 404:
        return f"the model or endpoint was not found: set {MODEL_VARIABLE} to a model this server has, or check OPENAI_BASE_URL"
    return "the API refused the request; read its message above"


# Models that refused a temperature in this process: reasoning models (the o-series, gpt-5)
# take only their default and answer 400 with param "temperature".
_REFUSE_TEMPERATURE: set[str] = set()


def _refuses_temperature(err: BaseException) -> bool:
    """Whether ``err`` is the API refusing the ``temperature`` parameter itself (HTTP 400)."""
    if getattr(err, "status_code", None) != 400:
        return False
    param = getattr(err, "param", None)
    body = getattr(err, "body", None)
    if param is None and isinstance(body, Mapping):
        inner = body.get("error", body)
        param = inner.get("param") if isinstance(inner, Mapping) else None
    return param == "temperature"


def complete(
    client: Any,
    messages: Sequence[Message],
    *,
    model: str | None = None,
    temperature: float = 0.0,
    retries: int = 2,
    backoff: float = 0.5,
    max_backoff: float = 8.0,
) -> str:
    """Send ``messages`` through ``client`` and return the reply's text, retrying what is worth it.

    Timeouts, lost connections, rate limits (429), server errors (5xx) and malformed replies
    are tried again up to ``retries`` times, after ``backoff``, ``2 * backoff``, ``4 * backoff``
    ... seconds (at most ``max_backoff``); then :class:`ctxlab.SummaryError` reports the last
    failure, the number of attempts and what to do. A refused request (400, 401, 404) raises at
    once: trying again cannot help. The one exception is a model that refuses the temperature
    (reasoning models take only their default): the request goes again at once without it, with
    a warning that its summaries may vary from run to run, and that model is sent no temperature
    for the rest of the process. Course keys are stripped before sending.

    >>> complete(ScriptedClient([TimeoutError("slow"), "done"]), [{"role": "user", "content": "hi"}],
    ...          model="m", backoff=0)
    'done'
    >>> complete(ScriptedClient([TimeoutError("slow")] * 2), [{"role": "user", "content": "hi"}],
    ...          model="m", retries=1, backoff=0)
    Traceback (most recent call last):
    ...
    ctxlab.errors.SummaryError: the summariser failed 2 times (timeout: slow); the server did not answer in time; check it is up, or give get_client(timeout=...) longer. Nothing was changed: the steps it was to summarise are still there.
    """
    create = sync_create(client)
    attempts = _Attempts(model, temperature, retries, backoff, max_backoff)
    request = attempts.request(messages)
    while True:
        try:
            response = create(model=attempts.model, messages=request, **attempts.options)
            if inspect.isawaitable(response):
                close = getattr(response, "close", None)
                if close is not None:
                    close()  # never awaited: close it so Python does not warn
                raise ConfigTypeError(_ASYNC_CLIENT)
            return _reply_text(response)
        except Exception as err:
            if attempts.failed(err) is None:
                raise
        time.sleep(attempts.pause())


async def acomplete(
    client: Any,
    messages: Sequence[Message],
    *,
    model: str | None = None,
    temperature: float = 0.0,
    retries: int = 2,
    backoff: float = 0.5,
    max_backoff: float = 8.0,
) -> str:
    """:func:`complete` for an async client (``openai.AsyncOpenAI``): the same request, retries,
    pauses (``asyncio.sleep``, so other tasks run meanwhile) and errors. A synchronous client is
    accepted too; its call blocks the event loop while it waits.

    >>> import asyncio
    >>> asyncio.run(acomplete(ScriptedClient([TimeoutError("slow"), "done"]), [{"role": "user", "content": "hi"}],
    ...                       model="m", backoff=0))
    'done'
    """
    create = _create_of(client)
    attempts = _Attempts(model, temperature, retries, backoff, max_backoff)
    request = attempts.request(messages)
    while True:
        try:
            response = create(model=attempts.model, messages=request, **attempts.options)
            if inspect.isawaitable(response):
                response = await response
            return _reply_text(response)
        except Exception as err:
            if attempts.failed(err) is None:
                raise
        await _asleep(attempts.pause())


async def _asleep(seconds: float) -> None:
    """:func:`acomplete`'s pause between attempts (a name of its own, for tests to shorten)."""
    import asyncio

    await asyncio.sleep(seconds)


class _Attempts:
    """The retry rule of :func:`complete` and :func:`acomplete`, apart from how they wait: the
    options of the next attempt, and what a failure means (try again after :meth:`pause`, or
    raise)."""

    def __init__(self, model: str | None, temperature: float, retries: int, backoff: float, max_backoff: float) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries must be a whole number >= 0, got {retries!r}")
        self.model = model or summary_model()
        self.temperature = temperature
        self.attempts = retries + 1
        self.backoff, self.max_backoff = backoff, max_backoff
        self.attempt = 1
        self.options: dict[str, Any] = {} if self.model in _REFUSE_TEMPERATURE else {"temperature": temperature}

    @staticmethod
    def request(messages: Sequence[Message]) -> list[dict[str, Any]]:
        """The messages as sent: course keys stripped."""
        from .messages import strip_course_keys

        return strip_course_keys(messages)

    def failed(self, err: BaseException) -> str | None:
        """Note that the attempt failed with ``err``: ``None`` when ``err`` is not a failure of the
        server's (a bug, to raise as it is); raises :class:`ctxlab.SummaryError` when trying again
        cannot help or no attempt is left; else the reason, and the next attempt may go."""
        if self.options and _refuses_temperature(err):
            _REFUSE_TEMPERATURE.add(self.model)
            self.options = {}
            warnings.warn(
                f"{self.model} refused temperature={self.temperature} (it takes only its default); asked again "
                "without one, so its summaries may vary from run to run",
                RuntimeWarning,
                stacklevel=3,  # the caller of complete()
            )
            self._again = 0.0  # not a failed attempt: the same request at once, without what it refused
            return "temperature"
        reason = _classify(err)
        if reason is None:
            return None
        if reason == "refused":
            raise SummaryError(
                f"the summariser's request was refused ({type(err).__name__}: {err}); "
                f"{_refused_hint(err)}. Nothing was changed: the steps it was to summarise "
                "are still there.",
                attempts=self.attempt,
                reason=reason,
            ) from err
        if self.attempt >= self.attempts:
            raise SummaryError(
                f"the summariser failed {self.attempts} time{'s' if self.attempts > 1 else ''} ({reason}: {err}); "
                f"{_HINTS[reason]}. Nothing was changed: the steps it was to summarise are still there.",
                attempts=self.attempts,
                reason=reason,
            ) from err
        self._again = min(self.max_backoff, self.backoff * 2 ** (self.attempt - 1))
        self.attempt += 1
        return reason

    def pause(self) -> float:
        """Seconds to wait before the next attempt."""
        return self._again
