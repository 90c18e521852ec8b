"""The trajectory store: every message of a run, in full, in SQLite. The prompt is a view.

A memory policy may trim, summarise or compress what the model sees, but nothing it takes out
is gone: the store keeps each message exactly as it happened, and a tool result replaced by a
reference stub (:func:`ctxlab.compress_history`) can be put back with :meth:`TrajectoryStore.resolve`.
The store is the source of truth; the prompt is rebuilt from it every lap.

It uses the standard library's :mod:`sqlite3`: a file that survives the process (``path``), or
``":memory:"`` for a throwaway store. Every write is committed at once.

A store may be used from any thread: Jupyter runs a widget's callbacks on a thread of its own,
so a store made in a notebook cell is read from another thread when a slider moves. One
connection is shared (an in-memory database exists only on the connection that made it) and a
lock lets one thread at a time use it.

>>> store = TrajectoryStore(":memory:", run="demo")
>>> ref = store.append({"role": "tool", "tool_call_id": "c1", "content": "the full page", "step": 3})
>>> ref, store.resolve(ref)["content"]
('demo#0', 'the full page')
>>> store.close()
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import ConfigError, ReferenceNotFound, StoreError

__all__ = ["TrajectoryStore", "REF_PATTERN"]

Message = Mapping[str, Any]

REF_PATTERN = re.compile(r"(?P<run>[A-Za-z0-9_.:-]+)#(?P<seq>\d+)")
"""A reference: the run's name, ``#``, the message's position in the run (from 0)."""

_RUN_NAME = re.compile(r"[A-Za-z0-9_.:-]+")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    run          TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    step         INTEGER,
    role         TEXT    NOT NULL,
    tool_call_id TEXT,
    body         TEXT    NOT NULL,
    PRIMARY KEY (run, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS one_result_per_call
    ON messages (run, tool_call_id) WHERE tool_call_id IS NOT NULL;
"""


def _encode(message: Message) -> str:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise StoreError(f"only messages (dicts with a 'role') can be stored, got {message!r:.80}")
    try:
        return json.dumps(dict(message), ensure_ascii=False)
    except TypeError as err:
        raise StoreError(f"message cannot be stored as JSON: {err}; keep message values to str, int, list and dict") from None


