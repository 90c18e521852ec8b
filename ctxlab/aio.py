"""Summaries from an async client (``openai.AsyncOpenAI``), for the one synchronous pipeline.

Everything that summarises (:func:`ctxlab.compact`, :func:`ctxlab.build_context`,
:class:`ctxlab.Assembler`) is synchronous code that asks a client for a summary and goes on
with the answer. The async entry points run that same code, with a stand-in client that answers
each request from what the async client has already answered. A request it has no answer for
stops the run (a lap changes nothing until it finishes: the Assembler's state moves on only at
the end of a lap, and the log's events of the stopped run are taken back); the request is then
awaited through the async client (:func:`ctxlab.llm.acomplete`: the same retries and errors as
the synchronous path) and the run starts again. A lap that summarises runs once more per
request (one, or two when the summary is folded again to fit its cap); a lap that does not
summarise runs once. So an async lap gives exactly the prompt, summary, state and log that a
synchronous lap whose client gave the same replies gives.

>>> import asyncio
>>> import ctxlab
>>> steps = [{"role": "assistant", "content": "The export failed on a lock timeout.", "step": 3}]
>>> asyncio.run(acompact(ctxlab.llm.ScriptedClient(["FACTS:\\n- [lap 3] lock timeout"]), steps))
'FACTS:\\n- [lap 3] lock timeout'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .errors import SummaryError
from .llm import _completion, acomplete
from .summarising import compact

__all__ = ["acompact", "answered_by"]

T = TypeVar("T")
Message = Mapping[str, Any]


class _Unanswered(BaseException):
    """A summary request the stand-in has no answer for yet. A ``BaseException``, so that no
    ``except Exception`` on the way (the retry loop, a fallback) takes it for a failure."""

    def __init__(self, model: str, messages: list[dict[str, Any]]) -> None:
        super().__init__(model)
        self.model, self.messages = model, messages
        self.key = _key(model, messages)


def _key(model: str, messages: Any) -> str:
    return json.dumps([model, messages], sort_keys=True, ensure_ascii=False)


class _Answers:
    """A synchronous client whose ``chat.completions.create`` answers from ``answers`` (a reply's
    text, or the :class:`ctxlab.SummaryError` the async client ended in) or raises
    :class:`_Unanswered`. The temperature is not part of the key: the async call decides it, as
    :func:`ctxlab.llm.complete` would."""

    def __init__(self, answers: dict[str, str | SummaryError]) -> None:
        self.answers = answers
        self.chat = self
        self.completions = self

    def create(self, *, model: str, messages: list[dict[str, Any]], **options: Any) -> Any:
        answer = self.answers.get(_key(model, messages))
        if answer is None:
            raise _Unanswered(model, messages)
        if isinstance(answer, SummaryError):
            raise answer
        return _completion(answer, model=model, messages=messages)


async def answered_by(client: Any, run: Callable[[Any], T], *, retries: int = 2, backoff: float = 0.5) -> T:
    """``run(stand_in)``, each summary request it makes through ``stand_in`` answered by the
    async ``client`` (awaited with :func:`ctxlab.llm.acomplete`, ``retries`` and ``backoff`` as
    there). ``run`` must be safe to start again: it is, until the request it waits for is
    answered, stopped by an exception it must let through.

    >>> import asyncio
    >>> import ctxlab
    >>> asyncio.run(answered_by(ctxlab.llm.ScriptedClient(["hi"]),
    ...     lambda c: ctxlab.llm.complete(c, [{"role": "user", "content": "Say hi."}], model="m")))
    'hi'
    """
    answers: dict[str, str | SummaryError] = {}
    while True:
        try:
            return run(_Answers(answers))
        except _Unanswered as request:
            try:
                answers[request.key] = await acomplete(client, request.messages, model=request.model,
                                                       retries=retries, backoff=backoff)
            except SummaryError as err:
                answers[request.key] = err  # raised where the synchronous run would have met it


async def acompact(
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
    """:func:`ctxlab.compact` with an async client: the same prompt, cap, second fold and errors,
    each request awaited."""
    return await answered_by(
        client,
        lambda stand_in: compact(stand_in, dropped, prior_summary, model=model, max_tokens=max_tokens, count=count),
        retries=retries, backoff=backoff,
    )
