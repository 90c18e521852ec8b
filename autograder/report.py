"""The grades CSV and the instructor's summary of who failed what and why.

``grades.csv`` has one row per student and lesson: ``student, lesson, score, max_score,
status, attention, notes``. ``status`` is ``graded``, ``missing`` (no notebook for the lesson),
``unreadable`` (not a notebook nbgrader can read; score 0) or ``error`` (grading itself failed:
the command exits non-zero). ``attention`` is ``yes`` when something about the submission
deserves a look: tampering undone, a test cell restored, a cell that hung or killed the
kernel, output cut, a file that had to be converted.

``summary.md`` starts with the class's results, then lists the students who need attention
and why, which tests failed for whom (with the failure's first line), and every note.

>>> attention({"status": "graded", "notes": [], "events": [{"kind": "timeout"}]})
True
>>> attention({"status": "graded", "notes": [], "events": []})
False
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict

__all__ = ["attention", "event_text", "notes_of", "grades_csv", "summary_markdown", "ATTENTION_EVENTS", "CSV_COLUMNS"]

CSV_COLUMNS = ("student", "lesson", "score", "max_score", "status", "attention", "notes")
ATTENTION_EVENTS = {
    "timeout", "hung", "kernel_died", "exit_called", "memory", "output_truncated", "tampering",
    "guard_unreachable", "threads", "skipped", "gave_up", "environment", "cell_error", "strict_equality",
}


def attention(result: dict) -> bool:
    """Whether a lesson's result deserves the instructor's look."""
    return (result.get("status") != "graded" or bool(result.get("notes"))
            or any(e.get("kind") in ATTENTION_EVENTS for e in result.get("events", [])))


def event_text(event: dict) -> str:
    where = f"cell {event['cell'] + 1}" if event.get("cell", -1) >= 0 else "kernel"
    if event.get("grade_id"):
        where += f" ({event['grade_id']})"
    elif event.get("source"):
        where += f" (`{event['source']}`)"
    return f"{where}: {event['detail']}"


def notes_of(result: dict) -> list[str]:
    """Every note and event of a lesson's result, as text."""
    return list(result.get("notes", [])) + [event_text(e) for e in result.get("events", [])]


def grades_csv(students: dict[str, dict]) -> str:
    """The CSV text for every student's results (``{student: {"lessons": {...}}}``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for student in sorted(students):
        for lesson, result in sorted(students[student]["lessons"].items()):
            notes = " | ".join(notes_of(result))
            writer.writerow([
                student, lesson, f"{result['score']:g}", f"{result['max_score']:g}", result["status"],
                "yes" if attention(result) else "no", notes[:1000],
            ])
    return out.getvalue()


def _first_line(error: dict | None) -> str:
    if not error:
        return "lost points"
    value = (error.get("evalue") or "").strip().splitlines()
    text = f"{error.get('ename')}: {value[0]}" if value else str(error.get("ename"))
    return text if len(text) <= 160 else text[:160] + " …"


def summary_markdown(students: dict[str, dict], *, header: list[str] | None = None) -> str:
    """The instructor's summary as Markdown."""
    lines = ["# Grading summary", ""]
    lines += header or []
    lessons = sorted({lesson for s in students.values() for lesson in s["lessons"]})
    lines += ["", "## Scores", "", "| student | " + " | ".join(lessons) + " | total |",
              "| --- | " + " | ".join("---:" for _ in lessons) + " | ---: |"]
    for student in sorted(students):
        results = students[student]["lessons"]
        cells = []
        for lesson in lessons:
            result = results.get(lesson)
            if result is None:
                cells.append("")
                continue
            mark = "" if result["status"] == "graded" else f" ({result['status']})"
            cells.append(f"{result['score']:g}/{result['max_score']:g}{mark}{' ⚠' if attention(result) else ''}")
        total = sum(r["score"] for r in results.values())
        most = sum(r["max_score"] for r in results.values())
        lines.append(f"| {student} | " + " | ".join(cells) + f" | {total:g}/{most:g} |")

    lines += ["", "## Needs your attention", ""]
    flagged = 0
    for student in sorted(students):
        record = students[student]
        lessons_flagged = [(lesson, r) for lesson, r in sorted(record["lessons"].items()) if attention(r)]
        if not lessons_flagged and not record.get("intake_notes"):
            continue
        flagged += 1
        lines.append(f"- **{student}** ({record.get('origin', '')})")
        lines += [f"  - {note}" for note in record.get("intake_notes", [])]
        for lesson, result in lessons_flagged:
            lines.append(f"  - {lesson} ({result['status']}, {result['score']:g}/{result['max_score']:g}):")
            lines += [f"    - {note}" for note in notes_of(result)]
    if not flagged:
        lines.append("Nothing: every notebook ran cleanly.")

    failures: dict[tuple[str, str], list[str]] = defaultdict(list)
    for student in sorted(students):
        for lesson, result in sorted(students[student]["lessons"].items()):
            for test in result.get("tests", []):
                if test.get("score", 0) < test.get("points", 0):
                    failures[(lesson, test["grade_id"])].append(f"{student} ({_first_line(test.get('error'))})")
    lines += ["", "## Failed tests", ""]
    if not failures:
        lines.append("No test failed.")
    for (lesson, grade_id), who in sorted(failures.items()):
        lines.append(f"- {lesson} `{grade_id}`: {len(who)} student(s)")
        lines += [f"  - {entry}" for entry in who]
    return "\n".join(lines) + "\n"
