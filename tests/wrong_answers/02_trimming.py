"""Known wrong answers for lesson 02-trimming; each must fail the named tests when graded.

Each wrong answer breaks one rule of an exercise (``RULES`` at the end maps every rule to the
test that checks it and to a wrong answer that breaks only that rule).
"""

from string import Template

# --- turn_groups ---------------------------------------------------------------------------------

TURN_GROUPS = Template('''
def turn_groups(messages):
    groups = []
    for message in messages:
        opened_by_call = $opened
        if message["role"] == "tool" and opened_by_call:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups
''')


def turn_groups_with(opened: str) -> str:
    return TURN_GROUPS.substitute(opened=opened)


# --- pairs_ok ------------------------------------------------------------------------------------

PAIRS_OK = Template('''
def pairs_ok(messages):
    waiting = set()  # ids of the current group's calls that have no result yet
    for message in messages:
        if message["role"] == "tool":
$on_result
            continue
$on_turn
    return $at_end
''')
ON_RESULT = '''            if message.get("tool_call_id") not in waiting:
                return False
            waiting.discard(message["tool_call_id"])'''
ON_TURN = '''        if waiting:
            return False  # a new turn started while calls were still unanswered
        if message["role"] == "assistant":
            ids = [call.get("id") for call in message.get("tool_calls") or []]
            waiting = set(ids)
            if len(waiting) < len(ids):
                return False  # one id listed twice: the message itself is malformed'''


def pairs_ok_with(on_result: str = ON_RESULT, on_turn: str = ON_TURN, at_end: str = "not waiting") -> str:
    return PAIRS_OK.substitute(on_result=on_result, on_turn=on_turn, at_end=at_end)


# --- fit: the reference solution, with one part swapped out at a time ----------------------------

FIT = Template('''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = $default
    groups = ctxlab.turn_groups(messages)
    pinned = $pinned
    sizes = [sum(count(m) for m in group) for group in groups]

    keep = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}
    keep |= $recent
    needed = sum(sizes[g] for g in keep)
    if needed $over allowance:
$refuse
    room = allowance - $reserved
    for g in $order:
        if g in keep:
            continue
        if sizes[g] $over room:
$misfit
        keep.add(g)
        room -= sizes[g]
$assemble
''')
FIT_PARTS = dict(
    default="count or ctxlab.count_message",
    pinned="{id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}",
    recent="set(range(max(0, len(groups) - keep_recent), len(groups)))",
    over=">",
    refuse='''        raise ctxlab.BudgetError(
            f"the pins and the newest {keep_recent} group(s) need {needed} tokens, "
            f"but the allowance is {allowance}"
        )''',
    reserved="needed",
    order="range(len(groups) - 1, -1, -1)",
    misfit="            break",
    assemble='''    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped''',
)


def fit_with(**changes: str) -> str:
    assert set(changes) <= set(FIT_PARTS), set(changes) - set(FIT_PARTS)
    return FIT.substitute({**FIT_PARTS, **changes})


# --- high_low_trim and count_trims ---------------------------------------------------------------

HIGH_LOW = Template('''
def high_low_trim(view, *, high, low, count=None):
    count = count or ctxlab.count_message
    if sum($measure(m) for m in view) $within high:
        return list(view), []
    return ctxlab.fit(view, $target$pass_count)
''')


def high_low_with(measure="count", within="<=", target="low", pass_count=", count=count") -> str:
    return HIGH_LOW.substitute(measure=measure, within=within, target=target, pass_count=pass_count)


COUNT_TRIMS = Template('''
def count_trims(history, *, high, low, trim=None):
    trim = $default
    view, seen, trims = [], 0, 0
    for i, message in enumerate(history):
        if message["role"] != "assistant":
            continue
$grow
        seen = i
        kept, dropped = trim(view, high=high, low=low)
        view = list(kept)
$tally
$after
    return trims
''')
COUNT_TRIMS_PARTS = dict(
    default="trim or high_low_trim",
    grow="        view += history[seen:i]",
    tally="        if dropped:\n            trims += 1",
    after="",
)


def count_trims_with(**changes: str) -> str:
    assert set(changes) <= set(COUNT_TRIMS_PARTS), set(changes) - set(COUNT_TRIMS_PARTS)
    return COUNT_TRIMS.substitute({**COUNT_TRIMS_PARTS, **changes})


