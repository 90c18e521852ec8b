"""Names retired from the public API, kept importable for one release with a warning.

A module lists its retired names as ``{old name: (what it returns, advice)}`` (what it returns
is a name of the module, or ``"package.module:name"`` imported when read) and defines
``__getattr__ = retired(__name__, table, globals())``: reading an old name then warns with a
``DeprecationWarning`` that names the replacement, and returns what it used to.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def retired(module: str, table: Mapping[str, tuple[str, str]], namespace: Mapping[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that answers the retired names of ``table`` with a warning.

    >>> getattr_ = retired("demo", {"old": ("new", "use demo.new")}, {"new": 42})
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = getattr_("old")
    >>> value, str(caught[0].message)
    (42, 'demo.old is deprecated and will be removed in the next release: use demo.new')
    """

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target, advice = table[name]
        warnings.warn(f"{module}.{name} is deprecated and will be removed in the next release: {advice}",
                      DeprecationWarning, stacklevel=2)
        if ":" in target:  # "package.module:name", imported only when the old name is read
            home, _, attribute = target.partition(":")
            return getattr(importlib.import_module(home), attribute)
        return namespace[target]

    return __getattr__


def moved(module: str, table: Mapping[str, str], fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names that moved: ``table`` maps each old name to its new
    home, ``"package.module:name"``. Reading an old name warns with a ``DeprecationWarning``
    naming the new home and returns the same object; other names go to ``fallback``.

    >>> getattr_ = moved("demo", {"dumps": "json:dumps"})
    >>> import json, warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     found = getattr_("dumps")
    >>> found is json.dumps, str(caught[0].message)
    (True, 'demo.dumps moved to json.dumps; demo.dumps will be removed in the next release')
    """

    def __getattr__(name: str) -> Any:
        if name not in table:
            if fallback is not None:
                return fallback(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, _, attribute = table[name].partition(":")
        note = f" (import {home} first)" if home.endswith(".course") else ""
        warnings.warn(f"{module}.{name} moved to {home}.{attribute}{note}; {module}.{name} will be "
                      "removed in the next release", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), attribute)

    return __getattr__
