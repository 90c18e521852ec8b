"""Known wrong answers for lesson 05-age-compression; each must fail the named tests when graded.

Each wrong answer breaks one rule of an exercise (``RULES`` at the end maps every rule to the
test that checks it and to a wrong answer that breaks only that rule).
"""

from string import Template

# --- compress: the reference solution, with one part swapped out at a time ---------------------

COMPRESS = Template('''
def compress(result, max_chars):
    if isinstance(result, list):
$list_start
        text = json.dumps(result)
        if len(text) $fits max_chars:
            return text
        for k in range(len(result), -1, -1):
            note = $list_note
            head = json.dumps(result[:k])
            if $list_fits:
                return head + note
        return note[-max_chars:]
    text = $as_text
    if len(text) $fits max_chars:
        return text
    note = $text_note
$text_tiny
    return $cut
''')
COMPRESS_PARTS = dict(
    list_start="",
    fits="<=",
    list_note='f"\\n[{len(result) - k} more items not shown, {len(result)} in all]"',
    list_fits="len(head) + len(note) <= max_chars",
    as_text="result if isinstance(result, str) else json.dumps(result)",
    text_note='f"\\n[truncated from {len(text):,} chars]"',
    text_tiny="    if len(note) > max_chars:\n        return note[-max_chars:]",
    cut="text[: max_chars - len(note)] + note",
)


def compress_with(**changes: str) -> str:
    assert set(changes) <= set(COMPRESS_PARTS), set(changes) - set(COMPRESS_PARTS)
    return COMPRESS.substitute({**COMPRESS_PARTS, **changes})


# --- compress_history ----------------------------------------------------------------------------

HISTORY = Template('''
def compress_history(messages, step, keep_full_for=$keep_default, max_chars=$cap_default):
    out = []
    for message in messages:
        if $condition:
            $action
        else:
            out.append(message)
    return out
''')
HISTORY_PARTS = dict(
    keep_default="2",
    cap_default="1_000",
    condition='message["role"] == "tool" and step - message["step"] > keep_full_for',
    action='out.append({**message, "content": ctxlab.compress(message["content"], max_chars)})',
)


def history_with(**changes: str) -> str:
    assert set(changes) <= set(HISTORY_PARTS), set(changes) - set(HISTORY_PARTS)
    return HISTORY.substitute({**HISTORY_PARTS, **changes})


# --- ResultStore ---------------------------------------------------------------------------------

STORE = Template('''
class ResultStore:
    def __init__(self, path=":memory:"):
$init

    def save(self, message):
$save

    def resolve(self, ref):
$resolve

    def close(self):
$close
''')
STORE_PARTS = dict(
    init='''        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, tool_call_id TEXT, content TEXT NOT NULL)")
        self.db.commit()''',
    save='''        cursor = self.db.execute("INSERT INTO results (tool_call_id, content) VALUES (?, ?)",
                                 (message.get("tool_call_id"), message["content"]))
        self.db.commit()
        return f"result-{cursor.lastrowid}"''',
    resolve='''        number = ref.removeprefix("result-") if isinstance(ref, str) else ""
        row = None
        if number.isdigit():
            row = self.db.execute("SELECT content FROM results WHERE id = ?", (int(number),)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]''',
    close="        self.db.close()",
)


def store_with(**changes: str) -> str:
    assert set(changes) <= set(STORE_PARTS), set(changes) - set(STORE_PARTS)
    return STORE.substitute({**STORE_PARTS, **changes})


# A store whose table is keyed by the reference text itself, for references built another way.
TEXT_REF_INIT = '''        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS results (ref TEXT PRIMARY KEY, content TEXT NOT NULL)")
        self.db.commit()'''
TEXT_REF_RESOLVE = '''        row = self.db.execute("SELECT content FROM results WHERE ref = ?", (str(ref),)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''


def replaced(source: str, old: str, new: str) -> str:
    """`source` with `old` replaced by `new`, which must be there."""
    assert old in source, old
    return source.replace(old, new)


WRONG_ANSWERS = [
    # compress -------------------------------------------------------------------------------------
    dict(
        name="cuts-without-saying-what",
        cell="compress-result",
        source=compress_with(list_note='""', text_note='""'),
        fails=["compress-visible", "compress-text-says-chars"],
    ),
    dict(
        name="note-not-counted-in-the-cap",
        cell="compress-result",
        source=compress_with(list_fits="len(head) <= max_chars", cut="text[:max_chars] + note"),
        fails=["compress-visible", "compress-never-exceeds"],
    ),
    dict(
        name="cuts-a-result-of-exactly-max-chars",
        cell="compress-result",
        source=compress_with(fits="<"),
        fails=["compress-exact-fit-unchanged"],
    ),
    dict(
        name="keeps-the-end-of-the-text",
        cell="compress-result",
        source=compress_with(cut="note.lstrip() + text[len(text) - max(0, max_chars - len(note)):]"),
        fails=["compress-visible", "compress-text-keeps-start"],
    ),
    dict(
        name="keeps-half-the-room",
        cell="compress-result",
        source=compress_with(cut="text[: max(0, max_chars - len(note)) // 2] + note"),
        fails=["compress-visible", "compress-text-keeps-start"],
    ),
    dict(
        name="note-without-the-original-length",
        cell="compress-result",
        source=compress_with(text_note='"\\n[truncated]"'),
        fails=["compress-visible", "compress-text-says-chars"],
    ),
    dict(
        name="length-without-thousands-separators",
        cell="compress-result",
        source=compress_with(text_note='f"\\n[truncated from {len(text)} chars]"'),
        fails=["compress-text-says-chars"],
    ),
    dict(
        name="list-head-must-leave-room-to-spare",
        cell="compress-result",
        source=compress_with(list_fits="len(head) + len(note) < max_chars"),
        fails=["compress-list-keeps-most-items"],
    ),
    dict(
        name="list-note-without-the-total",
        cell="compress-result",
        source=compress_with(list_note='f"\\n[{len(result) - k} more items not shown]"'),
        fails=["compress-visible", "compress-list-counts-items"],
    ),
    dict(
        name="keeps-the-last-items",
        cell="compress-result",
        source=compress_with(list_fits="len(json.dumps(result[len(result) - k:])) + len(note) <= max_chars").replace(
            "                return head + note", "                return json.dumps(result[len(result) - k:]) + note"),
        fails=["compress-visible", "compress-list-counts-items"],
    ),
    dict(
        name="dict-as-python-text",
        cell="compress-result",
        source=compress_with(as_text="result if isinstance(result, str) else str(result)"),
        fails=["compress-dict-as-json"],
    ),
    dict(
        name="pops-items-off-the-list",
        cell="compress-result",
        source=compress_with(list_start='''        total = len(result)
        while result and len(json.dumps(result)) + len(f"\\n[{total - len(result)} more items not shown, {total} in all]") > max_chars:
            result.pop()  # drop items from the end until it fits
        if len(result) < total:
            return json.dumps(result) + f"\\n[{total - len(result)} more items not shown, {total} in all]"'''),
        fails=["compress-leaves-result-unchanged"],
    ),
    dict(
        name="json-without-ascii-escapes",
        cell="compress-result",
        source=replaced(replaced(compress_with(), "json.dumps(result)", "json.dumps(result, ensure_ascii=False)"),
                        "json.dumps(result[:k])", "json.dumps(result[:k], ensure_ascii=False)"),
        fails=["compress-fits-unchanged", "compress-dict-as-json"],
    ),
    dict(
        name="list-note-with-thousands-separators",
        cell="compress-result",
        source=compress_with(list_note='f"\\n[{len(result) - k:,} more items not shown, {len(result):,} in all]"'),
        fails=["compress-list-counts-items"],
    ),
    dict(
        name="parses-json-text-to-cut-it-as-a-list",
        cell="compress-result",
        source=replaced(compress_with(), "def compress(result, max_chars):\n", '''def compress(result, max_chars):
    if isinstance(result, str) and len(result) > max_chars:
        try:
            parsed = json.loads(result)  # keep the structure of JSON text
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            result = parsed
'''),
        fails=["compress-text-keeps-start"],
    ),
    dict(
        name="note-alone-exceeds-a-tiny-cap",
        cell="compress-result",
        source=compress_with(text_tiny="", cut="text[: max(0, max_chars - len(note))] + note"),
        fails=["compress-never-exceeds"],
    ),
    dict(
        name="tiny-cap-keeps-the-start-of-the-note",
        cell="compress-result",
        source=compress_with(text_tiny="    if len(note) > max_chars:\n        return note[:max_chars]"),
        fails=["compress-never-exceeds"],
    ),
    # compress_history -----------------------------------------------------------------------------
    dict(
        name="compresses-recent-results",
        cell="compress-history",
        source=history_with(condition='message["role"] == "tool" and step - message["step"] >= keep_full_for'),
        fails=["compress-history-visible", "compress-history-recent-untouched"],
    ),
    dict(
        name="ignores-keep-full-for",
        cell="compress-history",
        source=history_with(condition='message["role"] == "tool" and step - message["step"] > 2'),
        fails=["compress-history-keep-full-for"],
    ),
    dict(
        name="slices-instead-of-compressing",
        cell="compress-history",
        source=history_with(action='out.append({**message, "content": message["content"][:max_chars]})'),
        fails=["compress-history-older-compressed"],
    ),
    dict(
        name="ignores-max-chars",
        cell="compress-history",
        source=history_with(action='out.append({**message, "content": ctxlab.compress(message["content"], 1_000)})'),
        fails=["compress-history-max-chars"],
    ),
    dict(
        name="default-cap-of-2000-chars",
        cell="compress-history",
        source=history_with(cap_default="2_000"),
        fails=["compress-history-defaults"],
    ),
    dict(
        name="loses-tool-call-id",
        cell="compress-history",
        source=history_with(action='out.append({"role": "tool", "content": ctxlab.compress(message["content"], max_chars), "step": message["step"]})'),
        fails=["compress-history-keeps-tool-call-id"],
    ),
    dict(
        name="rebuilds-the-result-without-its-step",
        cell="compress-history",
        source=history_with(action='out.append({"role": "tool", "tool_call_id": message["tool_call_id"], "content": ctxlab.compress(message["content"], max_chars)})'),
        fails=["compress-history-keeps-other-fields"],
    ),
    dict(
        name="touches-user-and-system-messages",
        cell="compress-history",
        source=history_with(condition='isinstance(message.get("content"), str) and step - message["step"] > keep_full_for'),
        fails=["compress-history-non-tool-untouched"],
    ),
    dict(
        name="mutates-the-history",
        cell="compress-history",
        source=history_with(action='message["content"] = ctxlab.compress(message["content"], max_chars)\n            out.append(message)'),
        fails=["compress-history-visible", "compress-history-input-unchanged"],
    ),
    dict(
        name="age-from-the-newest-message",
        cell="compress-history",
        source=history_with(
            condition='message["role"] == "tool" and max(m["step"] for m in messages) - message["step"] > keep_full_for'),
        fails=["compress-history-older-compressed"],
    ),
    dict(
        name="compresses-old-call-arguments",
        cell="compress-history",
        source='''
