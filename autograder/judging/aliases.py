"""Which objects a call's result shares with its arguments, so the judge sees what Python would.

Values cross the judge's channel as data, so the judge gets a *copy* of whatever a learner's
function returns. Without more, ``update_scratchpad(pad, ...) is pad`` is false in the judge
for every answer, and ``compress_history(messages, ...) is messages`` for none: identity, a
rule an exercise may state ("change it in place and return it", "return a new list", "the
groups hold the messages themselves"), could not be tested, and a right answer and a wrong
one graded alike.

So the learner's side of a call notes, before the call, where each container of the
arguments sits (:class:`Origins`: a ``list``, a plain ``dict`` or a ctxlab dataclass, by the
argument and the path to it). After the call it reports, for the returned value and for each
argument's new state, every container that is one of those objects, with both paths
(:meth:`Origins.report`). The judge, which still holds its own objects at those paths, puts
them back in place of the copies (:func:`restore`): one that the learner's code changed in
place is first brought up to date, as copying an argument back does.

Nothing the learner's side reports is trusted further than this: a claimed alias is taken only
where both paths lead to containers of the same type in the judge, and the judge's object is
then given exactly the content the learner's side sent, so a false claim changes no value the
test sees; at most it makes an object the test passed in come back as itself.

>>> messages = [{"role": "user", "content": "hi"}]
>>> origins = Origins([messages], {})
>>> origins.report(messages)  # the list itself, and the message inside it
[[[], 0, []], [[0], 0, [0]]]
>>> origins.report([{"role": "user"}, messages[0]])  # a new list holding the message
[[[1], 0, [0]]]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["Origins", "restore", "at", "same_data", "well_formed", "MISSING", "MAX_NODES", "MAX_ALIASES"]

MAX_NODES = 300_000
"""Containers looked at per value; past this, later ones are reported as copies."""

MAX_DEPTH = 200
"""As deep as the codec sends (:data:`.wire.MAX_DEPTH`): a container nested deeper, or a
structure that holds itself, is not followed further."""

MAX_ALIASES = 200_000
"""Aliases a reply may carry; the judge ignores the rest."""

Path = list  # of int (a list's index) and str (a dict's key or a dataclass's field)


_PLAIN = (list, tuple, dict)


def _is_ctxlab_dataclass(value: Any) -> bool:
    kind = type(value)
    return hasattr(kind, "__dataclass_fields__") and kind.__module__.split(".")[0] == "ctxlab"


def _children(value: Any) -> list[tuple[Any, Any]] | None:
    """``(segment, child)`` pairs of a container the codec sends as such, else ``None``."""
    kind = type(value)
    if kind is list or kind is tuple:
        return list(enumerate(value))
    if kind is dict:
        if "$" in value or not all(type(k) is str for k in value):
            return None  # sent in the codec's tagged form: its inside is not followed
        return list(value.items())
    if _is_ctxlab_dataclass(value):
        return [(f.name, getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    return None


def _walk(value: Any, visit: Callable[[Any, Path], bool]) -> None:
    """Call ``visit(node, path)`` on each container of ``value``, pre-order, up to
    :data:`MAX_NODES`; a visit that returns False stops the walk."""
    stack: list[tuple[Any, Path]] = [(value, [])]
    seen = 0
    while stack:
        node, path = stack.pop()
        children = _children(node)
        if children is None:
            continue
        seen += 1
        if seen > MAX_NODES or not visit(node, path):
            return
        if len(path) >= MAX_DEPTH:
            continue
        for segment, child in reversed(children):
            if type(child) in _PLAIN or _is_ctxlab_dataclass(child):
                stack.append((child, [*path, segment]))


class Origins:
    """Where each container of a call's arguments sits, noted before the call (learner's side).

    ``which`` is an argument's position, or its keyword's name. The objects are held until
    the report is made, so no id is reused by a new object meanwhile.
    """

    def __init__(self, args: list, kwargs: dict) -> None:
        self.where: dict[int, tuple[int | str, Path]] = {}
        self._held: list[Any] = []
        sources: list[tuple[int | str, Any]] = list(enumerate(args)) + list(kwargs.items())
        for which, arg in sources:
            def note(node: Any, path: Path, which: int | str = which) -> bool:
                if id(node) not in self.where:
                    self.where[id(node)] = (which, path)
                    self._held.append(node)
                return True

            _walk(arg, note)

    def report(self, value: Any) -> list:
        """``[[path in value, which, path in that argument], ...]`` for each container of
        ``value`` that is one of the arguments' own objects."""
        found: list = []
        if not self.where:
            return found

        def visit(node: Any, path: Path) -> bool:
            origin = self.where.get(id(node))
            if origin is not None:
                found.append([path, origin[0], origin[1]])
            return len(found) < MAX_ALIASES

        _walk(value, visit)
        return found


