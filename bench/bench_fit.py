"""Benchmark: trimming a long history to an allowance, once.

``ctxlab.fit`` races the straightforward approach of the source texts, LangChain's
``trim_messages`` and the floor (:mod:`contenders`, :mod:`langchain_trim`) on the same
histories (:mod:`histories`) and allowances, in the same run. For each history size and
allowance it reports the median wall time, encoder calls per message, the checks that the
outputs agree where the contenders' rules coincide, and, per size, the peak memory.

The seed approach gets a time budget per run: a run that passes it is stopped and its time
extrapolated from the work it had done (see :func:`contenders.seed_work`), and said so.
"""

from __future__ import annotations

import gc
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import contenders
import histories
import langchain_trim
import measure

import ctxlab

TITLE = "fit: trimming a history to an allowance"
CONTENDERS = ("floor", "ctxlab", "langchain", "seed")
LABELS = {"floor": "floor", "ctxlab": "ctxlab.fit", "langchain": "LangChain", "seed": "seed approach"}

QUICK = {"sizes": (30, 90), "allowances": {"tight": 3_000, "generous": 20_000}, "repeats": 1, "budget": 0.5}
FULL = {"sizes": histories.SIZES, "allowances": histories.ALLOWANCES, "repeats": None, "budget": 20.0}


def repeats_for(size: int) -> int:
    """Runs per contender: more where runs are short."""
    return 7 if size <= 1_000 else 5 if size <= 5_000 else 3


@dataclass
class Case:
    """One history size and one allowance: what each contender took, did and kept."""

    size: int
    allowance_name: str
    allowance: int
    times: dict[str, list[float]] = field(default_factory=dict)
    seed_estimate: float | None = None  # extrapolated seconds when a seed run was stopped
    seed_done: float | None = None  # the share of its work the stopped run had done
    calls: dict[str, float] = field(default_factory=dict)  # encoder calls per message
    checks: dict[str, Any] = field(default_factory=dict)

    def seconds(self, name: str) -> float | None:
        """The median time of ``name``; for a stopped seed run, its extrapolated time."""
        if name == "seed" and self.seed_estimate is not None:
            return self.seed_estimate
        return measure.median(self.times[name]) if self.times.get(name) else None


def _runners(messages: list[dict], lc_messages: list | None, allowance: int) -> dict[str, Any]:
    encoding = ctxlab.encoding()
    runners = {
        "floor": lambda: contenders.floor(messages, encoding),
        "ctxlab": lambda: contenders.ctxlab_fit(messages, allowance),
    }
    if lc_messages is not None:
        def langchain() -> contenders.Outcome:
            kept, calls = langchain_trim.trim(lc_messages, allowance)
            return contenders.Outcome(kept, calls)
        runners["langchain"] = langchain
    return runners


def measure_case(
    messages: list[dict], lc_messages: list | None, allowance_name: str, allowance: int,
    *, repeats: int, budget: float,
) -> Case:
    """Time every contender ``repeats`` times, interleaved, and check what they kept."""
    case = Case(len(messages), allowance_name, allowance)
    runners = _runners(messages, lc_messages, allowance)
    outcomes: dict[str, contenders.Outcome] = {}
    work = contenders.seed_work(messages, allowance)
    names = list(runners)
    for round_ in range(repeats):
        for name in names[round_ % len(names):] + names[: round_ % len(names)]:
            took, outcomes[name] = measure.timed(runners[name])
            case.times.setdefault(name, []).append(took)
        if case.seed_estimate is None:
            _time_seed(case, messages, allowance, budget, work, outcomes)
    n = len(messages)
    case.calls = {name: outcome.encoder_calls / n for name, outcome in outcomes.items()}
    case.calls["seed"] = work.calls / n  # exact, whether the run finished or not
    case.checks = check(messages, lc_messages, allowance, outcomes)
    return case


def _time_seed(case: Case, messages: list[dict], allowance: int, budget: float,
               work: contenders.SeedWork, outcomes: dict[str, contenders.Outcome]) -> None:
    """One run of the seed approach with a deadline; past it, record an extrapolated time."""
    gc.collect()
    start = time.perf_counter()
    try:
        outcome = contenders.seed_fit(messages, allowance, deadline=start + budget)
    except contenders.OutOfTime as stop:
        took = time.perf_counter() - start
        case.seed_done = stop.tokens / work.tokens
        case.seed_estimate = took / case.seed_done
        return
    case.times.setdefault("seed", []).append(time.perf_counter() - start)
    outcomes["seed"] = outcome


