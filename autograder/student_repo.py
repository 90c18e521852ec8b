"""Export the learner-only copy of the course: the tree a public repository that Binder launches holds.

Binder copies the whole repository into every learner's session, so a public repository that
holds ``solutions/`` hands out the answers and the hidden tests with it. For a graded class the
instructor keeps this repository private and publishes what ``python -m autograder student-repo
DEST`` writes to DEST:

* copied as they are: ``course/``, ``ctxlab/``, ``data/``, ``binder/``, ``requirements.txt``,
  ``constraints.txt``, ``pyproject.toml`` and ``LICENSE`` (caches, checkpoints and databases
  left behind);
* written for learners: ``README.md`` (with the Binder badge), ``nbgrader_config.py`` (only what
  the Validate button uses), ``.gitignore``;
* and a record of what was written, ``.learner-export.json``.

Never written: ``solutions/``, ``autograder/``, ``tests/``, the gradebook, or anything else. The
export refuses a DEST that holds anything but a previous export (its ``.git`` and any file it
did not write are kept; files a previous export wrote and this one does not are removed), and it
refuses to write a tree that still contains a solution or hidden-test marker or a line found
only in the solution and hidden-test regions of ``solutions/``. It never writes to the source.

The Binder link is built from ``binder/SLUG``, the one place that names the GitHub repository
Binder launches (``owner/name``): a fork edits that line.

>>> binder_url("ada/context-class")
'https://mybinder.org/v2/gh/ada/context-class/HEAD?urlpath=lab/tree/course/01-budget/budget.ipynb'
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from .release import MARKERS, lessons_in

__all__ = [
    "ExportError",
    "FIRST_LESSON",
    "read_slug",
    "binder_url",
    "binder_badge",
    "learner_files",
    "solution_only_lines",
    "find_leaks",
    "export",
]

FIRST_LESSON = "course/01-budget/budget.ipynb"
SLUG_FILE = "binder/SLUG"
RECORD = ".learner-export.json"
COPIED = (
    "course", "ctxlab", "data", "binder",
    "requirements.txt", "constraints.txt", "pyproject.toml", "LICENSE",
)
LEFT_BEHIND = (
    "__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info", ".DS_Store",
    "*.db", "*.db-journal", "*.sqlite", "*.sqlite3", "*.sqlite-*", "*.sqlite3-*",
)
LEARNER_CONFIG_SECTIONS = ("Execute", "Validator")
SLUG_PATTERN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
REGION = re.compile(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", re.S)
MIN_LEAK_LINE = 20


class ExportError(RuntimeError):
    """The learner copy cannot be written; the message says why and what to do."""


def read_slug(root: Path | str = ".") -> str:
    """The ``owner/name`` of the GitHub repository that Binder launches, from ``binder/SLUG``.

    Raises :class:`ExportError` when the file is missing or does not hold one ``owner/name``.
    """
    path = Path(root) / SLUG_FILE
    if not path.exists():
        raise ExportError(f"{path} is missing; write the GitHub owner/name that Binder launches into it")
    slug = path.read_text(encoding="utf-8").strip()
    if not SLUG_PATTERN.match(slug):
        raise ExportError(f"{path} holds {slug!r}; it must be one line, the GitHub repository as owner/name")
    return slug


def binder_url(slug: str, notebook: str = FIRST_LESSON, *, ref: str = "HEAD") -> str:
    """The mybinder.org launch URL that opens ``notebook`` in JupyterLab.

    >>> binder_url("ada/context-class", "course/02-trimming/trimming.ipynb", ref="main")
    'https://mybinder.org/v2/gh/ada/context-class/main?urlpath=lab/tree/course/02-trimming/trimming.ipynb'
    """
    return f"https://mybinder.org/v2/gh/{slug}/{ref}?urlpath=lab/tree/{notebook}"


def binder_badge(slug: str) -> str:
    """The README badge (markdown) that launches the first lesson on Binder.

    >>> binder_badge("ada/context-class").startswith("[![Launch on Binder](https://mybinder.org/badge_logo.svg)]")
    True
    """
    return f"[![Launch on Binder](https://mybinder.org/badge_logo.svg)]({binder_url(slug)})"


def _left_behind(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in LEFT_BEHIND)


def _copied_files(root: Path) -> dict[str, tuple[bytes, int]]:
    files: dict[str, tuple[bytes, int]] = {}
    for top in COPIED:
        path = root / top
        if not path.exists():
            raise ExportError(f"{path} is missing; export from the repository root (--root)")
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for item in candidates:
            relative = item.relative_to(root)
            if any(_left_behind(part) for part in relative.parts):
                continue
            if item.is_symlink():
                raise ExportError(f"{relative} is a symbolic link; replace it with the file it points to")
            if item.is_file():
                files[relative.as_posix()] = (item.read_bytes(), item.stat().st_mode & 0o777)
    return files


def _notebook_title(path: Path) -> str:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            first = source.strip().splitlines()[0] if source.strip() else ""
            if first.startswith("# "):
                return re.sub(r"^Lesson \d+\s*[·:-]\s*", "", first[2:].strip())
    return path.stem


def _course_notebooks(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "course").glob("[0-9][0-9]-*/*.ipynb"))


def learner_readme(root: Path, slug: str) -> str:
    """The README of the learner repository: what it is, the Binder badge, the lessons."""
    rows = []
    for notebook in _course_notebooks(root):
        lesson = notebook.split("/")[1]
        title = _notebook_title(root / notebook)
        rows.append(f"| [{lesson}]({notebook}) | {title} | [open on Binder]({binder_url(slug, notebook)}) |")
    lessons = "\n".join(rows)
    return f"""# Context Window Lab

