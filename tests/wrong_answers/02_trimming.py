"""Known wrong answers for lesson 02-trimming; each must fail the named tests when graded."""

FIT_GROUPS = '''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pinned = {pinned}
    sizes = [sum(count(m) for m in group) for group in groups]
    keep = {{g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}}
    keep |= set(range(max(0, len(groups) - keep_recent), len(groups)))
    needed = sum(sizes[g] for g in keep)
    if needed > allowance:
        raise ctxlab.BudgetError(f"need {{needed}} tokens, allowance {{allowance}}")
    room = allowance - needed
    for g in {order}:
        if g in keep:
            continue
        if sizes[g] > room:
            break
        keep.add(g)
        room -= sizes[g]
{assemble}
'''
PINS = "{id(messages[i]) for i in ctxlab.pinned_indices(messages)}"
IN_ORDER = """    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped"""

WRONG_ANSWERS = [
    dict(
        name="cuts-by-message-count",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    sizes = [count(m) for m in messages]
    head = 2  # the system prompt and the task
    keep_last = len(messages) - head
    while keep_last > 1 and sum(sizes[:head]) + sum(sizes[-keep_last:]) > allowance:
        keep_last -= 1
    kept = list(messages[:head]) + list(messages[-keep_last:])
    dropped = list(messages[head:len(messages) - keep_last])
    return kept, dropped
''',
        fails=["fit-keeps-turn-groups-whole"],
    ),
    dict(
        name="drops-the-first-user-message",
        cell="fit-history",
        source=FIT_GROUPS.format(
            pinned='{id(m) for m in messages if m["role"] == "system" or m.get("pinned")}',
            order="range(len(groups) - 1, -1, -1)",
            assemble=IN_ORDER,
        ),
        fails=["fit-keeps-pins"],
    ),
    dict(
        name="splits-a-parallel-call-group",
        cell="turn-groups",
        source='''
def turn_groups(messages):
    groups = []
    for message in messages:
        if message["role"] == "tool" and groups and len(groups[-1]) == 1 and groups[-1][0].get("tool_calls"):
            groups[-1].append(message)  # a call and its result: one pair
        else:
            groups.append([message])
    return groups
''',
        fails=["turn-groups-parallel-calls"],
    ),
    dict(
        name="reorders-pins-to-the-front",
        cell="fit-history",
        source=FIT_GROUPS.format(
            pinned=PINS,
            order="range(len(groups) - 1, -1, -1)",
            assemble="""    pinned_first = sorted(keep, key=lambda g: (not any(id(m) in pinned for m in groups[g]), g))
    kept = [m for g in pinned_first for m in groups[g]]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped""",
        ),
        fails=["fit-preserves-order"],
    ),
    dict(
        name="drops-the-newest",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    kept, dropped, used = [], [], 0
    for group in groups:  # oldest first, while they fit
        size = sum(count(m) for m in group)
        if used + size <= allowance:
            kept += group
            used += size
        else:
            dropped += group
    return kept, dropped
''',
        fails=["fit-keeps-the-newest"],
    ),
    dict(
        name="recounts-tokens-quadratically",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pinned = {id(messages[i]) for i in ctxlab.pinned_indices(messages)}
    keep = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}
    keep |= set(range(max(0, len(groups) - keep_recent), len(groups)))

    def total(chosen):
        return sum(count(m) for g in chosen for m in groups[g])

    if total(keep) > allowance:
        raise ctxlab.BudgetError(f"need {total(keep)} tokens, allowance {allowance}")
    for g in range(len(groups) - 1, -1, -1):
        if g in keep:
            continue
        if total(keep | {g}) > allowance:
            break
        keep.add(g)
    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''',
        fails=["fit-counts-each-message-once"],
    ),
    dict(
        name="trims-every-step-to-the-high-mark",
        cell="high-low-trim",
        source='''
def high_low_trim(view, *, high, low, count=None):
    count = count or ctxlab.count_message
    if sum(count(m) for m in view) <= high:
        return list(view), []
    return ctxlab.fit(view, high, count=count)
''',
        fails=["high-low-trims-to-low"],
    ),
    dict(
        name="trims-whenever-over-the-low-mark",
        cell="high-low-trim",
        source='''
def high_low_trim(view, *, high, low, count=None):
    count = count or ctxlab.count_message
    if sum(count(m) for m in view) <= low:
        return list(view), []
    return ctxlab.fit(view, low, count=count)
''',
        fails=["high-low-waits-for-high-mark"],
    ),
    dict(
        name="pairs-ok-accepts-any-earlier-call",
        cell="pairs-ok",
        source='''
def pairs_ok(messages):
    asked = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            asked.add(call["id"])
        if message["role"] == "tool" and message.get("tool_call_id") not in asked:
            return False
    return True
''',
        fails=["pairs-ok-result-follows-its-call", "pairs-ok-unanswered-call"],
    ),
]
