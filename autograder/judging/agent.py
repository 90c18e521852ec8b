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
as the judge's call of that exercise's answer runs. "That exercise's answer" covers an instance of
the answer's class (a subclass of ctxlab's class too), a bound method of either and anything an
answered call handed out. An answer bound to ctxlab's own class (``ContextBudget =
ctxlab.ContextBudget``) makes instances that stay on this side rather than crossing by value, so
their methods run where the reference is off. Copies of a reference built from its code object are found
(:func:`find_copies`) and switched off with it; an answer that keeps the code object itself, or
puts it back while the test runs, fails. Its failure names what happened.

>>> _stub_code((), "ctxlab.fit").co_freevars
()
>>> len(_stub_code(("__class__",), "ctxlab.Scratchpad.render").co_freevars)
1
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import socket
import sys
import types

from .endpoint import Endpoint
from .errors import ReferenceDisabled, rebuild
from .memo import tokens_remembered
from .wire import MAX_MESSAGE, ChannelError

__all__ = ["install", "serve", "disable", "restore", "find_copies"]

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


def _is_stub(code: types.CodeType) -> bool:
    return code.co_filename == "<string>" and code.co_name == "stub" and "ReferenceDisabled" in code.co_names


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


def _made_by_alias(answer: object, targets: list):
    """A test for the objects an answer hands out, or ``None``: when the answer is ctxlab's own
    class (the learner bound the exercise's name to it) and that class defines one of the
    functions ``targets`` name ([file, qualname, label] each), its instances."""
    if not (isinstance(answer, type) and answer.__module__.split(".")[0] == "ctxlab"):
        return None
    wanted = {id(f) for target in targets if type(target) is list and len(target) == 3
              for f in _functions.get((target[0], target[1]), [])}
    members = [m for klass in answer.__mro__ for m in vars(klass).values()]
    members = [m.__func__ if isinstance(m, (staticmethod, classmethod)) else m for m in members]
    functions = [f for m in members for f in ([m.fget, m.fset, m.fdel] if isinstance(m, property) else [m])]
    if not any(id(f) in wanted for f in functions if f is not None):
        return None
    return lambda value: isinstance(value, answer)


def find_copies(targets: list, namespace: dict) -> list[str]:
    """Index the learner's copies of the functions ``targets`` name, so :func:`disable` switches
    them off too; return the labels of those whose code object the learner's code keeps.

    Both are looked for in what the notebook's variables reach (:func:`_reachable`): a copy is
    a function object that is not ctxlab's own but runs a reference's own code object
    (``types.FunctionType(ctxlab.fit.__code__, ...)``); a code object kept in a variable, a
    container, a closure or a default could be put back on the reference while it is switched
    off, so the answer that keeps it fails instead. Copying the source text is not found: no
    grader can tell that from the learner's own code.
    """
    wanted: dict[tuple[str, str], str] = {}
    for target in targets:
        if type(target) is list and len(target) == 3 and all(type(t) is str for t in target):
            wanted[(target[0], target[1])] = target[2]
    originals = {id(f.__code__): (key, label) for key, label in wanted.items() for f in _functions.get(key, [])
                 if not _is_stub(f.__code__)}
    if not originals:
        return []
    own = {id(f) for key in wanted for f in _functions.get(key, [])}
    held = set()
    for value in _reachable(namespace):
        if type(value) is types.FunctionType and id(value) not in own and id(value.__code__) in originals:
            _functions.setdefault(originals[id(value.__code__)][0], []).append(value)
            own.add(id(value))
        elif type(value) is types.CodeType and id(value) in originals:
            held.add(originals[id(value)][1])
    return sorted(held)


def _reachable(namespace: dict, limit: int = 20_000):
    """What the learner's variables reach, breadth first, at most ``limit`` objects: containers'
    items; the closures, defaults and attributes of the learner's functions; the attributes of
    the learner's classes and their instances; bound methods and partials. Modules and other
    libraries' functions and classes are not entered (ctxlab's own are the references)."""
    main = namespace.get("__name__", "__main__")
    queue, seen = list(namespace.values()), set()
    while queue and len(seen) < limit:
        value = queue.pop()
        if id(value) in seen or isinstance(value, types.ModuleType):
            continue
        seen.add(id(value))
        yield value
        kind = type(value)
        if kind in (dict, types.MappingProxyType):
            queue.extend(value.values())
        elif kind in (list, tuple, set, frozenset):
            queue.extend(value)
        elif kind is types.CellType:
            with contextlib.suppress(ValueError):
                queue.append(value.cell_contents)
        elif kind is types.MethodType:
            queue += [value.__func__, value.__self__]
        elif kind is functools.partial:
            queue += [value.func, value.args, value.keywords]
        elif kind is types.FunctionType:
            if value.__globals__ is namespace or getattr(value, "__module__", None) == main:
                queue += [value.__closure__ or (), value.__defaults__ or (), value.__kwdefaults__ or {},
                          vars(value)]
        elif isinstance(value, type):
            if value.__module__ == main:
                queue.append(dict(vars(value)))
        elif type(value).__module__ == main:
            with contextlib.suppress(TypeError):
                queue.append(vars(value))


