"""The agent transcripts the lessons replay, from the repository's ``data/`` folder.

Each transcript is a JSONL file of Chat Completions messages with a ``step`` (lap) key, a JSON
file of the tool schemas the agent had, and an entry in ``transcripts.json`` with its title,
description and probes (exact strings that carry a fact, so a test can ask whether the fact
survived). ``data/README.md`` documents the schema and how the files were made.

>>> names = transcript_names()
>>> "incident" in names
True
>>> messages = load_transcript("incident")
>>> messages[0]["role"], messages[0]["step"]
('system', 0)
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import MessageError
from ..messages import validate_messages

__all__ = [
    "data_dir",
    "transcript_names",
    "transcript_info",
    "load_transcript",
    "load_tools",
    "read_jsonl",
    "real_runs_dir",
    "real_names",
    "load_real",
    "repeat_laps",
]


def data_dir() -> Path:
    """The folder holding the transcripts (``CTXLAB_DATA`` overrides it).

    In a checkout (and an editable install) it is the repository's ``data/`` folder; a wheel
    installs the same files as the package ``ctxlab.data``.
    """
    override = os.environ.get("CTXLAB_DATA")
    if override:
        return Path(override)
    checkout = Path(__file__).resolve().parents[2] / "data"
    if (checkout / "transcripts.json").exists():
        return checkout
    # ctxlab.data has no __init__.py: a namespace package, whose resources.files() is a
    # MultiplexedPath (its str() is not a path). Its folders are the spec's search locations.
    spec = importlib.util.find_spec("ctxlab.data")
    folders = [Path(folder) for folder in (spec.submodule_search_locations or [])] if spec else []
    return next((folder for folder in folders if (folder / "transcripts.json").exists()),
                folders[0] if folders else checkout)


@functools.lru_cache(maxsize=4)
def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "transcripts.json"
    if not path.exists():
        raise FileNotFoundError(
            f"no transcripts.json in {folder}; reinstall ctxlab (`make setup`) or point "
            "CTXLAB_DATA at the repository's data/ folder"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def transcript_names() -> list[str]:
    """Names of the transcripts shipped with the course, in the manifest's order.

    >>> transcript_names()
    ['incident', 'refund', 'coding', 'research', 'parallel']
    """
    return list(_manifest(data_dir()))


def transcript_info(name: str) -> dict[str, Any]:
    """The manifest entry of a transcript: ``title``, ``description``, ``laps``, ``probes``...

    >>> sorted(transcript_info("research")["probes"])[:2]
    ['constraint', 'failure']
    """
    manifest = _manifest(data_dir())
    if name not in manifest:
        raise KeyError(f"no transcript named {name!r}; choose one of: {', '.join(manifest)}")
    return dict(manifest[name])


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a JSONL file of messages; errors name the line and the problem."""
    path = Path(path)
    messages: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except json.JSONDecodeError as err:
                raise MessageError(
                    f"{path.name} line {line_number}: not valid JSON ({err.msg} at column "
                    f"{err.colno}); each line must be one JSON object"
                ) from None
            if not isinstance(message, Mapping):
                raise MessageError(
                    f"{path.name} line {line_number}: expected a JSON object (a message), "
                    f"got {type(message).__name__}"
                )
            messages.append(message)
    return messages


def _path_for(name_or_path: str | os.PathLike[str], suffix: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".jsonl", ".json") or candidate.exists():
        return candidate
    folder = data_dir()
    path = folder / f"{name_or_path}{suffix}"
    if not path.exists():
        names = ", ".join(transcript_names())
        raise FileNotFoundError(f"no transcript named {str(name_or_path)!r} in {folder}; choose one of: {names}")
    return path


