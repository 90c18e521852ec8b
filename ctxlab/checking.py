"""Moved to :mod:`ctxlab.course.checking`: this path still imports, for one release, with a warning."""

import importlib
import sys
import warnings

warnings.warn("ctxlab.checking moved to ctxlab.course.checking (the course's part of ctxlab); "
              "ctxlab.checking will be removed in the next release", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ctxlab.course.checking")