# ---------------------------------------------------------------------- the judge's side


MISSING = object()  # what a path that leads nowhere gives


def _step(node: Any, segment: Any) -> Any:
    """``node``'s child at ``segment``, or ``MISSING``; only containers of the codec's kinds
    are followed, and only by index, key or dataclass field (never another attribute)."""
    kind = type(node)
    if (kind is list or kind is tuple) and type(segment) is int and 0 <= segment < len(node):
        return node[segment]
    if kind is dict and type(segment) is str and segment in node:
        return node[segment]
    if type(segment) is str and _is_ctxlab_dataclass(node) and segment in node.__dataclass_fields__:
        return getattr(node, segment)
    return MISSING


def at(value: Any, path: Any) -> Any:
    """The object at ``path`` in ``value``, or ``MISSING`` when the path does not lead to one."""
    if type(path) is not list:
        return MISSING
    for segment in path:
        value = _step(value, segment)
        if value is MISSING:
            return MISSING
    return value


def _container(value: Any) -> bool:
    return type(value) in (list, dict) or _is_ctxlab_dataclass(value)


def same_data(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` hold the same data, as Python's code can see it: like ``==``,
    but a dict's order counts (``list(d)`` shows it) and so does a type (``1`` is not ``True``).

    >>> same_data({"a": 1, "b": 2}, {"b": 2, "a": 1}), same_data([1], [True]), same_data([{"a": [1]}], [{"a": [1]}])
    (False, False, True)
    """
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return len(a) == len(b) and all(
            ka == kb and same_data(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True))
    if kind is list or kind is tuple:
        return len(a) == len(b) and all(same_data(x, y) for x, y in zip(a, b, strict=True))
    if _is_ctxlab_dataclass(a):
        return all(same_data(getattr(a, name, None), getattr(b, name, None)) for name in a.__dataclass_fields__)
    return a == b


def _update(target: Any, fresh: Any) -> None:
    """Give ``target`` (the judge's object) the content of ``fresh`` (same type), in place."""
    if type(target) is list:
        target[:] = fresh
    elif type(target) is dict:
        target.clear()
        target.update(fresh)
    else:
        for f in dataclasses.fields(target):
            object.__setattr__(target, f.name, getattr(fresh, f.name))


def _replace(value: Any, path: Path, obj: Any) -> Any:
    """``value`` with ``obj`` at ``path``: containers on the way are changed in place, and a
    tuple on the way (which cannot be) is made again with the new item."""
    if not path:
        return obj
    child = _step(value, path[0])
    new = _replace(child, path[1:], obj)
    if new is child:
        return value
    kind = type(value)
    if kind is tuple:
        return value[:path[0]] + (new,) + value[path[0] + 1:]
    if kind is list or kind is dict:
        value[path[0]] = new
    else:
        object.__setattr__(value, path[0], new)
    return value


def well_formed(aliases: Any) -> list:
    """The entries of a reply's alias list that have the right shape (at most MAX_ALIASES)."""
    if type(aliases) is not list:
        return []
    good = []
    for entry in aliases[:MAX_ALIASES]:
        if (type(entry) is list and len(entry) == 3 and type(entry[0]) is list and type(entry[2]) is list
                and type(entry[1]) in (int, str)
                and all(type(s) in (int, str) for s in entry[0]) and all(type(s) in (int, str) for s in entry[2])):
            good.append(entry)
    return good


def restore(fresh: Any, aliases: list, originals: Callable[[int | str, Path], Any]) -> Any:
    """``fresh`` (just decoded) with each reported alias replaced by the judge's own object.

    ``originals(which, path)`` gives the judge's object at that path of that argument as it was
    before the call (or ``MISSING``). Deepest first, so an object brought up to date already
    holds the judge's own children. Returns ``fresh``, or the judge's object when the whole
    value is one.
    """
    for path, which, origin in sorted(aliases, key=lambda entry: -len(entry[0])):
        target = originals(which, origin)
        node = at(fresh, path)
        if target is MISSING or node is MISSING or node is target or type(node) is not type(target):
            continue
        if type(target) is tuple:  # cannot change: taken only when it holds the same data
            if not same_data(node, target):
                continue
        elif not _container(target):
            continue
        elif not same_data(node, target):
            _update(target, node)
        fresh = _replace(fresh, path, target)
    return fresh
