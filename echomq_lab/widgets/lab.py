"""LabPanel: free play with one to three workers on one queue, the sets and verdict in view."""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Sequence

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import branded, jobs, transitions
from echomq_lab.lessons.stories import DEFAULT_LEASE_MS, Worker
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.record_view import RecordView
from echomq_lab.widgets.sets_view import SetsView
from echomq_lab.widgets.ticker import Ticker

#: What a worker does with the job it holds: present its token, or drop it (as a crash would).
HELD_ACTIONS: tuple[str, ...] = (*transitions.FENCED, "drop")


class WorkerCard:
    """One worker's controls: what it holds, a lease slider and its action buttons."""

    def __init__(self, worker: Worker, lease_ms: int) -> None:
        self.worker = worker
        self.lease = W.BoundedIntText(value=lease_ms, min=100, max=10_000, step=100,
                                      description="lease ms", layout=W.Layout(width="95%"))
        self.holding = W.HTML()
        self.buttons = {action: W.Button(description=action, layout=W.Layout(width="auto"))
                        for action in ("claim", *HELD_ACTIONS)}
        self.widget = W.VBox(
            [W.HTML(f"<b>worker {html.escape(worker.name)}</b>"), self.holding, self.lease,
             W.HBox(list(self.buttons.values()), layout=W.Layout(flex_flow="row wrap"))],
            layout=W.Layout(border=f"1px solid {style.SOFT}", padding="4px", margin="2px",
                            flex="1 1 250px", max_width="340px"),
        )
        self.draw()

    def draw(self) -> None:
        held = self.worker.held
        look = "font-family:monospace" if held else f"color:{style.SOFT}"
        self.holding.value = f"<span style='{look}'>{html.escape(self.worker.holding())}</span>"
        for action in HELD_ACTIONS:
            self.buttons[action].disabled = held is None


class LabPanel(Panel):
    """Free play for ``workers`` (:class:`echomq_lab.lessons.stories.Worker`), pressing ``enqueue``,
    ``reap``, ``promote``, ``refresh`` or ``"<worker>.<action>"`` in ``buttons``; each press
    redraws the sets, the verdict and the row it touched (changes lit) from one snapshot."""

    def __init__(
        self, conn: redis.Redis, queue: str, *, workers: Sequence[str] = ("A", "B"),
        lease_ms: int = DEFAULT_LEASE_MS, payload: str = '{"report": "march"}',
    ) -> None:
        if not 1 <= len(workers) <= 3 or len(set(workers)) != len(workers):
            raise ValueError(f"give one to three distinct worker names, not {list(workers)!r}")
        self.conn, self.queue = conn, queue
        #: The job the last press touched: the row view shows it.
        self.touched: str | None = None
        self.cards = {name: WorkerCard(Worker(conn, queue, name), lease_ms) for name in workers}
        self.payload = W.Text(value=payload, description="payload")
        small = {"width": "190px"}
        self.delay = W.IntText(value=1000, description="retry delay", layout=small)
        self.max_attempts = W.IntText(value=3, description="max tries", layout=small)
        self.buttons: dict[str, W.Button] = {
            "enqueue": W.Button(description="enqueue", icon="plus", button_style="primary"),
            "reap": W.Button(description="reaper: reap", icon="undo"),
            "promote": W.Button(description="promoter: promote", icon="arrow-up"),
            "refresh": W.Button(description="refresh", icon="refresh"),
        }
        for button in self.buttons.values():
            button.layout.width = "auto"
        self._on(self.buttons["enqueue"], lambda: self._act(self._enqueue))
        self._on(self.buttons["reap"], lambda: self._act(self._reap))
        self._on(self.buttons["promote"], lambda: self._act(self._promote))
        self._on(self.buttons["refresh"], self._draw)
        for name, card in self.cards.items():
            for action, button in card.buttons.items():
                self.buttons[f"{name}.{action}"] = button
                press = functools.partial(self._press, card, action)
                self._on(button, functools.partial(self._act, press))
        self.message = W.HTML()
        self.sets = SetsView(conn, queue)
        self.record = RecordView(conn, queue)
        self.ticker = Ticker(self._tick)
        self.widget = W.VBox([
            W.HBox([self.buttons["enqueue"], self.payload, self.ticker.widget],
                   layout=W.Layout(flex_flow="row wrap", align_items="center")),
            W.HBox([self.buttons["reap"], self.buttons["promote"], self.buttons["refresh"],
                    self.delay, self.max_attempts], layout=W.Layout(flex_flow="row wrap")),
            W.HBox([c.widget for c in self.cards.values()], layout=W.Layout(flex_flow="row wrap")),
            self.message, self.sets.widget, self.record.widget,
        ])  # fmt: skip
        self.widget.add_class("emq-lab-panel")
        self._draw()

    def _enqueue(self) -> str:
        job_id = branded.mint("JOB")
        outcome = jobs.enqueue(self.conn, self.queue, job_id, self.payload.value)
        self.touched = job_id
        return f"enqueue {job_id}: {outcome}"

    def _reap(self) -> str:
        reaped = style.counted(jobs.reap(self.conn, self.queue), "expired lease")
        return f"the reaper returned {reaped} to pending"

    def _promote(self) -> str:
        moved = style.counted(jobs.promote(self.conn, self.queue), "due job")
        return f"the promoter moved {moved} to pending"

    def _press(self, card: WorkerCard, action: str) -> str:
        """Run a worker's ``action``; the row view follows the job it held, or the one it took."""
        worker = card.worker
        if worker.held is not None:
            self.touched = worker.held.id
        if action == "claim":
            said = worker.claim(card.lease.value)
            self.touched = worker.held.id if worker.held else self.touched
            return said
        if action == "drop":
            return worker.drop()
        return worker.present(action, lease_ms=card.lease.value, delay_ms=self.delay.value,
                              max_attempts=self.max_attempts.value)

    def _act(self, action: Callable[[], str]) -> None:
        self._safely(self.message, action)
        if not self.server_lost:  # a redraw would only wait on the lost server again
            self._draw()
            if self.sets.timed():
                self.ticker.start()

    def _settle_controls(self) -> None:
        for card in self.cards.values():
            card.draw()

    def _draw(self) -> None:
        for card in self.cards.values():
            card.draw()
        held = [c.worker.held.id for c in self.cards.values() if c.worker.held is not None]
        follow = list(dict.fromkeys([*held, *([self.touched] if self.touched else [])]))
        self.sets.highlight = self.touched
        snap = self.sets.refresh(follow=follow)  # the jobs the workers hold, wherever they sit
        self.record.refresh(self.touched, snap=snap)

    def _tick(self) -> bool:
        """One beat of the live clock: redraw the time left; False once nothing is timed."""
        return bool(self._attempt(self.message, self.sets.tick)[1])

    def text(self) -> str:
        """Each worker's holding, the last message, the sets and the verdict, as plain text."""
        lines = [f"worker {n}: {c.worker.holding()}" for n, c in self.cards.items()]
        if self.last_message:
            lines.append(f"[{'ok' if self.last_ok else 'refused'}] {self.last_message}")
        lines += [self.sets.text(), self.record.text()]
        return "\n".join(lines)
