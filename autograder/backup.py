"""``python -m autograder backup DEST`` and ``restore BACKUP``: the grades, copied while in use.

Manual grades and comments live only in SQLite gradebooks: the course root's ``gradebook.db``
(the lessons' definitions), each grading output's ``gradebook.db`` (scores, the formgrader's
manual grades and comments) and the ``gradebook-before-*.db`` kept beside it, and, with an
exchange service, ngshare's database (``--db``). Copying such a file while the formgrader or
a grading writes to it can catch it half written. ``backup`` copies each through SQLite's
online backup API, which gives a consistent snapshot of what was committed, checks each copy
(``PRAGMA integrity_check``), and writes ``manifest.json`` (where each came from, its tables'
row counts, its SHA-256) into a new folder ``DEST/<time>/``.

``restore BACKUP`` puts every database of a backup back where it came from, through the same
API, after keeping the database it replaces as ``<name>.before-restore-<time>``; ``--only``
restores one. Run backups from cron (``0 * * * *``) into a folder on another disk.

>>> import sqlite3, tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> with closing(sqlite3.connect(root / "gradebook.db")) as db:
...     _ = db.execute("CREATE TABLE grade (score REAL)")
>>> folder = backup(root, root / "backups")
>>> json.loads((folder / MANIFEST).read_text())["databases"][0]["tables"]
{'grade': 0}
"""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

__all__ = ["BackupError", "backup", "restore", "gradebooks", "MANIFEST"]

MANIFEST = "manifest.json"


class BackupError(RuntimeError):
    """A database could not be copied or checked; the message says which and what to do."""


def gradebooks(course: Path) -> list[Path]:
    """The course root's gradebooks: its own, and those of each grading output in it."""
    found = [course / "gradebook.db"] if (course / "gradebook.db").is_file() else []
    for folder in sorted(p for p in course.iterdir() if p.is_dir() and not p.name.startswith(".")):
        found += sorted(folder.glob("gradebook*.db"))
    return found


def _copy(source: Path, target: Path) -> None:
    """``source`` into ``target`` through SQLite's online backup: what was committed, whole."""
    try:
        with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)) as src, \
                closing(sqlite3.connect(target)) as dst:
            src.backup(dst)
    except sqlite3.Error as err:
        raise BackupError(f"could not copy {source}: {err}; is it a SQLite database, and readable by you?") from err


def _describe(path: Path) -> dict:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        check = db.execute("PRAGMA integrity_check").fetchone()[0]
        if check != "ok":
            raise BackupError(f"the copy {path} failed SQLite's integrity check: {check}")
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        counts = {table: db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0] for table in tables}
    return {"tables": counts, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "bytes": path.stat().st_size}


def backup(course: Path, dest: Path, extra: list[Path] = (), *, now: datetime.datetime | None = None) -> Path:
    """Copy the course's gradebooks and ``extra`` databases into a new ``dest/<time>/``; that folder."""
    sources = [p.resolve() for p in [*gradebooks(course), *extra]]
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise BackupError(f"no database at {', '.join(missing)}: check the path given with --db")
    if not sources:
        raise BackupError(f"no gradebook in {course}: give the course root with --course")
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    folder = dest / stamp
    folder.mkdir(parents=True, exist_ok=False)
    entries = []
    for index, source in enumerate(sources):
        target = folder / f"{index:02d}-{source.name}"
        _copy(source, target)
        entries.append({"source": str(source), "copy": target.name, **_describe(target)})
    (folder / MANIFEST).write_text(json.dumps({"made": stamp, "databases": entries}, indent=1) + "\n",
                                   encoding="utf-8")
    return folder


def restore(folder: Path, only: str | None = None, *, now: datetime.datetime | None = None) -> list[Path]:
    """Put the databases of the backup ``folder`` back where they came from; the paths restored."""
    try:
        entries = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["databases"]
    except (OSError, ValueError, KeyError) as err:
        raise BackupError(f"{folder} is not a backup made by `python -m autograder backup` (no readable "
                          f"{MANIFEST}): {err}") from err
    if only is not None:
        entries = [e for e in entries if e["source"] == str(Path(only).resolve())]
        if not entries:
            raise BackupError(f"the backup {folder} holds no copy of {only}; its databases are in {MANIFEST}")
    for entry in entries:  # every copy checked before any database is touched
        copy = folder / entry["copy"]
        if not copy.is_file() or hashlib.sha256(copy.read_bytes()).hexdigest() != entry["sha256"]:
            raise BackupError(f"{copy} changed since the backup was made (its SHA-256 differs): nothing restored")
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    restored = []
    for entry in entries:
        copy, target = folder / entry["copy"], Path(entry["source"])
        if target.exists():
            shutil.copy2(target, target.with_name(f"{target.name}.before-restore-{stamp}"))
        target.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(f"file:{copy}?mode=ro", uri=True)) as src, \
                closing(sqlite3.connect(target, timeout=30)) as dst:
            src.backup(dst)
        restored.append(target)
    return restored


def register(commands) -> None:
    """Add ``backup DEST`` and ``restore BACKUP`` to the command line."""
    parser = commands.add_parser("backup", help="copy every gradebook (and --db databases) while in use",
                                 description=__doc__.split("\n\n")[1])
    parser.add_argument("dest", type=Path, help="folder to make the backup in (a new DEST/<time>/ each run)")
    parser.add_argument("--course", type=Path, default=Path("."), help="the course root (default: here)")
    parser.add_argument("--db", type=Path, action="append", default=[],
                        help="another SQLite database to copy, such as ngshare's (repeatable)")
    parser.set_defaults(func=_backup)
    again = commands.add_parser("restore", help="put a backup's databases back where they came from")
    again.add_argument("backup", type=Path, help="a DEST/<time>/ folder that backup made")
    again.add_argument("--only", metavar="PATH", help="restore only the database that was at PATH")
    again.set_defaults(func=_restore)


def _backup(args) -> int:
    try:
        folder = backup(args.course.resolve(), args.dest, args.db)
    except (BackupError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"backed up {len(json.loads((folder / MANIFEST).read_text())['databases'])} databases into {folder}")
    return 0


def _restore(args) -> int:
    try:
        restored = restore(args.backup, args.only)
    except (BackupError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in restored:
        print(f"restored {path} (the one it replaced is beside it, .before-restore-...)")
    return 0
