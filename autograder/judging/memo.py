"""Remember the tokens of every text the judge's kernel encodes.

Tests count the same transcripts over and over: a hidden test may call the learner's ``fit``
fifty times on one history, and both the learner's code and the test's reference count its
messages each time; the judge's share of that is the test's. Encoding is a pure function, so the judge's kernel keeps each text's tokens
(compactly, handing out a fresh list each time): same results, less work. It changes nothing
but time, and holds at most ``MEMO_TOKENS`` tokens before it forgets everything at once.

Only the judge's kernel calls :func:`memoize_tokens`, never the learner's (whose memory it
would change); it changes tiktoken for the whole process, so ``tests/test_judge_reuse.py``
checks it in a process of its own.

>>> MEMO_TOKENS
4000000
"""

from __future__ import annotations

from array import array

__all__ = ["memoize_tokens", "MEMO_TOKENS"]

MEMO_TOKENS = 4_000_000  # about 16 MB of token ids


def memoize_tokens() -> None:
    """Make ``tiktoken.Encoding.encode_ordinary`` remember its answers in this process."""
    import tiktoken

    if getattr(tiktoken.Encoding.encode_ordinary, "_ctxlab_memo", False):
        return
    original = tiktoken.Encoding.encode_ordinary
    memo: dict[tuple[str, str], array] = {}
    held = [0]

    def encode_ordinary(self, text: str) -> list[int]:
        if type(text) is not str:
            return original(self, text)
        key = (self.name, text)
        tokens = memo.get(key)
        if tokens is None:
            tokens = array("I", original(self, text))
            if held[0] + len(tokens) > MEMO_TOKENS:
                memo.clear()
                held[0] = 0
            memo[key] = tokens
            held[0] += len(tokens)
        return tokens.tolist()

    encode_ordinary._ctxlab_memo = True
    encode_ordinary.__doc__ = original.__doc__
    encode_ordinary.__wrapped__ = original
    tiktoken.Encoding.encode_ordinary = encode_ordinary
