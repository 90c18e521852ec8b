"""Read an instructor's Canvas gradebook export, and find the graded students in it.

Canvas reads back the file it exports (Grades > Export > Export Entire Gradebook): the way to
put grades into Canvas without losing any is to fill in that file, not to write a new one. The
format, as Canvas's guides describe it ("How do I export grades in the Gradebook?", "How do I
import grades in the Gradebook?", community.canvaslms.com) and its exports show it:

* a header row. The identity columns ``Student`` (the display name), ``ID`` (Canvas's user id),
  ``SIS User ID``, ``SIS Login ID``, ``Integration ID`` (only where the school uses it) and
  ``Section``; an export made without permission to see SIS data has no SIS columns. Then one
  column per assignment, named ``Title (assignment id)``. Then columns Canvas computes itself
  (assignment-group and course scores, such as ``Current Score``), which its importer ignores;
* a ``Points Possible`` row (its ``Student`` cell padded with spaces), holding each assignment's
  points and ``(read only)`` under the computed columns; an export may add a row that marks
  assignments with a manual posting policy (``Manual Posting``);
* one row per student, the course's Test Student among them.

Canvas matches a row to a learner by ``ID``, ``SIS User ID``, ``SIS Login ID`` or ``Integration
ID``, exactly as written. The grader knows only its own student ids (folder or archive names),
so :func:`match_students` finds the one id column that holds them. Nothing here changes a cell:
ids are compared, never rewritten, so an id such as ``-bob`` or ``@ana`` stays as exported.

>>> export = read_export("Student,ID,SIS Login ID,Section,Budget (101)\\n"
...                      "    Points Possible,,,,30.00\\n"
...                      '"Doe, Ana",9001,ana,A,12.00\\n')
>>> export.assignments[0]
Assignment(title='Budget', canvas_id='101', column=4, points=30.0)
>>> match_students(export, ["ana"]).rows["ana"].name
'Doe, Ana'
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .report import FORMULA_STARTS

__all__ = ["CanvasError", "Assignment", "StudentRow", "Export", "Match", "Change", "ID_COLUMNS", "EXCUSED", "read_export",
           "match_students", "map_lessons", "fill_in", "write_export", "read_grades", "register"]

ID_COLUMNS = ("ID", "SIS User ID", "SIS Login ID", "Integration ID")
"""The columns Canvas matches a row by, in the order tried when more than one would do."""

IDENTITY_COLUMNS = frozenset({"Student", "Section", *ID_COLUMNS})

ASSIGNMENT = re.compile(r"^(?P<title>.*\S)\s*\((?P<id>\d+)\)$")
"""An assignment column: its title, then its Canvas id in parentheses."""


EXCUSED = frozenset({"EX", "N/A"})
"""Marks Canvas writes in a grade cell for an excused learner or one the assignment does not
apply to; a number written over them ends the excusal, so :func:`fill_in` keeps them."""


class CanvasError(ValueError):
    """A gradebook export that cannot be read or matched; the message says what to do."""


@dataclass(frozen=True)
class Assignment:
    """One assignment column of the export."""

    title: str
    canvas_id: str
    column: int
    points: float | None
    """Points possible, from the ``Points Possible`` row (``None`` when it gives none)."""


@dataclass(frozen=True)
class StudentRow:
    """One student's row: ``row`` is its index among the file's rows (the header is row 0)."""

    row: int
    name: str
    section: str
    ids: dict[str, str]
    """Each id column of the export to this row's value, as exported."""


@dataclass
class Export:
    """A gradebook export as read: every row as it was, and what the rows mean."""

    rows: list[list[str]]
    """Every row of the file, the header first, each cell as exported."""
    assignments: list[Assignment]
    students: list[StudentRow]
    read_only: list[str]
    """Columns Canvas computes and its importer ignores."""
    id_columns: list[str]
    """The id columns this export has (an export may lack the SIS ones)."""

    @property
    def header(self) -> list[str]:
        return self.rows[0]


@dataclass
class Match:
    """Which row of the export each graded student is."""

    column: str
    """The id column the graded students were found in."""
    rows: dict[str, StudentRow]
    """Graded student id -> its row."""
    missing: list[str] = field(default_factory=list)
    """Graded students no row holds (their grades cannot go into this gradebook)."""
    ungraded: list[StudentRow] = field(default_factory=list)
    """Rows no graded student matched (left as exported)."""


