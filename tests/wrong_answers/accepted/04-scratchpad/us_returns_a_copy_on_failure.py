# cell: update-scratchpad
# exercise: Exercise 2 (update_scratchpad)
# desc: records a failure in pad, in place, but returns an equal copy of pad instead of pad itself
def update_scratchpad(pad, call, result):
    """Record one tool call and its result in `pad` (in place) and return `pad`.

    >>> pad = update_scratchpad(ctxlab.Scratchpad(goal="g"),
    ...     {"id": "c1", "type": "function", "function": {"name": "fetch_pdf", "arguments": "{}"}},
    ...     '{"error": "http_403", "message": "paywall"}')
    >>> pad.failed
    {'fetch_pdf {}': 'http_403: paywall'}
    """
    ### BEGIN SOLUTION
    import copy

    key = f"{call['function']['name']} {call['function']['arguments']}"
    data = result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except json.JSONDecodeError:
            data = result
    if isinstance(data, dict) and data.get("error"):
        reason = f"{data['error']}: {data['message']}" if data.get("message") else str(data["error"])
        pad.failed.setdefault(key, reason)
        return copy.copy(pad)  # wrong: an equal copy, not pad itself
    pad.failed.pop(key, None)
    text = result if isinstance(result, str) else json.dumps(result)
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    pad.done.append(f"{key} -> {first_line[:80]}")
    return pad
    ### END SOLUTION
