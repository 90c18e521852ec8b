"""Counting text without encoding all of it: the pre-tokenizer in Python, each piece remembered.

tiktoken turns a text into tokens in two steps: a regular expression cuts the text into
pieces (a word with the space before it, up to three digits, a run of punctuation, a run of
whitespace), then byte-pair encoding turns each piece into tokens on its own. No token spans
two pieces, so a text's count is the sum of its pieces' counts. An agent's run says the same
pieces again and again (field names, words, numbers, indentation), so :class:`PieceCounter`
cuts the text with Python's own ``re`` and remembers each piece's count: a piece seen before
costs a dictionary lookup, a new one is encoded by tiktoken (``_encode_single_piece``, the step
``encode_ordinary`` runs for each piece). Over a run of the course's research transcript
that counts its texts in about 0.6 of the time ``encode_ordinary`` takes; a text whose every
piece is new takes about 1.2 times as long (``bench/README.md``).

The count is tiktoken's, not an estimate, where the two steps are the same:

* only ``cl100k_base``'s pattern is cut this way (:data:`CL100K_PATTERN`, as tiktoken 0.14
  spells it); any other encoding (``o200k_base``) is counted with ``encode_ordinary``;
* the pattern's ``\\p{L}`` (letters), ``\\p{N}`` (numbers) and ``\\s`` (Unicode's White_Space)
  become classes listed from Python's ``unicodedata``, for the Basic Multilingual Plane. A
  text holding a character those tables leave unassigned, a surrogate, or a character beyond
  U+FFFF (emoji among them) is counted with ``encode_ordinary``. Whether a character is a
  letter, a number or a space almost never changes between Unicode versions (a test compares
  every assigned character with the ``regex`` package's newer tables), so the classes agree
  with tiktoken's wherever both tables have the character; the way they could differ is a
  character Python's tables have and tiktoken's do not, so only Unicode versions up to the one
  tiktoken's tables follow (16.0, Python 3.11 to 3.14) are trusted (:data:`TRUSTED_UNICODE`);
* Python before 3.11 (no possessive quantifiers in ``re``), or with other Unicode tables,
  counts with ``encode_ordinary``.

``tests/test_pieces.py`` checks the count against ``encode_ordinary`` on every string of the
course's transcripts and on random text drawn from the characters each rule of the pattern
turns on.

>>> from ctxlab import encoding
>>> counter = text_counter(encoding())
>>> counter("Why did the export job fail?"), len(encoding().encode_ordinary("Why did the export job fail?"))
(7, 7)
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

import tiktoken

from .errors import ConfigError

__all__ = ["CL100K_PATTERN", "TRUSTED_UNICODE", "PieceCounter", "text_counter"]

CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
"""``cl100k_base``'s pre-tokenizer as tiktoken spells it (its ``_pat_str``)."""

TRUSTED_UNICODE = frozenset({"14.0.0", "15.0.0", "15.1.0", "16.0.0"})
"""The versions of Python's ``unicodedata`` whose letters, numbers and White_Space are cut here."""

# Unicode's White_Space property: what \s matches in tiktoken's (Rust) regular expressions.
# Python's str.isspace() also takes U+001C..U+001F, which are not White_Space.
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _ranges(code_points: list[int]) -> str:
    """A regular-expression class body for ``code_points`` (sorted), as ranges."""
    parts, start = [], None
    for i, point in enumerate(code_points):
        if start is None:
            start = point
        if i + 1 == len(code_points) or code_points[i + 1] != point + 1:
            parts.append(re.escape(chr(start)) + ("" if point == start else "-" + re.escape(chr(point))))
            start = None
    return "".join(parts)


