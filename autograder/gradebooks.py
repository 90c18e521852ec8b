"""Check each student's private gradebook, then merge them into one nbgrader gradebook.

Every worker grades into its own copy of the template gradebook (nbgrader's SQLite database),
so parallel workers never contend for a lock. Before a copy is trusted, :func:`check_gradebook`
makes sure it is a sound database, that the course part (lessons, notebooks, cells, max scores,
hidden test sources) is exactly the template's, that it holds only that student, and that every
score lies between 0 and the cell's maximum. :func:`merge_gradebooks` then copies the
template and adds each student's rows; nbgrader ids are UUIDs, so rows never collide. The
result works with ``nbgrader export``, ``formgrader`` and ``generate_feedback``.

Templates released on different machines (the shards of one class) hold the same lessons under
different ids: :func:`rebase_gradebook` moves a student's gradebook onto another template,
matching lessons, notebooks and cells by name, so the shards' gradebooks merge into one.

>>> STUDENT_TABLES
('student', 'submitted_assignment', 'submitted_notebook', 'grade', 'comment')
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import time
from contextlib import closing
from pathlib import Path

__all__ = ["GradebookError", "check_gradebook", "merge_gradebooks", "rebase_gradebook", "COURSE_TABLES",
           "STUDENT_TABLES"]

COURSE_TABLES = ("course", "assignment", "notebook", "base_cell", "source_cell", "grade_cells",
                 "solution_cells", "task_cells", "alembic_version")
STUDENT_TABLES = ("student", "submitted_assignment", "submitted_notebook", "grade", "comment")


class GradebookError(RuntimeError):
    """A private gradebook is not what the grader wrote; the message says what is wrong."""


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _table_digest(db: sqlite3.Connection, table: str) -> str:
    rows = sorted(repr(row) for row in db.execute(f"SELECT * FROM {table}"))  # noqa: S608 (fixed names)
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def check_gradebook(path: Path, template: Path, student: str) -> None:
    """Raise :class:`GradebookError` unless ``path`` is a sound gradebook for ``student`` only."""
    try:
        with closing(_connect(path)) as db, closing(_connect(template)) as reference:
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                raise GradebookError(f"{path} is damaged (SQLite integrity check failed)")
            for table in COURSE_TABLES:
                if _table_digest(db, table) != _table_digest(reference, table):
                    raise GradebookError(f"{path}: the course table {table!r} differs from the template")
            students = {row[0] for row in db.execute("SELECT id FROM student")}
            if students - {student}:
                raise GradebookError(f"{path} holds other students: {sorted(students - {student})}")
            owners = {row[0] for row in db.execute("SELECT student_id FROM submitted_assignment")}
            if owners - {student}:
                raise GradebookError(f"{path} holds submissions of {sorted(owners - {student})}")
            bad = db.execute(
                "SELECT g.id, g.auto_score, c.max_score FROM grade g JOIN grade_cells c ON g.cell_id = c.id "
                "WHERE g.auto_score IS NOT NULL AND (g.auto_score < 0 OR g.auto_score > c.max_score)"
            ).fetchall()
            if bad:
                raise GradebookError(f"{path} holds scores outside [0, max]: {bad[:3]}")
            orphans = db.execute(
                "SELECT COUNT(*) FROM grade WHERE notebook_id NOT IN (SELECT id FROM submitted_notebook)"
            ).fetchone()[0]
            if orphans:
                raise GradebookError(f"{path} holds {orphans} grades of no submitted notebook")
    except sqlite3.DatabaseError as err:
        raise GradebookError(f"{path} is not a readable gradebook: {err}") from None


# What an instructor enters in the formgrader, kept across a re-grade: per table, the columns
# that say something was entered, then the columns to carry.
_MANUAL = {
    "grade": (("manual_score", "extra_credit"), ("manual_score", "extra_credit", "needs_manual_grade")),
    "comment": (("manual_comment",), ("manual_comment",)),
}


def _cells(schema: str, table: str) -> str:
    """Rows of ``table`` (grade or comment) with their student, lesson, notebook, cell name and
    submission time, as columns 1 to 6 after the row's ``t.id``."""
    return (f"SELECT t.id, sa.student_id, a.name, n.name, c.name, sa.timestamp FROM {schema}.{table} t "
            f"JOIN {schema}.submitted_notebook sn ON t.notebook_id = sn.id "
            f"JOIN {schema}.submitted_assignment sa ON sn.assignment_id = sa.id "
            f"JOIN {schema}.assignment a ON sa.assignment_id = a.id "
            f"JOIN {schema}.notebook n ON sn.notebook_id = n.id "
            f"JOIN {schema}.base_cell c ON t.cell_id = c.id")


