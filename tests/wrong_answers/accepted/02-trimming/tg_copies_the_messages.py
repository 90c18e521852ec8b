# cell: turn-groups
# exercise: Exercise 1 · Split a history into turn groups
# desc: puts a copy of each message (dict(message)) into the groups instead of the message itself
def turn_groups(messages):
    groups = []
    for message in messages:
        message = dict(message)
        opened = groups and groups[-1][0]["role"] == "assistant" and groups[-1][0].get("tool_calls")
        if message["role"] == "tool" and opened:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups
