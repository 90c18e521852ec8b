"""The kernel guard: strict equality in test asserts, and tampering undone in a real kernel."""

from __future__ import annotations

import ast
import asyncio
import fractions
import json
import re
import tempfile
import textwrap
from pathlib import Path

import pytest
from hostile import require_sandbox
from hypothesis import given
from hypothesis import strategies as st

from autograder.kernel_guard import StrictAsserts, strict_equal
from autograder.sandbox import Limits, Sandbox, default_readonly_paths

NOWHERE = ("/nowhere/",)  # a trusted location no test class comes from


class AlwaysEqual:
    def __eq__(self, other):
        return True


class Count(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@given(plain, plain)
def test_strict_equal_agrees_with_equality_on_plain_data(a, b):
    assert strict_equal(a, b, trusted=NOWHERE) == (a == b)
    assert strict_equal(a, a, trusted=NOWHERE)


@pytest.mark.parametrize("cheat", [AlwaysEqual(), Count(0)])
@pytest.mark.parametrize("expected", [9, "9", [9], {"n": 9}, None, 9.0])
def test_a_learner_eq_cannot_claim_equality_with_plain_values(cheat, expected):
    assert cheat == expected  # what a plain assert would accept
    assert not strict_equal(cheat, expected, trusted=NOWHERE)
    assert not strict_equal(expected, cheat, trusted=NOWHERE)
    assert not strict_equal([1, cheat], [1, expected], trusted=NOWHERE)
    assert not strict_equal({"k": cheat}, {"k": expected}, trusted=NOWHERE)


def test_trusted_types_compare_as_usual():
    import sys

    trusted = (sys.base_prefix.rstrip("/") + "/",)
    assert strict_equal(fractions.Fraction(1, 2), 0.5, trusted=trusted)
    assert strict_equal(0.5, fractions.Fraction(1, 2), trusted=trusted)
    assert strict_equal(3, 3.0, trusted=trusted) and strict_equal(True, 1, trusted=trusted)
    assert not strict_equal([1, 2], (1, 2), trusted=trusted)


def test_strict_asserts_rewrite_only_single_equality_asserts():
    source = textwrap.dedent('''
        assert got == 9, "message"
        assert got != 9
        assert a == b == c
        assert isinstance(got, int)
        x = got == 9
    ''')
    tree = StrictAsserts().visit(ast.parse(source))
    rewritten = ast.unparse(tree)
    assert "assert __ctxlab_strict_equal__(got, 9), 'message'" in rewritten
    assert "assert got != 9" in rewritten and "assert a == b == c" in rewritten
    assert "x = got == 9" in rewritten
    assert tree.body[0].lineno == 2
    namespace = {"__ctxlab_strict_equal__": lambda a, b: strict_equal(a, b, trusted=NOWHERE), "got": Count(0)}
    exec(compile(ast.parse("assert got == 9, 'message'"), "<plain>", "exec"), namespace)  # the cheat works
    with pytest.raises(AssertionError, match="message"):
        exec(compile(StrictAsserts().visit(ast.parse("assert got == 9, 'message'")), "<strict>", "exec"), namespace)


# ------------------------------------------------------------------ in a real (sandboxed) kernel

TAMPERING = {
    "builtins": ("import builtins\nbuiltins.sum = lambda *a, **k: 0", r"builtins.sum was replaced"),
    "ctxlab function": ("import ctxlab\nctxlab.count_messages = lambda *a, **k: 0", r"ctxlab.count_messages"),
    "function code": ("import ctxlab.tokens\nctxlab.tokens.count_text.__code__ = (lambda *a, **k: 0).__code__",
                      r"code of ctxlab.tokens.count_text"),
    "tiktoken class": ("import tiktoken\ntiktoken.Encoding.encode_ordinary = lambda self, t: []",
                       r"tiktoken.core.Encoding.encode_ordinary"),
    "tokenizer instance": ("import ctxlab\nctxlab.encoding().encode_ordinary = lambda t: []",
                           r"attributes of the cached tokenizer"),
    "input transformer": ("get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])",
                          r"input_transformers_cleanup: removed"),
    "ast transformer": ("import ast\nclass Blank(ast.NodeTransformer):\n    def visit_Assert(self, node):\n"
                        "        return ast.Pass()\nget_ipython().ast_transformers.append(Blank())",
                        r"ast_transformers: removed"),
    "custom exceptions": ("get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)", r"set_custom_exc"),
    "event callback": ("get_ipython().events.register('pre_run_cell', lambda info: None)",
                       r"pre_run_cell callback removed"),
    "trace function": ("import sys\nsys.settrace(lambda *a: None)", r"sys.settrace"),
    "method override": ("get_ipython().showtraceback = lambda *a, **k: None", r"showtraceback was overridden"),
    "stderr": ("import io, sys\nsys.stderr = io.StringIO()", r"sys.stderr was replaced"),
}


async def _kernel_session(cells: list[str], *, isolated: bool) -> list[dict]:
    import secrets

    from autograder.kernel import SandboxedKernelManager
    from autograder.sandbox import GUARD_MODULE

    guard = str(Path(__file__).resolve().parents[1] / "autograder" / "kernel_guard.py")
    sandbox = Sandbox(isolated=isolated, readonly=default_readonly_paths(), guard_file=guard, limits=Limits())
    with tempfile.TemporaryDirectory(prefix="ctxlab-t-") as runtime:
        km = SandboxedKernelManager(sandbox=sandbox, runtime_root=Path(runtime), lesson="guard", files={})
        await km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=60)

            async def call(expression: str) -> dict:
                reply = await kc.execute_interactive("", silent=True, user_expressions={"g": expression}, timeout=60)
                return json.loads(ast.literal_eval(reply["content"]["user_expressions"]["g"]["data"]["text/plain"]))

            nonce = secrets.token_hex(4)
            assert (await call(f"__import__({GUARD_MODULE!r}).arm({nonce!r})"))["armed"]
            reports = []
            for source in cells:
                await kc.execute_interactive(source, timeout=60)
                reports.append(await call(f"__ctxlab_guard__.checkpoint({nonce!r}, 'after_cell')"))
            return reports
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)


@pytest.mark.slow
def test_the_guard_undoes_and_reports_every_kind_of_tampering():
    cells = []
    for source, _ in TAMPERING.values():
        cells += [source, "import ctxlab\nassert ctxlab.count_messages([{'role': 'user', 'content': 'Hello!'}]) == 9"]
    cells += ["import matplotlib.pyplot as plt\nplt.plot([1, 2])", "import threading\n"
              "threading.Thread(target=lambda: __import__('time').sleep(30), daemon=True).start()"]
    require_sandbox()
    reports = asyncio.run(_kernel_session(cells, isolated=True))
    for index, (name, (_, pattern)) in enumerate(TAMPERING.items()):
        changes = "; ".join(reports[2 * index]["changes"])
        assert re.search(pattern, changes), (name, changes)
        assert reports[2 * index + 1]["changes"] == [], f"{name} was not undone: {reports[2 * index + 1]}"
    honest_plot, thread = reports[-2], reports[-1]
    assert honest_plot["changes"] == [] and honest_plot["threads"] == []
    assert thread["threads"] and thread["changes"] == []


@pytest.mark.slow
def test_without_the_sandbox_the_guard_still_runs():
    """``--no-sandbox`` loses isolation, not the guard: the kernel finds the guard module."""
    reports = asyncio.run(_kernel_session(["import builtins\nbuiltins.sum = lambda *a, **k: 0", "x = 1"],
                                          isolated=False))
    assert reports[0]["changes"] == ["builtins.sum was replaced"] and reports[1]["changes"] == []
