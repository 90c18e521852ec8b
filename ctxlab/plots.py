"""Matplotlib figures the lessons draw. matplotlib is imported only when a plot is made.

>>> fig = plot_growth([100, 220, 350, 470])
>>> [ax.get_title() for ax in fig.axes]
['Prompt tokens per lap', 'Billed input so far']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .budget import Allocation

__all__ = ["plot_growth", "plot_allocation", "ALLOCATION_COLOURS"]

ALLOCATION_COLOURS = {
    "fixed": "#4c72b0",
    "scratchpad": "#dd8452",
    "history": "#55a868",
    "reserved output": "#8172b3",
    "free": "#e5e5e5",
    "over budget": "#c44e52",
}


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib ships with the course
        raise ImportError("plots need matplotlib: run `pip install matplotlib` or `make setup`") from err
    return plt


def plot_growth(
    per_lap: Sequence[int] | Mapping[str, Sequence[int]],
    *,
    title: str | None = None,
) -> Figure:
    """Prompt tokens per lap (left) and the cumulative billed input (right).

    ``per_lap`` is one series (a list of prompt sizes, one per model call) or several by name,
    e.g. ``{"keep everything": [...], "trimmed": [...]}``.
    """
    plt = _pyplot()
    series = per_lap if isinstance(per_lap, Mapping) else {"prompt": per_lap}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    for name, values in series.items():
        laps = range(1, len(values) + 1)
        left.plot(laps, values, marker=".", label=name)
        right.plot(laps, list(accumulate(values)), marker=".", label=name)
    left.set_title("Prompt tokens per lap")
    right.set_title("Billed input so far")
    for ax in (left, right):
        ax.set_xlabel("lap (model call)")
        ax.set_ylabel("tokens")
        ax.grid(alpha=0.3)
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    if len(series) > 1:
        left.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_allocation(allocation: Allocation, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """One horizontal bar of the window, to scale: fixed, scratchpad, history, free, reserved.

    An over-budget allocation runs past the window's edge (the red line) and says by how much
    in its title.
    """
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=(11, 2.2))
    else:
        fig = ax.figure
    parts = [
        ("fixed", allocation.fixed),
        ("scratchpad", allocation.scratchpad),
        ("history", allocation.history),
        ("free", max(allocation.free, 0)),
        ("reserved output", allocation.reserved_output),
    ]
    left = 0
    end = max(allocation.window, allocation.used)
    for name, width in parts:
        if width <= 0:
            continue
        ax.barh(0, width, left=left, height=0.6, color=ALLOCATION_COLOURS[name], edgecolor="white",
                label=f"{name}: {width:,}")
        if width > end * 0.08:
            ax.text(left + width / 2, 0, f"{name}\n{width:,}", ha="center", va="center", fontsize=9)
        left += width
    heading = title or "The context window"
    if allocation.over_budget:
        ax.axvline(allocation.window, color=ALLOCATION_COLOURS["over budget"], linewidth=3)
        ax.annotate("window ends here", (allocation.window, 0.32), xytext=(4, 0), textcoords="offset points",
                    color=ALLOCATION_COLOURS["over budget"], fontsize=9, va="bottom")
        heading += f": OVER BUDGET by {-allocation.free:,} tokens"
    ax.set_title(heading, color=ALLOCATION_COLOURS["over budget"] if allocation.over_budget else "black")
    ax.set_xlim(0, end * 1.01)
    ax.set_ylim(-0.5, 0.5)
    ax.set_yticks([])
    ax.set_xlabel(f"tokens (window {allocation.window:,})")
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
