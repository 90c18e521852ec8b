"""Names retired from the public API, kept importable for one release with a warning.

A module lists its retired names as ``{old name: (what it returns, advice)}`` and defines
``__getattr__ = retired(__name__, table, globals())``: reading an old name then warns with a
``DeprecationWarning`` that names the replacement, and returns what it used to.
"""

from __future__ import annotations

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
        return namespace[target]

    return __getattr__
