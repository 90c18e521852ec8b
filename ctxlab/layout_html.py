"""Moved to :mod:`ctxlab.course.layout_html`: this path still imports, for one release, with a warning."""

import importlib
import sys
import warnings

warnings.warn("ctxlab.layout_html moved to ctxlab.course.layout_html (the course's part of ctxlab); "
              "ctxlab.layout_html will be removed in the next release", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ctxlab.course.layout_html")
