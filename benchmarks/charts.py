"""The benchmark's charts: throughput bars, the wire cost per job, cost as the queue grows.

matplotlib is imported when a chart is drawn, not when this module is imported. Each function
draws on the ``ax`` it is given, or on a new figure's axes (not pyplot's, so nothing is shown
unless the caller shows it), and returns the axes; :func:`save` writes one as a PNG.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from benchmarks.results import BAR_COLOURS, Report, ScalePoint, points
from echomq_lab.widgets import look as theme

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


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


#: The lines of the chart: the field, its label, and how to turn it into microseconds.
SERIES: tuple[tuple[str, str, str], ...] = (
    ("cycle_jobs_s", "job cycle (per job)", "-"),
    ("click_p95_ms", "panel click, p95", "--"),
    ("command_p99_us", "script runs in the clicks, p99", "-."),
    ("longest_command_us", "longest server command in the clicks (when 1 ms or more)", ":"),
)
_COLOURS = ("#3b6ea8", "#c2553a")


def _micros(p: ScalePoint, key: str) -> float:
    if key == "cycle_jobs_s":
        return 1e6 / p.cycle_jobs_s
    if key == "click_p95_ms":
        return p.click_p95_ms * 1000
    if key == "command_p99_us":
        return float(max(p.command_p99_us, 1))
    return float(p.longest_command_us) if p.longest_command_us else float("nan")


def scale_chart(results: Mapping[str, Any], ax: Axes | None = None) -> Axes:
    """Each figure against the depth on log-log axes, one colour per keyspace: flat is good."""
    ax = _new_axes(ax, (10, 4.6))
    pts = points(results)
    spaces = list(dict.fromkeys(p.keyspace for p in pts))
    for key, label, style in SERIES:
        for colour, space in zip(_COLOURS, spaces, strict=False):
            mine = [p for p in pts if p.keyspace == space]
            ax.plot(
                [p.depth for p in mine], [_micros(p, key) for p in mine], style, marker="o",
                color=colour, label=f"{label}, {space}",
            )  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("jobs in the queue")
    ax.set_ylabel("microseconds")
    ax.set_title("Cost as the queue grows (log-log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def save(draw: Callable[[Axes | None], Axes], path: Path) -> Path:
    """Draw one chart on a figure of its own and write it to ``path`` as a PNG."""
    figure = cast("Figure", draw(None).figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path