def compress_history(messages, step, keep_full_for=2, max_chars=1_000):
    out = []
    for message in messages:
        old = step - message.get("step", step) > keep_full_for
        if message["role"] == "tool" and old:
            out.append({**message, "content": ctxlab.compress(message["content"], max_chars)})
        elif message["role"] == "assistant" and old and message.get("tool_calls"):
            calls = [{**c, "function": {**c["function"], "arguments": ctxlab.compress(c["function"]["arguments"], 200)}}
                     for c in message["tool_calls"]]
            out.append({**message, "tool_calls": calls})
        else:
            out.append(message)
    return out
''',
        fails=["compress-history-non-tool-untouched"],
    ),
    dict(
        name="keeps-the-newest-results-not-laps",
        cell="compress-history",
        source='''
def compress_history(messages, step, keep_full_for=2, max_chars=1_000):
    tool_positions = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    full = set(tool_positions[-(keep_full_for + 1):])  # the newest keep_full_for + 1 results
    out = []
    for i, message in enumerate(messages):
        if message["role"] == "tool" and i not in full and message["step"] < step:
            out.append({**message, "content": ctxlab.compress(message["content"], max_chars)})
        else:
            out.append(message)
    return out
''',
        fails=["compress-history-recent-untouched", "compress-history-older-compressed"],
    ),
    # ResultStore ----------------------------------------------------------------------------------
    dict(
        name="reference-cannot-be-resolved",
        cell="result-store",
        source=store_with(save='''        self.db.execute("INSERT INTO results (tool_call_id, content) VALUES (?, ?)", (message.get("tool_call_id"), message["content"]))
        self.db.commit()
        return f"call-{message.get('tool_call_id')}"'''),
        fails=["result-store-visible", "result-store-resolves"],
    ),
    dict(
        name="keyed-by-tool-call-id",
        cell="result-store",
        source=store_with(
            init='''        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS results (ref TEXT PRIMARY KEY, content TEXT NOT NULL)")
        self.db.commit()''',
            save='''        ref = f"result-{message['tool_call_id']}"
        self.db.execute("INSERT OR REPLACE INTO results (ref, content) VALUES (?, ?)", (ref, message["content"]))
        self.db.commit()
        return ref''',
            resolve='''        row = self.db.execute("SELECT content FROM results WHERE ref = ?", (str(ref),)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]''',
        ),
        fails=["result-store-references-unique"],
    ),
    dict(
        name="resolve-parses-json",
        cell="result-store",
        source=store_with(resolve=STORE_PARTS["resolve"].replace(
            "        return row[0]", "        try:\n            return json.loads(row[0])  # structured results come back structured\n        except ValueError:\n            return row[0]")),
        fails=["result-store-returns-the-saved-string"],
    ),
    dict(
        name="store-never-commits",
        cell="result-store",
        source=store_with(save='''        cursor = self.db.execute("INSERT INTO results (tool_call_id, content) VALUES (?, ?)",
                                 (message.get("tool_call_id"), message["content"]))
        return f"result-{cursor.lastrowid}"'''),
        fails=["result-store-survives-reopen"],
    ),
    dict(
        name="store-only-in-memory",
        cell="result-store",
        source=store_with(
            init="        self.results = {}",
            save='''        ref = f"result-{len(self.results)}"
        self.results[ref] = message["content"]
        return ref''',
            resolve='''        if ref not in self.results:
            raise KeyError(f"no stored result {ref!r}")
        return self.results[ref]''',
            close="        self.results = None",
        ),
        fails=["result-store-survives-reopen"],
    ),
    dict(
        name="creates-the-table-every-time",
        cell="result-store",
        source=store_with(init=STORE_PARTS["init"].replace("CREATE TABLE IF NOT EXISTS", "CREATE TABLE")),
        fails=["result-store-survives-reopen"],
    ),
    dict(
        name="numbers-references-per-session",
        cell="result-store",
        source=store_with(
            init='''        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS results (ref TEXT PRIMARY KEY, content TEXT NOT NULL)")
        self.db.commit()
        self.saved = 0''',
            save='''        self.saved += 1
        ref = f"result-{self.saved}"
        self.db.execute("INSERT OR REPLACE INTO results (ref, content) VALUES (?, ?)", (ref, message["content"]))
        self.db.commit()
        return ref''',
            resolve='''        row = self.db.execute("SELECT content FROM results WHERE ref = ?", (str(ref),)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]''',
        ),
        fails=["result-store-new-references-after-reopen"],
    ),
    dict(
        name="unknown-reference-returns-none",
        cell="result-store",
        source=store_with(resolve=STORE_PARTS["resolve"].replace('            raise KeyError(f"no stored result {ref!r}")', "            return None")),
        fails=["result-store-unknown-reference"],
    ),
    dict(
        name="resolve-puts-the-reference-in-its-sql",
        cell="result-store",
        source=store_with(resolve='''        row = self.db.execute(f"SELECT content FROM results WHERE 'result-' || id = '{ref}'").fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''),
        fails=["result-store-unknown-reference"],
    ),
    dict(
        name="crashes-on-an-unknown-reference",
        cell="result-store",
        source=store_with(resolve='''        number = ref.removeprefix("result-") if isinstance(ref, str) else ""
        if not number.isdigit():
            raise KeyError(f"no stored result {ref!r}")
        return self.db.execute("SELECT content FROM results WHERE id = ?", (int(number),)).fetchone()[0]'''),
        fails=["result-store-unknown-reference"],
    ),
    dict(
        name="malformed-reference-raises-value-error",
        cell="result-store",
        source=store_with(resolve='''        row = self.db.execute("SELECT content FROM results WHERE id = ?", (int(ref.split("-")[-1]),)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''),
        fails=["result-store-unknown-reference"],
    ),
    dict(
        name="key-error-without-the-reference",
        cell="result-store",
        source=store_with(resolve=STORE_PARTS["resolve"].replace('KeyError(f"no stored result {ref!r}")', 'KeyError("no such result")')),
        fails=["result-store-error-names-reference"],
    ),
    dict(
        name="close-does-nothing",
        cell="result-store",
        source=store_with(close="        pass  # sqlite closes the file when the program ends"),
        fails=["result-store-close-closes"],
    ),
    dict(
        name="reference-from-call-id-and-step",
        cell="result-store",
        source=store_with(
            init=TEXT_REF_INIT,
            save='''        ref = f"{message.get('tool_call_id')}@{message.get('step')}"
        self.db.execute("INSERT OR REPLACE INTO results (ref, content) VALUES (?, ?)", (ref, message["content"]))
        self.db.commit()
        return ref''',
            resolve=TEXT_REF_RESOLVE,
        ),
        fails=["result-store-references-unique"],
    ),
    dict(
        name="reference-is-a-hash-of-the-content",
        cell="result-store",
        source=store_with(
            init=TEXT_REF_INIT,
            save='''        import hashlib
        ref = "sha-" + hashlib.sha256(message["content"].encode()).hexdigest()[:16]
        self.db.execute("INSERT OR IGNORE INTO results (ref, content) VALUES (?, ?)", (ref, message["content"]))
        self.db.commit()
        return ref''',
            resolve=TEXT_REF_RESOLVE,
        ),
        fails=["result-store-references-unique"],
    ),
    dict(
        name="commits-only-on-close",
        cell="result-store",
        source=store_with(
            save='''        cursor = self.db.execute("INSERT INTO results (tool_call_id, content) VALUES (?, ?)",
                                 (message.get("tool_call_id"), message["content"]))
        return f"result-{cursor.lastrowid}"''',
            close="        self.db.commit()\n        self.db.close()",
        ),
        fails=["result-store-survives-reopen"],
    ),
    dict(
        name="numbers-references-from-a-count-taken-at-open",
        cell="result-store",
        source=store_with(
            init=STORE_PARTS["init"] + '''
        self.next_id = (self.db.execute("SELECT MAX(id) FROM results").fetchone()[0] or 0) + 1''',
            save='''        ref_id, self.next_id = self.next_id, self.next_id + 1
        self.db.execute("INSERT OR REPLACE INTO results (id, content) VALUES (?, ?)", (ref_id, message["content"]))
        self.db.commit()
        return f"result-{ref_id}"''',
        ),
        fails=["result-store-new-references-after-reopen"],
    ),
    # concept checks Q4 and Q5: every wrong option
    dict(name="buys-a-million-token-window", cell="q4-answer", source='q4 = "a"', fails=["q4-check"]),
    dict(name="adds-an-instruction-not-to-re-read", cell="q4-answer", source='q4 = "b"', fails=["q4-check"]),
    dict(name="summarises-every-lap", cell="q4-answer", source='q4 = "d"', fails=["q4-check"]),
    dict(name="thinks-long-term-memory-is-a-bigger-window", cell="q5-answer", source='q5 = "a"', fails=["q5-check"]),
    dict(name="thinks-long-term-memory-is-the-transcript", cell="q5-answer", source='q5 = "c"', fails=["q5-check"]),
    dict(name="thinks-the-weights-learn-each-call", cell="q5-answer", source='q5 = "d"', fails=["q5-check"]),
]

RULES = [
    # compress
    dict(rule="cut text and lists say that they were cut", test="compress-text-says-chars", wrong="cuts-without-saying-what"),
    dict(rule="the note counts in the cap: never more than max_chars", test="compress-never-exceeds",
         wrong="note-not-counted-in-the-cap"),
    dict(rule="a result of exactly max_chars fits (<=)", test="compress-exact-fit-unchanged",
         wrong="cuts-a-result-of-exactly-max-chars"),
    dict(rule="cut text keeps its start", test="compress-text-keeps-start", wrong="keeps-the-end-of-the-text"),
    dict(rule="cut text keeps the longest start that fits", test="compress-text-keeps-start", wrong="keeps-half-the-room"),
    dict(rule="the text note gives the original length", test="compress-text-says-chars",
         wrong="note-without-the-original-length"),
    dict(rule="the original length is written with thousands separators ({:,})", test="compress-text-says-chars",
         wrong="length-without-thousands-separators"),
    dict(rule="a cut list keeps the largest k whose head and note fit (<=)", test="compress-list-keeps-most-items",
         wrong="list-head-must-leave-room-to-spare"),
    dict(rule="the list note gives the items left out and the total", test="compress-list-counts-items",
         wrong="list-note-without-the-total"),
    dict(rule="a cut list keeps its first items, in order", test="compress-list-counts-items", wrong="keeps-the-last-items"),
    dict(rule="a dict is compressed as json.dumps(result)", test="compress-dict-as-json", wrong="dict-as-python-text"),
    dict(rule="the result passed in is not modified", test="compress-leaves-result-unchanged", wrong="pops-items-off-the-list"),
    dict(rule="lists and dicts are written by json.dumps with its defaults (non-ASCII escaped)",
         test="compress-fits-unchanged", wrong="json-without-ascii-escapes"),
    dict(rule="the list note has plain numbers, no thousands separators", test="compress-list-counts-items",
         wrong="list-note-with-thousands-separators"),
    dict(rule="a string is cut as text, even when it holds JSON", test="compress-text-keeps-start",
         wrong="parses-json-text-to-cut-it-as-a-list"),
    dict(rule="never more than max_chars, even when the cap is smaller than the note", test="compress-never-exceeds",
         wrong="note-alone-exceeds-a-tiny-cap"),
    dict(rule="a cap smaller than the note gives the note's last max_chars characters", test="compress-never-exceeds",
         wrong="tiny-cap-keeps-the-start-of-the-note"),
    # compress_history
    dict(rule="a result exactly keep_full_for laps old stays in full (>, not >=)", test="compress-history-recent-untouched",
         wrong="compresses-recent-results"),
    dict(rule="keep_full_for is used", test="compress-history-keep-full-for", wrong="ignores-keep-full-for"),
    dict(rule="older results become ctxlab.compress(content, max_chars)", test="compress-history-older-compressed",
         wrong="slices-instead-of-compressing"),
    dict(rule="max_chars is used", test="compress-history-max-chars", wrong="ignores-max-chars"),
    dict(rule="the defaults are keep_full_for=2 and max_chars=1_000", test="compress-history-defaults",
         wrong="default-cap-of-2000-chars"),
    dict(rule="a compressed result keeps its tool_call_id", test="compress-history-keeps-tool-call-id", wrong="loses-tool-call-id"),
    dict(rule="a compressed result keeps every other field", test="compress-history-keeps-other-fields",
         wrong="rebuilds-the-result-without-its-step"),
    dict(rule="messages that are not tool results are never changed", test="compress-history-non-tool-untouched",
         wrong="touches-user-and-system-messages"),
    dict(rule="the history passed in is not modified", test="compress-history-input-unchanged", wrong="mutates-the-history"),
    dict(rule="age is counted from the step given, not from the newest message", test="compress-history-older-compressed",
         wrong="age-from-the-newest-message"),
    dict(rule="an assistant's tool calls and their arguments are never changed", test="compress-history-non-tool-untouched",
         wrong="compresses-old-call-arguments"),
    dict(rule="age counts laps, not results: every parallel result of a recent lap stays in full",
         test="compress-history-recent-untouched", wrong="keeps-the-newest-results-not-laps"),
    # ResultStore
    dict(rule="a reference save() returns resolves to its result", test="result-store-resolves", wrong="reference-cannot-be-resolved"),
    dict(rule="every save gets its own reference, even with a shared tool_call_id", test="result-store-references-unique",
         wrong="keyed-by-tool-call-id"),
    dict(rule="resolve returns exactly the string that was saved", test="result-store-returns-the-saved-string",
         wrong="resolve-parses-json"),
    dict(rule="save commits", test="result-store-survives-reopen", wrong="store-never-commits"),
    dict(rule="results are kept in the database file, not in memory", test="result-store-survives-reopen",
         wrong="store-only-in-memory"),
    dict(rule="opening an existing file keeps its table (CREATE TABLE IF NOT EXISTS)", test="result-store-survives-reopen",
         wrong="creates-the-table-every-time"),
    dict(rule="references stay unique after the file is reopened", test="result-store-new-references-after-reopen",
         wrong="numbers-references-per-session"),
    dict(rule="an unknown reference raises, it does not return None", test="result-store-unknown-reference",
         wrong="unknown-reference-returns-none"),
    dict(rule="an unknown reference raises KeyError, not another error", test="result-store-unknown-reference",
         wrong="crashes-on-an-unknown-reference"),
    dict(rule="an unknown reference raises KeyError whatever it looks like, one that reads as SQL too",
         test="result-store-unknown-reference", wrong="resolve-puts-the-reference-in-its-sql"),
    dict(rule="a malformed reference raises KeyError too", test="result-store-unknown-reference",
         wrong="malformed-reference-raises-value-error"),
    dict(rule="the KeyError names the reference", test="result-store-error-names-reference", wrong="key-error-without-the-reference"),
    dict(rule="close() closes the connection", test="result-store-close-closes", wrong="close-does-nothing"),
    dict(rule="two saves of one call in one lap get different references", test="result-store-references-unique",
         wrong="reference-from-call-id-and-step"),
    dict(rule="saving the same content twice gives two references", test="result-store-references-unique",
         wrong="reference-is-a-hash-of-the-content"),
    dict(rule="save commits at once: another store on the file sees the result before close()",
         test="result-store-survives-reopen", wrong="commits-only-on-close"),
    dict(rule="references stay unique while two stores have the file open", test="result-store-new-references-after-reopen",
         wrong="numbers-references-from-a-count-taken-at-open"),
    # concept checks Q4 and Q5: every wrong option breaks the one right answer
    dict(rule="Q4: drop file reads after use, keeping a reference, comes first",
         test="q4-check", wrong="buys-a-million-token-window"),
    dict(rule="Q4: drop file reads after use, keeping a reference, comes first",
         test="q4-check", wrong="adds-an-instruction-not-to-re-read"),
    dict(rule="Q4: drop file reads after use, keeping a reference, comes first",
         test="q4-check", wrong="summarises-every-lap"),
    dict(rule="Q5: long-term memory is stored outside the context and retrieved when relevant",
         test="q5-check", wrong="thinks-long-term-memory-is-a-bigger-window"),
    dict(rule="Q5: long-term memory is stored outside the context and retrieved when relevant",
         test="q5-check", wrong="thinks-long-term-memory-is-the-transcript"),
    dict(rule="Q5: long-term memory is stored outside the context and retrieved when relevant",
         test="q5-check", wrong="thinks-the-weights-learn-each-call"),
]

# Concept checks: the wrong options of the questions listed above with fewer (each fails its check).
WRONG_ANSWERS += [
    dict(name="thinks-old-results-are-wrong", cell="q1-answer", source='q1 = "a"', fails=["q1-check"]),
    dict(name="thinks-compressing-recent-results-is-slower", cell="q1-answer", source='q1 = "c"', fails=["q1-check"]),
    dict(name="thinks-old-tokens-cost-less", cell="q1-answer", source='q1 = "d"', fails=["q1-check"]),
    dict(name="thinks-only-content-matters", cell="q2-answer", source='q2 = "a"', fails=["q2-check"]),
    dict(name="thinks-short-messages-are-unreadable", cell="q2-answer", source='q2 = "c"', fails=["q2-check"]),
    dict(name="thinks-tokens-are-counted-twice", cell="q2-answer", source='q2 = "d"', fails=["q2-check"]),
    dict(name="thinks-replaced-results-are-not-needed", cell="q3-answer", source='q3 = "a"', fails=["q3-check"]),
    dict(name="keeps-full-results-in-a-dict", cell="q3-answer", source='q3 = "b"', fails=["q3-check"]),
    dict(name="keeps-full-results-further-down-the-prompt", cell="q3-answer", source='q3 = "c"', fails=["q3-check"]),
]
RULES += [
    dict(rule="Q1: the newest results are needed in full, older ones were acted on", test="q1-check", wrong="thinks-old-results-are-wrong"),
    dict(rule="Q1: the newest results are needed in full, older ones were acted on", test="q1-check", wrong="thinks-compressing-recent-results-is-slower"),
    dict(rule="Q1: the newest results are needed in full, older ones were acted on", test="q1-check", wrong="thinks-old-tokens-cost-less"),
    dict(rule="Q2: compression keeps tool_call_id, or the pair breaks", test="q2-check", wrong="thinks-only-content-matters"),
    dict(rule="Q2: compression keeps tool_call_id, or the pair breaks", test="q2-check", wrong="thinks-short-messages-are-unreadable"),
    dict(rule="Q2: compression keeps tool_call_id, or the pair breaks", test="q2-check", wrong="thinks-tokens-are-counted-twice"),
    dict(rule="Q3: full results live in a durable store", test="q3-check", wrong="thinks-replaced-results-are-not-needed"),
    dict(rule="Q3: full results live in a durable store", test="q3-check", wrong="keeps-full-results-in-a-dict"),
    dict(rule="Q3: full results live in a durable store", test="q3-check", wrong="keeps-full-results-further-down-the-prompt"),
]


# Answers that hand the exercise to ctxlab's own code by a way around the switch-off: each must
# lose the named tests' points, whatever the error (tests/test_lessons.py).
ATTACKS = [
]
ATTACKS += [
    dict(name='compress-history-copies-the-code-object', cell='compress-history', source='''
import types
_c = ctxlab.compress_history
_copy = types.FunctionType(_c.__code__, _c.__globals__, "compress_history", _c.__defaults__, _c.__closure__)
_copy.__kwdefaults__ = dict(_c.__kwdefaults__ or {})
def compress_history(messages, step, keep_full_for=2, max_chars=1_000):
    return _copy(messages, step, keep_full_for=keep_full_for, max_chars=max_chars)
''', fails=['compress-history-visible', 'compress-history-recent-untouched']),
]
ATTACKS += [
    dict(name='opens-ctxlabs-store-lazily', cell='result-store', source='''
class ResultStore:
    def __init__(self, path=":memory:"):
        self.path = path
        self._store = None

    def _get(self):
        if self._store is None:
            self._store = ctxlab.TrajectoryStore(self.path)
        return self._store

    def save(self, message):
        return self._get().append({"role": "user", "content": message["content"]})

    def resolve(self, ref):
        try:
            return self._get().content(ref)
        except ctxlab.CtxlabError:
            raise KeyError(f"no stored result {ref!r}") from None

    def close(self):
        self._get().close()
''', fails=['result-store-visible', 'result-store-resolves']),
]


# Found by grading probes against the stated rules; each now fails the named test.
WRONG_ANSWERS += [
    dict(name='fits-by-utf8-bytes', cell='compress-result', source='''
def compress(result, max_chars):
    """`result` (str, list or dict) as text of at most `max_chars` characters, saying what was cut.

    A result that fits is returned as its text: the string itself, or json.dumps(result).
    Cut text is the longest start that fits plus f"\\\\n[truncated from {len(text):,} chars]"; a
    cut list is json.dumps(result[:k]) for the largest k that fits with
    f"\\\\n[{len(result) - k} more items not shown, {len(result)} in all]". When even the note
    does not fit, its last `max_chars` characters. `result` is not changed.

    >>> compress(list(range(30)), 70)
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\\\\n[20 more items not shown, 30 in all]'
    """
    if isinstance(result, list):
        text = json.dumps(result)
        if len(text) <= max_chars:
            return text
        for k in range(len(result), -1, -1):
            note = f"\\n[{len(result) - k} more items not shown, {len(result)} in all]"
            head = json.dumps(result[:k])
            if len(head) + len(note) <= max_chars:
                return head + note
        return note[-max_chars:]
    text = result if isinstance(result, str) else json.dumps(result)
    if len(text.encode()) <= max_chars:
        return text
    note = f"\\n[truncated from {len(text):,} chars]"
    if len(note) > max_chars:  # no room even for the note: keep its end, which has the numbers
        return note[-max_chars:]
    return text.encode()[: max_chars - len(note)].decode(errors='ignore') + note
''', fails=['compress-fits-unchanged']),
    dict(name='list-never-tries-zero-items', cell='compress-result', source='''
def compress(result, max_chars):
    """`result` (str, list or dict) as text of at most `max_chars` characters, saying what was cut.

    A result that fits is returned as its text: the string itself, or json.dumps(result).
    Cut text is the longest start that fits plus f"\\\\n[truncated from {len(text):,} chars]"; a
    cut list is json.dumps(result[:k]) for the largest k that fits with
    f"\\\\n[{len(result) - k} more items not shown, {len(result)} in all]". When even the note
    does not fit, its last `max_chars` characters. `result` is not changed.

    >>> compress(list(range(30)), 70)
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\\\\n[20 more items not shown, 30 in all]'
    """
    if isinstance(result, list):
        text = json.dumps(result)
        if len(text) <= max_chars:
            return text
        for k in range(len(result), 0, -1):
            note = f"\\n[{len(result) - k} more items not shown, {len(result)} in all]"
            head = json.dumps(result[:k])
            if len(head) + len(note) <= max_chars:
                return head + note
        return note[-max_chars:]
    text = result if isinstance(result, str) else json.dumps(result)
    if len(text) <= max_chars:
        return text
    note = f"\\n[truncated from {len(text):,} chars]"
    if len(note) > max_chars:  # no room even for the note: keep its end, which has the numbers
        return note[-max_chars:]
    return text[: max_chars - len(note)] + note
''', fails=['compress-list-keeps-most-items', 'compress-never-exceeds']),
    dict(name='commits-every-other-save', cell='result-store', source='''
class ResultStore:
    """Full tool results in SQLite: save() returns a reference, resolve() gives the result back."""

    def __init__(self, path=":memory:"):
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS results "
            "(id INTEGER PRIMARY KEY, tool_call_id TEXT, content TEXT NOT NULL)"
        )
        self.db.commit()

    def save(self, message):
        """Store a tool message's content; return its reference (a str)."""
        cursor = self.db.execute(
            "INSERT INTO results (tool_call_id, content) VALUES (?, ?)",
            (message.get("tool_call_id"), message["content"]),
        )
        if cursor.lastrowid % 2 == 1:
            self.db.commit()
        return f"result-{cursor.lastrowid}"

    def resolve(self, ref):
        """The full content a reference names; KeyError when there is none."""
        number = ref.removeprefix("result-") if isinstance(ref, str) else ""
        row = None
        if number.isdigit():
            row = self.db.execute("SELECT content FROM results WHERE id = ?", (int(number),)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]

    def close(self):
        """Close the database."""
        self.db.close()
''', fails=['result-store-survives-reopen']),
    dict(name='empty-content-is-unknown', cell='result-store', source='''
class ResultStore:
    """Full tool results in SQLite: save() returns a reference, resolve() gives the result back."""

    def __init__(self, path=":memory:"):
        self.db = sqlite3.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS results "
            "(id INTEGER PRIMARY KEY, tool_call_id TEXT, content TEXT NOT NULL)"
        )
        self.db.commit()

    def save(self, message):
        """Store a tool message's content; return its reference (a str)."""
        cursor = self.db.execute(
            "INSERT INTO results (tool_call_id, content) VALUES (?, ?)",
            (message.get("tool_call_id"), message["content"]),
        )
        self.db.commit()
        return f"result-{cursor.lastrowid}"

    def resolve(self, ref):
        """The full content a reference names; KeyError when there is none."""
        number = ref.removeprefix("result-") if isinstance(ref, str) else ""
        row = None
        if number.isdigit():
            row = self.db.execute("SELECT content FROM results WHERE id = ?", (int(number),)).fetchone()
        if not row or not row[0]:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]

    def close(self):
        """Close the database."""
        self.db.close()
