"""TwoWorkersStory: two workers, one job, told as step buttons over the live row and sets.

The story is :class:`echomq_lab.two_workers.TwoWorkers`; this panel only draws it. Each step's
button is enabled only when that step is next; after each step the row and the four sets are
redrawn from one snapshot and the step's outcome is added to the log.
"""

from __future__ import annotations

import functools
import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import theme as style
from echomq_lab.stories import DEFAULT_LEASE_MS
from echomq_lab.two_workers import STEPS, TwoWorkers
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.record_view import RecordView
from echomq_lab.widgets.sets_view import SetsView

#: The short label of each step's button.
BUTTON_LABELS: dict[str, str] = {
    "a_claims": "A claims",
    "a_stalls": "A stalls",
    "reaper_returns": "reaper returns it",
    "b_claims": "B claims",
    "a_completes": "A completes",
    "b_completes": "B completes",
}


class TwoWorkersStory(Panel):
    """Step buttons ``buttons[<step>]`` (see :data:`echomq_lab.two_workers.STEP_NAMES`) and
    ``buttons["restart"]``; a log of the steps taken; the row and the sets.

    Construction starts the story: the queue is emptied and one job is enqueued.
    """

    def __init__(self, conn: redis.Redis, queue: str, *, lease_ms: int = DEFAULT_LEASE_MS) -> None:
        self.story = TwoWorkers(conn, queue, lease_ms=lease_ms)
        self.buttons: dict[str, W.Button] = {}
        for step, title in STEPS:
            button = W.Button(description=BUTTON_LABELS[step], tooltip=title,
                              layout=W.Layout(width="auto"))
            self._on(button, functools.partial(self._step, step))
            self.buttons[step] = button
        self.buttons["restart"] = W.Button(description="start again", icon="refresh",
                                           layout=W.Layout(width="auto"))
        self._on(self.buttons["restart"], self._restart)
        self.log = W.HTML()
        self.message = W.HTML()
        self.record = RecordView(conn, queue)
        self.sets = SetsView(conn, queue)
        self.widget = W.VBox(
            [
                W.HBox([self.buttons[s] for s, _ in STEPS] + [self.buttons["restart"]],
                       layout=W.Layout(flex_flow="row wrap")),
                self.message,
                self.log,
                W.HBox([self.record.widget, self.sets.widget],
                       layout=W.Layout(flex_flow="row wrap")),
            ]
        )
        self.widget.add_class("emq-two-workers")
        self._restart()

    def _restart(self) -> None:
        def act() -> str:
            job_id = self.story.start()
            return f"the story's job {job_id} is pending (other jobs on the queue are left alone)"

        self._safely(self.message, act)
        if not self.server_lost:  # a redraw would only wait on the lost server again
            self._draw(fresh=True)
        else:
            self._draw_steps()

    def _step(self, step: str) -> None:
        def act() -> str:
            result = self.story.step(step)
            return result.message

        before = len(self.story.done)
        if self._safely(self.message, act) and len(self.story.done) > before:
            result = self.story.done[-1]
            if result.refused:  # the refusal the story expects: said in red, as the server did
                self._say(self.message, result.message, ok=False)
        if self.server_lost:  # the step was not taken; a redraw would only wait again
            self._draw_steps()
        else:
            self._draw()

    def _draw(self, fresh: bool = False) -> None:
        job_id = self.story.job_id or None
        self.sets.highlight = job_id
        snap = self.sets.refresh()
        if fresh:
            self.record.show(job_id, snap)
        else:
            self.record.refresh(job_id, snap=snap)
        self._draw_steps()

    def _draw_steps(self) -> None:
        """The step buttons (only the next one enabled) and the log, from the story alone."""
        nxt = self.story.next_step
        for step, _ in STEPS:
            self.buttons[step].disabled = step != nxt
            self.buttons[step].button_style = "primary" if step == nxt else ""
        self.log.value = "<ol style='margin:4px 0'>" + "".join(
            self._log_item(i, step, title) for i, (step, title) in enumerate(STEPS)
        ) + "</ol>"

    def _log_item(self, i: int, step: str, title: str) -> str:
        done = self.story.done
        if i < len(done):
            result = done[i]
            colour = style.REFUSED_TEXT if result.refused else style.OK_TEXT
            mark = "✗ refused" if result.refused else "✓"
            return (
                f"<li>{html.escape(title)} <span style='color:{colour}'>{mark}</span> "
                f"<span style='font-family:monospace'>{html.escape(result.message)}</span></li>"
            )
        if step == self.story.next_step:
            return f"<li><b>{html.escape(title)}</b> ← next</li>"
        return f"<li style='color:{style.SOFT}'>{html.escape(title)}</li>"

    def log_text(self) -> str:
        """The steps as plain text: done ones with their outcome, then the next one."""
        out = []
        for i, (step, title) in enumerate(STEPS):
            if i < len(self.story.done):
                result = self.story.done[i]
                mark = "refused" if result.refused else "done"
                out.append(f"{i + 1}. {title} [{mark}] {result.message}")
            elif step == self.story.next_step:
                out.append(f"{i + 1}. {title} <- next")
            else:
                out.append(f"{i + 1}. {title}")
        return "\n".join(out)

    def text(self) -> str:
        """The last message, the step log, the row and the sets, as plain text."""
        mark = "ok" if self.last_ok else "refused"
        return "\n".join(
            [f"[{mark}] {self.last_message}", self.log_text(), self.record.text(),
             self.sets.text()]
        )
