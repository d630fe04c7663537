"""A run read back: its leases rebuilt from the ledger, a worker or a job to follow (a key
``"worker:w0"`` or ``"job:JOB..."``), and the pictures, as HTML and SVG (nothing to install:
they draw in the browser too), in the look's colours and the theme's ink.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from echomq_lab.palette import (
    INK_ON_PAGE,
    MUTED,
    SOFT,
    STATE_COLOURS,
    VERDICTS,
    message_html,
    on_page,
)
from echomq_lab.sim.audit import SETTLES, TURNED_AWAY, Call, accepted, dead_lettered
from echomq_lab.sim.leases import Lease

if TYPE_CHECKING:
    from echomq_lab.sim.run import Result


#: How each way a lease can end reads in a story.
STORY_WORDS: dict[str, str] = {
    "completed": "its complete was accepted: the job is retired",
    "retried": "its work failed; its retry was accepted",
    "dead": "its work failed at the attempts cap; its retry dead-lettered the job",
    "refused": "its settle was refused: the token was stale",
    "gone": "its settle found the job gone: another lease had retired it",
    "lost": "it never settled (reply lost, or the run stopped)",
}


def _by_job(all_leases: Iterable[Lease]) -> dict[str, list[Lease]]:
    """Each job's leases in token order (jobs in the order first seen)."""
    by_job: dict[str, list[Lease]] = {}
    for lease in all_leases:
        by_job.setdefault(lease.job_id, []).append(lease)
    return {job_id: sorted(mine, key=lambda le: le.token) for job_id, mine in by_job.items()}


def ran_twice(all_leases: Sequence[Lease]) -> list[str]:
    """The jobs whose first lease stalled and was refused, and whose second completed."""
    return [job_id for job_id, mine in _by_job(all_leases).items()
            if [(le.outcome, le.stalled) for le in mine] == [("refused", True),
                                                             ("completed", False)]]


def work_lost(all_leases: Sequence[Lease]) -> list[str]:
    """The jobs retired by one lease while a later one was at work (whose settle then found the
    job gone: only without the fence); first those whose cut-off lease did not stall."""
    found: list[tuple[bool, str]] = []
    for job_id, mine in _by_job(all_leases).items():
        done = [le.token for le in mine if le.outcome == "completed"]
        lost = [le for le in mine if done and le.gone and le.token > min(done)]
        if lost:
            found.append((all(le.stalled for le in lost), job_id))
    return [job_id for _, job_id in sorted(found, key=lambda f: f[0])]


def _told(lease: Lease) -> str:
    """Whether ``lease`` stalled, and how it ended, in words."""
    how = "stalled past its lease" if lease.stalled else "worked within its lease"
    return f"{how}; {STORY_WORDS['gone' if lease.gone else lease.outcome]}"


def lease_story(all_leases: Sequence[Lease], job_id: str) -> list[str]:
    """One line per lease of ``job_id`` in token order, in words (no times, no workers)."""
    mine = _by_job(all_leases).get(job_id, [])
    return [f"token {le.token}: claimed; {_told(le)}" for le in mine]


Window = tuple[float, float]
#: The most jobs offered to follow.
MOST_JOBS = 30
#: The order and the words of :func:`tally_text`.
_TALLY = {"claims": "claims", "completed": "completed", "retried": "retried",
          "dead": "sent to dead",
          "reaped": "leases reaped", "EMQSTALE": "refused EMQSTALE",
          "job gone": "turned away, job gone"}


def tally(calls: Iterable[Call]) -> dict[str, int]:
    """What the server has answered so far; settles turned away counted by their reply."""
    counts: Counter[str] = Counter()
    for call in calls:
        if accepted(call, "claim") and call.job_id:
            counts["claims"] += 1
        elif accepted(call, "complete"):
            counts["completed"] += 1
        elif accepted(call, "retry"):
            counts["dead" if dead_lettered(call) else "retried"] += 1
        elif call.verb in SETTLES and call.outcome in TURNED_AWAY:
            counts[call.reply] += 1
        elif accepted(call, "reap") and call.reply not in ("", "0"):
            counts["reaped"] += int(call.reply) if call.reply.isdigit() else 1
    return dict(counts)


