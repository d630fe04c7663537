"""PayloadRoundTrip: payloads through a real enqueue and claim (:func:`fields.round_trip`),
shown as their length, the bytes sent and the bytes claim returned, and whether they agree."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab.lessons import fields
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.look import MONO, td

#: How many bytes of a payload the hex columns show before eliding the rest.
HEX_SHOWN = 24
#: How many round trips the panel keeps on screen (oldest dropped first).
KEEP = 12
#: The verdict of one round trip, in words and colour.
_MARKS = {
    True: f'<span class="emq-equal" style="color:{style.OK_TEXT}">equal ✓</span>',
    False: f'<span class="emq-differs" style="color:{style.REFUSED_TEXT}">differs ✗</span>',
}


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
    """Round-trip payloads through ``queue`` (nothing may be pending there) on ``conn``:
    ``samples`` sends :data:`fields.SAMPLE_PAYLOADS` (:meth:`send_samples`), ``send`` the
    ``custom`` text, ``\\xNN`` escapes read when ``escapes`` is ticked (:meth:`send_custom`)."""

    def __init__(self, conn: redis.Redis, queue: str) -> None:
        self.conn, self.queue = conn, queue
        self.results: list[fields.RoundTrip] = []
        self.error: str | None = None
        auto = W.Layout(width="auto")
        self.samples = W.Button(description="round-trip the samples", icon="exchange", layout=auto)
        self.custom = W.Text(
            value="", placeholder="type a payload", description="your payload",
            layout=W.Layout(width="420px"), style={"description_width": "initial"},
        )
        self.escapes = W.Checkbox(value=False, description="read \\xNN escapes", indent=False,
                                  layout=auto)
        self.send = W.Button(description="round-trip it", icon="exchange", layout=auto)
        self.message, self.table = W.HTML(), W.HTML()
        self.widget = W.VBox(
            [W.HBox([self.samples]), W.HBox([self.custom, self.escapes, self.send]),
             self.message, self.table],
            layout=W.Layout(min_width="520px"),
        )
        self.widget.add_class("emq-payload-round-trip")
        self._on(self.samples, self.send_samples)
        self._on(self.send, self.send_custom)
        self._render()

    def _trips(self, payloads: Iterable[tuple[str, bytes]]) -> None:
        for label, payload in payloads:
            result = fields.round_trip(self.conn, self.queue, payload, label)
            self.results = (self.results + [result])[-KEEP:]

    def _run(self, action: Callable[[], object]) -> bool:
        """Run ``action`` guarded, keep why it failed in :attr:`error` (one line), and redraw."""
        ran, _ = self._attempt(None, action)
        self.error = None if ran else self.last_message
        self._render()
        return ran

    def send_samples(self) -> list[fields.RoundTrip]:
        """Round-trip every sample payload, replacing what the panel showed; the trips done."""
        self.results = []
        self._run(lambda: self._trips(fields.SAMPLE_PAYLOADS))
        return list(self.results)

    def send_custom(self) -> fields.RoundTrip | None:
        """Round-trip the text box's payload (escapes decoded when the box is ticked)."""
        text = self.custom.value

        def trip() -> None:
            payload = fields.parse_escapes(text) if self.escapes.value else text.encode("utf-8")
            self._trips([("your payload", payload)])

        return self.results[-1] if self._run(trip) else None

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
            f'{td(_MARKS[r.equal], "white-space:nowrap")}</tr>'
            for r in self.results
        )
        self.table.value = (
            '<table class="emq-round-trips" style="border-collapse:collapse">'
            f"<tr>{head}</tr>{rows}</table>"
        ) if self.results else ""

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
