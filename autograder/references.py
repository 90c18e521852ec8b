"""What the judge must know of a lesson: the learner's answer names and ctxlab's references.

A lesson's answer cells (nbgrader ``solution`` cells) define the names tests use: functions,
classes and variables at the top level (:func:`answer_names`). A lesson declares, in its
solution notebook's metadata, which of ctxlab's functions are the answer to each exercise:

    "metadata": {"ctxlab": {"references": {"fit": ["ctxlab.fit", "ctxlab.history.GrowingHistory.fit"]}}}

While a test that uses ``fit`` runs, those functions are switched off in the learner's kernel
(:mod:`autograder.judging.agent`). :func:`resolve` turns a dotted name into what the agent
looks for: the function's file relative to the ctxlab package and its qualified name; a class
stands for every method it defines.

>>> answer_names(["def fit(messages):\\n    pass\\nLIMIT = 3", "q1 = 'c'", "import json"])
['LIMIT', 'fit', 'q1']
>>> resolve("ctxlab.fit")[0][1:]
['fit', 'ctxlab.fit']
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import os
import re

__all__ = ["answer_names", "resolve", "forbid_map", "ReferenceSpecError"]

MARKER = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$", re.M)


class ReferenceSpecError(ValueError):
    """A lesson names a reference that does not exist; the message says which and where."""


def answer_names(sources: list[str]) -> list[str]:
    """Top-level names that the answer cells ``sources`` define, sorted."""
    names: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(MARKER.sub("", source))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name):
                            names.add(sub.id)
    return sorted(names)


def _ctxlab_root() -> str:
    import ctxlab

    return os.path.dirname(os.path.realpath(ctxlab.__file__))


def _functions_of(value) -> list:
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if f is not None]
    if inspect.isfunction(value):
        return [value]
    if inspect.isclass(value):
        found = []
        for member in vars(value).values():
            found += [f for f in _functions_of(member) if not inspect.isclass(f)]
        return found
    return []


def resolve(dotted: str) -> list[list[str]]:
    """``[[file relative to ctxlab, qualified name, dotted], ...]`` for the functions ``dotted`` names."""
    parts = dotted.split(".")
    if parts[0] != "ctxlab" or len(parts) < 2:
        raise ReferenceSpecError(f"{dotted!r} is not a name in ctxlab (write it as ctxlab.NAME)")
    value = importlib.import_module("ctxlab")
    for index, part in enumerate(parts[1:], start=2):
        if not hasattr(value, part) and inspect.ismodule(value):
            with contextlib.suppress(ImportError):  # a subpackage not imported yet (ctxlab.course)
                importlib.import_module(".".join(parts[:index]))
        if not hasattr(value, part):
            raise ReferenceSpecError(f"{dotted!r} does not exist: ctxlab has no {part!r} there")
        value = getattr(value, part)
    root = _ctxlab_root()
    targets = []
    for function in _functions_of(value):
        path = os.path.realpath(function.__code__.co_filename)
        if path.startswith(root + os.sep):
            targets.append([os.path.relpath(path, root), function.__code__.co_qualname, dotted])
    if not targets:
        raise ReferenceSpecError(f"{dotted!r} is not a function or class defined in ctxlab")
    return targets


def forbid_map(references: dict) -> dict[str, list[list[str]]]:
    """The lesson's ``references`` metadata resolved: answer name -> targets to switch off."""
    if not isinstance(references, dict):
        raise ReferenceSpecError("metadata.ctxlab.references must map answer names to lists of ctxlab names")
    resolved = {}
    for name, dotted_names in references.items():
        if not isinstance(dotted_names, list) or not all(isinstance(d, str) for d in dotted_names):
            raise ReferenceSpecError(f"metadata.ctxlab.references[{name!r}] must be a list of names like 'ctxlab.fit'")
        resolved[name] = [target for dotted in dotted_names for target in resolve(dotted)]
    return resolved
