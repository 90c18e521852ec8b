"""Known wrong answers for lesson 05-age-compression; each must fail the named tests when graded."""

COMPRESS = '''
def compress(result, max_chars):
    if isinstance(result, list):
        text = json.dumps(result)
        if len(text) <= max_chars:
            return text
        for k in range(len(result), -1, -1):
            note = {list_note}
            head = json.dumps(result[:k])
            if {list_fits}:
                return head + note
        return ""
    text = result if isinstance(result, str) else json.dumps(result)
    if len(text) <= max_chars:
        return text
    note = {text_note}
    return text[: {keep}] + note
'''
LIST_NOTE = 'f"\\n[{len(result) - k} more items not shown, {len(result)} in all]"'
TEXT_NOTE = 'f"\\n[truncated from {len(text):,} chars]"'

HISTORY = '''
def compress_history(messages, step, keep_full_for=2, max_chars=1_000):
    out = []
    for message in messages:
        if {condition}:
            {action}
        else:
            out.append(message)
    return out
'''
OLD_TOOL = 'message["role"] == "tool" and step - message["step"] > keep_full_for'
COPY = 'out.append({**message, "content": ctxlab.compress(message["content"], max_chars)})'

STORE = '''
class ResultStore:
    def __init__(self, path=":memory:"):
        {init}

    def save(self, message):
        {save}

    def resolve(self, ref):
        {resolve}

    def close(self):
        {close}
'''
SQL_INIT = """self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, tool_call_id TEXT, content TEXT)")"""
SQL_RESOLVE = """row = self.db.execute("SELECT content FROM results WHERE id = ?", (ref,)).fetchone() if str(ref).isdigit() else None
        if row is None:
            raise KeyError(ref)
        return row[0]"""

WRONG_ANSWERS = [
    dict(
        name="cuts-without-saying-what",
        cell="compress-result",
        source=COMPRESS.format(list_note='""', list_fits="len(head) <= max_chars", text_note='""', keep="max_chars"),
        fails=["compress-list-counts-items", "compress-text-says-chars"],
    ),
    dict(
        name="note-not-counted-in-the-cap",
        cell="compress-result",
        source=COMPRESS.format(list_note=LIST_NOTE, list_fits="len(head) <= max_chars", text_note=TEXT_NOTE, keep="max_chars"),
        fails=["compress-never-exceeds"],
    ),
    dict(
        name="compresses-recent-results",
        cell="compress-history",
        source=HISTORY.format(condition='message["role"] == "tool" and step - message["step"] >= keep_full_for', action=COPY),
        fails=["compress-history-recent-untouched"],
    ),
    dict(
        name="loses-tool-call-id",
        cell="compress-history",
        source=HISTORY.format(
            condition=OLD_TOOL,
            action='out.append({"role": "tool", "content": ctxlab.compress(message["content"], max_chars), "step": message["step"]})',
        ),
        fails=["compress-history-keeps-tool-call-id"],
    ),
    dict(
        name="touches-user-and-system-messages",
        cell="compress-history",
        source=HISTORY.format(
            condition='isinstance(message.get("content"), str) and step - message["step"] > keep_full_for',
            action=COPY,
        ),
        fails=["compress-history-non-tool-untouched"],
    ),
    dict(
        name="mutates-the-history",
        cell="compress-history",
        source=HISTORY.format(
            condition=OLD_TOOL,
            action='message["content"] = ctxlab.compress(message["content"], max_chars)\n            out.append(message)',
        ),
        fails=["compress-history-input-unchanged"],
    ),
    dict(
        name="reference-cannot-be-resolved",
        cell="result-store",
        source=STORE.format(
            init=SQL_INIT,
            save="""self.db.execute("INSERT INTO results (tool_call_id, content) VALUES (?, ?)", (message["tool_call_id"], message["content"]))
        self.db.commit()
        return message["tool_call_id"]""",
            resolve=SQL_RESOLVE,
            close="self.db.close()",
        ),
        fails=["result-store-resolves", "result-store-survives-reopen"],
    ),
    dict(
        name="store-never-commits",
        cell="result-store",
        source=STORE.format(
            init=SQL_INIT,
            save="""return str(self.db.execute("INSERT INTO results (tool_call_id, content) VALUES (?, ?)", (message.get("tool_call_id"), message["content"])).lastrowid)""",
            resolve=SQL_RESOLVE,
            close="self.db.close()",
        ),
        fails=["result-store-survives-reopen"],
    ),
    dict(
        name="store-only-in-memory",
        cell="result-store",
        source=STORE.format(
            init="self.results = {}",
            save="""ref = f"result-{len(self.results)}"
        self.results[ref] = message["content"]
        return ref""",
            resolve="return self.results[ref]",
            close="pass",
        ),
        fails=["result-store-survives-reopen"],
    ),
]
