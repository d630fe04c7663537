"""RecordView: one job's row as a table of fields, with what changed since the last look lit.
It only reads; a row that is gone is said in words; values are escaped (bytes repr if not UTF-8).
"""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import jobs
from echomq_lab.row import Row, decoded
from echomq_lab.snapshot import Snapshot
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel

#: How many characters of a payload the view shows before it elides the rest.
PAYLOAD_SHOWN = 120
GONE = "no row (completed or never enqueued)"
CELL = 'style="padding:2px 8px;font-family:monospace"'


def show_value(value: bytes, limit: int = PAYLOAD_SHOWN) -> str:
    """A field value as text (a bytes repr when it is not UTF-8), cut at ``limit`` characters
    with the total length said."""
    text = decoded(value)
    return f"{text[:limit]}… ({len(value)} bytes)" if len(text) > limit else text


class RecordView(Panel):
    """The row of one job in ``queue``, re-read on :meth:`refresh`: fields that changed since
    the previous render of the same job are lit, fields that disappeared listed as removed."""

    def __init__(self, conn: redis.Redis, queue: str, job_id: str | None = None) -> None:
        self.conn = conn
        self.queue = queue
        self.job_id: str | None = None
        self.row: Row | None = None
        self.changed: set[bytes] = set()
        self.removed: set[bytes] = set()
        self.title = W.HTML()
        self.table = W.HTML()
        self.widget = W.VBox([self.title, self.table], layout=W.Layout(min_width="320px"))
        self.widget.add_class("emq-record-view")
        self.show(job_id)

    def show(self, job_id: str | None, snap: Snapshot | None = None) -> Row | None:
        """Switch to ``job_id`` (None: no job yet) and render it with nothing lit."""
        self.job_id = job_id
        self.changed, self.removed = set(), set()
        self.row = None if job_id is None else self._read(job_id, snap)
        self._render()
        return self.row

    def refresh(self, job_id: str | None = None, snap: Snapshot | None = None) -> Row | None:
        """Re-read the row (from ``snap`` when given) and light the fields that changed; a
        different ``job_id`` switches job, like :meth:`show`."""
        if self.job_id is None or (job_id is not None and job_id != self.job_id):
            return self.show(job_id or self.job_id, snap)
        before = self.row
        self.row = self._read(self.job_id, snap)
        self.changed, self.removed = set(), set()
        if before is not None and self.row is not None:
            self.changed = {f for f, v in self.row.items() if before.get(f) != v}
            self.removed = set(before) - set(self.row)
        self._render()
        return self.row

    def mark(self, fields: set[bytes]) -> None:
        """Light ``fields`` as changed (those the row holds), e.g. what a transition wrote on a
        job the view has only just switched to."""
        self.changed = {f for f in fields if self.row is not None and f in self.row}
        self._render()

    def _read(self, job_id: str, snap: Snapshot | None) -> Row | None:
        if snap is not None and snap.knows_row(job_id):
            return snap.rows.get(job_id)
        return Row.from_record(jobs.record(self.conn, self.queue, job_id))

    @property
    def state(self) -> str | None:
        """The row's state, or None when there is no row."""
        return None if self.row is None else self.row.state or ""

    def _render(self) -> None:
        if self.job_id is None:
            self.title.value = f'<b>the row</b> <span style="color:{style.SOFT}">no job yet</span>'
            self.table.value = ""
            return
        badge = style.state_badge(self.state) if self.state is not None else ""
        self.title.value = (
            f'<b>the row</b> <code>emq:{{{html.escape(self.queue)}}}:job:'
            f"{html.escape(self.job_id)}</code> {badge}"
        )
        if self.row is None:
            self.table.value = (
                f'<div class="emq-gone" style="color:{style.SOFT};font-style:italic">'
                f"{GONE}</div>"
            )
            return
        lines = []
        for name in self.row.field_order():
            if name == b"state":
                cell = style.state_badge(self.row.shown(name))
            else:
                cell = html.escape(show_value(self.row[name]))
            label = html.escape(show_value(name))
            if name in self.changed:
                lines.append(f'<tr class="emq-changed" style="background:{style.CHANGED_BG};">'
                             f'<td {CELL}>{label} <span class="emq-changed-mark" '
                             f'title="changed">●</span></td><td {CELL}>{cell}</td></tr>')
            else:
                lines.append(f'<tr style=""><td {CELL}>{label}</td><td {CELL}>{cell}</td></tr>')
        for name in sorted(self.removed):
            lines.append(
                f'<tr class="emq-removed" style="background:{style.CHANGED_BG};'
                f'color:{style.SOFT}"><td {CELL}><s>{html.escape(show_value(name))}</s></td>'
                '<td style="padding:2px 8px;font-style:italic">removed</td></tr>'
            )
        self.table.value = (
            '<table class="emq-row" style="border-collapse:collapse">'
            '<tr><th style="text-align:left;padding:2px 8px">field</th>'
            '<th style="text-align:left;padding:2px 8px">value</th></tr>'
            + "".join(lines) + "</table>"
        )

    def text(self) -> str:
        """What the view shows, as plain text; changed fields end with ``(changed)``."""
        if self.job_id is None:
            return "the row: no job yet"
        head = f"the row emq:{{{self.queue}}}:job:{self.job_id}"
        if self.row is None:
            return f"{head}\n  {GONE}"
        out = [head]
        for name in self.row.field_order():
            raw = self.row[name]
            value = show_value(raw)
            if name == b"payload":  # quoted; the whole bytes repr when it is not UTF-8
                value = repr(raw) if decoded(raw) == repr(raw) else repr(value)
            note = "  (changed)" if name in self.changed else ""
            out.append(f"  {show_value(name):<10} {value}{note}")
        out.extend(f"  {show_value(name):<10} (removed)" for name in sorted(self.removed))
        return "\n".join(out)