def tally_text(counts: dict[str, int]) -> str:
    """The tally in words, e.g. ``claims 80 · completed 57 · refused EMQSTALE 9``."""
    parts = [f"{words} {counts.get(name, 0)}" for name, words in _TALLY.items()]
    parts += [f"{name} {n}" for name, n in sorted(counts.items()) if name not in _TALLY]
    return " · ".join(parts)


def worker_order(names: Iterable[str]) -> list[str]:
    """The distinct worker names, ``w0, w1, ... w10`` in number order, others after them."""
    numbered = [(int(n[1:]) if n[:1] == "w" and n[1:].isdigit() else 1 << 30, n)
                for n in set(names)]
    return [name for _, name in sorted(numbered)]


def followable(all_leases: Sequence[Lease]) -> list[tuple[str, str]]:
    """What the reader may follow, as (label, key): jobs that ran twice, other jobs with more
    than one lease, then every worker."""
    twice = ran_twice(all_leases)
    counts = Counter(le.job_id for le in all_leases)
    again = [j for j, n in counts.items() if n > 1 and j not in twice]
    out = [(f"job {j} ({counts[j]} leases{', ran twice' if j in twice else ''})", f"job:{j}")
           for j in (twice + again)[:MOST_JOBS]]  # fmt: skip
    workers = worker_order(le.worker for le in all_leases)
    return out + [(f"worker {w}", f"worker:{w}") for w in workers]


def _mine(all_leases: Sequence[Lease], key: str) -> list[Lease]:
    """The leases of the worker or job ``key`` names (ValueError for any other key)."""
    kind, _, name = key.partition(":")
    if kind == "worker":
        return [le for le in all_leases if le.worker == name]
    if kind == "job":
        return _by_job(all_leases).get(name, [])
    raise ValueError(f"follow {key!r}? a key is 'worker:<name>' or 'job:<id>'")


def span(all_leases: Sequence[Lease]) -> Window:
    """From the first claim to the last settle, in seconds since the run began."""
    return (min((le.start for le in all_leases), default=0.0),
            max((le.end for le in all_leases), default=0.0))


def window_of(all_leases: Sequence[Lease], key: str, length_s: float) -> Window:
    """A job's leases with a quarter of their span (at least 20 ms) either side, or
    ``length_s`` seconds from a worker's first claim."""
    if length_s <= 0:
        raise ValueError(f"the window must be longer than 0 s, got {length_s}")
    start, end = span(_mine(all_leases, key))
    if key.startswith("job:"):
        margin = max(0.02, (end - start) / 4)
        return (max(0.0, start - margin), end + margin)
    return (start, start + length_s)


def pick(all_leases: Sequence[Lease], key: str, window: Window) -> list[Lease]:
    """The leases of the worker or job ``key`` that overlap ``window``."""
    low, high = window
    return [le for le in _mine(all_leases, key) if le.end >= low and le.start <= high]


def describe(all_leases: Sequence[Lease], key: str, window: Window) -> list[str]:
    """One line per lease :func:`pick` finds, in words (times in ms since the run began)."""
    lines = []
    for le in pick(all_leases, key, window):
        who = f"job {le.job_id}" if key.startswith("worker:") else f"worker {le.worker}"
        lines.append(f"{le.start * 1000:7.0f} ms  token {le.token}, {who}, lease {le.lease_ms} "
                     f"ms: {_told(le)}")
    return lines or ["no lease in this window"]


