"""Release and autograde a lesson for real with nbgrader, in a temporary copy of the course.

Students graded per lesson:
  ``solution``      every answer cell filled with the reference solution;
  ``blank``         the learner notebook exactly as released;
  ``wrong-<name>``  the solution with one answer cell replaced by a known wrong answer
                    (``WRONG_ANSWERS`` in ``tests/wrong_answers/<lesson>.py``);
  ``attack-<name>`` the solution with one answer cell replaced by an answer that reaches
                    ctxlab's own code for the exercise (``ATTACKS`` in the same file).

Wrong answers that no test they name can tell apart are graded several to a notebook
(``pack-<first name>``, :mod:`support.packing`); each member's result is its pack's. The
largest pack of each lesson is also graded member by member (``solo-<name>``), and the lesson
tests compare.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.release import add_explanations

from .packing import WrongAnswer, answers_reached, notebook_cells, packs

REPO = Path(__file__).resolve().parents[2]
OFFLINE = Path(__file__).resolve().parent / "offline"
MARKER_LINE = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


@dataclass
class Result:
    score: float
    max_score: float
    needs_manual_grade: bool
    cells: dict[str, float] = field(default_factory=dict)
    max_cells: dict[str, float] = field(default_factory=dict)
    stderr_cells: list[str] = field(default_factory=list)
    errors: dict[str, dict | None] = field(default_factory=dict)  # grade_id -> the failure (judge runs)
    skipped_cells: int = 0  # demonstrations the grader left out (judge runs)
    events: list[dict] = field(default_factory=list)  # what the grader noticed (judge runs)


@dataclass
class GradedLesson:
    lesson: str
    root: Path
    notebook: str
    results: dict[str, Result]
    wrong_answers: list[WrongAnswer]
    autograde_log: str
    attacks: list[WrongAnswer] = field(default_factory=list)
    packs: dict[str, list[str]] = field(default_factory=dict)  # pack student -> its wrong answers' names
    solo: list[str] = field(default_factory=list)  # wrong answers of a pack also graded alone (solo-<name>)
    reached: dict[str, set[str]] = field(default_factory=dict)  # test -> answer cells it may run


def offline_env() -> dict[str, str]:
    """The environment for subprocesses and kernels: offline, no API key, venv scripts on PATH."""
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(OFFLINE), env.get("PYTHONPATH", "")] if p)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def _answers_module(lesson: str):
    """``tests/wrong_answers/<lesson>.py`` loaded, or None when the lesson has none."""
    path = REPO / "tests" / "wrong_answers" / f"{lesson.replace('-', '_')}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"wrong_answers_{lesson.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_wrong_answers(lesson: str) -> list[WrongAnswer]:
    """The lesson's ``WRONG_ANSWERS``: each must fail the named tests with an AssertionError."""
    module = _answers_module(lesson)
    return [WrongAnswer(**w) for w in module.WRONG_ANSWERS] if module else []


def load_attacks(lesson: str) -> list[WrongAnswer]:
    """Answers that hand an exercise to ctxlab's own code by a way around the reference switch-off
    (a private helper, a subclass, a copy of the code object): each must lose the named tests'
    points, whatever the error."""
    module = _answers_module(lesson)
    return [WrongAnswer(**w) for w in getattr(module, "ATTACKS", [])] if module else []


