"""Hostile and broken submissions of lesson 01-budget, graded for real by test_autograder_grade.py.

Each case is one student. ``build`` makes the submission from the released notebook and the
reference answers; ``expect`` says what the honest part of it deserves:

* ``"full"``: every test passes (the hostile cells are extra cells that are not tests);
* ``"zero"``: nothing is answered, so every test scores 0; the hostile part tries to win points
  with no answer at all and must not;
* ``"count-chat-zero"``: ``count_chat`` is wrong, so every ``count-chat-*`` test scores 0 and
  every other test passes; the hostile part tries to win those points back and must not;
* ``"unreadable"`` / ``"missing"``: nothing gradable; 0 with the reason.

``notes`` are patterns that must appear in the student's part of the summary. ``limits``
says where the defence is only partial, as the instructor guide does.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

LESSON = "01-budget"
NOTEBOOK = "budget.ipynb"

WRONG_COUNT_CHAT = '''
def count_chat(messages, enc=None):
    return -1
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


def write_submission(folder: Path, case: Case, content) -> None:
    """Write ``case``'s submission into the class folder ``folder``, in the case's layout."""
    if case.symlink_to:
        (folder / case.student).mkdir()
        (folder / case.student / NOTEBOOK).symlink_to(Path(__file__).resolve().parents[2] / case.symlink_to)
        return
    data = content if isinstance(content, bytes) else json.dumps(content, indent=1).encode()
    if case.layout == "zip":
        with zipfile.ZipFile(folder / f"{case.student}.zip", "w") as archive:
            archive.writestr(f"{case.student}-submission/{LESSON}/{NOTEBOOK}", data)
    elif case.layout == "flat":
        (folder / case.student).mkdir()
        (folder / case.student / NOTEBOOK).write_bytes(data)
    else:
        (folder / case.student / LESSON).mkdir(parents=True)
        (folder / case.student / LESSON / NOTEBOOK).write_bytes(data)


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


def at_end(notebook: dict, *sources: str) -> dict:
    """Append code cells at the end of the notebook (after every answer and test)."""
    notebook["cells"] += [cell(s) for s in sources]
    return notebook


# Every later cell ends with an expression that nbgrader would read as a score: NaN (counted as
# full marks) and a number far above the points (which makes nbgrader raise).
SCORE_HOOK = '''
ip = get_ipython()
ip.input_transformers_post.append(lambda lines: lines + ["\\n", "float('nan')\\n"])
ip.events.register("post_execute", lambda: ip.displayhook(10 ** 9))
'''

READS_THE_CALLER = '''
def count_chat(messages, enc=None):
    import gc, linecache, re, sys
    frame = sys._getframe(1)
    while frame is not None:
        for name, value in list(frame.f_locals.items()):
            if name.lstrip("_") in ("want", "expected", "extra", "one", "got") and type(value) is int:
                return value
        frame = frame.f_back
    texts = ["".join(entry[2]) for entry in list(linecache.cache.values()) if len(entry) > 2]
    namespace = get_ipython().user_ns
    texts += [str(cell) for cell in namespace.get("In", [])]
    texts += [obj for obj in gc.get_objects() if isinstance(obj, str) and "count_chat(" in obj]
    for text in texts:
        match = re.search(r"count_chat\\([^)]*\\)\\s*==\\s*(\\d+)", text)
        if match:
            return int(match.group(1))
    return -1
'''

HOOKS = (
    # sees every exec and compile of the kernel, and tries to rewrite assertions it finds
    "import sys\n_events = []\n"
    "def _audit(event, args):\n"
    "    if event in ('exec', 'compile') and len(_events) < 1000:\n"
    "        _events.append((event, str(args)[:200]))\n"
    "sys.addaudithook(_audit)",
    # a trace function that would turn failing asserts into passes, then removes itself
    "import sys\n"
    "def _tracer(frame, event, arg):\n"
    "    if event == 'exception' and arg[0] is AssertionError:\n"
    "        frame.f_locals.clear()\n"
    "    return _tracer\n"
    "sys.settrace(_tracer)\nsys.setprofile(lambda *a: None)\nsys.settrace(None)\nsys.setprofile(None)",
    # a thread that keeps rebinding names tests might use, and a proxy bound to ctxlab
    "import threading, time, builtins\n"
    "class _Proxy:\n"
    "    def __init__(self, target):\n"
    "        self._target = target\n"
    "    def __getattr__(self, name):\n"
    "        return getattr(self._target, name)\n"
    "ctxlab = _Proxy(ctxlab)\n"
    "def _rebind():\n"
    "    for _ in range(600):\n"
    "        globals()['AssertionError'] = type('AssertionError', (Exception,), {})\n"
    "        builtins.__ctxlab_judge__ = None\n"
    "        time.sleep(0.05)\n"
    "threading.Thread(target=_rebind, daemon=True).start()",
    # class-level patches of IPython: any cell with an assert becomes `pass`
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "_run_cell = InteractiveShell.run_cell\n"
    "def _patched(self, raw_cell, *args, **kwargs):\n"
    "    if 'assert' in raw_cell:\n"
    "        raw_cell = 'pass'\n"
    "    return _run_cell(self, raw_cell, *args, **kwargs)\n"
    "InteractiveShell.run_cell = _patched",
)

DELEGATES = '''
from ctxlab.tokens import count_messages as _count_messages


def count_chat(messages, enc=None, _count=_count_messages):
    return _count(messages, enc)
'''

DUMPS = '''
_seen = set()
_calls = [0]


def _gather():
    import gc, linecache, os, sys
    texts = []
    frame = sys._getframe(2)
    while frame is not None:
        texts += [repr(value)[:20000] for value in list(frame.f_locals.values())]
        texts += linecache.getlines(frame.f_code.co_filename)
        texts += [c for c in frame.f_code.co_consts if isinstance(c, str)]
        frame = frame.f_back
    for obj in gc.get_objects():
        try:
            if isinstance(obj, dict):
                texts += [v for v in list(obj.values())[:500] if isinstance(v, str)]
            elif isinstance(obj, (list, tuple)):
                texts += [v for v in obj[:500] if isinstance(v, str)]
            elif type(obj).__name__ == "function":
                texts += [c for c in obj.__code__.co_consts if isinstance(c, str)]
        except Exception:
            pass
    texts += ["".join(entry[2]) for entry in list(linecache.cache.values()) if len(entry) > 2]
    texts += [str(cell) for cell in get_ipython().user_ns.get("In", [])]
    # Not the Python environment or ctxlab's code, which a checkout under /tmp puts in that walk
    # (tens of thousands of files, none of them the course's), and at most 100 MB under each folder.
    installed = tuple(os.path.realpath(p) for p in (sys.prefix, os.path.dirname(ctxlab.__file__)))
    for root in (os.getcwd(), os.path.expanduser("~"), "/opt", "/run", "/tmp"):
        budget = 100_000_000
        for folder, dirs, files in os.walk(root):
            if os.path.realpath(folder).startswith(installed):
                dirs[:] = []
                continue
            for name in files:
                if budget <= 0:
                    break
                try:
                    with open(os.path.join(folder, name), errors="ignore") as handle:
                        texts.append(handle.read(200_000))
                        budget -= len(texts[-1])
                except OSError:
                    pass
    for text in texts:
        for line in str(text)[:200_000].splitlines():
            if 30 < len(line) < 400 and len(_seen) < 400_000:
                _seen.add(line.strip())


def count_chat(messages, enc=None):
    if _calls[0] < 3:
        _calls[0] += 1
        _gather()
    enc = enc or ctxlab.encoding()
    called = {}
    total = 3
    for message in messages:
        total += 3
        for call in message.get("tool_calls") or []:
            called[call["id"]] = call["function"]["name"]
        for key, value in message.items():
            if key in ("step", "pinned") or value is None:
                continue
            if message["role"] == "tool" and key in ("tool_call_id", "name"):
                continue
            if key == "role" and value == "tool" and message.get("tool_call_id") in called:
                value = "functions." + called[message["tool_call_id"]]
            if key == "tool_calls":
                parallel = ctxlab.calls.parallel_arguments(value)
                if parallel is not None:
                    total += 3 + len(enc.encode_ordinary("multi_tool_use.parallel")) + len(enc.encode_ordinary(parallel))
                    continue
                for call in value:
                    total += 3 + len(enc.encode_ordinary(call["function"]["name"]))
                    total += len(enc.encode_ordinary(call["function"]["arguments"]))
            else:
                total += len(enc.encode_ordinary(value)) + (1 if key == "name" else 0)
    return total
'''


def hidden_test_lines(course: str) -> list[str]:
    """The distinctive lines of lesson 01's hidden tests (what the dump must never find): longer
    than 30 characters and in no cell of the learner's version (``raise AssertionError(`` is
    both in hidden tests and in Python's own library, so it proves nothing)."""
    import re
    from pathlib import Path

    def lines_of(cell):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        return source

    root = Path(course)
    released = json.loads((root / "course" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    visible = {line.strip() for c in released["cells"] for line in lines_of(c).splitlines()}
    notebook = json.loads((root / "solutions" / LESSON / NOTEBOOK).read_text(encoding="utf-8"))
    lines = []
    for c in notebook["cells"]:
        for block in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", lines_of(c), re.S):
            lines += [line.strip() for line in block.splitlines()
                      if len(line.strip()) > 30 and line.strip() not in visible]
    return lines


def found_report(answers: dict, paths: Paths) -> str:
    """A last cell that prints how many hidden lines the dump found (by hash) and how much it saw."""
    import hashlib

    hashes = sorted({hashlib.sha256(line.encode()).hexdigest() for line in hidden_test_lines(paths.course)})
    return ("import hashlib\n"
            f"_hidden = set({hashes!r})\n"
            "_found = sum(1 for line in _seen if hashlib.sha256(line.encode()).hexdigest() in _hidden)\n"
            "print(f'FOUND {_found} OF {len(_hidden)} HIDDEN LINES IN {len(_seen)} STRINGS')")


FORKS = '''
import os, signal, time
children = []
try:
    for _ in range(600):
        pid = os.fork()
        if pid == 0:
            time.sleep(20)
            os._exit(0)
        children.append(pid)
finally:
    print("forked", len(children))
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    for pid in children:
        os.waitpid(pid, 0)
'''

FILLS = '''
import os, sys
folder = os.path.dirname(sys.argv[sys.argv.index("-f") + 1])
with open(os.path.join(folder, "fill.bin"), "wb") as handle:
    for _ in range(300):
        handle.write(b"x" * (1 << 20))
'''

FLOODS = tuple("print('y' * 900_000)" for _ in range(25))


def _tampered(released, answers, paths):
    notebook = solved(released, answers, count_chat=WRONG_COUNT_CHAT)
    hidden = [grade_id(c) for c in notebook["cells"]
              if (grade_id(c) or "").startswith("count-chat-") and grade_id(c) != "count-chat-visible"
              and c["metadata"]["nbgrader"].get("grade")]
    deleted, markdown, relabelled, stripped, costly = hidden[:5]
    kept = []
    for c in notebook["cells"]:
        gid = grade_id(c)
        if gid == "count-chat-visible":  # edited so that it cannot fail
            c["source"] = '"""Visible: one short message."""\nassert True'
        elif gid == deleted:
            continue
        elif gid == markdown:
            c["cell_type"] = "markdown"
            c.pop("outputs", None)
            c.pop("execution_count", None)
        elif gid == relabelled:  # relabelled as an answer cell, and emptied
            c["metadata"]["nbgrader"].update(grade=False, solution=True, locked=False)
            c["source"] = "pass"
        elif gid == stripped:  # grading metadata stripped, body replaced
            c["metadata"] = {}
            c["source"] = "pass"
        elif gid == costly:  # worth 100 points now
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


def _uses_a_demonstration(released: dict, answers: dict, paths: Paths) -> dict:
    """Honest answers, one of which reads a figure only a demonstration above it computes."""
    billed = "LAPS_SEEN = len(per_lap)  # the demonstration above measured the run's laps\n" + answers["billed-input"]
    return at_end(solved(released, answers, billed_input=billed), "print(f'{len(research)} messages')")


CASES = [
    Case("honest", "the reference answers, in a zip archive as an LMS exports it",
         lambda r, a, p: solved(r, a), "full", (), layout="zip"),
    Case("uses-a-demonstration", "honest answers, one of which reads a name that only a demonstration binds, "
         "and a cell of its own that reads another: grading must run those demonstrations",
         _uses_a_demonstration, "full", ()),
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
         (r"count-chat-visible was edited", r"count-chat-[a-z-]+ was deleted",
          r"count-chat-[a-z-]+ was turned into a markdown cell", r"count-chat-[a-z-]+ was relabelled as an answer",
          r"given 100 points")),
    Case("nbformat-3", "the reference answers saved as nbformat 3", _nbformat_3, "full", (r"nbformat 3",)),
    Case("nbformat-5", "a notebook claiming nbformat 5", _nbformat_5, "unreadable", (r"nbformat 5 is not supported",)),
    Case("malformed-json", "a notebook cut off halfway", _malformed, "unreadable", (r"not valid JSON",)),
    Case("output-flood", "200,000 lines of output",
         lambda r, a, p: after(solved(r, a), None, "for i in range(200_000):\n    print(i)"), "full",
         (r"bytes over the output limit",)),
    Case("always-equal", "count_chat returns an int subclass whose __eq__ is always True",
         # Only plain data crosses to the judge: the rigged object arrives as a reference, fails
         # `type(x) is int`, and no comparison ever calls its __eq__.
         lambda r, a, p: solved(r, a, count_chat=ALWAYS_EQUAL), "count-chat-zero", ()),
    Case("input-transformer", "count_chat is wrong and an IPython input transformer turns every later cell "
         "holding an assert into pass",
         lambda r, a, p: after(solved(r, a, count_chat=WRONG_COUNT_CHAT), "count-chat",
                                "get_ipython().input_transformers_cleanup.append("
                                "lambda lines: ['pass\\n'] if any('assert' in line for line in lines) else lines)"),
         "count-chat-zero", ()),
    Case("monkeypatch", "count_chat is wrong, and ctxlab's count_messages (the tests' reference) is patched to "
         "agree with it",
         lambda r, a, p: after(
             solved(r, a, count_chat=WRONG_COUNT_CHAT), "count-chat",
             "import ctxlab\nimport ctxlab.tokens\n"
             "ctxlab.count_messages = ctxlab.tokens.count_messages = "
             "lambda messages, encoding=None: count_chat(messages)",
         ), "count-chat-zero", ()),
    Case("score-hook", "a blank notebook plus one cell that makes every later cell end with an execute_result "
         "(NaN, and a number far above the points)",
         lambda r, a, p: after(json.loads(json.dumps(r)), None, SCORE_HOOK), "zero", ()),
    Case("reads-the-caller", "count_chat looks for the expected value in its callers' frames, linecache, "
         "In/Out, gc and the files it can reach, and returns it",
         lambda r, a, p: solved(r, a, count_chat=READS_THE_CALLER), "count-chat-zero", ()),
    Case("hooks", "count_chat is wrong; audit hooks, trace and profile functions, a thread rebinding names, "
         "a proxy bound to ctxlab and IPython class patches try to change the tests",
         lambda r, a, p: after(solved(r, a, count_chat=WRONG_COUNT_CHAT), None, *HOOKS), "count-chat-zero", ()),
    Case("delegates", "count_chat hands the work to ctxlab's own count_messages, through an alias held in a "
         "default argument",
         lambda r, a, p: solved(r, a, count_chat=DELEGATES), "count-chat-zero",
         (r"ctxlab's own answer",),
         limits="a learner who copies ctxlab's source, or a code object of it, into the notebook is not caught",
         guide="Copying the library's source"),
    Case("binds-ctxlabs-class", "a blank notebook whose only change binds the exercise's class to ctxlab's own "
         "(ContextBudget = ctxlab.ContextBudget, after the answer cell)",
         lambda r, a, p: after(json.loads(json.dumps(r)), "context-budget", "ContextBudget = ctxlab.ContextBudget"),
         "zero", (r"ctxlab's own answer",)),
    Case("dumps-everything", "honest answers, and a count_chat that gathers every string it can reach while "
         "the tests call it (globals, gc, frames, linecache, In, files); a last cell reports what it found",
         lambda r, a, p: at_end(solved(r, a, count_chat=DUMPS), found_report(a, p)), "full", ()),
    Case("resources", "forks hundreds of processes, fills the kernel's writable folder, and prints close to "
         "the output limit in many cells",
         lambda r, a, p: after(solved(r, a), None, FORKS, FILLS, *FLOODS), "full",
         (r"Resource temporarily unavailable|can't start new thread|BlockingIOError|ran for more than",
          r"No space left on device|File too large", r"output limit")),
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

# A blank notebook with any mix of cheating cells scores 0 on every test: a fixed sample of mixes.
CHEATS = (
    "print('all tests passed')",
    "raise AssertionError('count_chat-visible passed')",
    SCORE_HOOK,
    *HOOKS,
    "import ctxlab\nctxlab.count_messages = lambda *a, **k: 9",
    "import builtins, tiktoken\ntiktoken.Encoding.encode_ordinary = lambda self, text: []\n"
    "builtins.sum = lambda *args, **kwargs: 0",
    "import sys\nsys.exit(0)",
    "from IPython.display import display\ndisplay({'text/plain': '1.0'}, raw=True)",
    "count_chat = billed_input = lambda *a, **k: 9",
)


def _blank_with(picks: list[tuple[int, int]]):
    def build(released, answers, paths):
        notebook = json.loads(json.dumps(released))
        for position, pick in picks:
            code = [i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "code"]
            at = code[position % len(code)] + 1
            notebook["cells"][at:at] = [cell(CHEATS[pick % len(CHEATS)])]
        return notebook
    return build


def _mixes(count: int, seed: int = 17) -> list[Case]:
    import random

    rng = random.Random(seed)
    return [Case(f"blank-mix-{n}", "a blank notebook with cheating cells: " + ", ".join(str(p) for _, p in picks),
                 _blank_with(picks), "zero", ())
            for n in range(count)
            for picks in [[(rng.randrange(100), rng.randrange(len(CHEATS))) for _ in range(rng.randint(2, 5))]]]


CASES += _mixes(4)

