"""FencePanel: complete the sample row (current token 2) with a token of your choice.

The sample row is built by real transitions only (:func:`echomq_lab.stories.sample_row`):
enqueue, claim with a short lease, wait for it to expire on the server clock, reap, claim
again. The current token is then 2 and token 1 is stale. ``complete`` with the live token is
accepted (the row is gone); any other token is refused ``EMQSTALE`` and the row is untouched.
"""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import jobs
from echomq_lab.stories import SampleRow, sample_row
from echomq_lab.widgets import style
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.record_view import RecordView
from echomq_lab.widgets.sets_view import SetsView


class FencePanel(Panel):
    """A token input and a complete button over the sample row, and a rebuild button.

    ``token.value`` is the token to present; ``buttons["complete"]`` runs ``jobs.complete``
    with it; ``buttons["rebuild"]`` empties the queue and builds a fresh sample row.
    ``build=False`` leaves the row unbuilt until rebuild is pressed.
    """

    def __init__(
        self, conn: redis.Redis, queue: str, *, lease_ms: int = 300, token: int = 1,
        build: bool = True,
    ) -> None:
        self.conn, self.queue, self.lease_ms = conn, queue, lease_ms
        self.sample: SampleRow | None = None
        self.token = W.IntText(value=token, description="token", layout=W.Layout(width="160px"))
        self.buttons = {
            "complete": W.Button(description="complete", button_style="primary", icon="check",
                                 tooltip="complete the sample row with the token above"),
            "rebuild": W.Button(description="rebuild the sample row", icon="refresh",
                                tooltip="a new sample row, claimed twice (attempts 2)",
                                layout=W.Layout(width="auto")),
        }
        self.buttons["complete"].on_click(lambda _b: self._complete())
        self.buttons["rebuild"].on_click(lambda _b: self._rebuild())
        self.header = W.HTML()
        self.message = W.HTML()
        self.record = RecordView(conn, queue)
        self.sets = SetsView(conn, queue)
        self.widget = W.VBox(
            [
                self.header,
                W.HBox([self.token, self.buttons["complete"], self.buttons["rebuild"]]),
                self.message,
                self.record.widget,
                self.sets.widget,
            ]
        )
        self.widget.add_class("emq-fence-panel")
        if build:
            self._rebuild()
        else:
            self._draw_header()

    def _rebuild(self) -> None:
        def act() -> str:
            self.sample = sample_row(self.conn, self.queue, lease_ms=self.lease_ms)
            return (
                f"built {self.sample.job_id}: claimed (token {self.sample.stale_token}), lease "
                f"expired, reaped, claimed again (token {self.sample.token})"
            )

        self._safely(self.message, act)
        self.sets.highlight = self.sample.job_id if self.sample else None
        snap = self.sets.refresh()
        self.record.show(self.sample.job_id if self.sample else None, snap)
        self._draw_header()

    def _complete(self) -> None:
        token = self.token.value

        def act() -> str:
            if self.sample is None:
                raise ValueError("no sample row yet: press rebuild")
            jobs.complete(self.conn, self.queue, self.sample.job_id, token)
            return f"token {token} accepted: complete deleted the row and its lease"

        ok = self._safely(self.message, act)
        if not ok and self.last_message.startswith("EMQSTALE"):
            self._say(self.message, f"{self.last_message} (the row is untouched)", ok=False)
        snap = self.sets.refresh()
        if self.sample is not None:
            self.record.refresh(snap=snap)
        self._draw_header()

    def _draw_header(self) -> None:
        self.header.value = (
            f"<b>complete with a token</b> · {html.escape(self.header_text())}"
            if self.sample is not None
            else f'<span style="color:{style.MUTED}">no sample row yet</span>'
        )

    def header_text(self) -> str:
        """Which row the panel fences and its current attempts (the live token), in words."""
        if self.sample is None:
            return "no sample row yet"
        row = self.record.row
        att = row.shown(b"attempts", "?") if row else None
        now = f"the row's attempts is {att}" if att else "the row is gone"
        return f"sample row {self.sample.job_id}: {now}"

    def text(self) -> str:
        """The header, the message line, the row and the sets, as plain text."""
        mark = "ok" if self.last_ok else "refused"
        msg = f"[{mark}] {self.last_message}" if self.last_message else "(nothing run yet)"
        return "\n".join([self.header_text(), msg, self.record.text(), self.sets.text()])
