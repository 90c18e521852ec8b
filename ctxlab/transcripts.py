"""Moved to :mod:`ctxlab.course.transcripts`: this path still imports, for one release, with a warning."""

import importlib
import sys
import warnings

warnings.warn("ctxlab.transcripts moved to ctxlab.course.transcripts (the course's part of ctxlab); "
              "ctxlab.transcripts will be removed in the next release", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("ctxlab.course.transcripts")
