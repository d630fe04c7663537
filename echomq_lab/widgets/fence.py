"""FencePanel: the whole fence. Pick a verb, a token and the lease; the real script decides."""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import transitions
from echomq_lab.lessons import fencing
from echomq_lab.lessons.stories import SampleRow, sample_row
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.record_view import RecordView
from echomq_lab.widgets.sets_view import SetsView
from echomq_lab.widgets.ticker import Ticker

#: The panel's first verb (its default); the others follow in the registry's order.
FIRST_VERB = "complete"
#: The fenced verbs, each with its registry label as its tooltip.
VERB_TIPS: dict[str, str] = {
    verb: f"{verb}: {transitions.get(verb).label}"
    for verb in sorted(fencing.VERBS, key=lambda verb: verb != FIRST_VERB)
}
LEASE_TIPS = (
    "The job is still in active: the last claim's lease has time left",
    "The lease ran out and reap put the job back in pending before the token arrives",
)


class FencePanel(Panel):
    """``buttons["run"]`` (or ``"complete"``) builds a fresh sample row, reaps its lease if
    ``lease`` says so and runs ``verb`` with ``token`` (:mod:`echomq_lab.lessons.fencing`)
    into ``trial``;
    ``buttons["rebuild"]`` only builds; ``build=False``: no sample row until the first click."""

    def __init__(
        self, conn: redis.Redis, queue: str, *, lease_ms: int = 60, token: int = 1,
        build: bool = True,
    ) -> None:
        self.conn, self.queue, self.lease_ms = conn, queue, lease_ms
        self.sample: SampleRow | None = None
        self.trial: fencing.Trial | None = None
        self.verb = W.ToggleButtons(options=list(VERB_TIPS), value=FIRST_VERB,
                                    description="verb", tooltips=list(VERB_TIPS.values()))
        self.token = W.IntText(value=token, description="token", layout=W.Layout(width="160px"),
                               tooltip="The token to present (the sample row's attempts is 2)")
        self.lease = W.ToggleButtons(options=[("still held", "held"), ("already reaped", "reaped")],
                                     value="held", description="lease", tooltips=list(LEASE_TIPS))
        run = W.Button(description="run it", button_style="primary", icon="play",
                       tooltip="Build a fresh sample row (attempts 2), set up the lease, "
                               "then run the verb's script with this token")
        rebuild = W.Button(description="rebuild the sample row", icon="refresh",
                           layout=W.Layout(width="auto"),
                           tooltip="Empty the queue and build a fresh sample row; run nothing")
        self._on(run, self._run)
        self._on(rebuild, self._rebuild)
        self.buttons = {"run": run, "complete": run, "rebuild": rebuild}
        self.header = W.HTML("<b>the fence</b> · no sample row yet")
        self.ticker = Ticker(self._tick)
        self.message = W.HTML()
        self.record = RecordView(conn, queue)
        self.sets = SetsView(conn, queue)
        self.widget = W.VBox([self.header, self.verb, W.HBox([self.token, self.lease]),
                              W.HBox([run, rebuild, self.ticker.widget]), self.message,
                              self.record.widget, self.sets.widget])
        self.widget.add_class("emq-fence-panel")
        if build:
            self._rebuild()

    def _show(self) -> None:
        """Show the sample row: afresh when it is a new one, else with what changed lit."""
        if not self.server_lost:  # a redraw would only wait on the lost server again
            job_id = self.sample.job_id if self.sample else None
            self.sets.highlight = job_id
            self.record.refresh(job_id, snap=self.sets.refresh())
            if self.sets.timed():
                self.ticker.start()
        self.header.value = f"<b>the fence</b> · {html.escape(self.header_text())}"

    def _tick(self) -> bool:
        """One beat of the live clock: redraw the time left; False once nothing is timed."""
        return bool(self._attempt(self.message, self.sets.tick)[1])

    def _rebuild(self) -> None:
        def act() -> str:
            self.trial = None
            self.sample = sample_row(self.conn, self.queue, lease_ms=self.lease_ms)
            return (f"built {self.sample.job_id}: claimed (token {self.sample.stale_token}), lease "
                    f"expired, reaped, claimed again (token {self.sample.token})")

        self._safely(self.message, act)
        self._show()

    def _run(self) -> None:
        """A fresh sample row, shown; then the token presented and what changed shown."""
        verb, token, lease = self.verb.value, self.token.value, self.lease.value

        def act() -> str:
            fencing.check_choice(verb, token, lease)
            self.trial = None
            self.sample = fencing.prepare(self.conn, self.queue, lease, lease_ms=self.lease_ms)
            self._show()
            self.trial = fencing.present(self.conn, self.queue, self.sample, verb, token, lease)
            return self.trial.line()

        if self._safely(self.message, act) and self.trial and not self.trial.outcome.accepted:
            self._say(self.message, self.trial.line(), ok=False)  # the server said no
        self._show()

    def header_text(self) -> str:
        """Which row the panel fences and its current attempts (the live token), in words."""
        if self.sample is None:
            return "no sample row yet"
        row = self.record.row
        now = f"the row's attempts is {row.shown(b'attempts', '?')}" if row else "the row is gone"
        return f"sample row {self.sample.job_id}: {now}"

    def text(self) -> str:
        """The header, the choices, the message line, the row and the sets, as plain text."""
        mark = "ok" if self.last_ok else "refused"
        msg = f"[{mark}] {self.last_message}" if self.last_message else "(nothing run yet)"
        choice = f"verb {self.verb.value}, token {self.token.value}, lease {self.lease.label}"
        return "\n".join([self.header_text(), choice, msg, self.record.text(), self.sets.text()])
