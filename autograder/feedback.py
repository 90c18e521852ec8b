"""Per-student feedback pages that never show hidden tests.

nbgrader's own feedback is the graded notebook rendered to HTML: it shows hidden tests unless
``ClearHiddenTests`` runs, and even then a failing hidden test's traceback quotes the hidden
lines. These pages are built from the results instead: for every test its name, what it
checks (its docstring, which is visible in the learner's notebook), the points, and for a
failure the error's type and message only. A message that quotes a hidden line (a learner's
code can inspect its caller and print it) is withheld, and every message is shortened.

Pages are written in nbgrader's feedback layout, ``feedback/<student>/<lesson>/<notebook>.html``
beside the submission's ``timestamp.txt`` and ``submission_secret.txt`` when it came with them,
so ``nbgrader release_feedback`` can hand them out, plus ``feedback/<student>/index.html``
covering every lesson.

>>> scrub("expected 9, got 4", ["assert secret(3) == 9"])
'expected 9, got 4'
>>> scrub("failed at: assert secret_value(3) == 9 + offset", ["assert secret_value(3) == 9 + offset"])
'(not shown: the message quotes hidden test code)'
"""

from __future__ import annotations

import html
from pathlib import Path

from .report import notes_of
from .scrubbing import MAX_MESSAGE, quotes_hidden, scrub

__all__ = ["scrub", "lesson_section", "lesson_page", "student_page", "write_feedback", "MAX_MESSAGE"]

MAX_NAME = 60
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; margin: 1rem 0; }
th, td { border-bottom: 1px solid #ddd; padding: .4rem; text-align: left; vertical-align: top; }
.pass { color: #1a7f37; } .fail { color: #b42318; } .note { background: #fff8e1; padding: .5rem; }
code, pre { font-family: ui-monospace, monospace; white-space: pre-wrap; }
"""


def _failure(test: dict, hidden: list[str]) -> str:
    error = test.get("error") or {}
    if error.get("ename") == "stderr":
        first = (error.get("evalue") or "").strip().splitlines()[:1]
        return "wrote to standard error, which fails a test: " + scrub(first[0] if first else "", hidden)
    # The exception's name is the learner's to choose too: shown only when it reads as a name.
    name = str(error.get("ename") or "Error")
    if len(name) > MAX_NAME or not name.replace(".", "").replace("_", "").isalnum() or quotes_hidden(name, hidden):
        name = "Error"
    value = scrub(error.get("evalue", ""), hidden)
    return f"{name}: {value}" if value else name


def lesson_section(lesson: str, result: dict, doc: dict[str, str], hidden: list[str]) -> str:
    """The HTML for one lesson: score, every test and the grader's notes."""
    parts = [f"<h2>{html.escape(lesson)}: {result['score']:g} / {result['max_score']:g}</h2>"]
    status = result.get("status")
    if status != "graded":
        parts.append(f"<p class='fail'>Not graded: {html.escape(status or '')}.</p>")
    notes = notes_of(result)
    if notes:
        items = "".join(f"<li>{html.escape(scrub(n, hidden))}</li>" for n in notes)
        parts.append(f"<div class='note'><p>The grader noted:</p><ul>{items}</ul></div>")
    if result.get("tests"):
        rows = []
        for test in result["tests"]:
            passed = test.get("error") is None and test.get("score", 0) >= test.get("points", 0)
            verdict = "<span class='pass'>passed</span>" if passed else "<span class='fail'>failed</span>"
            why = "" if passed else html.escape(_failure(test, hidden))
            rows.append(
                f"<tr><td><code>{html.escape(test['grade_id'])}</code><br>{html.escape(doc.get(test['grade_id'], ''))}</td>"
                f"<td>{test.get('score', 0):g} / {test.get('points', 0):g}</td><td>{verdict}</td><td>{why}</td></tr>"
            )
        parts.append("<table><tr><th>test</th><th>points</th><th>result</th><th>why</th></tr>"
                     + "".join(rows) + "</table>")
    return "\n".join(parts)


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n<h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n")


def lesson_page(student: str, lesson: str, result: dict, doc: dict[str, str], hidden: list[str]) -> str:
    """A whole HTML page of feedback for one lesson."""
    return _page(f"Feedback for {student}: {lesson}", lesson_section(lesson, result, doc, hidden))


def student_page(student: str, results: dict[str, dict], docs: dict, hidden: dict) -> str:
    """A whole HTML page of feedback covering every lesson of one student."""
    total = sum(r["score"] for r in results.values())
    most = sum(r["max_score"] for r in results.values())
    body = [f"<p>Total: {total:g} / {most:g}</p>"]
    body += [lesson_section(lesson, r, docs[lesson], hidden[lesson]) for lesson, r in sorted(results.items())]
    return _page(f"Feedback for {student}", "\n".join(body))


def write_feedback(folder: Path, student: str, results: dict[str, dict], lessons: dict) -> list[Path]:
    """Write every feedback page of one student under ``folder``; return their paths."""
    docs = {name: {t.grade_id: t.doc for t in lesson.tests} for name, lesson in lessons.items()}
    hidden = {name: lesson.hidden_lines for name, lesson in lessons.items()}
    written = []
    mine = folder / student
    for name, result in results.items():
        page = mine / name / f"{lessons[name].notebook}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(lesson_page(student, name, result, docs[name], hidden[name]), encoding="utf-8")
        for filename, text in (result.get("beside") or {}).items():  # what release_feedback reads
            if filename in ("timestamp.txt", "submission_secret.txt"):
                (page.parent / filename).write_text(text, encoding="utf-8")
        written.append(page)
    index = mine / "index.html"
    index.write_text(student_page(student, results, docs, hidden), encoding="utf-8")
    return [index, *written]