WRONG_ANSWERS = [
    # turn_groups ----------------------------------------------------------------------------------
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
        fails=["turn-groups-visible", "turn-groups-parallel-calls"],
    ),
    dict(
        name="keeps-the-reply-with-the-call-group",
        cell="turn-groups",
        source='''
def turn_groups(messages):
    groups = []
    for message in messages:
        in_a_call = groups and groups[-1][0]["role"] == "assistant" and groups[-1][0].get("tool_calls")
        if in_a_call and message["role"] != "user" and not message.get("tool_calls"):
            groups[-1].append(message)  # everything up to the next question or call
        else:
            groups.append([message])
    return groups
''',
        fails=["turn-groups-other-messages-alone"],
    ),
    dict(
        name="joins-every-tool-message-to-the-previous-group",
        cell="turn-groups",
        source=turn_groups_with(opened="bool(groups)"),
        fails=["turn-groups-stray-tool-alone"],
    ),
    dict(
        name="treats-a-tool-calls-key-as-a-call",
        cell="turn-groups",
        source=turn_groups_with(opened='groups and groups[-1][0]["role"] == "assistant" and "tool_calls" in groups[-1][0]'),
        fails=["turn-groups-stray-tool-alone"],
    ),
    dict(
        name="forgets-the-last-group",
        cell="turn-groups",
        source='''
def turn_groups(messages):
    groups, current = [], []
    for message in messages:
        if message["role"] == "tool" and current and current[0]["role"] == "assistant" and current[0].get("tool_calls"):
            current.append(message)
        else:
            if current:
                groups.append(current)
            current = [message]
    return groups
''',
        fails=["turn-groups-visible", "turn-groups-partition"],
    ),
    dict(
        name="joins-a-stray-to-the-stray-before-it",
        cell="turn-groups",
        source='''
def turn_groups(messages):
    groups = []
    for message in messages:
        prev = groups[-1][-1] if groups else None
        joins = prev is not None and message["role"] == "tool" and (
            prev["role"] == "tool" or (prev["role"] == "assistant" and prev.get("tool_calls")))
        if joins:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups
''',
        fails=["turn-groups-stray-tool-alone"],
    ),
    dict(
        name="joins-only-results-whose-id-matches",
        cell="turn-groups",
        source='''
def turn_groups(messages):
    groups = []
    ids = set()
    for message in messages:
        if message["role"] == "tool" and message.get("tool_call_id") in ids:
            groups[-1].append(message)
            continue
        groups.append([message])
        ids = {c.get("id") for c in (message.get("tool_calls") or [])} if message["role"] == "assistant" else set()
    return groups
''',
        fails=["turn-groups-parallel-calls"],
    ),
    dict(
        name="keeps-the-last-call-group-open",
        cell="turn-groups",
        source='''
def turn_groups(messages):
    groups = []
    current = None  # the group of the last call seen: never closed again
    for message in messages:
        if message["role"] == "tool" and current is not None:
            current.append(message)
            continue
        group = [message]
        groups.append(group)
        if message["role"] == "assistant" and message.get("tool_calls"):
            current = group
    return groups
''',
        fails=["turn-groups-stray-tool-alone"],
    ),
    # pairs_ok -------------------------------------------------------------------------------------
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
        fails=["pairs-ok-visible", "pairs-ok-result-follows-its-call"],
    ),
    dict(
        name="pairs-ok-ignores-orphan-results",
        cell="pairs-ok",
        source=pairs_ok_with(on_result='            waiting.discard(message.get("tool_call_id"))'),
        fails=["pairs-ok-visible"],
    ),
    dict(
        name="pairs-ok-accepts-a-second-answer",
        cell="pairs-ok",
        source='''
def pairs_ok(messages):
    calls, answered = set(), set()
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in calls:
                return False
            answered.add(message["tool_call_id"])
            continue
        if calls - answered:
            return False
        calls = {c["id"] for c in message.get("tool_calls") or []} if message["role"] == "assistant" else set()
        answered = set()
    return not (calls - answered)
''',
        fails=["pairs-ok-answered-once"],
    ),
    dict(
        name="pairs-ok-true-at-the-end",
        cell="pairs-ok",
        source=pairs_ok_with(at_end="True"),
        fails=["pairs-ok-visible"],
    ),
    dict(
        name="pairs-ok-forgets-open-calls-at-the-next-turn",
        cell="pairs-ok",
        source=pairs_ok_with(on_turn='''        waiting = {call["id"] for call in message.get("tool_calls") or []} if message["role"] == "assistant" else set()'''),
        fails=["pairs-ok-unanswered-before-next-turn"],
    ),
    dict(
        name="pairs-ok-merges-interleaved-calls",
        cell="pairs-ok",
        source=pairs_ok_with(on_turn='''        if message["role"] == "assistant":
            waiting |= {call["id"] for call in message.get("tool_calls") or []}
        elif waiting:
            return False'''),
        fails=["pairs-ok-interleaved-calls"],
    ),
    dict(
        name="pairs-ok-remembers-every-answered-id",
        cell="pairs-ok",
        source=pairs_ok_with(on_result='''            if message.get("tool_call_id") not in waiting or message["tool_call_id"] in answered:
                return False
            waiting.discard(message["tool_call_id"])
            answered.add(message["tool_call_id"])''').replace(
            "    waiting = set()  #", "    answered = set()  # every id answered so far, in the whole history\n    waiting = set()  #"),
        fails=["pairs-ok-reused-call-id"],
    ),
    dict(
        name="pairs-ok-wants-each-result-right-after-the-call",
        cell="pairs-ok",
        source='''
def pairs_ok(messages):
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            before = messages[i - 1] if i else {}
            ids = [c["id"] for c in before.get("tool_calls") or []]
            if before.get("role") != "assistant" or message.get("tool_call_id") not in ids:
                return False
        elif message.get("tool_calls"):
            answers = messages[i + 1:i + 1 + len(message["tool_calls"])]
            if len(answers) < len(message["tool_calls"]) or any(a["role"] != "tool" for a in answers):
                return False
    return True
''',
        fails=["pairs-ok-visible", "pairs-ok-real-transcripts"],
    ),
    dict(
        name="pairs-ok-accepts-one-id-listed-twice",
        cell="pairs-ok",
        source=pairs_ok_with(on_turn='''        if waiting:
            return False
        if message["role"] == "assistant":
            waiting = {call["id"] for call in message.get("tool_calls") or []}  # [a, a] is {a}'''),
        fails=["pairs-ok-answered-once"],
    ),
    dict(
        name="pairs-ok-raises-without-a-call-id",
        cell="pairs-ok",
        source=pairs_ok_with(on_result='''            if message["tool_call_id"] not in waiting:
                return False
            waiting.remove(message["tool_call_id"])'''),
        fails=["pairs-ok-result-follows-its-call"],
    ),
    dict(
        name="pairs-ok-ignores-system-messages",
        cell="pairs-ok",
        source=pairs_ok_with(on_turn='''        if message["role"] not in ("user", "assistant"):
            continue  # only a user or an assistant message starts a new turn
''' + ON_TURN),
        fails=["pairs-ok-result-follows-its-call"],
    ),
    dict(
        name="pairs-ok-accepts-a-partial-last-group",
        cell="pairs-ok",
        source=pairs_ok_with(
            on_result=ON_RESULT + "\n            answered += 1",
            on_turn="        answered = 0\n" + ON_TURN,
            at_end="not waiting or answered > 0  # the other results are still coming",
        ).replace("    waiting = set()  #", "    answered = 0\n    waiting = set()  #"),
        fails=["pairs-ok-unanswered-before-next-turn"],
    ),
    dict(
        name="pairs-ok-crashes-on-tool-calls-none",
        cell="pairs-ok",
        source=pairs_ok_with(on_turn=ON_TURN.replace('message.get("tool_calls") or []', 'message.get("tool_calls", [])')),
        fails=["pairs-ok-real-transcripts"],
    ),
    # fit ------------------------------------------------------------------------------------------
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
        fails=["fit-visible", "fit-keeps-turn-groups-whole"],
    ),
    dict(
        name="drops-the-first-user-message",
        cell="fit-history",
        source=fit_with(pinned='{id(m) for m in messages if m["role"] == "system" or m.get("pinned")}'),
        fails=["fit-visible", "fit-keeps-system-and-task"],
    ),
    dict(
        name="pins-the-first-two-messages",
        cell="fit-history",
        source=fit_with(pinned="{id(m) for m in messages[:2]}"),
        fails=["fit-visible", "fit-keeps-system-and-task"],
    ),
    dict(
        name="ignores-the-pinned-flag",
        cell="fit-history",
        source=fit_with(pinned='''{id(m) for m in messages if m["role"] == "system"} | {
        id(next(m for m in messages if m["role"] == "user"))}'''),
        fails=["fit-keeps-marked-pins"],
    ),
    dict(
        name="keeps-a-pin-without-its-group",
        cell="fit-history",
        source=fit_with(
            pinned="{id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}",
            assemble='''    alone = {id(m) for g, group in enumerate(groups) if g not in keep for m in group if id(m) in pinned}
    kept = [m for g, group in enumerate(groups) for m in group if g in keep and id(m) not in alone or id(m) in alone]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group if id(m) not in alone]
    return kept, dropped''',
        ).replace(
            "keep = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}",
            "keep = {g for g, group in enumerate(groups) if id(group[0]) in pinned and len(group) == 1}",
        ).replace(
            "needed = sum(sizes[g] for g in keep)",
            "needed = sum(sizes[g] for g in keep) + sum(count(m) for m in messages if id(m) in pinned and not any(m is group[0] and len(group) == 1 for group in groups))",
        ),
        fails=["fit-keeps-marked-pins"],
    ),
    dict(
        name="reorders-pins-to-the-front",
        cell="fit-history",
        source=fit_with(assemble='''    pinned_first = sorted(keep, key=lambda g: (not any(id(m) in pinned for m in groups[g]), g))
    kept = [m for g in pinned_first for m in groups[g]]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped'''),
        fails=["fit-preserves-order"],
    ),
    dict(
        name="lists-dropped-newest-first",
        cell="fit-history",
        source=fit_with(assemble='''    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g in range(len(groups) - 1, -1, -1) if g not in keep for m in groups[g]]
    return kept, dropped'''),
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
        fails=["fit-visible", "fit-keeps-the-newest"],
    ),
    dict(
        name="fills-oldest-first",
        cell="fit-history",
        source=fit_with(order="range(len(groups))"),
        fails=["fit-fills-newest-first"],
    ),
    dict(
        name="skips-a-big-group-and-keeps-going",
        cell="fit-history",
        source=fit_with(misfit="            continue  # try the older, smaller ones"),
        fails=["fit-stops-at-first-misfit"],
    ),
    dict(
        name="ignores-keep-recent",
        cell="fit-history",
        source=fit_with(recent="{len(groups) - 1}"),
        fails=["fit-keep-recent-groups"],
    ),
    dict(
        name="keep-recent-counts-messages",
        cell="fit-history",
        source=fit_with(recent="{g for g, group in enumerate(groups) if any(m is last for m in group for last in messages[-keep_recent:])}"),
        fails=["fit-keep-recent-groups"],
    ),
    dict(
        name="room-ignores-the-pins",
        cell="fit-history",
        source=fit_with(reserved="sum(sizes[g] for g in range(max(0, len(groups) - keep_recent), len(groups)))"),
        fails=["fit-visible", "fit-within-allowance"],
    ),
    dict(
        name="estimates-tokens-from-characters",
        cell="fit-history",
        source=fit_with(default='count or (lambda m: len(json.dumps(m)) // 4)'),
        fails=["fit-visible", "fit-counts-tokens-by-default"],
    ),
    dict(
        name="needs-room-to-spare",
        cell="fit-history",
        source=fit_with(over=">=").replace("if needed >= allowance", "if needed > allowance"),
        fails=["fit-allowance-is-inclusive"],
    ),
    dict(
        name="reserves-reply-priming-in-fit",
        cell="fit-history",
        source=fit_with(reserved="needed - 3").replace("room = allowance - needed - 3", "room = allowance - 3 - needed").replace(
            "if needed > allowance", "if needed + 3 > allowance"),
        fails=["fit-allowance-is-inclusive"],
    ),
    dict(
        name="ignores-count",
        cell="fit-history",
        source=fit_with(default="ctxlab.count_message"),
        fails=["fit-uses-count"],
    ),
    dict(
        name="recounts-tokens-quadratically",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pinned = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
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
        name="dropped-holds-only-the-misfit",
        cell="fit-history",
        source=fit_with(
            misfit="            misfit = g\n            break",
            assemble='''    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = list(groups[misfit]) if "misfit" in locals() else []
    return kept, dropped''',
        ),
        fails=["fit-visible", "fit-partitions-input"],
    ),
    dict(
        name="trims-the-input-in-place",
        cell="fit-history",
        source=fit_with(assemble='''    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    messages[:] = [m for g, group in enumerate(groups) if g in keep for m in group]  # the trimmed history
    return messages, dropped'''),
        fails=["fit-visible", "fit-leaves-input-unchanged"],
    ),
    dict(
        name="returns-the-pins-when-nothing-fits",
        cell="fit-history",
        source=fit_with(refuse="        pass  # keep what must be kept anyway"),
        fails=["fit-refuses-impossible"],
    ),
    dict(
        name="raises-value-error",
        cell="fit-history",
        source=fit_with(refuse='''        raise ValueError(f"need {needed} tokens, but the allowance is {allowance}")'''),
        fails=["fit-refuses-impossible"],
    ),
    dict(
        name="budget-error-without-numbers",
        cell="fit-history",
        source=fit_with(refuse='''        raise ctxlab.BudgetError("the history does not fit in the allowance")'''),
        fails=["fit-error-gives-numbers"],
    ),
    dict(
        name="stops-at-a-pinned-group",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pinned = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
    sizes = [sum(count(m) for m in group) for group in groups]
    pinned_groups = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}
    keep = set(pinned_groups) | set(range(max(0, len(groups) - keep_recent), len(groups)))
    needed = sum(sizes[g] for g in keep)
    if needed > allowance:
        raise ctxlab.BudgetError(f"need {needed} tokens, allowance {allowance}")
    room = allowance - needed
    for g in range(len(groups) - 1, -1, -1):
        if g in pinned_groups:
            break  # the pins are where the kept history starts
        if g in keep:
            continue
        if sizes[g] > room:
            break
        keep.add(g)
        room -= sizes[g]
    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''',
        fails=["fit-fills-newest-first"],
    ),
    dict(
        name="pays-for-a-middle-pin-twice",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pinned = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
    sizes = [sum(count(m) for m in group) for group in groups]
    keep = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}
    newest = set(range(max(0, len(groups) - keep_recent), len(groups)))
    keep |= newest
    needed = sum(sizes[g] for g in keep)
    if needed > allowance:
        raise ctxlab.BudgetError(f"need {needed} tokens, allowance {allowance}")
    room = allowance - needed
    for g in range(len(groups) - 1, -1, -1):
        if g in newest:
            continue
        if g in keep:
            room -= sizes[g]  # a pin on the way: paid for again
            continue
        if sizes[g] > room:
            break
        keep.add(g)
        room -= sizes[g]
    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''',
        fails=["fit-fills-newest-first"],
    ),
    dict(
        name="counts-a-pinned-newest-group-twice",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pin_ids = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
    sizes = [sum(count(m) for m in group) for group in groups]
    pinned_groups = {g for g, group in enumerate(groups) if any(id(m) in pin_ids for m in group)}
    newest = set(range(max(0, len(groups) - keep_recent), len(groups)))
    needed = sum(sizes[g] for g in pinned_groups) + sum(sizes[g] for g in newest)
    if needed > allowance:
        raise ctxlab.BudgetError(f"the pins and the newest groups need {needed} tokens, allowance {allowance}")
    room = allowance - needed
    keep = pinned_groups | newest
    for g in range(len(groups) - 1, -1, -1):
        if g in keep:
            continue
        if sizes[g] > room:
            break
        keep.add(g)
        room -= sizes[g]
    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''',
        fails=["fit-allowance-is-inclusive"],
    ),
    dict(
        name="sizes-a-pin-without-its-group",
        cell="fit-history",
        source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    tokens = {id(m): count(m) for m in messages}
    pin_ids = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
    pinned_groups = {g for g, group in enumerate(groups) if any(id(m) in pin_ids for m in group)}
    newest = set(range(max(0, len(groups) - keep_recent), len(groups))) - pinned_groups
    needed = sum(tokens[i] for i in pin_ids) + sum(tokens[id(m)] for g in newest for m in groups[g])
    if needed > allowance:
        raise ctxlab.BudgetError(f"need {needed} tokens, allowance {allowance}")
    room = allowance - needed
    keep = pinned_groups | newest
    for g in range(len(groups) - 1, -1, -1):
        if g in keep:
            continue
        size = sum(tokens[id(m)] for m in groups[g])
        if size > room:
            break
        keep.add(g)
        room -= size
    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''',
        fails=["fit-within-allowance"],
    ),
    # high_low_trim --------------------------------------------------------------------------------
    dict(
        name="trims-every-step-to-the-high-mark",
        cell="high-low-trim",
        source=high_low_with(target="high"),
        fails=["high-low-visible", "high-low-trims-to-low"],
    ),
    dict(
        name="trims-whenever-over-the-low-mark",
        cell="high-low-trim",
        source=high_low_with(within="<= low and 0 <="),
        fails=["high-low-visible", "high-low-waits-for-high-mark"],
    ),
    dict(
        name="trims-at-the-high-mark",
        cell="high-low-trim",
        source=high_low_with(within="<"),
        fails=["high-low-high-mark-inclusive"],
    ),
    dict(
        name="measures-with-the-default-count",
        cell="high-low-trim",
        source=high_low_with(measure="ctxlab.count_message"),
        fails=["high-low-uses-count"],
    ),
    dict(
        name="fits-with-the-default-count",
        cell="high-low-trim",
        source=high_low_with(pass_count=""),
        fails=["high-low-uses-count"],
    ),
    dict(
        name="falls-back-to-the-high-mark",
        cell="high-low-trim",
        source='''
def high_low_trim(view, *, high, low, count=None):
    count = count or ctxlab.count_message
    if sum(count(m) for m in view) <= high:
        return list(view), []
    try:
        return ctxlab.fit(view, low, count=count)
    except ctxlab.BudgetError:
        return ctxlab.fit(view, high, count=count)  # the low mark is impossible: the high one will do
''',
        fails=["high-low-trims-to-low"],
    ),
    dict(
        name="sends-the-untrimmed-view-when-fit-refuses",
        cell="high-low-trim",
        source='''
def high_low_trim(view, *, high, low, count=None):
    count = count or ctxlab.count_message
    if sum(count(m) for m in view) <= high:
        return list(view), []
    try:
        return ctxlab.fit(view, low, count=count)
    except ctxlab.BudgetError:
        return list(view), []
''',
        fails=["high-low-trims-to-low"],
    ),
    dict(
        name="trims-the-view-in-place",
        cell="high-low-trim",
        source='''
def high_low_trim(view, *, high, low, count=None):
    count = count or ctxlab.count_message
    if sum(count(m) for m in view) <= high:
        return view, []
    kept, dropped = ctxlab.fit(view, low, count=count)
    view[:] = kept
    return view, dropped
''',
        fails=["high-low-trims-to-low"],
    ),
    # count_trims ----------------------------------------------------------------------------------
    dict(
        name="trims-the-whole-history-each-lap",
        cell="count-trims",
        source=count_trims_with(grow="        view = list(history[:i])  # the whole run so far"),
        fails=["count-trims-visible", "count-trims-replay"],
    ),
    dict(
        name="puts-the-call-in-its-own-view",
        cell="count-trims",
        source=count_trims_with(grow="        view += history[seen:i + 1]").replace("        seen = i\n", "        seen = i + 1\n"),
        fails=["count-trims-visible", "count-trims-view-carries-over"],
    ),
    dict(
        name="ignores-the-trim-argument",
        cell="count-trims",
        source=count_trims_with(default="high_low_trim"),
        fails=["count-trims-uses-trim"],
    ),
    dict(
        name="trims-once-more-after-the-last-call",
        cell="count-trims",
        source=count_trims_with(after='''    view += history[seen:]
    if trim(view, high=high, low=low)[1]:
        trims += 1'''),
        fails=["count-trims-uses-trim"],
    ),
    dict(
        name="counts-dropped-messages",
        cell="count-trims",
        source=count_trims_with(tally="        trims += len(dropped)"),
        fails=["count-trims-visible", "count-trims-counts-laps-that-dropped"],
    ),
    dict(
        name="counts-every-lap-over-the-low-mark",
        cell="count-trims",
        source=count_trims_with(tally="        if dropped or sum(map(ctxlab.count_message, view)) > low:\n            trims += 1"),
        fails=["count-trims-visible", "count-trims-counts-laps-that-dropped"],
    ),
    dict(
        name="default-trim-fits-to-the-high-mark",
        cell="count-trims",
        source=count_trims_with(default="trim or (lambda view, high, low: ctxlab.fit(view, high))"),
        fails=["count-trims-default-trim"],
    ),
    dict(
        name="skips-a-call-with-an-empty-view",
        cell="count-trims",
        source=count_trims_with(grow="        view += history[seen:i]\n        if not view:\n            continue  # nothing to trim yet"),
        fails=["count-trims-uses-trim"],
    ),
    # concept checks Q4 and Q5: every wrong option
    dict(name="thinks-last-n-holds-what-the-step-needs", cell="q4-answer", source='q4 = "a"', fails=["q4-check"]),
    dict(name="thinks-agents-restate-the-task", cell="q4-answer", source='q4 = "b"', fails=["q4-check"]),
    dict(name="thinks-last-n-only-wastes-the-cache", cell="q4-answer", source='q4 = "c"', fails=["q4-check"]),
    dict(name="keeps-raw-tool-payloads", cell="q5-answer", source='q5 = "b"', fails=["q5-check"]),
    dict(name="drops-constraints-for-being-old", cell="q5-answer", source='q5 = "c"', fails=["q5-check"]),
    dict(name="keeps-the-longest-messages", cell="q5-answer", source='q5 = "d"', fails=["q5-check"]),
]

