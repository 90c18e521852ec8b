"""Learners' executed notebooks as the formgrader renders them: no script of theirs may run.

Each hostile answer is rendered by the formgrader's own exporter (nbgrader's ``formgrade``
template), before and after :func:`autograder.defang.defang`; the page is parsed and every
place a browser runs script is searched for the payload's marker.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import nbformat
import pytest
from traitlets.config import Config

from autograder.defang import defang

MARK = "pwn"
HOSTILE_MARKDOWN = {
    "img onerror": f'My answer <img src=x onerror="{MARK}()">',
    "script tag": f"<script>{MARK}()</script>",
    "svg onload": f"<svg onload={MARK}()></svg>",
    "iframe srcdoc": f"<iframe srcdoc='<script>{MARK}()</script>'></iframe>",
    "javascript link": f"[click](javascript:{MARK}())",
    "javascript link, spaced": f"[click]( JaVaScRiPt:{MARK}())",
    "html javascript href": f'<a href="javascript:{MARK}()">x</a>',
    "entity-encoded scheme": f'<a href="jav&#x61;script:{MARK}()">x</a>',
    "style with expression": f'<div style="background:url(javascript:{MARK}())">x</div>',
    "details ontoggle": f"<details open ontoggle={MARK}()>x</details>",
    "reference link": f"[click][1]\n\n[1]: javascript:{MARK}()",
    "reference link, entity-encoded": f"[click][a]\n\n  [a]: <jav&#x61;script:{MARK}()>",
    "link with a title": f'[click](javascript:{MARK}() "title")',
    "image link": f"![x](javascript:{MARK}())",
}
HOSTILE_OUTPUTS = {
    "html script": {"text/html": f"<b>ok</b><script>{MARK}()</script>"},
    "html onerror": {"text/html": f"<img src=y onerror='{MARK}()'>"},
    "javascript": {"application/javascript": f"{MARK}()"},
    "markdown onerror": {"text/markdown": f"<img src=z onerror='{MARK}()'>"},
    "svg script": {"image/svg+xml": f"<svg><script>{MARK}()</script></svg>"},
}


class _Runnable(HTMLParser):
    """Collects what a browser would run: script bodies, on* handlers, javascript: URLs."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or value.replace(" ", "").startswith("javascript:") or (
                    name in ("srcdoc", "style") and MARK in value):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and MARK in data:
            self.found.append(f"<script>{data.strip()[:60]}")


def render(notebook: dict) -> str:
    """``notebook`` as the formgrader's grading page shows it."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"base_url": "", "notebook_id": "budget", "submission_id": "s", "assignment_id": "01-budget",
                 "index": 0, "total": 1, "student": "ana", "last_name": None, "first_name": None,
                 "mathjax_url": "", "notebook_path": "budget.ipynb", "nbgrader": {}}
    html, _ = HTMLExporter(config=config).from_notebook_node(nbformat.from_dict(notebook), resources=resources)
    return html


def runnable(notebook: dict) -> list[str]:
    parser = _Runnable()
    parser.feed(render(notebook))
    return [found for found in parser.found if MARK in found]


def notebook_with(markdown: str | None = None, output: dict | None = None) -> dict:
    nb = nbformat.v4.new_notebook()
    if markdown is not None:
        nb.cells.append(nbformat.v4.new_markdown_cell(markdown))
    if output is not None:
        code = nbformat.v4.new_code_cell("show()")
        code.outputs = [nbformat.v4.new_output("display_data", data=output)]
        nb.cells.append(code)
    return json.loads(json.dumps(nb))


@pytest.mark.parametrize("name", sorted(HOSTILE_MARKDOWN))
def test_a_markdown_answer_runs_no_script_on_the_grading_page(name):
    notebook = notebook_with(markdown=HOSTILE_MARKDOWN[name])
    assert not runnable(defang(notebook)), runnable(defang(notebook))


@pytest.mark.parametrize("name", sorted(HOSTILE_OUTPUTS))
def test_an_output_runs_no_script_on_the_grading_page(name):
    notebook = notebook_with(output=HOSTILE_OUTPUTS[name])
    assert not runnable(defang(notebook)), runnable(defang(notebook))


def test_the_formgrader_alone_would_run_them():
    """The premise, and a check on the check: without defang, the grading page runs every
    Markdown payload and the HTML ones among the outputs."""
    missed = [name for name, text in HOSTILE_MARKDOWN.items() if not runnable(notebook_with(markdown=text))]
    missed += [name for name in ("html script", "html onerror", "markdown onerror")
               if not runnable(notebook_with(output=HOSTILE_OUTPUTS[name]))]
    assert not missed, f"these payloads do not run even without defang, so their tests prove nothing: {missed}"


def test_an_ordinary_answer_reads_the_same():
    text = ("**Why** the reply is reserved: `max_tokens` < window, see [the docs](https://platform.openai.com/docs)"
            " and [notes](notes.md).\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    page = render(defang(notebook_with(markdown=text, output={"text/plain": "34", "image/png": "iVBORw0KGgo="})))
    assert '<a href="https://platform.openai.com/docs">the docs</a>' in page and 'href="notes.md"' in page
    assert "<strong>Why</strong>" in page and "<table>" in page and "image/png" in page
    assert "not shown when grading" not in page


def test_saved_widget_state_is_not_rendered_by_the_grading_page():
    """Why defang leaves widgets alone: the formgrader's page does not load the widget manager,
    so an HTML widget's saved value never becomes markup there."""
    notebook = notebook_with(output={"application/vnd.jupyter.widget-view+json": {"model_id": "m1", "version_major": 2}})
    notebook["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"m1": {
        "model_name": "HTMLModel", "state": {"value": f"<img src=x onerror={MARK}()>"}}}, "version_major": 2}}
    page = render(notebook)
    assert "widget-state" not in page and MARK not in page and "html-manager" not in page


def test_a_removed_output_says_so():
    safe = defang(notebook_with(output={"application/javascript": "x()"}))
    assert safe["cells"][0]["outputs"][0]["data"] == {"text/plain": "(not shown when grading: application/javascript output)"}
