"""The judge's channel on its own: values cross as data, proxies call across, nothing else does.

A thread plays the learner's kernel (its agent's endpoint, unguarded, with a namespace of
"learner" definitions); the test plays the judge. The whole pipeline, with two sandboxed
kernels, is graded for real in test_lessons.py and test_autograder_grade.py.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import math
import socket
import threading

import pytest

import ctxlab
import ctxlab.course
from autograder.judging import agent
from autograder.judging.endpoint import Endpoint, Remote
from autograder.judging.errors import LearnerError, ReferenceDisabled, rebuild
from autograder.judging.wire import MAX_DEPTH, MAX_MESSAGE, ChannelError, Codec, Peer
from autograder.references import answer_names, forbid_map, resolve


def _encoding(name):
    return ctxlab.encoding(name)


class Pair:
    """A judge endpoint connected to a learner endpoint served by a thread."""

    def __init__(self, namespace: dict):
        judge_sock, learner_sock = socket.socketpair()
        self.namespace = namespace
        self.judge = Endpoint("judge", guarded=True, encoding_loader=_encoding, make_error=rebuild,
                              describe_error=lambda e: "a check failed" if isinstance(e, AssertionError) else str(e))

        def describe(message):
            names = message["names"]
            return {"ok": True, "value": {n: self.learner.encode(namespace[n]) for n in names if n in namespace}}

        self.learner = Endpoint("learner", guarded=False, encoding_loader=_encoding, make_error=rebuild,
                                describe_error=str, extra_ops={"describe": describe})
        self.judge.peer = Peer(judge_sock, self.judge.handle, timeout=10)
        self.learner.peer = Peer(learner_sock, self.learner.handle, timeout=10)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        peer = self.learner.peer
        try:
            while True:
                message = peer.receive()
                if message["op"] == "bye":
                    return
                peer.send({"op": "reply", **self.learner.handle(message)})
        except ChannelError:
            return

    def names(self, *names):
        reply = self.judge.request({"op": "describe", "names": list(names)})
        values = {n: self.judge.decode(v) for n, v in reply["value"].items()}
        return [values.get(n) for n in names]

    def close(self):
        self.judge.peer.send({"op": "bye"})
        self.thread.join(5)
        self.judge.peer.sock.close()
        self.learner.peer.sock.close()


@pytest.fixture
def pair_of():
    made = []

    def make(**namespace):
        made.append(Pair(namespace))
        return made[-1]

    yield make
    for pair in made:
        pair.close()


# ---------------------------------------------------------------------- values


def test_plain_values_cross_as_plain_data():
    codec = Codec("judge")
    value = {"role": "tool", "n": 3, "x": 1.5, "ok": True, "none": None, "pair": (1, [2, 3])}
    back = codec.decode(codec.encode(value), None)
    assert back == value and type(back["pair"]) is tuple and type(back["pair"][1]) is list
    assert codec.decode(codec.encode({1: "a", (2, 3): "b"}), None) == {1: "a", (2, 3): "b"}
    assert codec.decode(codec.encode({"$": "not a tag"}), None) == {"$": "not a tag"}
    assert codec.decode(codec.encode({1, 2}), None) == {1, 2}
    assert math.isnan(codec.decode(codec.encode(float("nan")), None))


def test_a_librarys_subclass_of_a_plain_type_crosses_as_the_data_it_holds(pair_of):
    """``numpy.float64`` is a float, an ``OrderedDict`` a dict: a right answer that returns one
    passes ``isinstance`` and ``==`` in the learner's kernel, so it must in the judge too."""
    numpy = pytest.importorskip("numpy")

    class Level(enum.IntEnum):
        HIGH = 3

    values = {"mean": lambda: numpy.mean([1.0, 2.0]), "ordered": lambda: collections.OrderedDict(b=1, a=2),
              "counts": lambda: collections.Counter("aab"), "level": lambda: Level.HIGH,
              "nested": lambda: {"rows": [collections.defaultdict(int, x=numpy.float64(0.5))]}}
    mean, ordered, counts, level, nested = pair_of(**values).names(*values)
    got = mean()
    assert type(got) is float and got == 1.5
    got = ordered()
    assert type(got) is dict and list(got.items()) == [("b", 1), ("a", 2)]
    assert counts() == {"a": 2, "b": 1} and type(level()) is int and level() == 3
    assert nested() == {"rows": [{"x": 0.5}]} and type(nested()["rows"][0]["x"]) is float


