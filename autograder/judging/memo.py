"""Remember the tokens of the texts a grading kernel encodes, where that changes only time.

Tests count the same transcripts over and over: a hidden test may call the learner's ``fit``
fifty times on one history, and both the learner's code and the test's reference count its
messages each time. Encoding is a pure function, so a kernel can keep each text's tokens
(compactly, handing out a fresh list each time): same results, less work.

* The judge's kernel runs only the lesson's own code: it keeps its memo for as long as it lives
  (:func:`memoize_tokens`), holding at most ``MEMO_TOKENS`` tokens before it forgets everything
  at once.
* The learner's kernel has one only while it answers the judge (:func:`tokens_remembered`, around
  :func:`ctxlab_judging.agent.serve`), capped at ``SERVING_MEMO_TOKENS``, and emptied and taken
  out when the test ends. The learner's own cells never see it: it holds nothing while they
  run, so the memory they have is what a plain kernel gives them. A learner's code that
  replaces ``encode_ordinary`` itself is left as it is, and is never memoized.

Both change tiktoken for the whole process, so ``tests/test_judge_reuse.py`` checks them in
processes of their own.

>>> MEMO_TOKENS, SERVING_MEMO_TOKENS
(4000000, 1000000)
"""

from __future__ import annotations

import contextlib
from array import array

__all__ = ["memoize_tokens", "tokens_remembered", "MEMO_TOKENS", "SERVING_MEMO_TOKENS"]

MEMO_TOKENS = 4_000_000  # about 16 MB of token ids, in the judge's kernel
SERVING_MEMO_TOKENS = 1_000_000  # about 4 MB, in the learner's kernel while a test runs


def _memo(original, cap: int):
    memo: dict[tuple[str, str], array] = {}
    held = [0]

    def encode_ordinary(self, text: str) -> list[int]:
        if type(text) is not str:
            return original(self, text)
        key = (self.name, text)
        tokens = memo.get(key)
        if tokens is None:
            tokens = array("I", original(self, text))
            if held[0] + len(tokens) > cap:
                memo.clear()
                held[0] = 0
            memo[key] = tokens
            held[0] += len(tokens)
        return tokens.tolist()

    encode_ordinary._ctxlab_memo = True
    encode_ordinary.__doc__ = original.__doc__
    encode_ordinary.__wrapped__ = original
    return encode_ordinary, memo


def memoize_tokens(cap: int | None = None) -> None:
    """Make ``tiktoken.Encoding.encode_ordinary`` remember its answers in this process."""
    import tiktoken

    if getattr(tiktoken.Encoding.encode_ordinary, "_ctxlab_memo", False):
        return
    tiktoken.Encoding.encode_ordinary, _ = _memo(tiktoken.Encoding.encode_ordinary,
                                                 MEMO_TOKENS if cap is None else cap)


@contextlib.contextmanager
def tokens_remembered(cap: int | None = None):
    """A memo of tiktoken's ``encode_ordinary`` for the ``with`` block only; emptied after it."""
    import tiktoken

    original = tiktoken.Encoding.encode_ordinary
    if getattr(original, "_ctxlab_memo", False) or getattr(original, "__module__", "") != tiktoken.Encoding.__module__:
        # One is in place already (the judge's), or the learner's code replaced the method with
        # its own, which need not be pure: remembering its answers could change them.
        yield
        return
    wrapper, memo = _memo(original, SERVING_MEMO_TOKENS if cap is None else cap)
    tiktoken.Encoding.encode_ordinary = wrapper
    try:
        yield
    finally:
        memo.clear()
        if tiktoken.Encoding.__dict__.get("encode_ordinary") is wrapper:
            tiktoken.Encoding.encode_ordinary = original
