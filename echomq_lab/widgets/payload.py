"""PayloadRoundTrip: send payloads through a real enqueue and claim and compare the bytes.

Each round trip is :func:`echomq_lab.fields.round_trip`: enqueue, read the row's payload
field, claim, complete. The panel shows, for each payload, its length, the bytes sent and the
bytes claim returned (in hex), and whether all three agree.
"""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import errors, fields
from echomq_lab import theme as style
from echomq_lab.widgets.base import Panel

#: How many bytes of a payload the hex columns show before eliding the rest.
HEX_SHOWN = 24
#: How many round trips the panel keeps on screen (oldest dropped first).
KEEP = 12

_CELL = "padding:2px 8px;vertical-align:top;text-align:left"
_MONO = "font-family:monospace"


def hex_text(data: bytes, limit: int = HEX_SHOWN) -> str:
    """``data`` as space-separated hex byte pairs, cut after ``limit`` bytes."""
    if not data:
        return "(no bytes)"
    shown = data[:limit].hex(" ")
    return shown if len(data) <= limit else f"{shown} … (+{len(data) - limit} bytes)"


def as_text(data: bytes, limit: int = 60) -> str:
    """``data`` as a quoted string when it is UTF-8, or as a bytes literal when it is not."""
    return style.quoted(data, limit)


class PayloadRoundTrip(Panel):
    """Round-trip payloads through ``queue`` (which must have nothing pending) on ``conn``.

    ``samples`` (a Button) sends :data:`echomq_lab.fields.SAMPLE_PAYLOADS`; ``custom`` (a Text),
    with ``escapes`` (a Checkbox: read ``\\xNN`` escapes) and ``send`` (a Button), sends your
    own. :meth:`send_samples` and :meth:`send_custom` do the same from code.
    """

    def __init__(self, conn: redis.Redis, queue: str) -> None:
        self.conn = conn
        self.queue = queue
        self.results: list[fields.RoundTrip] = []
        self.error: str | None = None
        self.samples = W.Button(
            description="round-trip the samples", icon="exchange", layout=W.Layout(width="auto")
        )
        self.custom = W.Text(
            value="", placeholder="type a payload", description="your payload",
            layout=W.Layout(width="420px"), style={"description_width": "initial"},
        )
        self.escapes = W.Checkbox(
            value=False, description="read \\xNN escapes", indent=False,
            layout=W.Layout(width="auto"),
        )
        self.send = W.Button(
            description="round-trip it", icon="exchange", layout=W.Layout(width="auto")
        )
        self.message = W.HTML()
        self.table = W.HTML()
        self.widget = W.VBox(
            [
                W.HBox([self.samples]),
                W.HBox([self.custom, self.escapes, self.send]),
                self.message,
                self.table,
            ],
            layout=W.Layout(min_width="520px"),
        )
        self.widget.add_class("emq-payload-round-trip")
        self._on(self.samples, self.send_samples)
        self._on(self.send, self.send_custom)
        self._render()

    # -- actions ----------------------------------------------------------------------------

    def _trip(self, label: str, payload: bytes) -> fields.RoundTrip:
        result = fields.round_trip(self.conn, self.queue, payload, label)
        self.results = (self.results + [result])[-KEEP:]
        return result

    def send_samples(self) -> list[fields.RoundTrip]:
        """Round-trip every sample payload, replacing what the panel showed before."""
        self.results, done = [], []
        try:
            for label, payload in fields.SAMPLE_PAYLOADS:
                done.append(self._trip(label, payload))
            self.error = None
        except (errors.EchoMQError, ValueError, TypeError, RuntimeError) as exc:
            self.error = style.one_line(exc)
        self._render()
        return done

    def send_custom(self) -> fields.RoundTrip | None:
        """Round-trip the text box's payload (escapes decoded when the box is ticked)."""
        text = self.custom.value
        try:
            payload = fields.parse_escapes(text) if self.escapes.value else text.encode("utf-8")
            result: fields.RoundTrip | None = self._trip("your payload", payload)
            self.error = None
        except (errors.EchoMQError, ValueError, TypeError, RuntimeError) as exc:
            result, self.error = None, style.one_line(exc)
        self._render()
        return result

    # -- rendering --------------------------------------------------------------------------

    def _summary(self) -> tuple[str, bool]:
        same = sum(r.equal for r in self.results)
        if self.error:
            return self.error, False
        if not self.results:
            return "nothing sent yet", True
        if same == len(self.results):
            return f"{same} of {len(self.results)} came back byte for byte", True
        return f"{len(self.results) - same} of {len(self.results)} came back changed", False

    def _render(self) -> None:
        text, ok = self._summary()
        self.message.value = style.message_html(text, ok) if self.results or self.error else (
            f'<div style="color:{style.SOFT}">nothing sent yet</div>'
        )
        if not self.results:
            self.table.value = ""
            return
        head = "".join(
            f'<th style="{_CELL}">{h}</th>'
            for h in ("payload", "bytes", "sent (hex)", "claim returned (hex)", "as text", "")
        )
        rows = []
        for r in self.results:
            mark = (
                f'<span class="emq-equal" style="color:{style.OK_TEXT}">equal ✓</span>'
                if r.equal
                else f'<span class="emq-differs" style="color:{style.REFUSED_TEXT}">'
                'differs ✗</span>'
            )
            rows.append(
                f'<tr class="emq-trip"><td style="{_CELL}">{html.escape(r.label)}</td>'
                f'<td style="{_CELL};{_MONO}">{len(r.sent)}</td>'
                f'<td style="{_CELL};{_MONO}">{html.escape(hex_text(r.sent))}</td>'
                f'<td style="{_CELL};{_MONO}">{html.escape(hex_text(r.returned))}</td>'
                f'<td style="{_CELL};{_MONO}">{html.escape(as_text(r.returned))}</td>'
                f'<td style="{_CELL};white-space:nowrap">{mark}</td></tr>'
            )
        self.table.value = (
            '<table class="emq-round-trips" style="border-collapse:collapse">'
            f"<tr>{head}</tr>{''.join(rows)}</table>"
        )

    def text(self) -> str:
        """The round trips the panel shows, as plain text."""
        summary, ok = self._summary()
        out = [f"payload round trips on queue {self.queue!r} (enqueue, HGET, claim, complete)"]
        out.append(f"{'✓' if ok else '✗'} {summary}" if self.results or self.error else summary)
        for r in self.results:
            mark = "equal ✓" if r.equal else "differs ✗"
            out.append(f"{r.label:<30} {len(r.sent):>4} bytes  {mark}")
            out.append(f"  sent      {hex_text(r.sent)}")
            out.append(f"  returned  {hex_text(r.returned)}")
            out.append(f"  as text   {as_text(r.returned)}")
        return "\n".join(out)
