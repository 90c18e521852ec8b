"""The grades CSV and the instructor's summary of who failed what and why.

``grades.csv`` has one row per student and lesson: ``student, lesson, score, max_score,
status, attention, notes``. ``status`` is ``graded``, ``missing`` (no notebook for the lesson),
``unreadable`` (not a notebook nbgrader can read; score 0) or ``error`` (grading itself failed:
the command exits non-zero). ``attention`` is ``yes`` when something about the submission
deserves a look: tampering undone, a test cell restored, a cell that hung or killed the
kernel, output cut, a file that had to be converted.

``summary.md`` starts with the class's results, then lists the students who need attention
and why, which tests failed for whom (with the failure's first line), and every note.

Both carry text a submission controls (folder names, notes quoting file names, error messages),
so both neutralise it: a CSV cell that a spreadsheet would read as a formula (it starts with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return) gets a leading ``'``, as OWASP advises
against CSV injection, and in the summary such text is escaped so that no HTML, link or table
cell of a submission's making renders.

>>> csv_cell("=SUM(A1:A9)"), csv_cell("ana")
("'=SUM(A1:A9)", 'ana')
>>> print(md_text("<script>alert(1)</script> | [x](javascript:y)"))
&lt;script&gt;alert(1)&lt;/script&gt; \\| \\[x\\](javascript:y)
>>> attention({"status": "graded", "notes": [], "events": [{"kind": "timeout"}]})
True
>>> attention({"status": "graded", "notes": [], "events": []})
False
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections import defaultdict

__all__ = ["attention", "event_text", "notes_of", "grades_csv", "summary_markdown", "csv_cell",
           "md_text", "ATTENTION_EVENTS", "CSV_COLUMNS", "FORMULA_STARTS"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")
LEADING_MARKER = re.compile(r"^(?:([-+])|(\d{1,9})([.)])(?=\s|$))")

CSV_COLUMNS = ("student", "lesson", "score", "max_score", "status", "attention", "notes")
ATTENTION_EVENTS = {
    "timeout", "hung", "kernel_died", "exit_called", "memory", "output_truncated", "skipped", "gave_up",
    "cell_error", "judge_unreachable", "judge_setup", "learner_interrupted", "learner_restarted",
    "reference_used", "notebook_timeout", "lost_output", "died",
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


def csv_cell(value: object) -> str:
    """``value`` as CSV cell text that no spreadsheet runs as a formula (OWASP's advice).

    Carriage returns become newlines, which the CSV writer quotes, so a cell cannot end its row.
    """
    text = str(value)
    quoted = "'" + text if text.startswith(FORMULA_STARTS) else text
    return quoted.replace("\r\n", "\n").replace("\r", "\n")  # a bare CR would end the row in some readers


def md_text(text: object) -> str:
    """``text`` escaped for Markdown: no HTML, link, emphasis or table cell of its own; one line."""
    # Runs of whitespace become one space: leading tabs or spaces would make an indented code block.
    one_line = " ".join(" ↵ ".join(str(text).splitlines()).split())
    escaped = MARKDOWN_SPECIAL.sub(r"\\\1", one_line)
    # At the start of a line, "-", "+" or "1." would open a list or draw a rule ("- --" is an <hr>).
    escaped = LEADING_MARKER.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", escaped, count=1)
    return html.escape(escaped, quote=False)


def grades_csv(students: dict[str, dict]) -> str:
    """The CSV text for every student's results (``{student: {"lessons": {...}}}``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for student in sorted(students):
        for lesson, result in sorted(students[student]["lessons"].items()):
            notes = " | ".join(notes_of(result))
            writer.writerow([csv_cell(cell) for cell in (
                student, lesson, f"{result['score']:g}", f"{result['max_score']:g}", result["status"],
                "yes" if attention(result) else "no", notes[:1000],
            )])
    return out.getvalue()


def _first_line(error: dict | None) -> str:
    if not error:
        return "lost points"
    value = (error.get("evalue") or "").strip().splitlines()
    text = f"{error.get('ename')}: {value[0]}" if value else str(error.get("ename"))
    return text if len(text) <= 160 else text[:160] + " …"


def summary_markdown(students: dict[str, dict], *, header: list[str] | None = None,
                     notes: list[str] | None = None) -> str:
    """The instructor's summary as Markdown.

    ``header`` lines are the grader's own and go in as they are; ``notes`` (about the class's
    folder) and everything in ``students`` are escaped with :func:`md_text`.
    """
    lines = ["# Grading summary", ""]
    lines += header or []
    lines += [f"- {md_text(note)}" for note in notes or []]
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
        lines.append(f"| {md_text(student)} | " + " | ".join(cells) + f" | {total:g}/{most:g} |")

    lines += ["", "## Needs your attention", ""]
    flagged = 0
    for student in sorted(students):
        record = students[student]
        lessons_flagged = [(lesson, r) for lesson, r in sorted(record["lessons"].items()) if attention(r)]
        if not lessons_flagged and not record.get("intake_notes"):
            continue
        flagged += 1
        lines.append(f"- **{md_text(student)}** ({md_text(record.get('origin', ''))})")
        lines += [f"  - {md_text(note)}" for note in record.get("intake_notes", [])]
        for lesson, result in lessons_flagged:
            lines.append(f"  - {md_text(lesson)} ({md_text(result['status'])}, "
                         f"{result['score']:g}/{result['max_score']:g}):")
            lines += [f"    - {md_text(note)}" for note in notes_of(result)]
    if not flagged:
        lines.append("Nothing: every notebook ran cleanly.")

    failures: dict[tuple[str, str], list[str]] = defaultdict(list)
    for student in sorted(students):
        for lesson, result in sorted(students[student]["lessons"].items()):
            for test in result.get("tests", []):
                if test.get("score", 0) < test.get("points", 0):
                    failures[(lesson, test["grade_id"])].append(
                        f"{md_text(student)} ({md_text(_first_line(test.get('error')))})")
    lines += ["", "## Failed tests", ""]
    if not failures:
        lines.append("No test failed.")
    for (lesson, grade_id), who in sorted(failures.items()):
        lines.append(f"- {md_text(lesson)} `{grade_id.replace('`', '')}`: {len(who)} student(s)")
        lines += [f"  - {entry}" for entry in who]
    return "\n".join(lines) + "\n"
