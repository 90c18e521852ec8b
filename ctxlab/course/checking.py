"""Check your answers as you go: run a lesson's visible tests in your own notebook.

``ctxlab.course.checking.check("count-chat")`` runs the visible tests of one exercise, ``ctxlab.course.checking.check_all()``
those of the whole lesson. Both read the test cells from the lesson's notebook file (test cells
are locked, so the saved file holds the real ones), run them against what your notebook has
defined so far, and say for each test whether it passed, with the reason first when it did not.
Hidden tests are not in your copy of the lesson: they run when the notebook is graded, so
passing every visible test is a good sign, not yet full marks.

An exercise is an answer cell (an nbgrader solution cell) and the test cells after it. It is
named by its answer cell's id (``"count-chat"``), by its number (``1`` for "Exercise 1"), or by
the start of its tests' ids (``"budget"`` for ``budget-visible``).

Nothing here stops a notebook: a failed test, an answer that raises, even a missing notebook
file, are reported, never raised. This module imports nothing from Jupyter until a test runs.

>>> import json, tempfile, pathlib
>>> cells = [
...     {"cell_type": "markdown", "metadata": {}, "source": "### Exercise 1 · Double it (1 point)"},
...     {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade": False,
...      "grade_id": "double"}}, "source": "def double(x): ..."},
...     {"cell_type": "code", "metadata": {"nbgrader": {"solution": False, "grade": True,
...      "grade_id": "double-visible", "points": 1}},
...      "source": "# Visible: 2 doubled\\nassert double(2) == 4, 'expected 4'"}]
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "lesson.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}}))
>>> report = check("double", notebook=folder / "lesson.ipynb", namespace={"double": lambda x: 2 * x})
>>> report.passed, report.points, report.max_points
(True, 1.0, 1.0)
"""

from __future__ import annotations

import ast
import contextlib
import functools
import html
import io
import json
import linecache
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "check", "check_all", "yours_or_reference", "ExerciseReport", "LessonReport", "CheckResult", "lesson_exercises",
    "defining_cells",
]

# Spelt in two parts so that this file holds no grading marker (the learner-only export refuses one).
_MARKER = "HIDDEN " + "TESTS"
HIDDEN_MARK = "### BEGIN " + _MARKER
_HEADING = re.compile(r"^#+\s*(Exercise\s+(\d+)\b.*?)\s*(\(\d+(?:\.\d+)? points?\))?\s*$", re.IGNORECASE)
_TEST_FILE = "<visible test {}>"
WIDTH = 96  # characters per line of a report: a notebook's output wraps longer lines mid-word


# -- reading the lesson ---------------------------------------------------------------------


@dataclass(frozen=True)
class GradeCell:
    """One test cell of the lesson, as saved in the notebook file."""

    grade_id: str
    points: float
    source: str
    hidden: bool

    @property
    def purpose(self) -> str:
        """The first line of the cell's docstring: what the test checks."""
        try:
            doc = ast.get_docstring(ast.parse(self.source))
        except SyntaxError:
            doc = None
        return (doc or "").strip().splitlines()[0] if doc else ""


@dataclass
class Exercise:
    """An exercise: its answer cells and the test cells that follow them."""

    answers: list[str]
    title: str
    numbers: list[int]  # one answer cell may serve several exercises (3 and 4 of lesson 01)
    tests: list[GradeCell] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The id of its first answer cell without a trailing ``-answer`` (``count-chat``, ``q1``)."""
        return re.sub(r"-answer$", "", self.answers[0])

    @property
    def visible(self) -> list[GradeCell]:
        return [t for t in self.tests if not t.hidden]


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")


_HIDDEN_BLOCK = re.compile(rf"^[ \t]*### BEGIN {_MARKER}[ \t]*$.*?^[ \t]*### END {_MARKER}[ \t]*$\n?", re.M | re.S)


def _visible_part(source: str) -> str:
    """A test cell as a learner's copy of the lesson has it: without its hidden block."""
    return _HIDDEN_BLOCK.sub("", source) if HIDDEN_MARK in source else source


