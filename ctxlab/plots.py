"""Moved to :mod:`ctxlab.course.plots`: this path still imports, for one release, with a warning."""

import importlib
import sys
import warnings

warnings.warn("ctxlab.plots moved to ctxlab.course.plots (the course's part of ctxlab); "
              "ctxlab.plots will be removed in the next release", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ctxlab.course.plots")