def test_a_subclass_crosses_as_its_data_not_as_what_its_overrides_say():
    class Lying(int):
        def __eq__(self, other):
            return True

        def __int__(self):
            return 99

        __hash__ = int.__hash__

    class Hiding(list):
        def __iter__(self):
            return iter([1, 2, 3])

    codec = Codec("learner")
    assert codec.encode(Lying(3)) == 3 and codec.encode(Hiding()) == []


def test_a_learners_own_subclass_of_a_plain_type_is_a_handle_with_its_methods():
    Budget = type("Budget", (dict,), {"__module__": "__main__", "room": lambda self: self["window"] - 1})
    encoded = Codec("learner").encode(Budget(window=10))
    assert encoded["$"] == "ref"


def test_one_object_in_two_places_arrives_as_one_object():
    codec = Codec("judge")
    message = {"role": "user", "content": "hi"}
    pad = ctxlab.Scratchpad(goal="g", done=["a"])
    back = codec.decode(codec.encode([message, message, {"again": message}, (pad, pad.done, pad)]), _encoding)
    assert back[0] is back[1] is back[2]["again"] and back[0] == message and back[0] is not message
    assert back[3][0] is back[3][2] and back[3][1] is back[3][0].done
    loop: list = []
    loop.append(loop)
    with pytest.raises(ChannelError, match="nested"):
        codec.encode(loop)  # a value that holds itself is still refused, not sent as a loop


def test_a_dataclass_sent_as_a_reference_numbers_none_of_its_fields():
    """A ctxlab dataclass holding a function travels as a reference: the containers met while
    trying to send it by value were not sent, so the numbering of what follows still agrees."""
    codec = Codec("judge")
    shared = [1, 2]
    replay = ctxlab.ReplayResult("r", [], {"goal": "g"}, {"goal": 0})
    object.__setattr__(replay, "probes", {"goal": shared, "f": len})
    encoded = codec.encode([replay, shared, shared])
    assert encoded[0]["$"] == "ref" and encoded[1] == [1, 2] and encoded[2] == {"$": "same", "n": 1}


@pytest.mark.parametrize("bad", [
    [{"$": "same", "n": 5}, [1]],  # names nothing sent yet
    [{"$": "same", "n": 0}],  # names the list it is in, not complete
    [[1], {"$": "same", "n": "0"}],  # not a number
])
def test_a_same_that_names_no_complete_object_is_refused(bad):
    with pytest.raises(ChannelError, match="not sent before"):
        Codec("judge").decode(bad, None)


def test_the_learner_sees_one_object_where_the_test_passed_one(pair_of):
    """``[m, m]`` is one message in two places: an answer that counts each object once sees the
    repeat as Python would show it, and ``f(x, x)`` gets one object twice."""
    (distinct, same) = pair_of(distinct=lambda messages: len({id(m) for m in messages}),
                               same=lambda a, b, *, c: [a is b, b is c]).names("distinct", "same")
    message = {"role": "user", "content": "hi"}
    assert distinct([message, message]) == 1 and distinct([message, dict(message)]) == 2
    assert same(message, message, c=message) == [True, True] and same(message, dict(message), c=message) == [False, False]


def test_values_nested_too_deep_are_refused():
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ChannelError, match="nested"):
        Codec("judge").encode(deep)


def test_ctxlab_dataclasses_cross_by_value_and_encodings_by_name():
    codec = Codec("judge")
    budget = ctxlab.ContextBudget(window=9_000, reserve_output=1_000)
    back = codec.decode(codec.encode(budget), _encoding)
    assert type(back) is ctxlab.ContextBudget and back == budget
    assert codec.encode(ctxlab.encoding()) == {"$": "encoding", "name": "cl100k_base"}


def test_a_dataclass_from_outside_ctxlab_is_never_built_from_data():
    with pytest.raises(ChannelError, match="unexpected type"):
        Codec("judge").decode({"$": "dataclass", "type": "subprocess.Popen", "fields": {}}, None)


def test_exceptions_come_back_as_the_receivers_own_classes():
    class MyBudgetError(ctxlab.BudgetError):
        pass

    encoded = Codec("learner").error(MyBudgetError("need 900 tokens"))
    error = rebuild(encoded)
    assert isinstance(error, ctxlab.BudgetError) and str(error) == "need 900 tokens"
    assert type(rebuild({"type": "NotImplementedError", "mro": ["NotImplementedError"], "message": ""})) is NotImplementedError
    odd = rebuild({"type": "Weird", "mro": ["Weird", "Exception"], "message": "boom"})
    assert type(odd) is LearnerError and "Weird: boom" in str(odd)
    assert type(rebuild({"type": "SystemExit", "mro": ["SystemExit"], "message": ""})) is LearnerError


