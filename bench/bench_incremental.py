"""Benchmark: the incremental case, the one an agent runs on every lap.

The history grows lap after lap and the agent fits it to its allowance on each lap, keeping
one ``ctxlab.TokenCounter`` for the whole run so that unchanged messages are not encoded
again. The yardstick is the least any agent must do: encode only the messages that are new
on each lap. Two runs per history size:

* **grown from the start**: the size's history (:func:`histories.history`) assembled in 200
  laps of about equal length (:func:`histories.lap_ends`);
* **200 more laps**: an agent with a long history already counted (its counter warmed up,
  untimed) runs 200 ordinary laps on top of it (:func:`histories.growing`).

For each it times ``ctxlab.history.GrowingHistory`` (extended with each lap's new messages, then
fitted: every message validated, counted and grouped once), ``fit`` with the counter kept
across laps, counting alone with that counter (``counter.messages``), encoding only the new
messages, and ``fit`` with a fresh counter on every lap (no reuse, under a time budget and
extrapolated past it).
"""

from __future__ import annotations

import gc
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import contenders
import histories
import measure

import ctxlab

TITLE = "incremental: fitting a growing history on every lap"
ALLOWANCE = histories.ALLOWANCES["medium"]
LAPS = 200

QUICK = {"sizes": (40, 90), "laps": 10, "repeats": 1, "budget": 0.3}
FULL = {"sizes": histories.SIZES, "laps": LAPS, "repeats": 3, "budget": 15.0}


@dataclass
class Run:
    """One history grown over its laps, and what each way of fitting it took."""

    kind: str  # "grown" or "more"
    size: int  # messages at the start of the timed laps ("more") or at the end ("grown")
    laps: int
    new_messages: int
    final_messages: int
    times: dict[str, list[float]] = field(default_factory=dict)
    no_reuse_estimate: float | None = None
    no_reuse_done: float | None = None
    calls_per_new: dict[str, float] = field(default_factory=dict)
    peak_bytes: int = 0
    checks: dict[str, bool] = field(default_factory=dict)

    def seconds(self, name: str) -> float:
        if name == "no_reuse" and self.no_reuse_estimate is not None:
            return self.no_reuse_estimate
        return measure.median(self.times[name])


def _new_only(messages, ends, start) -> int:
    """Encode only each lap's new messages; return the encoder calls."""
    encoding, calls, previous = ctxlab.encoding(), 0, start
    for end in ends:
        calls += contenders.floor(messages[previous:end], encoding).encoder_calls
        previous = end
    return calls


def _with_counter(messages, ends, start, counter, *, fit: bool) -> list:
    """``fit`` (or count) the growing history on every lap with one counter; return the last kept."""
    live = list(messages[:start])
    kept: list = []
    for end in ends:
        live.extend(messages[len(live):end])
        if fit:
            kept, _ = ctxlab.fit(live, ALLOWANCE, count=counter.message)
        else:
            counter.messages(live)
    return kept


def _with_history(messages, ends, history: ctxlab.history.GrowingHistory) -> list:
    """Extend ``history`` with each lap's new messages and fit it; return the last kept."""
    kept: list = []
    for end in ends:
        history.extend(messages[len(history):end])
        kept, _ = history.fit(ALLOWANCE)
    return kept


def _no_reuse(run: Run, messages, ends, start, budget: float) -> None:
    """``fit`` with a fresh counter each lap, until ``budget`` seconds; extrapolate the rest."""
    counter = ctxlab.TokenCounter()
    tokens = [counter.message(m) for m in messages]
    prefix = [0]
    for value in tokens:
        prefix.append(prefix[-1] + value)
    work = sum(prefix[end] for end in ends)  # every lap counts its whole history
    gc.collect()
    started = time.perf_counter()
    done = 0
    live = list(messages[:start])
    for end in ends:
        live.extend(messages[len(live):end])
        ctxlab.fit(live, ALLOWANCE)
        done += prefix[end]
        if time.perf_counter() - started > budget and done < work:
            run.no_reuse_done = done / work
            run.no_reuse_estimate = (time.perf_counter() - started) / run.no_reuse_done
            return
    run.times["no_reuse"] = [time.perf_counter() - started]


