"""Runs in the judge's kernel: binds the learner's names to proxies before each test cell.

The judge kernel runs the lesson's locked setup cells and its test cells, and nothing the
learner wrote. The grader calls, through ``user_expressions``:

* :func:`start` once: listen on the channel's socket; expression results are never displayed
  in this kernel, so no test cell can produce an ``execute_result`` (nbgrader would read a
  score from it);
* :func:`begin` before each test cell: accept the learner kernel's connection (it presents the
  token the grader gave both), tell the agent which ctxlab references belong to which answer
  (switched off while the judge calls that answer), and bind each of the learner's answer names in this namespace to what
  the learner defined: plain data as it is, functions, classes and objects as proxies
  (:class:`~.endpoint.Remote`). A name the learner did not define is left unbound, so the test
  fails with ``NameError`` as it would in the learner's kernel. While the judge's call of an
  answer is out, the same references are off in this kernel too (:func:`_switched_off`): the
  learner's code may call back a method of an object the test built here, and that must not
  be a way to ctxlab's own answer;
* :func:`rebind` before each further test cell of a run of consecutive ones, which share one
  connection: forget the last test's objects on both sides (objects live for one test cell)
  and bind the names again, to what they are in the learner's kernel now;
* :func:`end` after the last test cell of the run: close the connection and unbind the names;
* :func:`reset` between two notebooks, when one judge serves several in turn: forget the last
  notebook (its connection and every name its setup and tests bound), keeping the listener.

Each returns a JSON report; the grader trusts only reports that carry its nonce.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys

from . import agent
from .endpoint import Endpoint
from .errors import rebuild
from .memo import memoize_tokens
from .wire import ChannelError, Peer

__all__ = ["start", "begin", "rebind", "end", "reset"]

_state: dict = {"listener": None, "peer": None, "endpoint": None, "bound": [], "timeout": 60.0, "forbid": {}}


def _namespace() -> dict:
    return __import__("IPython").get_ipython().user_ns


def _encoding(name: str):
    import ctxlab

    return ctxlab.encoding(name)


def _describe_error(err: BaseException) -> str:
    if isinstance(err, AssertionError):
        return "a check in the test's own code failed"  # never hand a test's expectations to the learner
    return str(err)


@contextlib.contextmanager
def _switched_off(names: list[str]):
    """ctxlab's references for the answers ``names`` off in this kernel while the learner's
    code, running for one of them, has the judge answer a request (a method of an object the
    test built here, called back): the same switch-off the agent applies on the learner's side."""
    targets = [target for name in names for target in _state["forbid"].get(name, [])]
    if not targets:
        yield
        return
    if not agent._functions:
        agent.install()
    switched = agent.disable(targets)
    try:
        yield
    finally:
        agent.restore(switched)


ERROR_CHARS = 8_000  # of an error's message and of each traceback line: twice what the grader keeps
ERROR_LINES = 100  # last lines of a traceback kept: more than the grader keeps


def _bounded(value: BaseException) -> None:
    """Shorten the message of ``value`` in place when it is over :data:`ERROR_CHARS` (a test that
    quotes a value the code under test returned can raise an error of any size)."""
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - a str() that fails is IPython's to report
        return
    if len(text) > ERROR_CHARS:
        with contextlib.suppress(Exception):
            value.args = (text[:ERROR_CHARS] + " [shortened by the grader]",)


def _bound_tracebacks(shell) -> None:
    """Make this kernel's error messages small enough to send: the message and each line of its
    traceback at most ERROR_CHARS, the last ERROR_LINES lines. Unbounded, a test's error that quotes
    the learner's 40 MB value is a message the grader's connection refuses, and then ends."""
    show = shell._showtraceback

    def _showtraceback(etype, evalue, stb):
        _bounded(evalue)  # the same exception object gives the reply's evalue
        stb = [str(line)[:ERROR_CHARS] for line in list(stb or [])[-ERROR_LINES:]]
        return show(etype, evalue, stb)

    shell._showtraceback = _showtraceback


def _report(nonce: str, **fields) -> str:
    return json.dumps({"nonce": nonce, **fields})


def start(nonce: str, path: str, timeout: float) -> str:
    """Listen on ``path``, silence expression results and remember token counts in this kernel."""
    memoize_tokens()
    shell = __import__("IPython").get_ipython()
    shell.ast_node_interactivity = "none"
    # A failed test's traceback in the plain layout: the same frames, lines and message, without
    # reading and highlighting each frame's source file (tens of ms per failed test otherwise).
    shell.InteractiveTB.set_mode("Plain")
    _bound_tracebacks(shell)
    shell.display_formatter.active_types = []  # nothing a test does can emit an execute_result
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o777)
    listener.listen(4)
    _state.update(listener=listener, timeout=float(timeout))
    return _report(nonce, ok=True)