#: How a lease ended -> its colour on the timeline, and its words in the legend.
OUTCOME_LOOK: dict[str, tuple[str, str]] = {
    "completed": (STATE_COLOURS["completed"], "completed"),
    "retried": (STATE_COLOURS["scheduled"], "failed, retried"),
    "dead": (STATE_COLOURS["dead"], "failed at the cap: dead"),
    "refused": (STATE_COLOURS["active"], "stalled; settle refused (stale token)"),
    "lost": (MUTED, "abandoned (reply lost or run stopped)"),
}
#: The timeline's size (px): its width, a worker's row, the margin left of the bars for the
#: names, and the band under the rows for the axis.
WIDTH, ROW, LEFT, AXIS = 860, 26, 44, 34
#: Each bar's height, as a share of its worker's row.
BAR_HEIGHT = 0.6
#: Text on the timeline: the theme's ink, so it reads in Light and Dark.
_TEXT = f"fill:{INK_ON_PAGE};font:11px sans-serif"
_INK = f"stroke:{INK_ON_PAGE};stroke-width:1.2"
#: The stripes of a cut-off lease (one pattern, the same in every timeline on a page).
_HATCH = ('<pattern id="emq-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
          'patternTransform="rotate(45)"><rect width="6" height="6" '
          f'fill="{OUTCOME_LOOK["refused"][0]}"/><line x1="0" y1="0" x2="0" y2="6" '
          'stroke="black" stroke-width="2" stroke-opacity="0.45"/></pattern>')


def _ticks(low: float, high: float, most: int = 8) -> list[float]:
    """Round times between ``low`` and ``high``, at most ``most`` of them."""
    width = max(high - low, 1e-6)
    if not math.isfinite(width):
        return []
    exponent = math.floor(math.log10(width / most))  # any span, however long or short
    step = next(m * 10.0**e for e in (exponent, exponent + 1) for m in (1, 2, 5)
                if width / (m * 10.0**e) <= most)
    first = math.ceil(low / step)
    return [round(n * step, 6) for n in range(first, math.floor(high / step) + 1)]


def _bar(lease: Lease, y: float, x: Callable[[float], float]) -> str:
    """One lease's bar at height ``y``, coloured by how it ended; a cut-off one striped, with a
    tick at its deadline and a cross at its settle; a ring where a job runs again."""
    half = ROW * BAR_HEIGHT / 2
    left, right = x(lease.start), max(x(lease.end), x(lease.start) + 3.0)
    refused = lease.outcome == "refused"
    fill = "url(#emq-hatch)" if refused else OUTCOME_LOOK[lease.outcome][0]
    told = html.escape(f"{lease.worker}, job {lease.job_id}, token {lease.token}: {_told(lease)}")
    worker, job = html.escape(str(lease.worker)), html.escape(str(lease.job_id))
    parts = [f'<rect class="emq-lease emq-lease-{html.escape(str(lease.outcome))}" '
             f'data-worker="{worker}" data-job="{job}" data-token="{int(lease.token)}" '
             f'x="{left:.1f}" '
             f'y="{y - half:.1f}" width="{right - left:.1f}" height="{2 * half:.1f}" '
             f'fill="{fill}"><title>{told}</title></rect>']
    if refused:
        due = x(lease.start + lease.lease_ms / 1000)
        parts.append(f'<line class="emq-deadline" x1="{due:.1f}" x2="{due:.1f}" '
                     f'y1="{y - half - 3:.1f}" y2="{y + half + 3:.1f}" style="{_INK}"/>')
        parts.append(f'<text class="emq-refused" x="{right:.1f}" y="{y + 4:.1f}" '
                     f'text-anchor="middle" style="{_TEXT};font-size:13px">✗</text>')
    if lease.ran_again:
        parts.append(f'<circle class="emq-again" cx="{left:.1f}" cy="{y:.1f}" r="5" '
                     f'fill="none" style="{_INK}"/>')
    return "".join(parts)


def _legend_html(shown: Sequence[Lease]) -> str:
    """The outcomes that occur, the deadline tick and the ring, in words under the timeline."""
    used = {le.outcome for le in shown}

    def swatch(fill: str) -> str:
        return (f'<svg width="14" height="10"><rect width="14" height="10" fill="{fill}"/>'
                "</svg>")

    items = [swatch("url(#emq-hatch)" if name == "refused" else colour) + f" {label}"
             for name, (colour, label) in OUTCOME_LOOK.items() if name in used]
    if "refused" in used:
        items.append("| the stalled lease's deadline · ✗ its settle")
    if any(le.ran_again for le in shown):
        items.append("○ the job runs again")
    spans = "".join(f'<span style="margin-right:14px">{item}</span>' for item in items)
    return f'<div class="emq-legend" style="color:{INK_ON_PAGE};font-size:12px">{spans}</div>'


