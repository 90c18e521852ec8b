"""Shrinking tool results, and shrinking them harder the older they are.

Tool results are most of an agent's context. A result from this lap may be needed in full;
one from eight laps ago has been acted on, and its conclusion is already in the assistant's
later messages. So :func:`compress_history` keeps the newest results in full, compresses
older ones with :func:`compress`, and replaces the oldest with a **reference stub** that names
the lap, the tool and its arguments, while the full result stays in the trajectory store
(:class:`ctxlab.TrajectoryStore`), from which :func:`restore` puts it back. Only tool results
change: ``tool_call_id`` and every other message are left exactly as they were.

Every cut says what it cut (items, characters, lines), so the model knows something is missing
and how much.

>>> print(compress("line one\\nline two\\n" + "noise\\n" * 100 + "the last line", max_chars=120))
line one
line two
noise
noise
noise
noise
noise
[... 559 of 631 chars (95 lines) cut ...]
noise
noise
the last line
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .calls import call_parts
from .errors import ConfigError
from .tokens import TokenCounter

if TYPE_CHECKING:  # pragma: no cover
    from .events import MemoryLog
    from .store import TrajectoryStore

__all__ = [
    "MIN_CHARS",
    "compress",
    "compress_history",
    "reference_stub",
    "stub_reference",
    "age_tier",
    "ages",
    "check_tiers",
    "restore",
    "UnnumberedWarning",
    "RECALL_TOOL",
    "recall",
]

Message = Mapping[str, Any]

MIN_CHARS = 100
"""The smallest ``max_chars`` :func:`compress` accepts: room for a cut note and a little text."""

# (items kept per list, chars kept per string), gentlest first
_LEVELS = ((10, 400), (5, 200), (3, 100), (2, 60), (1, 30), (1, 12))

STUB_PREFIX = "[result moved to the trajectory store]"
STUB_ARGUMENT_CHARS = 200
_STUB_REF = re.compile(r"\bref (\S+#\d+)\b")


# -- compress one result ------------------------------------------------------------------------


def _cut_text(text: str, max_chars: int) -> str:
    """Head and tail of ``text`` at line boundaries, with a note of what was cut between."""
    if len(text) <= max_chars:
        return text
    head_end, note, tail_start = _cut_points(text, max_chars)
    return text[:head_end] + note + text[tail_start:]


def _cut_points(text: str, max_chars: int) -> tuple[int, str, int]:
    """Where :func:`_cut_text` cuts ``text`` (longer than ``max_chars``): it keeps
    ``text[:head_end] + note + text[tail_start:]``, the note starting and ending with a newline.

    >>> text = "first line\\n" + "noise\\n" * 40 + "last line"
    >>> head_end, note, tail_start = _cut_points(text, 120)
    >>> text[:head_end], note.startswith("\\n[... ") and note.endswith(" cut ...]\\n"), text[tail_start:]
    ('first line\\nnoise\\nnoise\\nnoise\\nnoise\\nnoise\\nnoise', True, 'noise\\nnoise\\nnoise\\nlast line')
    """
    total, total_lines = len(text), text.count("\n") + 1
    widest = f"\n[... {total:,} of {total:,} chars ({total_lines:,} lines) cut ...]\n"
    room = max_chars - len(widest)
    head_room = room * 2 // 3
    head = text[:head_room]
    if "\n" in head[head_room // 2 :]:
        head = head[: head.rindex("\n")]
    tail_room = room - len(head)
    tail = text[len(text) - tail_room :] if tail_room > 0 else ""
    if "\n" in tail[: len(tail) // 2]:
        tail = tail[tail.index("\n") + 1 :]
    cut = text[len(head) : len(text) - len(tail)]
    note = f"\n[... {len(cut):,} of {total:,} chars ({cut.count(chr(10)) + 1:,} lines) cut ...]\n"
    return len(head.rstrip("\n")), note, len(text) - len(tail.lstrip("\n"))


def _text_cut(content: Any, max_chars: int) -> tuple[int, str, int] | None:
    """``(head_end, note, tail_start)`` when :func:`compress` shrinks ``content`` by keeping
    its head and tail (``content[:head_end] + note + content[tail_start:]``), else ``None``
    (it fits, or it may be JSON, which is shrunk by its structure).

    A counter can encode such a result in pieces cut near ``head_end`` and ``tail_start``,
    and then count the compressed text from those pieces (:class:`ctxlab.Assembler` does).

    >>> text = "x" * 300 + "\\n" + "y" * 300
    >>> head_end, note, tail_start = _text_cut(text, 200)
    >>> compress(text, 200) == text[:head_end] + note + text[tail_start:]
    True
    >>> _text_cut('{"a": 1}', 200), _text_cut("[" + "1, " * 100 + "1]", 200)
    (None, None)
    """
    if content.__class__ is not str or isinstance(max_chars, bool) or not isinstance(max_chars, int):
        return None
    if max_chars < MIN_CHARS or len(content) <= max_chars or content.lstrip()[:1] in ("{", "["):
        return None
    return _cut_points(content, max_chars)


_SCALARS = frozenset({int, float, bool, type(None)})  # JSON's scalars but strings: never cut


def _shrink(value: Any, items: int, chars: int, cuts: dict[str, int]) -> Any:
    """``value`` with lists cut to ``items`` and strings to ``chars``, counting the cuts.

    An item that no level can cut (a number, ``None``, a string within ``chars``) is kept
    without a call: most of a search result's nodes are such leaves.

    >>> cuts = {"lists": 0, "items": 0, "strings": 0, "chars": 0}
    >>> _shrink({"n": 1, "tags": ["a", "b", "c"], "text": "x" * 12}, 2, 5, cuts), cuts["items"]
    ({'n': 1, 'tags': ['a', 'b', '...[+1 more of 3 items]'], 'text': 'xxxxx...[+7 chars]'}, 1)
    """
    if isinstance(value, str):
        if len(value) > chars:
            cuts["strings"] += 1
            cuts["chars"] += len(value) - chars
            return value[:chars] + f"...[+{len(value) - chars:,} chars]"
        return value
    if isinstance(value, list):
        kept = [
            v if v.__class__ in _SCALARS or (v.__class__ is str and len(v) <= chars) else _shrink(v, items, chars, cuts)
            for v in value[:items]
        ]
        if len(value) > items:
            cuts["lists"] += 1
            cuts["items"] += len(value) - items
            kept.append(f"...[+{len(value) - items} more of {len(value)} items]")
        return kept
    if value.__class__ is dict or isinstance(value, Mapping):
        return {
            k: v if v.__class__ in _SCALARS or (v.__class__ is str and len(v) <= chars) else _shrink(v, items, chars, cuts)
            for k, v in value.items()
        }
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def compress(result: Any, max_chars: int = 2_000) -> str:
    """``result`` as text of at most ``max_chars`` characters, saying what was cut.

    * Text that fits is returned unchanged.
    * A list or dict (or JSON text of one) keeps its structure: long lists keep their first
      items and say how many more there were, long strings keep their start and say how many
      characters went, and a note at the end totals the cuts. Lists and strings are cut
      harder until the text fits.
    * Other text keeps its head and tail, cut at line ends, with a note in the middle giving
      the characters and lines cut: logs and test output put their conclusion at the end.

    * JSON nested too deeply to walk (hundreds of levels) is cut as text, by head and tail.

    Deterministic. Raises ``ValueError`` when ``max_chars`` is below :data:`MIN_CHARS`.

    >>> compress(list(range(40)), max_chars=120)
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, "...[+30 more of 40 items]"]\\n[cut from 150 chars: 30 list items]'
    >>> compress({"title": "Heat pumps", "body": "x" * 300}, max_chars=150)
    '{"title": "Heat pumps", "body": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...[+270 chars]"}\\n[cut from 335 chars: 270 chars of 1 string]'
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < MIN_CHARS:
        raise ConfigError(f"max_chars must be an int >= {MIN_CHARS} (room for a cut note), got {max_chars!r}")
    data = result
    if isinstance(result, str):
        if len(result) <= max_chars:
            return result
        stripped = result.strip()
        if stripped[:1] in ("{", "["):
            try:
                data = json.loads(stripped)
            except (json.JSONDecodeError, RecursionError):  # not JSON, or nested too deep to read
                data = result
    if isinstance(data, str):
        return _cut_text(data, max_chars)
    if not isinstance(data, (list, Mapping)):
        return _cut_text(_dumps(data), max_chars)
    try:
        return _shrink_to_fit(result, data, max_chars)
    except RecursionError:  # nested deeper than the cut can walk: cut its text by head and tail
        pass
    try:
        return _cut_text(result if isinstance(result, str) else _dumps(data), max_chars)
    except RecursionError:
        raise ConfigError(
            "result nests lists or dicts too deeply to write as JSON; flatten it, or pass "
            "compress a text of it, which is cut by its head and tail"
        ) from None


