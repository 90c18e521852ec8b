"""Runs in the learner's kernel: answers the judge's calls on the learner's definitions.

The grader calls :func:`install` once, before any learner code runs, and :func:`serve` before
each run of consecutive test cells, which the judge runs in its own kernel. ``serve`` connects to the judge's
socket and, until the judge says ``end``, answers its requests: ``describe`` (what the
learner's names are), ``call``, ``getattr`` and the rest (:mod:`.endpoint`), and ``next``
between two test cells that share the connection (the last test's objects are forgotten). Output the
learner's code writes meanwhile is dropped, and tiktoken remembers the texts it encodes
(:func:`.memo.tokens_remembered`) until the test ends.

Nothing here is trusted: the learner's code shares this process and may change any of it. The
judge relies on none of it. Whatever this side sends is only data, and the judge compares it
there. The one thing this module adds is a deterrent. While a test runs, ctxlab's own
reference for the exercise under test is switched off, for every alias the learner may hold,
by swapping the code of the function objects themselves (:func:`disable`), for exactly as long
as the judge's call of that exercise's answer runs. Its failure names what happened.

>>> _stub_code((), "ctxlab.fit").co_freevars
()
>>> len(_stub_code(("__class__",), "ctxlab.Scratchpad.render").co_freevars)
1
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import socket
import sys
import types

from .endpoint import Endpoint
from .errors import ReferenceDisabled, rebuild
from .memo import tokens_remembered

__all__ = ["install", "serve", "disable", "restore"]

_functions: dict[tuple[str, str], list[types.FunctionType]] = {}
_swapped: list[tuple[types.FunctionType, types.CodeType]] = []
_root: list[str] = []


def install() -> int:
    """Index ctxlab's functions by (file, qualified name), before any learner code runs."""
    import importlib
    import pkgutil

    import ctxlab

    root = os.path.dirname(os.path.realpath(ctxlab.__file__))
    _root[:] = [root]
    modules = [ctxlab]
    for info in pkgutil.iter_modules(ctxlab.__path__, "ctxlab."):
        if info.name.rpartition(".")[2] in ("widgets", "plots"):
            continue  # display libraries: never a reference, and slow to import
        with contextlib.suppress(Exception):
            modules.append(importlib.import_module(info.name))
    seen: set[int] = set()

    def visit(value, depth=0):
        if id(value) in seen or depth > 3:
            return
        seen.add(id(value))
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for part in (value.fget, value.fset, value.fdel):
                if part is not None:
                    visit(part, depth + 1)
            return
        if isinstance(value, types.FunctionType):
            path = os.path.realpath(value.__code__.co_filename)
            if path.startswith(root + os.sep):
                key = (os.path.relpath(path, root), value.__code__.co_qualname)
                _functions.setdefault(key, []).append(value)
            return
        if isinstance(value, type) and value.__module__.split(".")[0] == "ctxlab":
            for member in vars(value).values():
                visit(member, depth + 1)

    for module in modules:
        for value in list(vars(module).values()):
            visit(value)
    return len(_functions)


@functools.lru_cache(maxsize=4096)
def _stub_code(freevars: tuple[str, ...], label: str) -> types.CodeType:
    """A code object that raises ReferenceDisabled, with the same free variables as the original
    (code objects are immutable, so one serves every function it replaces)."""
    message = (f"{label} is ctxlab's own answer to the exercise being graded, so it is switched off while "
               "your code is tested: write this step yourself (ctxlab's helpers for the other exercises "
               "still work)")
    body = f"raise __import__({__name__!r}, fromlist=['x']).ReferenceDisabled({message!r})"
    if not freevars:
        namespace: dict = {}
        exec(f"def stub(*args, **kwargs):\n    {body}\n", namespace)  # noqa: S102 - fixed text
        return namespace["stub"].__code__
    lines = ["def outer():"] + [f"    {name} = None" for name in freevars]
    lines += ["    def stub(*args, **kwargs):", f"        ({', '.join(freevars)},)", f"        {body}", "    return stub"]
    namespace = {}
    exec("\n".join(lines), namespace)  # noqa: S102 - fixed text
    return namespace["outer"]().__code__