def lease_timeline_svg(all_leases: Sequence[Lease], window: Window | None = None, *,
                       title: str = "Each worker's leases, claim to settle") -> str:
    """The leases as HTML: an SVG timeline, one row per worker (a bar from claim to settle,
    coloured by :data:`OUTCOME_LOOK`), the axis in seconds since the run began, and a legend.
    ``window`` (default: the whole run) picks the seconds drawn; a lease reaching past an edge
    is cut there. No lease in the window: a line saying so."""
    low, high = window or span(all_leases)
    shown = [le for le in all_leases if le.end >= low and le.start <= high]
    head = f'<div class="emq-timeline"><div style="color:{INK_ON_PAGE};font-weight:bold">' \
           f"{html.escape(title)}</div>"
    if not shown or high <= low:
        return head + f'<div style="color:{SOFT}">no lease in this window</div></div>'
    workers = worker_order(le.worker for le in shown)
    height = ROW * len(workers) + AXIS
    scale = (WIDTH - LEFT - 12) / (high - low)

    def x(t: float) -> float:
        return LEFT + (min(max(t, low), high) - low) * scale

    rows = [f'<text x="{LEFT - 6}" y="{ROW * i + ROW / 2 + 4:.1f}" text-anchor="end" '
            f'style="{_TEXT}">{html.escape(w)}</text>' for i, w in enumerate(workers)]
    row_of = {w: ROW * i + ROW / 2 for i, w in enumerate(workers)}
    bars = [_bar(le, row_of[le.worker], x) for le in shown]
    base = ROW * len(workers)
    axis = [f'<line x1="{LEFT}" x2="{WIDTH - 12}" y1="{base}" y2="{base}" style="{_INK}"/>']
    for t in _ticks(low, high):
        axis.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{base}" y2="{base + 4}" '
                    f'style="{_INK}"/><text x="{x(t):.1f}" y="{base + 16}" text-anchor="middle" '
                    f'style="{_TEXT}">{t:g}</text>')
    axis.append(f'<text x="{(LEFT + WIDTH) / 2:.0f}" y="{base + 30}" text-anchor="middle" '
                f'style="{_TEXT}">seconds since the run began</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
           f'width="100%" style="max-width:{WIDTH}px" role="img" aria-label="{html.escape(title)}">'
           f"<defs>{_HATCH}</defs>{''.join(rows + bars + axis)}</svg>")
    return head + svg + _legend_html(shown) + "</div>"


def verdicts_html(verdicts: Mapping[str, bool]) -> str:
    """The verdicts as HTML lines: a tick for each that held, a cross for each that did not."""
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


def side_by_side_html(runs: Mapping[str, Result]) -> str:
    """An HTML table, a column per run headed by its key: :data:`SIDE_FIGURES`, then verdicts."""

    def row(words: str, cells: Iterable[object]) -> str:
        tds = "".join(f'<td style="padding:2px 10px;text-align:right">{c}</td>' for c in cells)
        return f'<tr><td style="padding:2px 10px;text-align:left">{words}</td>{tds}</tr>'

    def mark(ok: bool) -> str:
        look = VERDICTS[ok]
        return f'<span style="color:{on_page(look.colour)}">{look.mark}</span>'

    head = "".join(f'<th style="padding:2px 10px;text-align:right">{html.escape(name)}</th>'
                   for name in runs)
    rows = [f"<tr><th></th>{head}</tr>"]
    rows += [row(words, (getattr(r, attr) for r in runs.values())) for attr, words in SIDE_FIGURES]
    names = list(next(iter(runs.values())).verdicts) if runs else []
    rows += [row(html.escape(name), (mark(r.verdicts.get(name, False)) for r in runs.values()))
             for name in names]
    return '<table class="emq-side-by-side">' + "".join(rows) + "</table>"
