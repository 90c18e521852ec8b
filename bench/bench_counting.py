"""How far each offline counter lands from what the API billed, on real recorded requests.

Every request of both files of ``../shared/recordings/`` (``openai-chat.jsonl``, the one the
rules were fitted on, and ``openai-chat-more.jsonl``, from projects they were not) and of
``../shared/real-runs/`` (read by ``tests/support/recordings.py``) is counted by each contender of
``counters.py``, in one run, and compared with the ``prompt_tokens`` the API reported. A count is *on the bill* when it is within
max(2%, 3 tokens) of it, the tolerance ``tests/test_billing.py`` holds ctxlab to. A counter that
raises on a request is counted as failing it (and off the bill).

Three tables: by file, by kind of request (no tools; tools or legacy functions; a
``response_format`` without tools), and by model family. ``--quick`` counts the first 60
requests only.
"""

from __future__ import annotations

import json
import statistics
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import counters
import measure

import ctxlab.billing

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support import recordings  # noqa: E402

KINDS = ("plain", "tools", "format")


def _on_bill(counted: int | None, billed: int) -> bool:
    return counted is not None and abs(counted - billed) <= max(3, 0.02 * billed)


def measure_all(requests: list, contenders: dict) -> dict[str, list[int | None]]:
    """Each contender's count of each request (``None`` where it raised)."""
    counts: dict[str, list[int | None]] = {}
    for name, count in contenders.items():
        row = []
        for recorded in requests:
            try:
                with warnings.catch_warnings():  # a key ctxlab leaves out is counted without it, as its users see
                    warnings.simplefilter("ignore", ctxlab.billing.UnknownKeyWarning)
                    warnings.simplefilter("ignore", ctxlab.billing.UpperBoundWarning)
                    row.append(int(count(recorded.request)))
            except Exception:  # a peer's failure is a result, not a crash of the bench
                row.append(None)
        counts[name] = row
    return counts


def _summary(pairs: list[tuple[int | None, int]]) -> list[str]:
    """Cells: requests, on the bill, median and 90th percentile of |error|, failures."""
    errors = [abs(c - b) / b * 100 for c, b in pairs if c is not None]
    on = sum(_on_bill(c, b) for c, b in pairs)
    failed = sum(c is None for c, _ in pairs)
    if errors:
        p90 = statistics.quantiles(errors, n=10)[-1] if len(errors) > 1 else errors[0]
        spread = [f"{statistics.median(errors):.1f}%", f"{p90:.1f}%"]
    else:
        spread = ["-", "-"]
    return [str(len(pairs)), f"{on} ({on / len(pairs):.0%})", *spread, str(failed)]


def _table(requests, counts, group, key=None) -> str:
    """One row per counter and value of ``group`` (an attribute of the requests, or ``key``'s
    value for each), then ``all``."""
    key = key or (lambda recorded: getattr(recorded, group))
    values = [key(r) for r in requests]
    groups = sorted(set(values), key=lambda g: (KINDS.index(g) if g in KINDS else 9, g))
    headers = ["counter", group, "requests", "on the bill", "median error", "90th pct error", "failed"]
    rows = []
    for name, row in counts.items():
        for value in [*groups, "all"]:
            pairs = [(c, r.billed) for c, r, v in zip(row, requests, values, strict=True)
                     if value == "all" or v == value]
            if pairs:
                rows.append([name, value, *_summary(pairs)])
    return measure.table(headers, rows)


def main(results_dir: Path, *, quick: bool = False) -> str:
    reason = recordings.shared_available()
    if reason:
        raise RuntimeError(reason)
    files = {"openai-chat.jsonl": list(recordings.shared())}
    if recordings.more_available() is None:
        files["openai-chat-more.jsonl"] = list(recordings.shared(recordings.MORE))
    if recordings.real_available() is None:
        files["real-runs"] = list(recordings.real())
    source = {id(r): name for name, chosen in files.items() for r in chosen}
    requests = [r for chosen in files.values() for r in chosen]
    if quick:
        requests = requests[:60]
    contenders, missing = counters.contenders()
    counts = measure_all(requests, contenders)
    raw = defaultdict(list)
    for index, recorded in enumerate(requests):
        raw["requests"].append({"label": recorded.label, "model": recorded.model, "kind": recorded.kind,
                                "billed": recorded.billed, **{n: counts[n][index] for n in counts}})
    (results_dir / "counting.json").write_text(json.dumps(raw["requests"], indent=0) + "\n")
    return "\n".join([
        "## Counting: offline counters against recorded bills",
        "",
        f"{len(requests)} real requests with the `prompt_tokens` the API billed. On the bill: within "
        "max(2%, 3 tokens). Error: |counted - billed| / billed, over the requests the counter did "
        "not fail on." + (f" Not installed, so not measured: {', '.join(missing)} "
                          "(`make bench` installs bench/requirements-counting.txt)." if missing else ""),
        "",
        "### By file",
        "",
        _table(requests, counts, "file", key=lambda r: source[id(r)]),
        "",
        "### By kind of request",
        "",
        _table(requests, counts, "kind"),
        "",
        "### By model family",
        "",
        _table(requests, counts, "family"),
    ])