def _is_hidden(source: str) -> bool:
    """A hidden test: nothing but its docstring is left once its hidden block is taken out
    (a learner's copy has it taken out already)."""
    try:
        body = ast.parse(_visible_part(source)).body
    except SyntaxError:
        return False
    return all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in body)


def lesson_exercises(notebook: Mapping[str, Any]) -> list[Exercise]:
    """The exercises of a notebook (its JSON as a dict), in order, each with its test cells.

    >>> nb = {"cells": [
    ...     {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade_id": "q1-answer"}}, "source": ""},
    ...     {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "grade_id": "q1-check", "points": 1}},
    ...      "source": "'Hidden: the answer.'"}]}
    >>> [(e.name, len(e.tests), len(e.visible)) for e in lesson_exercises(nb)]
    [('q1', 1, 0)]
    """
    exercises: list[Exercise] = []
    headings: list[tuple[str, int]] = []  # the exercise headings since the last answer cell
    new_section = False
    for cell in notebook.get("cells", []):
        source = _text(cell.get("source"))
        if cell.get("cell_type") == "markdown":
            for line in source.splitlines():
                match = _HEADING.match(line.strip())
                if match:
                    headings.append((match.group(1).strip(), int(match.group(2))))
                elif re.match(r"#{1,2}\s", line):  # a new section: what follows is no part of the last exercise
                    new_section = True
            continue
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        grade_id = meta.get("grade_id")
        if not grade_id or cell.get("cell_type") != "code":
            continue
        if meta.get("solution") and not meta.get("grade"):
            if exercises and not exercises[-1].tests:  # an exercise with several answer cells
                exercises[-1].answers.append(grade_id)
                continue
            name = re.sub(r"-answer$", "", grade_id)
            if headings:
                exercises.append(Exercise([grade_id], " + ".join(h for h, _ in headings), [n for _, n in headings]))
            elif exercises and exercises[-1].numbers and not new_section:  # a second answer of the same exercise
                last = exercises[-1]
                exercises.append(Exercise([grade_id], f"{last.title.split(' (')[0]} ({name})", list(last.numbers)))
            else:
                exercises.append(Exercise([grade_id], name, []))
            headings, new_section = [], False
        elif meta.get("grade") and not meta.get("solution") and exercises:
            exercises[-1].tests.append(
                GradeCell(grade_id, float(meta.get("points") or 0), _visible_part(source), _is_hidden(source))
            )
    for exercise in exercises:  # a concept check has no heading: its test says what it is
        if not exercise.numbers and exercise.tests:
            purpose = exercise.tests[0].purpose.split(":")[0]
            if purpose and not purpose.lower().startswith(("hidden", "visible")):
                exercise.title = purpose
    return [e for e in exercises if e.tests]


def _bound_names(statements: list[ast.stmt]) -> list[str]:
    """The names a cell's top-level statements bind (definitions, assignments, imports, loops)."""
    names: list[str] = []
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            targets = node.targets if isinstance(node, ast.Assign) else [
                getattr(node, "target", None), *[i.optional_vars for i in getattr(node, "items", [])]]
            names += [n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]
        for block in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, block, None)
            if inner and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names += _bound_names([s for s in inner if isinstance(s, ast.stmt)] +
                                      [s for h in inner if isinstance(h, ast.ExceptHandler) for s in h.body])
    return names


