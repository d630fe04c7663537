"""SetsView: a queue's four sorted sets and the drift verdict, from one bounded snapshot (a
"full check" button reads a deeper queue in short steps). Lease deadlines and run-at times are
time left on the server's clock, re-read by :meth:`SetsView.tick` so a lease is seen running out.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import drift, errors
from echomq_lab import snapshot as snapshot_mod
from echomq_lab.clock import server_now_ms
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.snapshot import Drift, Snapshot
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel

#: How many drifts of a full check the verdict line spells out.
SHOWN_DRIFTS = 5

#: What each set's score means, for the column header.
SCORE_MEANING: dict[SetName, str] = {
    "pending": "score 0 (oldest id pops first)",
    "active": "score = lease deadline",
    "schedule": "score = run-at",
    "dead": "score 0 (the morgue)",
}


def span(ms: int) -> str:
    """A stretch of time: ``840 ms`` under ten seconds, then ``42 s``, then ``9 min 58 s``."""
    if ms < 10_000:
        return f"{ms} ms"
    seconds = ms // 1000
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min {seconds % 60} s"


def lease_left(deadline_ms: int, now_ms: int) -> str:
    """``expires in N ms`` or ``expired N ms ago``."""
    left = deadline_ms - now_ms
    return f"expires in {span(left)}" if left > 0 else f"expired {span(-left)} ago"


def due_left(run_at_ms: int, now_ms: int) -> str:
    """``due in N ms`` or ``was due N ms ago``."""
    left = run_at_ms - now_ms
    return f"due in {span(left)}" if left > 0 else f"was due {span(-left)} ago"


def describe_member(name: SetName, score: int, now_ms: int) -> str:
    """The text shown beside a member: the time left for active and schedule, else nothing."""
    if abs(score) >= snapshot_mod.INFINITE and name in ("active", "schedule"):
        return "an infinite score, not a time"
    if name == "active":
        return lease_left(score, now_ms)
    return due_left(score, now_ms) if name == "schedule" else ""


def verdict(drift: list[Drift]) -> str:
    """The drifts joined by ``; ``, or ``no drift``."""
    return "; ".join(str(d) for d in drift) or "no drift"


class SetsView(Panel):
    """The four sorted sets of ``queue`` with members and scores, and the ``check()`` verdict;
    ``highlight`` marks one id (the job a story follows) in every set."""

    def __init__(self, conn: redis.Redis, queue: str, highlight: str | None = None) -> None:
        self.conn = conn
        self.queue = queue
        self.highlight = highlight
        self.report: drift.Report | None = None
        self.full_check = W.Button(description="full check", icon="search")

        self.snap: Snapshot | None = None
        #: The server's clock the time left is drawn against (the snapshot's, then each tick's).
        self.now_ms = 0
        self.drift: list[Drift] = []
        self.columns = {name: W.HTML() for name in SET_NAMES}
        self.check_line = W.HTML()
        self._wire(self.full_check, self.check_all, self.check_line)
        row = W.HBox(list(self.columns.values()),
                     layout=W.Layout(flex_flow="row wrap", grid_gap="8px"))
        self.widget = W.VBox([row, self.check_line])
        self.widget.add_class("emq-sets-view")
        self.refresh()

    def refresh(self, snap: Snapshot | None = None, follow: Sequence[str] = ()) -> Snapshot:
        """Render from ``snap``, or from a fresh view following ``follow`` and the highlighted
        job; return it. If the server cannot be read, the verdict line says so and the last
        snapshot (or an empty one) is returned."""
        if snap is None:
            ids = [*follow, *([self.highlight] if self.highlight else [])]
            try:
                snap = snapshot_mod.view(self.conn, self.queue, ids)
            except errors.EchoMQError as exc:
                self.check_line.value = style.message_html(style.one_line(exc), ok=False)
                return self.snap or Snapshot(self.queue, 0, {n: [] for n in SET_NAMES}, {})
        self.snap, self.now_ms = snap, snap.now_ms
        self.drift = snapshot_mod.drifts(snap)
        for name in SET_NAMES:
            self.columns[name].value = self._column_html(name, snap)
        self.check_line.value = style.message_html(self._verdict_line(snap), not self.drift)
        if _deep(snap) and self.full_check not in self.widget.children:
            self.widget.children = (*self.widget.children, self.full_check)
        return snap

    def timed(self) -> bool:
        """True when the view shows a member whose score is a time (a lease or a run-at)."""
        return self.snap is not None and any(self.snap.sets[n] for n in ("active", "schedule"))

    def tick(self) -> bool:
        """Redraw the time left against the server's clock read now (the members stay those of
        the last snapshot); True while any timed member is shown."""
        if not self.timed() or self.snap is None:
            return False
        self.now_ms = server_now_ms(self.conn)
        for name in ("active", "schedule"):
            self.columns[name].value = self._column_html(name, self.snap)
        return True

    def _verdict_line(self, snap: Snapshot) -> str:
        if not _deep(snap):
            return f"drift check: {verdict(self.drift)}"
        return (f"drift check of the jobs shown: {verdict(self.drift)} · the full check reads "
                "them all")

    def check_all(self) -> drift.Report | None:
        """Run the whole-queue check in short steps and show its summary and first drifts on
        the verdict line; return the report (None if it could not run)."""
        try:
            self.report = drift.check(self.conn, self.queue)
        except errors.EchoMQError as exc:
            self.check_line.value = style.message_html(style.one_line(exc), ok=False)
            return None
        shown = list(self.report)[:SHOWN_DRIFTS]
        more = len(self.report) - len(shown)
        found = f" — {verdict(shown)}" + (f"; and {more:,} more" if more else "") if shown else ""
        ok = not self.report and self.report.consistent
        line = f"full check: {self.report.summary()}{found}"
        self.check_line.value = style.message_html(line, ok)
        return self.report

    def _members(self, name: SetName, snap: Snapshot) -> list[tuple[str, int, str]]:
        """Each member shown in set ``name``: its id, its score and its time left (or "")."""
        now = self.now_ms or snap.now_ms
        return [(job_id, score, describe_member(name, score, now))
                for job_id, score in snap.sets[name]]

    def _column_html(self, name: SetName, snap: Snapshot) -> str:
        colour = style.SET_COLOURS[name]
        items = []
        for job_id, score, when in self._members(name, snap):
            weight = "font-weight:bold;" if job_id == self.highlight else ""
            # a time is shown as the time left; the raw score (epoch ms) only as the tooltip
            tip = f' title="score {score}"' if when else ""
            shown = f'<span style="color:{style.SOFT}"{tip}>{html.escape(when) or score}</span>'
            items.append(
                f'<li style="{weight}font-family:monospace">{html.escape(job_id)} {shown}</li>'
            )
        body = (f'<ul style="margin:2px 0;padding-left:16px">{"".join(items)}</ul>' if items
                else f'<div style="color:{style.SOFT};font-style:italic">empty</div>')
        count = snap.showing(name) if snap.windowed(name) else str(snap.sizes[name])
        return (
            f'<div class="emq-set emq-set-{name}" style="border:2px solid {colour};'
            'border-radius:6px;padding:4px 8px;min-width:150px">'
            f'<div style="color:{style.on_page(colour)};font-weight:bold">{name} '
            f'<span style="font-weight:normal">({count})</span></div>'
            f'<div style="color:{style.SOFT};font-size:85%">{SCORE_MEANING[name]}</div>'
            f"{body}</div>"
        )

    def text(self) -> str:
        """The four sets and the verdict as plain text, one set per line."""
        snap = self.snap
        if snap is None:  # pragma: no cover - refresh() runs in __init__
            return "sets: not read yet"
        out = []
        for name in SET_NAMES:
            members = [f"{job_id} ({when})" if when else job_id
                       for job_id, _, when in self._members(name, snap)]
            more = f" ({snap.showing(name)})" if snap.windowed(name) else ""
            out.append(f"{name + ':':<10}{', '.join(members) or '(empty)'}{more}")
        out.append(self._verdict_line(snap))
        return "\n".join(out)


def _deep(snap: Snapshot) -> bool:
    """True when a set is deeper than the window the snapshot read."""
    return any(snap.windowed(name) for name in SET_NAMES)
