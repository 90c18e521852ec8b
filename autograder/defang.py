"""Learners' executed notebooks, made safe to open in an instructor's browser.

The formgrader renders each executed notebook (``autograded/``) as a web page served by the
instructor's own server. It passes the HTML in Markdown cells through as written, and HTML
outputs too: nbconvert's ``sanitize_html`` leaves Markdown cells alone. So a learner who writes
``<img src=x onerror="...">`` in a Markdown answer, or displays such HTML from code, would run
script in the instructor's session when they open the grading page. That script could open a
terminal, read the solutions and change grades with the instructor's rights.

:func:`defang` is applied to every executed notebook before the grader writes it where the
formgrader reads it:

* Markdown and raw cells and Markdown outputs keep only harmless tags (emphasis, lists, code,
  tables, headings; links to http, https and mailto only). Any other tag is shown as text, so
  the instructor sees what the learner wrote. Links written in Markdown to other schemes
  (``javascript:``) lose their target.
* HTML outputs are cleaned the same way. JavaScript and SVG outputs, which can carry script,
  are replaced by a line saying what was removed. (Saved widget state is not a way in: the
  formgrader's page does not load the widget manager.)

Scores are not affected: grading has already happened, on the notebook as submitted.

>>> cell = {"cell_type": "markdown", "metadata": {}, "source": 'Hi <img src=x onerror="steal()">'}
>>> defang({"cells": [cell]})["cells"][0]["source"]
'Hi &lt;img src=x onerror="steal()"&gt;'
"""

from __future__ import annotations

import copy
import re
from typing import Any

import bleach

__all__ = ["defang", "clean_html"]

TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td",
    "th", "thead", "tr", "ul",
})
ATTRIBUTES = {"a": ["href", "title"], "td": ["align"], "th": ["align"], "abbr": ["title"]}
PROTOCOLS = frozenset({"http", "https", "mailto"})
RISKY_OUTPUTS = ("application/javascript", "text/javascript", "image/svg+xml")
_MARKDOWN_LINK = re.compile(r"(\]\(\s*<?)([^)\s>]*)")  # the target of [text](target)
_REFERENCE = re.compile(r"(^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*<?)([^\s>]*)", re.MULTILINE)  # [label]: target
_SAFE_TARGET = re.compile(r"^(?:https?:|mailto:|#|/|\.{0,2}/|[\w.-]+(?:/|$|#))", re.IGNORECASE)


def clean_html(text: str) -> str:
    """``text`` with only harmless tags and attributes left as markup; any other tag escaped."""
    return bleach.clean(text, tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS, strip=False)


def _clean_markdown(text: str) -> str:
    """Markdown ``text`` cleaned as HTML, and Markdown link targets (inline or reference) outside
    http(s), mailto and relative paths replaced by ``#``."""
    def target(match: re.Match) -> str:
        return match.group(1) + (match.group(2) if _SAFE_TARGET.match(match.group(2)) else "#")

    return _REFERENCE.sub(target, _MARKDOWN_LINK.sub(target, clean_html(text)))


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


def defang(notebook: dict) -> dict:
    """A copy of ``notebook`` (nbformat 4, as a dict) that runs no script of the learner's when
    rendered as HTML: see the module's description."""
    safe = copy.deepcopy(notebook)
    for cell in safe.get("cells", []):
        if cell.get("cell_type") in ("markdown", "raw"):
            cell["source"] = _clean_markdown(_text(cell.get("source")))
        for output in cell.get("outputs", []) or []:
            data = output.get("data")
            if not isinstance(data, dict):
                continue
            removed = [kind for kind in RISKY_OUTPUTS if data.pop(kind, None) is not None]
            if "text/html" in data:
                data["text/html"] = clean_html(_text(data["text/html"]))
            if "text/markdown" in data:
                data["text/markdown"] = _clean_markdown(_text(data["text/markdown"]))
            if removed and not data:
                data["text/plain"] = f"(not shown when grading: {', '.join(removed)} output)"
    return safe