def defining_cells(notebook: Mapping[str, Any]) -> dict[str, str]:
    """Each name a code cell of the lesson defines, with the first cell that does, in words.

    >>> nb = {"cells": [{"cell_type": "markdown", "source": "## 2 · Counting"},
    ...     {"cell_type": "code", "metadata": {}, "source": "enc = ctxlab.encoding()"}]}
    >>> defining_cells(nb)["enc"]
    "the cell under '2 · Counting' that begins `enc = ctxlab.encoding()`"
    """
    found: dict[str, str] = {}
    section = ""
    for cell in notebook.get("cells", []):
        source = _text(cell.get("source"))
        if cell.get("cell_type") == "markdown":
            headings = [line.lstrip("#").strip() for line in source.splitlines() if re.match(r"#{1,3}\s", line)]
            section = headings[-1] if headings else section
            continue
        if cell.get("cell_type") != "code":
            continue
        meta = (cell.get("metadata") or {}).get("nbgrader") or {}
        visible = _visible_part(source)
        try:
            names = _bound_names(ast.parse(_python(visible)).body)
        except SyntaxError:
            continue
        if meta.get("grade") and not meta.get("solution"):
            where = f"the test cell {meta.get('grade_id')}"
        elif meta.get("solution"):
            where = f"the answer cell {meta.get('grade_id')}"
        else:
            first = next((line.strip() for line in visible.splitlines() if line.strip() and not line.startswith("#")), "")
            first = first if len(first) <= 60 else first[:57] + "..."
            where = (f"the cell under {section!r} that begins `{first}`" if section
                     else f"the cell that begins `{first}`")
        for name in names:
            found.setdefault(name, where)
    return found


def _find(name: Any, exercises: list[Exercise], where: str) -> Exercise:
    if isinstance(name, int) and not isinstance(name, bool):
        found = [e for e in exercises if name in e.numbers]
    else:
        key = str(name)
        found = [e for e in exercises if key in e.answers or e.name == key]
        found = found or [e for e in exercises if any(t.grade_id == key for t in e.tests)]
        found = found or [e for e in exercises if any(t.grade_id.startswith(key) for t in e.tests)]
    if len(found) == 1:
        return found[0]
    if found and isinstance(name, int):  # an exercise with several answer cells: all its parts
        return Exercise(
            [a for e in found for a in e.answers], found[0].title.split(" (")[0], [name],
            [t for e in found for t in e.tests],
        )
    names = ", ".join(f"{e.name!r} ({e.title})" for e in exercises)
    if not found:
        raise ValueError(f"{where} has no exercise called {name!r}; its exercises are: {names}")
    raise ValueError(
        f"{name!r} names {len(found)} exercises of {where} ({', '.join(e.name for e in found)}); "
        f"use one of: {names}"
    )


def _notebook_path(notebook: str | os.PathLike[str] | None, namespace: Mapping[str, Any]) -> Path:
    if notebook is not None:
        return Path(notebook)
    session = namespace.get("__session__")  # set by Jupyter: the notebook this kernel runs
    if isinstance(session, str) and session.endswith(".ipynb") and Path(session).is_file():
        return Path(session)
    found = sorted(p for p in Path.cwd().glob("*.ipynb") if not p.name.startswith("."))
    if len(found) == 1:
        return found[0]
    where = f"in {Path.cwd()}" if found else f"(no .ipynb file in {Path.cwd()})"
    raise FileNotFoundError(
        f"cannot tell which notebook holds the tests {where}: "
        f"{', '.join(p.name for p in found) or 'none found'}; pass notebook='name.ipynb'"
    )


# -- running a test -------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """The result of one visible test: ``message`` says why it failed (empty when it passed)."""

    grade_id: str
    points: float
    passed: bool
    message: str = ""
    purpose: str = ""
    printed: str = ""

    def line(self) -> str:
        """A few lines: the reason first, then which test it was, wrapped between words."""
        points = f"{self.points:g} point{'s' if self.points != 1 else ''}"
        about = f"{self.grade_id} ({points})" + (f": {self.purpose}" if self.purpose else "")
        if self.passed:
            return _wrap(about, "  passed  ")
        return _wrap(self.message, "  FAILED  ") + "\n" + _wrap(f"test {about}", " " * 10)


def _wrap(text: str, first: str) -> str:
    """``text`` after ``first``, wrapped at :data:`WIDTH` between words, later lines indented."""
    indent = " " * len(first)
    lines = []
    for number, paragraph in enumerate(text.splitlines() or [""]):
        lines += textwrap.wrap(
            paragraph, WIDTH, initial_indent=first if number == 0 else indent, subsequent_indent=indent,
            break_long_words=False, break_on_hyphens=False,
        ) or [indent]
    return "\n".join(lines)


