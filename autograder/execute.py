"""nbgrader's Execute step, made safe for hostile notebooks.

:class:`GuardedExecute` replaces ``nbgrader.preprocessors.Execute`` in the autograde pipeline
(the worker configures it). It runs the notebook in a sandboxed kernel
(:class:`autograder.kernel.SandboxedKernelManager`) and adds what nbgrader lacks:

* **a kernel that dies or ignores interrupts does not end the notebook.** A cell that kills
  the kernel (``os._exit``, ``exit()``, a crash) or keeps running after the per-cell timeout
  and an interrupt (a loop that ignores SIGINT) gets an error output; a new kernel is started,
  the cells that had run are replayed without it, and grading goes on. The rest of the
  notebook gets the score it deserves.
* **output is capped per cell** (``output_bytes``): further stdout and displays are dropped,
  while errors and stderr, which decide whether a test passes, are always kept (shortened).
* **the kernel guard** (:mod:`autograder.kernel_guard`) checks and repairs the kernel after
  every cell and around every test cell. Changes made by a learner's cell are undone and
  reported; a test cell during which something changed scores 0; a cell after which the guard
  cannot even be reached (for example an input transformer that rewrites every cell) is
  treated like a cell that killed the kernel.

Everything it noticed is appended to ``GuardedExecute.context.events`` for the report.

>>> Event(cell=3, kind="timeout", detail="ran for more than 60 s").as_dict()["kind"]
'timeout'
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Empty

from jupyter_core.utils import ensure_async, run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer

from .kernel import LimitedKernelClient, SandboxedKernelManager
from .sandbox import GUARD_MODULE, Sandbox

__all__ = ["GuardedExecute", "ExecutionContext", "Event"]

KEEP_ERROR_CHARS = 4000
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
class ExecutionContext:
    """What the worker hands to :class:`GuardedExecute` for one notebook."""

    sandbox: Sandbox
    runtime_root: Path
    lesson: str
    files: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _size(content: dict) -> int:
    if "text" in content:
        return len(content["text"])
    data = content.get("data") or {}
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


class GuardedExecute(Execute):
    """nbgrader's Execute with a sandboxed kernel, recovery, output caps and the kernel guard."""

    output_bytes = Integer(1_000_000, help="stdout and display bytes kept per cell").tag(config=True)
    max_restarts = Integer(6, help="kernel restarts allowed per notebook").tag(config=True)
    guard = Bool(True, help="check and repair the kernel between cells").tag(config=True)
    strict_asserts = Bool(True, help="`assert a == b` in test cells compares strictly").tag(config=True)
    guard_timeout = Integer(30, help="seconds a guard check may take").tag(config=True)

    context: ExecutionContext | None = None  # set by the worker before each notebook

    # ------------------------------------------------------------------ nbclient hooks

    def output(self, outs, msg, display_id, cell_index):
        """Keep errors and stderr always; drop stdout and displays beyond ``output_bytes``."""
        content = msg.get("content", {})
        msg_type = msg.get("msg_type")
        critical = msg_type == "error" or (msg_type == "stream" and content.get("name") == "stderr")
        size = _size(content)
        used = self._bytes.get(cell_index, 0)
        over = used + size > self.output_bytes
        # Past the limit, stdout and displays go; stderr and errors decide a test's fate, so the
        # first of each kind is still kept (shortened) and the rest dropped.
        if over and (not critical or self._critical_kept.get((cell_index, msg_type), False)):
            self._dropped[cell_index] = self._dropped.get(cell_index, 0) + size
            return None
        if over:
            self._critical_kept[(cell_index, msg_type)] = True
        self._bytes[cell_index] = used + min(size, KEEP_ERROR_CHARS if critical else size)
        out = super().output(outs, msg, display_id, cell_index)
        if out is not None and critical:
            if msg_type == "stream" and len(out.get("text", "")) > KEEP_ERROR_CHARS:
                out["text"] = out["text"][:KEEP_ERROR_CHARS] + "\n[stderr shortened by the grader]\n"
            if msg_type == "error":
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
        self._dropped: dict[int, int] = {}
        self._critical_kept: dict[tuple[int, str], bool] = {}
        self._replayable: list[int] = []
        self._skipped: set[int] = set()
        self._restarts = 0
        self._last_run = -1
        self._asked_exit = self._interrupted = False
        self.km = None
        try:
            await self._start_kernel()
            for index, cell in enumerate(self.nb.cells):
                if cell.cell_type != "code" or not cell.source.strip():
                    continue
                if self._restarts > self.max_restarts:
                    if utils.is_grade(cell):
                        cell.outputs = [_error("NotGraded", "the grader stopped running this notebook "
                                                            f"after {self.max_restarts} kernel restarts")]
                    continue
                await self._run_cell(index, cell)
            self.set_widgets_metadata()
        finally:
            await self._stop_kernel()

    async def _run_cell(self, index: int, cell) -> None:
        is_test = utils.is_grade(cell) and not utils.is_solution(cell)
        for _attempt in range(3):
            if is_test and self.guard and not await self._checkpoint(index, "before_test"):
                await self._recover(self._last_run, "the grader's checks could not run after this cell")
                continue
            outcome = await self._execute(index, cell)
            break
        else:
            if is_test:  # a test cell that never ran must not keep its points
                cell.outputs = [_error("NotGraded", "the grader could not run this test: the kernel could not be "
                                                    "checked before it, even after restarts")]
            return
        self._report_output(index)
        if outcome in FATAL:
            ename, kind, what = FATAL[outcome]
            what = what.format(timeout=self.timeout, mb=LimitedKernelClient.max_message_bytes // 2**20)
            cell.outputs.append(_error(ename, f"{what}; the kernel was restarted without this cell"))
            self._event(index, kind, f"{what}; the kernel was restarted without it")
            await self._recover(index, None)
            return
        if outcome == "timeout":
            self._event(index, "timeout", f"ran for more than {self.timeout} s and was interrupted")
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if not is_test and outcome == "error" and errors[0].get("ename") not in QUIET_ERRORS:
            value = str(errors[0].get("evalue", "")).strip().splitlines()[:1]
            self._event(index, "cell_error", f"raised {errors[0].get('ename')}" + (f": {value[0][:200]}" if value else ""))
        self._last_run = index
        if any(o.get("ename") == "MemoryError" for o in errors):
            # The memory is likely still held by the kernel: go on in a fresh one, without this cell.
            self._event(index, "memory", f"ran out of memory (limit {self.context.sandbox.limits.memory_mb} MB); "
                                         "the kernel was restarted without this cell")
            await self._recover(index, None)
            return
        if self._asked_exit:
            self._asked_exit = False
            self._event(index, "exit_called", "called exit() or quit(), which stops the kernel; restarted without it")
            await self._recover(index, None)
            return
        if self.guard:
            stage = "after_test" if is_test else "after_cell"
            report = await self._checkpoint(index, stage)
            if report is None:
                if is_test:
                    cell.outputs.append(_error("GradingIntegrityError",
                                               "the grader could not check the kernel after this test"))
                await self._recover(index, "the grader's checks could not run after this cell")
                return
        if outcome in ("ok", "error"):
            self._replayable.append(index)

    async def _execute(self, index: int, cell) -> str:
        self._asked_exit = self._interrupted = False
        try:
            await self.async_execute_cell(cell, index, execution_count=self.code_cells_executed + 1)
        except CellTimeoutError:
            # Either the cell ignored the interrupt sent at the timeout, or (with no interrupt sent)
            # its output stopped arriving: a message over the size limit is refused.
            return "hung" if self._interrupted else "lost_output"
        except DeadKernelError:
            # The guard reached the kernel after the previous cell, so this cell is the culprit
            # (exit(), which stops the kernel after replying, is caught by its payload instead).
            return "died"
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
            self._event(index, "output_truncated", f"printed {dropped:,} bytes over the {self.output_bytes:,}-byte limit")

    # ------------------------------------------------------------------ the kernel guard

    async def _checkpoint(self, index: int, stage: str) -> dict | None:
        """Run the guard; None when it could not answer (the kernel is not trustworthy)."""
        nonce = secrets.token_hex(8)
        strict = "True" if self.strict_asserts else "False"
        report = await self._guard_call(f"__ctxlab_guard__.checkpoint({nonce!r}, {stage!r}, {strict})", nonce)
        if report is None:
            self._event(index, "guard_unreachable", f"the grader's check ({stage}) got no valid answer")
            return None
        changes = [str(c) for c in report.get("changes", [])][:40]
        threads = [str(t) for t in report.get("threads", [])][:10]
        refused = [str(r) for r in report.get("refused", [])][:10]
        if refused:
            self._event(index, "strict_equality", "equality claimed by the learner's own __eq__ was not "
                                                  "accepted: " + "; ".join(refused))
        if changes:
            where = {"before_test": "before this test", "after_test": "while this test ran",
                     "after_cell": "in this cell"}[stage]
            self._event(index, "tampering", f"changed {where} and put back: " + "; ".join(changes))
            if stage == "after_test":
                self.nb.cells[index].outputs.append(_error(
                    "GradingIntegrityError",
                    "this test does not count: while it ran, code changed what tests rely on "
                    f"({'; '.join(changes[:5])})",
                ))
        if threads:
            self._event(index, "threads", "left background threads running: " + ", ".join(threads))
        return report

    async def _guard_call(self, expression: str, nonce: str) -> dict | None:
        msg_id = self.kc.execute("", silent=True, store_history=False, user_expressions={"guard": expression},
                                 allow_stdin=False, stop_on_error=False)
        reply = await self._wait_for_shell(msg_id, self.guard_timeout)
        if reply is None:
            return None
        result = (reply["content"].get("user_expressions") or {}).get("guard") or {}
        text = (result.get("data") or {}).get("text/plain", "") if result.get("status") == "ok" else ""
        if not text or len(text) > 200_000:
            return None
        try:
            report = json.loads(ast.literal_eval(text))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        if not isinstance(report, dict) or report.get("nonce") != nonce or "error" in report:
            return None
        return report

    async def _wait_for_shell(self, msg_id: str, timeout: float) -> dict | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            try:
                msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=min(1.0, deadline - loop.time())))
            except Empty:
                if not await ensure_async(self.km.is_alive()):
                    return None
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg
        return None

    # ------------------------------------------------------------------ kernels

    async def _start_kernel(self) -> None:
        context = self.context
        self.km = SandboxedKernelManager(
            sandbox=context.sandbox, runtime_root=context.runtime_root,
            lesson=context.lesson, files=context.files, config=self.config,
        )
        await self.async_start_new_kernel()
        await self.async_start_new_kernel_client()
        info = await self.async_wait_for_reply(await ensure_async(self.kc.kernel_info()))
        if info is not None:
            self.nb.metadata["language_info"] = info["content"].get("language_info", {})
        if self.guard:
            nonce = secrets.token_hex(8)
            report = await self._guard_call(f"__import__({GUARD_MODULE!r}).arm({nonce!r})", nonce)
            if report is None:
                raise RuntimeError("the kernel guard could not be armed in a fresh kernel; "
                                   "check that the sandbox can import ctxlab (run with --verbose)")
            for problem in report.get("problems", []):
                self._event(-1, "environment", str(problem))

    async def _stop_kernel(self) -> None:
        if self.km is not None:
            with contextlib.suppress(Exception):  # a kernel that is already gone is fine
                await self._async_cleanup_kernel()
        self.km = None
        self.kc = None

    async def _recover(self, culprit: int, reason: str | None) -> None:
        """Start a new kernel and replay the cells that ran, without ``culprit``."""
        if culprit >= 0:
            self._skipped.add(culprit)
            self._replayable = [i for i in self._replayable if i != culprit]
            if reason:
                self._event(culprit, "skipped", f"{reason}; the kernel was restarted without it")
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
            self._skipped.add(failed)
            self._replayable = [i for i in self._replayable if i != failed]
            self._event(failed, "skipped", "could not be replayed after a restart; left out")

    async def _replay(self) -> int | None:
        """Re-run the replayable cells quietly; the index of one that failed, else None."""
        for index in self._replayable:
            msg_id = self.kc.execute(self.nb.cells[index].source, silent=False, store_history=True,
                                     allow_stdin=False, stop_on_error=False)
            reply = await self._wait_for_shell(msg_id, (self.timeout or 60) + 5)
            if reply is None:
                return index
            if self.guard and await self._guard_call_quiet() is None:
                return index
        return None

    async def _guard_call_quiet(self) -> dict | None:
        nonce = secrets.token_hex(8)
        return await self._guard_call(f"__ctxlab_guard__.checkpoint({nonce!r}, 'after_cell', True)", nonce)
