"""The benchmarks in bench/ at tiny sizes: deterministic inputs, contenders that agree where
their rules coincide, and a report that gets written. No timing is asserted here."""

from __future__ import annotations

import copy
import doctest
import importlib.util
import json
import time
from pathlib import Path

import pytest

import ctxlab
import ctxlab.course

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def bench(monkeypatch):
    """The bench/ folder importable by plain name, as when bench/run.py runs."""
    monkeypatch.syspath_prepend(str(BENCH))
    return BENCH


def load_run():
    """bench/run.py, which is a script rather than a module of a package."""
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["histories", "contenders", "measure"])
def test_bench_doctests_pass(bench, name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("size", [2, 3, 4, 5, 6, 41, 333])
def test_histories_are_valid_exact_and_the_same_every_time(bench, size):
    import histories

    history = histories.history(size)
    assert len(history) == size
    ctxlab.validate_messages(history)  # raises on anything a provider would reject
    assert [m["role"] for m in history[:2]] == ["system", "user"]
    assert histories.history(size) == history
    assert histories.history(size, seed=1) != history or size <= 2


def test_histories_mix_parallel_calls_and_results_of_every_size(bench):
    import histories

    facts = histories.describe(histories.history(1_000))
    low, _, high = facts["tool_result_tokens"]
    assert facts["parallel_laps"] > 0 and facts["roles"]["user"] > 1
    assert low < 100 and high > 1_000, "tool results should range from tens to thousands of tokens"


def test_laps_grow_by_whole_groups(bench):
    import histories

    history = histories.history(500)
    ends = histories.lap_ends(history, 50)
    assert len(ends) == 50 and ends[-1] == 500
    assert all(ctxlab.pairs_ok(history[:end]) for end in ends)
    messages, first, more = histories.growing(300, 5)
    assert 250 < first <= 300 and len(more) == 5 and more[-1] == len(messages)
    assert ctxlab.pairs_ok(messages[:first]) and ctxlab.pairs_ok(messages)


def test_the_floor_counts_what_ctxlab_counts(bench):
    import contenders
    import histories

    history = histories.history(200)
    outcome = contenders.floor(history)
    assert outcome.total == ctxlab.count_messages(history) - 3
    assert outcome.encoder_calls == sum(len(contenders.counted_strings(m)) for m in history)


@pytest.mark.parametrize("allowance", [1_500, 6_000, 20_000, 60_000, 10**7])
def test_seed_approach_keeps_what_fit_keeps_and_its_work_is_predicted(bench, allowance):
    import contenders
    import histories

    history = histories.history(150)
    ours = contenders.ctxlab_fit(history, allowance).kept
    seed = contenders.seed_fit(history, allowance)
    ids = {id(m) for m in seed.kept}
    assert ctxlab.pairs_ok(seed.kept) and ctxlab.count_messages(seed.kept) - 3 <= allowance
    assert {id(m) for m in ours} <= ids, "the seed approach must keep every group fit keeps"
    # What the seed approach adds beyond fit is older than the oldest group fit chose freely.
    pins = {id(history[i]) for i in ctxlab.trimming.pinned_indices(history)}
    free = [i for i, m in enumerate(history) if id(m) in {id(k) for k in ours} - pins]
    extra = [i for i, m in enumerate(history) if id(m) in ids - {id(k) for k in ours}]
    assert not extra or not free or max(extra) < min(free)
    if allowance >= ctxlab.count_messages(history):
        assert seed.kept == ours == history
    work = contenders.seed_work(history, allowance)
    assert (work.tokens, work.calls) == (seed.tokens, seed.encoder_calls)


def test_seed_approach_stops_at_its_deadline(bench):
    import contenders
    import histories

    with pytest.raises(contenders.OutOfTime) as stop:
        contenders.seed_fit(histories.history(150), 5_000, deadline=time.perf_counter())
    assert stop.value.tokens > 0  # the first count of the whole history was done


def test_langchain_counts_and_trims_like_ctxlab_where_the_rules_coincide(bench):
    pytest.importorskip("langchain_core", reason="installed by `make bench` only")
    import histories
    import langchain_trim

    history = histories.history(150)
    theirs = langchain_trim.to_langchain(history)
    counter = langchain_trim.TiktokenCounter()
    assert [counter([m]) for m in theirs] == [ctxlab.count_message(m) for m in history]
    pins = {id(history[i]) for i in ctxlab.trimming.pinned_indices(history)}
    for allowance in (2_000, 8_000, 30_000, 10**7):
        kept, _ = langchain_trim.trim(theirs, allowance)
        kept = [history[i] for i in langchain_trim.kept_indices(theirs, kept)]
        ours, _ = ctxlab.fit(history, allowance)
        assert ctxlab.count_messages(kept) - 3 <= allowance
        assert ctxlab.pairs_ok(kept), "start_on=('human', 'ai') cuts between turn groups"
        assert {id(m) for m in ours} - pins <= {id(m) for m in kept}
        if allowance >= ctxlab.count_messages(history):
            assert kept == ours == history


def test_run_writes_the_report(bench, tmp_path, capsys):
    run = load_run()
    assert run.main(["--quick", "--only", "fit", "--only", "incremental", "--results", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## fit: trimming a history to an allowance" in report
    assert "## incremental: fitting a growing history on every lap" in report
    assert "_Measured " in report and "**NO**" not in report
    assert (tmp_path / "fit.png").stat().st_size > 0
    cases = json.loads((tmp_path / "fit.json").read_text(encoding="utf-8"))["cases"]
    assert {c["allowance_name"] for c in cases} == {"tight", "generous"}
    assert all(c["checks"]["ctxlab"]["pairs_ok"] and c["checks"]["ctxlab"]["fits"] for c in cases)


def test_run_finds_benchmarks_and_reports_one_that_fails(bench, tmp_path):
    run = load_run()
    assert {"fit", "incremental"} <= set(run.discover())
    (tmp_path / "bench_broken.py").write_text("def main(results_dir):\n    raise RuntimeError('boom')\n")
    section, ok = run.run_one("broken", tmp_path / "bench_broken.py", tmp_path, quick=True)
    assert not ok and "## broken: failed" in section and "RuntimeError: boom" in section
    (tmp_path / "bench_fine.py").write_text("def main(results_dir, *, quick=False):\n    return f'## fine\\n\\nquick={quick}'\n")
    section, ok = run.run_one("fine", tmp_path / "bench_fine.py", tmp_path, quick=True)
    assert ok and section.startswith("## fine\n") and "quick=True" in section


# --- the counter's memory, which the incremental benchmark measures ------------------------


def test_counter_reuses_counts_and_notices_edits_in_place():
    history = copy.deepcopy(ctxlab.course.load_transcript("parallel"))
    counter = ctxlab.TokenCounter()
    assert counter.messages(history) == ctxlab.count_messages(history)
    calls = counter.encoder_calls
    assert counter.messages(history) == ctxlab.count_messages(history)
    assert counter.encoder_calls == calls, "unchanged messages must not be encoded again"
    caller = next(m for m in history if m.get("tool_calls"))
    caller["tool_calls"][0]["function"]["arguments"] = json.dumps({"region": "somewhere else entirely"})
    history[1]["content"] += " Be quick about it."
    assert counter.messages(history) == ctxlab.count_messages(history), "edits in place are counted"
    assert counter.encoder_calls > calls
    calls = counter.encoder_calls
    history[2]["pinned"] = True  # a course key: not counted, nothing to encode
    assert counter.messages(history) == ctxlab.count_messages(history) and counter.encoder_calls == calls


@pytest.mark.parametrize("allowance", [8_000, 20_000, 80_000])
def test_fit_with_a_kept_counter_equals_fit_without(bench, allowance):
    import histories

    history = histories.history(300)
    counter = ctxlab.TokenCounter()
    for end in histories.lap_ends(history, 4):
        assert ctxlab.fit(history[:end], allowance, count=counter.message) == ctxlab.fit(history[:end], allowance)


def test_the_assembly_bench_runs(bench, tmp_path):
    run = load_run()
    assert run.main(["--quick", "--only", "assembly", "--results", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Assembly over a long run" in report and "encode new + compressed" in report
    assert "0 over budget" in report


def test_counting_bench_runs_on_the_recordings(bench, tmp_path, monkeypatch):
    """The counting benchmark's quick run: every counter installed gets its rows (the peers
    are only installed by `make bench`). Needs the shared recordings, as tests/test_billing.py."""
    monkeypatch.syspath_prepend(str(BENCH.parent / "tests"))
    from support import recordings

    if recordings.shared_available():
        pytest.skip(recordings.shared_available())
    import bench_counting

    section = bench_counting.main(tmp_path, quick=True)
    assert section.startswith("## Counting")
    assert "| ctxlab | plain |" in section and "| cookbook | all |" in section
    rows = json.loads((tmp_path / "counting.json").read_text())
    assert len(rows) == 60
    counted = [row for row in rows if isinstance(row["ctxlab"], int)]
    assert len(counted) > 30 and all(row["cookbook"] is None or row["cookbook"] > 0 for row in rows)


@pytest.mark.slow
def test_the_lessons_benchmark_runs_a_lesson_and_says_so(bench, tmp_path):
    """bench_lessons' quick run: lesson 01 executed, its time reported (no threshold asserted)."""
    import bench_lessons

    section = bench_lessons.main(tmp_path, quick=True)
    report = json.loads((tmp_path / "lessons.json").read_text(encoding="utf-8"))
    assert list(report["seconds"]) == ["01-budget"] and report["seconds"]["01-budget"] > 0
    assert section.startswith("## Running the lessons") and "| 01-budget |" in section