def _notebooks(schema: str) -> str:
    """Submitted notebooks with their student, lesson, notebook name, ``NULL`` and submission time."""
    return (f"SELECT t.id, sa.student_id, a.name, n.name, NULL, sa.timestamp FROM {schema}.submitted_notebook t "
            f"JOIN {schema}.submitted_assignment sa ON t.assignment_id = sa.id "
            f"JOIN {schema}.assignment a ON sa.assignment_id = a.id "
            f"JOIN {schema}.notebook n ON t.notebook_id = n.id")


def _manual_work(db: sqlite3.Connection) -> dict[tuple, tuple[str, dict]]:
    """What the instructor entered in gradebook ``db`` through the formgrader (a score
    overridden, extra credit, a comment, a flag), by (table, student, lesson, notebook, cell):
    the submission's time and the values."""
    work: dict[tuple, tuple[str, dict]] = {}
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"grade", "comment", "submitted_notebook"} <= tables:
        return work  # an empty file (the hub's formgrader makes one before any grading) holds nothing yet
    queries = {table: (_cells("main", table), entered, carried) for table, (entered, carried) in _MANUAL.items()}
    queries["submitted_notebook"] = (_notebooks("main"), ("flagged",), ("flagged",))
    for table, (query, entered, carried) in queries.items():
        where = " OR ".join(f"t.{column}" + (" = 1" if column == "flagged" else " IS NOT NULL") for column in entered)
        columns = ", ".join(f"t.{column}" for column in carried)
        for row in db.execute(query.replace("SELECT t.id,", f"SELECT {columns},", 1) + f" WHERE {where}"):
            values, (student, lesson, notebook, cell, timestamp) = row[:len(carried)], row[len(carried):]
            work[(table, student, lesson, notebook, cell)] = (timestamp, dict(zip(carried, values, strict=True)))
    return work


def _carry_manual_work(db: sqlite3.Connection, work: dict[tuple, tuple[str, dict]]) -> list[str]:
    """Write ``work`` (:func:`_manual_work` of the previous gradebook) into the merged ``db``
    wherever the same submission holds the same cell; what cannot go is returned, one line each."""
    left = []
    for (table, student, lesson, notebook, cell), (timestamp, values) in sorted(work.items(), key=str):
        query = _notebooks("main") if table == "submitted_notebook" else _cells("main", table)
        where = " WHERE sa.student_id = ? AND a.name = ? AND n.name = ?" + (" AND c.name = ?" if cell else "")
        target = db.execute(query + where, (student, lesson, notebook, *([cell] if cell else []))).fetchone()
        what = f"{student}'s {lesson}/{notebook}" + (f" cell {cell}" if cell else "") + f": {values}"
        if target is None:
            left.append(f"{what} (not in this run's gradebook)")
        elif target[5] != timestamp:
            left.append(f"{what} (submitted again since: {timestamp} then, {target[5]} now)")
        else:
            settings = ", ".join(f"{column} = ?" for column in values)
            db.execute(f"UPDATE {table} SET {settings} WHERE id = ?", (*values.values(), target[0]))  # noqa: S608
    return left