def measure_run(kind: str, size: int, messages: list[dict], ends: list[int], start: int, *,
                repeats: int, budget: float) -> Run:
    """Time the ways of fitting ``messages`` lap by lap (laps end at ``ends``, after ``start``)."""
    run = Run(kind, size, len(ends), ends[-1] - start, ends[-1])

    def warm_counter() -> ctxlab.TokenCounter:
        counter = ctxlab.TokenCounter()
        counter.messages(messages[:start])  # counted on earlier laps: not timed
        return counter

    def warm_history(counter: ctxlab.TokenCounter) -> ctxlab.history.GrowingHistory:
        return ctxlab.history.GrowingHistory(messages[:start], count=counter.message)  # earlier laps: not timed

    for round_ in range(repeats):
        jobs = {
            "new_only": lambda: _new_only(messages, ends, start),
            "history": lambda counter: _with_history(messages, ends, warm_history(counter)),
            "fit": lambda counter: _with_counter(messages, ends, start, counter, fit=True),
            "count": lambda counter: _with_counter(messages, ends, start, counter, fit=False),
        }
        names = list(jobs)
        for name in names[round_ % 4:] + names[: round_ % 4]:
            if name == "new_only":
                took, calls = measure.timed(jobs[name])
                run.calls_per_new["new_only"] = calls / run.new_messages
            elif name == "history":
                counter = warm_counter()
                grown = warm_history(counter)
                before = counter.encoder_calls
                took, kept = measure.timed(lambda grown=grown: _with_history(messages, ends, grown))
                run.calls_per_new[name] = (counter.encoder_calls - before) / run.new_messages
                run.checks["history_same_as_fit"] = [id(m) for m in kept] == [
                    id(m) for m in ctxlab.fit(messages[: ends[-1]], ALLOWANCE)[0]
                ]
            else:
                counter = warm_counter()
                before = counter.encoder_calls
                took, kept = measure.timed(lambda job=jobs[name], counter=counter: job(counter))
                run.calls_per_new[name] = (counter.encoder_calls - before) / run.new_messages
                if name == "fit":
                    run.checks.update({"pairs_ok": ctxlab.pairs_ok(kept),
                                       "fits": ctxlab.TokenCounter().messages(kept) - 3 <= ALLOWANCE})
            run.times.setdefault(name, []).append(took)
    _no_reuse(run, messages, ends, start, budget)
    counter = warm_counter()
    run.peak_bytes, _ = measure.peak_memory(lambda: _with_counter(messages, ends, start, counter, fit=True))
    return run


def run_all(*, sizes, laps, repeats, budget, log=print) -> list[Run]:
    small = histories.history(60)  # warm up: first calls pay for imports and lazy set-up
    measure_run("grown", 60, small, histories.lap_ends(small, 10), 0, repeats=1, budget=0.5)
    runs = []
    for size in sizes:
        messages = histories.history(size)
        ends = histories.lap_ends(messages, laps)
        log(f"  incremental: {size} messages grown in {len(ends)} laps")
        runs.append(measure_run("grown", size, messages, ends, 0, repeats=repeats, budget=budget))
    for size in sizes:
        messages, start, ends = histories.growing(size, laps)
        log(f"  incremental: {laps} more laps on {start} messages")
        runs.append(measure_run("more", start, messages, ends, start, repeats=repeats, budget=budget))
    return runs


def targets(runs: list[Run]) -> list[str]:
    """The issue's incremental target, judged for each kind of run, with the measured ratios."""
    lines = []
    for kind, label in (("grown", "a history grown from the start"), ("more", "laps added to a long history")):
        subset = [r for r in runs if r.kind == kind]
        if not subset:
            continue
        ratios = {r.size: r.seconds("history") / r.seconds("new_only") for r in subset}
        refit = {r.size: r.seconds("fit") / r.seconds("new_only") for r in subset}
        within = [size for size, value in ratios.items() if value <= 1.2]
        verdict = "met" if len(within) == len(ratios) else "missed" if not within else "met in part"
        lines.append(
            f"* the incremental case within 1.2x of encoding only the new messages, {label}: "
            f"**{verdict}** for `GrowingHistory` ("
            + ", ".join(f"{measure.ratio(value)} at {size:,}" for size, value in ratios.items())
            + "); `fit` on the whole history each lap, with a kept counter: "
            + ", ".join(f"{measure.ratio(value)} at {size:,}" for size, value in refit.items())
            + "."
        )
    return lines


