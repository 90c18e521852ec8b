"""Which of the lesson's own cells grading can leave out: demonstrations nothing graded needs.

A lesson's demonstrations (plots, widgets, replays of long runs) and its ``ctxlab.course.check(...)``
cells are most of the time a notebook takes to run, and no test reads what they show: the
judge reaches only the learner's answer names. So the grader runs a lesson cell only when
something it runs afterwards may need it. :func:`cells_to_skip` decides, by a liveness analysis
on names, erring on the side of running:

* **Only the lesson's own code is ever left out**: a code cell whose source is exactly that of
  a demonstration cell (no nbgrader metadata) of the released notebook, or of a locked cell that
  is not a test, and in that case only after the first answer cell (the locked cells before it
  are the lesson's setup, run in both kernels). A cell the learner wrote or edited always runs.
* **A lesson cell runs when it binds a name that a later cell that runs mentions, or mentions
  one** (so a cell that might mutate an object used later runs too); merely mentioning a module
  or one of the learner's functions and classes does not count, binding one does. The answer names count as used at the end, since the
  judge reads them.
* **Everything runs** when code that runs could reach names without spelling them out:
  ``globals()``, ``locals()``, ``vars()``, ``eval``, ``exec``, ``get_ipython``, ``sys``,
  ``__main__``, ``inspect``, ``gc``, IPython's output history (``_``, ``Out``, ``_3``...), a
  ``global`` statement, a star import, a line magic or shell escape, or code that does not parse.

What is not reproduced for a left-out cell is only its display and any effect it has beyond
names (for example, how many times a learner's function was called). Grades match a run of every
cell: the lesson tests grade each solution both ways and compare (``--every-cell`` grades a class
that way).

>>> lesson = ["import ctxlab", "def f(x):\\n    return x", "plot(f)", "ctxlab.course.check('f')"]
>>> ours = {lesson[0], lesson[2], lesson[3]}  # the answer cell (1) is the learner's
>>> sorted(cells_to_skip(lesson, lesson, first_answer=1, lesson_cells=ours, answer_names=["f"]))
[2, 3]
>>> learner = lesson + ["print(plot)"]  # a cell of the learner's own that uses what cell 2 shows
>>> sorted(cells_to_skip(learner, learner, first_answer=1, lesson_cells=ours, answer_names=["f"]))
[3]
"""

from __future__ import annotations

import ast
import builtins
import re
import symtable
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["cells_to_skip", "lesson_cell_sources", "REACHES_EVERYTHING"]

# Names through which code can reach the notebook's names without spelling them out.
REACHES_EVERYTHING = frozenset({
    "globals", "locals", "vars", "eval", "exec", "compile", "get_ipython", "__import__", "__builtins__",
    "builtins", "sys", "__main__", "inspect", "gc", "importlib", "In", "Out", "_oh", "_ih", "_dh", "_",
    "__", "___",
})
OUTPUT_HISTORY = re.compile(r"_i*\d*")


@dataclass
class _Uses:
    """What one cell can touch of the notebook's namespace."""

    names: set[str] = field(default_factory=set)  # the notebook's names it mentions (not its functions' locals)
    bound: set[str] = field(default_factory=set)  # the notebook's names it binds
    modules: set[str] = field(default_factory=set)  # names it binds to a module (``import x``)
    functions: set[str] = field(default_factory=set)  # functions and classes it defines at the top
    submodules: set[tuple[str, str]] = field(default_factory=set)  # ``import a.b``: ("a", "b")
    attributes: set[tuple[str, str]] = field(default_factory=set)  # ``a.b`` read anywhere
    dynamic: bool = False  # it can reach names without spelling them out


def _is_dynamic(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        # ``for _ in ...`` only binds ``_``; reading ``_`` reads IPython's output history
        history = node.id.startswith("_") and OUTPUT_HISTORY.fullmatch(node.id) is not None
        return isinstance(node.ctx, ast.Load) and (node.id in REACHES_EVERYTHING or history)
    if isinstance(node, ast.Global):
        return True
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in REACHES_EVERYTHING for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] in REACHES_EVERYTHING or any(
            alias.name == "*" or (alias.asname or alias.name) in REACHES_EVERYTHING for alias in node.names)
    return False


