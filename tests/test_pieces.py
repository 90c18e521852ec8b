"""Counting by pieces (ctxlab.pieces) gives encode_ordinary's count, on real texts and on text
built to hit each rule of cl100k_base's pre-tokenizer."""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab.pieces import CL100K_PATTERN, PieceCounter, _cl100k_in_re, text_counter

ROOT = Path(__file__).resolve().parents[1]
CL100K = ctxlab.encoding()
needs_possessive = pytest.mark.skipif(
    _cl100k_in_re() is None,
    reason=f"pieces are not cut on Python {sys.version_info[:2]} with Unicode {unicodedata.unidata_version}",
)


def test_pieces_are_cut_where_they_can_be_trusted():
    """Python 3.11 to 3.14 (possessive quantifiers, Unicode 14 to 16) cut; others encode whole."""
    can = sys.version_info >= (3, 11) and unicodedata.unidata_version in ctxlab.pieces.TRUSTED_UNICODE
    assert (_cl100k_in_re() is not None) == can


def tiktoken_count(text: str) -> int:
    return len(CL100K.encode_ordinary(text))


def strings_of(value):
    """Every string inside a decoded JSON value: keys, values, nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_of(item)


def corpus() -> list[str]:
    """Every string of the course's transcripts and tool schemas, and of the recorded real runs
    (when they are beside the clone), with the JSON line of each message, and each tool result
    compressed as age compression compresses it."""
    texts = []
    real = ctxlab.course.transcripts.real_runs_dir()
    real_files = sorted(real.glob("*.jsonl")) if real is not None else []
    real_tools = sorted(real.glob("*.tools.json")) if real is not None else []
    for path in sorted(ROOT.glob("data/*.jsonl")) + real_files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                message = json.loads(line)
                texts += [line, *strings_of(message)]
                if message.get("role") == "tool" and isinstance(message.get("content"), str):
                    texts += [ctxlab.compress(message["content"], cap) for cap in (300, 1_000)]
    for path in sorted(ROOT.glob("data/*.tools.json")) + real_tools:
        text = path.read_text(encoding="utf-8")
        texts += [text, *strings_of(json.loads(text))]
    return texts


def test_the_pattern_is_tiktokens():
    assert CL100K._pat_str == CL100K_PATTERN, "tiktoken's cl100k_base pattern changed: check ctxlab.pieces against it"


@needs_possessive
def test_cl100k_is_counted_by_pieces_and_other_encodings_whole():
    assert isinstance(text_counter(CL100K), PieceCounter)
    assert text_counter(CL100K) is text_counter(CL100K), "one counter per encoding, shared"
    o200k = ctxlab.encoding("o200k_base")
    assert not isinstance(text_counter(o200k), PieceCounter)
    assert text_counter(o200k)("context window") == len(o200k.encode_ordinary("context window"))
    with pytest.raises(ValueError, match="only cl100k_base's pattern"):
        PieceCounter(o200k)


def test_encodings_made_on_the_fly_do_not_pile_up():
    class Wrapped:
        def __init__(self, inner):
            self.encode_ordinary = inner.encode_ordinary

    for _ in range(100):
        assert text_counter(Wrapped(CL100K))("hello world") == 2
    assert len(ctxlab.pieces._COUNTERS) <= 32
    assert text_counter(CL100K)("hello world") == 2


@needs_possessive
def test_every_string_of_the_data_counts_as_encode_ordinary_counts_it():
    counter = PieceCounter(CL100K)
    texts = corpus()
    assert len(texts) > 4_000
    wrong = [(text[:60], counter(text), tiktoken_count(text)) for text in texts if counter(text) != tiktoken_count(text)]
    assert not wrong, wrong[:5]
    assert counter.remembered > 1_000


# Characters each rule of the pattern turns on: the contraction letters (and the long s, which
# case-folds to s), newlines and the White_Space characters Python's isspace() disagrees on,
# letters, marks and numbers of other scripts, symbols, and characters counted whole (emoji
# beyond U+FFFF, a code point no Unicode version has assigned, a lone surrogate).
TRICKY = (
    "'sdmtlverSDMTLVER\u017f\u212aKk\u0130\u0131 aZ09_-.,;:!?/\\\"{}[]()<>#@$%^&*+=|~`"
    "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\u200b\ufeff"
    "\u00e9\u0301\u0915\u093f\u4f60\u597d\u0663\u2167\u00bd\u00b2\u00b0\u2014\u20ac\u00a9"
    "\U0001f600\U0001d400\U00020000\ue000\u0378\ud800"
)


@needs_possessive
@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(TRICKY), max_size=60))
@example("it's don'ſ we'LL they'Re")
@example("end  \n")
@example("a \n\n  b  ")
@example("x\x1c\x1d y")
@example("12345\u0663\u0664\u0665\u0666 \u2167\u2167")
def test_tricky_text_counts_as_encode_ordinary_counts_it(text):
    counter = PieceCounter(CL100K)
    assert counter(text) == tiktoken_count(text)
    assert counter(text) == tiktoken_count(text), "the second count comes from memory"


@needs_possessive
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_counts_as_encode_ordinary_counts_it(text):
    assert PieceCounter(CL100K)(text) == tiktoken_count(text)


@needs_possessive
def test_the_classes_agree_with_a_second_unicode_table():
    """Letters, numbers and White_Space as ctxlab.pieces lists them agree, on every assigned
    character of the Basic Multilingual Plane, with the regex package's tables (tiktoken's
    own dependency, usually a newer Unicode version than this Python's)."""
    regex = pytest.importorskip("regex")
    letter, number, space = regex.compile(r"\p{L}"), regex.compile(r"\p{N}"), regex.compile(r"\s")
    from ctxlab.pieces import _WHITE_SPACE

    wrong = []
    for point in range(0x10000):
        char = chr(point)
        category = unicodedata.category(char)
        if category in ("Cn", "Cs"):
            continue
        if (bool(letter.match(char)), bool(number.match(char)), bool(space.match(char))) != (
            category[0] == "L", category[0] == "N", char in _WHITE_SPACE
        ):
            wrong.append(hex(point))
    assert not wrong, wrong[:20]


@needs_possessive
def test_memory_is_bounded_and_counts_stay_exact():
    counter = PieceCounter(CL100K, max_pieces=50)
    texts = corpus()[:400]
    for text in texts:
        assert counter(text) == tiktoken_count(text)
        assert counter.remembered <= 50


def test_a_token_counter_counts_with_the_encoding_it_is_given():
    counter = ctxlab.TokenCounter()
    message = {"role": "user", "content": "Hello, world! It's 2026."}
    assert counter.message(message) == ctxlab.count_message(message)
    counter.encoding = "o200k_base"
    assert counter.encoding.name == "o200k_base"
    assert counter.text("context window") == len(ctxlab.encoding("o200k_base").encode_ordinary("context window"))