def merge_gradebooks(template: Path, students: dict[str, Path], dest: Path) -> list[str]:
    """Write ``dest``: the template gradebook plus the rows of each student's gradebook.

    The merged gradebook is built beside ``dest``, checked, then written over ``dest`` in place
    through SQLite's backup API, so that a formgrader holding it open
    (``hub/exchange/nbgrader_config.py``) reads the new grades rather than the file a rename
    would have left it. A new ``dest`` gets the permissions the umask allows, so instructors
    sharing a course root (umask 002) can each grade again.

    What the instructor entered in the formgrader into the existing ``dest`` (scores
    overridden, extra credit, comments, flags) is carried into the new one wherever the same
    submission holds the same cell. Anything that cannot be carried (the learner submitted
    again, or the lesson was not graded in this run) is listed in the returned notes, and the
    previous gradebook is kept beside ``dest`` under a name the notes give."""
    tmp = dest.with_suffix(".tmp")
    shutil.copy(template, tmp)
    work: dict[tuple, tuple[str, dict]] = {}
    if dest.exists():
        with closing(sqlite3.connect(f"file:{dest}?mode=ro", uri=True)) as previous:
            work = _manual_work(previous)
    with closing(sqlite3.connect(f"file:{tmp}", uri=True)) as db:
        for _student, path in sorted(students.items()):
            db.execute("ATTACH DATABASE ? AS s", (f"file:{path}?mode=ro",))
            try:
                for table in STUDENT_TABLES:
                    db.execute(f"INSERT INTO main.{table} SELECT * FROM s.{table}")  # noqa: S608
                db.commit()
            finally:
                db.execute("DETACH DATABASE s")
        left = _carry_manual_work(db, work)
        db.commit()
        if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            raise GradebookError(f"the merged gradebook {tmp} failed SQLite's integrity check")
    notes = []
    if left:
        kept = dest.with_name(f"{dest.stem}-before-{time.strftime('%Y%m%d-%H%M%S')}.db")
        with closing(sqlite3.connect(f"file:{dest}?mode=ro", uri=True)) as previous, \
                closing(sqlite3.connect(kept)) as copy:
            previous.backup(copy)
        notes = [f"the previous gradebook is kept as {kept.name}: {len(left)} entries made in the formgrader "
                 "could not be carried into this one"] + left
    if not dest.exists():  # made with the umask's permissions (SQLite would make it 0o644)
        os.close(os.open(dest, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    with closing(sqlite3.connect(f"file:{tmp}?mode=ro", uri=True)) as merged, closing(sqlite3.connect(dest)) as kept_open:
        merged.backup(kept_open)
    tmp.unlink()
    return notes


def _course_ids(db: sqlite3.Connection, schema: str) -> dict[tuple, str]:
    """Each lesson, notebook and cell of a gradebook by its names, with its id."""
    ids: dict[tuple, str] = {}
    for row_id, name in db.execute(f"SELECT id, name FROM {schema}.assignment"):  # noqa: S608 (fixed names)
        ids[("assignment", name)] = row_id
    for row_id, lesson, name in db.execute(
            f"SELECT n.id, a.name, n.name FROM {schema}.notebook n JOIN {schema}.assignment a "  # noqa: S608
            "ON n.assignment_id = a.id"):
        ids[("notebook", lesson, name)] = row_id
    for row_id, lesson, notebook, name, kind in db.execute(
            f"SELECT c.id, a.name, n.name, c.name, c.type FROM {schema}.base_cell c "  # noqa: S608
            f"JOIN {schema}.notebook n ON c.notebook_id = n.id JOIN {schema}.assignment a ON n.assignment_id = a.id"):
        ids[("cell", lesson, notebook, name, kind)] = row_id
    return ids


def rebase_gradebook(path: Path, own_template: Path, template: Path, dest: Path, student: str) -> None:
    """Write ``dest``: ``template`` plus the student rows of ``path``, which was graded on ``own_template``.

    Every reference from a student row to a lesson, notebook or cell is moved to the row of the
    same name in ``template``; the result is then checked like any private gradebook. Raises
    :class:`GradebookError` when ``template`` lacks something ``path`` was graded on.
    """
    check_gradebook(path, own_template, student)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.copy(template, tmp)
    with closing(sqlite3.connect(f"file:{tmp}", uri=True)) as db:
        db.execute("ATTACH DATABASE ? AS s", (f"file:{path}?mode=ro",))
        mine, target = _course_ids(db, "s"), _course_ids(db, "main")
        lost = sorted(set(mine) - set(target))
        if lost:
            raise GradebookError(f"{template} lacks {lost[0]}, which {path} was graded on: release the same "
                                 "lessons for every shard")
        db.execute("CREATE TEMP TABLE idmap (old TEXT PRIMARY KEY, new TEXT NOT NULL)")
        db.executemany("INSERT INTO idmap VALUES (?, ?)", [(mine[key], target[key]) for key in mine])
        for table in STUDENT_TABLES:
            columns = [row[1] for row in db.execute(f"PRAGMA s.table_info({table})")]
            course_refs = {row[3] for row in db.execute(f"PRAGMA s.foreign_key_list({table})")
                           if row[2] in ("assignment", "notebook", "base_cell")}
            chosen = [f"COALESCE((SELECT new FROM idmap WHERE old = {c}), {c})" if c in course_refs else c
                      for c in columns]
            db.execute(f"INSERT INTO main.{table} ({', '.join(columns)}) "  # noqa: S608 (names from the schema)
                       f"SELECT {', '.join(chosen)} FROM s.{table}")
        db.commit()
        db.execute("DETACH DATABASE s")
    check_gradebook(tmp, template, student)
    tmp.replace(dest)
