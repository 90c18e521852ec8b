"""The numbers a lesson's prose quotes are the numbers its cells compute.

A number in a lesson's text that states a result carries a marker right after it, naming the
expression that computes it::

    from 9<!-- figure: rolled[0][0] --> lines at the first compaction

The rendered markdown shows only the number. The slow test runs the solution notebook and, once the
code cell after the text has run (so a figure may come from the cell above the text or the one
below it), evaluates every expression in the kernel and compares it with the number as written,
to as many decimals as the text shows. A lesson's prose and its
outputs cannot drift apart without a test failing.

A number that is given rather than measured (a quiz's scenario, a date in a story) is marked
``<!-- given: why -->``. For the lessons in :data:`COVERED`, every number in the prose must be one
of these, or something whose truth is checked elsewhere or needs no run: a heading's or an
exercise's points, the lesson's stated time, a numbered list, a reference to a part of the course
(lesson 02, Exercise 4, section 9, Q3), a model's name (gpt-4.1), the date a source was read
(December 2026), or a setting the lesson's own
code uses (8,000 in the prose, ``8_000`` in a code cell).
"""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from nbclient import NotebookClient
from support.pipeline import REPO, offline_env

LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and any(p.glob("*.ipynb")))

COVERED = frozenset(LESSONS)
"""Lessons whose every quoted number is accounted for. Each later lesson joins when its numbers
are marked; the list only grows."""

NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
FIGURE = re.compile(rf"(?P<number>{NUMBER})(?P<unit>%|x|st|nd|rd|th)?<!-- figure: (?P<expr>.+?) -->")
GIVEN = re.compile(rf"(?P<number>{NUMBER})(?P<unit>[%x]?)<!-- given: (?P<why>.+?) -->")
MARKER = re.compile(r"<!--(?P<body>.*?)-->", re.S)
REFERENCE = re.compile(
    r"(?:\b(?:[Ll]essons?|[Ee]xercises?|[Ss]ections?|Q|[Qq]uestions?)\s+(?:\d+(?:,\s*|\s+and\s+|\s+or\s+))*)$")
MODEL = re.compile(r"\b(?:gpt|o)-?\d[\w.-]*")
DATE = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b")
SENTINEL = "FIGURES:"


def _notebook(lesson: str):
    (path,) = sorted((REPO / "solutions" / lesson).glob("*.ipynb"))
    return path, nbformat.read(path, as_version=4)


def _figures(source: str) -> list[re.Match]:
    return list(FIGURE.finditer(source))


def _as_number(text: str) -> float:
    return float(text.replace(",", ""))


def _literals(notebook) -> set[float]:
    """Every number written as a literal in the lesson's code cells (``8_000`` is 8000)."""
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    return {float(n.replace("_", "")) for n in re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d+)?", code)}


def _unaccounted(lesson: str) -> list[str]:
    """The numbers of a lesson's prose that are neither marked nor of a kind checked elsewhere."""
    _, notebook = _notebook(lesson)
    literals = _literals(notebook)
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        text = FIGURE.sub("", cell.source)
        text = GIVEN.sub("", text)
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        text = re.sub(r"`[^`\n]*`", "", text)
        text = re.sub(r"\]\([^)]*\)", "]", text)
        text = MODEL.sub("", text)
        text = DATE.sub("", text)  # when a source was read
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue  # a heading: a section's number, an exercise's points (tests/test_lessons.py)
            line = re.sub(r"^\s*\d+\.\s", "", line)  # a numbered list
            line = re.sub(r"\*\*Time:\*\* about \d+ minutes", "", line)
            line = re.sub(r"\*\*Points:\*\* \d+", "", line)  # checked below
            for match in re.finditer(rf"(?<![\w.,])(?:{NUMBER})(?![\w])", line):
                if REFERENCE.search(line[: match.start()]) or (_as_number(match.group()) >= 100 and _as_number(match.group()) in literals):
                    continue
                found.append(f"cell {index}: {match.group()!r} in {line.strip()[:90]!r}")
    return found


