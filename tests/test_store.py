"""TrajectoryStore: full messages kept durably in SQLite, references that resolve, clear errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxlab
import ctxlab.course


def result(call_id, content, step=1):
    return {"role": "tool", "tool_call_id": call_id, "content": content, "step": step}


def test_a_run_is_reloaded_exactly_in_order():
    research = ctxlab.course.load_transcript("research")
    with ctxlab.TrajectoryStore(run="research") as store:
        refs = store.extend(research)
        assert refs[16] == "research#16"
        assert store.load() == research
        assert [list(m) for m in store.load()] == [list(m) for m in research]  # key order too
        assert len(store) == len(research)


def test_the_store_survives_closing_and_reopening_the_file(tmp_path):
    path = tmp_path / "trajectory.sqlite3"
    refund = ctxlab.course.load_transcript("refund")
    store = ctxlab.TrajectoryStore(path, run="refund")
    ref = store.append(refund[0])
    store.extend(refund[1:])
    store.close()

    reopened = ctxlab.TrajectoryStore(str(path), run="refund")
    assert reopened.load() == refund
    assert reopened.resolve(ref) == refund[0]
    assert reopened.append({"role": "user", "content": "one more"}) == f"refund#{len(refund)}"
    reopened.close()


def test_one_file_holds_many_runs(tmp_path):
    path = tmp_path / "runs.sqlite3"
    with ctxlab.TrajectoryStore(path, run="a") as a, ctxlab.TrajectoryStore(path, run="b") as b:
        a.append({"role": "user", "content": "from a"})
        b.append({"role": "user", "content": "from b"})
        assert a.runs() == b.runs() == ["a", "b"]
        assert a.resolve("b#0")["content"] == "from b"  # a reference names its run
        assert a.load("b") == b.load() == [{"role": "user", "content": "from b"}]


def test_save_result_is_idempotent_and_never_overwrites():
    with ctxlab.TrajectoryStore(run="r") as store:
        full = result("c1", "the full page")
        assert store.save_result(full) == store.save_result(dict(full)) == "r#0"
        assert store.ref_for("c1") == "r#0"
        with pytest.raises(ctxlab.errors.StoreError, match="different content"):
            store.save_result({**full, "content": "a compressed view"})
        with pytest.raises(ctxlab.errors.StoreError, match="tool message"):
            store.save_result({"role": "user", "content": "x"})


def test_a_failed_extend_stores_nothing():
    with ctxlab.TrajectoryStore(run="r") as store:
        store.append(result("c1", "a"))
        with pytest.raises(ctxlab.errors.StoreError, match="already holds the result of tool call 'c1'"):
            store.extend([result("c2", "b"), result("c1", "again")])
        assert len(store) == 1


@pytest.mark.parametrize(
    "ref, words",
    [
        ("r#7", "no message r#7: run 'r' holds 2 messages (r#0 to r#1)"),
        ("other#0", "no run 'other'"),
        ("not a ref", "references look like 'research#16'"),
        (42, "references look like"),
    ],
)
def test_unknown_references_get_a_clear_error(ref, words):
    with ctxlab.TrajectoryStore(run="r") as store:
        store.extend([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
        with pytest.raises(ctxlab.errors.ReferenceNotFound) as err:
            store.resolve(ref)
        assert words in str(err.value)
        assert isinstance(err.value, LookupError) and err.value.ref == str(ref)
        with pytest.raises(ctxlab.errors.ReferenceNotFound, match="no result for tool call 'zz'"):
            store.ref_for("zz")


@pytest.mark.parametrize("run", ["", "has space", "a#b", None])
def test_run_names_must_fit_in_a_reference(run):
    with pytest.raises(ValueError, match="run must be a name"):
        ctxlab.TrajectoryStore(run=run)


def test_unstorable_messages_are_refused():
    with ctxlab.TrajectoryStore() as store, pytest.raises(ctxlab.errors.StoreError):
        store.append({"content": "no role"})


messages = st.lists(
    st.one_of(
        st.builds(lambda c, s: {"role": "user", "content": c, "step": s}, st.text(max_size=50), st.integers(0, 99)),
        st.builds(lambda c: {"role": "assistant", "content": c}, st.one_of(st.none(), st.text(max_size=50))),
    ),
    max_size=30,
)


@settings(max_examples=50, deadline=None)
@given(batch=messages, results=st.lists(st.text(max_size=200), max_size=10))
def test_every_reference_resolves_to_what_was_stored(batch, results):
    tools = [result(f"call_{i}", content, step=i) for i, content in enumerate(results)]
    with ctxlab.TrajectoryStore(run="prop") as store:
        refs = store.extend(batch) + [store.save_result(m) for m in tools]
        stored = batch + tools
        assert len(set(refs)) == len(refs)
        for ref, message in zip(refs, stored, strict=True):
            assert store.resolve(ref) == message
        for message in tools:
            assert store.content(store.ref_for(message["tool_call_id"])) == message["content"]
        assert store.load() == stored


def _in_thread(work):
    """Run ``work`` on a new thread (as Jupyter runs a widget's callbacks); return or raise its result."""
    import threading

    outcome = {}

    def run():
        try:
            outcome["value"] = work()
        except BaseException as err:  # handed back to the test's thread
            outcome["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.mark.parametrize("where", ["memory", "file"])
def test_a_store_made_in_one_thread_works_in_another(tmp_path, where):
    path = ":memory:" if where == "memory" else tmp_path / "t.sqlite3"
    refund = ctxlab.course.load_transcript("refund")
    with ctxlab.TrajectoryStore(path, run="refund") as store:
        refs = store.extend(refund[:3])
        assert _in_thread(lambda: store.resolve(refs[1])) == refund[1]
        assert _in_thread(lambda: store.extend(refund[3:])) == [f"refund#{i}" for i in range(3, len(refund))]
        assert _in_thread(store.load) == store.load() == refund
        assert _in_thread(lambda: len(store)) == len(refund)


def test_threads_appending_at_once_get_distinct_consecutive_references():
    from concurrent.futures import ThreadPoolExecutor

    with ctxlab.TrajectoryStore(run="busy") as store:
        with ThreadPoolExecutor(max_workers=8) as pool:
            refs = list(pool.map(lambda k: store.append({"role": "user", "content": f"m{k}"}), range(200)))
        assert sorted(refs, key=lambda r: int(r.split("#")[1])) == [f"busy#{k}" for k in range(200)]
        assert sorted(m["content"] for m in store.load()) == sorted(f"m{k}" for k in range(200))
        with ThreadPoolExecutor(max_workers=4) as pool:  # the same result saved at once: stored once
            saved = set(pool.map(lambda _: store.save_result(result("c7", "page")), range(40)))
        assert saved == {"busy#200"} and len(store) == 201
