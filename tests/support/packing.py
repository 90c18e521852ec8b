"""Several listed wrong answers graded in one notebook, when no test they name can tell.

Each listed wrong answer is the solution notebook with one answer cell replaced. Graded one per
notebook, a lesson's hundred wrong answers cost a hundred gradings, each mostly the same work.
A *pack* replaces several answer cells at once, one wrong answer each, and is graded once. For
every member ``W`` of a pack and every test ``T`` that ``W`` must fail, the pack is only formed
when ``T`` cannot reach any other member, judged from the names the code spells out:

* **Reach.** ``T``'s closure is every cell binding a name ``T`` mentions, then every cell binding
  a name those cells mention, and so on (over the solution's sources *and* every listed wrong
  answer's, so a wrong answer that calls another exercise's function counts). The answer cells
  in it other than ``W``'s hold no other member of the pack.
* **Shared data.** No other member reads a data name (a top-level name bound by anything but
  ``def``, ``class`` or ``import``) that a learner-side cell of ``T``'s closure reads: a member
  cannot change, through a list both can see, what ``T`` measures.
* **Nothing hidden.** Members spell out every name they reach: none uses ``globals()``,
  ``eval``, ``sys`` and the like (:data:`autograder.skipping.REACHES_EVERYTHING`), a ``global``
  statement, or a star import; none assigns into an attribute or item of a name it did not bind
  itself (``ctxlab.count = ...``); none binds a name that another cell of the solution, or
  another member, binds.
  ``alone=True`` in the wrong answer's entry keeps it out of every pack.
* **Something passes.** The pack leaves at least one test out of every member's reach, so the
  pack's score is above zero when the rest of the notebook is right.

What this cannot see is an effect no name shows (a kernel a member crashed, a test it made time
out). The pipeline records each pack's grading events and the lesson tests fail a pack that had
any but a cell's own error; and for each lesson the largest pack's members are also graded alone
and must score test for test as in their pack (``tests/test_lessons.py``).

>>> cells = [("setup", "setup", "import ctxlab"),
...          ("f", "answer", "def f(x):\\n    return x"),
...          ("g", "answer", "def g(x):\\n    return f(x) + 1"),
...          ("h", "answer", "def h(x):\\n    return -x"),
...          ("test-f", "test", "assert f(1) == 1"), ("test-g", "test", "assert g(1) == 2"),
...          ("test-h", "test", "assert h(1) == -1")]
>>> wrong = [WrongAnswer("f-off", "f", "def f(x):\\n    return x + 1", ["test-f"]),
...          WrongAnswer("g-off", "g", "def g(x):\\n    return f(x)", ["test-g"]),
...          WrongAnswer("h-off", "h", "def h(x):\\n    return x", ["test-h"])]
>>> [[w.name for w in pack] for pack in packs(cells, wrong)]
[['f-off'], ['g-off', 'h-off']]

``test-g`` reaches ``f``, so ``f-off`` and ``g-off`` go apart; ``h-off`` joins ``g-off``, not
``f-off``, since with ``f`` and ``h`` both wrong no test would be left to pass.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from autograder.skipping import REACHES_EVERYTHING

__all__ = ["WrongAnswer", "CellNames", "cell_names", "packs", "reach", "answers_reached", "notebook_cells"]

MARKER = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$", re.M)


@dataclass
class WrongAnswer:
    """A known mistake: ``cell`` (a solution cell's grade_id) gets ``source``, and every test
    cell named in ``fails`` must then lose its points. ``alone``: grade it in a notebook of its
    own, never packed with others."""

    name: str
    cell: str
    source: str
    fails: list[str]
    alone: bool = False


@dataclass
class CellNames:
    """The notebook names one cell's source binds and reads."""

    parsed: bool = True
    bound: set[str] = field(default_factory=set)  # bound at the top level
    data: set[str] = field(default_factory=set)  # of those, bound other than by def, class or import
    loads: set[str] = field(default_factory=set)  # names read that are not a function's own locals
    dynamic: bool = False  # reaches names without spelling them out
    changes: set[str] = field(default_factory=set)  # names whose attributes or items it assigns
    outside: set[str] = field(default_factory=set)  # of ``loads``, those another cell may supply


def _top_level_bindings(tree: ast.Module) -> tuple[set[str], set[str]]:
    bound, data = set(), set()

    def visit(nodes: Iterable[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                    bound.add(sub.id)
                    data.add(sub.id)
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    break
            for child in ("body", "orelse", "finalbody"):
                visit(getattr(node, child, []) or [])
            for handler in getattr(node, "handlers", []) or []:
                visit(handler.body)

    visit(tree.body)
    return bound, data


def _function_locals(function: ast.AST) -> set[str]:
    args = function.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for sub in ast.walk(function):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
    return names


def _own_nodes(scope: ast.AST):
    """``scope`` and the nodes under it, down to (and including) the functions it defines."""
    todo = [scope]
    while todo:
        node = todo.pop()
        yield node
        if node is scope or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


@functools.cache
def cell_names(source: str) -> CellNames:
    """What ``source`` binds and reads of the notebook's names (cached: do not change the result).

    >>> names = cell_names("import json\\nLIMIT = 3\\ndef f(x):\\n    x.y = 1\\n    return g(LIMIT)")
    >>> sorted(names.bound), sorted(names.data), sorted(names.loads), names.changes
    (['LIMIT', 'f', 'json'], ['LIMIT'], ['LIMIT', 'g'], set())
    >>> cell_names("import ctxlab\\nctxlab.count = len").changes
    {'ctxlab'}
    """
    try:
        tree = ast.parse(MARKER.sub("", source))
    except SyntaxError:
        return CellNames(parsed=False, dynamic=True)
    names = CellNames()
    names.bound, names.data = _top_level_bindings(tree)
    def visit(scope: ast.AST, local: set[str]) -> None:
        for sub in _own_nodes(scope):
            if sub is not scope and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(sub, local | _function_locals(sub))  # a closure's enclosing locals stay local
                continue
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in local:
                names.loads.add(sub.id)
                names.dynamic |= sub.id in REACHES_EVERYTHING or re.fullmatch(r"_i*\d*", sub.id) is not None
            elif isinstance(sub, (ast.Global, ast.Nonlocal)) or (
                    isinstance(sub, ast.ImportFrom) and any(a.name == "*" for a in sub.names)):
                names.dynamic = True  # a global statement or a star import
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                module = getattr(sub, "module", None) or ""
                names.dynamic |= module.split(".")[0] in REACHES_EVERYTHING or any(
                    a.name.split(".")[0] in REACHES_EVERYTHING for a in sub.names)
            targets = []
            if isinstance(sub, (ast.Assign, ast.Delete)):
                targets = sub.targets
            elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)):
                targets = [sub.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, (ast.Attribute, ast.Subscript)):
                        root = _root(part)
                        if isinstance(root, ast.Name) and root.id not in local and (
                                scope is not tree or root.id not in names.data):
                            names.changes.add(root.id)

    visit(tree, set())
    names.changes -= {"self", "cls"}
    names.outside = _read_before_bound(tree, names.loads)
    return names


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _targets(node: ast.AST | None) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def _expression_reads(node: ast.AST, bound: set[str], out: set[str]) -> None:
    """Names ``node`` reads that are not in ``bound``: a function's or comprehension's own
    names are its own; a function's free names are read at call time, so from anywhere."""
    if isinstance(node, FUNCTIONS):
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            _expression_reads(default, bound, out)
        for decorator in getattr(node, "decorator_list", []):
            _expression_reads(decorator, bound, out)
        local = _function_locals(node)
        out |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - local
        return
    if isinstance(node, COMPREHENSIONS):
        inner = set(bound)
        for generator in node.generators:
            _expression_reads(generator.iter, inner, out)
            inner |= _targets(generator.target)
            for condition in generator.ifs:
                _expression_reads(condition, inner, out)
        for part in ("elt", "key", "value"):
            if getattr(node, part, None) is not None:
                _expression_reads(getattr(node, part), inner, out)
        return
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id not in bound:
            out.add(node.id)
        return
    for child in ast.iter_child_nodes(node):
        _expression_reads(child, bound, out)


def _scan(statements: list[ast.stmt], bound: set[str], out: set[str]) -> set[str]:
    """Walk ``statements`` in order; returns the names surely bound after them."""
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if isinstance(node, ast.ClassDef):
                for base in node.bases + node.decorator_list:
                    _expression_reads(base, bound, out)
                _scan(node.body, set(bound), out)
            else:
                _expression_reads(node, bound, out)
            bound = bound | {node.name}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = bound | {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            _expression_reads(node.iter, bound, out)
            _scan(node.body, bound | _targets(node.target), out)
            _scan(node.orelse, set(bound), out)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                _expression_reads(item.context_expr, bound, out)
                bound = bound | _targets(item.optional_vars)
            bound = _scan(node.body, bound, out)
        elif isinstance(node, (ast.If, ast.While)):
            _expression_reads(node.test, bound, out)
            _scan(node.body, set(bound), out)
            _scan(node.orelse, set(bound), out)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            _scan(node.body, set(bound), out)
            for handler in node.handlers:
                if handler.type is not None:
                    _expression_reads(handler.type, bound, out)
                _scan(handler.body, bound | ({handler.name} if handler.name else set()), out)
            _scan(node.orelse, set(bound), out)
            _scan(node.finalbody, set(bound), out)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is not None:
                _expression_reads(node.value, bound, out)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    _expression_reads(target, bound, out)  # a.b = ... and a[i] = ... read a
            if node.value is not None:
                bound = bound | {t.id for target in targets for t in ast.walk(target)
                                 if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        else:
            _expression_reads(node, bound, out)  # AugAssign reads its target: counted here
    return bound


def _read_before_bound(tree: ast.Module, loads: set[str]) -> set[str]:
    """The names of ``loads`` whose value may come from outside the cell: read by a function
    (at call time, whatever binds them last), or at the top level before the cell binds them."""
    out: set[str] = set()
    _scan(tree.body, set(), out)
    return out & loads


JUDGE_SIDE = ("test", "setup")  # the cells the judge's kernel runs (it reaches answers by name)
LEARNER_SIDE = ("answer", "setup", "other")  # the cells the learner's kernel runs


def reach(cells: Sequence[tuple[str, str, list[str]]], start: Iterable[str]) -> set[int]:
    """Indexes of the cells a test reading ``start``'s names may run, transitively.

    ``cells``: ``(grade_id, kind, sources)`` with every source the cell may hold (the solution's
    and the listed wrong answers'); a cell binds and reads what any of its sources does. ``kind``
    is ``"test"``, ``"answer"``, ``"setup"`` (the locked cells before the first answer, which both
    kernels run) or ``"other"``. A test's names resolve in the judge (tests, setup, and answers by
    their names); an answer's in the learner's kernel (answers, setup and the lesson's cells).
    """
    binders: dict[tuple[str, str], list[int]] = {}
    reads: list[set[str]] = []
    for index, (_, kind, sources) in enumerate(cells):
        found = [cell_names(s) for s in sources]
        for name in set().union(*(n.bound for n in found)):
            for side, kinds in (("judge", JUDGE_SIDE + ("answer",)), ("learner", LEARNER_SIDE)):
                if kind in kinds:
                    binders.setdefault((side, name), []).append(index)
        reads.append(set().union(*(n.outside for n in found)))
    seen: set[tuple[str, int]] = set()
    todo, done = [("judge", name) for name in start], set()
    while todo:
        side, name = todo.pop()
        if (side, name) in done:
            continue
        done.add((side, name))
        for index in binders.get((side, name), ()):
            now = "learner" if cells[index][1] in ("answer", "other") else side
            if (now, index) not in seen:
                seen.add((now, index))
                todo += [(now, read) for read in reads[index]]
    return {index for _, index in seen}


def _may_pack(wrong: WrongAnswer, own: CellNames, bound_elsewhere: set[str]) -> bool:
    return (not wrong.alone and own.parsed and not own.dynamic and not own.changes
            and not own.bound & bound_elsewhere)


def _graph(cells, wrong):
    """The cells with every source each may hold, each test's reach, and the answers in it."""
    sources = {gid: [src] for gid, kind, src in cells if kind == "answer"}
    for w in wrong:
        if w.cell not in sources:
            raise ValueError(f"wrong answer {w.name!r} names {w.cell!r}, which is not an answer cell")
        sources[w.cell].append(w.source)
    graph = [(gid, kind, sources.get(gid, [src]) if kind == "answer" else [src]) for gid, kind, src in cells]
    tests = [index for index, (_, kind, _) in enumerate(cells) if kind == "test"]
    closure = {cells[t][0]: reach(graph, cell_names(cells[t][2]).outside) for t in tests}
    answers_in = {test: {cells[i][0] for i in found if cells[i][1] == "answer"} for test, found in closure.items()}
    return graph, closure, answers_in


def answers_reached(cells: Sequence[tuple[str, str, str]], wrong: Sequence[WrongAnswer]) -> dict[str, set[str]]:
    """Test grade_id -> the answer cells it may run (:func:`reach`), with every listed wrong
    answer's source counted in its cell."""
    return _graph(cells, wrong)[2]


def packs(cells: Sequence[tuple[str, str, str]], wrong: Sequence[WrongAnswer]) -> list[list[WrongAnswer]]:
    """``wrong`` split into packs, each safe to grade as one notebook (the module's rules).

    ``cells``: the solution notebook's code cells in order, as ``(grade_id, kind, source)`` with
    ``kind`` one of ``"answer"``, ``"test"``, ``"setup"``, ``"other"`` (see :func:`reach`).
    Members keep their listed order; the answers of the cells with the most wrong answers are
    placed first, so packs fill evenly.
    """
    graph, closure, answers_in = _graph(cells, wrong)
    where = {gid: index for index, (gid, _, _) in enumerate(cells)}
    sources = {gid: srcs for gid, kind, srcs in graph if kind == "answer"}
    learner_reads = {test: set().union(*(cell_names(s).loads for i in found if cells[i][1] != "test"
                                         for s in graph[i][2])) for test, found in closure.items()}
    data = set().union(*(cell_names(s).data for _, kind, srcs in graph if kind != "test" for s in srcs))

    def bound_by_others(cell: str) -> set[str]:
        return set().union(*(cell_names(src).bound for gid, kind, src in cells if gid != cell and kind != "test"))

    elsewhere = {gid: bound_by_others(gid) for gid in sources}
    for w in wrong:
        for test in w.fails:
            if test not in closure:
                raise ValueError(f"wrong answer {w.name!r} names {test!r}, which is not a test cell")
    counts = {gid: sum(w.cell == gid for w in wrong) for gid in sources}
    order = sorted(range(len(wrong)), key=lambda i: (-counts[wrong[i].cell], where[wrong[i].cell], i))
    result: list[list[WrongAnswer]] = []
    for i in order:
        w = wrong[i]
        own = cell_names(w.source)
        if not _may_pack(w, own, elsewhere[w.cell]):
            result.append([w])
            continue
        touched = own.loads & data - own.bound
        for pack in result:
            if len(pack) == 1 and pack[0].alone or w.cell in {m.cell for m in pack}:
                continue
            if not all(_may_pack(m, cell_names(m.source), elsewhere[m.cell]) for m in pack):
                continue
            members = pack + [w]
            cells_of = {m.cell for m in members}
            ok = all(answers_in[t] & cells_of <= {m.cell} for m in members for t in m.fails)
            ok = ok and all(not (touched & learner_reads[t]) for m in pack for t in m.fails)
            ok = ok and all(not ((cell_names(m.source).loads & data - cell_names(m.source).bound)
                                 & learner_reads[t]) for m in pack for t in w.fails)
            ok = ok and not any(own.bound & cell_names(m.source).bound for m in pack)
            ok = ok and any(not (answers_in[t] & cells_of) for t in closure)
            if ok:
                pack.append(w)
                break
        else:
            result.append([w])
    position = {id(w): i for i, w in enumerate(wrong)}
    for pack in result:
        pack.sort(key=lambda m: position[id(m)])
    return sorted(result, key=lambda pack: position[id(pack[0])])


def notebook_cells(notebook: dict) -> list[tuple[str, str, str]]:
    """A solution notebook's code cells as :func:`packs` takes them."""
    cells, answered = [], False
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if meta.get("solution"):
            kind, answered = "answer", True
        elif meta.get("grade"):
            kind = "test"
        else:
            kind = "setup" if meta.get("locked") and not answered else "other"
        cells.append((meta.get("grade_id") or f"cell-{index}", kind, source))
    return cells