''', fails=['result-store-returns-the-saved-string']),
    dict(name='tiny-list-cap-tail-of-brackets-and-note', cell='compress-result', source='''
def compress(result, max_chars):
    """`result` (str, list or dict) as text of at most `max_chars` characters, saying what was cut.

    A result that fits is returned as its text: the string itself, or json.dumps(result).
    Cut text is the longest start that fits plus f"\\\\n[truncated from {len(text):,} chars]"; a
    cut list is json.dumps(result[:k]) for the largest k that fits with
    f"\\\\n[{len(result) - k} more items not shown, {len(result)} in all]". When even the note
    does not fit, its last `max_chars` characters. `result` is not changed.

    >>> compress(list(range(30)), 70)
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\\\\n[20 more items not shown, 30 in all]'
    """
    if isinstance(result, list):
        text = json.dumps(result)
        if len(text) <= max_chars:
            return text
        for k in range(len(result), -1, -1):
            note = f"\\n[{len(result) - k} more items not shown, {len(result)} in all]"
            head = json.dumps(result[:k])
            if len(head) + len(note) <= max_chars:
                return head + note
        return (json.dumps(result[:0]) + note)[-max_chars:]
    text = result if isinstance(result, str) else json.dumps(result)
    if len(text) <= max_chars:
        return text
    note = f"\\n[truncated from {len(text):,} chars]"
    if len(note) > max_chars:  # no room even for the note: keep its end, which has the numbers
        return note[-max_chars:]
    return text[: max_chars - len(note)] + note
