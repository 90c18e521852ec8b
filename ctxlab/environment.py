"""Moved to :mod:`ctxlab.course.environment`: this path still imports, for one release, with a warning."""

import importlib
import sys
import warnings

warnings.warn("ctxlab.environment moved to ctxlab.course.environment (the course's part of ctxlab); "
              "ctxlab.environment will be removed in the next release", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ctxlab.course.environment")
