"""ClusterPanel: type a queue name, see each key's slot and the primary that owns it; run a
transition on that queue and see which primary answered."""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import branded, errors, jobs, keyspace, transitions
from echomq_lab.cluster import placement
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel

_CELL = "padding:2px 8px;text-align:left;font-family:monospace"


class ClusterPanel(Panel):
    """A queue name (``queue``), the table of its keys, and a transition (``action``) to
    ``run`` on it, naming the primary that answered. A bad name is refused in one line."""

    def __init__(self, conn: redis.Redis, queue: str = "lab-07") -> None:
        self.conn = conn
        self.held: jobs.Claimed | None = None
        self.places: list[placement.KeyPlace] = []
        self.queue = W.Text(value=queue, description="queue", continuous_update=False)
        self.table = W.HTML()
        self.action = W.ToggleButtons(options=list(ACTIONS), value=ACTIONS[0],
                                      description="transition")
        self.run = W.Button(description="run it", icon="play", button_style="primary")
        self.message = W.HTML()
        self.widget = W.VBox([self.queue, self.table, W.HBox([self.action, self.run]),
                              self.message], layout=W.Layout(min_width="560px"))
        self.widget.add_class("emq-cluster-panel")
        self.queue.observe(self._look_up, names="value")
        self.run.on_click(lambda _button: self._safely(self.message, self._run_action))
        self._look_up()

    def _look_up(self, _change: object = None) -> None:
        self.held = None  # a token of another queue's job
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
        queue, verb = keyspace.check_queue(self.queue.value), self.action.value
        act: Callable[[str], str] = getattr(self, f"_{verb}")  # the reply in a few words
        reply, answered = placement.answered_by(self.conn, lambda: act(queue))
        return f"{verb} on {queue!r} answered by {', '.join(answered) or 'no primary'}: {reply}"

    def _enqueue(self, queue: str) -> str:
        return jobs.enqueue(self.conn, queue, branded.mint("JOB"), b"work")

    def _claim(self, queue: str) -> str:
        got = jobs.claim(self.conn, queue, 60_000)
        if got is None:
            return "nothing pending"
        self.held = got
        return f"token {got.token} for {got.id}"

    def _complete(self, queue: str) -> str:
        if self.held is None:
            raise ValueError("claim a job first: there is no token to complete with")
        held, self.held = self.held, None
        return f"{jobs.complete(self.conn, queue, held.id, held.token)} {held.id}"

    def _reap(self, queue: str) -> str:
        return f"{jobs.reap(self.conn, queue)} returned"

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


#: The transitions the panel offers (each has a ``_<name>`` method), in the registry's order.
ACTIONS: tuple[str, ...] = tuple(
    n for n in transitions.NAMES if callable(getattr(ClusterPanel, f"_{n}", None))
)
