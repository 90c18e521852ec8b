"""Find the submissions to grade and read them, without ever writing to them.

Accepted layouts of ``SUBMISSIONS`` (a folder; everything else in it is reported and ignored):

* **nbgrader's layout**: ``SUBMISSIONS/<student>/<lesson>/<notebook>.ipynb``, as ``nbgrader
  collect`` or the exchange leaves them (an optional ``timestamp.txt`` beside the notebook is
  passed on to nbgrader for late penalties);
* **one folder per student** holding the notebooks directly, or in any sub-folders:
  ``SUBMISSIONS/<student>/budget.ipynb``;
* **one zip archive per student**, as a learning-management system exports them:
  ``SUBMISSIONS/<student>.zip`` containing either layout, with or without a wrapping folder.

The student id is the folder name or the archive name without ``.zip``; characters other than
letters, digits and ``. _ - @ +`` become ``_``. When several entries give the same id, the one
whose name is exactly that id keeps it and each other one gets a suffix made from a hash of its
own name (``Jane Doe`` and ``Jane_Doe`` are graded as ``Jane_Doe-01332c87`` and ``Jane_Doe``), so
the result never depends on the order the folder is listed in; the summary says so. A notebook belongs to a lesson by its file
name (each lesson has one notebook, such as ``budget.ipynb`` for ``01-budget``); when several
files have that name, the one inside a folder named after the lesson wins, then the shortest
path, and the others are reported. Symbolic links are never followed and archive members are
never extracted to disk: a submission cannot point the grader at files outside itself.
Nothing is dropped silently: every folder, file or archive entry that is skipped (hidden names
starting with ``.``, checkpoint copies, files that are not notebooks, entries past the limits)
is named in a note.

>>> student_id("Jane Doe_12345_assignsubmission_file_")
'Jane_Doe_12345_assignsubmission_file_'
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = ["Entry", "Submission", "IntakeError", "collect", "student_id", "distinct_ids", "MAX_NOTEBOOK_BYTES"]

MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024
MAX_FILES = 5_000
MAX_DEPTH = 6
IGNORED_PARTS = {".ipynb_checkpoints", "__MACOSX", "__pycache__"}
LISTED = 10  # names shown in one note before "and N more"


class IntakeError(ValueError):
    """The submissions folder cannot be graded as it is; the message says what to change."""


@dataclass
class Entry:
    """One lesson of one student: the notebook's bytes, or why there are none."""

    lesson: str
    origin: str = ""
    data: bytes | None = None
    problem: str | None = None
    timestamp: str | None = None
    secret: str | None = None  # nbgrader's submission_secret.txt, needed by release_feedback
    missing: bool = False

    @property
    def status(self) -> str | None:
        """``None`` when there is a notebook to grade, else ``"missing"`` or ``"unreadable"``."""
        if self.data is not None:
            return None
        return "missing" if self.missing else "unreadable"

    def beside(self) -> dict[str, str]:
        """nbgrader's files that came with the notebook (``timestamp.txt``, ``submission_secret.txt``)."""
        found = {"timestamp.txt": self.timestamp, "submission_secret.txt": self.secret}
        return {name: text for name, text in found.items() if text}

    def digest(self) -> str:
        content = self.data if self.data is not None else (self.problem or "").encode()
        extra = f"{self.timestamp or ''}\0{self.secret or ''}".encode()
        return hashlib.sha256(content + b"\0" + extra).hexdigest()