def copy_course(dest: Path) -> Path:
    """A course root holding this checkout's config and solutions (and nothing else)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "nbgrader_config.py", dest)
    shutil.copytree(REPO / "solutions", dest / "solutions")
    return dest


def nbgrader(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, "--CourseDirectory.db_url=sqlite:///gradebook.db"],
        cwd=root, env=offline_env(), capture_output=True, text=True, timeout=1800,
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result


def solution_sources(notebook: dict) -> dict[str, str]:
    """grade_id -> source of each answer cell, with the solution markers removed."""
    out = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            out[meta["grade_id"]] = "\n".join(line for line in source.splitlines() if not MARKER_LINE.match(line))
    return out


def fill(released: dict, answers: dict[str, str]) -> dict:
    """A copy of the released notebook with the given answer cells filled in."""
    notebook = json.loads(json.dumps(released))
    for cell in notebook["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    return notebook


def submit(root: Path, student: str, lesson: str, name: str, notebook: dict) -> None:
    folder = root / "submitted" / student / lesson
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(notebook, indent=1), encoding="utf-8")


def read_results(root: Path, lesson: str, notebook_id: str, students: list[str]) -> dict[str, Result]:
    from nbgrader.api import Gradebook

    results: dict[str, Result] = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student in students:
            sub = gb.find_submission_notebook(notebook_id, lesson, student)
            result = Result(score=sub.score, max_score=sub.max_score, needs_manual_grade=sub.needs_manual_grade)
            for grade in sub.grades:
                result.cells[grade.name] = grade.score
                result.max_cells[grade.name] = grade.max_score
            results[student] = result
    for student in students:
        graded = root / "autograded" / student / lesson / f"{notebook_id}.ipynb"
        nb = json.loads(graded.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and any(o.get("name") == "stderr" for o in cell.get("outputs", [])):
                results[student].stderr_cells.append(meta["grade_id"])
    return results


def graded_cells_only(notebook: dict) -> dict:
    """``notebook`` without its demonstration cells: every code cell that is not an answer, a test
    or a locked cell goes, unless it defines a name an answer cell defines too.

    The judge's tests reach only the answer cells' names, so a wrong answer gets the same test
    results either way; the pipeline proves it for each lesson by grading the solution both ways.
    """
    from autograder.references import answer_names

    def source(cell):
        return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]

    answers = set(answer_names([source(c) for c in notebook["cells"]
                                if c.get("metadata", {}).get("nbgrader", {}).get("solution")]))
    kept = []
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and not meta and not answers & set(answer_names([source(cell)])):
            continue
        kept.append(cell)
    return {**notebook, "cells": kept}


@dataclass
class Released:
    """A lesson released for grading: its notebook's name, the students to grade (one notebook
    each), its wrong answers, how they were packed, and which answer cells each test reaches."""

    notebook: str
    students: dict[str, dict]
    wrong_answers: list[WrongAnswer]
    packs: dict[str, list[str]]
    solo: list[str]
    reached: dict[str, set[str]]


def students_of(root: Path, lesson: str) -> Released:
    """Release ``lesson`` in ``root``; its notebook's name and the students to grade (:class:`Released`).

    Every notebook is whole, as a learner hands it in: the grader itself leaves out the
    demonstrations nothing graded needs (autograder/skipping.py), which makes a lesson's dozens
    of wrong answers quick to grade. ``solution-graded-cells-only`` has its demonstrations
    deleted outright (:func:`graded_cells_only`), a second proof that grading needs none of them.
    """
    nbgrader(root, "generate_assignment", lesson, "--force")
    (source_nb,) = sorted((root / "solutions" / lesson).glob("*.ipynb"))
    add_explanations(root / "course" / lesson / source_nb.name, source_nb, lesson)  # as `make release` does
    released = json.loads((root / "course" / lesson / source_nb.name).read_text(encoding="utf-8"))
    answers = solution_sources(json.loads(source_nb.read_text(encoding="utf-8")))
    students = {"solution": fill(released, answers), "blank": released,
                "solution-graded-cells-only": graded_cells_only(fill(released, answers))}
    wrong_answers = load_wrong_answers(lesson)
    for wrong in wrong_answers:
        if wrong.cell not in answers:
            raise ValueError(f"wrong answer {wrong.name!r} names {wrong.cell!r}, not an answer cell of {lesson}")
    cells = notebook_cells(json.loads(source_nb.read_text(encoding="utf-8")))
    packed: dict[str, list[str]] = {}
    for pack in packs(cells, wrong_answers):
        student = f"wrong-{pack[0].name}" if len(pack) == 1 else f"pack-{pack[0].name}"
        packed[student] = [w.name for w in pack]
        students[student] = fill(released, {**answers, **{w.cell: w.source for w in pack}})
    largest = max((p for p in packed.values() if len(p) > 1), key=len, default=[])
    by_name = {w.name: w for w in wrong_answers}
    for name in largest:
        students[f"solo-{name}"] = fill(released, {**answers, by_name[name].cell: by_name[name].source})
    for attack in load_attacks(lesson):
        if attack.cell not in answers:
            raise ValueError(f"attack {attack.name!r} names {attack.cell!r}, not an answer cell of {lesson}")
        students[f"attack-{attack.name}"] = fill(released, {**answers, attack.cell: attack.source})
    return Released(source_nb.name, students, wrong_answers, packed, largest, answers_reached(cells, wrong_answers))


def sandbox_available() -> bool:
    bwrap = shutil.which("bwrap")
    return bwrap is not None and subprocess.run(
        [bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
        capture_output=True, check=False,
    ).returncode == 0


# Workers grading at once in the suite. A worker spends much of each notebook waiting on its two
# kernels (judge and learner answer each other in turn), so on two cores four workers keep the
# CPU busier than two: lesson 01 took 91 s with two and 73 s with four, same grades.
SUITE_JOBS = 4


def grade_lesson(lesson: str, workdir: Path, *, engine: str = "judge") -> GradedLesson:
    """Grade the solution, the blank notebook and every listed wrong answer of ``lesson`` for real.

    ``engine="judge"``: with ``python -m autograder grade`` (test cells in the judge's kernel,
    sandboxed when bubblewrap works here); ``engine="nbgrader"``: with plain ``nbgrader
    autograde``, which runs test cells in the learner's kernel as Validate does (solution and
    blank only: the tests must hold both ways).
    """
    if engine == "judge":
        return grade_lessons([lesson], workdir)[lesson]
    root = copy_course(workdir / "course-root")
    lesson_students = students_of(root, lesson)
    name, wrong_answers = lesson_students.notebook, lesson_students.wrong_answers
    notebook_id = name.removesuffix(".ipynb")
    students = {k: v for k, v in lesson_students.students.items() if k in ("solution", "blank")}
    for student, notebook in students.items():
        submit(root, student, lesson, name, notebook)
    log = nbgrader(root, "autograde", lesson, "--force", check=False)
    results = read_results(root, lesson, notebook_id, list(students))
    return GradedLesson(lesson, root, name, results, wrong_answers, log.stderr, load_attacks(lesson))


def grade_lessons(lessons: list[str], workdir: Path) -> dict[str, GradedLesson]:
    """Every student of each of ``lessons`` graded by one run of ``python -m autograder grade``,
    as an instructor grades a class: one course, one submissions folder, the workers shared by
    every lesson. A student id (``solution``, ``wrong-<name>``) may hand in several lessons."""
    root = copy_course(workdir / "course-root")
    submissions, out = workdir / "submissions", workdir / "grading-output"
    released: dict[str, Released] = {}
    for lesson in lessons:
        released[lesson] = students_of(root, lesson)
        for student, notebook in released[lesson].students.items():
            folder = submissions / student / lesson
            folder.mkdir(parents=True, exist_ok=True)
            (folder / released[lesson].notebook).write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    isolation = [] if sandbox_available() else ["--no-sandbox"]
    command = [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
               "--course", str(root), "--lessons", ",".join(lessons), "--jobs", str(SUITE_JOBS), "--quiet", *isolation]
    run = subprocess.run(command, cwd=REPO, env=offline_env(), capture_output=True, text=True, timeout=5400)
    if run.returncode != 0:
        raise RuntimeError(f"grading {', '.join(lessons)} failed ({run.returncode}):\n{run.stderr[-4000:]}")
    graded = {}
    for lesson, lesson_students in released.items():
        name = lesson_students.notebook
        results = {student: _judged(out, student, lesson, name) for student in lesson_students.students}
        for student, members in lesson_students.packs.items():
            results.update({f"wrong-{member}": results[student] for member in members})
        graded[lesson] = GradedLesson(lesson, root, name, results, lesson_students.wrong_answers, run.stderr,
                                      load_attacks(lesson), packs=lesson_students.packs, solo=lesson_students.solo,
                                      reached=lesson_students.reached)
    return graded


def _judged(out: Path, student: str, lesson: str, name: str) -> Result:
    """What the grade command wrote for ``student``'s ``lesson``."""
    record = json.loads((out / "students" / f"{student}.json").read_text(encoding="utf-8"))
    graded = record["lessons"][lesson]
    result = Result(score=graded["score"], max_score=graded["max_score"],
                    needs_manual_grade=bool(graded.get("needs_manual_grade")))
    for test in graded["tests"]:
        result.cells[test["grade_id"]] = test["score"]
        result.max_cells[test["grade_id"]] = test["points"]
    autograded = out / "autograded" / student / lesson / name
    if autograded.exists():
        for cell in json.loads(autograded.read_text(encoding="utf-8"))["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade") and any(o.get("name") == "stderr" for o in cell.get("outputs", [])):
                result.stderr_cells.append(meta["grade_id"])
    result.errors = {t["grade_id"]: t.get("error") for t in graded["tests"]}
    result.skipped_cells = int(graded.get("skipped_cells", 0))
    result.events = list(graded.get("events", []))
    return result