def test_a_learners_own_class_called_budgeterror_is_not_ctxlabs():
    """Only ctxlab's class (or a subclass of it) is rebuilt as ctxlab.BudgetError: a class of the
    learner's own with that name arrives as its nearest built-in base, a renamed one as LearnerError."""

    class BudgetError(ValueError):
        pass

    class Renamed(Exception):
        pass

    Renamed.__name__ = Renamed.__qualname__ = "BudgetError"
    own = rebuild(Codec("learner").error(BudgetError("over")))
    assert type(own) is ValueError and own.learner_type == "BudgetError"
    assert type(rebuild(Codec("learner").error(Renamed("over")))) is LearnerError
    forged = {"type": "BudgetError", "mro": ["~__main__.BudgetError", "Exception"], "message": "x"}
    assert type(rebuild(forged)) is LearnerError


# ---------------------------------------------------------------------- calls across


def test_a_learner_function_is_called_with_copies_and_returns_data(pair_of):
    def count(messages, enc=None):
        return sum(len(enc.encode_ordinary(m["content"])) for m in messages)

    (remote,) = pair_of(count=count).names("count")
    assert isinstance(remote, Remote)
    got = remote([{"role": "user", "content": "Hello!"}], enc=ctxlab.encoding())
    assert type(got) is int and got == 2


def test_tuples_arrive_as_tuples_and_lists_as_lists(pair_of):
    """``(kept, dropped)`` unpacks as before, and an answer that returns a tuple where the
    exercise asks for a list fails ``== [...]`` in the judge as it does in the learner's kernel."""
    split, names = pair_of(split=lambda xs: (xs[:1], xs[1:]), names=lambda: ("a", "b")).names("split", "names")
    kept, dropped = split([1, 2, 3])
    assert (kept, dropped) == ([1], [2, 3]) and type(split([1])) is tuple
    assert names() == ("a", "b") and names() != ["a", "b"]


def test_a_tuple_that_holds_the_tests_own_objects_holds_them_in_the_judge(pair_of):
    (fit,) = pair_of(fit=lambda messages: (messages[1:], messages[:1])).names("fit")
    messages = [{"role": "user"}, {"role": "assistant"}]
    kept, dropped = fit(messages)
    assert kept[0] is messages[1] and dropped[0] is messages[0]


def test_mutations_of_arguments_are_copied_back(pair_of):
    def tidy(messages, options):
        messages.pop()
        options["seen"] = True

    (remote,) = pair_of(tidy=tidy).names("tidy")
    messages, options = [{"a": 1}, {"b": 2}], {}
    assert remote(messages, options) is None
    assert messages == [{"a": 1}] and options == {"seen": True}


def test_what_a_call_hands_back_of_its_arguments_is_the_callers_own_object(pair_of):
    """Identity survives the channel as in Python: returned as is, kept in a container, changed
    in place, or moved inside an argument the callee changed."""
    def update(pad, step):
        pad.done.append(step)
        return pad

    def update_copy(pad, step):
        pad.done.append(step)
        return dataclasses.replace(pad)

    def groups(messages):
        return [[m] for m in messages]

    def groups_of_copies(messages):
        return [[dict(m)] for m in messages]

    def shuffle(messages, *, options):
        messages[0]["seen"] = True
        messages.insert(0, {"role": "system"})
        options["n"] = 1
        return {"first": messages[1], "options": options}

    pair = pair_of(update=update, update_copy=update_copy, same=lambda xs: xs, new=lambda xs: list(xs),
                   groups=groups, groups_of_copies=groups_of_copies, shuffle=shuffle)
    same, new, update, update_copy, groups, groups_of_copies, shuffle = pair.names(
        "same", "new", "update", "update_copy", "groups", "groups_of_copies", "shuffle")
    pad = ctxlab.Scratchpad(goal="g")
    assert update(pad, "a") is pad and pad.done == ["a"]
    pad = ctxlab.Scratchpad(goal="g")
    copied = update_copy(pad, "a")
    assert copied is not pad and copied == pad and pad.done == ["a"]
    xs = [{"a": 1}]
    assert same(xs) is xs
    ys = new(xs)
    assert ys is not xs and ys[0] is xs[0]
    messages = [{"role": "user"}, {"role": "assistant"}]
    assert [g[0] is m for g, m in zip(groups(messages), messages, strict=True)] == [True, True]
    assert [g[0] is m for g, m in zip(groups_of_copies(messages), messages, strict=True)] == [False, False]
    first, options = messages[0], {}
    got = shuffle(messages, options=options)
    assert got["first"] is first and first == {"role": "user", "seen": True}
    assert got["options"] is options and options == {"n": 1}
    assert messages[1] is first and messages[0] == {"role": "system"} and messages[2]["role"] == "assistant"