def load_transcript(name_or_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Load a transcript by name (``"incident"``) or path, validated; a fresh copy each call.

    Raises :class:`ctxlab.MessageError` naming the line of the first malformed message.

    >>> refund = load_transcript("refund")
    >>> refund[1]["role"], refund[-1]["role"]
    ('user', 'assistant')
    """
    path = _path_for(name_or_path, ".jsonl")
    messages = read_jsonl(path)
    try:
        validate_messages(messages)
    except MessageError as err:
        line = None if err.index is None else err.index + 1
        raise MessageError(f"{path.name} line {line}: {err}", index=err.index) from None
    return messages


def load_tools(name_or_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The tool schemas a transcript's agent had (``[]`` when the transcript has none).

    >>> load_tools("incident")[0]["type"]
    'function'
    """
    candidate = Path(name_or_path)
    if candidate.suffix == ".jsonl":
        path = candidate.with_name(candidate.name[: -len(".jsonl")] + ".tools.json")
    else:
        path = data_dir() / f"{name_or_path}.tools.json"
        if not path.exists():
            _path_for(name_or_path, ".jsonl")  # a clear error for an unknown name
            return []
    if not path.exists():
        return []
    return json.loads(path.read_text(encoding="utf-8"))


REAL_RUNS = "CTXLAB_REAL_RUNS"
"""The environment variable that names the folder of recorded real runs."""


def real_runs_dir() -> Path | None:
    """The folder of recorded real runs: ``$CTXLAB_REAL_RUNS``, or ``../shared/real-runs`` beside
    the clone; None when there is neither.

    The runs were recorded by another project (pydantic-ai's test suite, MIT; the folder's README
    says which files and how), so they are read where they lie and never shipped with the course.

    >>> real_runs_dir() is None or (real_runs_dir() / "sources.json").exists()
    True
    """
    named = os.environ.get(REAL_RUNS)
    if named:
        return Path(named)
    beside = Path(__file__).resolve().parents[3] / "shared" / "real-runs"
    return beside if beside.is_dir() else None


def _real_folder() -> Path:
    folder = real_runs_dir()
    if folder is None or not (folder / "sources.json").is_file():
        where = f"{folder} holds no sources.json" if folder is not None else "there is no ../shared/real-runs beside the clone"
        raise FileNotFoundError(
            f"the recorded real runs are not part of the course ({where}): they are another project's recordings, "
            f"read where they lie; set {REAL_RUNS} to the folder that holds them")
    return folder


def real_names() -> list[str]:
    """Names of the recorded real runs in :func:`real_runs_dir` (see its README).

    >>> real_runs_dir() is None or "capitals-two-questions" in real_names()
    True
    """
    return sorted(json.loads((_real_folder() / "sources.json").read_text(encoding="utf-8")))


def load_real(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """``(messages, tools, source)`` of a recorded real run: its messages exactly as recorded (not
    validated here), the tool schemas the request carried, and its provenance entry. Raises
    ``FileNotFoundError``, saying where to put them, when the runs are not beside the clone.

    >>> real_runs_dir() is None or load_real("capitals-two-questions")[2]["licence"] == "MIT"
    True
    """
    folder = _real_folder()
    sources = json.loads((folder / "sources.json").read_text(encoding="utf-8"))
    if name not in sources:
        raise KeyError(f"no real trajectory named {name!r}; choose one of: {', '.join(sorted(sources))}")
    tools_path = folder / f"{name}.tools.json"
    tools = json.loads(tools_path.read_text(encoding="utf-8")) if tools_path.exists() else []
    return read_jsonl(folder / f"{name}.jsonl"), tools, sources[name]


def repeat_laps(messages: list[dict[str, Any]], laps: int) -> list[dict[str, Any]]:
    """A run of ``laps`` laps made by repeating the laps of ``messages`` with fresh call ids.

    The system prompt and the user messages are kept once, where they are; the assistant
    messages and tool results of laps 1 on are repeated, lap numbers counting on and every
    call id made new (``<id>_r<k>`` in the k-th repeat), so the run is valid however long it is.

    >>> run = repeat_laps(load_transcript("research"), 100)
    >>> from ctxlab.trimming import pairs_ok
    >>> max(m["step"] for m in run), pairs_ok(run), len({c["id"] for m in run for c in m.get("tool_calls") or []}) > 40
    (100, True, True)
    """
    last = max((m["step"] for m in messages if m.get("step", 0) >= 1 and m.get("role") != "user"), default=0)
    if not last:
        raise ValueError("the messages have no laps to repeat (no assistant message with step >= 1)")
    out = [dict(m) for m in messages if m.get("step", 0) == 0]
    users = {id(m) for m in messages if m.get("role") == "user" and m.get("step", 0) >= 1}
    repeat = 0
    while True:
        for message in messages:
            if message.get("step", 0) < 1:
                continue
            if id(message) in users:
                if repeat == 0:
                    out.append(dict(message))
                continue
            step = message["step"] + repeat * last
            if step > laps:
                return out
            copy = {**message, "step": step}
            if repeat:
                if copy.get("tool_calls"):
                    copy["tool_calls"] = [{**c, "id": f"{c['id']}_r{repeat}"} for c in copy["tool_calls"]]
                if copy.get("role") == "tool":
                    copy["tool_call_id"] = f"{copy['tool_call_id']}_r{repeat}"
            out.append(copy)
        repeat += 1
