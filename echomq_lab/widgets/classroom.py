"""The workshop's panels: :class:`LearnerPanel` (one learner, one worker on the room's queue)
and :class:`BoardPanel` (the instructor's board: every lease on one timeline, the fence's
refusals by name, the drift check, the room's controls). The logic is in
:mod:`echomq_lab.classroom`; these only draw it and pass the clicks on."""

from __future__ import annotations

import contextlib
import functools
import html
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import ipywidgets as W  # type: ignore[import-untyped]

from echomq_lab import clock, transitions
from echomq_lab.browser.websocket import in_turn
from echomq_lab.classroom import board as boards
from echomq_lab.classroom.desk import Answer, Desk, join
from echomq_lab.classroom.ledger import calls as logged
from echomq_lab.classroom.ledger import tally_of
from echomq_lab.classroom.practice import Practice, practice
from echomq_lab.connection import connect
from echomq_lab.sim import charts
from echomq_lab.widgets import look
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.ticker import Ticker

#: A learner's buttons, in the order a job's life goes: claim, the two ways of spending the
#: lease (work, stall), then the registry's fenced verbs, last registered first (extend,
#: complete, retry).
ACTIONS: tuple[str, ...] = ("claim", "work", "stall", *reversed(transitions.FENCED))
#: How long the ``work`` button works (a short piece of the lease).
WORK_S = 0.2


def _past(verb: str) -> str:
    """A transition's name in the past tense, for the board's lines: "completed", "retried"."""
    if verb.endswith("e"):
        return verb + "d"
    return verb[:-1] + "ied" if verb.endswith("y") else verb + "ed"


_CELL = re.compile(r"</?(td|tr|div|table|br)\b[^>]*>")
_TAG = re.compile(r"<[^>]+>")


def _plain(markup: str) -> str:
    """``markup`` as the text a reader sees (tags dropped, entities read, one line)."""
    return " ".join(html.unescape(_TAG.sub("", _CELL.sub(" ", markup))).split())


class LearnerPanel(Panel):
    """One learner's desk: paste a join link and join the room, or practise alone on this
    computer; each button is one call, and its answer is said in plain words."""

    def __init__(self, link: str = "") -> None:
        self.desk: Desk
        self.practice: Practice | None = None
        self.link = W.Text(value=link, placeholder="echomq://learner-1:secret@host:port/room",
                           description="join link", layout=W.Layout(width="60%"))
        self.join_button = W.Button(description="join the room", icon="sign-in")
        self.where = W.HTML()
        self.holding = W.HTML()
        self.mine = W.HTML()
        self.message = W.HTML()
        self.buttons = {a: W.Button(description=a, layout=W.Layout(width="auto")) for a in ACTIONS}
        for action, button in self.buttons.items():
            self._on(button, functools.partial(self.press, action))
        self._on(self.join_button,
                 lambda: self._safely(self.message, lambda: self.join(self.link.value)))
        self.widget = W.VBox([
            W.HBox([self.link, self.join_button], layout=W.Layout(flex_flow="row wrap")),
            self.where, self.holding,
            W.HBox(list(self.buttons.values()), layout=W.Layout(flex_flow="row wrap")),
            self.message, self.mine,
        ])  # fmt: skip
        if link.strip():
            self.join(link)
        else:
            self._practise()

    def _on(self, button: W.Button, action: Callable[[], object]) -> None:
        """Run ``action`` when ``button`` is clicked, guarded; in the browser as a task of its
        own, after the clicks before it (a call to the room waits on the network there). The
        cue that the press was taken shows at once and stays until the action has run."""
        guarded = self._guarded(action)

        def pressed(_button: W.Button) -> None:
            cue = contextlib.ExitStack()
            cue.enter_context(self._pressing(button, self.message))

            def turn() -> None:
                with cue:
                    guarded()

            in_turn(turn)

        button.on_click(pressed)

    def _practise(self) -> None:
        self.practice = practice()
        self.desk = self.practice.you
        self.where.value = ("<b>practice room</b>, on this computer: you are learner-1, with one "
                            "classmate. Paste the link your instructor gives you to join the "
                            "workshop.")
        self._draw()

    def join(self, link: str) -> str:
        """Join the room ``link`` names; a bad link or a refused password says why in a line."""
        desk = join(link)
        self.desk, self.practice = desk, None
        self.where.value = (f"<b>room {html.escape(desk.room)}</b>: you are "
                            f"<b>{html.escape(desk.actor)}</b>, one worker among the class")
        self._draw()
        return f"joined room {desk.room} as {desk.actor}"

    def press(self, action: str) -> str:
        """Run ``action`` (one of :data:`ACTIONS`) and say what the server answered."""
        if action not in ACTIONS:
            raise ValueError(f"no action {action!r}: use one of {', '.join(ACTIONS)}")
        said = self._do(action)
        self._say(self.message, said, ok=not said.split(":")[0].endswith("refused"))
        self._draw()
        return said

    def _do(self, action: str) -> str:
        desk = self.desk
        if self.practice is not None and action == "claim":
            self.practice.refill()
        if action == "work":
            held = desk.need()
            time.sleep(WORK_S)
            left = (clock.lease_deadline(desk.conn, desk.room, held.id) or 0)
            now = clock.server_now_ms(desk.conn)
            return (f"you worked on {held.id} for {WORK_S:g} s" if left > now else
                    f"you worked on {held.id}, but your lease has run out")
        if action == "stall":
            said = desk.stall()
            if self.practice is not None:
                said = f"{said}. {self.practice.stalled()}"
            return said
        answer: Answer = getattr(desk, action)()
        return answer.words

    def counts(self) -> dict[str, int]:
        """Your own counts, from your own log."""
        return tally_of(logged(self.desk.conn, self.desk.room, [self.desk.actor]),
                        [self.desk.actor])[self.desk.actor]

    def _draw(self) -> None:
        held = self.desk.held
        self.holding.value = html.escape(
            f"you hold {held.id} with token {held.token}" + (" (stalled)" if self.desk.stalled
                                                             else "")
            if held else "you hold nothing")
        for action in ACTIONS[1:]:
            self.buttons[action].disabled = held is None
        self.buttons["claim"].disabled = held is not None
        c = self.counts()
        self.mine.value = html.escape(f"you so far: claims {c['claims']} · completes "
                                      f"{c['completes']} · refused as stale {c['stale']}")

    def text(self) -> str:
        return "\n".join(_plain(w.value) for w in
                         (self.where, self.holding, self.message, self.mine) if w.value)