''', fails=['compress-never-exceeds']),
]
RULES += [
    dict(rule='max_chars counts characters (len(text)), not UTF-8 bytes', test='compress-fits-unchanged', wrong='fits-by-utf8-bytes'),
    dict(rule="k = 0 is a k: when no item fits but '[]' and the note do, return them", test='compress-list-keeps-most-items', wrong='list-never-tries-zero-items'),
    dict(rule='every save() commits at once, not every other one', test='result-store-survives-reopen', wrong='commits-every-other-save'),
    dict(rule="an empty result saved resolves to '', not KeyError", test='result-store-returns-the-saved-string', wrong='empty-content-is-unknown'),
    dict(rule="under a list cap too small for '[]' and the note, the last max_chars characters of the note alone", test='compress-never-exceeds', wrong='tiny-list-cap-tail-of-brackets-and-note'),
]


# A further probe round: each breaks one stated rule and now fails the named test.
WRONG_ANSWERS += [
    dict(name="strips-a-string-that-fits", cell="compress-result",
         source=replaced(compress_with(), "    if len(text) <= max_chars:\n        return text\n    note",
                         "    if len(text.rstrip()) <= max_chars:\n        return text.rstrip()\n    note"),
         fails=["compress-fits-unchanged"]),
    dict(name="list-scan-stops-at-50-items", cell="compress-result",
         source=replaced(compress_with(), "for k in range(len(result), -1, -1):", "for k in range(min(len(result), 50), -1, -1):"),
         fails=["compress-list-keeps-most-items"]),
    dict(name="age-read-before-the-role", cell="compress-history",
         source=history_with(condition='step - message["step"] > keep_full_for and message["role"] == "tool"'),
         fails=["compress-history-non-tool-untouched"]),
    dict(name="default-store-is-a-shared-file", cell="result-store",
         source=replaced(store_with(), 'def __init__(self, path=":memory:"):',
                         'def __init__(self, path=os.path.join(tempfile.gettempdir(), "ctxlab-results-default.sqlite3")):'),
         fails=["result-store-resolves"]),
    dict(name="stores-the-content-as-ascii", cell="result-store",
         source=store_with(save=STORE_PARTS["save"].replace('message["content"])', 'message["content"].encode("ascii", "replace").decode())')),
         fails=["result-store-returns-the-saved-string"]),
]
RULES += [
    dict(rule="a string that fits comes back unchanged, trailing newlines included", test="compress-fits-unchanged",
         wrong="strips-a-string-that-fits"),
    dict(rule="a cut list keeps the largest k, however many items fit", test="compress-list-keeps-most-items",
         wrong="list-scan-stops-at-50-items"),
    dict(rule="only a tool result's age is read: a message without a step is kept as it is",
         test="compress-history-non-tool-untouched", wrong="age-read-before-the-role"),
    dict(rule="ResultStore() with no path is a new, empty store in memory", test="result-store-resolves",
         wrong="default-store-is-a-shared-file"),
    dict(rule="resolve returns exactly the string saved, characters outside ASCII included",
         test="result-store-returns-the-saved-string", wrong="stores-the-content-as-ascii"),
]

# Trivial answers that passed the tests whose property they meet by doing nothing (an unchanged
# history keeps every field; an uncut result leaves its input alone).
WRONG_ANSWERS += [
    dict(name="compress-history-changes-nothing", cell="compress-history",
         source="def compress_history(messages, step, keep_full_for=2, max_chars=1_000):\n    return list(messages)\n",
         fails=["compress-history-recent-untouched", "compress-history-keeps-tool-call-id",
                "compress-history-keeps-other-fields", "compress-history-non-tool-untouched",
                "compress-history-input-unchanged"]),
    dict(name="compress-never-cuts", cell="compress-result",
         source="import json\n\n\ndef compress(result, max_chars):\n    return result if isinstance(result, str) else json.dumps(result)\n",
         fails=["compress-fits-unchanged", "compress-exact-fit-unchanged", "compress-leaves-result-unchanged"]),
]
RULES += [
    dict(rule="old results are compressed while recent ones stay in full", test="compress-history-recent-untouched",
         wrong="compress-history-changes-nothing"),
    dict(rule="a result one character over max_chars is cut", test="compress-exact-fit-unchanged", wrong="compress-never-cuts"),
]

# A later probe round: each broke a stated rule with full marks, and now fails the named test.
WRONG_ANSWERS += [
    dict(name="tiny-cap-of-one-gives-nothing", cell="compress-result",
         source=compress_with(text_tiny="    if len(note) > max_chars:\n        return note[-max_chars:] if max_chars > 1 else \"\""),
         fails=["compress-never-exceeds"]),
    dict(name="cut-list-without-ascii-escapes", cell="compress-result",
         source=replaced(compress_with(), "head = json.dumps(result[:k])", "head = json.dumps(result[:k], ensure_ascii=False)"),
         fails=["compress-list-keeps-most-items"]),
    dict(name="parses-json-results-before-compressing", cell="compress-history", source='''