@pytest.mark.parametrize("lesson", LESSONS)
def test_markers_are_well_formed(lesson):
    """Every HTML comment in the prose is a figure or a given, written right after its number."""
    _, notebook = _notebook(lesson)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        known = {m.start() + m.group().index("<!--") for pattern in (FIGURE, GIVEN) for m in pattern.finditer(cell.source)}
        for marker in MARKER.finditer(cell.source):
            assert marker.start() in known, (
                f"{lesson} cell {index}: the marker {marker.group()!r} must follow its number directly and read "
                "'<!-- figure: EXPRESSION -->' or '<!-- given: WHY -->'")
        for figure in FIGURE.finditer(cell.source):
            compile(figure.group("expr"), "<figure>", "eval")


@pytest.mark.parametrize("lesson", sorted(COVERED))
def test_every_number_in_the_prose_is_accounted_for(lesson):
    unaccounted = _unaccounted(lesson)
    assert not unaccounted, (
        f"{lesson}: mark each number the prose quotes as '<!-- figure: EXPRESSION -->' (computed by the cells "
        "above it) or '<!-- given: WHY -->':\n" + "\n".join(unaccounted))


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_stated_points_are_the_points_the_tests_award(lesson):
    _, notebook = _notebook(lesson)
    awarded = sum(cell.metadata.get("nbgrader", {}).get("points", 0) for cell in notebook.cells
                  if cell.metadata.get("nbgrader", {}).get("grade"))
    stated = [float(n) for cell in notebook.cells if cell.cell_type == "markdown"
              for n in re.findall(r"\*\*Points:\*\* (\d+(?:\.\d+)?)", cell.source)]
    assert stated == [awarded], f"{lesson}: the introduction states {stated} points, the tests award {awarded}"


def test_a_figure_that_drifts_fails():
    """The comparison itself: the number as written against the value, at the text's precision."""
    assert _matches("34", "", 34) and _matches("44,611", "", 44611) and _matches("4.2", "%", 4.21)
    assert not _matches("34", "", 35) and not _matches("4.2", "%", 4.26) and not _matches("3", "", True)
    assert not _matches("3", "", "3")


def _evaluating(expressions: list[str]):
    """A code cell that prints, after the sentinel and as JSON, each expression's value: a number as
    it is, anything else as its repr, an error as what went wrong."""
    return nbformat.v4.new_code_cell(
        "def _figure(expression):\n"
        "    try:\n"
        "        value = eval(expression)\n"
        "    except Exception as err:\n"
        "        return f'{type(err).__name__}: {err}'\n"
        "    return value if isinstance(value, (int, float)) else repr(value)\n"
        f"print({SENTINEL!r} + __import__('json').dumps([_figure(e) for e in {expressions!r}]))")


def _matches(written: str, unit: str, value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    decimals = len(written.split(".")[1]) if "." in written else 0
    return round(float(value), decimals) == _as_number(written)


@pytest.mark.slow
@pytest.mark.parametrize("lesson", [lesson for lesson in LESSONS
                                    if any(_figures(c.source) for c in _notebook(lesson)[1].cells if c.cell_type == "markdown")])
def test_each_figure_is_what_its_cell_computes(lesson, monkeypatch):
    for key, value in offline_env().items():
        monkeypatch.setenv(key, value)
    path, notebook = _notebook(lesson)
    cells, checks, waiting = [], [], []
    for cell in notebook.cells:
        cells.append(cell)
        if cell.cell_type == "markdown":
            waiting += _figures(cell.source)
        if cell.cell_type == "code" and waiting or cell is notebook.cells[-1] and waiting:
            checks.append((len(cells), waiting))
            cells.append(_evaluating([f.group("expr") for f in waiting]))
            waiting = []
    notebook.cells = cells
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    wrong = []
    for position, figures in checks:
        printed = "".join(o.get("text", "") for o in notebook.cells[position].outputs if o.get("output_type") == "stream")
        values = json.loads(printed.split(SENTINEL, 1)[1])
        for figure, value in zip(figures, values, strict=True):
            if not _matches(figure.group("number"), figure.group("unit") or "", value):
                wrong.append(f"the text says {figure.group('number')}{figure.group('unit') or ''} where "
                             f"{figure.group('expr')} is {value!r}")
    assert not wrong, f"{lesson}: figures in the prose differ from what the cells compute:\n" + "\n".join(wrong)