def _shrink_to_fit(result: Any, data: list | Mapping, max_chars: int) -> str:
    """:func:`compress` for a list or dict ``data`` (``result`` itself, or parsed from it)."""
    original = result if isinstance(result, str) else _dumps(data)
    if len(original) <= max_chars:
        return original
    shrunk = note = ""
    for items, chars in _LEVELS:
        cuts = {"lists": 0, "items": 0, "strings": 0, "chars": 0}
        shrunk = _dumps(_shrink(data, items, chars, cuts))
        parts = []
        if cuts["items"]:
            parts.append(f"{cuts['items']:,} list items")
        if cuts["chars"]:
            strings = "string" if cuts["strings"] == 1 else "strings"
            parts.append(f"{cuts['chars']:,} chars of {cuts['strings']:,} {strings}")
        note = f"\n[cut from {len(original):,} chars: {', '.join(parts) or 'whitespace'}]"
        if len(shrunk) + len(note) <= max_chars:
            return shrunk + note
    return _cut_text(shrunk + note, max_chars)  # too many keys even at the hardest level


# -- reference stubs ----------------------------------------------------------------------------


def reference_stub(ref: str, *, step: int | None, name: str, arguments: str, chars: int) -> str:
    """The text that stands in for a tool result moved to the store.

    It names the lap, the tool and its arguments (so the model knows what it asked) and the
    reference that :func:`restore` resolves and that the model can pass to the ``recall`` tool
    (:data:`RECALL_TOOL`, answered by :func:`recall`) to read the result in full, rather than
    call the tool again (which may cost, change something, or answer differently).

    >>> reference_stub("research#16", step=7, name="fetch_pdf", arguments='{"url": "u"}', chars=4210)
    '[result moved to the trajectory store] lap 7: fetch_pdf {"url": "u"} returned 4,210 chars, kept as ref research#16; to read it in full, call recall with this ref.'
    """
    lap = "an earlier lap" if step is None else f"lap {step}"
    if len(arguments) > STUB_ARGUMENT_CHARS:
        arguments = arguments[: STUB_ARGUMENT_CHARS - 3] + "..."
    return (
        f"{STUB_PREFIX} {lap}: {name} {arguments} returned {chars:,} chars, kept as ref {ref}; "
        "to read it in full, call recall with this ref."
    )