def compress_history(messages, step, keep_full_for=2, max_chars=1_000):
    out = []
    for message in messages:
        if message["role"] == "tool" and step - message["step"] > keep_full_for:
            content = message["content"]
            try:
                parsed = json.loads(content)
            except (TypeError, ValueError):
                parsed = content
            out.append({**message, "content": ctxlab.compress(parsed, max_chars)})
        else:
            out.append(message)
    return out
''', fails=["compress-history-older-compressed"]),
    dict(name="closed-store-opens-its-file-again", cell="result-store", source='''
class ResultStore:
    def __init__(self, path=":memory:"):
        self.path = path
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, content TEXT NOT NULL)")
        self.db.commit()

    def _conn(self):
        try:
            self.db.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            self.db = sqlite3.connect(self.path)
            self.db.execute("CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, content TEXT NOT NULL)")
        return self.db

    def save(self, message):
        cursor = self._conn().execute("INSERT INTO results (content) VALUES (?)", (message["content"],))
        self.db.commit()
        return f"result-{cursor.lastrowid}"

    def resolve(self, ref):
        number = ref.removeprefix("result-")
        row = None
        if number.isdigit():
            row = self._conn().execute("SELECT content FROM results WHERE id = ?", (int(number),)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]

    def close(self):
        self.db.close()
