"""What each end of the judge's channel can ask of the other, and the proxies that ask it.

An :class:`Endpoint` owns a :class:`~.wire.Peer` and a :class:`~.wire.Codec`. It answers the
other side's requests on the objects it sent them (``call``, ``getattr``, ``setattr``,
``special``) and gives this side proxies for the other side's objects:

* :class:`Remote` (a function, a class or an object of the other side): calling it, reading or
  setting an attribute, ``len``, ``iter``, ``in``, ``[]``, ``str`` and ``repr`` are requests;
  ``isinstance(x, remote_class)`` asks the other side. Equality is never delegated: two
  proxies are equal only when they are the same proxy, so a learner's ``__eq__`` decides nothing.

Arguments are copied across and **copied back**: when the callee changed a ``list``, ``dict``
or ctxlab dataclass argument in place, the caller's own object is updated to match. What the
callee returns, or leaves in an argument, that is one of the caller's own objects comes back
as that object, not as a copy (:mod:`.aliases`), so ``f(x) is x`` means in the judge what it
means in Python.

The judge's endpoint is ``guarded``: the learner's side may only call what the judge handed
it, read its public attributes (never a name starting with ``_``, so no ``__globals__`` or
``__code__`` of a test's spy) and never set attributes of the judge's objects.

Each proxy knows which of the learner's answers it belongs to (:attr:`Endpoint.answers`): a
name the judge bound, or the answer whose request handed it out. While a request about an
answer is out, the other side's requests are answered inside ``switch_off(names)`` (the
judge's: ctxlab's references for those answers are off in the judge too), so a method of an
object the test built, called back by the learner's code, is not a way to ctxlab's own answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

from .aliases import MISSING, Origins, at, restore, same_data, well_formed
from .wire import ChannelError, Codec, Peer, Shared, Sharing

__all__ = ["Endpoint", "Remote", "SPECIALS"]

SPECIALS = ("len", "iter", "str", "repr", "contains", "getitem", "bool")


class Endpoint:
    """One side of the channel: ``owner`` is ``"judge"`` or ``"learner"``."""

    def __init__(self, owner: str, *, guarded: bool, encoding_loader: Callable[[str], Any] | None,
                 make_error: Callable[[dict], BaseException], describe_error: Callable[[BaseException], str],
                 extra_ops: dict[str, Callable[[dict], dict]] | None = None,
                 switch_off: Callable[[list[str]], contextlib.AbstractContextManager] | None = None) -> None:
        self.owner = owner
        self.guarded = guarded
        self.encoding_loader = encoding_loader
        self.codec = Codec(owner, make_proxy=self._proxy, make_error=make_error, describe_error=describe_error)
        self.extra_ops = dict(extra_ops or {})
        self.peer: Peer | None = None
        self.switch_off = switch_off
        self.answers: dict[int, str] = {}  # id of the other side's object -> the answer it belongs to
        self._running: list[str | None] = []  # the answers whose requests are out, innermost last

    # ------------------------------------------------------------------ sending

    def encode(self, value: Any) -> Any:
        return self.codec.encode(value)

    def decode(self, data: Any) -> Any:
        return self.codec.decode(data, self.encoding_loader)

    def request(self, message: dict) -> Any:
        """Send a request; return its reply or raise the error it carries."""
        if self.peer is None:
            raise ChannelError("the channel to the other side is not open")
        reply = self.peer.request(message)
        if not reply.get("ok"):
            error = self.decode(reply.get("error") or {"$": "error", "type": "ChannelError", "mro": [],
                                                          "message": "the other side failed"})
            if isinstance(error, BaseException):
                raise error
            raise ChannelError("the other side sent a malformed error")
        return reply

    def ask(self, message: dict) -> Any:
        """Send a request about one of the other side's objects; return its decoded value.

        While it is out, and while its value is decoded, the request works for the answer its
        target belongs to: the other side's requests meanwhile are answered with that answer's
        references off (``switch_off``), and the objects it hands out belong to it too.
        """
        target = message.get("target")
        name = self.answers.get(target.get("id")) if type(target) is dict else None
        self._running.append(name)
        try:
            return self.decode(self.request(message).get("value"))
        finally:
            self._running.pop()

    def bind(self, name: str, data: Any) -> Any:
        """Decode ``data``, the other side's value for its answer ``name``: its objects belong to it."""
        self._running.append(name)
        try:
            return self.decode(data)
        finally:
            self._running.pop()

    def call(self, target: dict, args: tuple, kwargs: dict, method: str | None = None) -> Any:
        shared = Sharing()  # one object passed twice (f(x, x), [m, m]) arrives as one object
        enc_args = [self.codec.encode(a, shared=shared) for a in args]
        enc_kwargs = {str(k): self.codec.encode(v, shared=shared) for k, v in kwargs.items()}
        self._running.append(self.answers.get(target.get("id")))
        try:
            reply = self.request({"op": "call", "target": target, "method": method,
                                  "args": enc_args, "kwargs": enc_kwargs})
            same = reply.get("same") if type(reply.get("same")) is dict else {}
            originals = _Originals(args, kwargs, same)  # the caller's objects, found before any copy-back
            self._copy_back(args, enc_args, reply.get("args_after"), originals,
                            _indexed(same.get("args"), len(args)))
            self._copy_back(list(kwargs.values()), list(enc_kwargs.values()),
                            [(reply.get("kwargs_after") or {}).get(str(k)) for k in kwargs], originals,
                            [(same.get("kwargs") if type(same.get("kwargs")) is dict else {}).get(str(k))
                             for k in kwargs])
            return restore(self.decode(reply.get("value")), well_formed(same.get("value")), originals)
        finally:
            self._running.pop()

    def _copy_back(self, originals: list, before: list, after: Any, found: Any = None,
                   aliases: list | None = None) -> None:
        if type(after) is not list or len(after) != len(originals):
            return
        for k, (original, old, new) in enumerate(zip(originals, before, after, strict=False)):
            if new is None or same_data(new, old):  # a dict's new order is a change too
                continue
            fresh = self.decode(new)
            if found is not None and aliases is not None:
                fresh = restore(fresh, well_formed(aliases[k]), found)
            if fresh is original:
                continue
            if type(original) is list and type(fresh) is list:
                original[:] = fresh
            elif type(original) is dict and type(fresh) is dict:
                original.clear()
                original.update(fresh)
            elif (dataclasses.is_dataclass(original) and type(fresh) is type(original)
                  and not isinstance(original, type)):
                for f in dataclasses.fields(original):
                    object.__setattr__(original, f.name, getattr(fresh, f.name))

    # ------------------------------------------------------------------ answering

    def handle(self, message: dict) -> dict:
        """Answer one request of the other side: ``{"ok": True, ...}`` or ``{"ok": False, "error": ...}``."""
        running = sorted({name for name in self._running if name is not None})
        if not running or self.switch_off is None or message.get("op") in self.extra_ops:
            return self._handle(message)
        try:
            guard = self.switch_off(running)
        except Exception as err:  # noqa: BLE001 - reported as data like any failure
            return {"ok": False, "error": self.codec.error(err)}
        with guard:
            return self._handle(message)

    def _handle(self, message: dict) -> dict:
        try:
            op = message.get("op")
            if op in self.extra_ops:
                return self.extra_ops[op](message)
            if op == "call":
                return self._handle_call(message)
            if op == "getattr":
                name = self._attribute(message)
                return {"ok": True, "value": self.encode(getattr(self._target(message), name))}
            if op == "setattr":
                if self.guarded:
                    raise PermissionError("the learner's code may not change the test's objects")
                name = self._attribute(message)
                setattr(self._target(message), name, self.decode(message.get("value")))
                return {"ok": True, "value": None}
            if op == "special":
                return {"ok": True, "value": self.encode(self._special(message))}
            if op == "isinstance":
                obj = self.decode(message.get("object"))
                cls = self._target(message)
                return {"ok": True, "value": isinstance(cls, type) and isinstance(obj, cls)}
            raise ChannelError(f"unknown request {str(op)[:40]!r}")
        except ChannelError:
            raise
        except BaseException as err:  # noqa: BLE001 - every failure goes back as data
            if isinstance(err, (KeyboardInterrupt, SystemExit)) and self.owner == "judge":
                raise
            return {"ok": False, "error": self.codec.error(err)}

    def _target(self, message: dict) -> Any:
        target = message.get("target")
        if type(target) is not dict or target.get("owner") != self.owner:
            raise ChannelError("a request named an object that is not this side's")
        return self.codec.local(target)

    def _attribute(self, message: dict) -> str:
        name = message.get("name")
        if type(name) is not str or not name.isidentifier():
            raise ChannelError("a request named an attribute that is not an identifier")
        if self.guarded and name.startswith("_"):
            raise AttributeError(f"the learner's code may not read {name!r} of the test's objects")
        return name

    def _handle_call(self, message: dict) -> dict:
        target = self._target(message)
        method = message.get("method")
        if method is not None:
            target = getattr(target, self._attribute({"name": method}))
        raw_args, raw_kwargs = message.get("args"), message.get("kwargs")
        if type(raw_args) is not list or type(raw_kwargs) is not dict:
            raise ChannelError("a call arrived without a list of arguments")
        shared = Shared()
        args = [self.codec.decode(a, self.encoding_loader, shared=shared) for a in raw_args]
        kwargs = {str(k): self.codec.decode(v, self.encoding_loader, shared=shared) for k, v in raw_kwargs.items()}
        origins = None if self.guarded else Origins(args, kwargs)
        value = target(*args, **kwargs)
        reply = {"ok": True, "value": self.encode(value)}
        if origins is not None:  # the learner's side reports what its code did to the arguments
            reply["args_after"] = [self._after(a) for a in args]
            reply["kwargs_after"] = {k: self._after(v) for k, v in kwargs.items()}
            reply["same"] = {
                "value": origins.report(value),
                "args": [origins.report(a) if sent is not None else [] for a, sent in zip(args, reply["args_after"], strict=True)],
                "kwargs": {k: origins.report(v) if reply["kwargs_after"][k] is not None else []
                           for k, v in kwargs.items()},
            }
        return reply

    def _after(self, value: Any) -> Any:
        if type(value) in (list, dict) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
            try:
                return self.encode(value)
            except ChannelError:
                return None
        return None

    def _special(self, message: dict) -> Any:
        target = self._target(message)
        kind = message.get("kind")
        if kind == "len":
            return len(target)
        if kind == "iter":
            return list(target)
        if kind == "str":
            return str(target)
        if kind == "repr":
            return repr(target)
        if kind == "bool":
            return bool(target)
        if kind in ("contains", "getitem"):
            key = self.decode(message.get("key"))
            return (key in target) if kind == "contains" else target[key]
        raise ChannelError(f"unknown special request {str(kind)[:40]!r}")

    # ------------------------------------------------------------------ proxies

    def _proxy(self, ref: dict) -> Remote:
        owner = next((name for name in reversed(self._running) if name is not None), None)
        if owner is not None and type(ref.get("id")) is int:
            self.answers.setdefault(ref["id"], owner)
        return Remote(self, ref)


