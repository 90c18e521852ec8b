"""The graded lessons, released once per run into a private template course.

Grading needs, for every lesson: nbgrader's gradebook entry (made by ``generate_assignment``,
which also stores the hidden tests), the released learner notebook (to put tampered test cells
back), and facts for the report (each test's points and docstring, the hidden lines to keep out
of feedback, the lesson's extra files). :func:`build_template` makes all of that under
``OUT/template`` from the course's ``solutions/``, never touching the course itself, and reuses
it while the sources are unchanged.

>>> hidden_lines('x = 1\\n### BEGIN HIDDEN TESTS\\nassert secret_value == 42, "no"\\n### END HIDDEN TESTS\\n')
['assert secret_value == 42, "no"']
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .references import ReferenceSpecError, answer_names, forbid_map
from .release import lessons_in, nbgrader_env

PACKAGE_PARENT = Path(__file__).resolve().parent.parent

__all__ = [
    "Lesson", "GradedTest", "build_template", "load_template", "hidden_lines", "run_worker", "TemplateError",
]

HIDDEN_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
MIN_HIDDEN_LINE = 12  # shorter lines ("else:", "pass") are too common to scrub
TEMPLATE_VERSION = "2"


class TemplateError(RuntimeError):
    """A lesson could not be released for grading; the message says which and why."""


@dataclass
class GradedTest:
    grade_id: str
    points: float
    doc: str
    hidden: bool


@dataclass
class Lesson:
    """One gradable lesson as released into the template course."""

    name: str
    notebook: str  # the notebook's name without .ipynb, nbgrader's notebook id
    digest: str
    released: str
    max_score: float
    tests: list[GradedTest] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    hidden_lines: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    answer_names: list[str] = field(default_factory=list)  # what tests may reach of the learner's work
    forbid: dict[str, list[list[str]]] = field(default_factory=dict)  # ctxlab's references, per answer name

    @property
    def filename(self) -> str:
        return f"{self.notebook}.ipynb"


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def hidden_lines(source: str) -> list[str]:
    """Distinctive lines of the hidden-test blocks in ``source``."""
    lines = []
    for block in HIDDEN_BLOCK.findall(source):
        lines += [line.strip() for line in block.splitlines() if len(line.strip()) >= MIN_HIDDEN_LINE]
    return lines


def _digest(folder: Path, config: Path) -> str:
    digest = hashlib.sha256(TEMPLATE_VERSION.encode())
    digest.update(config.read_bytes())
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _first_line(source: str) -> str:
    text = source.strip()
    for quote in ('"""', "'''"):
        if text.startswith(quote):
            text = text[3:]
            break
    return text.splitlines()[0].strip().rstrip(";").rstrip('"').strip() if text else ""


