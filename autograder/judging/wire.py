"""The judge's channel: JSON messages over a Unix socket, and values encoded as plain data.

Both ends of the channel use this module: the judge (which runs test cells) and the agent in
the learner's kernel (which runs the learner's functions when the judge calls them). Nothing
but JSON crosses: no pickles, no code. What is not plain data travels as a *reference*
(``{"$": "ref", ...}``) to an object that stays on its own side; the other side gets a proxy
whose every use is a request back over the channel.

How values are encoded (:meth:`Codec.encode`):

* ``None``, ``bool``, ``int``, ``float``, ``str``: as they are;
* ``list``: as a JSON list; ``tuple``: as ``{"$": "tuple", "items": [...]}``, so a tuple
  arrives as a tuple and a list as a list (``(1, 2) == [1, 2]`` is false in Python);
* a ``dict`` with ``str`` keys (and no key ``"$"``): as a JSON object; any other ``dict`` as
  ``{"$": "dict", "items": [[key, value], ...]}``; a ``set`` as ``{"$": "set", ...}``;
* an instance of a library's subclass of one of those types (``numpy.float64``, an
  ``IntEnum`` or ``StrEnum`` member, ``OrderedDict``, ``defaultdict``, ``Counter``): as the
  data it holds, read with the built-in type's own methods (:func:`plain_data`), so it
  compares as Python compares it and no method it overrides decides what crosses; a class
  defined in the learner's notebook (``__main__``) travels as a reference, with its methods;
* a tiktoken encoding: by its name, so the other side uses its own copy;
* an instance of a ``ctxlab`` dataclass whose fields are all plain data: by value
  (``{"$": "dataclass", "type": "ctxlab.budget.ContextBudget", "fields": {...}}``), unless
  :attr:`Codec.keep_here` says it stays (the agent's rule: an object whose class holds the
  reference switched off for the answer being called);
* an exception: its type's name, the names of its classes and its message;
* anything else (functions, classes, other objects): a reference.

One object met twice in what is sent together (a value, or a call's arguments) is sent once:
its later places hold ``{"$": "same", "n": k}``, the number of the list, dict, set or
dataclass in the order the containers were sent, so the other side gets one object in both
places, as Python would (``[m, m]`` is two places of one message, not two messages).

>>> codec = Codec("judge")
>>> codec.encode({"role": "user", "content": "hi", "step": [1, 2]})
{'role': 'user', 'content': 'hi', 'step': [1, 2]}
>>> codec.decode(codec.encode((1, [2])), None)
(1, [2])
>>> codec.decode(codec.encode({3: "x"}), None)
{3: 'x'}
>>> codec.encode(len)["$"], codec.encode(len)["owner"]
('ref', 'judge')

Framing: each message is a 4-byte big-endian length and that many bytes of UTF-8 JSON; a
message over :data:`MAX_MESSAGE` bytes ends the connection.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import math
import socket
import struct
from collections.abc import Callable
from typing import Any

from .errors import mro_names

__all__ = ["Codec", "Peer", "ChannelError", "RemoteError", "Sharing", "Shared", "MAX_MESSAGE", "MAX_DEPTH"]

MAX_MESSAGE = 64 * 1024 * 1024
MAX_DEPTH = 200
_HEADER = struct.Struct(">I")


class ChannelError(RuntimeError):
    """The channel broke: the other side died, hung past its time, or sent something malformed."""


class RemoteError(Exception):
    """An exception raised on the other side whose type this side does not know by name."""


def _is_encoding(value: Any) -> bool:
    cls = type(value)
    return cls.__name__ == "Encoding" and cls.__module__.startswith("tiktoken") and isinstance(
        getattr(value, "name", None), str
    )


class Codec:
    """Encodes values for the other side and decodes what it sends; keeps this side's referenced
    objects so the other side can use them (until :meth:`forget`).

    ``owner`` names this side (``"judge"`` or ``"learner"``); ``make_proxy(ref)`` turns a
    reference to an object of the other side into a local proxy; ``make_error(data)`` turns an
    encoded exception into a local exception instance.
    """

    def __init__(self, owner: str, *, make_proxy: Callable[[dict], Any] | None = None,
                 make_error: Callable[[dict], BaseException] | None = None,
                 describe_error: Callable[[BaseException], str] | None = None) -> None:
        self.owner = owner
        self.objects: dict[int, Any] = {}
        self._ids: dict[int, int] = {}
        self._last_id = 0  # never reused, even after forget(): a stale reference names nothing
        self.make_proxy = make_proxy or (lambda ref: ref)
        self.make_error = make_error or (lambda data: RemoteError(f"{data.get('type')}: {data.get('message')}"))
        self.describe_error = describe_error or (lambda err: str(err))
        # Set by the agent while an answer runs: a ctxlab dataclass instance for which it says
        # True stays on this side (sent as a reference), so its methods run here.
        self.keep_here: Callable[[Any], bool] | None = None

    # ------------------------------------------------------------------ references

    def ref(self, value: Any, kind: str | None = None) -> dict:
        """A reference to ``value``, which stays on this side."""
        key = id(value)
        if key not in self._ids:
            self._last_id += 1
            self._ids[key] = self._last_id
            self.objects[self._last_id] = value
        if kind is None:
            kind = "class" if isinstance(value, type) else "function" if callable(value) else "object"
        name = getattr(value, "__qualname__", None) or type(value).__qualname__
        return {"$": "ref", "owner": self.owner, "id": self._ids[key], "kind": kind,
                "name": str(name)[:200], "type": type(value).__name__[:200]}

    def local(self, ref: dict) -> Any:
        """The object of this side that ``ref`` names."""
        try:
            return self.objects[int(ref["id"])]
        except (KeyError, TypeError, ValueError):
            raise ChannelError(f"the other side named an object ({ref.get('name')!r}) that no longer exists "
                               "here: objects live for one test cell") from None

    def forget(self) -> None:
        self.objects.clear()
        self._ids.clear()

    # ------------------------------------------------------------------ values

    def encode(self, value: Any, depth: int = 0, shared: Sharing | None = None) -> Any:
        """``value`` as plain data; ``shared`` numbers the containers of everything sent together
        (a fresh one for ``value`` alone when not given)."""
        if shared is None:
            shared = Sharing()
        if depth > MAX_DEPTH:
            raise ChannelError(f"a value nested more than {MAX_DEPTH} levels deep cannot be sent")
        if value is None or type(value) in (bool, int, str):
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"$": "float", "v": repr(value)}
        kind = type(value)
        container = kind in (list, tuple, dict, set, frozenset)
        if container:
            again = shared.again(value)
            if again is not None:
                return again
            shared.open(value)
        # Strings, the commonest leaves, are taken as they are without a call of their own.
        if kind is list:
            out: Any = [v if type(v) is str else self.encode(v, depth + 1, shared) for v in value]
        elif kind is tuple:
            out = {"$": "tuple", "items": [v if type(v) is str else self.encode(v, depth + 1, shared) for v in value]}
        elif kind is dict:
            if all(type(k) is str for k in value) and "$" not in value:
                out = {k: v if type(v) is str else self.encode(v, depth + 1, shared) for k, v in value.items()}
            else:
                out = {"$": "dict", "items": [[self.encode(k, depth + 1, shared), self.encode(v, depth + 1, shared)]
                                              for k, v in value.items()]}
        elif kind is set or kind is frozenset:
            out = {"$": "set", "items": [self.encode(v, depth + 1, shared) for v in value]}
        if container:
            shared.close(value)
            return out
        plain = plain_data(value)
        if plain is not _NOT_PLAIN:
            return self.encode(plain, depth, shared)
        if isinstance(value, BaseException):
            return self.error(value)
        if _is_encoding(value):
            return {"$": "encoding", "name": value.name}
        if (dataclasses.is_dataclass(value) and not isinstance(value, type)
                and type(value).__module__.split(".")[0] == "ctxlab"):
            if self.keep_here is not None and self.keep_here(value):
                return self.ref(value)
            again = shared.again(value)
            if again is not None:
                return again
            mark = shared.open(value)
            fields = {}
            for f in dataclasses.fields(value):
                encoded = self.encode(getattr(value, f.name), depth + 1, shared)
                if _holds_ref(encoded):
                    shared.rollback(mark)  # sent as a reference: none of its containers were sent
                    return self.ref(value)
                fields[f.name] = encoded
            shared.close(value)
            cls = type(value)
            return {"$": "dataclass", "type": f"{cls.__module__}.{cls.__qualname__}", "fields": fields}
        return self.ref(value)

    def error(self, err: BaseException) -> dict:
        mro = mro_names(type(err))
        return {"$": "error", "type": type(err).__name__[:200], "mro": mro,
                "module": type(err).__module__[:200], "message": self.describe_error(err)[:4000]}

    def decode(self, data: Any, encoding_loader: Callable[[str], Any] | None, depth: int = 0,
               shared: Shared | None = None) -> Any:
        """What :meth:`encode` sent; ``shared`` as there (the same sequence of values)."""
        if shared is None:
            shared = Shared()
        if depth > MAX_DEPTH:
            raise ChannelError(f"a value nested more than {MAX_DEPTH} levels deep was received")
        if data is None or type(data) in (bool, int, float, str):
            return data
        if type(data) is list:
            out: list = []
            k = shared.open(out)
            out.extend(v if type(v) is str else self.decode(v, encoding_loader, depth + 1, shared) for v in data)
            shared.close(k)
            return out
        if type(data) is not dict:
            raise ChannelError(f"received a value of type {type(data).__name__}")
        tag = data.get("$")
        if tag is None:
            plain: dict = {}
            k = shared.open(plain)
            for key, v in data.items():
                plain[key] = v if type(v) is str else self.decode(v, encoding_loader, depth + 1, shared)
            shared.close(k)
            return plain
        if tag == "same":
            return shared.get(data.get("n"))
        if tag == "dict":
            mixed: dict = {}
            k = shared.open(mixed)
            for key, v in _pairs(data.get("items")):
                key = _hashable(self.decode(key, encoding_loader, depth + 1, shared))
                mixed[key] = self.decode(v, encoding_loader, depth + 1, shared)
            shared.close(k)
            return mixed
        if tag == "tuple":
            k = shared.open(None)
            items = tuple(v if type(v) is str else self.decode(v, encoding_loader, depth + 1, shared)
                          for v in _items(data.get("items")))
            shared.close(k, items)
            return items
        if tag == "set":
            k = shared.open(None)
            items = {_hashable(self.decode(v, encoding_loader, depth + 1, shared)) for v in _items(data.get("items"))}
            shared.close(k, items)
            return items
        if tag == "float":
            if data.get("v") not in ("nan", "inf", "-inf"):
                raise ChannelError("received a malformed float")
            return float(data["v"])
        if tag == "encoding":
            if encoding_loader is None or type(data.get("name")) is not str:
                raise ChannelError("received an encoding this side cannot load")
            return encoding_loader(data["name"])
        if tag == "dataclass":
            k = shared.open(None)
            instance = self._dataclass(data, encoding_loader, depth, shared)
            shared.close(k, instance)
            return instance
        if tag == "error":
            return self.make_error(data)
        if tag == "ref":
            if data.get("owner") == self.owner:
                return self.local(data)
            return self.make_proxy(data)
        raise ChannelError(f"received an unknown tag {str(tag)[:40]!r}")

    def _dataclass(self, data: dict, encoding_loader, depth: int, shared: Shared) -> Any:
        path = str(data.get("type", ""))
        module_name, _, qualname = path.rpartition(".")
        if module_name.split(".")[0] != "ctxlab" or "." in qualname:
            raise ChannelError(f"received a dataclass of an unexpected type {path[:80]!r}")
        try:
            cls = getattr(importlib.import_module(module_name), qualname)
        except (ImportError, AttributeError):
            raise ChannelError(f"received a dataclass of an unknown type {path[:80]!r}") from None
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise ChannelError(f"{path[:80]!r} is not a dataclass")
        fields = data.get("fields")
        if type(fields) is not dict:
            raise ChannelError("received a malformed dataclass")
        values = {k: self.decode(v, encoding_loader, depth + 1, shared) for k, v in fields.items()}
        known = {f.name: f for f in dataclasses.fields(cls)}
        if set(values) - set(known):
            raise ChannelError(f"received unknown fields for {path[:80]!r}")
        instance = cls.__new__(cls)
        for name, value in values.items():
            object.__setattr__(instance, name, value)
        return instance


class Sharing:
    """The sending side's numbers for the containers of what is sent together (see the module's
    docstring): each list, tuple, dict, set and by-value dataclass gets the next number as it
    starts; one met again once it is complete is sent as ``{"$": "same", "n": k}``. Everything
    numbered is held until the message is sent, so no id is reused meanwhile."""

    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}
        self.complete: set[int] = set()
        self.held: list[Any] = []

    def again(self, value: Any) -> dict | None:
        k = self.numbers.get(id(value))
        if k is None or k not in self.complete:
            return None  # new, or one that holds itself (refused as too deep, as before)
        return {"$": "same", "n": k}

    def open(self, value: Any) -> int:
        k = len(self.held)
        self.numbers[id(value)] = k
        self.held.append(value)
        return k

    def close(self, value: Any) -> None:
        self.complete.add(self.numbers[id(value)])

    def rollback(self, mark: int) -> None:
        """Forget every number from ``mark`` on (what was numbered will not be sent)."""
        for value in self.held[mark:]:
            k = self.numbers.get(id(value))
            if k is not None and k >= mark:
                del self.numbers[id(value)]
                self.complete.discard(k)
        del self.held[mark:]


class Shared:
    """The receiving side's containers of what was sent together, by their numbers (see
    :class:`Sharing`): a ``same`` names one that is complete, or the message is malformed."""

    def __init__(self) -> None:
        self.objects: list[Any] = []
        self.complete: list[bool] = []

    def open(self, value: Any) -> int:
        self.objects.append(value)
        self.complete.append(False)
        return len(self.objects) - 1

    def close(self, k: int, value: Any = None) -> None:
        if value is not None:
            self.objects[k] = value
        self.complete[k] = True

    def get(self, n: Any) -> Any:
        if type(n) is not int or not 0 <= n < len(self.objects) or not self.complete[n]:
            raise ChannelError("received a reference to an object that was not sent before it")
        return self.objects[n]

_NOT_PLAIN = object()
_PLAIN_BASES = (bool, int, float, str, list, tuple, dict, set, frozenset)


def plain_data(value: Any) -> Any:
    """The data a library's subclass of a built-in type holds, as that built-in type, read with
    the built-in type's own methods (an override cannot change it); ``_NOT_PLAIN`` for anything
    else, and for a class defined in ``__main__`` (a learner's own, sent as a reference).

    >>> import collections, enum
    >>> class Level(enum.IntEnum):
    ...     HIGH = 3
    >>> Level.__module__ = "levels"
    >>> plain_data(Level.HIGH), type(plain_data(Level.HIGH)).__name__
    (3, 'int')
    >>> plain_data(collections.OrderedDict(a=1)), plain_data(collections.Counter("aab"))
    ({'a': 1}, {'a': 2, 'b': 1})
    """
    kind = type(value)
    if kind in _PLAIN_BASES or getattr(kind, "__module__", "__main__") == "__main__":
        return _NOT_PLAIN
    if isinstance(value, int):  # bool cannot be subclassed: an int subclass is not a bool
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return dict(dict.items(value))
    if isinstance(value, list):
        return list(list.__iter__(value))
    if isinstance(value, tuple):
        return tuple(tuple.__iter__(value))
    if isinstance(value, (set, frozenset)):
        return set(frozenset.__iter__(value) if isinstance(value, frozenset) else set.__iter__(value))
    return _NOT_PLAIN


def _holds_ref(encoded: Any) -> bool:
    if type(encoded) is list:
        return any(_holds_ref(v) for v in encoded)
    if type(encoded) is dict:
        if encoded.get("$") == "ref":
            return True
        return any(_holds_ref(v) for v in encoded.values())
    return False


def _items(items: Any) -> list:
    if type(items) is not list:
        raise ChannelError("received a malformed collection")
    return items


def _pairs(items: Any) -> list:
    pairs = _items(items)
    if not all(type(p) is list and len(p) == 2 for p in pairs):
        raise ChannelError("received a malformed dict")
    return pairs


def _hashable(key: Any) -> Any:
    if type(key) is list:
        return tuple(_hashable(k) for k in key)
    try:
        hash(key)
    except TypeError:
        raise ChannelError("received a dict key that cannot be hashed") from None
    return key


class Peer:
    """One end of the channel: send requests, answer the other side's requests meanwhile.

    Every request gets exactly one reply (``{"op": "reply", "ok": ..., ...}``). While a side
    waits for its reply, the other side may send requests of its own (a learner function calling
    back a spy the test passed in); :meth:`request` answers them with ``handler`` and goes on
    waiting, so calls nest to any depth on both sides.
    """

    def __init__(self, sock: socket.socket, handler: Callable[[dict], dict], *, timeout: float | None = None):
        self.sock = sock
        self.handler = handler
        self.timeout = timeout
        self.broken: str | None = None

    def send(self, message: dict) -> None:
        if self.broken:
            raise ChannelError(self.broken)
        try:
            data = json.dumps(message, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError) as err:
            raise ChannelError(f"could not encode a message: {err}") from None
        if len(data) > MAX_MESSAGE:
            raise ChannelError(f"a message of {len(data):,} bytes is over the channel's limit of {MAX_MESSAGE:,}")
        try:
            self.sock.sendall(_HEADER.pack(len(data)) + data)
        except OSError as err:
            self._break(f"the other side is gone ({err})")

    def _recv_exact(self, size: int) -> bytes:
        chunks, remaining = [], size
        while remaining:
            try:
                chunk = self.sock.recv(min(remaining, 1 << 20))
            except TimeoutError:
                self._break(f"no answer within {self.timeout:g} s")
            except OSError as err:
                self._break(f"the other side is gone ({err})")
            if not chunk:
                self._break("the other side closed the channel (its kernel may have died)")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> dict:
        if self.broken:
            raise ChannelError(self.broken)
        self.sock.settimeout(self.timeout)
        (size,) = _HEADER.unpack(self._recv_exact(_HEADER.size))
        if size > MAX_MESSAGE:
            self._break(f"the other side sent a message of {size:,} bytes, over the limit of {MAX_MESSAGE:,}")
        try:
            message = json.loads(self._recv_exact(size).decode("utf-8"))
        except (ValueError, RecursionError, MemoryError):
            self._break("the other side sent a malformed message")
        if type(message) is not dict or type(message.get("op")) is not str:
            self._break("the other side sent a malformed message")
        return message

    def request(self, message: dict) -> dict:
        """Send ``message`` and return its reply, answering nested requests meanwhile."""
        self.send(message)
        while True:
            incoming = self.receive()
            if incoming["op"] == "reply":
                return incoming
            if incoming["op"] == "bye":
                self._break("the other side ended the session")
            self.send({"op": "reply", **self.handler(incoming)})

    def _break(self, why: str):
        self.broken = why
        with contextlib.suppress(OSError):
            self.sock.close()
        raise ChannelError(why)
