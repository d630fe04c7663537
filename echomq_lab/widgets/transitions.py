"""TransitionPanel: pick a transition, run its real script, watch the row, sets and diagram."""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import queues, transitions
from echomq_lab.lessons.stories import DEFAULT_LEASE_MS, Taken, Transitions, row_of
from echomq_lab.row import Row
from echomq_lab.transitions import RETIRED
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.diagram import StateDiagram
from echomq_lab.widgets.record_view import RecordView
from echomq_lab.widgets.sets_view import SetsView
from echomq_lab.widgets.ticker import Ticker

#: What a reader may predict a transition leaves in the row: its state, and its attempts.
STATE_GUESSES: tuple[str, ...] = ("pending", "active", "scheduled", "dead", "no row")
ATTEMPTS_GUESSES: tuple[str, ...] = ("as it was", "one up", "no row")


def written(before: Row | None, after: Row | None) -> tuple[str, str]:
    """What a run left, in the words of :data:`STATE_GUESSES` and :data:`ATTEMPTS_GUESSES`."""
    if after is None:
        return "no row", "no row"
    state = after.shown(b"state", "?")
    was = before.attempts if before is not None else None
    return state, "one up" if after.attempts == (was or 0) + 1 else "as it was"


class TransitionPanel(Panel):
    """``buttons["run"]`` runs the ``picker``'s transition on the job the panel follows
    (:class:`echomq_lab.lessons.stories.Transitions`), then redraws the row, the sets (a live
    clock) and the diagram from one snapshot; ``buttons["empty"]`` empties the queue for a fresh
    start. Ticking ``predict`` asks for the state and attempts the run will leave first
    (``guess_state``, ``guess_attempts``), and the run's message says how the guess fared."""

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
        self.predict = W.Checkbox(value=False, description="predict first", indent=False,
                                  layout=W.Layout(width="auto"))
        self.guess_state = W.ToggleButtons(options=[(g, g) for g in STATE_GUESSES], value=None,
                                           description="state after", style={"button_width":
                                                                             "auto"})
        self.guess_attempts = W.ToggleButtons(options=[(g, g) for g in ATTEMPTS_GUESSES],
                                              value=None, description="attempts",
                                              style={"button_width": "auto"})
        self.guesses = W.VBox([self.guess_state, self.guess_attempts],
                              layout=W.Layout(display="none"))
        self.predict.observe(self._guarded(lambda _c: self._show_guesses()), names="value")
        self.ticker = Ticker(self._tick)
        self.following = W.HTML()
        self.message = W.HTML()
        self.record = RecordView(conn, queue)
        self.sets = SetsView(conn, queue)
        self.diagram = StateDiagram()
        self.widget = W.VBox([
            self.picker,
            W.HBox([self.predict], layout=W.Layout(align_items="center")), self.guesses,
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

    def _show_guesses(self) -> None:
        self.guesses.layout.display = "flex" if self.predict.value else "none"
        self.guess_state.value = self.guess_attempts.value = None

    def _run(self) -> None:
        name = str(self.picker.value)
        guess = (self.guess_state.value, self.guess_attempts.value)
        if self.predict.value and None in guess:
            self._say(self.message, f"predict first: pick the state and the attempts {name} "
                      "will leave, then press Run", ok=False)
            return
        before = row_of(self.conn, self.queue, self.runner.job_id) if self.predict.value else None
        self.runner.lease_ms = self.lease.value
        self.runner.delay_ms = self.delay.value
        self.runner.max_attempts = self.max_attempts.value
        followed = self.runner.job_id
        self.last_error = None
        _, taken = self._attempt(self.message, lambda: self.runner.run(name))
        if isinstance(taken, Taken):
            said, ok = taken.message, True
            if self.predict.value:  # a guess missed in part: no tick leads the line
                got = written(before, row_of(self.conn, self.queue, taken.job_id))
                said += ". " + self._verdict(guess, got)
                ok = guess == got
            self._say(self.message, said, ok=ok or None)
            self._draw((taken.name, taken.before, taken.after))
            if taken.name == "claim" and followed not in (None, taken.job_id):
                self.record.mark({b"state", b"attempts"})  # what the claim wrote on that job
        elif not self.server_lost:  # a redraw would only wait on the lost server again
            self._draw()
        if self.sets.timed():
            self.ticker.start()

    def _verdict(self, guess: tuple[str, str], got: tuple[str, str]) -> str:
        """How the guess fared, part by part (a mark only beside a part that was right), and
        the guesses cleared for the next run."""
        parts = [f"you said {kind} {said} ({'✓' if said == real else f'✗: it is {real}'})"
                 for kind, said, real in zip(("state", "attempts"), guess, got, strict=True)]
        self.guess_state.value = self.guess_attempts.value = None
        return "; ".join(parts)

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
