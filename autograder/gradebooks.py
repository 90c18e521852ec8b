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
import shutil
import sqlite3
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


def merge_gradebooks(template: Path, students: dict[str, Path], dest: Path) -> None:
    """Write ``dest``: the template gradebook plus the rows of each student's gradebook.

    The merged gradebook is built beside ``dest`` and checked. A new ``dest`` is then renamed
    into place; an existing one is overwritten in place, through SQLite's backup API, so that a
    formgrader holding it open (``hub/exchange/nbgrader_config.py``) reads the new grades
    rather than the file a rename would have left it."""
    tmp = dest.with_suffix(".tmp")
    shutil.copy(template, tmp)
    with closing(sqlite3.connect(f"file:{tmp}", uri=True)) as db:
        for _student, path in sorted(students.items()):
            db.execute("ATTACH DATABASE ? AS s", (f"file:{path}?mode=ro",))
            try:
                for table in STUDENT_TABLES:
                    db.execute(f"INSERT INTO main.{table} SELECT * FROM s.{table}")  # noqa: S608
                db.commit()
            finally:
                db.execute("DETACH DATABASE s")
        if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            raise GradebookError(f"the merged gradebook {tmp} failed SQLite's integrity check")
    if not dest.exists():
        tmp.replace(dest)
        return
    with closing(sqlite3.connect(f"file:{tmp}?mode=ro", uri=True)) as merged, closing(sqlite3.connect(dest)) as kept:
        merged.backup(kept)
    tmp.unlink()


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