class TrajectoryStore:
    """A run's full messages in SQLite; references (``"run#seq"``) resolve to them.

    ``path`` is a file (created when missing, reopened with everything in it) or
    ``":memory:"``. ``run`` names the run that :meth:`append` writes to; one file can hold
    many runs. Use it as a context manager, or call :meth:`close`.

    >>> with TrajectoryStore(":memory:", run="refund") as store:
    ...     refs = store.extend([{"role": "user", "content": "Refund me"},
    ...                          {"role": "assistant", "content": "On it."}])
    ...     refs, [m["content"] for m in store.load()]
    (['refund#0', 'refund#1'], ['Refund me', 'On it.'])
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, run: str = "run") -> None:
        if not isinstance(run, str) or not _RUN_NAME.fullmatch(run):
            raise ConfigError(
                f"run must be a name of letters, digits and _ . : - (it appears in references "
                f"like 'research#16'), got {run!r}"
            )
        self.path = os.fspath(path)
        self.run = run
        try:
            # any thread may use the connection; the lock makes them take turns
            self._db = sqlite3.connect(self.path, check_same_thread=False)
        except sqlite3.Error as err:
            raise StoreError(f"cannot open the trajectory store at {self.path!r}: {err}") from None
        self._lock = threading.RLock()
        with self._lock, self._db:
            self._db.executescript(_SCHEMA)

    def _rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row a query returns, read while holding the lock."""
        with self._lock:
            return self._db.execute(sql, parameters).fetchall()

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the database (everything is already committed)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TrajectoryStore({self.path!r}, run={self.run!r})"

    def __len__(self) -> int:
        """Messages stored for this store's run."""
        return self._rows("SELECT COUNT(*) FROM messages WHERE run = ?", (self.run,))[0][0]

    # -- writing -------------------------------------------------------------------------

    def _insert(self, rows: Sequence[Message]) -> list[str]:
        refs = []
        with self._lock, self._db:  # one transaction: all or nothing, one thread at a time
            seq = self._db.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE run = ?", (self.run,)
            ).fetchone()[0]
            for message in rows:
                body = _encode(message)
                call_id = message.get("tool_call_id") if message.get("role") == "tool" else None
                step = message.get("step")
                try:
                    self._db.execute(
                        "INSERT INTO messages (run, seq, step, role, tool_call_id, body) VALUES (?, ?, ?, ?, ?, ?)",
                        (self.run, seq, step if isinstance(step, int) else None, message["role"], call_id, body),
                    )
                except sqlite3.IntegrityError:
                    raise StoreError(
                        f"run {self.run!r} already holds the result of tool call {call_id!r} "
                        f"(as {self.ref_for(call_id)}); a stored result never changes. Use "
                        "save_result() to get its reference, or a new run name for a new run"
                    ) from None
                refs.append(f"{self.run}#{seq}")
                seq += 1
        return refs

    def append(self, message: Message) -> str:
        """Store one message, in full, at the end of the run; return its reference.

        >>> with TrajectoryStore() as store:
        ...     store.append({"role": "user", "content": "hi"})
        'run#0'
        """
        return self._insert([message])[0]

    def extend(self, messages: Iterable[Message]) -> list[str]:
        """Store several messages in order, in one transaction; return their references.

        >>> with TrajectoryStore() as store:
        ...     store.extend([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
        ['run#0', 'run#1']
        """
        return self._insert(list(messages))

    def save_result(self, message: Message) -> str:
        """The reference of a tool result, storing it first if it is not stored yet.

        Idempotent: a result already stored under its ``tool_call_id`` returns its reference.
        Raises :class:`ctxlab.errors.StoreError` when the stored result differs (a compressed view
        must never replace the full result).

        >>> with TrajectoryStore(run="r") as store:
        ...     result = {"role": "tool", "tool_call_id": "c9", "content": "full"}
        ...     store.save_result(result), store.save_result(result)
        ('r#0', 'r#0')
        """
        if not isinstance(message, Mapping) or message.get("role") != "tool" or not message.get("tool_call_id"):
            raise StoreError("save_result() takes a tool message with a 'tool_call_id'; use append() for other messages")
        with self._lock:  # look up and store as one step, so two threads cannot both store it
            rows = self._rows(
                "SELECT seq, body FROM messages WHERE run = ? AND tool_call_id = ?",
                (self.run, message["tool_call_id"]),
            )
            if not rows:
                return self.append(message)
        seq, body = rows[0]
        if json.loads(body).get("content") != message.get("content"):
            raise StoreError(
                f"the result of tool call {message['tool_call_id']!r} is stored as {self.run}#{seq} "
                "with different content; store the full result before compressing it, and "
                "compress the full history (the store's copy), not an earlier view of it"
            )
        return f"{self.run}#{seq}"

    # -- reading -------------------------------------------------------------------------

    def runs(self) -> list[str]:
        """The names of the runs in this file, in order of name.

        >>> with TrajectoryStore(run="a") as store:
        ...     _ = store.append({"role": "user", "content": "x"})
        ...     store.runs()
        ['a']
        """
        return [r for (r,) in self._rows("SELECT DISTINCT run FROM messages ORDER BY run")]

    def ref_for(self, tool_call_id: str) -> str:
        """The reference of the stored result of a tool call.

        Raises :class:`ctxlab.errors.ReferenceNotFound` when that call's result is not stored.

        >>> with TrajectoryStore(run="r") as store:
        ...     _ = store.append({"role": "tool", "tool_call_id": "c1", "content": "ok"})
        ...     store.ref_for("c1")
        'r#0'
        """
        rows = self._rows("SELECT seq FROM messages WHERE run = ? AND tool_call_id = ?", (self.run, tool_call_id))
        if not rows:
            raise ReferenceNotFound(
                f"run {self.run!r} holds no result for tool call {tool_call_id!r}; store it "
                "with save_result() or append() first",
                ref=tool_call_id,
            )
        return f"{self.run}#{rows[0][0]}"

    def resolve(self, ref: str) -> dict[str, Any]:
        """The full message a reference names, exactly as it was stored (a fresh copy).

        Raises :class:`ctxlab.errors.ReferenceNotFound` for a malformed or unknown reference.

        >>> with TrajectoryStore(run="r") as store:
        ...     store.resolve("r#4")
        Traceback (most recent call last):
        ...
        ctxlab.errors.ReferenceNotFound: no message r#4: run 'r' holds no messages yet
        """
        match = REF_PATTERN.fullmatch(ref) if isinstance(ref, str) else None
        if match is None:
            raise ReferenceNotFound(
                f"{ref!r} is not a reference; references look like 'research#16' "
                "(the run's name, '#', the message's position in the run)",
                ref=str(ref),
            )
        run, seq = match["run"], int(match["seq"])
        rows = self._rows("SELECT body FROM messages WHERE run = ? AND seq = ?", (run, seq))
        if not rows:
            count = self._rows("SELECT COUNT(*) FROM messages WHERE run = ?", (run,))[0][0]
            if count == 0 and run != self.run:
                runs = ", ".join(self.runs()) or "none"
                raise ReferenceNotFound(f"no run {run!r} in {self.path!r}; its runs: {runs}", ref=ref)
            held = f"{count} messages ({run}#0 to {run}#{count - 1})" if count else "no messages yet"
            raise ReferenceNotFound(f"no message {ref}: run {run!r} holds {held}", ref=ref)
        return json.loads(rows[0][0])

    def content(self, ref: str) -> Any:
        """The ``content`` of the message a reference names (the full tool result).

        >>> with TrajectoryStore(run="r") as store:
        ...     store.content(store.append({"role": "tool", "tool_call_id": "c", "content": "full"}))
        'full'
        """
        return self.resolve(ref).get("content")

    def load(self, run: str | None = None) -> list[dict[str, Any]]:
        """Every message of a run (this store's by default), in order, in full.

        >>> with TrajectoryStore() as store:
        ...     _ = store.extend([{"role": "user", "content": "go", "step": 0}])
        ...     store.load()
        [{'role': 'user', 'content': 'go', 'step': 0}]
        """
        run = self.run if run is None else run
        rows = self._rows("SELECT body FROM messages WHERE run = ? ORDER BY seq", (run,))
        return [json.loads(body) for (body,) in rows]