class _Originals:
    """The caller's own objects that a call's reply says it handed back: looked up at the paths
    of the arguments as they were before the call, all at once, before anything is copied back."""

    def __init__(self, args: tuple, kwargs: dict, same: dict) -> None:
        self.found: dict[tuple, Any] = {}
        lists = [same.get("value")] + list(_indexed(same.get("args"), len(args)))
        if type(same.get("kwargs")) is dict:
            lists += list(same["kwargs"].values())
        for aliases in lists:
            for _path, which, origin in well_formed(aliases):
                key = (which, tuple(origin))
                if key in self.found:
                    continue
                if type(which) is int and 0 <= which < len(args):
                    self.found[key] = at(args[which], origin)
                elif type(which) is str and which in kwargs:
                    self.found[key] = at(kwargs[which], origin)

    def __call__(self, which: int | str, origin: list) -> Any:
        return self.found.get((which, tuple(origin)), MISSING)


def _indexed(lists: Any, count: int) -> list:
    """A reply's per-argument alias lists, one per argument (empty where it sent none)."""
    if type(lists) is not list or len(lists) != count:
        return [[] for _ in range(count)]
    return lists


class Remote:
    """A proxy for a function, class or object of the other side of the channel."""

    __slots__ = ("_endpoint", "_ref")

    def __init__(self, endpoint: Endpoint, ref: dict) -> None:
        object.__setattr__(self, "_endpoint", endpoint)
        object.__setattr__(self, "_ref", {k: ref.get(k) for k in ("$", "owner", "id", "kind", "name", "type")})

    @property
    def __name__(self) -> str:  # what error messages and learners' code print
        return str(self._ref.get("name") or "").rpartition(".")[2]

    def __call__(self, *args, **kwargs):
        return self._endpoint.call(self._ref, args, kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._endpoint.ask({"op": "getattr", "target": self._ref, "name": name})

    def __setattr__(self, name: str, value) -> None:
        self._endpoint.request({"op": "setattr", "target": self._ref, "name": name,
                                "value": self._endpoint.encode(value)})

    def _special(self, kind: str, **extra):
        return self._endpoint.ask({"op": "special", "target": self._ref, "kind": kind, **extra})

    def __len__(self) -> int:
        value = self._special("len")
        if type(value) is not int:
            raise TypeError("len() of the learner's object did not give an int")
        return value

    def __iter__(self):
        value = self._special("iter")
        return iter(value if type(value) is list else [])

    def __contains__(self, key) -> bool:
        return self._special("contains", key=self._endpoint.encode(key)) is True

    def __getitem__(self, key):
        return self._special("getitem", key=self._endpoint.encode(key))

    def __bool__(self) -> bool:
        return self._special("bool") is True

    def __str__(self) -> str:
        value = self._special("str")
        return value if type(value) is str else ""

    def __repr__(self) -> str:
        return f"<{self._ref.get('kind')} {self._ref.get('name')} of the learner>"

    def __instancecheck__(self, instance) -> bool:
        if not isinstance(instance, Remote):
            return False
        return self._endpoint.ask({"op": "isinstance", "target": self._ref, "object": instance._ref}) is True

    def __eq__(self, other) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)