def _notebook_names(table: symtable.SymbolTable, uses: _Uses, top: bool = True) -> None:
    """The notebook's names a cell's scopes mention (a function's parameters and locals are not
    among them) and, at the top level, bind."""
    for symbol in table.get_symbols():
        if top:
            uses.names.add(symbol.get_name())
            if symbol.is_assigned() or symbol.is_imported():
                uses.bound.add(symbol.get_name())
        elif symbol.is_global():
            uses.names.add(symbol.get_name())
    for child in table.get_children():
        _notebook_names(child, uses, top=False)


def _analyse(source: str) -> _Uses | None:
    """What ``source`` can touch, or None when it cannot be analysed (magics, syntax errors)."""
    if any(line.lstrip().startswith(("%", "!")) for line in source.splitlines()):
        return None
    try:
        tree = ast.parse(source)
        uses = _Uses()
        _notebook_names(symtable.symtable(source, "<cell>", "exec"), uses)
        for node in ast.walk(tree):
            uses.dynamic |= _is_dynamic(node)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                uses.attributes.add((node.value.id, node.attr))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    rebound_packages = set()  # ``import a.b`` rebinds ``a`` to the package ``a`` is already
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            uses.functions.add(node.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top, *rest = alias.name.split(".")
                uses.modules.add(alias.asname or top)
                if rest and not alias.asname:
                    uses.submodules.add((top, rest[0]))
                    rebound_packages.add(top)
                elif not alias.asname:
                    rebound_packages.discard(top)
    for node in ast.walk(tree):  # bound some other way too: it stays bound
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            rebound_packages.discard(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            rebound_packages.discard(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname or isinstance(node, ast.ImportFrom):
                    rebound_packages.discard(alias.asname or alias.name)
    uses.bound -= rebound_packages
    return uses


def lesson_cell_sources(released_cells: Iterable[dict]) -> set[str]:
    """The sources of the released notebook's cells grading may leave out: its demonstrations
    (code cells without nbgrader metadata) and its locked cells that are not tests."""
    sources = set()
    for cell in released_cells:
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader") or {}
        if meta.get("solution") or meta.get("grade"):
            continue
        if not meta or meta.get("locked"):
            source = cell.get("source", "")
            sources.add("".join(source) if isinstance(source, list) else source)
    return sources


def cells_to_skip(sources: Sequence[str], runs: Sequence[str], *, first_answer: int, lesson_cells: set[str],
                  answer_names: Iterable[str], locked: Sequence[bool] | None = None) -> set[int]:
    """Indices into ``sources`` (the code cells, in order, as the notebook holds them) that
    grading may leave out.

    ``runs`` is what each index would run in the learner's kernel (``""`` for cells run
    elsewhere or never, such as tests); ``first_answer`` the index of the first answer cell;
    ``lesson_cells`` the sources of :func:`lesson_cell_sources`; ``locked[i]`` whether cell i is
    locked (a locked lesson cell before the first answer is setup and always runs).
    """
    count = len(sources)
    candidates = set()
    for index in range(count):
        if not runs[index] or runs[index] not in lesson_cells:
            continue
        if index < first_answer and (locked is None or locked[index]):
            continue  # the lesson's setup
        candidates.add(index)
    if not candidates:
        return set()
    analyses = {index: _analyse(runs[index]) for index in range(count) if runs[index]}
    must_run = [index for index in analyses if index not in candidates]
    if any(analyses[index] is None or analyses[index].dynamic for index in must_run):
        return set()
    # Builtins, modules and the learner's functions: mentioning one does not change it.
    exempt = set(dir(builtins))
    for index in must_run:
        exempt |= analyses[index].modules | analyses[index].functions
    live = set(answer_names)
    live_attributes: set[tuple[str, str]] = set()
    skipped = set()
    for index in range(count - 1, -1, -1):
        uses = analyses.get(index)
        if index not in analyses:
            continue
        if (index in candidates and uses is not None and not uses.dynamic
                and not (uses.bound & live) and not ((uses.names - exempt) & live)
                and not (uses.submodules & live_attributes)):
            skipped.add(index)
            continue
        if index in candidates and (uses is None or uses.dynamic):
            return set()  # a lesson cell that reaches names dynamically: run everything
        live |= uses.names
        live_attributes |= uses.attributes
    return skipped