def check(messages: list[dict], lc_messages: list | None, allowance: int, outcomes: dict) -> dict[str, Any]:
    """Where the contenders' rules coincide, do their outputs agree?

    * every kept list fits the allowance (counted by ctxlab);
    * ctxlab's and the seed approach's keep every pin and never orphan a tool result;
    * the seed approach keeps what ctxlab keeps (it may add older groups);
    * LangChain keeps every unpinned message ctxlab keeps (ctxlab spends room on pins);
    * the floor's total is ctxlab's count.
    """
    counter = ctxlab.TokenCounter()
    tokens = {id(m): counter.message(m) for m in messages}
    pins = {id(messages[i]) for i in ctxlab.trimming.pinned_indices(messages)}
    goal = next((m for m in messages if m["role"] == "user"), None)

    def fits(kept: list[dict]) -> bool:
        return sum(tokens[id(m)] for m in kept) <= allowance

    result: dict[str, Any] = {"floor_total": outcomes["floor"].total == counter.messages(messages) - 3}
    ours = outcomes["ctxlab"].kept
    ours_ids = {id(m) for m in ours}
    result["ctxlab"] = {"fits": fits(ours), "pairs_ok": ctxlab.pairs_ok(ours), "pins": pins <= ours_ids,
                        "kept": len(ours)}
    if "seed" in outcomes:
        seed = outcomes["seed"].kept
        seed_ids = {id(m) for m in seed}
        result["seed"] = {"fits": fits(seed), "pairs_ok": ctxlab.pairs_ok(seed), "pins": pins <= seed_ids,
                          "kept": len(seed), "keeps_ctxlab": ours_ids <= seed_ids,
                          "extra": len(seed_ids - ours_ids)}
    if lc_messages is not None:
        theirs = [messages[i] for i in langchain_trim.kept_indices(lc_messages, outcomes["langchain"].kept)]
        theirs_ids = {id(m) for m in theirs}
        default, _ = langchain_trim.trim(lc_messages, allowance, start_on=None)
        default_kept = [messages[i] for i in langchain_trim.kept_indices(lc_messages, default)]
        result["langchain"] = {
            "fits": fits(theirs), "pairs_ok": ctxlab.pairs_ok(theirs), "kept": len(theirs),
            "goal": goal is None or id(goal) in theirs_ids,
            "keeps_ctxlab_unpinned": (ours_ids - pins) <= theirs_ids,
            "default_pairs_ok": ctxlab.pairs_ok(default_kept),
        }
    return result


def memory(messages: list[dict], lc_messages: list | None, allowance: int, budget: float) -> dict[str, Any]:
    """Peak memory of one run of each contender (tracemalloc), at one allowance."""
    peaks: dict[str, Any] = {}
    for name, run in _runners(messages, lc_messages, allowance).items():
        peaks[name], _ = measure.peak_memory(run)

    def seed() -> str:
        try:
            contenders.seed_fit(messages, allowance, deadline=time.perf_counter() + budget)
        except contenders.OutOfTime:
            return "stopped"
        return "done"

    peaks["seed"], state = measure.peak_memory(seed)
    peaks["seed_stopped"] = state == "stopped"
    return peaks