def test_a_new_order_of_a_dict_is_a_change_that_comes_back(pair_of):
    """Equal dicts in another order are not the same data to Python's code (``list(d)``): an
    argument whose dict was reordered in place is copied back, returned or not."""
    def move_to_end(pad, key):
        pad.failed[key] = pad.failed.pop(key)
        return pad

    def move_in_place(options, key):
        options[key] = options.pop(key)

    move_to_end, move_in_place = pair_of(move_to_end=move_to_end, move_in_place=move_in_place).names(
        "move_to_end", "move_in_place")
    pad = ctxlab.Scratchpad(goal="g", failed={"a": "x", "b": "y"})
    assert move_to_end(pad, "a") is pad and list(pad.failed) == ["b", "a"]
    options = {"a": 1, "b": 2}
    assert move_in_place(options, "a") is None and list(options) == ["b", "a"]


def test_a_false_claim_of_identity_changes_no_value():
    """The learner's side could report aliases that are not true: the judge takes one only where
    both paths lead to containers of one type, and gives its object exactly the content sent."""
    from autograder.judging.aliases import MISSING, restore, well_formed

    mine = {"role": "user", "content": "hi"}
    originals = {(0, ()): mine, (0, ("content",)): mine["content"]}

    def lookup(which, path):
        return originals.get((which, tuple(path)), MISSING)

    fresh = {"role": "user", "content": "changed"}
    assert restore(fresh, well_formed([[[], 0, []]]), lookup) is mine and mine["content"] == "changed"
    mine["content"] = "hi"
    assert restore([1, 2], well_formed([[[], 0, []]]), lookup) == [1, 2]  # a list is not a dict
    assert restore({"a": "x"}, well_formed([[["a"], 0, ["content"]]]), lookup) == {"a": "x"}  # a str is no container
    assert well_formed([[[], 0.5, []], [["a"], "k", [None]], "junk", [[], 0, []]]) == [[[], 0, []]]


def test_a_callable_the_test_passes_in_is_called_back_in_the_judge(pair_of):
    calls = []

    def spy(message):
        calls.append(message)
        return 7

    (remote,) = pair_of(total=lambda messages, count: sum(count(m) for m in messages)).names("total")
    assert remote([{"x": 1}, {"x": 2}], spy) == 14
    assert calls == [{"x": 1}, {"x": 2}]


def test_a_learner_class_is_a_handle_with_methods_attributes_and_isinstance(pair_of):
    class Pad:
        def __init__(self, goal):
            self.goal = goal
            self.facts = []

        def render(self):
            return "\n".join([self.goal, *self.facts])

    Remote_Pad, = pair_of(Pad=Pad).names("Pad")
    pad = Remote_Pad(goal="Find the cause")
    assert isinstance(pad, Remote_Pad) and not isinstance(3, Remote_Pad)
    pad.facts = ["disk full"]
    assert pad.render() == "Find the cause\ndisk full"
    assert pad.goal == "Find the cause"
    pad.facts.append("ignored")  # a copy: the learner's object is not changed this way
    assert pad.facts == ["disk full"]


def test_a_learners_objects_decide_no_comparison(pair_of):
    class AlwaysEqual:
        def __eq__(self, other):
            return True

        def __len__(self):
            return 9

    (make,) = pair_of(make=AlwaysEqual).names("make")
    rigged = make()
    assert (rigged == 9) is False and rigged != 9 and type(rigged) is not int
    assert len(rigged) == 9  # what the learner's object says of itself stays its own answer


def test_exceptions_raised_by_learner_code_are_raised_in_the_judge(pair_of):
    def refuse(allowance):
        raise ctxlab.BudgetError(f"allowance {allowance} is below the pins")

    (remote,) = pair_of(refuse=refuse).names("refuse")
    with pytest.raises(ctxlab.BudgetError, match="allowance 10 is below the pins"):
        remote(10)