''', fails=["result-store-close-closes"]),
    dict(name="resolves-a-tool-call-id", cell="result-store", source=store_with(resolve='''        number = ref.removeprefix("result-")
        row = self.db.execute("SELECT content FROM results WHERE id = ? OR tool_call_id = ? ORDER BY id DESC",
                              (number, ref)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''), fails=["result-store-unknown-reference"]),
    dict(name="resolves-any-text-ending-in-the-number", cell="result-store", source=store_with(resolve='''        number = ref.split("-")[-1]
        row = self.db.execute("SELECT content FROM results WHERE id = ?", (number,)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''), fails=["result-store-unknown-reference"]),
    dict(name="resolve-reads-the-digits-anywhere", cell="result-store", source=store_with(resolve='''        digits = "".join(ch for ch in ref if ch.isdigit())
        row = self.db.execute("SELECT content FROM results WHERE id = ?", (int(digits),)).fetchone() if digits else None
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''), fails=["result-store-unknown-reference"]),
    dict(name="resolve-skips-the-first-seven-characters", cell="result-store", source=store_with(resolve='''        row = self.db.execute("SELECT content FROM results WHERE id = ?", (ref[7:],)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''), fails=["result-store-unknown-reference"]),
]
RULES += [
    dict(rule="a cap smaller than the note gives the note's last max_chars characters, a cap of 1 too",
         test="compress-never-exceeds", wrong="tiny-cap-of-one-gives-nothing"),
    dict(rule="a cut list's head is json.dumps with its defaults: its escaped text is what must fit",
         test="compress-list-keeps-most-items", wrong="cut-list-without-ascii-escapes"),
    dict(rule="older results become exactly ctxlab.compress(content, max_chars), JSON text passed as the string",
         test="compress-history-older-compressed", wrong="parses-json-results-before-compressing"),
    dict(rule="after close() the store cannot be used, a store kept in a file too", test="result-store-close-closes",
         wrong="closed-store-opens-its-file-again"),
    dict(rule="a tool_call_id is not a reference: it raises KeyError", test="result-store-unknown-reference",
         wrong="resolves-a-tool-call-id"),
    dict(rule="only references save() returned resolve, not other text ending in the same number",
         test="result-store-unknown-reference", wrong="resolves-any-text-ending-in-the-number"),
    dict(rule="only references save() returned resolve, not any text holding the same digits",
         test="result-store-unknown-reference", wrong="resolve-reads-the-digits-anywhere"),
    dict(rule="only references save() returned resolve, not any text of the same length ending in the number",
         test="result-store-unknown-reference", wrong="resolve-skips-the-first-seven-characters"),
]

# Another probe round: each broke a stated rule with full marks, and now fails the named test.
WRONG_ANSWERS += [
    dict(name="note-gives-the-length-in-bytes", cell="compress-result",
         source=compress_with(text_note='f"\\n[truncated from {len(text.encode()):,} chars]"'),
         fails=["compress-text-says-chars"]),
    dict(name="row-id-alone-is-the-reference", cell="result-store",
         source=store_with(save=STORE_PARTS["save"].replace('return f"result-{cursor.lastrowid}"', "return str(cursor.lastrowid)"),
                           resolve='''        row = self.db.execute("SELECT content FROM results WHERE id = ?", (ref,)).fetchone()
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''), fails=["result-store-unknown-reference"]),
    dict(name="resolve-reads-the-number-with-int", cell="result-store", source=store_with(resolve='''        row = None
        if isinstance(ref, str) and ref.startswith("result-"):
            try:
                row = self.db.execute("SELECT content FROM results WHERE id = ?", (int(ref[7:]),)).fetchone()
            except ValueError:
                row = None
        if row is None:
            raise KeyError(f"no stored result {ref!r}")
        return row[0]'''), fails=["result-store-unknown-reference"]),
]
RULES += [
    dict(rule="the truncated note gives the text's length in characters, not bytes", test="compress-text-says-chars",
         wrong="note-gives-the-length-in-bytes"),
    dict(rule="only the exact string save() returned resolves: not one SQLite reads as the same number",
         test="result-store-unknown-reference", wrong="row-id-alone-is-the-reference"),
    dict(rule="only the exact string save() returned resolves: not one with a space that int() ignores",
         test="result-store-unknown-reference", wrong="resolve-reads-the-number-with-int"),
]