def run(*, sizes, allowances, repeats, budget, log=print) -> tuple[list[Case], dict[int, dict], dict[int, dict]]:
    """Measure every size and allowance; return the cases, memory per size, and history facts."""
    cases, memories, facts = [], {}, {}
    with_langchain = langchain_trim.available()
    small = histories.history(60)  # warm up: first calls pay for imports and lazy set-up
    measure_case(small, langchain_trim.to_langchain(small) if with_langchain else None, "warm-up", 5_000,
                 repeats=1, budget=1.0)
    for size in sizes:
        messages = histories.history(size)
        lc_messages = langchain_trim.to_langchain(messages) if with_langchain else None
        facts[size] = histories.describe(messages)
        for name, allowance in allowances.items():
            log(f"  fit: {size} messages, {name} allowance ({allowance} tokens)")
            cases.append(measure_case(messages, lc_messages, name, allowance,
                                      repeats=repeats or repeats_for(size), budget=budget))
        middle = list(allowances.values())[len(allowances) // 2]
        memories[size] = memory(messages, lc_messages, middle, budget / 4)
    return cases, memories, facts


# --- the report ------------------------------------------------------------------------------


def _cell(case: Case, name: str) -> str:
    value = case.seconds(name)
    if value is None:
        return "n/a"
    if name == "seed" and case.seed_estimate is not None:
        return f"≈{measure.seconds(value)}*"
    return measure.seconds(value)


def _versus(case: Case, name: str) -> str:
    mine, theirs = case.seconds("ctxlab"), case.seconds(name)
    if mine is None or theirs is None:
        return "n/a"
    mark = "*" if name == "seed" and case.seed_estimate is not None else ""
    return measure.ratio(theirs / mine) + mark


def _yes(value: bool) -> str:
    return "yes" if value else "**NO**"


def targets(cases: list[Case]) -> list[str]:
    """The issue's targets for one-shot trimming, each with the measured numbers."""
    lines = []
    worst = max(cases, key=lambda c: c.seconds("ctxlab") / c.seconds("floor"))
    ratio = worst.seconds("ctxlab") / worst.seconds("floor")
    lines.append(
        f"* ctxlab within 2x of the floor at every size: **{'met' if ratio <= 2 else 'missed'}**; the "
        f"largest ratio is {measure.ratio(ratio)} ({worst.size:,} messages, {worst.allowance_name})."
    )
    big = [c for c in cases if c.size >= 1_000]
    behind = []
    for case in big:
        for name in ("langchain", "seed"):
            theirs = case.seconds(name)
            if theirs is not None and theirs <= case.seconds("ctxlab"):
                behind.append(f"{LABELS[name]} at {case.size:,} messages, {case.allowance_name}")
    if big:
        closest = min(
            ((case.seconds(n) / case.seconds("ctxlab"), case, n) for case in big for n in ("langchain", "seed")
             if case.seconds(n) is not None),
            key=lambda item: item[0], default=None,
        )
        verdict = "met" if not behind else "missed (" + "; ".join(behind) + ")"
        detail = (f" The closest contender is {LABELS[closest[2]]} at {closest[1].size:,} messages, "
                  f"{closest[1].allowance_name}: {measure.ratio(closest[0])} ctxlab's time.") if closest else ""
        lines.append(f"* ahead of every contender from 1,000 messages up: **{verdict}**.{detail}")
    return lines


def report(cases: list[Case], memories: dict[int, dict], facts: dict[int, dict], *, langchain: str | None,
           plot: str | None) -> str:
    """The markdown section for these measurements."""
    out = [f"## {TITLE}", ""]
    runs = dict.fromkeys(f"{len(c.times['ctxlab'])} at {c.size:,}" for c in cases)
    out.append(
        "One call per history, as an agent makes when it has not counted the history before. "
        f"Times are medians of interleaved runs ({', '.join(runs)} messages); "
        "the ratios compare medians from the same run. "
        + (f"LangChain is `langchain-core` {langchain}, `trim_messages` with "
           f"`{', '.join(f'{k}={v!r}' for k, v in langchain_trim.SETTINGS.items())}` and a tiktoken "
           "counter of the same rule. " if langchain else "LangChain was not installed: its columns are n/a. ")
        + "The seed approach re-counts the whole candidate list for every turn group it considers."
    )
    out += ["", "### Histories", ""]
    rows = []
    for size, fact in facts.items():
        low, mid, high = fact["tool_result_tokens"] or (0, 0, 0)
        rows.append([f"{size:,}", f"{fact['tokens']:,}", fact["roles"].get("tool", 0), f"{low}/{mid}/{high}",
                     fact["parallel_laps"], fact["roles"].get("user", 0), fact["pinned"]])
    out.append(measure.table(["messages", "tokens", "tool results", "result tokens min/median/max",
                              "parallel-call laps", "user turns", "pinned"], rows))
    out += ["", "### Wall time", ""]
    rows = []
    for case in cases:
        rows.append([f"{case.size:,}", f"{case.allowance_name} ({case.allowance:,})",
                     *(_cell(case, n) for n in CONTENDERS),
                     measure.ratio(case.seconds("ctxlab") / case.seconds("floor")),
                     _versus(case, "langchain"), _versus(case, "seed")])
    out.append(measure.table(["messages", "allowance", *(LABELS[n] for n in CONTENDERS), "ctxlab / floor",
                              "LangChain / ctxlab", "seed / ctxlab"], rows))
    stopped = [c for c in cases if c.seed_estimate is not None]
    if stopped:
        out += ["", "\\* extrapolated: the seed approach's run passed its time budget and was stopped; its "
                "time is the time it took divided by the share of its work it had done (tokens encoded, "
                "worked out exactly from each message's count). Stopped at: "
                + "; ".join(f"{c.size:,}/{c.allowance_name} after {c.seed_done:.1%}" for c in stopped) + "."]
    if plot:
        out += ["", f"![wall time against history size, log-log]({plot})"]
    out += ["", "### Encoder calls per message", ""]
    out.append("Strings sent to the tokenizer, divided by the history's length. The floor encodes each "
               "counted string once; ctxlab also remembers short strings (roles), so it can make fewer calls.")
    out.append("")
    rows = [[f"{c.size:,}", c.allowance_name, *(f"{c.calls[n]:.2f}" if n in c.calls else "n/a" for n in CONTENDERS)]
            for c in cases]
    out.append(measure.table(["messages", "allowance", *(LABELS[n] for n in CONTENDERS)], rows))
    out += ["", "### Peak memory", ""]
    out.append("The most memory Python allocated during one call, beyond the history itself (tracemalloc, "
               "middle allowance). ctxlab's includes its counter's memory of each message.")
    out.append("")
    rows = []
    for size, peaks in memories.items():
        seed = measure.megabytes(peaks["seed"]) + (" (stopped)" if peaks["seed_stopped"] else "")
        rows.append([f"{size:,}", *(measure.megabytes(peaks[n]) if n in peaks else "n/a"
                                    for n in ("floor", "ctxlab", "langchain")), seed])
    out.append(measure.table(["messages", *(LABELS[n] for n in CONTENDERS)], rows))
    out += ["", "### Do the outputs agree?", ""]
    out.append(
        "Each kept list is checked with ctxlab's own counts and `ctxlab.pairs_ok`. LangChain pins only "
        "the system message, so ctxlab, which also keeps the task and pinned messages, keeps fewer of "
        "the newest messages; every unpinned message ctxlab keeps must be in LangChain's list too. "
        "`start_on=None` is LangChain's default, run once per case only for this check."
    )
    out.append("")
    rows = []
    for c in cases:
        ch = c.checks
        seed = ch.get("seed")
        lc = ch.get("langchain")
        rows.append([
            f"{c.size:,}", c.allowance_name,
            _yes(ch["ctxlab"]["fits"] and ch["ctxlab"]["pairs_ok"] and ch["ctxlab"]["pins"]) + f" ({ch['ctxlab']['kept']})",
            (_yes(seed["fits"] and seed["pairs_ok"] and seed["pins"] and seed["keeps_ctxlab"])
             + f" ({seed['kept']}, +{seed['extra']} older)") if seed else "not run to the end",
            (_yes(lc["fits"] and lc["pairs_ok"] and lc["keeps_ctxlab_unpinned"]) + f" ({lc['kept']})") if lc else "n/a",
            ("kept" if lc["goal"] else "dropped") if lc else "n/a",
            ("none" if lc["default_pairs_ok"] else "orphans tool results") if lc else "n/a",
            _yes(ch["floor_total"]),
        ])
    out.append(measure.table(["messages", "allowance", "ctxlab ok (kept)", "seed ok (kept)", "LangChain ok (kept)",
                              "LangChain: the task", "LangChain, start_on=None", "floor = count"], rows))
    out += ["", "### Targets", ""]
    out += targets(cases)
    return "\n".join(out)


def plot(cases: list[Case], path: Path) -> None:
    """Wall time against history size, log-log, one panel per allowance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(c.allowance_name for c in cases))
    figure, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.8), sharey=True, squeeze=False)
    styles = {"floor": ("k", ":"), "ctxlab": ("tab:blue", "-"), "langchain": ("tab:green", "-"), "seed": ("tab:red", "-")}
    for axis, name in zip(axes[0], names, strict=True):
        subset = [c for c in cases if c.allowance_name == name]
        for contender in CONTENDERS:
            points = [(c.size, c.seconds(contender), c.seed_estimate is not None and contender == "seed")
                      for c in subset if c.seconds(contender) is not None]
            if not points:
                continue
            colour, line = styles[contender]
            axis.plot([p[0] for p in points], [p[1] for p in points], line, color=colour, label=LABELS[contender])
            for size, value, guessed in points:
                axis.plot(size, value, "o", color=colour, fillstyle="none" if guessed else "full")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_title(f"{name} allowance ({subset[0].allowance:,} tokens)")
        axis.set_xlabel("messages in the history")
        axis.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("seconds per call (median)")
    axes[0][0].legend(fontsize=8, title="open marker: extrapolated", title_fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(results_dir: Path, *, quick: bool = False) -> str:
    """Run the benchmark, write ``fit.json`` and ``fit.png`` to ``results_dir``, return the section."""
    options = QUICK if quick else FULL
    cases, memories, facts = run(**options)
    version = langchain_trim.version() if langchain_trim.available() else None
    raw = {"cases": [asdict(c) for c in cases], "memory": {str(k): v for k, v in memories.items()},
           "histories": {str(k): v for k, v in facts.items()}, "langchain_core": version}
    (results_dir / "fit.json").write_text(json.dumps(raw, indent=1, default=str), encoding="utf-8")
    plot(cases, results_dir / "fit.png")
    return report(cases, memories, facts, langchain=version, plot="fit.png")


if __name__ == "__main__":  # pragma: no cover - run through run.py
    raise SystemExit("run it with: python bench/run.py --only fit")
