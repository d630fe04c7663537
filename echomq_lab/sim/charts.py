"""Pictures of a simulation run: every worker's leases on one timeline, the verdicts, and runs
side by side.

This module imports matplotlib; the rest of :mod:`echomq_lab.sim` does not, so import it only
to draw.

:func:`lease_timeline` draws one row per worker and one bar per lease, from the claim to the
settle, coloured by how the lease ended. A lease the fence cut off (its settle was refused) is
hatched and ends in a cross; a thin tick marks its deadline, so the stall past it shows. A lease
that ran a job a second time starts with a ring.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from echomq_lab.sim.follow import Lease
from echomq_lab.sim.run import Result
from echomq_lab.theme import MUTED, STATE_COLOURS, VERDICTS, message_html, on_page

#: How a lease ended -> its colour on the timeline.
OUTCOME_COLOURS: dict[str, str] = {
    "completed": STATE_COLOURS["completed"],
    "retried": STATE_COLOURS["scheduled"],
    "dead": STATE_COLOURS["dead"],
    "refused": STATE_COLOURS["active"],
    "lost": MUTED,
}
OUTCOME_LABELS: dict[str, str] = {
    "completed": "completed",
    "retried": "failed, retried",
    "dead": "failed at the cap: dead",
    "refused": "stalled; settle refused (stale token)",
    "lost": "abandoned (reply lost or run stopped)",
}


def _worker_order(names: Sequence[str]) -> list[str]:
    """The distinct worker names, ``w0, w1, ... w10`` in number order, others after them."""

    def key(name: str) -> tuple[int, str]:
        digits = name.lstrip("w")
        return (int(digits), name) if digits.isdigit() else (1 << 30, name)

    return sorted(set(names), key=key)


#: Each bar's height, as a share of its worker's row.
BAR_HEIGHT = 0.6


def _draw_lease(ax: Axes, lease: Lease, y: int) -> None:
    """One lease's bar on row ``y``; a cut-off one hatched, with its deadline tick and a cross
    at its refused settle; a ring where a job runs again."""
    half = BAR_HEIGHT / 2
    colour = OUTCOME_COLOURS.get(lease.outcome, MUTED)
    refused = lease.outcome == "refused"
    ax.broken_barh(
        [(lease.start, max(lease.end - lease.start, 0.0005))],
        (y - half, BAR_HEIGHT),
        facecolors=colour,
        edgecolors="black" if refused else colour,
        linewidth=0.4,
        hatch="///" if refused else None,
    )
    if refused:
        deadline = lease.start + lease.lease_ms / 1000
        ax.plot([deadline, deadline], [y - half, y + half], color="black", linewidth=0.8)
        ax.plot([lease.end], [y], marker="x", color="black", markersize=6)
    if lease.ran_again:
        ax.plot([lease.start], [y], marker="o", markerfacecolor="none",
                markeredgecolor="black", markersize=6)


def _label_axes(ax: Axes, workers: Sequence[str], title: str | None) -> None:
    """One tick per worker, top to bottom; time along the bottom."""
    ax.set_yticks(range(len(workers)), list(workers))
    ax.set_ylabel("worker")
    ax.set_ylim(-0.7, len(workers) - 0.3)
    ax.invert_yaxis()
    ax.margins(x=0.01)
    ax.set_xlabel("seconds since the run began")
    ax.set_title(title or "Each worker's leases, claim to settle")


def _legend(ax: Axes, leases: Sequence[Lease]) -> None:
    """A legend below the axes: the outcomes that occur, the deadline tick, the ring."""
    used = [name for name in OUTCOME_COLOURS if any(le.outcome == name for le in leases)]
    handles: list[Patch | Line2D] = [
        Patch(facecolor=OUTCOME_COLOURS[name], label=OUTCOME_LABELS[name],
              hatch="///" if name == "refused" else None,
              edgecolor="black" if name == "refused" else OUTCOME_COLOURS[name])
        for name in used
    ]
    handles.append(Line2D([], [], color="black", marker="|", linestyle="none", markersize=9,
                          label="the stalled lease's deadline"))
    handles.append(Line2D([], [], color="black", marker="o", markerfacecolor="none",
                          linestyle="none", label="the job runs again"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3,
              fontsize="small", frameon=False)


def lease_timeline(
    leases: Sequence[Lease], ax: Axes | None = None, *, title: str | None = None
) -> Axes:
    """Draw ``leases`` on ``ax`` (a new figure's axes if None): one row per worker."""
    if ax is None:
        ax = Figure(figsize=(10, 4)).add_subplot()
    workers = _worker_order([lease.worker for lease in leases])
    row = {name: i for i, name in enumerate(workers)}
    for lease in leases:
        _draw_lease(ax, lease, row[lease.worker])
    _label_axes(ax, workers, title)
    _legend(ax, leases)
    return ax


def verdicts_html(verdicts: Mapping[str, bool]) -> str:
    """The audit's verdicts as HTML lines: a green tick for each that held, a red cross if not."""
    return "".join(message_html(name, ok) for name, ok in verdicts.items())


#: The figures :func:`side_by_side_html` lists above the verdicts, with their words.
SIDE_FIGURES = (
    ("completed", "jobs completed"),
    ("dead", "jobs dead"),
    ("refusals", "settles turned away"),
    ("stale_completes_accepted", "stale completes accepted"),
    ("settled_after_lease_lost", "jobs settled by a worker that had lost its lease"),
    ("tokens_minted_twice", "tokens handed to two leases"),
)


def _mark(ok: bool) -> str:
    look = VERDICTS[ok]
    return f'<span style="color:{on_page(look.colour)}">{look.mark}</span>'


def side_by_side_html(runs: Mapping[str, Result]) -> str:
    """An HTML table with one column per run (its heading the mapping's key): the figures of
    :data:`SIDE_FIGURES`, then a ✓ or ✗ for each verdict."""
    cell = 'style="padding:2px 10px;text-align:{}"'
    head = "".join(f"<th {cell.format('right')}>{html.escape(name)}</th>" for name in runs)
    rows = [f"<tr><th></th>{head}</tr>"]
    for attr, words in SIDE_FIGURES:
        values = "".join(f"<td {cell.format('right')}>{getattr(r, attr)}</td>"
                         for r in runs.values())
        rows.append(f"<tr><td {cell.format('left')}>{words}</td>{values}</tr>")
    names = list(next(iter(runs.values())).verdicts) if runs else []
    for name in names:
        marks = "".join(f"<td {cell.format('right')}>{_mark(r.verdicts.get(name, False))}</td>"
                        for r in runs.values())
        rows.append(f"<tr><td {cell.format('left')}>{html.escape(name)}</td>{marks}</tr>")
    return '<table class="emq-side-by-side">' + "".join(rows) + "</table>"