def _python(source: str) -> str:
    """The cell as plain Python (IPython's magics and shell escapes turned into calls)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython ships with Jupyter
        return source
    return TransformerManager().transform_cell(source)


def _where(tb: Any, test_file: str) -> tuple[str | None, int | None, str | None]:
    """The innermost frame outside the test: (function, line, file) of the learner's code."""
    frames = traceback.extract_tb(tb)
    own = [f for f in frames if f.filename != test_file and "ctxlab" not in Path(f.filename).parts]
    if not own:
        return None, None, None
    frame = own[-1]
    return frame.name, frame.lineno, frame.filename


def _explain(err: BaseException, test: GradeCell, test_file: str, definers: Mapping[str, str]) -> str:
    """Why a test failed, in a sentence or two, from the exception it raised; a missing name is
    traced to the cell of the lesson that defines it (``definers``, from :func:`defining_cells`)."""
    inner = err.__cause__ or err.__context__
    if isinstance(err, AssertionError) and isinstance(inner, NotImplementedError):
        err = inner  # a test that wrapped the stub's error: the answer is simply not done yet
    function, line, _ = _where(err.__traceback__, test_file)
    text = str(err).strip()
    if isinstance(err, AssertionError):
        if text:
            return text
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == test_file]
        statement = frames[-1].line if frames and frames[-1].line else "an assert"
        return f"this check failed: {statement}"
    if isinstance(err, NotImplementedError):
        what = f"{function}" if function and function != "<module>" else "your answer"
        return (
            f"not done yet: {what} raises NotImplementedError. Write the answer in place of "
            "`raise NotImplementedError()`, run its cell, then check again"
        )
    if isinstance(err, NameError):
        cell = definers.get(getattr(err, "name", None) or "")
        if cell:
            return f"{text}: {cell} defines it; run that cell (after a restart, Run All Above), then check again"
        return f"{text}: run the exercise's answer cell (and the cells above it) first, then check again"
    where = ""
    if function:
        where = f" (in your {function}, line {line})" if function != "<module>" else f" (line {line} of your cell)"
    return f"your code raised {type(err).__name__}: {text}{where}"


def _run(test: GradeCell, scope: MutableMapping[str, Any], definers: Mapping[str, str] | None = None) -> CheckResult:
    """Run one test in ``scope``, a copy of the learner's names that the exercise's tests share."""
    test_file = _TEST_FILE.format(test.grade_id)
    out = io.StringIO()
    source = _python(test.source)
    linecache.cache[test_file] = (len(source), None, source.splitlines(True), test_file)  # for the failing line
    try:
        code = compile(source, test_file, "exec")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(code, scope)  # noqa: S102 - the lesson's own visible test, as Validate runs it
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # report every failure, SystemExit included; never stop the notebook
        message = _explain(err, test, test_file, definers or {})
        return CheckResult(test.grade_id, test.points, False, message, test.purpose, out.getvalue())
    return CheckResult(test.grade_id, test.points, True, "", test.purpose, out.getvalue())


# -- reports -------------------------------------------------------------------------------


@dataclass
class ExerciseReport:
    """What ``check`` found for one exercise. Displayed, it is the text of :meth:`text`."""

    name: str
    title: str
    outcomes: list[CheckResult]
    hidden_points: float
    hidden_tests: int

    @property
    def passed(self) -> bool:
        """True when every visible test passed (hidden tests run only when graded)."""
        return all(o.passed for o in self.outcomes)

    @property
    def points(self) -> float:
        return sum(o.points for o in self.outcomes if o.passed)

    @property
    def max_points(self) -> float:
        return sum(o.points for o in self.outcomes)

    def text(self) -> str:
        good = sum(o.passed for o in self.outcomes)
        lines = [
            f"{self.title}: {good} of {len(self.outcomes)} visible test{'s' if len(self.outcomes) != 1 else ''} "
            f"passed, {self.points:g} of {self.max_points:g} visible points"
        ]
        if not self.outcomes:
            lines[0] = f"{self.title}: no visible tests"
        lines[0] = _wrap(lines[0], "")
        lines += [o.line() for o in sorted(self.outcomes, key=lambda o: o.passed)]  # failures first
        if self.hidden_tests:
            lines.append(
                f"  {self.hidden_tests} hidden test{'s' if self.hidden_tests != 1 else ''} "
                f"({self.hidden_points:g} points) run when the notebook is graded"
            )
        return "\n".join(lines)

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        return _html(self.text())