def _instance_of(value, cls: type) -> bool:
    try:
        return type(value) is cls or isinstance(value, cls)
    except Exception:  # noqa: BLE001 - a learner's __instancecheck__ may raise
        return False


def _namespace() -> dict:
    shell = sys.modules.get("IPython") and __import__("IPython").get_ipython()
    return shell.user_ns if shell is not None else vars(sys.modules["__main__"])


def _encoding(name: str):
    import ctxlab

    return ctxlab.encoding(name)


def _as_data_or_handle(endpoint: Endpoint, value):
    """``value`` encoded for the judge; as a handle when it cannot travel as data (nested too deep),
    so that only the tests of that one answer fail on it, not every test of the notebook."""
    try:
        return endpoint.encode(value)
    except ChannelError:
        return endpoint.codec.ref(value)


def _within_limit(endpoint: Endpoint, values: dict, namespace: dict) -> dict:
    """``values`` (answer name -> encoded value), with the largest sent as handles while the whole
    would not fit in one message (or a number too long for JSON's text), for the same reason."""
    sizes = {}
    for name, encoded in values.items():
        try:
            sizes[name] = len(json.dumps(encoded, allow_nan=False, separators=(",", ":")))
        except (TypeError, ValueError):
            sizes[name] = MAX_MESSAGE
    budget = MAX_MESSAGE // 2
    for name in sorted(sizes, key=sizes.get, reverse=True):
        if sum(sizes.values()) <= budget and sizes[name] < MAX_MESSAGE:
            break
        values[name] = endpoint.codec.ref(namespace[name])
        sizes[name] = 200
    return values


def serve(path: str, token: str, timeout: float = 60.0) -> str:
    """Connect to the judge at ``path`` and answer it until it ends the test; a word on how it ended."""
    namespace = _namespace()
    done = {"end": False}

    def describe(message: dict) -> dict:
        names = message.get("names") if type(message.get("names")) is list else []
        values, missing = {}, []
        for name in names:
            if type(name) is str and name in namespace:
                values[name] = _as_data_or_handle(endpoint, namespace[name])
                answers[name] = namespace[name]
            else:
                missing.append(name)
        return {"ok": True, "value": _within_limit(endpoint, values, namespace), "missing": missing}

    forbid: dict[str, list] = {}
    answers: dict[str, object] = {}
    derived: dict[int, str] = {}  # codec id of an object an answered call handed out -> its answer
    held: dict[str, list[str]] = {}  # answer name -> references whose code the learner keeps

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
        derived.clear()
        held.clear()
        endpoint.codec.forget()
        return {"ok": True, "value": None}

    def answer_of(message: dict) -> str | None:
        """The answer name a request works on: its function or class, an instance of the class
        (a subclass's too), a bound method of either, or anything an answered call handed out."""
        ref = message.get("target") or {}
        try:
            target = endpoint.codec.local(ref)
        except Exception:  # noqa: BLE001 - the endpoint reports a bad target itself
            return None
        with contextlib.suppress(TypeError, ValueError):
            if int(ref.get("id")) in derived:
                return derived[int(ref.get("id"))]
        owner = getattr(target, "__self__", None) if isinstance(target, types.MethodType) else None
        for name, value in answers.items():
            for candidate in (target, owner):
                if candidate is None:
                    continue
                if candidate is value or (isinstance(value, type) and _instance_of(candidate, value)):
                    return name
        return None

    def handle(message: dict) -> dict:
        """Answer the judge; while the learner's code for an exercise runs, its reference is off."""
        name = answer_of(message) if message.get("op") in ("call", "getattr", "special") else None
        if name is None or not forbid.get(name):
            return endpoint.handle(message)
        if name not in held:
            held[name] = find_copies(forbid[name], namespace)
        if held[name]:
            return refused(f"your code keeps the code object of {held[name][0]}, which is ctxlab's own answer to the "
                           "exercise being graded, to run it while it is switched off: write this step yourself")
        switched = disable(forbid[name])
        first_new = endpoint.codec._last_id + 1
        # An answer bound to ctxlab's own class makes instances of that class, which would
        # otherwise cross by value and run the reference on the judge's side: they stay here,
        # where the reference is off. (Values the judge sent keep travelling by value.)
        endpoint.codec.keep_here = _made_by_alias(answers.get(name), forbid[name])
        try:
            reply = endpoint.handle(message)
            tampered = [function for function, _original in switched if not _is_stub(function.__code__)]
        finally:
            endpoint.codec.keep_here = None
            restore(switched)
        # What this call handed out (a bound method, an object, a closure) is part of the answer,
        # so the references stay off while it runs too.
        for new_id in range(first_new, endpoint.codec._last_id + 1):
            derived[new_id] = name
        if tampered:
            return refused(f"your code switched {tampered[0].__qualname__}, which is ctxlab's own answer to the exercise "
                           "being graded, back on while it was tested: write this step yourself")
        return reply

    def refused(text: str) -> dict:
        return {"ok": False, "error": endpoint.codec.error(ReferenceDisabled(text))}

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
