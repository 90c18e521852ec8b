"""Grade candidate wrong answers for real, to find the ones the grader still gives full marks.

Each probe is a file whose first line is ``# cell: <grade_id>`` (an answer cell of the lesson)
and whose rest is that cell's whole new source; the files of
``tests/wrong_answers/accepted/`` have this form. Every probe is the lesson's solution with that
one cell replaced, and all of them are graded in one run of ``python -m autograder grade``, in
the sandbox when bubblewrap works here, as the suite grades the listed wrong answers::

    .venv/bin/python tests/support/probe.py 02-trimming path/to/probes/ [--jobs 4]

It prints each probe's score and the tests it lost; ``FULL`` marks a probe with full marks,
which either breaks no stated rule or is a hole to close (see
``tests/wrong_answers/accepted/README.md`` for what to do with one). It exits 1 when the
solution itself does not get full marks.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, as conftest.py does
sys.path.insert(1, str(Path(__file__).resolve().parents[2]))  # the repository: autograder, as pytest finds it
from autograder.release import add_explanations  # noqa: E402
from support.pipeline import (  # noqa: E402
    REPO,
    _judged,
    copy_course,
    fill,
    nbgrader,
    offline_env,
    sandbox_available,
    solution_sources,
)

__all__ = ["read_probe", "main"]


def read_probe(path: Path, answer_cells: set[str] | list[str]) -> tuple[str, str]:
    """``(grade_id, source)`` of the probe in ``path``; ``ValueError`` saying what to fix.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "zero.py"
    >>> _ = p.write_text("# cell: billed-input\\ndef billed_input(calls):\\n    return 0\\n")
    >>> read_probe(p, {"billed-input"})
    ('billed-input', 'def billed_input(calls):\\n    return 0\\n')
    """
    first, _, source = path.read_text(encoding="utf-8").partition("\n")
    if not first.startswith("# cell:"):
        raise ValueError(f"{path}: the first line must be '# cell: <grade_id>', got {first[:60]!r}")
    cell = first.split(":", 1)[1].strip()
    if cell not in answer_cells:
        raise ValueError(f"{path}: {cell!r} is not an answer cell of this lesson; choose from {sorted(answer_cells)}")
    return cell, source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/support/probe.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("lesson", help="a lesson folder of solutions/, such as 02-trimming")
    parser.add_argument("probes", type=Path, help="a folder of probe files (*.py or *.txt)")
    parser.add_argument("--jobs", type=int, default=4, help="grading workers (default 4)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix=f"probe-{args.lesson}-"))
    root = copy_course(work / "course-root")
    nbgrader(root, "generate_assignment", args.lesson, "--force")
    (source_nb,) = sorted((root / "solutions" / args.lesson).glob("*.ipynb"))
    add_explanations(root / "course" / args.lesson / source_nb.name, source_nb, args.lesson)  # as `make release` does
    released = json.loads((root / "course" / args.lesson / source_nb.name).read_text(encoding="utf-8"))
    answers = solution_sources(json.loads(source_nb.read_text(encoding="utf-8")))
    students = {"solution": fill(released, answers)}
    for path in sorted([*args.probes.glob("*.py"), *args.probes.glob("*.txt")]):
        try:
            cell, source = read_probe(path, set(answers))
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        students[f"probe-{path.stem}"] = fill(released, {**answers, cell: source})
    submissions, out = work / "submissions", work / "out"
    for student, notebook in students.items():
        folder = submissions / student / args.lesson
        folder.mkdir(parents=True)
        (folder / source_nb.name).write_text(json.dumps(notebook), encoding="utf-8")
    isolation = [] if sandbox_available() else ["--no-sandbox"]
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
                          "--course", str(root), "--lessons", args.lesson, "--jobs", str(args.jobs), "--quiet",
                          *isolation], cwd=REPO, env=offline_env(), capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(run.stderr[-4000:], file=sys.stderr)
        return run.returncode
    solution_full = True
    for student in students:
        result = _judged(out, student, args.lesson, source_nb.name)
        lost = [c for c in result.cells if result.cells[c] < result.max_cells[c]]
        full = result.score == result.max_score
        solution_full &= full or student != "solution"
        print(f"{'FULL' if full else '    '} {student}: {result.score:g}/{result.max_score:g}"
              + (f"  lost: {', '.join(lost)}" if lost else ""))
        for cell in lost:
            error = result.errors.get(cell) or {}
            if error:
                print(f"       {cell}: {error.get('ename', '')}: {str(error.get('evalue', ''))[:200]}")
    print(f"graded in {work}" + ("" if isolation == [] else " (no sandbox: bubblewrap does not work here)"))
    return 0 if solution_full else 1


if __name__ == "__main__":
    raise SystemExit(main())