def _describe(root: Path, name: str, digest: str) -> Lesson:
    (source_nb,) = sorted((root / "solutions" / name).glob("*.ipynb"))
    released = root / "course" / name / source_nb.name
    source = json.loads(source_nb.read_text(encoding="utf-8"))
    lesson = Lesson(name=name, notebook=source_nb.stem, digest=digest, released=str(released), max_score=0.0)
    answers = []
    for cell in source["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        text = _source(cell)
        if meta.get("solution"):
            lesson.answers.append(meta["grade_id"])
            answers.append(text)
        if meta.get("grade") and not meta.get("solution"):
            hidden = "BEGIN HIDDEN TESTS" in text
            lesson.tests.append(GradedTest(meta["grade_id"], float(meta.get("points", 0)), _first_line(text), hidden))
            lesson.max_score += float(meta.get("points", 0))
        lesson.hidden_lines += hidden_lines(text)
    lesson.answer_names = answer_names(answers)
    try:
        lesson.forbid = forbid_map(source.get("metadata", {}).get("ctxlab", {}).get("references", {}))
    except ReferenceSpecError as err:
        raise TemplateError(f"solutions/{name}/{source_nb.name}: {err}") from None
    for path in sorted((root / "solutions" / name).rglob("*")):
        if path.is_file() and path.suffix != ".ipynb" and ".ipynb_checkpoints" not in path.parts:
            lesson.files[str(path.relative_to(root / "solutions" / name))] = str(path)
    return lesson


def build_template(course_root: Path, dest: Path, lessons: list[str] | None = None, *, log=print) -> dict[str, Lesson]:
    """Release ``lessons`` (default: every lesson in ``solutions/``) into ``dest``.

    ``dest`` becomes a private nbgrader course: ``nbgrader_config.py``, ``solutions/``,
    ``course/`` and ``gradebook.db`` holding every lesson, plus ``lessons.json``. When nothing
    changed since the last build it is reused as it is.
    """
    course_root = course_root.resolve()
    config = course_root / "nbgrader_config.py"
    if not config.exists():
        raise TemplateError(f"{course_root} has no nbgrader_config.py: run the grader from the course root "
                            "or pass --course ROOT")
    available = lessons_in(course_root)
    lessons = lessons or available
    unknown = [name for name in lessons if name not in available]
    if unknown:
        raise TemplateError(f"no lesson {', '.join(unknown)} in {course_root / 'solutions'}; choose from {available}")
    digests = {name: _digest(course_root / "solutions" / name, config) for name in lessons}
    index = dest / "lessons.json"
    if index.exists():
        try:
            cached = load_template(dest)
        except (KeyError, TypeError, ValueError):
            cached = {}
        if sorted(cached) == sorted(lessons) and all(cached[n].digest == digests[n] for n in lessons):
            return cached
    if dest.exists():
        shutil.rmtree(dest)
    root = dest / "root"
    (root / "solutions").mkdir(parents=True)
    shutil.copy(config, root / "nbgrader_config.py")
    for name in lessons:
        shutil.copytree(course_root / "solutions" / name, root / "solutions" / name,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    log(f"releasing {', '.join(lessons)} for grading")
    failures = run_worker("template", {"root": str(root), "lessons": lessons}, dest)["failures"]
    for name, error in failures.items():
        raise TemplateError(f"nbgrader could not release lesson {name} for grading (fix solutions/{name} or "
                            f"grade the other lessons with --lessons):\n{error.strip()}")
    described = {name: _describe(root, name, digests[name]) for name in lessons}
    index.write_text(json.dumps({n: asdict(lesson) for n, lesson in described.items()}, indent=1), encoding="utf-8")
    return described


def load_template(dest: Path) -> dict[str, Lesson]:
    """The lessons recorded by :func:`build_template` in ``dest``."""
    data = json.loads((dest / "lessons.json").read_text(encoding="utf-8"))
    lessons = {}
    for name, fields in data.items():
        fields["tests"] = [GradedTest(**t) for t in fields["tests"]]
        lessons[name] = Lesson(**fields)
    return lessons


def run_worker(mode: str, job: dict, folder: Path, *, log_file: Path | None = None, timeout: float | None = None) -> dict:
    """Run ``python -m autograder.worker MODE`` on ``job`` (written to ``folder``); its result.

    Raises :class:`TemplateError` when the worker fails without writing a result.
    """
    folder.mkdir(parents=True, exist_ok=True)
    job = {**job, "result": str(folder / f"{mode}-result.json")}
    job_path = folder / f"{mode}-job.json"
    job_path.write_text(json.dumps(job, indent=1), encoding="utf-8")
    env = nbgrader_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(PACKAGE_PARENT), env.get("PYTHONPATH", "")] if p)
    with open(log_file or folder / f"{mode}.log", "wb") as log:
        result = subprocess.run([sys.executable, "-m", "autograder.worker", mode, str(job_path)],
                                stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout, check=False)
    result_path = Path(job["result"])
    if result.returncode != 0 or not result_path.exists():
        tail = (log_file or folder / f"{mode}.log").read_text(encoding="utf-8", errors="replace")[-3000:]
        raise TemplateError(f"the {mode} worker failed (exit status {result.returncode}):\n{tail}")
    return json.loads(result_path.read_text(encoding="utf-8"))