@dataclass
class Submission:
    """Everything one student handed in."""

    student: str
    origin: str
    entries: dict[str, Entry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def digest(self) -> str:
        parts = [f"{lesson}:{entry.digest()}" for lesson, entry in sorted(self.entries.items())]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def student_id(name: str) -> str:
    """The nbgrader student id for a folder or archive name."""
    return re.sub(r"[^A-Za-z0-9._@+-]", "_", name).strip(".") or "student"


def _suffixed(sid: str, name: str, taken: set[str]) -> str:
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()
    for length in range(8, len(digest) + 1, 4):
        candidate = f"{sid}-{digest[:length]}"
        if candidate not in taken:
            return candidate
    raise AssertionError(f"no free id for {name!r}")  # 2**256 names would be needed


def distinct_ids(names: list[str]) -> dict[str, str]:
    """A distinct student id for each folder or archive name, whatever order they come in.

    A name keeps :func:`student_id` of itself unless another name gives the same id; then the
    name that *is* the id (a folder ``Jane_Doe``, else an archive ``Jane_Doe.zip``) keeps it and
    each other one gets ``-`` and the first 8 hex digits of the SHA-256 of its own name (more
    digits if those are taken).

    >>> ids = distinct_ids(["Jane Doe", "Jane_Doe", "bo.zip"])
    >>> ids["Jane_Doe"], ids["bo.zip"], ids["Jane Doe"]
    ('Jane_Doe', 'bo', 'Jane_Doe-01332c87')
    """
    def stem(name: str) -> str:
        return name[:-4] if name.lower().endswith(".zip") else name

    groups: dict[str, list[str]] = {}
    for name in sorted(set(names)):
        groups.setdefault(student_id(stem(name)), []).append(name)
    taken = set(groups)
    ids: dict[str, str] = {}
    for sid, group in sorted(groups.items()):
        if len(group) == 1:
            ids[group[0]] = sid
            continue
        keeper = next((n for n in group if n == sid), None) or next((n for n in group if stem(n) == sid), None)
        for name in group:
            if name == keeper:
                ids[name] = sid
            else:
                ids[name] = _suffixed(sid, name, taken)
                taken.add(ids[name])
    return ids


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def _skip_reason(name: str) -> str | None:
    """Why a folder or archive part named ``name`` is not looked into, or ``None``."""
    if name == ".ipynb_checkpoints":
        return "JupyterLab's checkpoint copies"
    if name in IGNORED_PARTS:
        return "a system folder"
    if name.startswith("."):
        return "a hidden name starting with '.'"
    return None


TIMESTAMP = re.compile(r"[0-9A-Za-z:. +\-]{8,64}")
SECRET = re.compile(r"[0-9A-Za-z+/=_\-]{1,200}")
BESIDE = {"timestamp.txt": TIMESTAMP, "submission_secret.txt": SECRET}  # nbgrader's files beside a notebook


@dataclass
class _Candidate:
    path: PurePosixPath
    size: int
    read: object  # () -> bytes | None (None: over the size limit)
    beside: object  # (name) -> str | None: a small file of BESIDE in the same folder


def _choose(lesson: str, filename: str, candidates: list[_Candidate], origin: str) -> tuple[Entry, list[str]]:
    matches = [c for c in candidates if c.path.name == filename]
    if not matches:
        return Entry(lesson, problem=f"no {filename} was submitted", missing=True), []
    in_folder = [c for c in matches if c.path.parent.name == lesson]
    ranked = sorted(in_folder or matches, key=lambda c: (len(c.path.parts), str(c.path)))
    chosen, notes = ranked[0], []
    others = [str(c.path) for c in matches if c is not chosen]
    if others:
        notes.append(f"{lesson}: graded {chosen.path}; also found and ignored {', '.join(others)}")
    where = f"{origin}/{chosen.path}" if not origin.endswith(".zip") else f"{origin}:{chosen.path}"
    if chosen.size > MAX_NOTEBOOK_BYTES:
        return Entry(lesson, where, problem=f"{chosen.path} is {chosen.size:,} bytes, over the "
                                            f"{MAX_NOTEBOOK_BYTES:,}-byte limit"), notes
    data = chosen.read()
    if data is None:
        return Entry(lesson, where, problem=f"{chosen.path} is over the {MAX_NOTEBOOK_BYTES:,}-byte limit"), notes
    return Entry(lesson, where, data=data, timestamp=chosen.beside("timestamp.txt"),
                 secret=chosen.beside("submission_secret.txt")), notes


def _read_file(path: Path) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    return None if len(data) > MAX_NOTEBOOK_BYTES else data


def _small_text(path: Path, pattern: re.Pattern) -> str | None:
    """The text of a small regular file when it matches ``pattern`` (never following a link)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > 200:
        return None
    text = path.read_text(encoding="utf-8", errors="replace").strip()
    return text if pattern.fullmatch(text) else None


def _folder_candidates(folder: Path, notes: list[str]) -> list[_Candidate]:
    candidates: list[_Candidate] = []
    skipped: list[str] = []  # folders not looked into, with the reason
    others: list[str] = []  # files that are neither notebooks nor nbgrader's files beside one
    count = 0
    for current, dirs, files in os.walk(folder, followlinks=False):
        if count > MAX_FILES:
            break
        rel = Path(current).relative_to(folder)
        kept = []
        for name in sorted(dirs):
            if os.path.islink(os.path.join(current, name)):
                notes.append(f"skipped the symbolic link {rel / name} (links are never followed)")
            elif _skip_reason(name):
                skipped.append(f"{rel / name}/ ({_skip_reason(name)})")
            elif len(rel.parts) >= MAX_DEPTH:
                skipped.append(f"{rel / name}/ (deeper than {MAX_DEPTH} folders)")
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            count += 1
            if count > MAX_FILES:
                notes.append(f"more than {MAX_FILES} files: the rest were not looked at (first skipped: "
                             f"{rel / name})")
                dirs[:] = []
                break
            path = Path(current) / name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                notes.append(f"skipped the symbolic link {rel / name} (links are never followed)")
                continue
            if not name.endswith(".ipynb") or not stat.S_ISREG(info.st_mode):
                if name not in BESIDE or not stat.S_ISREG(info.st_mode):
                    others.append(str(rel / name))
                continue
            candidates.append(_Candidate(
                PurePosixPath(*path.relative_to(folder).parts), info.st_size,
                (lambda p=path: _read_file(p)), (lambda name, p=path: _small_text(p.parent / name, BESIDE[name])),
            ))
    if skipped:
        notes.append(f"skipped {len(skipped)} folder(s): {_listing(skipped)}")
    if others:
        notes.append(f"ignored {len(others)} file(s) that are not notebooks: {_listing(others)}")
    return candidates


def _zip_candidates(archive: zipfile.ZipFile, notes: list[str]) -> list[_Candidate]:
    candidates = []
    infos = archive.infolist()
    members = {info.filename: info for info in infos}
    skipped: list[str] = []
    others: list[str] = []
    if len(infos) > MAX_FILES:
        notes.append(f"the archive holds {len(infos):,} entries: only the first {MAX_FILES:,} were looked at, "
                     f"{len(infos) - MAX_FILES:,} were skipped (first skipped: {infos[MAX_FILES].filename})")
    for info in infos[:MAX_FILES]:
        path = PurePosixPath(info.filename)
        if info.is_dir():
            continue
        if path.is_absolute() or ".." in path.parts:
            skipped.append(f"{info.filename} (a path outside the archive)")
            continue
        reason = next((_skip_reason(p) for p in path.parts[:-1] if _skip_reason(p)), None) or _skip_reason(path.name)
        if reason:
            skipped.append(f"{info.filename} ({reason})")
            continue
        if not path.name.endswith(".ipynb"):
            if path.name not in BESIDE:
                others.append(info.filename)
            continue
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            notes.append(f"skipped the symbolic link {path} in the archive")
            continue
        if info.flag_bits & 0x1:
            notes.append(f"skipped the encrypted file {path} in the archive")
            continue

        def read(info=info) -> bytes | None:
            with archive.open(info) as handle:
                data = handle.read(MAX_NOTEBOOK_BYTES + 1)
            return None if len(data) > MAX_NOTEBOOK_BYTES else data

        def beside(name: str, path=path) -> str | None:
            member = members.get(str(path.parent / name))
            if member is None or member.file_size > 200 or member.is_dir():
                return None
            with archive.open(member) as handle:
                text = handle.read(201).decode("utf-8", errors="replace").strip()
            return text if BESIDE[name].fullmatch(text) else None

        candidates.append(_Candidate(path, info.file_size, read, beside))
    if skipped:
        notes.append(f"skipped {len(skipped)} archive entries: {_listing(skipped)}")
    if others:
        notes.append(f"ignored {len(others)} file(s) in the archive that are not notebooks: {_listing(others)}")
    return candidates


def _read_student(path: Path, lessons: dict[str, str], student: str) -> Submission:
    """Read one student's folder or archive; ``lessons`` maps lesson -> notebook file name."""
    is_zip = path.suffix.lower() == ".zip"
    submission = Submission(student, str(path))
    try:
        if is_zip:
            with zipfile.ZipFile(path) as archive:
                candidates = _zip_candidates(archive, submission.notes)
                chosen = [_choose(lesson, name, candidates, path.name) for lesson, name in lessons.items()]
        else:
            candidates = _folder_candidates(path, submission.notes)
            chosen = [_choose(lesson, name, candidates, path.name) for lesson, name in lessons.items()]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, OSError, EOFError, ValueError) as err:
        problem = f"{path.name} could not be read ({type(err).__name__}: {err}); ask the student to submit it again"
        submission.entries = {lesson: Entry(lesson, path.name, problem=problem) for lesson in lessons}
        return submission
    for entry, notes in chosen:
        submission.entries[entry.lesson] = entry
        submission.notes += notes
    known = set(lessons.values())
    extra = sorted({str(c.path) for c in candidates if c.path.name not in known})
    if extra:
        submission.notes.append(f"ignored notebooks that belong to no graded lesson: {', '.join(extra[:10])}")
    return submission


