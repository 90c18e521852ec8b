# cell: compress-history
# exercise: Exercise 2 (compress_history)
# desc: returns the input list itself, not a new list, when no tool result is old enough to compress
def compress_history(messages, step, keep_full_for=2, max_chars=1_000):
    """A new list: tool results older than `keep_full_for` laps compressed, all else unchanged.

    >>> old = {"role": "tool", "tool_call_id": "c1", "content": "x" * 5_000, "step": 1}
    >>> len(compress_history([old], step=9)[0]["content"]) <= 1_000
    True
    """
    ### BEGIN SOLUTION
    if not any(m["role"] == "tool" and step - m["step"] > keep_full_for for m in messages):
        return messages  # wrong: the input list itself, not a new list
    out = []
    for message in messages:
        if message["role"] == "tool" and step - message["step"] > keep_full_for:
            out.append({**message, "content": ctxlab.compress(message["content"], max_chars)})
        else:
            out.append(message)
    return out
    ### END SOLUTION