@functools.cache
def _cl100k_in_re() -> tuple[re.Pattern, re.Pattern] | None:
    """(the pieces pattern, the pattern of characters it must not be trusted with), or ``None``
    when this Python's ``re`` cannot spell the pattern (before 3.11) or its Unicode tables are
    not among :data:`TRUSTED_UNICODE`."""
    if unicodedata.unidata_version not in TRUSTED_UNICODE:
        return None
    letters, numbers, unknown = [], [], []
    for point in range(0x10000):
        category = unicodedata.category(chr(point))
        if category in ("Cn", "Cs"):
            unknown.append(point)
        elif category[0] == "L":
            letters.append(point)
        elif category[0] == "N":
            numbers.append(point)
    L, N, W = _ranges(letters), _ranges(numbers), _ranges(sorted(map(ord, _WHITE_SPACE)))
    try:
        pieces = re.compile(
            f"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n{L}{N}]?+[{L}]++|[{N}]{{1,3}}+| ?[^{W}{L}{N}]++[\\r\\n]*+"
            f"|[{W}]++\\Z|[{W}]*[\\r\\n]|[{W}]+(?![^{W}])|[{W}]"
        )
    except re.error:  # Python 3.10: no possessive quantifiers
        return None
    return pieces, re.compile(f"[{_ranges(unknown)}\U00010000-\U0010ffff]")


class PieceCounter:
    """Counts ``cl100k_base`` text piece by piece, remembering each piece's count.

    ``max_pieces`` bounds the memory: when it is full it starts again empty. Use
    :func:`text_counter`, which gives one counter per encoding (or plain counting for an
    encoding this one does not cut).

    >>> from ctxlab import encoding
    >>> counter = PieceCounter(encoding())
    >>> counter("error: disk full"), counter("error: disk full on /var"), counter.remembered
    (4, 7, 7)
    """

    def __init__(self, encoding: tiktoken.Encoding, *, max_pieces: int = 100_000) -> None:
        compiled = _cl100k_in_re() if getattr(encoding, "_pat_str", None) == CL100K_PATTERN else None
        if compiled is None:
            raise ConfigError(
                f"{getattr(encoding, 'name', encoding)!r}: only cl100k_base's pattern is cut into pieces "
                "here (and only on Python 3.11 to 3.14); count with text_counter(encoding), which "
                "falls back to encode_ordinary"
            )
        self.encoding = encoding
        self.max_pieces = max_pieces
        self._findall = compiled[0].findall
        self._unknown = compiled[1].search
        self._piece = encoding._encode_single_piece
        self._counts: dict[str, int] = {}

    @property
    def remembered(self) -> int:
        """How many pieces' counts are remembered."""
        return len(self._counts)

    def forget(self) -> None:
        """Drop every remembered count (to measure counting from nothing, say)."""
        self._counts.clear()

    def __call__(self, text: str) -> int:
        if not text.isascii() and self._unknown(text):
            return len(self.encoding.encode_ordinary(text))
        pieces = self._findall(text)
        try:
            return sum(map(self._counts.__getitem__, pieces))  # every piece seen before
        except KeyError:
            return self._learn(pieces)

    def _learn(self, pieces: list[str]) -> int:
        """The sum of the pieces' counts, encoding (and remembering) those not seen before."""
        counts = self._counts
        total = 0
        for piece in pieces:
            tokens = counts.get(piece)
            if tokens is None:
                tokens = len(self._piece(piece.encode()))
                if len(counts) >= self.max_pieces:
                    counts.clear()
                counts[piece] = tokens
            total += tokens
        return total


_COUNTERS: dict[int, tuple[object, Callable[[str], int]]] = {}


def text_counter(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    """A function ``text -> tokens`` for ``encoding``: its :class:`PieceCounter` when it is
    ``cl100k_base`` (one per encoding object, shared), else ``len(encoding.encode_ordinary(text))``.

    >>> from ctxlab import encoding
    >>> text_counter(encoding("o200k_base"))("context window")
    2
    """
    entry = _COUNTERS.get(id(encoding))
    if entry is not None and entry[0] is encoding:
        return entry[1]
    try:
        count: Callable[[str], int] = PieceCounter(encoding)
    except ValueError:
        def count(text: str, _encode=encoding.encode_ordinary) -> int:
            return len(_encode(text))
    if len(_COUNTERS) >= 32:  # encodings made on the fly (wrappers, say) must not pile up
        _COUNTERS.pop(next(iter(_COUNTERS)))
    _COUNTERS[id(encoding)] = (encoding, count)
    return count
