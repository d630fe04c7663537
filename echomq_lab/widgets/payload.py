"""PayloadRoundTrip: send payloads through a real enqueue and claim and compare the bytes.

Each round trip is :func:`echomq_lab.fields.round_trip` (enqueue, read the row's payload field,
claim, complete); the panel shows each payload's length, the bytes sent and the bytes claim
returned (in hex), and whether they agree.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TypeVar, cast

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import fields
from echomq_lab import theme as style
from echomq_lab.theme import MONO, td
from echomq_lab.widgets.base import Panel

#: How many bytes of a payload the hex columns show before eliding the rest.
HEX_SHOWN = 24
#: How many round trips the panel keeps on screen (oldest dropped first).
KEEP = 12
_T = TypeVar("_T")


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
        auto = W.Layout(width="auto")
        self.samples = W.Button(description="round-trip the samples", icon="exchange", layout=auto)
        self.custom = W.Text(
            value="", placeholder="type a payload", description="your payload",
            layout=W.Layout(width="420px"), style={"description_width": "initial"},
        )
        self.escapes = W.Checkbox(
            value=False, description="read \\xNN escapes", indent=False, layout=auto
        )
        self.send = W.Button(description="round-trip it", icon="exchange", layout=auto)
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

    def _trip(self, label: str, payload: bytes) -> fields.RoundTrip:
        result = fields.round_trip(self.conn, self.queue, payload, label)
        self.results = (self.results + [result])[-KEEP:]
        return result

    def _run(self, action: Callable[[], _T]) -> _T | None:
        """Run ``action`` guarded, keep why it failed in :attr:`error` (one line), and redraw."""
        ran, value = self._attempt(None, action)
        self.error = None if ran else self.last_message
        self._render()
        return cast("_T | None", value)

    def send_samples(self) -> list[fields.RoundTrip]:
        """Round-trip every sample payload, replacing what the panel showed before; the trips
        done (all of them, unless one was refused)."""
        self.results = []
        self._run(lambda: [self._trip(label, payload) for label, payload in fields.SAMPLE_PAYLOADS])
        return list(self.results)

    def send_custom(self) -> fields.RoundTrip | None:
        """Round-trip the text box's payload (escapes decoded when the box is ticked)."""

        def trip() -> fields.RoundTrip:
            text = self.custom.value
            payload = fields.parse_escapes(text) if self.escapes.value else text.encode("utf-8")
            return self._trip("your payload", payload)

        return self._run(trip)

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
        if not self.results and not self.error:
            self.message.value = f'<div style="color:{style.SOFT}">nothing sent yet</div>'
            self.table.value = ""
            return
        self._say(self.message, *self._summary())
        head = "".join(
            f'<th style="{style.CELL}">{h}</th>'
            for h in ("payload", "bytes", "sent (hex)", "claim returned (hex)", "as text", "")
        )
        rows = "".join(
            f'<tr class="emq-trip">{td(html.escape(r.label))}{td(str(len(r.sent)), MONO)}'
            f"{td(html.escape(hex_text(r.sent)), MONO)}"
            f"{td(html.escape(hex_text(r.returned)), MONO)}"
            f"{td(html.escape(as_text(r.returned)), MONO)}"
            f'{td(self._mark_html(r.equal), "white-space:nowrap")}</tr>'
            for r in self.results
        )
        self.table.value = (
            '<table class="emq-round-trips" style="border-collapse:collapse">'
            f"<tr>{head}</tr>{rows}</table>"
        ) if self.results else ""

    @staticmethod
    def _mark_html(equal: bool) -> str:
        if equal:
            return f'<span class="emq-equal" style="color:{style.OK_TEXT}">equal ✓</span>'
        return f'<span class="emq-differs" style="color:{style.REFUSED_TEXT}">differs ✗</span>'

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