def stub_reference(content: Any) -> str | None:
    """The reference in a stub made by :func:`reference_stub`, or ``None`` for other content.

    >>> stub_reference(reference_stub("run#3", step=1, name="f", arguments="{}", chars=9)), stub_reference("text")
    ('run#3', None)
    """
    if isinstance(content, str) and content.startswith(STUB_PREFIX):
        match = _STUB_REF.search(content)
        if match:
            return match.group(1)
    return None


def restore(messages: Sequence[Message], store: TrajectoryStore) -> list[dict[str, Any]]:
    """The full messages behind a view: every tool result the store holds, put back in full.

    A reference stub is resolved through its reference; any other tool result whose
    ``tool_call_id`` is stored gets the stored content back (so compressed results return in
    full too); everything else is copied unchanged. Raises :class:`ctxlab.errors.ReferenceNotFound`
    when a stub's reference is not in the store.

    >>> from ctxlab.store import TrajectoryStore
    >>> store = TrajectoryStore(run="r")
    >>> full = {"role": "tool", "tool_call_id": "c1", "content": "the full result", "step": 1}
    >>> stub = {**full, "content": reference_stub(store.save_result(full), step=1, name="f",
    ...                                           arguments="{}", chars=15)}
    >>> restore([stub], store) == [full]
    True
    """
    from .errors import ReferenceNotFound

    out = []
    for message in messages:
        if message.get("role") != "tool":
            out.append(dict(message))
            continue
        ref = stub_reference(message.get("content"))
        if ref is None:
            try:
                ref = store.ref_for(message.get("tool_call_id"))
            except ReferenceNotFound:
                out.append(dict(message))
                continue
        out.append({**message, "content": store.resolve(ref).get("content")})
    return out


# -- by age -------------------------------------------------------------------------------------