RULES = [
    # turn_groups
    dict(rule="an assistant call and all of its results, parallel calls included, are one group",
         test="turn-groups-parallel-calls", wrong="splits-a-parallel-call-group"),
    dict(rule="every message that is not a tool result starts a group of its own",
         test="turn-groups-other-messages-alone", wrong="keeps-the-reply-with-the-call-group"),
    dict(rule="a tool message with no assistant call just before it stands alone",
         test="turn-groups-stray-tool-alone", wrong="joins-every-tool-message-to-the-previous-group"),
    dict(rule="a group opens only where tool_calls is a non-empty list (None and [] are no calls)",
         test="turn-groups-stray-tool-alone", wrong="treats-a-tool-calls-key-as-a-call"),
    dict(rule="the groups, joined, are the input: every message, in order",
         test="turn-groups-partition", wrong="forgets-the-last-group"),
    dict(rule="a tool message after a stray tool message stands alone too",
         test="turn-groups-stray-tool-alone", wrong="joins-a-stray-to-the-stray-before-it"),
    dict(rule="every tool message after a call joins its group, whatever its tool_call_id",
         test="turn-groups-parallel-calls", wrong="joins-only-results-whose-id-matches"),
    dict(rule="a message that is not a tool result closes the call's group: a later tool message stands alone, in its place",
         test="turn-groups-stray-tool-alone", wrong="keeps-the-last-call-group-open"),
    # pairs_ok
    dict(rule="a tool result with no call before it is not paired",
         test="pairs-ok-visible", wrong="pairs-ok-ignores-orphan-results"),
    dict(rule="a call never answered (at the end of the history) is not paired",
         test="pairs-ok-visible", wrong="pairs-ok-true-at-the-end"),
    dict(rule="a result must be in the group of the assistant message that made its call",
         test="pairs-ok-result-follows-its-call", wrong="pairs-ok-accepts-any-earlier-call"),
    dict(rule="each call is answered exactly once",
         test="pairs-ok-answered-once", wrong="pairs-ok-accepts-a-second-answer"),
    dict(rule="a call still open when the next turn starts is not paired",
         test="pairs-ok-unanswered-before-next-turn", wrong="pairs-ok-forgets-open-calls-at-the-next-turn"),
    dict(rule="a second assistant call before the first is answered is not paired",
         test="pairs-ok-interleaved-calls", wrong="pairs-ok-merges-interleaved-calls"),
    dict(rule="pairing is checked group by group: a later call may reuse an id",
         test="pairs-ok-reused-call-id", wrong="pairs-ok-remembers-every-answered-id"),
    dict(rule="valid histories (parallel results one after another) are accepted",
         test="pairs-ok-real-transcripts", wrong="pairs-ok-wants-each-result-right-after-the-call"),
    dict(rule="the calls of one assistant message have different ids: a message listing one id twice is malformed",
         test="pairs-ok-answered-once", wrong="pairs-ok-accepts-one-id-listed-twice"),
    dict(rule="a tool message without tool_call_id answers no call: False, not an error",
         test="pairs-ok-result-follows-its-call", wrong="pairs-ok-raises-without-a-call-id"),
    dict(rule="a system or developer message between a call and its result breaks the pair",
         test="pairs-ok-result-follows-its-call", wrong="pairs-ok-ignores-system-messages"),
    dict(rule="a call still unanswered when the history ends is not paired, even if others of its group are",
         test="pairs-ok-unanswered-before-next-turn", wrong="pairs-ok-accepts-a-partial-last-group"),
    dict(rule='"tool_calls": None is no call: such a reply is paired (True, not an error)',
         test="pairs-ok-real-transcripts", wrong="pairs-ok-crashes-on-tool-calls-none"),
    # fit
    dict(rule="groups are never split", test="fit-keeps-turn-groups-whole", wrong="cuts-by-message-count"),
    dict(rule="the first user message (the task) is pinned",
         test="fit-keeps-system-and-task", wrong="drops-the-first-user-message"),
    dict(rule="every system message is pinned, wherever the task is",
         test="fit-keeps-system-and-task", wrong="pins-the-first-two-messages"),
    dict(rule='a message marked "pinned": True is kept', test="fit-keeps-marked-pins", wrong="ignores-the-pinned-flag"),
    dict(rule="a pinned message is kept with its whole turn group",
         test="fit-keeps-marked-pins", wrong="keeps-a-pin-without-its-group"),
    dict(rule="kept is in input order, pins included", test="fit-preserves-order", wrong="reorders-pins-to-the-front"),
    dict(rule="dropped is in input order", test="fit-preserves-order", wrong="lists-dropped-newest-first"),
    dict(rule="the newest turn group is always kept", test="fit-keeps-the-newest", wrong="drops-the-newest"),
    dict(rule="older groups are added newest first", test="fit-fills-newest-first", wrong="fills-oldest-first"),
    dict(rule="a pinned group in the middle does not stop the walk to older groups",
         test="fit-fills-newest-first", wrong="stops-at-a-pinned-group"),
    dict(rule="a pinned group in the middle is paid for once, not again when the walk reaches it",
         test="fit-fills-newest-first", wrong="pays-for-a-middle-pin-twice"),
    dict(rule="a group both pinned and newest (the task on the first lap) is counted once",
         test="fit-allowance-is-inclusive", wrong="counts-a-pinned-newest-group-twice"),
    dict(rule="a pinned message's whole turn group counts toward the allowance",
         test="fit-within-allowance", wrong="sizes-a-pin-without-its-group"),
    dict(rule="the first group that does not fit and every older unpinned group are dropped",
         test="fit-stops-at-first-misfit", wrong="skips-a-big-group-and-keeps-going"),
    dict(rule="keep_recent=k keeps the newest k groups (or refuses)",
         test="fit-keep-recent-groups", wrong="ignores-keep-recent"),
    dict(rule="keep_recent counts turn groups, not messages",
         test="fit-keep-recent-groups", wrong="keep-recent-counts-messages"),
    dict(rule="the kept messages, pins included, take at most the allowance",
         test="fit-within-allowance", wrong="room-ignores-the-pins"),
    dict(rule="the default count is ctxlab.count_message (tokens)",
         test="fit-counts-tokens-by-default", wrong="estimates-tokens-from-characters"),
    dict(rule="a group fits when its tokens are at most the room left (<=)",
         test="fit-allowance-is-inclusive", wrong="needs-room-to-spare"),
    dict(rule="the whole allowance is for messages: reply priming is not taken from it",
         test="fit-allowance-is-inclusive", wrong="reserves-reply-priming-in-fit"),
    dict(rule="messages are measured with the given count", test="fit-uses-count", wrong="ignores-count"),
    dict(rule="count is called once per message", test="fit-counts-each-message-once", wrong="recounts-tokens-quadratically"),
    dict(rule="kept and dropped together hold every input message once",
         test="fit-partitions-input", wrong="dropped-holds-only-the-misfit"),
    dict(rule="the input list is left unchanged", test="fit-leaves-input-unchanged", wrong="trims-the-input-in-place"),
    dict(rule="an impossible allowance raises, instead of returning an oversized history",
         test="fit-refuses-impossible", wrong="returns-the-pins-when-nothing-fits"),
    dict(rule="the error is ctxlab.BudgetError", test="fit-refuses-impossible", wrong="raises-value-error"),
    dict(rule="the BudgetError gives the tokens needed and the allowance",
         test="fit-error-gives-numbers", wrong="budget-error-without-numbers"),
    # high_low_trim
    dict(rule="over the high mark, trim down to the low mark", test="high-low-trims-to-low",
         wrong="trims-every-step-to-the-high-mark"),
    dict(rule="between the marks nothing is trimmed", test="high-low-waits-for-high-mark",
         wrong="trims-whenever-over-the-low-mark"),
    dict(rule="exactly at the high mark nothing is trimmed (<=)", test="high-low-high-mark-inclusive",
         wrong="trims-at-the-high-mark"),
    dict(rule="the view is measured with the given count", test="high-low-uses-count", wrong="measures-with-the-default-count"),
    dict(rule="count is passed on to fit", test="high-low-uses-count", wrong="fits-with-the-default-count"),
    dict(rule="when fit cannot reach the low mark, its BudgetError is let out (no other mark)",
         test="high-low-trims-to-low", wrong="falls-back-to-the-high-mark"),
    dict(rule="when fit cannot reach the low mark, its BudgetError is let out (not the untrimmed view)",
         test="high-low-trims-to-low", wrong="sends-the-untrimmed-view-when-fit-refuses"),
    dict(rule="the view given to high_low_trim is left unchanged",
         test="high-low-trims-to-low", wrong="trims-the-view-in-place"),
    # count_trims
    dict(rule="the view carries over: it is what the last trim kept plus the new messages",
         test="count-trims-replay", wrong="trims-the-whole-history-each-lap"),
    dict(rule="the view stops before the assistant message about to be sent",
         test="count-trims-view-carries-over", wrong="puts-the-call-in-its-own-view"),
    dict(rule="the given trim is the one called", test="count-trims-uses-trim", wrong="ignores-the-trim-argument"),
    dict(rule="trim is called once per model call, not after the last one",
         test="count-trims-uses-trim", wrong="trims-once-more-after-the-last-call"),
    dict(rule="a lap counts once however many messages it dropped",
         test="count-trims-counts-laps-that-dropped", wrong="counts-dropped-messages"),
    dict(rule="only laps where the trim dropped something count",
         test="count-trims-counts-laps-that-dropped", wrong="counts-every-lap-over-the-low-mark"),
    dict(rule="without trim, count_trims uses high_low_trim", test="count-trims-default-trim",
         wrong="default-trim-fits-to-the-high-mark"),
    dict(rule="a model call whose view is empty (the run opens with an assistant message) is trimmed too",
         test="count-trims-uses-trim", wrong="skips-a-call-with-an-empty-view"),
    # concept checks Q4 and Q5: every wrong option breaks the one right answer
    dict(rule="Q4: last-N drops the task, orphans results and ignores tokens",
         test="q4-check", wrong="thinks-last-n-holds-what-the-step-needs"),
    dict(rule="Q4: last-N drops the task, orphans results and ignores tokens",
         test="q4-check", wrong="thinks-agents-restate-the-task"),
    dict(rule="Q4: last-N drops the task, orphans results and ignores tokens",
         test="q4-check", wrong="thinks-last-n-only-wastes-the-cache"),
    dict(rule="Q5: rules, goal, plan, unresolved errors and constraints always survive",
         test="q5-check", wrong="keeps-raw-tool-payloads"),
    dict(rule="Q5: rules, goal, plan, unresolved errors and constraints always survive",
         test="q5-check", wrong="drops-constraints-for-being-old"),
    dict(rule="Q5: rules, goal, plan, unresolved errors and constraints always survive",
         test="q5-check", wrong="keeps-the-longest-messages"),
]

