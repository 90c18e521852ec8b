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
import codecs
import csv
import io
import re
import sys
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from .report import FORMULA_STARTS

__all__ = ["CanvasError", "Assignment", "StudentRow", "Export", "Layout", "Match", "Change", "ID_COLUMNS", "EXCUSED",
           "decode_export", "read_export",
           "match_students", "map_lessons", "fill_in", "write_export", "read_grades", "register"]

ID_COLUMNS = ("ID", "SIS User ID", "SIS Login ID", "Integration ID")
"""The columns Canvas matches a row by, in the order tried when more than one would do."""

NAME_COLUMNS = (("Student",), ("LastName", "FirstName"))
"""The ways an export names its students: one ``Student`` column, or Canvas's split-name layout."""

IDENTITY_COLUMNS = frozenset({"Student", "LastName", "FirstName", "Section", *ID_COLUMNS})

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


@dataclass(frozen=True)
class Layout:
    """How an export is written, so that the filled-in file is written the same way: its
    separator, whether numbers use a decimal comma (``72,50``), its line ends and its encoding."""

    delimiter: str = ","
    decimal_comma: bool = False
    line_end: str = "\n"
    encoding: str = "utf-8"

    def number(self, cell: str) -> float:
        """A number as this export writes it (raises ``ValueError`` for anything else)."""
        text = cell.strip()
        return float(text.replace(",", ".") if self.decimal_comma else text)

    def write(self, value: float) -> str:
        """``value`` to two decimals, rounded half up as Canvas shows grades, in this export's style."""
        text = str(Decimal(repr(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
        return text.replace(".", ",") if self.decimal_comma else text


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
    layout: Layout = field(default_factory=Layout)

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


def decode_export(data: bytes) -> tuple[str, str]:
    r"""The text of an export file and its encoding: UTF-8 (with or without a byte-order mark),
    UTF-16 (with one, as a spreadsheet's "Unicode text" writes it), or else Windows-1252 (an
    older spreadsheet's re-save). Line ends are left as they are.

    >>> decode_export("Student,ID\r\nZoë,1\r\n".encode("cp1252"))
    ('Student,ID\r\nZoë,1\r\n', 'cp1252')
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16"), "utf-16"
    if data.startswith(codecs.BOM_UTF8):
        return data.decode("utf-8-sig"), "utf-8-sig"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError as err:
        raise CanvasError(
            f"the export is neither UTF-8, UTF-16 nor Windows-1252 text (byte {err.start}): export the gradebook "
            "from Canvas again, and open it in a spreadsheet only to look") from None


def _layout(text: str, encoding: str) -> Layout:
    """The separator and line end of ``text``, from its header line."""
    first = text.split("\n", 1)[0]
    outside = re.sub(r'"[^"]*"', "", first)
    delimiter = ";" if outside.count(";") > outside.count(",") else ","
    return Layout(delimiter, False, "\r\n" if first.endswith("\r") else "\n", encoding)


def read_export(text: str, encoding: str = "utf-8") -> Export:
    """The gradebook export in ``text`` (a byte-order mark at its start is allowed), in the layout
    it is written in: ``,`` or ``;`` between cells, points with a decimal point or comma, one
    ``Student`` column or Canvas's ``LastName`` and ``FirstName``. ``encoding`` is the file's,
    kept so that the filled-in file is written in it (:func:`decode_export` finds it).

    Raises :class:`CanvasError` when the file is not a gradebook export: no student name column,
    no id column, or no assignment column; or when it is not strictly valid CSV.
    """
    text = text.removeprefix("\ufeff")
    layout = _layout(text, encoding)
    rows, lines = _parse(text, layout.delimiter)
    header = [cell.strip() for cell in rows[0]] if rows else []
    names = next((columns for columns in NAME_COLUMNS if all(c in header for c in columns)), None)
    if names is None:
        first = ", ".join(rows[0][:6]) if rows else "nothing"
        raise CanvasError(
            f"this is not a Canvas gradebook export: its first row should start with Student, ID, ..., "
            f"and it reads {first!r}; in Canvas, open Grades > Export > Export Entire Gradebook and use that file")
    width = len(header)
    for row, line in zip(rows, lines, strict=True):
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
    name_at = [column[c] for c in names]
    points_row = next((index for index, row in enumerate(rows[1:3], start=1)
                       if row[name_at[0]].strip() == "Points Possible"), None)
    assignments, read_only = [], []
    points_cells = []
    for index, name in enumerate(header):
        if name in IDENTITY_COLUMNS:
            continue
        found = ASSIGNMENT.match(name)
        if found is None:
            read_only.append(name)
            continue
        points_cells.append((index, found, rows[points_row][index].strip() if points_row is not None else ""))
    decimal_comma = any(re.fullmatch(r"\d+,\d+", cell) for _, _, cell in points_cells)
    layout = Layout(layout.delimiter, decimal_comma, layout.line_end, layout.encoding)
    for index, found, points in points_cells:
        try:
            value = layout.number(points) if points else None
        except ValueError:
            value = None
        assignments.append(Assignment(found["title"], found["id"], index, value))
    if not assignments:
        raise CanvasError(
            "the export has no assignment column (a column named 'Title (assignment id)'): create the "
            "lessons' assignments in Canvas, publish them, and export the gradebook again")
    students = []
    for index, row in enumerate(rows[1:], start=1):
        if index == points_row or _is_posting_row(row, name_at, column, id_columns) or not any(c.strip() for c in row):
            continue
        name = ", ".join(row[i] for i in name_at if row[i].strip())
        students.append(StudentRow(
            row=index, name=name, section=row[column["Section"]] if "Section" in column else "",
            ids={name: row[column[name]] for name in id_columns}))
    return Export(rows, assignments, students, read_only, id_columns, layout)


def _parse(text: str, delimiter: str = ",") -> tuple[list[list[str]], list[int]]:
    """The rows of CSV ``text`` read strictly, each with the line it starts on."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
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


def _is_posting_row(row: list[str], name_at: list[int], column: dict[str, int], id_columns: list[str]) -> bool:
    """A row that says which assignments are posted manually: no student, no id."""
    return not any(row[i].strip() for i in name_at) and not any(row[column[name]].strip() for name in id_columns)


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


def map_lessons(export: Export, lessons: list[str], mapping: dict[str, str] | None = None,
                *, unplaced: list[str] | None = None) -> dict[str, Assignment]:
    """The assignment column each graded lesson goes into.

    ``mapping`` gives, for a lesson, its assignment's Canvas id (``4101``), its header
    (``Budget (4101)``) or its title (``Budget``, when no other assignment has it). A lesson it
    leaves out goes into the assignment titled exactly as the lesson (``01-budget``), if there is
    one. Raises :class:`CanvasError` for a lesson with no column, naming the columns it could be,
    for a mapping that names no column or more than one, and for two lessons in one column. With
    ``unplaced`` (a list), a lesson the mapping leaves out and no column is titled as goes into
    that list instead, so the other lessons can still be filled in (at least one must have a
    column).
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
        if not hits and unplaced is not None and lesson not in mapping and len(unplaced) < len(lessons) - 1:
            unplaced.append(lesson)
            continue
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
    status: str = "graded"
    """The grading's status for this cell; ``error`` means it was kept as exported."""
    layout: Layout = field(default_factory=Layout, repr=False, compare=False)

    @property
    def kind(self) -> str:
        """``new`` (the cell was blank), ``raised``, ``lowered`` or ``same``; ``failed`` when the
        grading failed and the cell was kept; for a cell Canvas marks excused or not applicable
        (``EX``, ``N/A``), ``excused`` when it was kept and ``unexcused`` when a score replaced it."""
        if self.status == "error":
            return "failed"
        if self.before.strip().upper() in EXCUSED:
            return "excused" if self.after == self.before else "unexcused"
        if not self.before.strip():
            return "new"
        try:
            before = self.layout.number(self.before)
        except ValueError:
            return "raised"  # a letter grade replaced by points
        after = self.layout.number(self.after)
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
            if result is None:
                continue
            header = f"{assignment.title} ({assignment.canvas_id})"
            before = rows[row.row][assignment.column]
            if result.get("status") == "error":
                changes.append(Change(sid, row.name, header, before, before, "error", export.layout))
                continue
            most = float(result["max_score"])
            points = float(result["score"]) / most * assignment.points if most > 0 else 0.0
            after = export.layout.write(points)
            if before.strip().upper() in EXCUSED and not overwrite_excused:
                after = before
            rows[row.row][assignment.column] = after
            changes.append(Change(sid, row.name, header, before, after, str(result.get("status")), export.layout))
    return rows, changes


def write_export(rows: list[list[str]], layout: Layout | None = None) -> str:
    """``rows`` as CSV text for Canvas's importer, in the ``layout`` the export was read in
    (every cell as given: nothing is quoted away, a line end inside a cell stays as it was)."""
    layout = layout or Layout()
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=layout.delimiter, lineterminator=layout.line_end).writerows(rows)
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
        export = read_export(*decode_export(args.export.read_bytes()))
        results = read_grades(grades_path.read_text(encoding="utf-8"))
        lessons = sorted({lesson for record in results.values() for lesson in record["lessons"]})
        match = match_students(export, sorted(results), args.match_on)
        unplaced: list[str] = []
        columns = map_lessons(export, lessons, mapping, unplaced=unplaced)
        rows, changes = fill_in(export, match, results, columns, overwrite_excused=args.overwrite_excused)
        out = args.out or args.results / "canvas-import.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(write_export(rows, export.layout).encode(export.layout.encoding))
    except (CanvasError, OSError, UnicodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(_summary(match, columns, changes, unplaced))
    print(f"\nwrote {out}: import it in Canvas (Grades > Import) and check the preview before you confirm.")
    return 0


def _summary(match: Match, columns: dict[str, Assignment], changes: list[Change], unplaced: list[str] = ()) -> str:
    kinds = {kind: [c for c in changes if c.kind == kind]
             for kind in ("new", "raised", "lowered", "same", "excused", "unexcused", "failed")}
    lines = [f"students: {len(match.rows)} matched by {match.column}; {len(match.ungraded)} rows not graded, left as they were",
             "columns: " + "; ".join(f"{lesson} -> {a.title} ({a.canvas_id}, {a.points:g} points)"
                                     for lesson, a in columns.items()),
             f"grades: {len(kinds['new'])} new, {len(kinds['raised'])} raised, {len(kinds['lowered'])} lowered, "
             f"{len(kinds['same'])} unchanged"]
    if kinds["failed"]:
        lines.append(f"grading failed, so kept as exported: {len(kinds['failed'])} (see summary.md; grade them again)")
    if unplaced:
        lines.append(f"lessons with no column, not written: {', '.join(unplaced)} (map each with "
                     "--map LESSON=ASSIGNMENT ID)")
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