# The judge now hands back the test's own objects where the answer returns them, so identity
# can be asked there as in Python: this answer scored full marks until then.
WRONG_ANSWERS += [
    dict(name="returns-the-input-when-nothing-is-old", cell="compress-history",
         source=history_with().replace(
             "    out = []\n",
             '    if not any(m["role"] == "tool" and step - m["step"] > keep_full_for for m in messages):\n'
             "        return messages  # the input list itself\n    out = []\n"),
         fails=["compress-history-input-unchanged"]),
]
RULES += [
    dict(rule="compress_history returns a new list even when nothing is old enough", test="compress-history-input-unchanged",
         wrong="returns-the-input-when-nothing-is-old"),
]

# The visible tests that check each docstring's example.
RULES += [
    dict(rule="the docstring's example: a cut list keeps its first items and says how many were left out",
         test="compress-visible", wrong="keeps-the-last-items"),
    dict(rule="the docstring's example: the note counts in the cap", test="compress-visible",
         wrong="note-not-counted-in-the-cap"),
    dict(rule="the docstring's example: an old result is compressed, a recent one is not",
         test="compress-history-visible", wrong="compresses-recent-results"),
    dict(rule="the docstring's example: the history given is left as it was", test="compress-history-visible",
         wrong="mutates-the-history"),
    dict(rule="the docstring's example: a saved result resolves by its reference", test="result-store-visible",
         wrong="reference-cannot-be-resolved"),
]

# The words of each exercise's text that state each rule (tests/test_rule_map.py checks them).
_AT_MOST = "It returns a string of at most max_chars characters"
_FITS = "A string that fits (at most max_chars, exactly max_chars included) is returned unchanged"
_CUT = ("A longer one keeps the longest start that fits together with the note f\"\\n[truncated from "
        "{len(text):,} chars]\", and ends with the note")
_AS_TEXT = "A string is always cut as text, even when it holds JSON"
_LIST = ("Otherwise keep the largest number k of leading items such that json.dumps(result[:k]) plus the note "
         "f\"\\n[{len(result) - k} more items not shown, {len(result)} in all]\" fits")
_DEFAULTS = "json.dumps is called with its defaults, so characters outside ASCII are escaped"
_TOO_SMALL = ("When max_chars is too small even for the note (for a list: for [] and its note), return the last "
              "max_chars characters of the note")
_OLDER = "a tool result whose age step - message[\"step\"] is more than keep_full_for gets a new dict"
_COPY = "a copy of the message with content replaced by ctxlab.compress(content, max_chars)"
_OTHER = ("every other message is kept as it is (it may have no step: a new user message has none yet), an "
          "assistant's tool_calls and their arguments included")