def result_text(content: Any) -> str | None:
    """The text of a tool result that age compression may shrink: a string as it is, a list of
    text parts (the API's other form of a tool message's content) joined by newlines, or
    ``None`` for anything else (which is left as it is).

    >>> result_text("42 rows"), result_text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    ('42 rows', 'a\\nb')
    >>> result_text([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]) is None
    True
    """
    if content.__class__ is str:
        return content
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            return None
        texts.append(part["text"])
    return "\n".join(texts)


def age_tier(age: int, keep_full_for: int, compress_after: int | None) -> str:
    """The tier of a tool result ``age`` laps old, the one rule of compression by age:
    ``"full"`` while ``age <= keep_full_for``, then ``"compressed"``, and once ``age`` passes
    ``compress_after`` (when given) ``"reference"``. :func:`compress_history` and
    :class:`ctxlab.Assembler` (which follows each result's tier from lap to lap) both ask it.

    >>> [age_tier(age, 2, 5) for age in (0, 2, 3, 5, 6)]
    ['full', 'full', 'compressed', 'compressed', 'reference']
    """
    if age <= keep_full_for:
        return "full"
    if compress_after is not None and age > compress_after:
        return "reference"
    return "compressed"


def ages(message: Message, text: str | None, caller: Message) -> bool:
    """True when the tool result ``message``, of text ``text`` (:func:`result_text`), shrinks
    with age: it has a lap (``step``), neither it nor the assistant message that called it
    (``caller``, ``{}`` when unknown) is marked ``"pinned": True``, and it is not a reference
    stub already.

    >>> result = {"role": "tool", "tool_call_id": "c1", "content": "42 rows", "step": 3}
    >>> ages(result, "42 rows", {}), ages(result, "42 rows", {"pinned": True}), ages({**result, "step": None}, "42 rows", {})
    (True, False, False)
    """
    lap = message.get("step")
    return (text is not None and isinstance(lap, int) and not isinstance(lap, bool)
            and message.get("pinned") is not True and caller.get("pinned") is not True
            and stub_reference(text) is None)


def _calls_by_id(messages: Sequence[Message]) -> dict[str, tuple[int, Mapping[str, Any]]]:
    calls = {}
    for index, message in enumerate(messages):
        for call in message.get("tool_calls") or []:
            if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                calls[call["id"]] = (index, call)
    return calls


def _aged_view(
    message: Message, text: str, call: Mapping[str, Any], tier: str, *, max_chars: int,
    store: TrajectoryStore | None, memo: dict | None,
) -> tuple[dict[str, Any] | None, str, Any]:
    """The view :func:`compress_history` gives the tool result ``message`` (of text ``text``,
    answering ``call``) in ``tier`` (:func:`age_tier`, past ``"full"``): ``(view, tier, ref)``,
    the tier it ends in (a stub longer than the compressed text is not used), with ``view``
    ``None`` when the result stays as it is (it fits). :class:`ctxlab.Assembler` calls it for
    one result at a time."""
    stubbed = tier == "reference"
    key = (id(message), "reference" if stubbed else "compressed")
    known = memo.get(key) if memo is not None else None
    if known is not None and known[0] is message:
        _, new, ref, view = known
        if new is None:
            return None, "", None
        return view, "reference" if new.startswith(STUB_PREFIX) else "compressed", ref
    new = compress(text, max_chars)
    if new == text:
        if memo is not None:
            memo[key] = (message, None, None, None)
        return None, "", None
    tier = "compressed"
    ref = store.save_result(message) if store is not None else None
    if stubbed:
        assert ref is not None
        name, arguments = call_parts(call) or ("a tool", "")
        stub = reference_stub(ref, step=message["step"], name=name, arguments=arguments, chars=len(text))
        if len(stub) < len(new):
            new, tier = stub, "reference"
    view = {**message, "content": new}
    if memo is not None:
        memo[key] = (message, new, ref, view)
    return view, tier, ref