def read_export(text: str) -> Export:
    """The gradebook export in ``text`` (a byte-order mark at its start is allowed).

    Raises :class:`CanvasError` when the file is not a gradebook export: no ``Student`` column,
    no id column, or no assignment column.
    """
    rows, lines = _parse(text.removeprefix("\ufeff"))
    if not rows or "Student" not in [cell.strip() for cell in rows[0]]:
        first = ", ".join(rows[0][:6]) if rows else "nothing"
        raise CanvasError(
            f"this is not a Canvas gradebook export: its first row should start with Student, ID, ..., "
            f"and it reads {first!r}; in Canvas, open Grades > Export > Export Entire Gradebook and use that file")
    header = [cell.strip() for cell in rows[0]]
    width = len(header)
    for row, line in zip(rows, lines):
        if row and len(row) != width:
            raise CanvasError(
                f"line {line} of the export has {len(row)} cells where its header has {width}: a quote or a comma "
                "out of place (an edit in a spreadsheet, or a cut-off file) shifts every cell after it, and Canvas "
                "refuses such a file too; export the gradebook again, or fix that line")
    rows = [row or [""] * width for row in rows]
    column = {name: index for index, name in reversed(list(enumerate(header)))}
    id_columns = [name for name in ID_COLUMNS if name in column]
    if not id_columns:
        raise CanvasError(
            f"the export has none of the columns Canvas matches students by ({', '.join(ID_COLUMNS)}); "
            "export the gradebook again from Canvas, without removing columns")
    points_row = next((index for index, row in enumerate(rows[1:3], start=1)
                       if row[column["Student"]].strip() == "Points Possible"), None)
    assignments, read_only = [], []
    for index, name in enumerate(header):
        if name in IDENTITY_COLUMNS:
            continue
        found = ASSIGNMENT.match(name)
        if found is None:
            read_only.append(name)
            continue
        points = rows[points_row][index].strip() if points_row is not None else ""
        try:
            value = float(points) if points else None
        except ValueError:
            value = None
        assignments.append(Assignment(found["title"], found["id"], index, value))
    if not assignments:
        raise CanvasError(
            "the export has no assignment column (a column named 'Title (assignment id)'): create the "
            "lessons' assignments in Canvas, publish them, and export the gradebook again")
    students = []
    for index, row in enumerate(rows[1:], start=1):
        if index == points_row or _is_posting_row(row, column, id_columns) or not any(cell.strip() for cell in row):
            continue
        students.append(StudentRow(
            row=index, name=row[column["Student"]], section=row[column["Section"]] if "Section" in column else "",
            ids={name: row[column[name]] for name in id_columns}))
    return Export(rows, assignments, students, read_only, id_columns)


