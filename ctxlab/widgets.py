"""Moved to :mod:`ctxlab.course.widgets`: this path still imports, for one release, with a warning."""

import importlib
import sys
import warnings

warnings.warn("ctxlab.widgets moved to ctxlab.course.widgets (the course's part of ctxlab); "
              "ctxlab.widgets will be removed in the next release", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ctxlab.course.widgets")