def check_tiers(*, keep_full_for: Any, compress_after: Any, max_chars: Any, store: Any) -> None:
    """Refuse age tiers :func:`compress_history` cannot follow, saying what to pass instead.

    >>> check_tiers(keep_full_for=2, compress_after=6, max_chars=1_200, store=None)
    Traceback (most recent call last):
    ...
    ctxlab.errors.ConfigError: compress_after replaces old results with references, which must resolve: pass store=ctxlab.TrajectoryStore(...) so the full results are kept, or leave compress_after=None to only compress
    """
    if isinstance(keep_full_for, bool) or not isinstance(keep_full_for, int) or keep_full_for < 0:
        raise ConfigError(f"keep_full_for must be an int >= 0, got {keep_full_for!r}")
    if compress_after is not None:
        if isinstance(compress_after, bool) or not isinstance(compress_after, int) or compress_after < keep_full_for:
            raise ConfigError(
                f"compress_after must be an int >= keep_full_for ({keep_full_for}), or None for "
                f"no stubs; got {compress_after!r}"
            )
        if store is None:
            raise ConfigError(
                "compress_after replaces old results with references, which must resolve: pass "
                "store=ctxlab.TrajectoryStore(...) so the full results are kept, or leave "
                "compress_after=None to only compress"
            )
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < MIN_CHARS:
        raise ConfigError(f"max_chars must be an int >= {MIN_CHARS}, got {max_chars!r}")


class UnnumberedWarning(UserWarning):
    """:func:`compress_history` was given tool results none of which has a ``step`` (a history
    straight from the API): none can age, so nothing is compressed."""