def _html(text: str) -> str:
    """A report as HTML: the same text, failures in red, passes in green, wrapped between words."""
    colours = {"  FAILED  ": "#b42318", "  passed  ": "#1a7f37"}
    out = []
    for line in html.escape(text).splitlines():
        for mark, colour in colours.items():
            if line.startswith(mark):
                line = f'  <b style="color:{colour}">{mark.strip()}</b>  {line[len(mark):]}'
        out.append(line)
    body = "\n".join(out)
    return (
        '<pre class="ctxlab-check" style="white-space:pre-wrap;word-break:normal;'
        f'overflow-wrap:break-word;margin:0">{body}</pre>'
    )


@dataclass
class LessonReport:
    """What ``check_all`` found: one :class:`ExerciseReport` per exercise and a summary."""

    notebook: str
    exercises: list[ExerciseReport]
    problem: str = ""

    @property
    def passed(self) -> bool:
        return not self.problem and all(e.passed for e in self.exercises)

    @property
    def points(self) -> float:
        return sum(e.points for e in self.exercises)

    @property
    def max_points(self) -> float:
        return sum(e.max_points for e in self.exercises)

    def summary(self) -> str:
        """The lesson in two lines: exercises passed, visible points, what grading adds."""
        if self.problem:
            return _wrap(f"Cannot check this lesson: {self.problem}", "")
        done = sum(e.passed for e in self.exercises)
        hidden = sum(e.hidden_points for e in self.exercises)
        lines = [
            f"{self.notebook}: {done} of {len(self.exercises)} exercises pass their visible tests; "
            f"visible points {self.points:g} of {self.max_points:g}."
        ]
        if hidden:
            lines.append(f"Hidden tests ({hidden:g} more points) run when the notebook is graded.")
        return "\n".join(_wrap(line, "") for line in lines)

    def text(self) -> str:
        if self.problem:
            return self.summary()
        return "\n\n".join([*(e.text() for e in self.exercises), self.summary()])

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        return _html(self.text())


# -- the learner's commands ----------------------------------------------------------------


