"""nbgrader's Execute step, made safe for hostile notebooks: every test cell is judged apart.

:class:`GuardedExecute` replaces ``nbgrader.preprocessors.Execute`` in the autograde pipeline
(the worker configures it). Each notebook gets **two** sandboxed kernels
(:class:`autograder.kernel.SandboxedKernelManager`):

* the **learner's kernel** runs every cell that is not a test: the learner's answers, the
  demonstrations, the lesson's locked setup cells. It never sees a test cell;
* the **judge's kernel** runs the locked setup cells (the locked cells before the first answer
  cell, quietly) and every test cell, and nothing the learner wrote. For each run of
  consecutive test cells the judge connects to the learner's kernel (the agent,
  :mod:`autograder.judging.agent`), and before each of them binds the learner's answer names
  to what they are there at that moment: plain data as it is, functions, classes and objects as proxies whose calls carry
  JSON both ways (:mod:`autograder.judging`). Comparisons happen in the judge, on plain data.
  Expression results are never displayed there and any ``execute_result`` is removed from a test
  cell, so a test cell scores its points exactly when it raised nothing.

What it adds to nbgrader besides:

* **a kernel that dies or ignores interrupts does not end the notebook.** A cell that kills
  the learner's kernel (``os._exit``, ``exit()``, a crash) or keeps running after the per-cell
  timeout and an interrupt gets an error output; a new kernel is started, the cells that had
  run are replayed without it, and grading goes on. A learner function that hangs or kills the
  kernel while a test calls it fails that test, and the kernel is recovered the same way.
* **output is capped** per cell (``output_bytes``) and per notebook (``notebook_output_bytes``):
  further stdout and displays are dropped, while errors and stderr, which decide whether a test
  passes, are always kept (shortened).
* **a time budget per notebook** (``notebook_timeout``): once spent, the remaining cells are not
  run and the remaining tests score 0, but everything that ran keeps its score.

Everything it noticed is appended to ``GuardedExecute.context.events`` for the report.

>>> Event(cell=3, kind="timeout", detail="ran for more than 60 s").as_dict()["kind"]
'timeout'
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import secrets
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Empty

from jupyter_core.utils import ensure_async, run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute
from traitlets import Integer
from zmq import ZMQError

from .kernel import LimitedKernelClient, SandboxedKernelManager
from .sandbox import JUDGING_PACKAGE, Sandbox
from .skipping import cells_to_skip

__all__ = ["GuardedExecute", "ExecutionContext", "JudgeSpec", "JudgePool", "Event"]

KEEP_ERROR_CHARS = 4000
SOCKET = "judge.sock"
SKIPPED_NOTE = ("[not run while grading: this is one of the lesson's demonstrations, and nothing graded "
                "depends on it]\n")
# Errors in a learner's cell that need no note: an unanswered exercise's stub, and running out
# of memory (noted on its own).
QUIET_ERRORS = {"NotImplementedError", "MemoryError"}
# How a cell can leave the kernel unusable: the error it gets, the event, and what happened.
FATAL = {
    "hung": ("CellTimeoutError", "hung", "ran for more than {timeout} s and did not stop when interrupted"),
    "lost_output": ("OutputTooLarge", "output_truncated", "sent an output too large to receive (over {mb} MB)"),
    "died": ("DeadKernelError", "kernel_died",
             "the kernel died while running this cell (os._exit, a crash or running out of memory)"),
}
# The same, for a test cell, whose code is the lesson's: the judge's kernel was stopped by what the
# code under test handed it (a value too large to count in time, to hold in memory, or to send).
TEST_FATAL = {
    "hung": ("CellTimeoutError", "ran for more than {timeout} s and did not stop when interrupted"),
    "lost_output": ("OutputTooLarge", "made the judge's kernel send a message too large to receive (over {mb} MB)"),
    "died": ("DeadKernelError", "made the judge's kernel die (it ran out of memory or crashed)"),
}


@dataclass
class Event:
    """Something the grader did or noticed while running one cell."""

    cell: int
    kind: str
    detail: str
    grade_id: str | None = None
    source: str | None = None  # the start of the cell's first line, to find it in the notebook

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class JudgeSpec:
    """What the judge needs to know of a lesson: the learner's answer names (top-level names of
    the answer cells) and, per name, ctxlab's reference functions to switch off while the judge
    calls that answer (``[file relative to ctxlab, qualified name, dotted label]`` each)."""

    answer_names: list[str] = field(default_factory=list)
    forbid: dict[str, list[list[str]]] = field(default_factory=dict)


@dataclass
class ExecutionContext:
    """What the worker hands to :class:`GuardedExecute` for one notebook."""

    sandbox: Sandbox
    runtime_root: Path
    lesson: str
    files: dict[str, str] = field(default_factory=dict)
    judge: JudgeSpec = field(default_factory=JudgeSpec)
    events: list[Event] = field(default_factory=list)
    # The released notebook's demonstrations and locked non-test cells, which grading leaves out
    # when nothing that runs later needs them (autograder.skipping); empty: run every cell.
    lesson_cells: set[str] = field(default_factory=set)
    skipped: list[int] = field(default_factory=list)  # the cells left out, filled in while grading
    # Where this worker keeps judges that serve one notebook after another (see JudgePool);
    # None: a new judge for every notebook.
    judges: JudgePool | None = None


@dataclass
class _Judge:
    km: SandboxedKernelManager
    kc: object
    channel: str
    notebooks: int = 0


class JudgePool:
    """The judges a grading worker keeps between notebooks, one per lesson.

    The judge runs only the lesson's own code, so it is trusted: after a notebook it is reset
    (every name its setup and tests bound is forgotten, :func:`ctxlab_judging.judge.reset`) and
    serves the next notebook of the same lesson, which saves a kernel start and ctxlab's import
    and tokenizer load per notebook. A judge that stopped answering is never kept, and each is
    replaced after ``max_notebooks``. Every learner still gets a new kernel of their own.
    """

    max_notebooks = 50

    def __init__(self, root: str) -> None:
        self.root = root  # outlives every student's own runtime folder
        self._idle: dict[str, _Judge] = {}

    def take(self, lesson: str) -> _Judge | None:
        return self._idle.pop(lesson, None)

    def keep(self, lesson: str, judge: _Judge) -> bool:
        if judge.notebooks >= self.max_notebooks or lesson in self._idle:
            return False
        self._idle[lesson] = judge
        return True

    async def close(self) -> None:
        """Stop every kept judge (when the worker ends)."""
        for judge in self._idle.values():
            with contextlib.suppress(Exception):
                judge.kc.stop_channels()
            with contextlib.suppress(Exception):
                await ensure_async(judge.km.shutdown_kernel(now=True))
            with contextlib.suppress(Exception):
                judge.km.release()
        self._idle.clear()


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _size(content: dict) -> int:
    if "text" in content:
        return len(content["text"])
    data = content.get("data") or {}
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


def _is_test(cell) -> bool:
    return utils.is_grade(cell) and not utils.is_solution(cell)


def _is_setup(cell) -> bool:
    return utils.is_locked(cell) and not utils.is_grade(cell) and not utils.is_solution(cell)


class GuardedExecute(Execute):
    """nbgrader's Execute with a learner's kernel, a judge's kernel, recovery and output caps."""

    output_bytes = Integer(1_000_000, help="stdout and display bytes kept per cell").tag(config=True)
    notebook_output_bytes = Integer(20_000_000, help="stdout and display bytes kept per notebook").tag(config=True)
    notebook_timeout = Integer(0, help="seconds one notebook may run in all (0: no limit)").tag(config=True)
    max_restarts = Integer(6, help="kernel restarts allowed per notebook").tag(config=True)
    judge_timeout = Integer(30, help="seconds the judge may wait to reach the learner's kernel").tag(config=True)

    context: ExecutionContext | None = None  # set by the worker before each notebook

    # ------------------------------------------------------------------ nbclient hooks

    def output(self, outs, msg, display_id, cell_index):
        """Keep errors and stderr always; drop stdout and displays beyond the caps."""
        content = msg.get("content", {})
        msg_type = msg.get("msg_type")
        critical = msg_type == "error" or (msg_type == "stream" and content.get("name") == "stderr")
        size = _size(content)
        used = self._bytes.get(cell_index, 0)
        over = used + size > self.output_bytes or self._total_bytes + size > self.notebook_output_bytes
        # Past the limit, stdout and displays go; stderr and errors decide a test's fate, so the
        # first of each kind is still kept (shortened) and the rest dropped.
        if over and (not critical or self._critical_kept.get((cell_index, msg_type), False)):
            self._dropped[cell_index] = self._dropped.get(cell_index, 0) + size
            return None
        if over:
            self._critical_kept[(cell_index, msg_type)] = True
        kept = min(size, KEEP_ERROR_CHARS if critical else size)
        self._bytes[cell_index] = used + kept
        self._total_bytes += kept
        out = super().output(outs, msg, display_id, cell_index)
        if out is not None and critical:
            if msg_type == "stream" and len(out.get("text", "")) > KEEP_ERROR_CHARS:
                out["text"] = out["text"][:KEEP_ERROR_CHARS] + "\n[stderr shortened by the grader]\n"
            if msg_type == "error":
                out["ename"] = str(out.get("ename", ""))[:200]
                out["evalue"] = str(out.get("evalue", ""))[:KEEP_ERROR_CHARS]
                out["traceback"] = [str(line)[:KEEP_ERROR_CHARS] for line in out.get("traceback", [])[-60:]]
        return out

    async def _async_handle_timeout(self, timeout, cell=None):
        self._interrupted = True
        return await super()._async_handle_timeout(timeout, cell)

    def on_cell_executed(self, **kwargs):
        super().on_cell_executed(**kwargs)
        reply = kwargs["execute_reply"] or {}
        for payload in reply.get("content", {}).get("payload", []) or []:
            if payload.get("source") == "ask_exit" and not payload.get("keepkernel"):
                self._asked_exit = True

    # ------------------------------------------------------------------ the run

    def preprocess(self, nb, resources=None, km=None):
        if self.context is None:
            raise RuntimeError("GuardedExecute.context must be set by the grading worker")
        NotebookClient.__init__(self, nb, km)  # reset the client's state, as nbconvert does
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        self.shutdown_kernel = "immediate"
        run_sync(self._run_notebook)()
        return self.nb, self.resources

    def _event(self, index: int, kind: str, detail: str) -> None:
        grade_id = source = None
        if index >= 0:
            cell = self.nb.cells[index]
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            first = cell.source.strip().splitlines()[:1]
            source = (first[0][:57] + "...") if first and len(first[0]) > 60 else (first[0] if first else None)
        self.context.events.append(Event(index, kind, detail, grade_id, source))

    async def _run_notebook(self) -> None:
        self._bytes: dict[int, int] = {}
        self._total_bytes = 0
        self._dropped: dict[int, int] = {}
        self._critical_kept: dict[tuple[int, str], bool] = {}
        self._replayable: list[int] = []
        self._judge_setup: list[int] = []
        self._judge_tests: list[int] = []  # test cells may define helpers that later tests use
        self._answers_seen = False  # the judge runs the locked cells before the first answer: the setup
        self._restarts = 0
        self._session: str | None = None  # the learner kernel's serve request, while a session is open
        self._asked_exit = self._interrupted = False
        self._out_of_time = False
        self.km = self.kc = None
        self.judge_km = self.judge_kc = None
        self._deadline = time.monotonic() + self.notebook_timeout if self.notebook_timeout else None
        pool = self.context.judges
        kept = pool.take(self._judge_key()) if pool is not None else None
        if kept is not None:
            self._channel = kept.channel
            self.judge_km, self.judge_kc = kept.km, kept.kc
            self._judge_notebooks = kept.notebooks
        else:
            self._channel = tempfile.mkdtemp(prefix="channel-", dir=pool.root if pool else self.context.runtime_root)
            os.chmod(self._channel, 0o777)
            self._judge_notebooks = 0
        try:
            # The two kernels start side by side (the judge's does not touch self.km and self.kc).
            await asyncio.gather(self._reset_judge() if kept is not None else self._start_judge(),
                                 self._start_kernel())
            skipped = self._cells_to_skip()
            last_test = -1
            for index, cell in enumerate(self.nb.cells):
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                if index in skipped:
                    cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=SKIPPED_NOTE)]
                    self.context.skipped.append(index)
                    continue
                if self._restarts > self.max_restarts or self._time_is_up(index):
                    if _is_test(cell):
                        why = (f"after {self.max_restarts} kernel restarts" if self._restarts > self.max_restarts
                               else "when the student's time limit ran out")
                        cell.outputs = [_error("NotGraded", f"the grader stopped running this notebook {why}")]
                    continue
                if _is_test(cell):
                    await self._run_test(index, cell)
                else:
                    await self._end_session(last_test)
                    await self._run_cell(index, cell)
                    self._answers_seen = self._answers_seen or utils.is_solution(cell)
                    continue
                last_test = index
            await self._end_session(last_test)
            self.set_widgets_metadata()
        finally:
            await self._stop_kernel()
            await self._keep_or_stop_judge()

    def _judge_key(self) -> str:
        return json.dumps([self.context.lesson, sorted(self.context.files.items())])

    async def _reset_judge(self) -> None:
        """Make a kept judge forget its last notebook; start a new one if it does not answer."""
        report = await self._judge_call("__ctxlab_judge__.reset({nonce})")
        if report is None or not report.get("ok"):
            await self._stop_judge()
            await self._start_judge()

    async def _keep_or_stop_judge(self) -> None:
        pool = self.context.judges
        if pool is not None and self.judge_km is not None and await ensure_async(self.judge_km.is_alive()):
            judge = _Judge(self.judge_km, self.judge_kc, self._channel, self._judge_notebooks + 1)
            # The judge must be idle: nothing of this notebook may still be running in it.
            if (await self._judge_call("__ctxlab_judge__.end({nonce})", timeout=5) is not None
                    and pool.keep(self._judge_key(), judge)):
                self.judge_km = self.judge_kc = None
                return
        await self._stop_judge()

    def _cells_to_skip(self) -> set[int]:
        """The lesson's own cells nothing graded needs (:mod:`autograder.skipping`)."""
        if not self.context.lesson_cells:
            return set()
        code = [i for i, cell in enumerate(self.nb.cells) if cell.cell_type == "code"]
        answers = [n for n, i in enumerate(code) if utils.is_solution(self.nb.cells[i])]
        if not answers:
            return set()
        sources = [self.nb.cells[i].source for i in code]
        runs = ["" if _is_test(self.nb.cells[i]) or not self.nb.cells[i].source.strip() else self.nb.cells[i].source
                for i in code]
        skip = cells_to_skip(sources, runs, first_answer=answers[0], lesson_cells=self.context.lesson_cells,
                             answer_names=self.context.judge.answer_names,
                             locked=[utils.is_locked(self.nb.cells[i]) for i in code])
        return {code[n] for n in skip}

    def _time_is_up(self, index: int) -> bool:
        if self._deadline is None or time.monotonic() < self._deadline:
            return False
        if not self._out_of_time:
            self._out_of_time = True
            self._event(index, "notebook_timeout", "the student's time limit (--student-timeout) ran out here; "
                                                   "the cells from here on were not run and their tests score 0, "
                                                   "everything before keeps its score")
        return True

    async def _run_cell(self, index: int, cell) -> None:
        """A cell that is not a test: in the learner's kernel (and, for setup cells, in the judge's)."""
        outcome = await self._execute(index, cell)
        self._report_output(index)
        if outcome in FATAL:
            ename, kind, what = FATAL[outcome]
            what = what.format(timeout=self.timeout, mb=LimitedKernelClient.max_message_bytes // 2**20)
            cell.outputs.append(_error(ename, f"{what}; the kernel was restarted without this cell"))
            self._event(index, kind, f"{what}; the kernel was restarted without it")
            await self._recover(index)
            return
        if outcome == "timeout":
            self._event(index, "timeout", f"ran for more than {self.timeout} s and was interrupted")
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if outcome == "error" and errors[0].get("ename") not in QUIET_ERRORS:
            value = str(errors[0].get("evalue", "")).strip().splitlines()[:1]
            self._event(index, "cell_error", f"raised {errors[0].get('ename')}" + (f": {value[0][:200]}" if value else ""))
        if any(o.get("ename") == "MemoryError" for o in errors):
            # The memory is likely still held by the kernel: go on in a fresh one, without this cell.
            self._event(index, "memory", f"ran out of memory (limit {self.context.sandbox.limits.memory_mb} MB); "
                                         "the kernel was restarted without this cell")
            await self._recover(index)
            return
        if self._asked_exit:
            self._asked_exit = False
            self._event(index, "exit_called", "called exit() or quit(), which stops the kernel; restarted without it")
            await self._recover(index)
            return
        if outcome in ("ok", "error"):
            self._replayable.append(index)
        if _is_setup(cell) and not self._answers_seen:
            self._judge_setup.append(index)
            if not await self._judge_run_quietly(cell.source):
                self._event(index, "judge_setup", "this setup cell failed in the judge's kernel")

    async def _execute(self, index: int, cell) -> str:
        self._asked_exit = self._interrupted = False
        try:
            await self.async_execute_cell(cell, index, execution_count=self.code_cells_executed + 1)
        except CellTimeoutError:
            # Either the cell ignored the interrupt sent at the timeout, or (with no interrupt sent)
            # its output stopped arriving: a message over the size limit is refused.
            return "hung" if self._interrupted else "lost_output"
        except DeadKernelError:
            return "died"
        except ZMQError:
            # The request could not be sent: an earlier message over the size limit ended the
            # connection (see LimitedKernelClient.send_timeout), so this kernel is out of reach.
            return "lost_output"
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if any(o.get("ename") == "CellTimeoutError" for o in errors):
            return "timeout"
        return "error" if errors else "ok"

    def _report_output(self, index: int) -> None:
        dropped = self._dropped.pop(index, 0)
        if dropped:
            self.nb.cells[index].outputs.append(NotebookNode(
                output_type="stream", name="stdout",
                text=f"\n[the grader kept the first {self.output_bytes:,} bytes of output; "
                     f"{dropped:,} more were dropped]\n",
            ))
            self._event(index, "output_truncated", f"printed {dropped:,} bytes over the output limit "
                                                   f"({self.output_bytes:,} per cell, "
                                                   f"{self.notebook_output_bytes:,} per notebook)")

    # ------------------------------------------------------------------ tests, in the judge

    async def _run_test(self, index: int, cell) -> None:
        attempt = 0
        while True:
            rebinding = self._session is not None
            report = await self._bind_for_test()
            if report is not None and report.get("ok"):
                break
            await self._end_session(index, broken="not connected")
            if rebinding:
                # The connection the earlier tests used is gone (their code may have ended it):
                # begin a new one, as a test that starts a run does.
                continue
            why = (report or {}).get("error") or "the judge's kernel did not answer"
            if attempt == 0:
                attempt = 1
                if report is None:  # the judge itself gave no answer: it is replaced too
                    await self._restart_judge()
                self._event(index, "judge_unreachable", f"{why}; the learner's kernel was restarted")
                await self._recover(-1)
                continue
            cell.outputs = [_error("NotGraded", "the grader could not reach your code to test it "
                                                "(your kernel did not answer, even after a restart)")]
            return
        outcome = await self._in_judge(self._execute(index, cell))
        self._judge_tests.append(index)
        self._report_output(index)
        # Only the judge's own outputs count, and only its errors: no result sets a score.
        cell.outputs = [o for o in cell.outputs if o.get("output_type") != "execute_result"]
        for output in cell.outputs:
            if output.get("output_type") == "error" and (
                    output.get("ename") == "ReferenceDisabled" or "is ctxlab's own answer" in str(output.get("evalue"))):
                self._event(index, "reference_used", "the code under test called ctxlab's own answer to "
                                                     "this exercise, which is switched off while it is graded")
        if outcome in FATAL:
            # The judge hung past the interrupt, died or sent what could not be received, so nbclient
            # recorded no error: without one the test would score its points. It fails, and the judge
            # is replaced without being asked anything (its channel may be gone for good).
            ename, what = TEST_FATAL[outcome]
            what = what.format(timeout=self.timeout, mb=LimitedKernelClient.max_message_bytes // 2**20)
            if not any(o.get("output_type") == "error" for o in cell.outputs):
                cell.outputs.append(_error(ename, f"this test {what}, so it fails"))
            self._event(index, outcome, f"this test {what}; the judge's kernel was restarted")
            serving, self._session = self._session, None
            await self._restart_judge()
            await self._finish_serving(serving, index, broken="the judge's kernel was restarted")
        elif outcome == "timeout":
            self._event(index, "timeout", f"this test ran for more than {self.timeout} s")
            serving, self._session = self._session, None
            ended = await self._judge_call("__ctxlab_judge__.end({nonce})")
            await self._finish_serving(serving, index, broken=(ended or {}).get("broken"))

    # A run of consecutive test cells shares one connection to the learner's kernel (a
    # session): the names are bound again before each test, and the connection ends before any
    # other cell runs, after a test that timed out, and at the end of the notebook.

    async def _bind_for_test(self) -> dict | None:
        """Bind the learner's names in the judge for the next test: a new session, or the open one."""
        spec = self.context.judge
        if self._session is not None:
            return await self._judge_call(f"__ctxlab_judge__.rebind({{nonce}}, {spec.answer_names!r})")
        forbid = {name: spec.forbid[name] for name in spec.answer_names if spec.forbid.get(name)}
        token = secrets.token_hex(16)
        self._session = self._serve(token)
        if self._session is None:
            return {"ok": False, "error": "the request to answer the judge could not be sent to it"}
        return await self._judge_call(
            f"__ctxlab_judge__.begin({{nonce}}, {token!r}, {spec.answer_names!r}, {forbid!r})")

    async def _end_session(self, index: int, broken: str | None = None) -> None:
        """End the open session: the judge lets go, and the learner's kernel stops serving."""
        if self._session is None:
            return
        serving, self._session = self._session, None
        ended = await self._judge_call("__ctxlab_judge__.end({nonce})")
        await self._finish_serving(serving, index, broken=broken or (ended or {}).get("broken"))

    def _serve(self, token: str) -> str | None:
        """Ask the learner's kernel to answer the judge (without waiting); the request's id, or
        None when it could not be sent (the kernel is out of reach and must be recovered)."""
        path = self.km.channel_path(SOCKET)
        expression = (f"__import__({JUDGING_PACKAGE + '.agent'!r}, fromlist=['serve'])"
                      f".serve({path!r}, {token!r}, {float(self.timeout or 60)!r})")
        try:
            return self.kc.execute("", silent=True, store_history=False, user_expressions={"agent": expression},
                                   allow_stdin=False, stop_on_error=False)
        except ZMQError:
            return None

    async def _finish_serving(self, msg_id: str, index: int, broken: str | None = None) -> None:
        """Wait for the learner's kernel to finish answering; interrupt or restart it if it hangs."""
        if await self._wait_for_shell(self.kc, self.km, msg_id, 5 if broken is None else 2) is not None:
            return
        if await ensure_async(self.km.is_alive()):
            with contextlib.suppress(Exception):
                await ensure_async(self.km.interrupt_kernel())
            if await self._wait_for_shell(self.kc, self.km, msg_id, 10) is not None:
                self._event(index, "learner_interrupted", "the code under test was still running after the "
                                                          "test ended and was interrupted")
                return
        self._event(index, "learner_restarted", "the code under test hung or ended its kernel while tested; "
                                                "the kernel was restarted")
        await self._recover(-1)

    async def _in_judge(self, coroutine):
        """Run ``coroutine`` (an nbclient execution) against the judge's kernel instead."""
        learner = (self.km, self.kc)
        self.km, self.kc = self.judge_km, self.judge_kc
        try:
            return await coroutine
        finally:
            self.judge_km, self.judge_kc = self.km, self.kc
            self.km, self.kc = learner

    async def _judge_call(self, template: str, timeout: float | None = None) -> dict | None:
        """Evaluate a call of the judge module (``{nonce}`` filled in); its report, or None."""
        if self.judge_kc is None:
            return None
        nonce = secrets.token_hex(8)
        expression = template.replace("{nonce}", repr(nonce))
        try:
            msg_id = self.judge_kc.execute("", silent=True, store_history=False, user_expressions={"r": expression},
                                           allow_stdin=False, stop_on_error=False)
        except ZMQError:  # the judge's kernel is out of reach (see LimitedKernelClient.send_timeout)
            return None
        reply = await self._wait_for_shell(self.judge_kc, self.judge_km, msg_id,
                                           self.judge_timeout + 30 if timeout is None else timeout)
        if reply is None:
            return None
        result = (reply["content"].get("user_expressions") or {}).get("r") or {}
        text = (result.get("data") or {}).get("text/plain", "") if result.get("status") == "ok" else ""
        try:
            report = json.loads(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        return report if isinstance(report, dict) and report.get("nonce") == nonce else None

    async def _judge_run_quietly(self, source: str) -> bool:
        try:
            msg_id = self.judge_kc.execute(source, silent=True, store_history=False, allow_stdin=False,
                                           stop_on_error=False)
        except ZMQError:
            return False
        reply = await self._wait_for_shell(self.judge_kc, self.judge_km, msg_id, (self.timeout or 60) + 5)
        return reply is not None and reply["content"].get("status") == "ok"

    async def _wait_for_shell(self, kc, km, msg_id: str, timeout: float) -> dict | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            try:
                msg = await ensure_async(kc.shell_channel.get_msg(timeout=min(1.0, max(0.05, deadline - loop.time()))))
            except Empty:
                if not await ensure_async(km.is_alive()):
                    return None
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg
        return None

    # ------------------------------------------------------------------ kernels

    def _manager(self, *, judge: bool = False) -> SandboxedKernelManager:
        context = self.context
        root = context.judges.root if judge and context.judges is not None else context.runtime_root
        return SandboxedKernelManager(
            sandbox=context.sandbox, runtime_root=root, lesson=context.lesson,
            files=context.files, channel_dir=self._channel, channel_writable=judge, config=self.config,
        )

    async def _start_kernel(self) -> None:
        self.km = self._manager()
        await self.async_start_new_kernel()
        await self.async_start_new_kernel_client()
        info = await self.async_wait_for_reply(await ensure_async(self.kc.kernel_info()))
        if info is not None:
            self.nb.metadata["language_info"] = info["content"].get("language_info", {})
        # Before any learner code: index ctxlab's functions, so references can be switched off.
        msg_id = self.kc.execute("", silent=True, store_history=False, allow_stdin=False, user_expressions={
            "agent": f"__import__({JUDGING_PACKAGE + '.agent'!r}, fromlist=['install']).install()"})
        reply = await self._wait_for_shell(self.kc, self.km, msg_id, 120)
        status = ((reply or {}).get("content", {}).get("user_expressions") or {}).get("agent", {}).get("status")
        if status != "ok":
            raise RuntimeError("the grading agent could not start in a fresh kernel; check that the sandbox "
                               "can import ctxlab (run with --verbose)")

    async def _start_judge(self) -> None:
        self._judge_notebooks = 0
        km = self._manager(judge=True)
        self.judge_km = km
        await ensure_async(km.start_kernel(extra_arguments=self.extra_arguments))
        kc = km.client()
        await ensure_async(kc.start_channels())
        await ensure_async(kc.wait_for_ready(timeout=self.startup_timeout))
        kc.allow_stdin = False
        self.judge_kc = kc
        msg_id = self.judge_kc.execute(f"import {JUDGING_PACKAGE}.judge as __ctxlab_judge__", silent=True,
                                       store_history=False, allow_stdin=False)
        await self._wait_for_shell(self.judge_kc, self.judge_km, msg_id, 60)
        path = self.judge_km.channel_path(SOCKET)
        report = await self._judge_call(f"__ctxlab_judge__.start({{nonce}}, {path!r}, {float(self.timeout or 60)!r})")
        if report is None or not report.get("ok"):
            raise RuntimeError("the judge's kernel could not start; check that the sandbox can import ctxlab")

    async def _restart_judge(self) -> None:
        """A new judge after one that hung: replay the setup cells and the earlier test cells in it
        quietly, with no learner's name bound (so the helpers tests define exist again)."""
        await self._stop_judge()
        await self._start_judge()
        for index in sorted(self._judge_setup + self._judge_tests):
            await self._judge_run_quietly(self.nb.cells[index].source)

    async def _stop_kernel(self) -> None:
        km = self.km  # nbclient's cleanup sets self.km to None: release the manager it stopped
        if km is not None:
            with contextlib.suppress(Exception):  # a kernel that is already gone is fine
                await self._async_cleanup_kernel()
            with contextlib.suppress(Exception):
                km.release()  # its process group (cgroup) and its connection folder's tmpfs
        self.km = None
        self.kc = None

    async def _stop_judge(self) -> None:
        if self.judge_km is not None:
            await self._in_judge(self._stop_kernel())
        self.judge_km = self.judge_kc = None

    async def _recover(self, culprit: int) -> None:
        """Start a new learner's kernel and replay the cells that ran, without ``culprit``."""
        self._session = None  # it was the old kernel's: the next test begins a new one
        if culprit >= 0:
            self._replayable = [i for i in self._replayable if i != culprit]
        while True:
            self._restarts += 1
            await self._stop_kernel()
            if self._restarts > self.max_restarts:
                self._event(culprit, "gave_up", f"stopped after {self.max_restarts} kernel restarts")
                return
            await self._start_kernel()
            failed = await self._replay()
            if failed is None:
                return
            self._replayable = [i for i in self._replayable if i != failed]
            self._event(failed, "skipped", "could not be replayed after a restart; left out")

    async def _replay(self) -> int | None:
        """Re-run the replayable cells quietly; the index of one that failed to finish, else None."""
        for index in self._replayable:
            try:
                msg_id = self.kc.execute(self.nb.cells[index].source, silent=False, store_history=True,
                                         allow_stdin=False, stop_on_error=False)
            except ZMQError:
                return index
            reply = await self._wait_for_shell(self.kc, self.km, msg_id, (self.timeout or 60) + 5)
            if reply is None:
                return index
        return None
