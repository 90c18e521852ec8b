"""One judge serving notebook after notebook: a reset forgets the last notebook entirely, and
the grading kernels' token memo gives exactly what tiktoken gives (each in a fresh Python, since both
change the process they run in)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            cwd=REPO, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_a_reset_forgets_every_name_of_the_last_notebook_and_keeps_the_judge():
    out = run("""
        import json
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        import autograder.judging.judge as judge
        shell.user_ns["__ctxlab_judge__"] = judge
        shell.run_cell("import ctxlab\\nsecret = 42\\ndef _helper():\\n    return secret\\ncount_chat = len")
        judge._state["bound"] = ["count_chat"]
        report = json.loads(judge.reset("n1"))
        ns = shell.user_ns
        print(report["ok"], report["nonce"], "secret" in ns, "_helper" in ns, "count_chat" in ns, "ctxlab" in ns,
              ns["__ctxlab_judge__"] is judge, judge._state["bound"], shell.execution_count)
    """)
    assert out == "True n1 False False False False True [] 1"


def test_the_token_memo_agrees_with_tiktoken_and_hands_out_fresh_lists():
    out = run("""
        import tiktoken, ctxlab
        enc = ctxlab.encoding()
        texts = ["", "context window", "<|endoftext|> is plain text here", "x" * 5000, "naïve café 日本語"]
        want = [enc.encode_ordinary(t) for t in texts]
        import autograder.judging.memo as memo
        memo.MEMO_TOKENS = 7  # forgets everything when full: still right
        memo.memoize_tokens(); memo.memoize_tokens()
        for _ in range(3):
            got = [enc.encode_ordinary(t) for t in texts]
            assert got == want, (got, want)
        first = enc.encode_ordinary("context window"); first.append(-1)
        assert enc.encode_ordinary("context window") == want[1]
        assert ctxlab.count_text("context window") == len(want[1])
        print("ok", tiktoken.Encoding.encode_ordinary._ctxlab_memo)
    """)
    assert out == "ok True"