def report(runs: list[Run]) -> str:
    out = [f"## {TITLE}", ""]
    out.append(
        f"Allowance {ALLOWANCE:,} tokens, one `ctxlab.TokenCounter` kept for the whole run. Times are "
        f"the whole run's, medians of {len(runs[0].times['fit'])} interleaved runs. \"new only\" encodes "
        "each lap's new messages once and does nothing else; \"count\" is `counter.messages(history)` "
        "on every lap; \"fit\" is `ctxlab.fit(history, allowance, count=counter.message)` on every lap; "
        "\"no reuse\" is `ctxlab.fit(history, allowance)` on every lap, which counts the whole history "
        "again each time; \"GrowingHistory\" is `history.extend(new)` then `history.fit(allowance)` on "
        "every lap, with the same answer as `fit`."
    )
    more = next((r.laps for r in runs if r.kind == "more"), LAPS)
    for kind, heading in (("grown", "Grown from the start"), ("more", f"{more} more laps on a long history")):
        subset = [r for r in runs if r.kind == kind]
        if not subset:
            continue
        out += ["", f"### {heading}", ""]
        if kind == "more":
            out.append("The counter has already seen the history it starts from (counted on earlier laps, not "
                       "timed). Each lap adds an ordinary lap of the generator: an assistant turn and its tool "
                       "results. Here `fit`'s cost per lap grows with the history it walks, while the new "
                       "messages stay few.")
            out.append("")
        rows = []
        for r in subset:
            no_reuse = measure.seconds(r.seconds("no_reuse")) + ("*" if r.no_reuse_estimate else "")
            rows.append([
                f"{r.size:,}", r.laps, f"{r.new_messages:,}", measure.seconds(r.seconds("new_only")),
                measure.seconds(r.seconds("history")),
                measure.seconds(r.seconds("count")), measure.seconds(r.seconds("fit")), no_reuse,
                measure.ratio(r.seconds("history") / r.seconds("new_only")),
                measure.ratio(r.seconds("fit") / r.seconds("new_only")),
                measure.ratio(r.seconds("no_reuse") / r.seconds("fit")) + ("*" if r.no_reuse_estimate else ""),
                f"{r.calls_per_new['new_only']:.2f} / {r.calls_per_new['fit']:.2f}",
                measure.megabytes(r.peak_bytes),
                "yes" if all(r.checks.values()) else "**NO**",
            ])
        label = "messages at the end" if kind == "grown" else "messages at the start"
        out.append(measure.table(
            [label, "laps", "new messages", "new only", "GrowingHistory", "count", "fit", "no reuse",
             "GrowingHistory / new only", "fit / new only", "no reuse / fit", "encoder calls per new message (new only / fit)",
             "peak memory (fit)", "last lap fits, pairs ok"], rows))
    stopped = [r for r in runs if r.no_reuse_estimate is not None]
    if stopped:
        out += ["", "\\* extrapolated: the no-reuse run passed its time budget; its time is the time taken "
                "divided by the share of the tokens it had counted. Stopped at: "
                + "; ".join(f"{r.kind} {r.size:,} after {r.no_reuse_done:.1%}" for r in stopped) + "."]
    out += ["", "### Target", ""]
    out += targets(runs)
    return "\n".join(out)


def main(results_dir: Path, *, quick: bool = False) -> str:
    """Run the benchmark, write ``incremental.json`` to ``results_dir``, return the section."""
    runs = run_all(**(QUICK if quick else FULL))
    (results_dir / "incremental.json").write_text(json.dumps([asdict(r) for r in runs], indent=1),
                                                  encoding="utf-8")
    return report(runs)
