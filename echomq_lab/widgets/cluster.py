"""ClusterPanel: type a queue name, see each key's slot and the primary that owns it; run a
transition on that queue and see which primary answered."""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import errors, keyspace, transitions
from echomq_lab.cluster import placement
from echomq_lab.lessons.stories import Transitions
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel

_CELL = "padding:2px 8px;text-align:left;font-family:monospace"
#: The lease a claim takes here: long enough that nothing reaps it while the reader looks.
LEASE_MS = 60_000


class ClusterPanel(Panel):
    """A queue name (``queue``), the table of its keys, and a transition (``action``, any of
    the registry's) to ``run`` on the job it follows there
    (:class:`echomq_lab.lessons.stories.Transitions`), naming the primary that answered. A bad
    name, or a transition that needs a job or token not held yet, is refused in one line."""

    def __init__(self, conn: redis.Redis, queue: str = "lab-07") -> None:
        self.conn = conn
        self.runner: Transitions | None = None
        self.places: list[placement.KeyPlace] = []
        self.queue = W.Text(value=queue, description="queue", continuous_update=False)
        self.table = W.HTML()
        self.action = W.ToggleButtons(
            options=list(transitions.NAMES), value=transitions.NAMES[0], description="transition",
            tooltips=[t.label for t in transitions.TRANSITIONS])
        self.run = W.Button(description="run it", icon="play", button_style="primary")
        self.message = W.HTML()
        self.widget = W.VBox([self.queue, self.table, W.HBox([self.action, self.run]),
                              self.message], layout=W.Layout(min_width="560px"))
        self.widget.add_class("emq-cluster-panel")
        self.queue.observe(self._look_up, names="value")
        self._on(self.run, lambda: self._safely(self.message, self._run_action))
        self._look_up()

    def _look_up(self, _change: object = None) -> None:
        self.runner = None  # it follows a job of another queue
        try:
            self.places = placement.places(self.conn, self.queue.value)
        except (ValueError, TypeError, errors.EchoMQError) as exc:
            self.places = []
            self.table.value = ""
            self._say(self.message, style.one_line(exc), ok=False)
            return
        self.table.value = self._table_html()
        self._say(self.message, f"queue {self.queue.value!r}: every key in slot "
                  f"{self.places[0].slot}, on {self.places[0].owner.name}", ok=True)

    def _run_action(self) -> str:
        """Run the picked transition (its registry entry's call) on the queue's job; name the
        primary that answered."""
        verb, runner = self.action.value, self.runner
        if runner is None:
            queue = keyspace.check_queue(self.queue.value)
            runner = self.runner = Transitions(self.conn, queue, lease_ms=LEASE_MS)
        taken, answered = placement.answered_by(self.conn, lambda: runner.run(verb))
        who = ", ".join(answered) or "no primary"
        return f"answered by {who} on {runner.queue!r}: {taken.message}"

    def _table_html(self) -> str:
        head = "".join(f'<th style="{_CELL}">{h}</th>'
                       for h in ("key", "slot (lab)", "CLUSTER KEYSLOT", "owner"))
        rows = []
        for p in self.places:
            said = "-" if p.server_slot is None else str(p.server_slot)
            cells = (p.key, str(p.slot), said, f"{p.owner.name} ({p.owner.ranges()})")
            rows.append("<tr>" + "".join(f'<td style="{_CELL}">{html.escape(c)}</td>'
                                         for c in cells) + "</tr>")
        return f"<table><tr>{head}</tr>{''.join(rows)}</table>"

    def text(self) -> str:
        lines = [p.line() for p in self.places]
        return "\n".join(lines + ([self.last_message] if self.last_message else []))


