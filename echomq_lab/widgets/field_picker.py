"""FieldPicker: pick one of the row's three fields and read what the protocol says about it.

The facts come from :mod:`echomq_lab.fields` (the panel only renders them). With
``sample=True`` the panel also builds the course's sample row by real transitions
(:func:`echomq_lab.stories.sample_row`: its current token is 2) and shows the picked field's
value in that live row; :meth:`FieldPicker.refresh` re-reads it.
"""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import errors, fields, jobs, stories
from echomq_lab import theme as style
from echomq_lab.row import Row, decoded
from echomq_lab.widgets.base import Panel

_CELL = "padding:2px 8px;vertical-align:top;text-align:left"
_MONO = "font-family:monospace"


def value_text(value: bytes) -> str:
    """A field value as one line of text: a quoted string when UTF-8, a bytes repr when not."""
    return style.quoted(value)


def _value_html(name: str, value: bytes) -> str:
    if name == "state":
        return style.state_badge(decoded(value))
    return f'<code class="emq-value">{html.escape(value_text(value))}</code>'


class FieldPicker(Panel):
    """Pick ``state``, ``attempts`` or ``payload``; read what it holds, how it starts, its role,
    and which transitions write or read it.

    ``picker`` is the ToggleButtons (set ``.value`` to pick). With ``sample=True`` (needs
    ``conn`` and ``queue``; the queue is emptied first) the course's sample row is built by
    real transitions (enqueue, claim, the lease runs out, reap, claim: state ``active``,
    token 2), and the picked field's value in that row is shown; ``reread`` (a Button) or
    :meth:`refresh` reads the row again.
    """

    def __init__(
        self, conn: redis.Redis | None = None, queue: str | None = None, sample: bool = False
    ) -> None:
        if sample and (conn is None or queue is None):
            raise ValueError("sample=True needs a connection and a queue to walk the sample job")
        self.conn = conn
        self.queue = queue
        self.sample: stories.SampleRow | None = None
        self.row: Row | None = None
        self.error: str | None = None
        self.picker = W.ToggleButtons(
            options=list(fields.FIELD_NAMES),
            value=fields.FIELD_NAMES[0],
            description="field",
            tooltips=[fields.FIELDS[n].holds for n in fields.FIELD_NAMES],
        )
        self.card = W.HTML()
        self.sample_line = W.HTML()
        self.message = W.HTML()
        self.reread = W.Button(
            description="re-read the sample row", icon="refresh", layout=W.Layout(width="auto")
        )
        children: list[W.Widget] = [self.picker, self.card]
        if sample:
            children += [self.sample_line, W.HBox([self.reread]), self.message]
        self.widget = W.VBox(children, layout=W.Layout(min_width="420px"))
        self.widget.add_class("emq-field-picker")
        self.picker.observe(self._guarded(self._on_pick), names="value")
        self.reread.on_click(self._guarded(self._on_reread))
        if sample:
            self._walk_sample()
        self._render()

    # -- actions ----------------------------------------------------------------------------

    @property
    def field(self) -> fields.Field:
        """The entry of the picked field."""
        return fields.FIELDS[self.picker.value]

    def _walk_sample(self) -> None:
        assert self.conn is not None and self.queue is not None
        try:
            self.sample = stories.sample_row(self.conn, self.queue)
            self.row = Row.from_record(jobs.record(self.conn, self.queue, self.sample.job_id))
            self.error = None
        except (errors.EchoMQError, redis.RedisError, ValueError, TypeError, RuntimeError,
                TimeoutError) as exc:
            self.error = style.one_line(exc)

    @property
    def steps(self) -> str:
        """How the sample row was reached, as one line ('' without a sample)."""
        if self.sample is None:
            return ""
        return (
            f"enqueue → claim (token {self.sample.stale_token}) → the lease runs out → reap → "
            f"claim (token {self.sample.token})"
        )

    def refresh(self) -> Row | None:
        """Read the sample row again from the server (None when it is gone). If it was never
        built (the server was down, say), build it now."""
        if self.conn is None or self.queue is None:
            return None
        if self.sample is None:
            self._walk_sample()
            self._render()
            return self.row
        try:
            self.row = Row.from_record(jobs.record(self.conn, self.queue, self.sample.job_id))
            self.error = None
        except errors.EchoMQError as exc:
            self.error = style.one_line(exc)
        self._render()
        return self.row

    def _on_pick(self, _change: object) -> None:
        self._render()

    def _on_reread(self, _button: W.Button) -> None:
        self.refresh()

    # -- rendering --------------------------------------------------------------------------

    def _initial_html(self, f: fields.Field) -> str:
        if f.name == "state" and f.initial is not None:
            rest = f.initial_text.removeprefix(f.initial.decode())
            return style.state_badge(f.initial.decode()) + html.escape(rest)
        if f.initial is not None:
            return f"<code>{html.escape(f.initial_text)}</code>"
        return html.escape(f.initial_text)

    def _write_html(self, w: fields.Use) -> str:
        handles = ""
        if w.handles != (w.script,):
            handles = (
                f'<br><span style="color:{style.SOFT};font-size:smaller">'
                f"{html.escape(', '.join(w.handles))}</span>"
            )
        value = ""
        if w.value is not None:
            value = _value_html(self.field.name, w.value) + " "
        when = f' <i style="color:{style.SOFT}">({html.escape(w.when)})</i>' if w.when else ""
        return (
            f'<tr class="emq-write"><td style="{_CELL};{_MONO}">{html.escape(w.script)}{handles}'
            f'</td><td style="{_CELL};{_MONO}">{html.escape(w.command)}</td>'
            f'<td style="{_CELL}">{value}{html.escape(w.how)}{when}</td></tr>'
        )

    def _render(self) -> None:
        f = self.field
        writes = "".join(self._write_html(w) for w in f.writes)
        reads = "".join(
            f'<tr class="emq-read"><td style="{_CELL};{_MONO}">{html.escape(r.script)}</td>'
            f'<td style="{_CELL};{_MONO}">{html.escape(r.command)}</td>'
            f'<td style="{_CELL}">{html.escape(r.how)}</td></tr>'
            for r in f.reads
        ) or f'<tr><td colspan="3" style="{_CELL}">no script reads it</td></tr>'
        head = f'style="{_CELL};color:{style.SOFT};white-space:nowrap"'
        self.card.value = (
            f'<div class="emq-field-card emq-field-{f.name}">'
            f'<div style="font-size:larger;margin:4px 0"><code>{f.name}</code> '
            f"— {html.escape(f.holds)}</div>"
            '<table style="border-collapse:collapse">'
            f"<tr><th {head}>initial value</th><td style=\"{_CELL}\">{self._initial_html(f)}"
            "</td></tr>"
            f"<tr><th {head}>role</th><td style=\"{_CELL}\">{html.escape(f.role)}</td></tr>"
            f"<tr><th {head}>written by</th><td style=\"{_CELL}\">"
            f'<table style="border-collapse:collapse">{writes}</table></td></tr>'
            f"<tr><th {head}>read by</th><td style=\"{_CELL}\">"
            f'<table style="border-collapse:collapse">{reads}</table></td></tr>'
            f"<tr><th {head}>never written by</th><td style=\"{_CELL};{_MONO}\">"
            f"{html.escape(', '.join(f.untouched_by))}</td></tr>"
            f"<tr><th {head}>deleted by</th><td style=\"{_CELL}\"><code>{fields.RETIRED_BY}"
            "</code>, with the whole row when the job is retired</td></tr>"
            "</table></div>"
        )
        self.sample_line.value = self._sample_html()
        self.message.value = style.message_html(self.error, ok=False) if self.error else ""

    def _sample_html(self) -> str:
        if self.sample is None:
            return ""
        assert self.queue is not None
        key = f"emq:{{{html.escape(self.queue)}}}:job:{html.escape(self.sample.job_id)}"
        steps = html.escape(self.steps)
        where = (
            f'<div style="color:{style.SOFT};font-size:smaller">the sample row <code>{key}'
            f"</code>, reached by: {steps}</div>"
        )
        if self.row is None:
            return where + '<div class="emq-sample emq-gone"><i>the row is gone ' \
                "(completed: nothing of the job remains)</i></div>"
        value = self.row.get(self.field.name.encode())
        shown = _value_html(self.field.name, value) if value is not None else "<i>absent</i>"
        return (
            where + f'<div class="emq-sample">in the sample row, <code>{self.field.name}</code>'
            f" = {shown}</div>"
        )

    def text(self) -> str:
        """What the panel shows for the picked field, as plain text."""
        f = self.field
        out = [f"field: {f.name}", f"  holds          {f.holds}"]
        out.append(f"  initial value  {f.initial_text}")
        out.append(f"  role           {f.role}")
        out.append("  written by")
        for w in f.writes:
            when = f"  ({w.when})" if w.when else ""
            handles = "" if w.handles == (w.script,) else f" [{', '.join(w.handles)}]"
            out.append(f"    {w.script + handles:<38} {w.command:<8} {w.what}{when}")
        out.append("  read by" + ("" if f.reads else "  (no script)"))
        for r in f.reads:
            out.append(f"    {r.script:<38} {r.command:<8} {r.how}")
        out.append(f"  never written by  {', '.join(f.untouched_by)}")
        out.append(f"  deleted by        {fields.RETIRED_BY} (the whole row, when the job retires)")
        if self.sample is not None:
            out.append(f"sample row {self.sample.job_id}: {self.steps}")
            if self.row is None:
                out.append("  the row is gone (completed: nothing of the job remains)")
            else:
                value = self.row.get(f.name.encode())
                shown = value_text(value) if value is not None else "(absent)"
                out.append(f"  {f.name} = {shown}")
        if self.error:
            out.append(f"✗ {self.error}")
        return "\n".join(out)
