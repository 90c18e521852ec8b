"""Regenerate ``course/`` (learner notebooks) from ``solutions/`` with nbgrader.

``nbgrader generate_assignment`` strips the solutions and hidden tests from each source
notebook and writes the learner version. This wrapper runs it for every lesson, from the
course root (nbgrader silently matches nothing when run from a folder without
``nbgrader_config.py``), always with ``--force`` (otherwise it skips notebooks it already
released), against a throwaway gradebook, and then checks that nothing hidden leaked.

>>> lessons_in(Path(__file__).resolve().parent.parent)[:1]
['01-budget']
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["lessons_in", "release", "hidden_markers_in", "nbgrader_env", "add_explanations", "ReleaseError"]

LESSON_PATTERN = re.compile(r"^\d\d-[a-z0-9-]+$")
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


class ReleaseError(RuntimeError):
    """Generating the learner notebooks failed; the message says why and what to do."""


def lessons_in(root: Path) -> list[str]:
    """The lesson folders of ``root/solutions`` (``NN-name`` holding a notebook), in order."""
    source = root / "solutions"
    return sorted(
        p.name for p in source.iterdir() if p.is_dir() and LESSON_PATTERN.match(p.name) and any(p.glob("*.ipynb"))
    )


def hidden_markers_in(notebook: Path) -> list[str]:
    """Solution or hidden-test markers left in a notebook (should be none in a learner copy)."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    found = []
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        found += [f"{cell.get('id')}: {m}" for m in MARKERS if m in source]
    return found


def nbgrader_env() -> dict[str, str]:
    """The environment nbgrader needs: it runs ``alembic`` from PATH, so put this Python's
    scripts folder first (a virtual environment that is not activated works too)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _nbgrader(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root, env=nbgrader_env(), capture_output=True, text=True, check=False,
    )


def release(root: Path | str = ".", lessons: list[str] | None = None, *, out=print) -> list[Path]:
    """Regenerate ``root/course/<lesson>/`` for each lesson (all by default); return the notebooks.

    Raises :class:`ReleaseError` when nbgrader fails or a released notebook still holds a
    solution or hidden-test marker.
    """
    root = Path(root).resolve()
    if not (root / "nbgrader_config.py").exists():
        raise ReleaseError(f"{root} has no nbgrader_config.py; run this from the repository root")
    lessons = lessons or lessons_in(root)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="ctxlab-release-") as scratch:
        db = f"sqlite:///{Path(scratch) / 'gradebook.db'}"
        for lesson in lessons:
            if not (root / "solutions" / lesson).is_dir():
                raise ReleaseError(f"no lesson {lesson!r} in {root / 'solutions'}; choose from {lessons_in(root)}")
            result = _nbgrader(
                root, "generate_assignment", lesson, "--force",
                f"--CourseDirectory.db_url={db}", "--log-level=WARN",
            )
            if result.returncode != 0:
                raise ReleaseError(f"nbgrader generate_assignment {lesson} failed:\n{result.stderr.strip()}")
            notebooks = sorted((root / "course" / lesson).glob("*.ipynb"))
            if not notebooks:
                raise ReleaseError(f"nbgrader wrote no notebook for {lesson}; check nbgrader_config.py")
            for notebook in notebooks:
                leaks = hidden_markers_in(notebook)
                if leaks:
                    raise ReleaseError(f"{notebook} still holds hidden markers: {leaks}")
                add_explanations(notebook, root / "solutions" / lesson / notebook.name, lesson)
                out(f"released {notebook.relative_to(root)}")
            written += notebooks
    return written


def add_explanations(notebook: Path, solution: Path, lesson: str) -> None:
    """Seal each concept check's explanation into the learner notebook's metadata, for
    ``ctxlab.course.explain`` (see ``ctxlab/course/explaining.py``): a learner who never grades
    still reads why an answer is right, once theirs is."""
    from ctxlab.course.explaining import sealed_explanations

    try:
        sealed = sealed_explanations(lesson, json.loads(solution.read_text(encoding="utf-8")))
    except ValueError as err:
        raise ReleaseError(str(err)) from None
    data = json.loads(notebook.read_text(encoding="utf-8"))
    own = data.setdefault("metadata", {}).setdefault("ctxlab", {})
    own.update(lesson=lesson, explanations=sealed)
    notebook.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def register(commands) -> None:
    """Add ``release [LESSON ...]`` to the command line."""
    parser = commands.add_parser("release", help="regenerate course/ from solutions/ (all lessons by default)")
    parser.add_argument("lessons", nargs="*", help="lesson folders such as 01-budget")
    parser.add_argument("--root", default=".", help="the course root (default: the current folder)")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    try:
        release(args.root, args.lessons or None)
    except ReleaseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
