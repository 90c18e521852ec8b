"""Exceptions across the channel: raised on one side, re-raised as this side's own class.

An exception travels as its type's name, its classes (its MRO) and its message. A class in the
MRO travels by its name only when it *is* one of the classes both sides know (Python's built-in
exceptions, ctxlab's errors, the judge's own), checked by identity on the sending side
(:func:`mro_names`); any other class travels as ``~module.qualname``, which never matches. The
receiving side raises an instance of the first class in that MRO it knows. So ``except
ctxlab.BudgetError`` in a test catches the learner's ``ctxlab.BudgetError`` (or a subclass of it
the learner wrote), but not a class of the learner's own that is merely *called* ``BudgetError``;
and a learner's ``NotImplementedError`` is a ``NotImplementedError`` in the judge. A type known
by no name becomes :class:`LearnerError`.

>>> err = rebuild({"type": "BudgetTooSmall", "mro": ["BudgetTooSmall", "ValueError", "Exception"],
...                "message": "need 900 tokens"})
>>> type(err).__name__, str(err)
('ValueError', 'need 900 tokens')
"""

from __future__ import annotations

import builtins

__all__ = ["rebuild", "mro_names", "known_classes", "LearnerError", "ReferenceDisabled"]

_NOT_REBUILT = {"BaseException", "Exception", "object"}


class LearnerError(Exception):
    """An exception of a type the judge does not know, raised by the learner's code."""


class ReferenceDisabled(RuntimeError):
    """The learner's code called ctxlab's own answer to the exercise under test."""


def known_classes() -> dict[str, type]:
    """Exception classes this side re-raises by name: builtins, ctxlab's errors, the judge's own."""
    classes = {name: value for name, value in vars(builtins).items()
               if isinstance(value, type) and issubclass(value, BaseException)}
    for name in ("SystemExit", "KeyboardInterrupt", "GeneratorExit"):
        classes.pop(name, None)  # never re-raised as themselves: they would stop the process
    try:
        from ctxlab import errors as ctxlab_errors

        classes.update({name: value for name, value in vars(ctxlab_errors).items()
                        if isinstance(value, type) and issubclass(value, BaseException)})
    except ImportError:
        pass
    classes.update(LearnerError=LearnerError, ReferenceDisabled=ReferenceDisabled)
    return classes


_KNOWN: dict[str, type] = {}


def mro_names(cls: type) -> list[str]:
    """The names ``cls``'s MRO travels as: a known class by its name, any other as ``~module.qualname``.

    >>> class BudgetError(ValueError): pass
    >>> mro_names(BudgetError)[:2]
    ['~autograder.judging.errors.BudgetError', 'ValueError']
    """
    if not _KNOWN:
        _KNOWN.update(known_classes())
    names = []
    for c in cls.__mro__[:30]:
        name = getattr(c, "__name__", "")
        if type(name) is str and _KNOWN.get(name) is c:
            names.append(name)
        else:
            module, qualname = getattr(c, "__module__", "?"), getattr(c, "__qualname__", name)
            names.append(f"~{module}.{qualname}"[:200])
    return names


def rebuild(data: dict) -> BaseException:
    """This side's exception for the encoded exception ``data``."""
    if not _KNOWN:
        _KNOWN.update(known_classes())
    name = str(data.get("type") or "Error")[:200]
    message = str(data.get("message") or "")[:4000]
    mro = data.get("mro") if type(data.get("mro")) is list else [name]
    for candidate in [str(n) for n in mro[:30]]:
        cls = _KNOWN.get(candidate)
        if cls is None or candidate in _NOT_REBUILT:
            continue
        try:
            err = cls(message)
        except Exception:  # noqa: BLE001 - some classes need other arguments
            continue
        if candidate != name:
            err.learner_type = name  # the learner's own class, for reports
        return err
    return LearnerError(f"{name}: {message}" if message else name)