def _namespace(namespace: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
    if namespace is not None:
        return namespace
    shell = None
    if "IPython" in sys.modules:  # only a notebook or IPython has imported it already
        shell = sys.modules["IPython"].get_ipython()
    if shell is not None:
        return shell.user_ns
    return sys._getframe(2).f_globals  # the caller of check() or check_all(): a plain script


def _read(notebook: str | os.PathLike[str] | None, namespace: Mapping[str, Any]) -> tuple[Path, dict]:
    path = _notebook_path(notebook, namespace)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no notebook at {path}; pass notebook='name.ipynb'") from None
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read {path} as a notebook: {err}") from None
    return path, data


def _load(
    notebook: str | os.PathLike[str] | None, namespace: Mapping[str, Any]
) -> tuple[Path, list[Exercise], dict[str, str]]:
    path, data = _read(notebook, namespace)
    return path, lesson_exercises(data), defining_cells(data)


def _report(exercise: Exercise, namespace: MutableMapping[str, Any], definers: Mapping[str, str]) -> ExerciseReport:
    """Run the exercise's visible tests in order, in one copy of the learner's names: a helper
    the first test defines (``_count_chat``) is there for the next, as when the cells are run in
    order, and the learner's own names are left alone."""
    hidden = [t for t in exercise.tests if t.hidden]
    scope = dict(namespace)
    return ExerciseReport(
        exercise.name, exercise.title, [_run(t, scope, definers) for t in exercise.visible],
        sum(t.points for t in hidden), len(hidden),
    )


def check(
    exercise: str | int,
    *,
    notebook: str | os.PathLike[str] | None = None,
    namespace: MutableMapping[str, Any] | None = None,
) -> ExerciseReport:
    """Run one exercise's visible tests against your notebook; the report says what to fix.

    ``exercise`` is its answer cell's id (``"count-chat"``), its number, or the start of its
    tests' ids. ``notebook`` defaults to the notebook this kernel runs (or the only one in the
    current folder); ``namespace`` to your notebook's variables. Raises ``ValueError`` only
    for a name that is not an exercise of the lesson.

    >>> print(check("double", notebook=_example(), namespace={"double": lambda x: x + 1}))
    double: 0 of 1 visible test passed, 0 of 1 visible points
      FAILED  double(2) should be 4
              test double-visible (1 point)
    """
    scope = _namespace(namespace)
    try:
        path, exercises, definers = _load(notebook, scope)
    except (FileNotFoundError, ValueError) as err:
        return ExerciseReport(str(exercise), f"Cannot check {exercise!r}: {err}", [], 0, 0)
    return _report(_find(exercise, exercises, path.name), scope, definers)


def check_all(
    *,
    notebook: str | os.PathLike[str] | None = None,
    namespace: MutableMapping[str, Any] | None = None,
    exercises: Iterable[str | int] | None = None,
) -> LessonReport:
    """Run the visible tests of every exercise in the lesson and sum them up.

    Each exercise is reported as :func:`check` reports it, then the lesson: how many
    exercises pass their visible tests, the visible points, and the hidden points that only
    grading can award. ``exercises`` limits the run to some of them.

    >>> print(check_all(notebook=_example(), namespace={"double": lambda x: 2 * x}))
    double: 1 of 1 visible test passed, 1 of 1 visible points
      passed  double-visible (1 point)
    <BLANKLINE>
    lesson.ipynb: 1 of 1 exercises pass their visible tests; visible points 1 of 1.
    """
    scope = _namespace(namespace)
    try:
        path, found, definers = _load(notebook, scope)
    except (FileNotFoundError, ValueError) as err:
        return LessonReport("", [], str(err))
    if exercises is not None:
        found = [_find(name, found, path.name) for name in exercises]
    return LessonReport(path.name, [_report(e, scope, definers) for e in found])


def _example() -> Path:
    """A one-exercise notebook in a temporary folder, for the examples above."""
    import tempfile

    cells = [
        {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade_id": "double"}}, "source": ""},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "grade_id": "double-visible", "points": 1}},
         "source": "assert double(2) == 4, 'double(2) should be 4'"},
    ]
    path = Path(tempfile.mkdtemp()) / "lesson.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}}), encoding="utf-8")
    return path


# -- demonstrations that run before the exercise is done -----------------------------------


def yours_or_reference(
    yours: Callable[..., Any], reference: Callable[..., Any], *, exercise: str | None = None
) -> Callable[..., Any]:
    """Your function while it works; ctxlab's ``reference`` while yours is not written yet.

    A demonstration that calls your answer can then run before you finish the exercise: the
    first call that meets ``NotImplementedError`` prints one line saying the reference is used
    instead, and every call after that does the same quietly. Any other error of yours is
    raised as it is, so a bug shows where it happens. ``used_reference`` tells whether the
    reference stood in.

    >>> def count_chat(messages):
    ...     raise NotImplementedError()
    >>> count = yours_or_reference(count_chat, len, exercise="Exercise 1")
    >>> count([1, 2, 3])
    Exercise 1 (count_chat) is not done yet: this shows len instead until it is.
    3
    >>> count.used_reference
    True
    """
    mine = getattr(yours, "__name__", "your function")
    theirs = _name_of(reference)
    what = f"{exercise} ({mine})" if exercise else mine

    @functools.wraps(yours)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return yours(*args, **kwargs)
        except NotImplementedError:
            if not call.used_reference:
                print(f"{what} is not done yet: this shows {theirs} instead until it is.")
                call.used_reference = True
            return reference(*args, **kwargs)

    call.used_reference = False
    return call


def _name_of(function: Callable[..., Any]) -> str:
    target = function.func if isinstance(function, functools.partial) else function
    module = getattr(target, "__module__", "") or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    return f"ctxlab.{name}" if module.startswith("ctxlab") else name