{binder_badge(slug)}

A hands-on course on **short-term memory for LLM agents**: how an agent decides, on every step,
what goes into a context window that is smaller than everything it has seen. You measure the
window with the real `cl100k_base` tokenizer, replay agent transcripts written for the course,
and build the techniques yourself in Jupyter notebooks with tests that tell you what to fix.
Everything runs offline.

## Start

Press the badge above: Binder opens lesson 01 in JupyterLab in your browser, with nothing to
install. The first start can take a few minutes while Binder builds the environment.

**Binder does not keep your work.** A session ends after about ten minutes without activity, or
when you close the tab, and everything in it is lost. Before you stop, save the notebook and
download it (**File → Download**). To carry on later, start a new session, open the lesson's
folder in the file browser, upload your copy with the **Upload** button (let it replace the fresh
one), and open it.

Each lesson stands on its own: you can start at any of them.

| lesson | topic | |
| --- | --- | --- |
{lessons}

Run a lesson's cells from the top. Each exercise gives you a signature and a docstring: replace
`raise NotImplementedError()` with your code and run the test cell under it. Press **Validate**
in the notebook toolbar to run every visible test at once. Your instructor's grading runs more
tests, hidden from you.

## Run it on your own computer

With Python 3.10 or newer, from this folder:

```bash
python3 -m venv .venv
.venv/bin/pip install -r requirements.txt -c constraints.txt
.venv/bin/jupyter lab {FIRST_LESSON}
```

This installs the pinned packages and `ctxlab`, the small library the lessons use. No step
downloads a model or a data set.

## Licence

