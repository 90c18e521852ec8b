"""Keeping hidden test code out of feedback: normalise, then look for pieces of it.

Feedback shows each failed test's exception name and message. A test's own messages are meant
to be read; its code is not. A message is withheld when, after normalising (NFKC, invisible
characters removed, whitespace collapsed, case folded), it holds any :data:`WINDOW` characters
in a row of a hidden line's *code*, with the line's string literals left out (they are the
messages a test means to show). Base64 runs inside a message are decoded and checked too.

>>> hidden = ['assert secret_value(3) == 9 + offset, f"expected {9 + offset}"']
>>> scrub("expected 12", hidden)
'expected 12'
>>> scrub("see: ASSERT  secret_value(3)\u200b == 9 + offset", hidden)
'(not shown: the message quotes hidden test code)'
>>> normal("asser\u200bt  x\uff1d\uff1d 1")
'assert x== 1'
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from functools import lru_cache

__all__ = ["scrub", "normal", "quotes_hidden", "WINDOW", "WITHHELD", "MAX_MESSAGE"]

MAX_MESSAGE = 600
WINDOW = 24
WITHHELD = "(not shown: the message quotes hidden test code)"
_STRING = re.compile(r"""[rbuRBUfF]{0,2}(?:'[^'\\]*(?:\\.[^'\\]*)*'|"[^"\\]*(?:\\.[^"\\]*)*")""")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
_INVISIBLE = ("Cf", "Cc", "Co", "Cn")


def normal(text: str) -> str:
    """``text`` as the scrubber compares it."""
    text = unicodedata.normalize("NFKC", text)
    kept = []
    for ch in text:
        if ch in "\t\n\r":
            kept.append(" ")
        elif unicodedata.category(ch) not in _INVISIBLE:
            kept.append(ch)
    return " ".join("".join(kept).split()).casefold()


@lru_cache(maxsize=64)
def _pieces(hidden: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    windows: set[str] = set()
    short: list[str] = []
    for line in hidden:
        code = normal(_STRING.sub(" ", line))
        if len(code) >= WINDOW:
            windows.update(code[i:i + WINDOW] for i in range(len(code) - WINDOW + 1))
        elif len(code) >= 16:
            short.append(code)
    return frozenset(windows), tuple(short)


def _decoded(message: str) -> list[str]:
    found = []
    for token in _BASE64.findall(message):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                found.append(decode(token + "=" * (-len(token) % 4)).decode("utf-8", "ignore"))
            except (ValueError, binascii.Error):
                continue
    return found


def quotes_hidden(message: str, hidden: list[str]) -> bool:
    """Whether ``message`` (or base64 text in it) holds a piece of the ``hidden`` lines' code."""
    windows, short = _pieces(tuple(hidden))
    if not windows and not short:
        return False
    for text in [message, *_decoded(message)]:
        text = normal(text)
        if any(piece in text for piece in short):
            return True
        if any(text[i:i + WINDOW] in windows for i in range(len(text) - WINDOW + 1)):
            return True
    return False


def scrub(message: str, hidden: list[str]) -> str:
    """``message`` shortened, or withheld when it quotes a piece of the ``hidden`` lines' code."""
    if quotes_hidden(message, hidden):
        return WITHHELD
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + " …"
