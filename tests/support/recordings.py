"""Real Chat Completions requests with the ``prompt_tokens`` the API billed for each.

Two sets, both read where they lie, never copied into the repository:

* ``../shared/recordings/openai-chat.jsonl`` beside the clone (CI has it): requests recorded
  in other projects' test suites, one per line, with the project, the cassette and the bill.
  Its own README lists the sources and their licences. ``CTXLAB_RECORDINGS`` names another
  folder holding ``openai-chat.jsonl``.
* ``../shared/real-runs/`` beside the clone (CI has it; ``CTXLAB_REAL_RUNS`` names another
  folder): the fourteen pydantic-ai runs the library's tests replay; ``sources.json`` holds the
  bill of the request each file keeps (``ctxlab.course.transcripts.load_real`` reads them).

Each is turned into a :class:`Recorded`: the request body as it was sent and its bill.

>>> row = {"repo": "o/n", "path": "c.yaml", "index": 0, "model": "gpt-4o",
...        "messages": [{"role": "user", "content": "Hi"}], "tools": None,
...        "extra": {"temperature": 0}, "prompt_tokens": 8}
>>> recorded = from_row(row, line=1)
>>> recorded.request
{'model': 'gpt-4o', 'messages': [{'role': 'user', 'content': 'Hi'}], 'temperature': 0}
>>> recorded.kind, recorded.label
('plain', 'o/n c.yaml #0')
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "recordings"
FILE = "openai-chat.jsonl"
MORE = "openai-chat-more.jsonl"
"""The second shared file: requests from projects the counting rules were not fitted on."""
REQUIRE = "CTXLAB_REQUIRE_RECORDINGS"
"""Set to 1 (as ``.ci/run`` does), a test that needs the recordings fails instead of skipping."""


@dataclass(frozen=True)
class Recorded:
    """One recorded request: ``request`` is the body as sent, ``billed`` its ``prompt_tokens``."""

    label: str
    request: dict[str, Any]
    billed: int
    source: str  # "shared" or "real"

    @property
    def model(self) -> str:
        return self.request["model"]

    @property
    def kind(self) -> str:
        """``tools`` (tools or legacy functions sent), ``format`` (a response_format schema
        or JSON mode, no tools) or ``plain``."""
        if self.request.get("tools") or self.request.get("functions"):
            return "tools"
        if self.request.get("response_format"):
            return "format"
        return "plain"

    @property
    def family(self) -> str:
        """The model family the bench groups by: gpt-3.5, gpt-4, gpt-4o, gpt-4o-mini, gpt-4.1,
        gpt-5, o-series."""
        model = self.model
        for prefix in ("gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-5", "gpt-3.5", "gpt-4"):
            if model.startswith(prefix):
                return prefix
        return "o-series" if model[:2] in ("o1", "o3", "o4") else "other"


def recordings_folder() -> Path:
    """Where the shared recordings are expected: ``$CTXLAB_RECORDINGS`` or ``../shared/recordings``."""
    return Path(os.environ.get("CTXLAB_RECORDINGS", SHARED))


def shared_available() -> str | None:
    """``None`` when the shared recordings can be read, else why not (a skip reason)."""
    path = recordings_folder() / FILE
    if path.is_file():
        return None
    return (
        f"the recorded requests are expected at {path} (the folder shared/recordings beside "
        "the clone, or $CTXLAB_RECORDINGS); CI has them"
    )


def real_available() -> str | None:
    """``None`` when the recorded real runs can be read, else why not (a skip reason)."""
    from ctxlab.course.transcripts import REAL_RUNS, real_runs_dir

    folder = real_runs_dir()
    if folder is not None and (folder / "sources.json").is_file():
        return None
    where = folder or REPO.parent / "shared" / "real-runs"
    return f"the recorded real runs are expected at {where} (shared/real-runs beside the clone, or ${REAL_RUNS}); CI has them"


def require(reason: str | None) -> None:
    """Skip the calling test for ``reason`` (when there is one), or fail it when the recordings
    are required (``CTXLAB_REQUIRE_RECORDINGS=1``)."""
    import pytest

    if reason:
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{REQUIRE}=1 but {reason}")
        pytest.skip(reason)


def from_row(row: Mapping[str, Any], *, line: int) -> Recorded:
    """A :class:`Recorded` from one line of ``openai-chat.jsonl``."""
    try:
        request: dict[str, Any] = {"model": row["model"], "messages": row["messages"]}
        if row.get("tools") is not None:
            request["tools"] = row["tools"]
        request.update(row.get("extra") or {})
        billed = row["prompt_tokens"]
    except KeyError as err:
        raise ValueError(f"{FILE} line {line}: no {err.args[0]!r} key; is this the recordings file?") from None
    if not isinstance(billed, int) or isinstance(billed, bool) or billed <= 0:
        raise ValueError(f"{FILE} line {line}: prompt_tokens must be a positive int, got {billed!r}")
    return Recorded(f"{row['repo']} {row['path']} #{row['index']}", request, billed, "shared")


def shared(name: str = FILE) -> Iterator[Recorded]:
    """Every request of ``openai-chat.jsonl`` (or the shared file ``name``), in file order."""
    path = recordings_folder() / name
    with path.open(encoding="utf-8") as lines:
        for number, text in enumerate(lines, 1):
            if text.strip():
                yield from_row(json.loads(text), line=number)


def more_available() -> str | None:
    """``None`` when the second shared file can be read, else why not (a skip reason)."""
    path = recordings_folder() / MORE
    return None if path.is_file() else f"the second file of recorded requests is expected at {path}; CI has it"


def cached_tokens() -> Iterator[tuple[str, int]]:
    """``(label, usage.prompt_tokens_details.cached_tokens)`` for every recorded response that
    reports it, in both shared files (the second, ``openai-chat-more.jsonl``, when present)."""
    for name in (FILE, "openai-chat-more.jsonl"):
        path = recordings_folder() / name
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as lines:
            for text in lines:
                if text.strip():
                    row = json.loads(text)
                    details = (row.get("usage") or {}).get("prompt_tokens_details") or {}
                    if "cached_tokens" in details:
                        yield f"{row['repo']} {row['path']} #{row['index']}", details["cached_tokens"]


def real() -> Iterator[Recorded]:
    """The requests behind the recorded real runs (read with
    :func:`ctxlab.course.transcripts.load_real`): each file's messages, less the reply appended to
    those that end in one (its README says so), with its tools, as billed."""
    from ctxlab.course.transcripts import load_real, real_names

    for name in real_names():
        messages, tools, entry = load_real(name)
        if messages and messages[-1].get("role") == "assistant" and not messages[-1].get("tool_calls"):
            messages = messages[:-1]  # the reply appended after the request: not part of it
        request: dict[str, Any] = {"model": entry["model"], "messages": messages}
        if tools:
            request["tools"] = tools
        yield Recorded(f"real-runs/{name}", request, entry["prompt_tokens"], "real")