MIT (see `LICENSE`). The transcripts in `data/` were written for this course; `data/README.md`
describes them.
"""


def learner_nbgrader_config(root: Path) -> str:
    """``nbgrader_config.py`` for learners: only the settings that Validate uses.

    The instructor's settings (where solutions live, the gradebook, how grading restores cells)
    stay in the private repository.
    """
    from traitlets.config.loader import Config, PyFileConfigLoader

    source = root / "nbgrader_config.py"
    config = PyFileConfigLoader(source.name, path=str(root)).load_config() if source.exists() else Config()
    lines = []
    for section in LEARNER_CONFIG_SECTIONS:
        for name, value in sorted(config[section].items()) if section in config else []:
            if not isinstance(value, (bool, int, float, str)):
                raise ExportError(f"nbgrader_config.py sets {section}.{name} to {value!r}; use a plain value")
            lines.append(f"c.{section}.{name} = {value!r}")
    settings = "\n".join(lines) or "# nbgrader's defaults"
    return f'''"""nbgrader settings for learners: what the Validate button uses when it runs the visible tests."""

c = get_config()  # noqa: F821  (nbgrader provides get_config)

{settings}
'''


LEARNER_GITIGNORE = """\
.venv/
__pycache__/
*.egg-info/
.ipynb_checkpoints/
*.sqlite3
*.db
"""


def learner_files(root: Path | str = ".") -> dict[str, tuple[bytes, int]]:
    """Every file of the learner tree: relative path -> (content, permission bits)."""
    root = Path(root).resolve()
    slug = read_slug(root)
    files = _copied_files(root)
    files["README.md"] = (learner_readme(root, slug).encode("utf-8"), 0o644)
    files["nbgrader_config.py"] = (learner_nbgrader_config(root).encode("utf-8"), 0o644)
    files[".gitignore"] = (LEARNER_GITIGNORE.encode("utf-8"), 0o644)
    return files


def _text_of(path: str, content: bytes) -> str | None:
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if path.endswith(".ipynb"):  # search the cells as a learner sees them, not JSON-escaped
        notebook = json.loads(text)
        cells = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in notebook["cells"]]
        return text + "\n" + "\n".join(cells)
    return text


def solution_only_lines(root: Path | str = ".") -> set[str]:
    """Lines of the solution and hidden-test regions of ``solutions/`` that appear nowhere a
    learner may legitimately see them (``ctxlab/``, ``data/``, the rest of the source notebooks).

    Finding one of these in a learner tree means a solution or a hidden test leaked.
    """
    root = Path(root).resolve()
    inside: set[str] = set()
    outside: list[str] = []
    for lesson in lessons_in(root):
        for notebook in sorted((root / "solutions" / lesson).glob("*.ipynb")):
            cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
            for cell in cells:
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                for _, region in REGION.findall(source):
                    inside.update(line.strip() for line in region.splitlines())
                outside.append(REGION.sub("", source))
    for folder in ("ctxlab", "data"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and not _left_behind(path.name):
                outside.append(_text_of(path.name, path.read_bytes()) or "")
    seen = "\n".join(outside)
    return {line for line in inside if len(line) >= MIN_LEAK_LINE and line not in seen}


def find_leaks(files: dict[str, tuple[bytes, int]], solution_lines: set[str]) -> list[str]:
    """What in ``files`` must not reach learners: solution or hidden-test markers, solution lines.

    >>> find_leaks({"a.py": (b"x = 1  # BEGIN SOLUTION", 0o644)}, set())
    ['a.py: marker BEGIN SOLUTION']
    >>> find_leaks({"b.py": (b"return fancy_answer(messages)", 0o644)}, {"return fancy_answer(messages)"})
    ['b.py: solution line return fancy_answer(messages)']
    """
    leaks = []
    for path, (content, _) in sorted(files.items()):
        text = _text_of(path, content)
        if text is None:
            continue
        leaks += [f"{path}: marker {marker}" for marker in MARKERS if marker in text]
        leaks += [f"{path}: solution line {line}" for line in sorted(solution_lines) if line in text]
    return leaks


def _previous_export(dest: Path) -> list[str] | None:
    """The files a previous export wrote to ``dest``; [] for a missing folder or one that holds
    nothing but ``.git`` (a fresh clone of an empty repository); None when it holds anything else."""
    if not dest.exists():
        return []
    if not dest.is_dir():
        return None
    record = dest / RECORD
    if record.is_file():
        try:
            return list(json.loads(record.read_text(encoding="utf-8"))["files"])
        except (ValueError, KeyError, TypeError):
            return None
    return [] if all(entry.name == ".git" for entry in dest.iterdir()) else None


def _check_destination(root: Path, dest: Path) -> list[str]:
    if dest == root or root.is_relative_to(dest):
        raise ExportError(f"{dest} is the source checkout or holds it; choose a folder outside it")
    for top in COPIED:
        if dest.is_relative_to(root / top):
            raise ExportError(f"{dest} is inside {top}/, which is exported; choose another folder")
    previous = _previous_export(dest)
    if previous is None:
        raise ExportError(
            f"{dest} is not empty and is not a previous learner export (no {RECORD}); "
            "choose a new or empty folder, a fresh clone of an empty repository, or a previous export"
        )
    return previous


def _inside(dest: Path, relative: str) -> Path:
    path = (dest / relative).resolve()
    if not path.is_relative_to(dest) or path == dest:
        raise ExportError(f"{dest / RECORD} lists {relative!r}, which is outside the export; delete that record")
    return path


def export(root: Path | str, dest: Path | str, *, out: Callable[[str], object] = print) -> list[str]:
    """Write the learner tree of ``root`` to ``dest``; return the files written.

    Raises :class:`ExportError` (and writes nothing) when ``dest`` holds anything but a previous
    export, or when the tree would leak a solution or a hidden test.
    """
    root = Path(root).resolve()
    dest = Path(dest).resolve()
    if not (root / "solutions").is_dir() or not (root / "course").is_dir():
        raise ExportError(f"{root} has no solutions/ and course/; run this from the instructor repository's root")
    previous = _check_destination(root, dest)
    files = learner_files(root)
    leaks = find_leaks(files, solution_only_lines(root))
    if leaks:
        shown = "\n  ".join(leaks[:20])
        raise ExportError(f"the learner tree would leak {len(leaks)} solution or hidden-test item(s); "
                          f"run `make release` and check course/:\n  {shown}")

    stale = sorted(set(previous) - set(files))
    stale_paths = [_inside(dest, relative) for relative in stale]
    dest.mkdir(parents=True, exist_ok=True)
    record = {"written_by": "python -m autograder student-repo", "files": sorted(set(files) | set(previous))}
    (dest / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for relative, (content, mode) in sorted(files.items()):
        path = _inside(dest, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(mode)
    for path in stale_paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        for parent in path.parents:
            if parent == dest or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()
    record["files"] = sorted(files)
    (dest / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    out(f"exported {len(files)} files to {dest}" + (f" ({len(stale)} stale removed)" if stale else ""))
    out(f"Binder: {binder_url(read_slug(root))}")
    return sorted(files)


def register(commands) -> None:
    """Add ``student-repo DEST`` to the command line."""
    parser = commands.add_parser(
        "student-repo",
        help="export the learner-only copy (no solutions, hidden tests or grading tools) to DEST",
    )
    parser.add_argument(
        "dest", help="a new or empty folder, a fresh clone of an empty repository, or a previous export (its .git is kept)"
    )
    parser.add_argument("--root", default=".", help="the instructor repository (default: the current folder)")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    try:
        export(args.root, args.dest)
    except ExportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