# Concept checks: the wrong options of the questions listed above with fewer (each fails its check).
WRONG_ANSWERS += [
    dict(name="thinks-an-orphaned-result-is-harmless", cell="q1-answer", source='q1 = "a"', fails=["q1-check"]),
    dict(name="thinks-the-model-reruns-the-tool", cell="q1-answer", source='q1 = "c"', fails=["q1-check"]),
    dict(name="thinks-the-api-drops-orphans", cell="q1-answer", source='q1 = "d"', fails=["q1-check"]),
    dict(name="pins-the-last-tool-result", cell="q2-answer", source='q2 = "a"', fails=["q2-check"]),
    dict(name="pins-the-longest-result", cell="q2-answer", source='q2 = "c"', fails=["q2-check"]),
    dict(name="thinks-the-oldest-always-goes-first", cell="q2-answer", source='q2 = "d"', fails=["q2-check"]),
    dict(name="thinks-deep-trims-always-send-less", cell="q3-answer", source='q3 = "a"', fails=["q3-check"]),
    dict(name="thinks-shorter-prompts-are-the-reason", cell="q3-answer", source='q3 = "b"', fails=["q3-check"]),
    dict(name="thinks-the-api-limits-trims", cell="q3-answer", source='q3 = "d"', fails=["q3-check"]),
]
RULES += [
    dict(rule="Q1: an orphaned tool result makes the provider reject the request", test="q1-check", wrong="thinks-an-orphaned-result-is-harmless"),
    dict(rule="Q1: an orphaned tool result makes the provider reject the request", test="q1-check", wrong="thinks-the-model-reruns-the-tool"),
    dict(rule="Q1: an orphaned tool result makes the provider reject the request", test="q1-check", wrong="thinks-the-api-drops-orphans"),
    dict(rule="Q2: the first user message states the task and is pinned", test="q2-check", wrong="pins-the-last-tool-result"),
    dict(rule="Q2: the first user message states the task and is pinned", test="q2-check", wrong="pins-the-longest-result"),
    dict(rule="Q2: the first user message states the task and is pinned", test="q2-check", wrong="thinks-the-oldest-always-goes-first"),
    dict(rule="Q3: rare deep trims keep the prefix stable for the cache", test="q3-check", wrong="thinks-deep-trims-always-send-less"),
    dict(rule="Q3: rare deep trims keep the prefix stable for the cache", test="q3-check", wrong="thinks-shorter-prompts-are-the-reason"),
    dict(rule="Q3: rare deep trims keep the prefix stable for the cache", test="q3-check", wrong="thinks-the-api-limits-trims"),
]

