"""SetsView: a queue's four sorted sets and the drift verdict, all from one atomic snapshot.

Scores that are times are shown against the SERVER clock of the same snapshot
(``snapshot.now_ms``): an active lease as "expires in 41 ms" / "expired 12 ms ago", a scheduled
run-at as "due in 900 ms" / "was due 3 ms ago". The check verdict is computed from the very same
snapshot (``snapshot.drifts``), so the sets and the verdict never describe two moments.
"""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import errors
from echomq_lab import snapshot as snapshot_mod
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.snapshot import Drift, Snapshot
from echomq_lab.widgets import style
from echomq_lab.widgets.base import Panel

#: What each set's score means, for the column header.
SCORE_MEANING: dict[SetName, str] = {
    "pending": "score 0 (oldest id pops first)",
    "active": "score = lease deadline",
    "schedule": "score = run-at",
    "dead": "score 0 (the morgue)",
}


def lease_left(deadline_ms: int, now_ms: int) -> str:
    """An active lease against the server's now: ``expires in N ms`` or ``expired N ms ago``."""
    left = deadline_ms - now_ms
    return f"expires in {left} ms" if left > 0 else f"expired {-left} ms ago"


def due_left(run_at_ms: int, now_ms: int) -> str:
    """A scheduled run-at against the server's now: ``due in N ms`` or ``was due N ms ago``."""
    left = run_at_ms - now_ms
    return f"due in {left} ms" if left > 0 else f"was due {-left} ms ago"


def describe_member(name: SetName, score: int, now_ms: int) -> str:
    """The text shown beside a member: the time left for active and schedule, else nothing."""
    if name == "active":
        return lease_left(score, now_ms)
    if name == "schedule":
        return due_left(score, now_ms)
    return ""


def verdict(drift: list[Drift]) -> str:
    """The check verdict as one line per drift, or ``no drift``."""
    if not drift:
        return "no drift"
    return "; ".join(str(d) for d in drift)


class SetsView(Panel):
    """The four sorted sets of ``queue`` with members and scores, and the ``check()`` verdict.

    :meth:`refresh` takes one snapshot (or uses the one it is given) and renders everything
    from it. ``highlight`` marks one id (the job a story follows) in every set.
    """

    def __init__(self, conn: redis.Redis, queue: str, highlight: str | None = None) -> None:
        self.conn = conn
        self.queue = queue
        self.highlight = highlight
        self.snap: Snapshot | None = None
        self.drift: list[Drift] = []
        self.columns = {name: W.HTML() for name in SET_NAMES}
        self.check_line = W.HTML()
        self.widget = W.VBox(
            [
                W.HBox(
                    [self.columns[name] for name in SET_NAMES],
                    layout=W.Layout(flex_flow="row wrap", grid_gap="8px"),
                ),
                self.check_line,
            ]
        )
        self.widget.add_class("emq-sets-view")
        self.refresh()

    def refresh(self, snap: Snapshot | None = None) -> Snapshot:
        """Render from ``snap``, or from a fresh snapshot of the queue; return it.

        If the server cannot be read, the verdict line says so in one line and the last
        snapshot (or an empty one) is returned, so a panel's callback never ends in a traceback.
        """
        if snap is None:
            try:
                snap = snapshot_mod.snapshot(self.conn, self.queue)
            except errors.EchoMQError as exc:
                self.check_line.value = style.message_html(style.one_line(exc), ok=False)
                return self.snap or Snapshot(self.queue, 0, {n: [] for n in SET_NAMES}, {})
        self.snap = snap
        self.drift = snapshot_mod.drifts(snap)
        for name in SET_NAMES:
            self.columns[name].value = self._column_html(name, snap)
        ok = not self.drift
        self.check_line.value = style.message_html(f"check(): {verdict(self.drift)}", ok)
        return snap

    def _column_html(self, name: SetName, snap: Snapshot) -> str:
        colour = style.SET_COLOURS[name]
        items = []
        for job_id, score in snap.sets[name]:
            when = describe_member(name, score, snap.now_ms)
            lit = job_id == self.highlight
            weight = "font-weight:bold;" if lit else ""
            extra = f' <span style="color:{style.MUTED}">{html.escape(when)}</span>' if when else ""
            items.append(
                f'<li style="{weight}font-family:monospace">{html.escape(job_id)}'
                f' <span style="color:{style.MUTED}">{score}</span>{extra}</li>'
            )
        body = (
            f'<ul style="margin:2px 0;padding-left:16px">{"".join(items)}</ul>'
            if items
            else f'<div style="color:{style.MUTED};font-style:italic">empty</div>'
        )
        return (
            f'<div class="emq-set emq-set-{name}" style="border:2px solid {colour};'
            'border-radius:6px;padding:4px 8px;min-width:170px">'
            f'<div style="color:{style.on_page(colour)};font-weight:bold">{name} '
            f'<span style="font-weight:normal">({len(snap.sets[name])})</span></div>'
            f'<div style="color:{style.MUTED};font-size:85%">{SCORE_MEANING[name]}</div>'
            f"{body}</div>"
        )

    def text(self) -> str:
        """The four sets and the verdict as plain text, one set per line."""
        snap = self.snap
        if snap is None:  # pragma: no cover - refresh() runs in __init__
            return "sets: not read yet"
        out = []
        for name in SET_NAMES:
            members = []
            for job_id, score in snap.sets[name]:
                when = describe_member(name, score, snap.now_ms)
                members.append(f"{job_id} ({when})" if when else job_id)
            out.append(f"{name + ':':<10}{', '.join(members) if members else '(empty)'}")
        out.append(f"check(): {verdict(self.drift)}")
        return "\n".join(out)