def disable(targets: list) -> list[tuple[types.FunctionType, types.CodeType]]:
    """Switch off the ctxlab functions named by ``targets`` ([file, qualname, label] each); return
    what was switched off, for :func:`restore` (functions already off are left to their caller)."""
    done = []
    for target in targets:
        if not (type(target) is list and len(target) == 3 and all(type(t) is str for t in target)):
            continue
        file, qualname, label = target
        for function in _functions.get((file, qualname), []):
            if any(function is off for off, _code in _swapped):
                continue
            original = function.__code__
            try:
                function.__code__ = _stub_code(original.co_freevars, label)
            except (ValueError, TypeError):
                continue
            _swapped.append((function, original))
            done.append((function, original))
    return done


def restore(entries: list | None = None) -> None:
    """Put back what :func:`disable` switched off (``entries``; all of it by default)."""
    chosen = list(_swapped) if entries is None else list(entries)
    for function, original in reversed(chosen):
        with contextlib.suppress(ValueError, TypeError):
            function.__code__ = original
        with contextlib.suppress(ValueError):
            _swapped.remove((function, original))


def _namespace() -> dict:
    shell = sys.modules.get("IPython") and __import__("IPython").get_ipython()
    return shell.user_ns if shell is not None else vars(sys.modules["__main__"])


def _encoding(name: str):
    import ctxlab

    return ctxlab.encoding(name)


def serve(path: str, token: str, timeout: float = 60.0) -> str:
    """Connect to the judge at ``path`` and answer it until it ends the test; a word on how it ended."""
    namespace = _namespace()
    done = {"end": False}

    def describe(message: dict) -> dict:
        names = message.get("names") if type(message.get("names")) is list else []
        values, missing = {}, []
        for name in names:
            if type(name) is str and name in namespace:
                values[name] = endpoint.encode(namespace[name])
                answers[name] = namespace[name]
            else:
                missing.append(name)
        return {"ok": True, "value": values, "missing": missing}

    forbid: dict[str, list] = {}
    answers: dict[str, object] = {}

    def begin(message: dict) -> dict:
        if type(message.get("forbid")) is dict:
            forbid.update({str(k): v for k, v in message["forbid"].items() if type(v) is list})
        return {"ok": True, "value": sorted(forbid)}

    def end(message: dict) -> dict:
        done["end"] = True
        restore()
        return {"ok": True, "value": None}

    def next_test(message: dict) -> dict:
        """The next test cell on this connection: the last one's objects are forgotten."""
        restore()
        answers.clear()
        endpoint.codec.forget()
        return {"ok": True, "value": None}

    def answer_of(message: dict) -> str | None:
        """The answer name a request works on: its function or class, or an instance of its class."""
        try:
            target = endpoint.codec.local(message.get("target") or {})
        except Exception:  # noqa: BLE001 - the endpoint reports a bad target itself
            return None
        for name, value in answers.items():
            if target is value or (isinstance(value, type) and type(target) is value):
                return name
        return None

    def handle(message: dict) -> dict:
        """Answer the judge; while the learner's code for an exercise runs, its reference is off."""
        name = answer_of(message) if message.get("op") in ("call", "getattr", "special") else None
        if name is None or not forbid.get(name):
            return endpoint.handle(message)
        switched = disable(forbid[name])
        try:
            return endpoint.handle(message)
        finally:
            restore(switched)

    endpoint = Endpoint("learner", guarded=False, encoding_loader=_encoding, make_error=rebuild,
                        describe_error=lambda err: str(err),
                        extra_ops={"describe": describe, "begin": begin, "next": next_test, "end": end})
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(path)
    except OSError as err:
        return f"could not connect: {err}"
    from .wire import ChannelError, Peer

    peer = Peer(sock, handle, timeout=timeout)
    endpoint.peer = peer
    sink = io.StringIO()
    try:
        # Tests count the same texts again and again; the memo lives only while the test does.
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), tokens_remembered():
            peer.send({"op": "hello", "token": token})
            while not done["end"]:
                message = peer.receive()
                reply = handle(message)
                peer.send({"op": "reply", **reply})
                if sink.tell() > 1_000_000:  # what the learner's code prints is dropped, not kept
                    sink.seek(0)
                    sink.truncate()
    except ChannelError as err:
        return f"channel closed: {err}"
    finally:
        restore()
        endpoint.codec.forget()
        with contextlib.suppress(OSError):
            sock.close()
    return "ended"


# Referenced by the stub code through __import__, so a stub works whatever the learner imported.
ReferenceDisabled = ReferenceDisabled
