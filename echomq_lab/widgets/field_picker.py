"""FieldPicker: pick one of the row's three fields and read what the protocol says about it
(from :mod:`echomq_lab.lessons.fields`), and its value in a live sample row
(:func:`echomq_lab.lessons.stories.sample_row`)."""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import jobs
from echomq_lab.lessons import fields, stories
from echomq_lab.row import Row, decoded
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.look import CELL, MONO, SOFT, message_html, quoted, state_badge, td

_TABLE = '<table style="border-collapse:collapse">'


def _value_html(name: str, value: bytes) -> str:
    if name == "state":
        return state_badge(decoded(value))
    return f'<code class="emq-value">{html.escape(quoted(value))}</code>'


class FieldPicker(Panel):
    """Pick a field with ``picker``; read what it holds, how it starts, its role, and which
    transitions write or read it. ``sample=True`` (needs ``conn`` and ``queue``, which is emptied)
    also shows the field in the sample row (state ``active``, token 2); ``reread`` re-reads it."""

    def __init__(
        self, conn: redis.Redis | None = None, queue: str | None = None, sample: bool = False
    ) -> None:
        if sample and (conn is None or queue is None):
            raise ValueError("sample=True needs a connection and a queue to walk the sample job")
        self.conn, self.queue = conn, queue
        self.sample: stories.SampleRow | None = None
        self.row: Row | None = None
        self.error: str | None = None
        names = list(fields.FIELD_NAMES)
        self.picker = W.ToggleButtons(options=names, value=names[0], description="field",
                                      tooltips=[fields.FIELDS[n].holds for n in names])
        self.card, self.sample_line, self.message = W.HTML(), W.HTML(), W.HTML()
        self.reread = W.Button(description="re-read the sample row", icon="refresh",
                               layout=W.Layout(width="auto"))
        children: list[W.Widget] = [self.picker, self.card]
        if sample:
            children += [self.sample_line, W.HBox([self.reread]), self.message]
        self.widget = W.VBox(children, layout=W.Layout(min_width="420px"))
        self.widget.add_class("emq-field-picker")
        self.picker.observe(self._guarded(lambda _change: self._render()), names="value")
        self._on(self.reread, self.refresh)
        self._render()
        if sample:
            self.refresh()

    @property
    def field(self) -> fields.Field:
        """The entry of the picked field."""
        return fields.FIELDS[self.picker.value]

    @property
    def steps(self) -> str:
        """How the sample row was reached, as one line ('' without a sample)."""
        s = self.sample
        return "" if s is None else (f"enqueue → claim (token {s.stale_token}) → the lease runs "
                                     f"out → reap → claim (token {s.token})")

    def refresh(self) -> Row | None:
        """Read the sample row again (None when it is gone), building it first if it never was
        (the server was down, say); a refusal is kept, in one line, in :attr:`error`."""
        conn, queue = self.conn, self.queue
        if conn is None or queue is None:
            return None

        def read() -> None:
            if self.sample is None:
                self.sample = stories.sample_row(conn, queue)
            self.row = Row.from_record(jobs.record(conn, queue, self.sample.job_id))

        ran, _ = self._attempt(None, read)
        self.error = None if ran else self.last_message
        if ran:  # read: the panel shows no message any more
            self.last_message, self.last_ok = "", True
        self._render()
        return self.row

    def _initial_html(self, f: fields.Field) -> str:
        if f.initial is None:
            return html.escape(f.initial_text)
        if f.name == "state":
            start = f.initial.decode()
            return state_badge(start) + html.escape(f.initial_text.removeprefix(start))
        return f"<code>{html.escape(f.initial_text)}</code>"

    def _write_html(self, w: fields.Use) -> str:
        script = html.escape(w.script)
        if w.handles != (w.script,):
            script += (f'<br><span style="color:{SOFT};font-size:smaller">'
                       f"{html.escape(', '.join(w.handles))}</span>")
        value = _value_html(self.field.name, w.value) + " " if w.value is not None else ""
        when = f' <i style="color:{SOFT}">({html.escape(w.when)})</i>' if w.when else ""
        return (f'<tr class="emq-write">{td(script, MONO)}{td(html.escape(w.command), MONO)}'
                f"{td(value + html.escape(w.how) + when)}</tr>")

    def _render(self) -> None:
        f = self.field
        writes = "".join(self._write_html(w) for w in f.writes)
        reads = "".join(
            f'<tr class="emq-read">{td(html.escape(r.script), MONO)}'
            f"{td(html.escape(r.command), MONO)}{td(html.escape(r.how))}</tr>"
            for r in f.reads
        ) or f'<tr><td colspan="3" style="{CELL}">no script reads it</td></tr>'
        facts = {
            "initial value": td(self._initial_html(f)),
            "role": td(html.escape(f.role)),
            "written by": td(f"{_TABLE}{writes}</table>"),
            "read by": td(f"{_TABLE}{reads}</table>"),
            "never written by": td(html.escape(", ".join(f.untouched_by)), MONO),
            "deleted by": td(f"<code>{', '.join(fields.RETIRED_BY)}</code>, with the whole row "
                             "when the job is retired"),
        }
        head = f'style="{CELL};color:{SOFT};white-space:nowrap"'
        self.card.value = (
            f'<div class="emq-field-card emq-field-{f.name}">'
            f'<div style="font-size:larger;margin:4px 0"><code>{f.name}</code> '
            f"— {html.escape(f.holds)}</div>{_TABLE}"
            + "".join(f"<tr><th {head}>{name}</th>{cell}</tr>" for name, cell in facts.items())
            + "</table></div>"
        )
        self.sample_line.value = self._sample_html()
        self.message.value = message_html(self.error, ok=False) if self.error else ""

    def _sample_html(self) -> str:
        if self.sample is None:
            return ""
        assert self.queue is not None
        key = f"emq:{{{html.escape(self.queue)}}}:job:{html.escape(self.sample.job_id)}"
        where = (f'<div style="color:{SOFT};font-size:smaller">the sample row <code>{key}'
                 f"</code>, reached by: {html.escape(self.steps)}</div>")
        if self.row is None:
            return where + ('<div class="emq-sample emq-gone" role="status" aria-live="polite">'
                            "<i>the row is gone (completed: nothing of the job remains)</i></div>")
        value = self.row.get(self.field.name.encode())
        shown = _value_html(self.field.name, value) if value is not None else "<i>absent</i>"
        return where + ('<div class="emq-sample" role="status" aria-live="polite">in the '
                        f"sample row, <code>{self.field.name}</code> = {shown}</div>")

    def text(self) -> str:
        """What the panel shows for the picked field, as plain text."""
        f = self.field
        out = [f"field: {f.name}", f"  holds          {f.holds}",
               f"  initial value  {f.initial_text}", f"  role           {f.role}", "  written by"]
        for w in f.writes:
            when = f"  ({w.when})" if w.when else ""
            handles = "" if w.handles == (w.script,) else f" [{', '.join(w.handles)}]"
            out.append(f"    {w.script + handles:<38} {w.command:<8} {w.what}{when}")
        out.append("  read by" + ("" if f.reads else "  (no script)"))
        for r in f.reads:
            out.append(f"    {r.script:<38} {r.command:<8} {r.how}")
        out.append(f"  never written by  {', '.join(f.untouched_by)}")
        out.append(f"  deleted by        {', '.join(fields.RETIRED_BY)} "
                   "(the whole row, when the job retires)")
        if self.sample is not None:
            out.append(f"sample row {self.sample.job_id}: {self.steps}")
            if self.row is None:
                out.append("  the row is gone (completed: nothing of the job remains)")
            else:
                value = self.row.get(f.name.encode())
                shown = quoted(value) if value is not None else "(absent)"
                out.append(f"  {f.name} = {shown}")
        if self.error:
            out.append(f"✗ {self.error}")
        return "\n".join(out)