class BoardPanel(Panel):
    """The instructor's board for ``board``'s room: redrawn every second while its clock runs
    (so a raw write to a row shows in the drift line within two), the timeline every few."""

    def __init__(self, board: boards.Board, *, every_s: float = 1.0) -> None:
        self.board = board
        self.every_s = every_s
        self._last = 0.0
        self._redraws = 0
        self.reading: boards.Reading | None = None
        small = W.Layout(width="170px")
        self.jobs = W.BoundedIntText(value=20, min=1, max=10_000, description="jobs",
                                     layout=small)
        self.lease = W.BoundedIntText(value=3000, min=100, max=600_000, description="lease ms",
                                      layout=small)
        self.storm_workers = W.BoundedIntText(value=5, min=1, max=boards.STORM_MAX_WORKERS,
                                              description="stallers", layout=small)
        self.reaper = W.ToggleButton(value=True, description="reaper runs", icon="undo")
        self.buttons = {
            "enqueue": W.Button(description="enqueue", icon="plus", button_style="primary"),
            "lease": W.Button(description="set lease"),
            "storm": W.Button(description="start a storm of stalls", icon="bolt"),
            "refresh": W.Button(description="refresh", icon="refresh"),
        }
        self._on(self.buttons["enqueue"], lambda: self._act(
            lambda: board.enqueue(self.jobs.value)))
        self._on(self.buttons["lease"], lambda: self._act(
            lambda: board.set_lease(self.lease.value)))
        self._on(self.buttons["storm"], lambda: self._act(
            lambda: board.storm(self.storm_workers.value)))
        self._on(self.buttons["refresh"], lambda: self.redraw(timeline=True))
        self.reaper.observe(self._guarded(lambda _c: self._act(
            lambda: board.set_reaper(self.reaper.value))), names="value")
        self.message = W.HTML()
        self.summary = W.HTML()
        self.drift = W.HTML()
        self.table = W.HTML()
        self.acl = W.HTML()
        self.picture = W.HTML()
        self.ticker = Ticker(self._tick)
        self.widget = W.VBox([
            W.HBox([self.jobs, self.buttons["enqueue"], self.lease, self.buttons["lease"],
                    self.reaper], layout=W.Layout(flex_flow="row wrap")),
            W.HBox([self.storm_workers, self.buttons["storm"], self.buttons["refresh"],
                    self.ticker.widget], layout=W.Layout(flex_flow="row wrap")),
            self.message, self.summary, self.drift, self.picture, self.table, self.acl,
        ])  # fmt: skip
        self.redraw(timeline=True)

    def _act(self, action: Callable[[], str]) -> None:
        if self._safely(self.message, action):
            self.redraw()

    def _tick(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._redraws += 1
            self._attempt(self.message, lambda: self.redraw(timeline=self._redraws % 5 == 1))
        return True

    def redraw(self, timeline: bool = False) -> None:
        """Read the room once and draw it (the timeline too when ``timeline``)."""
        r = self.reading = self.board.read()
        self.reaper.value = r.reaper_on
        self.summary.value = html.escape(
            f"room {self.board.room}: {r.pending} pending · {r.active} leased · tokens minted "
            f"{r.tokens_minted} · stale completes refused {sum(r.stale_by_learner.values())}"
            f" · lease {r.lease_ms} ms · reaper {'runs' if r.reaper_on else 'paused'}")
        self.drift.value = look.message_html(
            "drift check: rows and sets agree" if not r.drift else
            f"drift check: {len(r.drift)} disagreement(s): "
            + "; ".join(f"{d.kind} {d.job_id}" for d in list(r.drift)[:5]), not r.drift)
        self.table.value = _counts_html(r)
        self.acl.value = "".join(
            f"<div>{html.escape(user)}: refused "
            f"{html.escape(', '.join(f'{w} ×{n}' for w, n in what.most_common()))}</div>"
            for user, what in sorted(r.acl.items())) + "".join(
            f"<div>{html.escape(actor)}'s log holds {n} line(s) that are not calls</div>"
            for actor, n in sorted(r.unreadable.items())) + "".join(
            f"<div>{html.escape(who)} {html.escape(_past(verb))} a job "
            f"{html.escape(holder)} held ({html.escape(job)}): the token was read from the "
            "job's row, and the fence let it through</div>"
            for who, verb, job, holder in r.crossed[-20:])
        if timeline and r.leases:
            self.picture.value = charts.lease_timeline_svg(
                r.leases[-400:], title="Every worker's leases, claim to settle (seconds since "
                "the room opened)")

    def text(self) -> str:
        return "\n".join(_plain(w.value) for w in
                         (self.message, self.summary, self.drift, self.table) if w.value)


def _counts_html(r: boards.Reading) -> str:
    head = "".join(look.td(f"<b>{h}</b>") for h in
                   ("learner", "claims", "completes", "refused as stale", "retries", "extends"))
    rows = "".join(
        "<tr>" + look.td(html.escape(name)) + "".join(
            look.td(str(c[k])) for k in ("claims", "completes", "stale", "retries", "extends"))
        + "</tr>" for name, c in r.counts.items())
    return f"<table><tr>{head}</tr>{rows}</table>"


def _from_where_run(path: Path) -> Path:
    """``path``, a relative one read from the folder the command was run in (the shell's
    ``PWD``: a notebook's kernel runs in the notebook's own folder)."""
    if path.is_absolute():
        return path
    return Path(os.environ.get("PWD", "."), path)


def board_from(room_json: str | Path = "") -> BoardPanel:
    """The board of the room a ``room.json`` describes (its live clock started); without one,
    a practice room on the embedded server with two jobs done and one complete refused."""
    if str(room_json):
        seat = json.loads(_from_where_run(Path(room_json)).read_text(encoding="utf-8"))
        panel = BoardPanel(boards.Board(connect(seat["instructor"]["url"]), seat["room"]))
        panel.ticker.start()
        return panel
    p = practice()
    for _ in range(2):
        p.you.claim()
        p.you.complete()
    p.you.claim()
    p.you.stall()
    p.stalled()
    p.you.complete()
    return BoardPanel(boards.Board(p.you.conn, p.you.room))


__all__ = ["BoardPanel", "LearnerPanel", "board_from"]
