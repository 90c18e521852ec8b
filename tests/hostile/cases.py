"""Hostile and broken submissions of lesson 01-budget, graded for real by test_autograder_grade.py.

Each case is one student. ``build`` makes the submission from the released notebook and the
reference answers; ``expect`` says what the honest part of it deserves:

* ``"full"``: every test passes (the hostile cells are extra cells that are not tests);
* ``"count-chat-zero"``: ``count_chat`` is wrong, so every ``count-chat-*`` test scores 0 and
  every other test passes; the hostile part tries to win those points back and must not;
* ``"unreadable"`` / ``"missing"``: nothing gradable; 0 with the reason.

``notes`` are patterns that must appear in the student's part of the summary. ``limits``
says where the defence is only partial, as the instructor guide does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import nbformat

LESSON = "01-budget"
NOTEBOOK = "budget.ipynb"

WRONG_COUNT_CHAT = '''
def count_chat(messages, enc=None):
    return -1
'''

# Counts only the framing (3 per message, 3 to prime the reply): wrong for every test, but it
# agrees with a tokenizer patched to return no tokens.
FRAMING_ONLY = '''
def count_chat(messages, enc=None):
    return 3 + 3 * len(messages)
'''

ALWAYS_EQUAL = '''
class Count(int):
    """An int that claims to equal anything."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


def count_chat(messages, enc=None):
    return Count(0)