def _accept(token: str) -> Peer:
    listener: socket.socket = _state["listener"]
    listener.settimeout(15)
    for _ in range(4):  # a connection left over from an earlier test may be waiting: skip it
        conn, _address = listener.accept()
        peer = Peer(conn, lambda message: {"ok": False}, timeout=_state["timeout"])
        try:
            hello = peer.receive()
        except ChannelError:
            continue
        if hello.get("op") == "hello" and hello.get("token") == token:
            return peer
        conn.close()
    raise ChannelError("the learner's kernel did not connect with the right token")


def begin(nonce: str, token: str, names: list, forbid: dict) -> str:
    """Connect to the learner's kernel and bind ``names``; report what was bound and disabled."""
    namespace = _namespace()
    _unbind(namespace)
    endpoint = Endpoint("judge", guarded=True, encoding_loader=_encoding, make_error=rebuild,
                        describe_error=_describe_error, switch_off=_switched_off)
    _state["forbid"] = {str(k): v for k, v in forbid.items() if type(v) is list} if type(forbid) is dict else {}
    try:
        peer = _accept(token)
    except (OSError, ChannelError) as err:
        _state.update(peer=None, endpoint=None)
        return _report(nonce, ok=False, error=f"the learner's kernel did not answer: {err}")
    peer.handler = endpoint.handle
    endpoint.peer = peer
    _state.update(peer=peer, endpoint=endpoint)
    try:
        disabled = endpoint.request({"op": "begin", "forbid": forbid}).get("value")
        bound = _bind(namespace, endpoint, names)
    except (ChannelError, Exception) as err:  # noqa: BLE001 - reported, and the test then fails
        return _report(nonce, ok=False, error=f"the learner's kernel did not answer: {str(err)[:300]}")
    # What the learner's side says it switched off is for reports only: a few short names at most.
    disabled = [str(d)[:200] for d in disabled[:100]] if type(disabled) is list else []
    return _report(nonce, ok=True, bound=bound, disabled=disabled)


def _bind(namespace: dict, endpoint: Endpoint, names: list) -> list[str]:
    reply = endpoint.request({"op": "describe", "names": names})
    values = reply.get("value") if type(reply.get("value")) is dict else {}
    bound = []
    for name in names:
        if name in values:
            namespace[name] = endpoint.bind(name, values[name])
            bound.append(name)
    _state["bound"] = bound
    return bound


def rebind(nonce: str, names: list) -> str:
    """Before the next test cell on the same connection: what :func:`end` then :func:`begin`
    would do, without a new connection. Not ok when the connection is gone (the grader then
    ends it and begins a new one)."""
    namespace = _namespace()
    _unbind(namespace)
    peer, endpoint = _state.get("peer"), _state.get("endpoint")
    if peer is None or endpoint is None or peer.broken is not None:
        return _report(nonce, ok=False, error="the connection to the learner's kernel is gone: "
                                              + str((peer.broken if peer is not None else None) or "none open"))
    endpoint.codec.forget()
    endpoint.answers.clear()
    try:
        endpoint.request({"op": "next"})
        bound = _bind(namespace, endpoint, names)
    except (ChannelError, Exception) as err:  # noqa: BLE001 - reported, and the grader starts over
        return _report(nonce, ok=False, error=f"the learner's kernel did not answer: {str(err)[:300]}")
    return _report(nonce, ok=True, bound=bound)


def _unbind(namespace: dict) -> None:
    for name in _state.get("bound") or []:
        namespace.pop(name, None)
    _state["bound"] = []


def end(nonce: str) -> str:
    """Tell the learner's kernel the test is over, close the connection and unbind the names."""
    peer, endpoint = _state.get("peer"), _state.get("endpoint")
    broken = None
    if peer is not None and endpoint is not None:
        broken = peer.broken
        peer.timeout = 5.0  # the learner's code may still be running after a timeout: do not wait long
        if broken is None:
            try:
                endpoint.request({"op": "end"})
            except (ChannelError, Exception) as err:  # noqa: BLE001
                broken = str(err)[:300]
        with contextlib.suppress(OSError):
            peer.sock.close()
        endpoint.codec.forget()
    _unbind(_namespace())
    _state.update(peer=None, endpoint=None)
    sys.stdout.flush()
    return _report(nonce, ok=True, broken=broken)


def reset(nonce: str) -> str:
    """Forget the last notebook: its connection and every name in this kernel's namespace.

    The next notebook's setup cells then run again here, as in a new kernel; what stays is
    only what the grader's own code imported (modules are cached).
    """
    peer = _state.get("peer")
    if peer is not None:
        with contextlib.suppress(OSError):
            peer.sock.close()
    _state.update(peer=None, endpoint=None, bound=[])
    shell = __import__("IPython").get_ipython()
    shell.reset(new_session=True)
    shell.user_ns["__ctxlab_judge__"] = sys.modules[__name__]
    return _report(nonce, ok=True)
