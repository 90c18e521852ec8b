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

    from ..budget import Allocation
    from ..replaying import ReplayResult

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
    if isinstance(per_lap, Mapping):  # named series say their names, even when there is one
        left.legend(loc="upper left", fontsize=9)
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


# -- replays (lesson 06) ------------------------------------------------------------------------

__all__ += ["plot_replay", "plot_probe_survival", "SURVIVAL_COLOURS"]


def plot_replay(results: Sequence[ReplayResult], *, title: str | None = None) -> Figure:
    """Replays side by side: prompt tokens per lap, billed input so far, cached prefix per lap.

    ``results`` are :class:`ctxlab.ReplayResult` objects (from :func:`ctxlab.replay`);
    the budget's input limit, when known, is drawn as a dashed line on the first panel.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.9))
    limit = next((r.input_limit for r in results if r.input_limit), None)
    for result in results:
        laps = [r.lap for r in result.laps]
        axes[0].plot(laps, [r.tokens for r in result.laps], marker=".", label=result.policy)
        axes[1].plot(laps, [r.billed for r in result.laps], marker=".", label=result.policy)
        axes[2].plot(laps, [r.reused for r in result.laps], marker=".", label=result.policy)
    if limit:
        axes[0].axhline(limit, color=ALLOCATION_COLOURS["over budget"], linestyle="--", linewidth=1)
        # at the right end, just above the line: the lines that stay under the limit end lower
        axes[0].annotate(f"input limit {limit:,}", (1, limit), xycoords=("axes fraction", "data"),
                         xytext=(-3, 3), textcoords="offset points", ha="right", va="bottom",
                         color=ALLOCATION_COLOURS["over budget"], fontsize=8)
    for ax, heading in zip(axes, ("Prompt tokens per lap", "Billed input so far",
                                  "Prefix reused from the previous lap"), strict=True):
        ax.set_title(heading)
        ax.set_xlabel("lap (model call)")
        ax.set_ylabel("tokens")
        ax.grid(alpha=0.3)
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    _legend_below(fig, *axes[0].get_legend_handles_labels(), title)
    return fig


def _legend_below(fig: Figure, handles: Sequence, labels: Sequence[str], title: str | None) -> None:
    """One legend for the whole figure, under its panels, where it covers no data; then the
    title above them. Margins are in inches, so tall and short figures look the same."""
    columns = min(len(labels), 4) or 1
    rows = -(-len(labels) // columns)
    height = fig.get_figheight()
    bottom = (0.12 + 0.22 * rows) / height
    top = 1 - (0.3 / height if title else 0)
    if title:
        fig.suptitle(title, y=1 - 0.08 / height, va="top")
    fig.tight_layout(rect=(0, bottom, 1, top))
    fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.04 / height))


def plot_probe_survival(results: Sequence[ReplayResult], *, title: str | None = None) -> Figure:
    """A grid per policy: for each probe (goal, constraint, failure...), the laps whose prompt
    holds it (dark green), lacks it (light red) or comes before the fact appears (white); the
    legend under the grids says so."""
    plt = _pyplot()
    from matplotlib.colors import ListedColormap

    names = list(results[0].probes) if results else []
    fig, axes = plt.subplots(len(results), 1, figsize=(12, 0.55 * max(len(names), 1) * len(results) + 1.2),
                             squeeze=False)
    colours = ListedColormap(list(SURVIVAL_COLOURS.values()))
    for ax, result in zip(axes[:, 0], results, strict=True):
        grid = []
        for name in names:
            start = result.first_seen.get(name)
            grid.append([
                0 if start is None or r.lap < start else (2 if r.probes.get(name) else 1)
                for r in result.laps
            ])
        ax.imshow(grid, aspect="auto", cmap=colours, vmin=0, vmax=2, interpolation="nearest",
                  extent=(0.5, len(result.laps) + 0.5, len(names) - 0.5, -0.5))
        ax.set_yticks(range(len(names)), names)
        ax.set_title(result.policy, fontsize=10, loc="left")
        ax.set_xlabel("lap")
    from matplotlib.patches import Patch

    keys = [Patch(facecolor=colour, edgecolor="#888888", label=meaning) for meaning, colour in SURVIVAL_COLOURS.items()]
    _legend_below(fig, keys[::-1], [k.get_label() for k in keys[::-1]], title)
    return fig


SURVIVAL_COLOURS = {
    "not yet in the run (the fact appears later)": "#ffffff",
    "lost: in the run, not in the prompt": "#f4b6b6",
    "in the prompt": "#2f6f4f",
}
"""What each colour of :func:`plot_probe_survival` means (also its legend)."""
