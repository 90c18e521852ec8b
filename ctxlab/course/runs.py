"""A course transcript replayed by name: its messages, tool schemas and probes loaded for you.

:func:`ctxlab.replay` measures a policy over any run's messages; :func:`replay` here does the
same for a transcript the course ships, named as :func:`ctxlab.course.transcript_names` lists
them (or a ``.jsonl`` path), so that the library never needs the course's files.

>>> import ctxlab
>>> import ctxlab.course
>>> run = ctxlab.course.replay("refund", ctxlab.KeepEverything(),
...                            budget=ctxlab.ContextBudget(window=16_000, reserve_output=2_000))
>>> len(run.laps), run.survived()
(9, {'goal': True, 'failure': True})
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..budget import ContextBudget
from ..replaying import ReplayResult
from ..replaying import replay as _replay
from .transcripts import load_tools, load_transcript, transcript_info

__all__ = ["replay", "transcript_run"]


def transcript_run(name: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """A course transcript's messages, tool schemas and probes (none for a ``.jsonl`` path).

    >>> messages, tools, probes = transcript_run("refund")
    >>> len(messages) > 10, sorted(probes)
    (True, ['failure', 'goal'])
    """
    name = os.fspath(name)
    probes = {} if name.endswith(".jsonl") else dict(transcript_info(name).get("probes", {}))
    return load_transcript(name), load_tools(name), probes


def replay(
    name: str | os.PathLike[str],
    policy: Any,
    *,
    budget: ContextBudget,
    tools: Sequence[Mapping[str, Any]] | None = None,
    probes: Mapping[str, str] | None = None,
) -> ReplayResult:
    """:func:`ctxlab.replay` on the course transcript ``name``: its own tool schemas and probes
    unless ``tools`` or ``probes`` are given.

    >>> import ctxlab
    >>> run = replay("research", ctxlab.TruncateOldest(),
    ...              budget=ctxlab.ContextBudget(window=16_000, reserve_output=2_000))
    >>> run.survived()["goal"], max(r.tokens for r in run.laps) <= 14_000
    (False, True)
    """
    messages, own_tools, own_probes = transcript_run(name)
    return _replay(messages, policy, budget=budget, tools=own_tools if tools is None else tools,
                   probes=own_probes if probes is None else probes)
