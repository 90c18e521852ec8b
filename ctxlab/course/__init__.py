"""The course's part of ctxlab: what the lessons need and an agent does not.

Its modules: ``checking`` (a lesson's visible tests), ``explaining`` (why a concept check's
answer is right, once yours is), ``environment`` (the first cell of every
lesson), ``transcripts`` (the course's generated runs, and the recorded real runs beside the clone), ``layout`` and
``layout_html`` (what the window holds lap by lap, and its picture), ``runs`` (a transcript
replayed by name), ``widgets`` (the
context-layout widget) and ``plots`` (the lessons' figures).

The library (``import ctxlab``) is what an agent builder adopts. This package holds the
machinery of Context Window Lab around it: the checks a learner runs as they go, the course's
generated transcripts, the window layouts the lessons draw, the environment check, and the
scripted client that plays a model's replies in tests. It imports the library; the library never
imports it.

>>> import ctxlab.course
>>> messages = ctxlab.course.load_transcript("refund")
>>> ctxlab.course.strip_course_keys(messages)[0]["role"]
'system'
"""

from ..llm import ScriptedClient
from ..messages import strip_course_keys
from ..tokens import COURSE_KEYS
from .checking import check, check_all, yours_or_reference
from .environment import check_environment
from .explaining import explain
from .layout import TranscriptLayout, WindowLayout, layout_window
from .layout_html import render_layout_html
from .runs import replay
from .transcripts import load_tools, load_transcript, transcript_info, transcript_names

__all__ = [
    # checking answers as a learner goes (a lesson's visible tests)
    "check",
    "check_all",
    "yours_or_reference",
    "explain",
    "check_environment",
    # the course's transcripts, and the keys they carry that are never sent or counted
    "transcript_names",
    "transcript_info",
    "load_transcript",
    "load_tools",
    "replay",
    "COURSE_KEYS",
    "strip_course_keys",
    # a model's replies played from a script
    "ScriptedClient",
    # the window as the lessons' widget draws it (the widget itself is ctxlab.course.widgets)
    "TranscriptLayout",
    "WindowLayout",
    "layout_window",
    "render_layout_html",
]
