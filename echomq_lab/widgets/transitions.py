"""TransitionPanel: pick a transition, run its real script, watch the row, sets and diagram."""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import queues, transitions
from echomq_lab.lessons.stories import DEFAULT_LEASE_MS, Taken, Transitions
from echomq_lab.transitions import RETIRED
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.diagram import StateDiagram
from echomq_lab.widgets.record_view import RecordView
from echomq_lab.widgets.sets_view import SetsView
from echomq_lab.widgets.ticker import Ticker


class TransitionPanel(Panel):
    """``buttons["run"]`` runs the ``picker``'s transition on the job the panel follows
    (:class:`echomq_lab.lessons.stories.Transitions`), then redraws the row, the sets (a live
    clock) and the diagram from one snapshot; ``buttons["empty"]`` empties the queue for a fresh
    start."""

    def __init__(
        self, conn: redis.Redis, queue: str, *, lease_ms: int = DEFAULT_LEASE_MS,
        delay_ms: int = 1000, max_attempts: int = 3,
    ) -> None:
        self.conn, self.queue = conn, queue
        self.runner = Transitions(conn, queue)
        self.picker = W.ToggleButtons(options=list(transitions.NAMES), value=transitions.NAMES[0],
                                      description="transition", style={"button_width": "96px"},
                                      tooltips=[t.label for t in transitions.TRANSITIONS])
        small = {"width": "190px"}
        self.lease = W.IntText(value=lease_ms, description="lease ms", layout=small)
        self.delay = W.IntText(value=delay_ms, description="delay ms", layout=small)
        self.max_attempts = W.IntText(value=max_attempts, description="max tries", layout=small)
        self.buttons = {"run": W.Button(description="Run", button_style="primary", icon="play",
                                        tooltip="run the chosen transition's script")}
        self._on(self.buttons["run"], self._run)
        self.buttons["empty"] = W.Button(
            description="empty the queue", icon="trash", layout=W.Layout(width="auto"),
            tooltip="delete every key of this queue and follow no job: a fresh start")
        self._on(self.buttons["empty"], self._empty)
        self.ticker = Ticker(self._tick)
        self.following = W.HTML()
        self.message = W.HTML()
        self.record = RecordView(conn, queue)
        self.sets = SetsView(conn, queue)
        self.diagram = StateDiagram()
        self.widget = W.VBox([
            self.picker,
            W.HBox([self.lease, self.delay, self.max_attempts, self.buttons["run"],
                    self.buttons["empty"], self.ticker.widget],
                   layout=W.Layout(flex_flow="row wrap", align_items="center")),
            self.message, self.following, self.sets.widget,
            W.HBox([self.diagram.widget, self.record.widget],
                   layout=W.Layout(flex_flow="row wrap", align_items="flex-start")),
        ])  # fmt: skip
        # small enough that Run, the sets, the diagram and the row fit one screen
        self.diagram.widget.layout.max_width = "470px"
        self.widget.add_class("emq-transition-panel")
        self._draw()

    def press(self, name: str) -> str:
        """Pick ``name`` and press Run, as a reader would; return the message line's text."""
        self.picker.value = name
        self.buttons["run"].click()
        return self.last_message

    def _run(self) -> None:
        name = str(self.picker.value)
        self.runner.lease_ms = self.lease.value
        self.runner.delay_ms = self.delay.value
        self.runner.max_attempts = self.max_attempts.value
        followed = self.runner.job_id
        self.last_error = None
        _, taken = self._attempt(self.message, lambda: self.runner.run(name))
        if isinstance(taken, Taken):
            self._say(self.message, taken.message, ok=True)
            self._draw((taken.name, taken.before, taken.after))
            if taken.name == "claim" and followed not in (None, taken.job_id):
                self.record.mark({b"state", b"attempts"})  # what the claim wrote on that job
        elif not self.server_lost:  # a redraw would only wait on the lost server again
            self._draw()
        if self.sets.timed():
            self.ticker.start()

    def _empty(self) -> None:
        def act() -> str:
            gone = queues.reset(self.conn, self.queue)
            self.runner.forget_job()
            return (f"emptied {self.queue!r}: {gone} key{'' if gone == 1 else 's'} deleted; "
                    "enqueue starts a fresh job")

        self._safely(self.message, act)
        if not self.server_lost:
            self._draw()

    def _tick(self) -> bool:
        """One beat of the live clock: redraw the time left; False once nothing is timed."""
        return bool(self._attempt(self.message, self.sets.tick)[1])

    def _draw(self, taken: tuple[str, str, str] | None = None) -> None:
        job_id = self.runner.job_id
        self.sets.highlight = job_id
        snap = self.sets.refresh()
        if job_id is not None:
            self.record.refresh(job_id, snap=snap)
            current = self.record.state or RETIRED
        else:
            self.record.show(None)
            current = None
        self.diagram.update(current, taken)
        words = html.escape(self.following_text())
        look = "" if current else f' style="color:{style.SOFT}"'
        badge = f" · state {style.state_badge(current)}" if current else ""
        self.following.value = f"<span{look}>{words}</span>{badge}"

    def following_text(self) -> str:
        """Which job the panel follows and the token it holds, in words."""
        job_id, token = self.runner.job_id, self.runner.token
        if job_id is None:
            return "following no job yet"
        held = f"token {token}" if token is not None else "no token yet"
        return f"following {job_id} ({held})"

    def text(self) -> str:
        """The message line, the job followed, the row, the diagram and the sets."""
        mark = "ok" if self.last_ok else "refused"
        head = f"[{mark}] {self.last_message}" if self.last_message else "(nothing run yet)"
        return "\n".join([head, self.following_text(), self.record.text(), self.diagram.text(),
                          self.sets.text()])