def compress_history(
    messages: Sequence[Message],
    step: int,
    *,
    keep_full_for: int = 2,
    compress_after: int | None = None,
    max_chars: int = 1_200,
    store: TrajectoryStore | None = None,
    log: MemoryLog | None = None,
    count: Callable[[Message], int] | None = None,
    memo: dict[tuple[int, str], tuple[Any, ...]] | None = None,
) -> list[dict[str, Any]]:
    """A view of ``messages`` at lap ``step`` with tool results shrunk by age.

    A tool result's age is ``step - message["step"]``:

    * age ``<= keep_full_for``: kept in full (the agent is reasoning about it now);
    * older: compressed with :func:`compress` to ``max_chars``;
    * age ``> compress_after`` (when given): replaced by a reference stub naming the lap, the
      tool, its arguments and the reference, so ``compress_after`` needs a ``store``
      (``ValueError`` otherwise).

    With a ``store``, every result it changes is saved there in full first
    (:meth:`ctxlab.TrajectoryStore.save_result`), so :func:`restore` can put it back.

    A result's text is its ``content``, or, when that is a list of text parts, their texts
    joined by newlines (:func:`result_text`); a compressed one becomes a single string. Results
    holding any other part are left as they are.

    Untouched: every message that is not a tool result, ``tool_call_id`` and every other field
    of a tool result, results with no ``step``, and pinned ones (a result is pinned when it or
    the assistant message that called it has ``"pinned": True``). When no tool result has a
    ``step`` at all (a history straight from the API), an :class:`UnnumberedWarning` says that
    nothing could age: :func:`ctxlab.assembly.number_laps` gives them their laps. A stub is used only when it
    is shorter than the compressed text. The input is not modified: changed results are new
    dicts, the rest are the same objects. Applying it again to its own output changes nothing.

    With ``log`` (a :class:`ctxlab.MemoryLog`), one ``"compress"`` event records the changed
    results in full, the tokens before and after (counted with ``count``), and per result
    its tier, characters before and after, and reference.

    ``memo`` (a dict kept across laps, as :class:`ctxlab.Assembler` does) remembers each
    result's compressed text per tier, so a result is compressed (and stored) once per tier
    over a whole run rather than once per lap.

    >>> call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    >>> history = [{"role": "assistant", "content": None, "tool_calls": [call], "step": 1},
    ...            {"role": "tool", "tool_call_id": "c1", "content": "x" * 5_000, "step": 1}]
    >>> [len(m["content"] or "") for m in compress_history(history, step=2)]
    [0, 5000]
    >>> [len(m["content"] or "") for m in compress_history(history, step=9)]
    [0, 1200]
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ConfigError(f"step must be an int >= 0, got {step!r}")
    check_tiers(keep_full_for=keep_full_for, compress_after=compress_after, max_chars=max_chars, store=store)
    calls = _calls_by_id(messages)
    out: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    replaced: list[Message] = []
    for index, message in enumerate(messages):
        content = result_text(message.get("content")) if message.get("role") == "tool" else None
        lap = message.get("step")
        caller = calls.get(message.get("tool_call_id"), (None, {}))
        caller_message = messages[caller[0]] if caller[0] is not None else {}
        tier = age_tier(step - lap, keep_full_for, compress_after) if ages(message, content, caller_message) else "full"
        if tier == "full":
            out.append(message)  # type: ignore[arg-type]
            continue
        age = step - lap
        view, tier, ref = _aged_view(message, content, caller[1], tier, max_chars=max_chars, store=store, memo=memo)
        if view is None:
            out.append(message)  # type: ignore[arg-type]
            continue
        out.append(view)
        replaced.append(message)
        changes.append(
            {"index": index, "tool_call_id": message.get("tool_call_id"), "lap": lap, "age": age,
             "tier": tier, "chars_before": len(content), "chars_after": len(view["content"]), "ref": ref}
        )

    results = [m for m in messages if m.get("role") == "tool"]
    if results and step > keep_full_for and not any(isinstance(m.get("step"), int) for m in results):
        warnings.warn(UnnumberedWarning(
            f"compress_history: none of the {len(results)} tool result(s) has a 'step', so none can age "
            "and nothing was compressed; number the laps first (ctxlab.assembly.number_laps(history), "
            "as build_context and Assembler do for a history straight from the API)"), stacklevel=2)

    if log is not None and changes:
        count = count or TokenCounter().message
        before = sum(count(m) for m in replaced)
        after = sum(count(out[c["index"]]) for c in changes)
        stubs = sum(1 for c in changes if c["tier"] == "reference")
        log.record(
            "compress",
            lap=step,
            tokens_before=before,
            tokens_after=after,
            messages=replaced,
            detail=(
                f"{len(changes) - stubs} tool result(s) older than {keep_full_for} laps compressed "
                f"to {max_chars:,} chars"
                + (f"; {stubs} older than {compress_after} laps replaced by references" if stubs else "")
            ),
            changes=changes,
        )
    return out


RECALL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "recall",
        "description": (
            "Read in full a tool result that the conversation shows only as a reference stub "
            "('[result moved to the trajectory store] ... kept as ref RUN#N'). Returns the stored "
            "result exactly as the tool returned it. Use it instead of calling the original tool again."
        ),
        "parameters": {
            "type": "object",
            "properties": {"ref": {"type": "string", "description": "The ref the stub names, such as 'research#16'."}},
            "required": ["ref"],
            "additionalProperties": False,
        },
    },
}
"""The tool to offer the model beside a view with reference stubs (answer its calls with :func:`recall`)."""


def recall(store: TrajectoryStore, arguments: str | Mapping[str, Any]) -> str:
    """The result of a ``recall`` call: the stored content of the ref it names, as text.

    ``arguments`` is the call's arguments, as the model sends them (JSON text) or parsed. Only
    refs of ``store.run`` resolve: a file may hold other runs (other users' sessions), and the
    model reading one must not reach them. A ref the store does not hold for this run, or
    arguments without one, give an error result the model can read
    (and :func:`ctxlab.scratchpad.update_scratchpad` records as a permanent failure), never an exception:
    a tool call must always get an answer.

    >>> from ctxlab.store import TrajectoryStore
    >>> store = TrajectoryStore(run="r")
    >>> ref = store.save_result({"role": "tool", "tool_call_id": "c1", "content": '{"rows": 3}', "step": 1})
    >>> recall(store, '{"ref": "r#0"}')
    '{"rows": 3}'
    >>> json.loads(recall(store, {"ref": "r#9"}))
    {'error': 'unknown_ref', 'message': "no message r#9: run 'r' holds 1 messages (r#0 to r#0); use the ref a stub names"}
    """
    from .errors import ReferenceNotFound

    try:
        data = json.loads(arguments) if isinstance(arguments, str) else arguments
    except (TypeError, ValueError):
        data = None
    ref = data.get("ref") if isinstance(data, Mapping) else None
    if not isinstance(ref, str) or not ref.strip():
        return json.dumps({"error": "invalid_arguments", "message": 'recall needs {"ref": "RUN#N"}, the ref a stub names'})
    ref = ref.strip()
    if ref.partition("#")[0] != store.run:  # one run's model reads its own results, not another run's
        return json.dumps({"error": "unknown_ref", "message": f"{ref!r} is not a ref of this run "
                           f"({store.run!r}); use the ref a stub names"}, ensure_ascii=False)
    try:
        content = store.content(ref)
    except ReferenceNotFound as err:
        return json.dumps({"error": "unknown_ref", "message": f"{err}; use the ref a stub names"}, ensure_ascii=False)
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