_NEW_LIST = "Return a new list, one message per message in the same order, and leave messages unchanged"
_AGE = "Age counts laps from the step you are given, which may be later than the newest message"
_SAVE = ("save(message) stores a tool message's content, commits, and returns a reference: a string that identifies "
         "that saved result, different for every save")
_SHARED = ("two results may share a tool_call_id, even in one lap, or have the same content; real runs reuse "
           "call ids")
_REOPENED = "also after the file is reopened or while another ResultStore has the same file open"
_EXACT = "resolve(ref) returns the stored content, exactly the string that was saved"
_UNKNOWN = ("For a reference that is not in the store, whatever it looks like, raise KeyError with a message that "
            "names it")
_ONLY = "Only the exact strings save returned are references: any other string is unknown"
_CLOSE = "close() closes the connection; the store cannot be used after it"
TAUGHT = {
    # compress
    "a dict is compressed as json.dumps(result)": "A dict: json.dumps(result), then treat it as a string",
    "a result of exactly max_chars fits (<=)": _FITS,
    "a result one character over max_chars is cut": (_FITS, _CUT),
    "a string that fits comes back unchanged, trailing newlines included": _FITS,
    "lists and dicts are written by json.dumps with its defaults (non-ASCII escaped)": _DEFAULTS,
    "max_chars counts characters (len(text)), not UTF-8 bytes": _AT_MOST,
    "the result passed in is not modified": "result itself is left unchanged",
    "a cut list keeps its first items, in order": _LIST,
    "the list note gives the items left out and the total": _LIST,
    "the list note has plain numbers, no thousands separators": "plain numbers in this note, with no thousands separators",
    "a cut list keeps the largest k whose head and note fit (<=)": _LIST,
    "a cut list keeps the largest k, however many items fit": _LIST,
    "a cut list's head is json.dumps with its defaults: its escaped text is what must fit": (
        _DEFAULTS, "that escaped text is what must fit"),
    "k = 0 is a k: when no item fits but '[]' and the note do, return them": "k may be 0: then the text is [] and the note",
    "a cap smaller than the note gives the note's last max_chars characters": _TOO_SMALL,
    "a cap smaller than the note gives the note's last max_chars characters, a cap of 1 too": _TOO_SMALL,
    "never more than max_chars, even when the cap is smaller than the note": (_AT_MOST, _TOO_SMALL),
    "the note counts in the cap: never more than max_chars": (_AT_MOST, _CUT),
    "under a list cap too small for '[]' and the note, the last max_chars characters of the note alone": _TOO_SMALL,
    "a string is cut as text, even when it holds JSON": _AS_TEXT,
    "cut text keeps its start": _CUT,
    "cut text keeps the longest start that fits": _CUT,
    "cut text and lists say that they were cut": (_CUT, _LIST),
    "the original length is written with thousands separators ({:,})": _CUT,
    "the text note gives the original length": _CUT,
    "the truncated note gives the text's length in characters, not bytes": _CUT,
    "the docstring's example: a cut list keeps its first items and says how many were left out": _LIST,
    "the docstring's example: the note counts in the cap": (_AT_MOST, _LIST),
    # compress_history
    "the defaults are keep_full_for=2 and max_chars=1_000":
        "compress_history(messages, step, keep_full_for=2, max_chars=1_000)",
    "compress_history returns a new list even when nothing is old enough": _NEW_LIST,
    "the history passed in is not modified": _NEW_LIST,
    "keep_full_for is used": _OLDER,
    "a compressed result keeps every other field": _COPY,
    "a compressed result keeps its tool_call_id": (_COPY, "In particular tool_call_id must stay"),
    "max_chars is used": _COPY,
    "an assistant's tool calls and their arguments are never changed": _OTHER,
    "messages that are not tool results are never changed": _OTHER,
    "only a tool result's age is read: a message without a step is kept as it is": _OTHER,
    "age is counted from the step given, not from the newest message": _AGE,
    "older results become ctxlab.compress(content, max_chars)": _COPY,
    "older results become exactly ctxlab.compress(content, max_chars), JSON text passed as the string": (
        _COPY, "A tool result's content is a string here"),
    "a result exactly keep_full_for laps old stays in full (>, not >=)": _OLDER,
    "age counts laps, not results: every parallel result of a recent lap stays in full": (_OLDER, _AGE),
    "old results are compressed while recent ones stay in full": _OLDER,
    "the docstring's example: an old result is compressed, a recent one is not": _OLDER,
    "the docstring's example: the history given is left as it was": _NEW_LIST,
    # ResultStore
    "after close() the store cannot be used, a store kept in a file too": _CLOSE,
    "close() closes the connection": _CLOSE,
    "the KeyError names the reference": _UNKNOWN,
    "references stay unique after the file is reopened": (_SAVE, _REOPENED),
    "references stay unique while two stores have the file open": (_SAVE, _REOPENED),
    "every save gets its own reference, even with a shared tool_call_id": (_SAVE, _SHARED),
    "saving the same content twice gives two references": (_SAVE, _SHARED),
    "two saves of one call in one lap get different references": (_SAVE, _SHARED),
    "ResultStore() with no path is a new, empty store in memory": "ResultStore() is a new, empty store in memory",
    "a reference save() returns resolves to its result": _EXACT,
    "an empty result saved resolves to '', not KeyError": _EXACT,
    "resolve returns exactly the string saved, characters outside ASCII included": _EXACT,
    "resolve returns exactly the string that was saved": _EXACT,
    "every save() commits at once, not every other one": _SAVE,
    "opening an existing file keeps its table (CREATE TABLE IF NOT EXISTS)": "creates its table if it is not there yet",
    "results are kept in the database file, not in memory": "opens (or creates) the database at path",
    "save commits": _SAVE,
    "save commits at once: another store on the file sees the result before close()": _SAVE,
    "a malformed reference raises KeyError too": _UNKNOWN,
    "a tool_call_id is not a reference: it raises KeyError": (_ONLY, "a call's tool_call_id"),
    "an unknown reference raises KeyError whatever it looks like, one that reads as SQL too": _UNKNOWN,
    "an unknown reference raises KeyError, not another error": _UNKNOWN,
    "an unknown reference raises, it does not return None": _UNKNOWN,
    "only references save() returned resolve, not any text holding the same digits": _ONLY,
    "only references save() returned resolve, not any text of the same length ending in the number": _ONLY,
    "only references save() returned resolve, not other text ending in the same number": _ONLY,
    "only the exact string save() returned resolves: not one SQLite reads as the same number": (
        _ONLY, "a reference with a space or .0 added (which SQLite or int() may read as the same number)"),
    "only the exact string save() returned resolves: not one with a space that int() ignores": (
        _ONLY, "a reference with a space or .0 added"),
    "the docstring's example: a saved result resolves by its reference": _EXACT,
    # concept checks: the lesson's text that makes the right answer right
    "Q1: the newest results are needed in full, older ones were acted on": (
        "A result from this lap may need all of it, because the agent is reasoning about it now",
        "A result from eight laps ago has already been acted on"),
    "Q2: compression keeps tool_call_id, or the pair breaks": "In particular tool_call_id must stay, or the API rejects the request",
    "Q3: full results live in a durable store": "It must be durable, which means a database file written to disk and committed",
    "Q4: drop file reads after use, keeping a reference, comes first": (
        "Replace each with a one-line reference stub", "every full message is written to a trajectory store"),
    "Q5: long-term memory is stored outside the context and retrieved when relevant": (
        "is kept there and retrieved into a prompt only when a lap needs it"),
}