def collect(submissions: Path, lessons: dict[str, str]) -> tuple[list[Submission], list[str]]:
    """Every student's submission in ``submissions``, and notes about what was skipped or renamed.

    ``lessons`` maps each graded lesson to its notebook's file name. Entries whose names give the
    same student id get distinct ids (see :func:`distinct_ids`). Raises :class:`IntakeError` when
    ``submissions`` is not a folder.
    """
    if not submissions.is_dir():
        raise IntakeError(f"{submissions} is not a folder; pass the folder that holds one folder or "
                          "one .zip archive per student")
    notes: list[str] = []
    students: list[Path] = []
    for child in sorted(submissions.iterdir()):
        if child.is_symlink():
            notes.append(f"skipped the symbolic link {child.name} (links are never followed)")
        elif _skip_reason(child.name):
            notes.append(f"skipped {child.name} ({_skip_reason(child.name)})")
        elif child.is_dir() or child.suffix.lower() == ".zip" and child.is_file():
            students.append(child)
        else:
            notes.append(f"ignored {child.name}: neither a student's folder nor a .zip archive")
    ids = distinct_ids([child.name for child in students])
    found = [_read_student(child, lessons, ids[child.name]) for child in students]
    plain: dict[str, list[Submission]] = {}
    for child, submission in zip(students, found, strict=True):
        plain.setdefault(student_id(child.stem if child.suffix.lower() == ".zip" else child.name), []).append(
            submission)
    for sid, group in sorted(plain.items()):
        if len(group) > 1:
            given = ", ".join(f"{Path(s.origin).name} as {s.student!r}" for s in group)
            note = f"{len(group)} entries give the student id {sid!r}; each is graded under its own id: {given}"
            notes.append(note)
            for submission in group:
                submission.notes.append(note)
    return found, notes
