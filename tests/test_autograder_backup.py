"""``python -m autograder backup`` and ``restore`` (``autograder/backup.py``): every gradebook of a
course root and ngshare's database copied while a writer holds them open, checked, and put back."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing

from support.pipeline import REPO


def make_db(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE grade (student TEXT, score REAL)")
        db.executemany("INSERT INTO grade VALUES (?, ?)", rows)
        db.commit()


def rows(path):
    with closing(sqlite3.connect(path)) as db:
        return sorted(db.execute("SELECT student, score FROM grade"))


def run(*args):
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_grades_come_back_as_they_were_backed_up_while_a_writer_held_them(tmp_path):
    course, dest = tmp_path / "course", tmp_path / "backups"
    make_db(course / "gradebook.db", [("lessons", 0)])
    make_db(course / "grading-output" / "gradebook.db", [("ana", 5.0), ("bo", 2.0)])
    make_db(course / "grading-output" / "gradebook-before-20261201.db", [("ana", 4.0)])
    ngshare = tmp_path / "hub-data" / "ngshare" / "ngshare.db"
    make_db(ngshare, [("ana", 1.0)])
    writer = sqlite3.connect(course / "grading-output" / "gradebook.db")
    try:  # the formgrader in the middle of a manual grade: not committed, so not in the backup
        writer.execute("UPDATE grade SET score = 99 WHERE student = 'bo'")
        made = run("backup", dest, "--course", course, "--db", ngshare)
    finally:
        writer.rollback()
        writer.close()
    assert made.returncode == 0, made.stderr
    (folder,) = dest.iterdir()
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    sources = {entry["source"]: entry for entry in manifest["databases"]}
    assert set(sources) == {str(course / "gradebook.db"), str(course / "grading-output" / "gradebook.db"),
                            str(course / "grading-output" / "gradebook-before-20261201.db"), str(ngshare)}
    assert sources[str(course / "grading-output" / "gradebook.db")]["tables"] == {"grade": 2}

    with closing(sqlite3.connect(course / "grading-output" / "gradebook.db")) as db:  # grades lost after it
        db.execute("DELETE FROM grade")
        db.commit()
    back = run("restore", folder, "--only", course / "grading-output" / "gradebook.db")
    assert back.returncode == 0, back.stderr
    assert rows(course / "grading-output" / "gradebook.db") == [("ana", 5.0), ("bo", 2.0)]
    (kept,) = (course / "grading-output").glob("gradebook.db.before-restore-*")
    assert rows(kept) == []  # what it replaced is kept beside it

    (folder / manifest["databases"][-1]["copy"]).write_bytes(b"not the copy any more")
    refused = run("restore", folder)
    assert refused.returncode == 2 and "changed since the backup was made" in refused.stderr
    assert rows(course / "gradebook.db") == [("lessons", 0)] and len(list(course.glob("*.before-restore-*"))) == 0


def test_nothing_to_back_up_or_a_missing_database_says_what_to_give(tmp_path):
    (tmp_path / "empty").mkdir()
    nothing = run("backup", tmp_path / "b", "--course", tmp_path / "empty")
    assert nothing.returncode == 2 and "give the course root with --course" in nothing.stderr
    missing = run("backup", tmp_path / "b", "--course", tmp_path / "empty", "--db", tmp_path / "nope.db")
    assert missing.returncode == 2 and "check the path given with --db" in missing.stderr
    assert run("restore", tmp_path / "empty").stderr.count("is not a backup made by") == 1
