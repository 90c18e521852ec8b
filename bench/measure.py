"""Timing, memory and formatting helpers shared by the benchmarks.

The machine is shared, so a single timing means little: the benchmarks run each contender
several times, interleaved (one run of each, then the next round), and report medians and
ratios taken within one run.

>>> median([3.0, 1.0, 2.0])
2.0
>>> seconds(0.00042), seconds(3.2), megabytes(5 * 2**20)
('0.42 ms', '3.20 s', '5.0 MB')
"""

from __future__ import annotations

import datetime
import gc
import os
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any


def median(values: Sequence[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    """``(wall seconds, result)`` of one call, after a garbage collection."""
    gc.collect()
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def peak_memory(run: Callable[[], Any]) -> tuple[int, Any]:
    """``(bytes, result)``: the most memory Python allocated during the call, above what was
    allocated before it (tracemalloc; the tokenizer's own buffers in Rust are not seen)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, result


def seconds(value: float) -> str:
    """A duration for a table: milliseconds below one second, else seconds."""
    if value < 1:
        return f"{value * 1000:.2f} ms" if value < 0.01 else f"{value * 1000:.1f} ms"
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def megabytes(value: float) -> str:
    """Bytes as MB (2**20) with one decimal."""
    return f"{value / 2**20:.1f} MB"


def ratio(value: float) -> str:
    """A ratio for a table: ``1.07x``, ``35x``."""
    return f"{value:.2f}x" if value < 10 else f"{value:.0f}x"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table; numbers are right-aligned.

    >>> print(table(["a", "b"], [[1, "x"]]))
    | a | b |
    | ---: | --- |
    | 1 | x |
    """
    def align(column: int) -> str:
        numeric = all(str(row[column])[:1].isdigit() or str(row[column])[:1] in "≈≥~-" for row in rows)
        return "---:" if rows and numeric else "---"

    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align(i) for i in range(len(headers))) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """One line naming the machine, the interpreter and the load it carried at the start."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()} on "
        f"{platform.system()} {platform.release()}; load average at start {load}"
    )


def today() -> str:
    """The date and time of the run, UTC."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