# Answers that hand an exercise to ctxlab's own code by a way around the reference switch-off:
# each must lose the named tests' points.
ATTACKS = [
    dict(
        name="turn-groups-from-the-private-span-helper",
        cell="turn-groups",
        source='''
import importlib


def turn_groups(messages):
    spans, _ = getattr(importlib.import_module("ctxlab.trimming"), "_spans_and_pinned_groups")(messages)
    return [list(messages[a:b]) for a, b in spans]
''',
        fails=["turn-groups-visible", "turn-groups-parallel-calls", "turn-groups-other-messages-alone",
               "turn-groups-stray-tool-alone", "turn-groups-partition"],
    ),
]

WRONG_ANSWERS += [
    dict(name='own-budgeterror-class', cell='fit-history', source='''
class BudgetError(Exception):
    pass


def fit(messages, allowance, *, keep_recent=1, count=None):
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pinned = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
    sizes = [sum(count(m) for m in group) for group in groups]
    keep = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}
    keep |= set(range(max(0, len(groups) - keep_recent), len(groups)))
    needed = sum(sizes[g] for g in keep)
    if needed > allowance:
        raise BudgetError(f"need {needed} tokens, allowance {allowance}")
    room = allowance - needed
    for g in range(len(groups) - 1, -1, -1):
        if g in keep:
            continue
        if sizes[g] > room:
            break
        keep.add(g)
        room -= sizes[g]
    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''', fails=['fit-refuses-impossible', 'fit-error-gives-numbers']),
]
RULES += [
    dict(rule="the refusal is ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name", test='fit-refuses-impossible', wrong='own-budgeterror-class'),
]
ATTACKS += [
    dict(name='fit-copies-the-code-object', cell='fit-history', source='''
import types
_f = ctxlab.fit
_copy = types.FunctionType(_f.__code__, _f.__globals__, "fit", _f.__defaults__, _f.__closure__)
_copy.__kwdefaults__ = dict(_f.__kwdefaults__)
def fit(messages, allowance, *, keep_recent=1, count=None):
    return _copy(messages, allowance, keep_recent=keep_recent, count=count)
''', fails=['fit-visible', 'fit-keeps-system-and-task']),
]
ATTACKS += [
    dict(name='pairs-ok-copies-the-code-object', cell='pairs-ok', source='''
import types
pairs_ok = types.FunctionType(ctxlab.pairs_ok.__code__, ctxlab.pairs_ok.__globals__, "pairs_ok")
''', fails=['pairs-ok-visible', 'pairs-ok-answered-once']),
]