def _parse(text: str) -> tuple[list[list[str]], list[int]]:
    """The rows of CSV ``text`` read strictly, each with the line it starts on."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows, lines = [], []
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return rows, lines
        except csv.Error as err:
            raise CanvasError(
                f"the export is not valid CSV from line {start} on ({err}): a quote out of place merges or "
                "splits rows, and Canvas refuses such a file too; export the gradebook again, or fix that line"
            ) from None
        rows.append(row)
        lines.append(start)


def _is_posting_row(row: list[str], column: dict[str, int], id_columns: list[str]) -> bool:
    """A row that says which assignments are posted manually: no student, no id."""
    return not row[column["Student"]].strip() and not any(row[column[name]].strip() for name in id_columns)


def match_students(export: Export, student_ids: list[str], column: str | None = None) -> Match:
    """Find each graded student (``student_ids``, the grader's ids) in the export's rows.

    The ids are looked up in one id ``column``: the one given, or else the one that holds the
    most of them (ties go to the first of :data:`ID_COLUMNS`). A cell matches when it equals
    the id exactly, spaces around it aside. Raises :class:`CanvasError` when the column given is
    not in the export, when no column holds any of the ids, when one id is in two rows of the
    column, or (no column given) when one id is in two rows under different id columns.
    """
    if column is not None and column not in export.id_columns:
        raise CanvasError(
            f"the export has no column {column!r} to match students by; it has {', '.join(export.id_columns)}")
    wanted = list(dict.fromkeys(student_ids))
    candidates = [column] if column is not None else export.id_columns
    found = {name: _rows_by_id(export, name) for name in candidates}
    best = max(candidates, key=lambda name: sum(sid in found[name] for sid in wanted))
    if not any(sid in found[best] for sid in wanted):
        sample = ", ".join(repr(sid) for sid in wanted[:3])
        shown = "; ".join(f"{name}: {', '.join(repr(v) for v in list(found[name])[:3]) or 'empty'}" for name in candidates)
        raise CanvasError(
            f"none of the {len(wanted)} graded students ({sample}{', ...' if len(wanted) > 3 else ''}) is in the "
            f"export's {' or '.join(candidates)} column (the export holds {shown}). Name the submissions after "
            "the students' Canvas login or SIS ids, or choose the column that holds them")
    if column is None:
        for sid in wanted:
            where = {(name, row.row) for name in candidates for row in found[name].get(sid, [])}
            if len({name for name, _ in where}) > 1 and len({row for _, row in where}) > 1:
                places = "; ".join(f"{name} on line {row + 1}" for name, row in sorted(where, key=lambda w: w[1]))
                raise CanvasError(
                    f"the graded student {sid!r} is in two students' rows, under different id columns ({places}): "
                    "say which column holds the grader's ids with --match-on")
    rows: dict[str, StudentRow] = {}
    for sid in wanted:
        holders = found[best].get(sid, [])
        if len(holders) > 1:
            raise CanvasError(
                f"the graded student {sid!r} is in {len(holders)} rows of the export's {best} column (rows "
                f"{', '.join(str(r.row + 1) for r in holders)} of the file): match on a column whose ids are unique")
        if holders:
            rows[sid] = holders[0]
    matched = {id(row) for row in rows.values()}
    return Match(best, rows, [sid for sid in wanted if sid not in rows],
                 [row for row in export.students if id(row) not in matched])


def _rows_by_id(export: Export, name: str) -> dict[str, list[StudentRow]]:
    by_id: dict[str, list[StudentRow]] = {}
    for row in export.students:
        value = row.ids[name].strip()
        if value:
            by_id.setdefault(value, []).append(row)
    return by_id


def map_lessons(export: Export, lessons: list[str], mapping: dict[str, str] | None = None) -> dict[str, Assignment]:
    """The assignment column each graded lesson goes into.

    ``mapping`` gives, for a lesson, its assignment's Canvas id (``4101``), its header
    (``Budget (4101)``) or its title (``Budget``, when no other assignment has it). A lesson it
    leaves out goes into the assignment titled exactly as the lesson (``01-budget``), if there is
    one. Raises :class:`CanvasError` for a lesson with no column, naming the columns it could be,
    for a mapping that names no column or more than one, and for two lessons in one column.
    """
    mapping = dict(mapping or {})
    unknown = sorted(set(mapping) - set(lessons))
    if unknown:
        raise CanvasError(f"the mapping names lessons that were not graded: {', '.join(unknown)}; "
                          f"the graded lessons are {', '.join(lessons)}")
    columns = [f"{a.title} ({a.canvas_id})" for a in export.assignments]
    chosen: dict[str, Assignment] = {}
    for lesson in lessons:
        wanted = mapping.get(lesson, lesson).strip()
        hits = [a for a in export.assignments
                if wanted in (a.canvas_id, f"{a.title} ({a.canvas_id})", a.title)]
        if len({a.canvas_id for a in hits}) > 1:
            raise CanvasError(f"{wanted!r} names {len(hits)} columns of the export for lesson {lesson} "
                              f"({'; '.join(f'{a.title} ({a.canvas_id})' for a in hits)}): give the assignment id")
        if not hits:
            how = f"the mapping's {wanted!r} names no column" if lesson in mapping else "no column is titled so"
            raise CanvasError(
                f"lesson {lesson} has no column in the export ({how}); map it to one of: {'; '.join(columns)} "
                f"(as '{lesson}=ASSIGNMENT ID')")
        chosen[lesson] = hits[0]
    by_column: dict[str, list[str]] = {}
    for lesson, assignment in chosen.items():
        by_column.setdefault(assignment.canvas_id, []).append(lesson)
    shared = {cid: names for cid, names in by_column.items() if len(names) > 1}
    if shared:
        cid, names = next(iter(shared.items()))
        raise CanvasError(f"lessons {', '.join(names)} are all mapped to assignment {cid}: each lesson needs a column of its own")
    return chosen


@dataclass(frozen=True)
class Change:
    """One cell :func:`fill_in` wrote: a student's grade for an assignment, before and after."""

    student: str
    name: str
    assignment: str
    before: str
    after: str

    @property
    def kind(self) -> str:
        """``new`` (the cell was blank), ``raised``, ``lowered`` or ``same``; for a cell Canvas
        marks excused or not applicable (``EX``, ``N/A``), ``excused`` when it was kept and
        ``unexcused`` when a score replaced it."""
        if self.before.strip().upper() in EXCUSED:
            return "excused" if self.after == self.before else "unexcused"
        if not self.before.strip():
            return "new"
        try:
            before = float(self.before)
        except ValueError:
            return "raised"  # a letter grade or an excused mark replaced by points
        after = float(self.after)
        return "same" if after == before else ("raised" if after > before else "lowered")


def fill_in(export: Export, match: Match, results: dict[str, dict], columns: dict[str, Assignment],
            *, overwrite_excused: bool = False) -> tuple[list[list[str]], list[Change]]:
    """The export's rows with each graded student's lesson scores written into their columns,
    scaled to the assignment's points possible, and the changes made.

    ``results`` is the grader's ``{student: {"lessons": {lesson: {"score", "max_score",
    "status"}}}}``. Only the cells of students in ``match.rows`` and lessons in ``columns`` are
    written, and only for a lesson that was graded (``error`` leaves the cell as exported, so a
    failed regrade never erases a grade); every other cell, row and column stays as exported. A
    cell marked excused or not applicable (:data:`EXCUSED`) stays as it is, reported as an
    ``excused`` change, unless ``overwrite_excused``. Raises :class:`CanvasError` when an
    assignment's points possible are not in the export or are not above zero.
    """
    for lesson, assignment in columns.items():
        if assignment.points is None:
            raise CanvasError(
                f"the export's Points Possible row gives no points for {assignment.title} ({assignment.canvas_id}), "
                f"the column of lesson {lesson}: set the assignment's points in Canvas and export again")
        if not assignment.points > 0:
            raise CanvasError(
                f"the export's Points Possible row gives {assignment.points:g} points for {assignment.title} "
                f"({assignment.canvas_id}), the column of lesson {lesson}: every score would be written as 0; "
                "set the assignment's points in Canvas and export again")
    rows = [list(row) for row in export.rows]
    changes = []
    for sid, row in sorted(match.rows.items()):
        lessons = results.get(sid, {}).get("lessons", {})
        for lesson, assignment in columns.items():
            result = lessons.get(lesson)
            if result is None or result.get("status") == "error":
                continue
            most = float(result["max_score"])
            points = float(result["score"]) / most * assignment.points if most > 0 else 0.0
            after = f"{round(points, 2):.2f}"
            before = rows[row.row][assignment.column]
            if before.strip().upper() in EXCUSED and not overwrite_excused:
                after = before
            rows[row.row][assignment.column] = after
            changes.append(Change(sid, row.name, f"{assignment.title} ({assignment.canvas_id})", before, after))
    return rows, changes


def write_export(rows: list[list[str]]) -> str:
    """``rows`` as CSV text for Canvas's importer (every cell as given: nothing is quoted away)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def read_grades(text: str) -> dict[str, dict]:
    """The grader's ``grades.csv`` as ``{student: {"lessons": {lesson: {"score", "max_score",
    "status"}}}}``; an id the report guarded with a leading ``'`` (``'-bob``) is read as itself."""
    students: dict[str, dict] = {}
    for record in csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline="")):
        try:
            sid, lesson = record["student"], record["lesson"]
            result = {"score": float(record["score"]), "max_score": float(record["max_score"]), "status": record["status"]}
        except (KeyError, TypeError, ValueError) as err:
            raise CanvasError(f"grades.csv is not the grader's: {err!r} in {record}; "
                              "pass --results the folder `grade` wrote") from None
        if sid.startswith("'") and sid[1:].startswith(FORMULA_STARTS):
            sid = sid[1:]
        students.setdefault(sid, {"lessons": {}})["lessons"][lesson] = result
    return students


def register(commands) -> None:
    """Add ``canvas EXPORT --results DIR [--map LESSON=ASSIGNMENT ...]`` to the command line."""
    parser = commands.add_parser(
        "canvas", help="fill in your Canvas gradebook export with the class's scores",
        description="Fill in the gradebook you exported from Canvas (Grades > Export > Export Entire Gradebook) "
                    "with the scores `grade` wrote, for Canvas's Import. Only graded cells change; a lesson whose "
                    "grading failed keeps the grade Canvas has. See autograder/README.md.")
    parser.add_argument("export", type=Path, metavar="EXPORT", help="the CSV file Canvas exported")
    parser.add_argument("--results", type=Path, default=Path("grading-output"),
                        help="the folder `grade` (or `merge`) wrote (default: grading-output)")
    parser.add_argument("--map", action="append", default=[], metavar="LESSON=ASSIGNMENT",
                        help="the assignment a lesson goes into: its Canvas id, header or title (repeat per lesson; "
                             "a lesson titled as itself in Canvas needs none)")
    parser.add_argument("--match-on", choices=ID_COLUMNS, default=None,
                        help="the id column holding the graded student ids (default: the one that holds most)")
    parser.add_argument("--overwrite-excused", action="store_true",
                        help="write scores over cells Canvas marks EX (excused) or N/A, ending the excusal "
                             "(default: they stay, and the summary counts them)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the filled-in file (default: RESULTS/canvas-import.csv)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        mapping = {}
        for item in args.map:
            lesson, sep, target = item.partition("=")
            if not sep or not lesson.strip() or not target.strip():
                raise CanvasError(f"--map takes LESSON=ASSIGNMENT (as 01-budget=4101), got {item!r}")
            mapping[lesson.strip()] = target.strip()
        grades_path = args.results / "grades.csv"
        if not grades_path.is_file():
            raise CanvasError(f"there is no {grades_path}: grade the class first, or pass --results the folder it wrote")
        if not args.export.is_file():
            raise CanvasError(f"there is no file {args.export}: export the gradebook from Canvas first")
        export = read_export(args.export.read_text(encoding="utf-8-sig"))
        results = read_grades(grades_path.read_text(encoding="utf-8"))
        lessons = sorted({lesson for record in results.values() for lesson in record["lessons"]})
        match = match_students(export, sorted(results), args.match_on)
        columns = map_lessons(export, lessons, mapping)
        rows, changes = fill_in(export, match, results, columns, overwrite_excused=args.overwrite_excused)
    except (CanvasError, OSError, UnicodeDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = args.out or args.results / "canvas-import.csv"
    out.write_text(write_export(rows), encoding="utf-8")
    print(_summary(match, columns, changes))
    print(f"\nwrote {out}: import it in Canvas (Grades > Import) and check the preview before you confirm.")
    return 0


def _summary(match: Match, columns: dict[str, Assignment], changes: list[Change]) -> str:
    kinds = {kind: [c for c in changes if c.kind == kind]
             for kind in ("new", "raised", "lowered", "same", "excused", "unexcused")}
    lines = [f"students: {len(match.rows)} matched by {match.column}; {len(match.ungraded)} rows not graded, left as they were",
             "columns: " + "; ".join(f"{lesson} -> {a.title} ({a.canvas_id}, {a.points:g} points)"
                                     for lesson, a in columns.items()),
             f"grades: {len(kinds['new'])} new, {len(kinds['raised'])} raised, {len(kinds['lowered'])} lowered, "
             f"{len(kinds['same'])} unchanged"]
    if kinds["excused"]:
        lines.append(f"excused or N/A, kept as they were: {len(kinds['excused'])} (--overwrite-excused writes "
                     "scores over them)")
    if kinds["unexcused"]:
        lines.append(f"excused or N/A, overwritten with scores (--overwrite-excused): {len(kinds['unexcused'])}")
    if match.missing:
        lines.append(f"not in the export, so not written: {', '.join(match.missing)}")
    lines += [f"  lowered: {c.name} ({c.student}), {c.assignment}: {c.before} -> {c.after}" for c in kinds["lowered"]]
    lines += [f"  excusal ended: {c.name} ({c.student}), {c.assignment}: {c.before} -> {c.after}"
              for c in kinds["unexcused"]]
    return "\n".join(lines)