def test_the_learner_cannot_read_the_tests_code_or_change_its_objects(pair_of):
    secret = {"expected": 42}

    def spy(message):
        return secret["expected"]

    class Client:
        requests: list = []

    def snoop(count, client):
        found = {}
        for attempt in ("__globals__", "__code__", "__closure__"):
            try:
                found[attempt] = getattr(count, attempt)
            except Exception as err:  # noqa: BLE001
                found[attempt] = type(err).__name__
        try:
            client.requests = ["faked"]
            found["set"] = "done"
        except Exception as err:  # noqa: BLE001
            found["set"] = type(err).__name__
        return found

    (remote,) = pair_of(snoop=snoop).names("snoop")
    client = Client()
    found = remote(spy, client)
    assert found == {"__globals__": "AttributeError", "__code__": "AttributeError",
                     "__closure__": "AttributeError", "set": "PermissionError"}
    assert client.requests == []


def test_an_assertion_in_the_tests_own_callback_hides_its_message(pair_of):
    def strict(message):
        raise AssertionError("expected exactly 9 = 3 + 1 + 2 + 3")

    def call(count):
        try:
            count({})
        except AssertionError as err:
            return str(err)

    (remote,) = pair_of(call=call).names("call")
    assert remote(strict) == "a check failed"


def test_a_missing_name_is_not_bound(pair_of):
    pair = pair_of(fit=lambda: 1)
    assert pair.names("fit", "pairs_ok")[1] is None


def test_an_answer_that_cannot_travel_as_data_is_a_handle_and_the_others_still_bind():
    # Sent as data, one of these would end the connection, and every test of the notebook would fail.
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    namespace = {"q1": "c", "deep": deep, "huge": "x" * (MAX_MESSAGE // 2 + 10), "digits": 10 ** 5000, "q2": "b"}
    endpoint = Endpoint("learner", guarded=False, encoding_loader=_encoding, make_error=rebuild, describe_error=str)
    values = agent._within_limit(endpoint, {name: agent._as_data_or_handle(endpoint, value)
                                            for name, value in namespace.items()}, namespace)
    assert values["q1"] == "c" and values["q2"] == "b"
    assert all(values[name]["$"] == "ref" for name in ("deep", "huge", "digits"))
    assert endpoint.codec.local(values["huge"]) is namespace["huge"]


# ---------------------------------------------------------------------- references switched off


def test_switching_off_a_reference_catches_every_alias_and_is_undone():
    from ctxlab import fit as aliased

    partial = functools.partial(ctxlab.fit)
    agent.install()
    messages = ctxlab.course.load_transcript("incident")[:4]
    try:
        done = agent.disable(resolve("ctxlab.fit"))
        assert [function.__qualname__ for function, _code in done] == ["fit"]
        for route in (ctxlab.fit, aliased, partial, ctxlab.trimming.fit):
            with pytest.raises(ReferenceDisabled, match="ctxlab.fit is ctxlab's own answer"):
                route(messages, 10_000)
        assert ctxlab.turn_groups(messages)  # the other exercises' helpers still work
    finally:
        agent.restore()
    assert aliased(messages, 10_000)[0]


def test_a_class_reference_switches_off_every_method():
    targets = resolve("ctxlab.Scratchpad")
    assert {t[1] for t in targets} >= {"Scratchpad.render"}
    agent.install()
    try:
        agent.disable(targets)
        with pytest.raises(ReferenceDisabled):
            ctxlab.Scratchpad(goal="x").render()
    finally:
        agent.restore()
    assert "x" in ctxlab.Scratchpad(goal="x").render()


def test_reference_metadata_is_checked_when_the_lesson_is_released():
    from autograder.references import ReferenceSpecError

    assert forbid_map({"fit": ["ctxlab.fit"]})["fit"][0][:2] == ["trimming.py", "fit"]
    with pytest.raises(ReferenceSpecError, match="ctxlab has no 'no_such_thing'"):
        forbid_map({"fit": ["ctxlab.no_such_thing"]})
    with pytest.raises(ReferenceSpecError, match="ctxlab.NAME"):
        forbid_map({"fit": ["json.dumps"]})


def test_answer_names_are_the_top_level_definitions_of_answer_cells():
    cells = ["### BEGIN SOLUTION\ndef fit(messages, allowance):\n    pass\n### END SOLUTION",
             "class Scratchpad:\n    x = 1", "q1 = 'c'\nimport json\nfor i in range(3):\n    pass"]
    assert answer_names(cells) == ["Scratchpad", "fit", "q1"]