WRONG_ANSWERS += [
    dict(name='pairs-ok-counts-results-per-group', cell='pairs-ok', source='''
def pairs_ok(messages):
    calls, answers = [], 0  # the current group's call ids, and how many results it has had
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in calls:
                return False
            answers += 1
            continue
        if answers != len(calls):
            return False
        calls, answers = [], 0
        if message["role"] == "assistant":
            calls = [call.get("id") for call in message.get("tool_calls") or []]
            if len(set(calls)) < len(calls):
                return False
    return answers == len(calls)
''', fails=['pairs-ok-answered-once']),
    dict(name='pairs-ok-wants-results-in-call-order', cell='pairs-ok', source='''
def pairs_ok(messages):
    expected = []  # the ids still to be answered, in the order of the calls
    for message in messages:
        if message["role"] == "tool":
            if not expected or message.get("tool_call_id") != expected[0]:
                return False
            expected.pop(0)
            continue
        if expected:
            return False
        if message["role"] == "assistant":
            expected = [call.get("id") for call in message.get("tool_calls") or []]
            if len(set(expected)) < len(expected):
                return False
    return not expected
''', fails=['pairs-ok-real-transcripts']),
    dict(name='pairs-ok-raises-on-a-call-without-an-id', cell='pairs-ok', source='''
def pairs_ok(messages):
    """True when every tool result answers a call of the assistant message just before its
    group, and every call is answered exactly once before the next message that is not a tool
    result; False otherwise (never an error). The calls of one assistant message have different
    ids: a message listing one id twice is malformed (False). Pairing is checked group by
    group, so a later assistant message may reuse an earlier call's id.

    >>> call = {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]}
    >>> result = {"role": "tool", "tool_call_id": "a", "content": "1"}
    >>> pairs_ok([call, result]), pairs_ok([result]), pairs_ok([call])
    (True, False, False)
    """
    waiting = set()  # ids of the current group's calls that have no result yet
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in waiting:
                return False
            waiting.discard(message["tool_call_id"])
            continue
        if waiting:
            return False  # a new turn started while calls were still unanswered
        if message["role"] == "assistant":
            ids = [call["id"] for call in message.get("tool_calls") or []]
            waiting = set(ids)
            if len(waiting) < len(ids):
                return False  # one id listed twice: the message itself is malformed
    return not waiting
''', fails=['pairs-ok-result-follows-its-call']),
    dict(name='pins-only-the-leading-system-messages', cell='fit-history', source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    """Return (kept, dropped): the messages that fit in `allowance` tokens, and the rest.

    - every pinned message (ctxlab.trimming.pinned_indices: system messages, the first user message,
      any message marked "pinned": True) is kept, with its whole turn group;
    - the newest `keep_recent` turn groups are kept;
    - then older groups, newest first, while they fit; the first that does not fit and every
      older unpinned group are dropped (a pinned group on the way is already kept and counted
      once: it does not stop the walk);
    - a message's tokens are count(m), with count = ctxlab.count_message by default, called
      once per message; the kept messages, each pinned group whole, take at most `allowance`
      tokens (exactly is fine);
    - groups are never split; kept and dropped are each in input order and together hold every
      input message once; `messages` itself is left unchanged;
    - raise ctxlab.BudgetError, giving the tokens needed and the allowance, when the pins and
      the newest groups alone exceed `allowance`.

    >>> msgs = [{"role": "user", "content": "goal"}, {"role": "assistant", "content": "a" * 40},
    ...         {"role": "assistant", "content": "b"}]
    >>> kept, dropped = fit(msgs, allowance=16)
    >>> [m["content"][:1] for m in kept], [m["content"][:1] for m in dropped]
    (['g', 'b'], ['a'])
    """
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    head = 0
    while head < len(messages) and messages[head]["role"] == "system":
        head += 1
    first_user = next((i for i, m in enumerate(messages) if m["role"] == "user"), None)
    pinned = {id(m) for i, m in enumerate(messages) if i < head or i == first_user or m.get("pinned") is True}
    sizes = [sum(count(m) for m in group) for group in groups]  # each message counted once

    keep = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}
    keep |= set(range(max(0, len(groups) - keep_recent), len(groups)))
    needed = sum(sizes[g] for g in keep)
    if needed > allowance:
        raise ctxlab.BudgetError(
            f"the pins and the newest {keep_recent} group(s) need {needed} tokens, "
            f"but the allowance is {allowance}"
        )
    room = allowance - needed
    for g in range(len(groups) - 1, -1, -1):  # newest first
        if g in keep:
            continue
        if sizes[g] > room:
            break  # everything older (and unpinned) is dropped: the cut is in the middle
        keep.add(g)
        room -= sizes[g]

    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''', fails=['fit-keeps-system-and-task']),
    dict(name='keep-recent-looks-past-a-pinned-newest-group', cell='fit-history', source='''
def fit(messages, allowance, *, keep_recent=1, count=None):
    """Return (kept, dropped): the messages that fit in `allowance` tokens, and the rest.

    - every pinned message (ctxlab.trimming.pinned_indices: system messages, the first user message,
      any message marked "pinned": True) is kept, with its whole turn group;
    - the newest `keep_recent` turn groups are kept;
    - then older groups, newest first, while they fit; the first that does not fit and every
      older unpinned group are dropped (a pinned group on the way is already kept and counted
      once: it does not stop the walk);
    - a message's tokens are count(m), with count = ctxlab.count_message by default, called
      once per message; the kept messages, each pinned group whole, take at most `allowance`
      tokens (exactly is fine);
    - groups are never split; kept and dropped are each in input order and together hold every
      input message once; `messages` itself is left unchanged;
    - raise ctxlab.BudgetError, giving the tokens needed and the allowance, when the pins and
      the newest groups alone exceed `allowance`.

    >>> msgs = [{"role": "user", "content": "goal"}, {"role": "assistant", "content": "a" * 40},
    ...         {"role": "assistant", "content": "b"}]
    >>> kept, dropped = fit(msgs, allowance=16)
    >>> [m["content"][:1] for m in kept], [m["content"][:1] for m in dropped]
    (['g', 'b'], ['a'])
    """
    count = count or ctxlab.count_message
    groups = ctxlab.turn_groups(messages)
    pinned = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
    sizes = [sum(count(m) for m in group) for group in groups]  # each message counted once

    keep = {g for g, group in enumerate(groups) if any(id(m) in pinned for m in group)}
    keep |= set([g for g in range(len(groups)) if g not in keep][-keep_recent:])
    needed = sum(sizes[g] for g in keep)
    if needed > allowance:
        raise ctxlab.BudgetError(
            f"the pins and the newest {keep_recent} group(s) need {needed} tokens, "
            f"but the allowance is {allowance}"
        )
    room = allowance - needed
    for g in range(len(groups) - 1, -1, -1):  # newest first
        if g in keep:
            continue
        if sizes[g] > room:
            break  # everything older (and unpinned) is dropped: the cut is in the middle
        keep.add(g)
        room -= sizes[g]

    kept = [m for g, group in enumerate(groups) if g in keep for m in group]
    dropped = [m for g, group in enumerate(groups) if g not in keep for m in group]
    return kept, dropped
''', fails=['fit-keep-recent-groups']),
]
RULES += [
    dict(rule='each call is answered exactly once: as many results as calls, each for some call of the group, is not enough', test='pairs-ok-answered-once', wrong='pairs-ok-counts-results-per-group'),
    dict(rule='the results of a parallel call may come in any order', test='pairs-ok-real-transcripts', wrong='pairs-ok-wants-results-in-call-order'),
    dict(rule='pairs_ok never raises, also on a call with no id', test='pairs-ok-result-follows-its-call', wrong='pairs-ok-raises-on-a-call-without-an-id'),
    dict(rule='every system message is pinned, one later in the history too', test='fit-keeps-system-and-task', wrong='pins-only-the-leading-system-messages'),
    dict(rule='keep_recent counts the newest groups by position, a pinned one included', test='fit-keep-recent-groups', wrong='keep-recent-looks-past-a-pinned-newest-group'),
]

# Probed again: each passed every test before the test named in it checked the rule.
WRONG_ANSWERS += [
    dict(name="tags-each-message-with-its-group", cell="turn-groups",
         source=turn_groups_with(opened='groups and groups[-1][0]["role"] == "assistant" and groups[-1][0].get("tool_calls")').replace(
             "            groups.append([message])\n    return groups",
             '            groups.append([message])\n        message["group"] = len(groups) - 1  # where it went\n    return groups'),
         fails=["turn-groups-partition"]),
    dict(name="an-empty-history-has-an-empty-group", cell="turn-groups", source='''
def turn_groups(messages):
    groups, current = [], []
    for message in messages:
        if message["role"] == "tool" and current and current[0]["role"] == "assistant" and current[0].get("tool_calls"):
            current.append(message)
        else:
            if current:
                groups.append(current)
            current = [message]
    groups.append(current)  # the last group
    return groups
''', fails=["turn-groups-partition"]),
    dict(name="pins-by-equal-content", cell="fit-history",
         source=fit_with(pinned="[messages[i] for i in ctxlab.trimming.pinned_indices(messages)]").replace(
             "if any(id(m) in pinned for m in group)", "if any(m in pinned for m in group)"),
         fails=["fit-stops-at-first-misfit"]),
    dict(name="assembles-kept-by-equal-content", cell="fit-history",
         source=fit_with(assemble='''    chosen = [m for g in keep for m in groups[g]]
    kept = [m for m in messages if m in chosen]
    dropped = [m for m in messages if m not in chosen]
    return kept, dropped'''),
         fails=["fit-stops-at-first-misfit"]),
    dict(name="keep-recent-past-the-start-goes-negative", cell="fit-history",
         source=fit_with(recent="set(range(len(groups) - keep_recent, len(groups)))"),
         fails=["fit-keep-recent-groups"]),
    dict(name="sorts-by-step", cell="fit-history",
         source=fit_with(assemble='''    kept = sorted((m for g in keep for m in groups[g]), key=lambda m: m.get("step", 0))
    dropped = sorted((m for g, group in enumerate(groups) if g not in keep for m in group), key=lambda m: m.get("step", 0))
    return kept, dropped'''),
         fails=["fit-preserves-order"]),
    dict(name="rebuilds-dropped-by-equal-content", cell="high-low-trim", source='''
def high_low_trim(view, *, high, low, count=None):
    count = count or ctxlab.count_message
    if sum(count(m) for m in view) <= high:
        return list(view), []
    kept, _ = ctxlab.fit(view, low, count=count)
    return kept, [m for m in view if m not in kept]
''', fails=["high-low-trims-to-low"]),
]
RULES += [
    dict(rule="turn_groups leaves the messages as they were", test="turn-groups-partition",
         wrong="tags-each-message-with-its-group"),
    dict(rule="an empty history has no groups (every group holds a message)", test="turn-groups-partition",
         wrong="an-empty-history-has-an-empty-group"),
    dict(rule="only the first user message is the task: a later copy of it is elastic", test="fit-stops-at-first-misfit",
         wrong="pins-by-equal-content"),
    dict(rule="an older group that repeats a kept message word for word is still dropped past the misfit",
         test="fit-stops-at-first-misfit", wrong="assembles-kept-by-equal-content"),
    dict(rule="keep_recent above the number of groups keeps them all", test="fit-keep-recent-groups",
         wrong="keep-recent-past-the-start-goes-negative"),
    dict(rule="kept and dropped follow input positions, not steps (a message may have no step)",
         test="fit-preserves-order", wrong="sorts-by-step"),
    dict(rule="high_low_trim returns fit's dropped as it is", test="high-low-trims-to-low",
         wrong="rebuilds-dropped-by-equal-content"),
]

# Constant and trivial answers: each passed the tests whose property they meet by doing nothing
# (an empty kept list is in order and within the allowance), before those tests checked both ways.
WRONG_ANSWERS += [
    dict(name="pairs-ok-always-false", cell="pairs-ok", source="def pairs_ok(messages):\n    return False\n",
         fails=["pairs-ok-result-follows-its-call", "pairs-ok-answered-once", "pairs-ok-unanswered-before-next-turn",
                "pairs-ok-interleaved-calls"]),
    dict(name="pairs-ok-always-true", cell="pairs-ok", source="def pairs_ok(messages):\n    return True\n",
         fails=["pairs-ok-reused-call-id", "pairs-ok-real-transcripts"]),
    dict(name="fit-drops-everything", cell="fit-history",
         source="def fit(messages, allowance, *, keep_recent=1, count=None):\n    return [], list(messages)\n",
         fails=["fit-keeps-turn-groups-whole", "fit-preserves-order", "fit-within-allowance", "fit-leaves-input-unchanged"]),
    dict(name="high-low-never-trims", cell="high-low-trim",
         source="def high_low_trim(view, *, high, low, count=None):\n    return list(view), []\n",
         fails=["high-low-waits-for-high-mark"]),
    dict(name="turn-groups-each-message-alone", cell="turn-groups",
         source="def turn_groups(messages):\n    return [[m] for m in messages]\n", fails=["turn-groups-partition"]),
]
RULES += [
    dict(rule="a call answered once, in its own group, is paired (each pairing rule holds both ways)",
         test="pairs-ok-result-follows-its-call", wrong="pairs-ok-always-false"),
    dict(rule="a result answers a call of its own group only, not an id used earlier", test="pairs-ok-reused-call-id",
         wrong="pairs-ok-always-true"),
    dict(rule="when the pins and the newest group fit, they are kept", test="fit-within-allowance",
         wrong="fit-drops-everything"),
    dict(rule="a view over the high mark is trimmed", test="high-low-waits-for-high-mark", wrong="high-low-never-trims"),
    dict(rule="a call's results share its group: there are fewer groups than messages", test="turn-groups-partition",
         wrong="turn-groups-each-message-alone"),
]

# Edge cases of the pins and of pairing: each passed every test before the test named in it checked the rule.
WRONG_ANSWERS += [
    dict(name="pins-a-false-pinned-mark", cell="fit-history",
         source=fit_with(pinned='{id(m) for i, m in enumerate(messages) if m["role"] == "system" or "pinned" in m '
                                'or i == next((j for j, x in enumerate(messages) if x["role"] == "user"), -1)}'),
         fails=["fit-keeps-marked-pins"]),
    dict(name="finds-tool-results-by-their-id-key", cell="pairs-ok",
         source=pairs_ok_with(on_result=ON_RESULT).replace('if message["role"] == "tool":', 'if "tool_call_id" in message:'),
         fails=["pairs-ok-result-follows-its-call"]),
    dict(name="a-call-without-an-id-needs-no-answer", cell="pairs-ok",
         source=pairs_ok_with(on_turn=ON_TURN.replace(
             "waiting = set(ids)\n", "waiting = {i for i in ids if i is not None}\n").replace(
             "if len(waiting) < len(ids):", "if len(set(ids)) < len(ids):")),
         fails=["pairs-ok-result-follows-its-call"]),
]
RULES += [
    dict(rule='only "pinned": True pins a message; "pinned": False is an elastic message like any other',
         test="fit-keeps-marked-pins", wrong="pins-a-false-pinned-mark"),
    dict(rule="a message of role tool is a tool result, with or without a tool_call_id, and must answer a call",
         test="pairs-ok-result-follows-its-call", wrong="finds-tool-results-by-their-id-key"),
    dict(rule="a call without an id is still a call, and is unanswered when the next turn starts",
         test="pairs-ok-result-follows-its-call", wrong="a-call-without-an-id-needs-no-answer"),
]

# Probed again: each passed every test before the test named in it checked the rule.
WRONG_ANSWERS += [
    dict(name="joins-a-result-to-the-call-its-id-names", cell="turn-groups", source='''
def turn_groups(messages):
    groups = []
    owner = {}  # call id -> the group of the call that made it
    for message in messages:
        if message["role"] == "tool":
            group = owner.get(message.get("tool_call_id"))
            if group is None and groups and groups[-1][0]["role"] == "assistant" and groups[-1][0].get("tool_calls"):
                group = groups[-1]
            if group is not None:
                group.append(message)
                continue
        groups.append([message])
        for call in message.get("tool_calls") or []:
            owner[call.get("id")] = groups[-1]
    return groups
''', fails=["turn-groups-partition"]),
    dict(name="trims-the-messages-after-the-last-call", cell="count-trims",
         source=count_trims_with(after='''    if history[seen + 1:]:  # messages came after the last call: trim them too
        view += history[seen:]
        if trim(view, high=high, low=low)[1]:
            trims += 1'''),
         fails=["count-trims-uses-trim"]),
]
RULES += [
    dict(rule="a tool message joins the group just before it, not the group of the call its id names (order kept)",
         test="turn-groups-partition", wrong="joins-a-result-to-the-call-its-id-names"),
    dict(rule="messages after the last model call are never trimmed, even when they are not a reply",
         test="count-trims-uses-trim", wrong="trims-the-messages-after-the-last-call"),
]

# The judge now hands back the test's own objects where the answer returns them, so identity
# can be asked there as in Python: this answer scored full marks until then.
WRONG_ANSWERS += [
    dict(name="groups-hold-copies-of-the-messages", cell="turn-groups",
         source=turn_groups_with(opened='groups and groups[-1][0]["role"] == "assistant" and groups[-1][0].get("tool_calls")').replace(
             "    for message in messages:\n", "    for message in messages:\n        message = dict(message)  # a copy\n"),
         fails=["turn-groups-partition"]),
]
RULES += [
    dict(rule="the groups hold the messages themselves, not copies", test="turn-groups-partition",
         wrong="groups-hold-copies-of-the-messages"),
]

# The visible tests that hand-check each docstring's example.
RULES += [
    dict(rule="the docstring's example: a parallel call and its results are one group", test="turn-groups-visible",
         wrong="splits-a-parallel-call-group"),
    dict(rule="the docstring's example: the last group is kept in the split", test="turn-groups-visible",
         wrong="forgets-the-last-group"),
    dict(rule="the docstring's example: the task and the newest group are kept, the rest dropped", test="fit-visible",
         wrong="drops-the-newest"),
    dict(rule="the docstring's example: fit measures tokens with count, not characters", test="fit-visible",
         wrong="estimates-tokens-from-characters"),
    dict(rule="the docstring's example: a view under the high mark is left whole", test="high-low-visible",
         wrong="trims-whenever-over-the-low-mark"),
    dict(rule="the docstring's example: a run that never passes the high mark is never trimmed",
         test="count-trims-visible", wrong="counts-every-lap-over-the-low-mark"),
]

# The words of each exercise's text that state each rule (tests/test_rule_map.py checks them).
_GROUP = "together with all the tool messages that follow it (whatever their tool_call_id"
_OTHER = "Every other message is a group of its own, a tool message with no such call just before it included"
_JOINED = "Joined, the groups are messages, in order, each message left as it was"
_PAIRED = "True when every tool result answers a call of the assistant message just before its group"
_ONCE = "every call is answered exactly once (its results in any order) before the next message that is not a tool result"
_REUSE = "Pairing is checked group by group, so a later assistant message may reuse an earlier call's id"
_NO_ID = "A call with no id is still a call, one that no result can answer"
_NO_CALL_ID = "a tool message with no tool_call_id is still a result, one that answers no call"
_PINS = "every pinned message (ctxlab.trimming.pinned_indices: system messages, the first user message"
_RECENT = "the newest keep_recent turn groups are kept, counted by position, pinned groups included"
_WALK = "then older groups, newest first, while they fit; the first that does not fit and every older unpinned group are dropped"
_AT_MOST = "the kept messages, each pinned group whole, take at most allowance tokens (exactly is fine)"
_ORDER = "kept and dropped are each in input order and together hold every input message once"
_REFUSE = "raise ctxlab.BudgetError, giving the tokens needed and the allowance, when the pins and the newest groups alone exceed allowance"
_UNDER_HIGH = "are at most high, nothing is trimmed: return (view, [])"
_DOWN = "Otherwise trim it down to low tokens with fit (passing count on), and return what fit returns"
_LET_OUT = "let fit's ctxlab.BudgetError out (never fall back to a bigger history)"
_LAP = "A lap where anything was dropped counts as one trim, however much it dropped"
_BEFORE_CALL = "Before each model call (each assistant message, at index i), add to the view the messages that arrived since the previous call"
_NEVER_SENT = "Messages after the last model call are never sent, so they are never trimmed"
_CARRY = "the view becomes what it kept"
TAUGHT = {
    # turn_groups
    "every message that is not a tool result starts a group of its own": _OTHER,
    "an assistant call and all of its results, parallel calls included, are one group": _GROUP,
    "every tool message after a call joins its group, whatever its tool_call_id": _GROUP,
    "a call's results share its group: there are fewer groups than messages": _GROUP,
    "a tool message joins the group just before it, not the group of the call its id names (order kept)": (_GROUP, _JOINED),
    "an empty history has no groups (every group holds a message)": "an empty history has no groups",
    "the groups hold the messages themselves, not copies": "the message objects themselves, not copies",
    "the groups, joined, are the input: every message, in order": _JOINED,
    "turn_groups leaves the messages as they were": _JOINED,
    "a group opens only where tool_calls is a non-empty list (None and [] are no calls)":
        "An assistant message with tool_calls (a non-empty list)",
    "a message that is not a tool result closes the call's group: a later tool message stands alone, in its place": (
        _OTHER, _JOINED),
    "a tool message after a stray tool message stands alone too": _OTHER,
    "a tool message with no assistant call just before it stands alone": _OTHER,
    "the docstring's example: a parallel call and its results are one group": _GROUP,
    "the docstring's example: the last group is kept in the split": _JOINED,
    # pairs_ok
    "each call is answered exactly once": _ONCE,
    "each call is answered exactly once: as many results as calls, each for some call of the group, is not enough": _ONCE,
    "the calls of one assistant message have different ids: a message listing one id twice is malformed":
        "a message listing one id twice is malformed",
    "a second assistant call before the first is answered is not paired": _ONCE,
    "\"tool_calls\": None is no call: such a reply is paired (True, not an error)": "\"tool_calls\": None included",
    "the results of a parallel call may come in any order": "(its results in any order)",
    "valid histories (parallel results one after another) are accepted": "every course transcript (all valid",
    "a call answered once, in its own group, is paired (each pairing rule holds both ways)": (_PAIRED, _ONCE),
    "a call without an id is still a call, and is unanswered when the next turn starts": (_NO_ID, _ONCE),
    "a message of role tool is a tool result, with or without a tool_call_id, and must answer a call": (
        _PAIRED, _NO_CALL_ID),
    "a result must be in the group of the assistant message that made its call": _PAIRED,
    "a system or developer message between a call and its result breaks the pair": _ONCE,
    "a tool message without tool_call_id answers no call: False, not an error": (_NO_CALL_ID, "(never an error)"),
    "pairs_ok never raises, also on a call with no id": "False otherwise (never an error)",
    "a result answers a call of its own group only, not an id used earlier": (_PAIRED, _REUSE),
    "pairing is checked group by group: a later call may reuse an id": _REUSE,
    "a call still open when the next turn starts is not paired": _ONCE,
    "a call still unanswered when the history ends is not paired, even if others of its group are": _ONCE,
    "a call never answered (at the end of the history) is not paired": _ONCE,
    "a tool result with no call before it is not paired": _PAIRED,
    # fit
    "a group both pinned and newest (the task on the first lap) is counted once":
        "each counted once (a group both pinned and newest too)",
    "a group fits when its tokens are at most the room left (<=)": _AT_MOST,
    "the whole allowance is for messages: reply priming is not taken from it":
        "the allowance is for the messages alone: no reply priming is taken from it",
    "count is called once per message": "called once per message",
    "the default count is ctxlab.count_message (tokens)": "with count = ctxlab.count_message by default",
    "the BudgetError gives the tokens needed and the allowance": _REFUSE,
    "a pinned group in the middle does not stop the walk to older groups": "it does not stop the walk",
    "a pinned group in the middle is paid for once, not again when the walk reaches it":
        "a pinned group on the way is already kept and counted once",
    "older groups are added newest first": _WALK,
    "keep_recent above the number of groups keeps them all": _RECENT,
    "keep_recent counts the newest groups by position, a pinned one included": _RECENT,
    "keep_recent counts turn groups, not messages": _RECENT,
    "keep_recent=k keeps the newest k groups (or refuses)": (_RECENT, _REFUSE),
    "a message marked \"pinned\": True is kept": "any message marked \"pinned\": True",
    "a pinned message is kept with its whole turn group": "is kept, with its whole turn group",
    "only \"pinned\": True pins a message; \"pinned\": False is an elastic message like any other":
        "\"pinned\": False pins nothing",
    "every system message is pinned, one later in the history too": _PINS,
    "every system message is pinned, wherever the task is": _PINS,
    "the first user message (the task) is pinned": _PINS,
    "the newest turn group is always kept": _RECENT,
    "groups are never split": "groups are never split",
    "the input list is left unchanged": "messages itself is left unchanged",
    "kept and dropped together hold every input message once": _ORDER,
    "dropped is in input order": _ORDER,
    "kept and dropped follow input positions, not steps (a message may have no step)": _ORDER,
    "kept is in input order, pins included": _ORDER,
    "an impossible allowance raises, instead of returning an oversized history": _REFUSE,
    "the error is ctxlab.BudgetError": _REFUSE,
    "the refusal is ctxlab.BudgetError itself (or a subclass), not a class of one's own with that name": _REFUSE,
    "an older group that repeats a kept message word for word is still dropped past the misfit": _WALK,
    "only the first user message is the task: a later copy of it is elastic": _PINS,
    "the first group that does not fit and every older unpinned group are dropped": _WALK,
    "messages are measured with the given count": "a message's tokens are count(m)",
    "a pinned message's whole turn group counts toward the allowance": _AT_MOST,
    "the kept messages, pins included, take at most the allowance": _AT_MOST,
    "when the pins and the newest group fit, they are kept": (_PINS, _REFUSE),
    "the docstring's example: the task and the newest group are kept, the rest dropped": (_PINS, _RECENT, _WALK),
    "the docstring's example: fit measures tokens with count, not characters":
        "a message's tokens are count(m), with count = ctxlab.count_message by default",
    # high_low_trim
    "exactly at the high mark nothing is trimmed (<=)": _UNDER_HIGH,
    "high_low_trim returns fit's dropped as it is": _DOWN,
    "over the high mark, trim down to the low mark": _DOWN,
    "the view given to high_low_trim is left unchanged": "The view itself is left unchanged",
    "when fit cannot reach the low mark, its BudgetError is let out (no other mark)": _LET_OUT,
    "when fit cannot reach the low mark, its BudgetError is let out (not the untrimmed view)": _LET_OUT,
    "count is passed on to fit": "(passing count on)",
    "the view is measured with the given count": "(sum of count(m), count = ctxlab.count_message by default)",
    "a view over the high mark is trimmed": _DOWN,
    "between the marks nothing is trimmed": _UNDER_HIGH,
    "the docstring's example: a view under the high mark is left whole": _UNDER_HIGH,
    # count_trims
    "a lap counts once however many messages it dropped": _LAP,
    "only laps where the trim dropped something count": _LAP,
    "without trim, count_trims uses high_low_trim": "(default: your high_low_trim)",
    "the view carries over: it is what the last trim kept plus the new messages": (_BEFORE_CALL, _CARRY),
    "a model call whose view is empty (the run opens with an assistant message) is trimmed too": _BEFORE_CALL,
    "messages after the last model call are never trimmed, even when they are not a reply": _NEVER_SENT,
    "the given trim is the one called": "then run trim(view, high=high, low=low)",
    "trim is called once per model call, not after the last one": (_BEFORE_CALL, _NEVER_SENT),
    "the view stops before the assistant message about to be sent":
        "(up to message i, which is the reply and is not sent)",
    "the docstring's example: a run that never passes the high mark is never trimmed": (_UNDER_HIGH, _LAP),
    # concept checks: the lesson's text that makes the right answer right
    "Q1: an orphaned tool result makes the provider reject the request":
        "The Chat Completions API answers such a request with an HTTP 400 error",
    "Q2: the first user message states the task and is pinned": "the first user message (the task)",
    "Q3: rare deep trims keep the prefix stable for the cache":
        "Between two trims each prompt is the previous one plus the new lap, so the whole previous prompt is a cacheable prefix",
    "Q4: last-N drops the task, orphans results and ignores tokens": (
        "It deletes the goal, which lives at the very start", "which providers reject outright",
        "Six messages can still be over the budget when one of them is a large tool result"),
    "Q5: rules, goal, plan, unresolved errors and constraints always survive":
        "some things must survive every trim: the rules of the system prompt, the goal, the plan being followed, "
        "the errors not yet resolved, and each permission or safety constraint",
}