'''


@dataclass
class Paths:
    """Where things are during the graded run (hostile cells aim at them)."""

    course: str
    out: str
    submissions: str
    port: int


@dataclass
class Case:
    student: str
    what: str
    build: Callable[[dict, dict, Paths], bytes | dict | None]
    expect: str
    notes: tuple[str, ...]
    layout: str = "nbgrader"  # "nbgrader": <student>/01-budget/budget.ipynb; "flat"; "zip"
    limits: str = ""
    symlink_to: str | None = None
    guide: str = ""  # where autograder/README.md explains the limit


def cell(source: str, kind: str = "code") -> dict:
    node = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    return json.loads(json.dumps(node))


def grade_id(c: dict) -> str | None:
    return c.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def solved(released: dict, answers: dict, **overrides: str) -> dict:
    """The released notebook with every answer filled in (some replaced by ``overrides``)."""
    notebook = json.loads(json.dumps(released))
    chosen = {**answers, **{k.replace("_", "-"): v for k, v in overrides.items()}}
    for c in notebook["cells"]:
        if grade_id(c) in chosen:
            c["source"] = chosen[grade_id(c)]
    return notebook


def after(notebook: dict, anchor: str | None, *sources: str) -> dict:
    """Insert code cells after the cell with grade_id ``anchor`` (None: after the setup cell)."""
    cells = notebook["cells"]
    if anchor is None:
        position = next(i for i, c in enumerate(cells) if c["cell_type"] == "code") + 1
    else:
        position = next(i for i, c in enumerate(cells) if grade_id(c) == anchor) + 1
    cells[position:position] = [cell(s) for s in sources]
    return notebook


def _tampered(released, answers, paths):
    notebook = solved(released, answers, count_chat=WRONG_COUNT_CHAT)
    kept = []
    for c in notebook["cells"]:
        gid = grade_id(c)
        if gid == "count-chat-visible":  # edited so that it cannot fail
            c["source"] = '"""Visible: one short message."""\nassert True'
        elif gid == "count-chat-reply-priming":  # deleted
            continue
        elif gid == "count-chat-name":  # turned into markdown
            c["cell_type"] = "markdown"
            c.pop("outputs", None)
            c.pop("execution_count", None)
        elif gid == "count-chat-tool-calls":  # relabelled as an answer cell, and emptied
            c["metadata"]["nbgrader"].update(grade=False, solution=True, locked=False)
            c["source"] = "pass"
        elif gid == "count-chat-per-message-overhead":  # grading metadata stripped, body replaced
            c["metadata"] = {}
            c["source"] = "pass"
        elif gid == "count-chat-course-keys-and-transcripts":  # worth 100 points now
            c["metadata"]["nbgrader"]["points"] = 100
        kept.append(c)
    notebook["cells"] = kept
    return notebook


def _nbformat_3(released, answers, paths):
    notebook = nbformat.reads(json.dumps(solved(released, answers)), as_version=4)
    return nbformat.writes(nbformat.convert(notebook, 3), version=3).encode()


def _nbformat_5(released, answers, paths):
    notebook = solved(released, answers)
    notebook["nbformat"] = 5
    return notebook


def _malformed(released, answers, paths):
    text = json.dumps(solved(released, answers), indent=1)
    return text[: len(text) // 2].encode()


def _escape(released, answers, paths):
    course, out, submissions = paths.course, paths.out, paths.submissions
    return after(
        solved(released, answers), None,
        f"print(open({course + '/solutions/01-budget/budget.ipynb'!r}).read()[:200])",
        f"print(open({submissions + '/honest.zip'!r}, 'rb').read()[:20])",
        "import sqlite3\n"
        f"print(sqlite3.connect({out + '/work/escape/root/gradebook.db'!r}).execute('SELECT * FROM grade').fetchall())",
        f"open({out + '/work/escape/root/gradebook.db'!r}, 'ab').write(b'full marks please')",
        f"open({out + '/grades.csv'!r}, 'w').write('escape,01-budget,17,17')",
        f"import socket\nsocket.create_connection(('127.0.0.1', {paths.port}), timeout=3).sendall(b'leak')",
        "import socket\nsocket.create_connection(('93.184.216.34', 80), timeout=3)",
    )


CASES = [
    Case("honest", "the reference answers, in a zip archive as an LMS exports it",
         lambda r, a, p: solved(r, a), "full", (), layout="zip"),
    Case("runaway", "an infinite loop, a loop that ignores SIGINT, and a memory bomb",
         lambda r, a, p: after(
             solved(r, a), None,
             "while True:\n    pass",
             "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
             "hoard = []\nwhile True:\n    hoard.append(bytearray(64 * 1024 * 1024))",
         ), "full",
         (r"ran for more than \d+ s and was interrupted", r"did not stop when interrupted",
          r"ran out of memory")),
    Case("exits", "sys.exit(), exit() and os._exit() in cells of their own",
         lambda r, a, p: after(solved(r, a), None, "import sys\nsys.exit(3)", "exit()", "import os\nos._exit(1)"),
         "full", (r"raised SystemExit", r"called exit\(\)", r"the kernel died"), layout="flat"),
    Case("tampered-tests", "count_chat is wrong and its test cells were edited, deleted, turned into "
         "markdown, relabelled as an answer cell, stripped of metadata and given 100 points",
         _tampered, "count-chat-zero",
         (r"count-chat-visible was edited", r"count-chat-reply-priming was deleted",
          r"count-chat-name was turned into a markdown cell", r"count-chat-tool-calls was relabelled as an answer",
          r"count-chat-per-message-overhead was deleted", r"given 100 points")),
    Case("nbformat-3", "the reference answers saved as nbformat 3", _nbformat_3, "full", (r"nbformat 3",)),
    Case("nbformat-5", "a notebook claiming nbformat 5", _nbformat_5, "unreadable", (r"nbformat 5 is not supported",)),
    Case("malformed-json", "a notebook cut off halfway", _malformed, "unreadable", (r"not valid JSON",)),
    Case("output-flood", "200,000 lines of output",
         lambda r, a, p: after(solved(r, a), None, "for i in range(200_000):\n    print(i)"), "full",
         (r"bytes over the [\d,]+-byte limit",)),
    Case("always-equal", "count_chat returns an int subclass whose __eq__ is always True",
         # Lesson 01's tests check `type(x) is int` before comparing, so the rigged object fails
         # there, before any `__eq__` runs; the grader's strict `assert a == b` is the second line
         # of defence (tests/test_autograder_guard.py exercises it on its own).
         lambda r, a, p: solved(r, a, count_chat=ALWAYS_EQUAL), "count-chat-zero", (),
         limits="strict `assert a == b` covers asserts of one comparison; `assert not (a != b)` or "
                "`assert a in [b]` still call the learner's methods: hidden tests check types first",
         guide="Comparisons other than `assert a == b`"),
    Case("input-transformer", "count_chat is wrong and an IPython input transformer turns every later cell into pass",
         lambda r, a, p: after(solved(r, a, count_chat=WRONG_COUNT_CHAT), "count-chat",
                               "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])"),
         "count-chat-zero", (r"input_transformers_cleanup: removed",),
         limits="a transformer is removed after the cell that added it; one re-added by a background thread "
                "is caught after each test, which then scores 0",
         guide="A determined student who studies the grader"),
    Case("monkeypatch", "count_chat counts only framing, and ctxlab, tiktoken and builtins are patched to agree",
         lambda r, a, p: after(
             solved(r, a, count_chat=FRAMING_ONLY), "count-chat",
             "import builtins\nimport ctxlab\nimport tiktoken\n"
             "ctxlab.count_messages = lambda messages, encoding=None: count_chat(messages)\n"
             "tiktoken.Encoding.encode_ordinary = lambda self, text: []\n"
             "builtins.sum = lambda *args, **kwargs: 0",
         ), "count-chat-zero",
         (r"ctxlab\.count_messages was replaced", r"tiktoken\.core\.Encoding\.encode_ordinary was replaced",
          r"builtins\.sum was replaced"),
         limits="code in the kernel that targets the guard itself (or forges messages from a thread) can "
                "still defeat it: see the guide",
         guide="A determined student who studies the grader"),
    Case("escape", "reads the solutions, another student's archive and the gradebook, writes the gradebook and "
         "the grades, and calls the network (the grader's loopback and the internet)",
         _escape, "full",
         (r"FileNotFoundError: \[Errno 2\] No such file or directory: '[^']*solutions",
          r"FileNotFoundError: \[Errno 2\] No such file or directory: '[^']*honest\.zip",
          r"OperationalError: unable to open database file",
          r"(ConnectionRefusedError|OSError)", r"Network is unreachable")),
    Case("symlinked", "a folder whose notebook is a symbolic link to the instructor's solution",
         lambda r, a, p: None, "missing", (r"skipped the symbolic link",),
         layout="flat", symlink_to="solutions/01-budget/budget.ipynb"),
]
