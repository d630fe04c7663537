"""The benchmark report's bar charts, in the lab's theme colours.

matplotlib is imported when a chart is drawn, not when this module is imported. Each function
draws on the ``ax`` it is given, or on a new figure's axes (not pyplot's, so nothing is shown
unless the caller shows it), and returns the axes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from echomq_lab import theme
from echomq_lab.report.results import BAR_COLOURS, Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _new_axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    return Figure(figsize=size, layout="constrained").add_subplot()


def throughput_chart(rep: Report, ax: Axes | None = None) -> Axes:
    """Bars of jobs per second (median), whiskers from min to max, each value written on top."""
    ax = _new_axes(ax, (9, 4))
    bars = rep.bars
    xs = list(range(len(bars)))
    heights = [b.median for b in bars]
    below = [b.median - b.low for b in bars]
    above = [b.high - b.median for b in bars]
    ax.bar(
        xs,
        heights,
        color=[b.colour for b in bars],
        yerr=[below, above],
        capsize=4,
        ecolor=theme.INK,
    )
    for x, b in zip(xs, bars, strict=True):
        ax.annotate(
            f"{b.median:,.0f}", (x, b.median), xytext=(6, 3), textcoords="offset points", fontsize=9
        )
    ax.set_xticks(xs, [b.label for b in bars])
    ax.set_ylabel("jobs/s (median; whiskers min..max)")
    ax.set_title(f"One connection, full job cycle — measured {rep.date[:10]}")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return ax


def wire_chart(rep: Report, ax: Axes | None = None) -> Axes:
    """Per job, ours beside python-rq's: round trips from the client, commands on the server."""
    ax = _new_axes(ax, (6, 3.5))
    measures = ("round trips", "commands")
    width = 0.38
    colours = {"echomq cycle": BAR_COLOURS["ours"], "python-rq": BAR_COLOURS["rq"]}
    for i, row in enumerate(rep.wire):
        xs = [m + (i - (len(rep.wire) - 1) / 2) * width for m in range(len(measures))]
        values = [row.round_trips, row.commands]
        ax.bar(xs, values, width, label=row.who, color=colours.get(row.who, theme.MUTED))
        for x, v in zip(xs, values, strict=True):
            ax.annotate(
                f"{v:.0f}",
                (x, v),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=9,
            )
    ax.set_xticks(range(len(measures)), [f"{m} per job" for m in measures])
    ax.set_ylabel("per job")
    ax.legend()
    ax.set_title("What one job costs on the wire")
    return ax
