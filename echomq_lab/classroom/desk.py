"""A desk: one actor of a room (a learner, the instructor, the reaper) and its log.

Each call runs the real handle of :mod:`echomq_lab.jobs` (one EVALSHA). The actor's stream
``emq:{ROOM}:log:<actor>`` is where the board learns who did what, and a learner never writes
it: the room's gateway (:mod:`.gateway`) appends each learner's call as the server answered it.
The instructor's own desks (the board, the reaper, a storm's workers) reach the server directly
and append their lines themselves (``logs=True``), each holding when the call began and ended
on the server's clock: the desk reads the server's TIME when it starts (and again every
:data:`RECALIBRATE_S`) and maps its own steady clock onto it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import redis

from echomq_lab import branded, errors, jobs
from echomq_lab.browser import websocket
from echomq_lab.classroom.record import ctl_key, log_key
from echomq_lab.classroom.room import DEFAULT_LEASE_MS, Seat, parse_link
from echomq_lab.connection import LabPool, client_options, connect, reaching

Outcome = Literal["accepted", "refused", "gone", "lost-reply"]
#: How often a desk maps its steady clock onto the server's again (clocks drift apart slowly).
RECALIBRATE_S = 30.0


@dataclass(frozen=True)
class Answer:
    """What one call got: ``outcome`` and ``reply`` (a wire class when refused), and the same
    in plain words for the learner."""

    verb: str
    job_id: str
    token: int
    outcome: Outcome
    reply: str
    words: str


def _plain(verb: str, exc: errors.EchoMQError) -> str:
    """A refusal in a learner's words."""
    if isinstance(exc, errors.StaleToken):
        return (f"{verb} refused: your lease ran out and the job moved on without you "
                "(your token is stale), so your work does not count")
    if isinstance(exc, errors.JobGone):
        return f"{verb} refused: the job is finished and gone"
    if isinstance(exc, errors.ServerUnavailable):
        return f"{verb}: no answer from the room's server ({exc.detail})"
    return f"{verb} refused: {exc}"


class Desk:
    """``actor``'s client on ``room``: at most one held job (:attr:`held`), each call logged."""

    def __init__(self, conn: redis.Redis, room: str, actor: str, *, logs: bool = True) -> None:
        self.conn, self.room, self.actor = conn, room, actor
        #: False for a learner's desk: the gateway writes its log.
        self.logs = logs
        self.held: jobs.Claimed | None = None
        self.held_lease_ms = 0
        #: True once the worker stopped working on purpose while holding its lease.
        self.stalled = False
        self.log = log_key(room, actor)
        self._offset_ms = 0.0
        self._calibrated = -RECALIBRATE_S

    def calibrate(self) -> None:
        """Map the steady clock onto the server's: the offset of the fastest of three TIMEs."""
        self._offset_ms = min(self._time_offset() for _ in range(3))[1]
        self._calibrated = time.monotonic()

    def _time_offset(self) -> tuple[float, float]:
        """One TIME: (its round trip in s, server ms minus the steady ms at its midpoint)."""
        sent = time.monotonic()
        with reaching(self.conn):
            seconds, micros = self.conn.time()
        back = time.monotonic()
        return back - sent, int(seconds) * 1000 + int(micros) / 1000 - (sent + back) * 500

    def server_ms(self, steady: float) -> float:
        """The server's clock (ms) at ``steady`` (a ``time.monotonic()`` reading)."""
        return steady * 1000 + self._offset_ms

    # --- the calls ---------------------------------------------------------------------

    def lease_ms(self) -> int:
        """The room's lease length, as the instructor last set it."""
        with reaching(self.conn):
            raw = self.conn.hget(ctl_key(self.room), "lease_ms")
        return int(raw) if raw else DEFAULT_LEASE_MS

    def claim(self, lease_ms: int | None = None) -> Answer:
        """Lease the oldest pending job (for the room's lease length unless given)."""
        if self.held is not None:
            raise ValueError(f"you already hold {self.held.id}: complete, retry or drop it first")
        lease = self.lease_ms() if lease_ms is None else jobs.check_lease(lease_ms)
        began = time.monotonic()
        try:
            got = jobs.claim(self.conn, self.room, lease)
        except errors.EchoMQError as exc:
            return self._failed("claim", "", 0, exc, began, lease)
        if got is None:
            return Answer("claim", "", 0, "accepted", "empty", "claim: nothing is pending")
        self.held, self.held_lease_ms, self.stalled = got, lease, False
        self._write("claim", got.id, got.token, "accepted", "claimed", began, lease_ms=lease)
        return Answer("claim", got.id, got.token, "accepted", "claimed",
                      f"claimed {got.id} with token {got.token}: your lease is {lease} ms")

    def complete(self) -> Answer:
        """Present the held token to complete the job."""
        held = self.need()
        return self._settle("complete", lambda: jobs.complete(self.conn, self.room, held.id,
                                                              held.token))

    def retry(self, delay_ms: int = 500, max_attempts: int = 5) -> Answer:
        """Give the held job back after a failure: scheduled again, or dead at the last try."""
        held = self.need()
        why = f"{self.actor} gave up on try {held.token}"
        return self._settle("retry", lambda: jobs.retry(self.conn, self.room, held.id,
                                                        held.token, delay_ms, max_attempts, why))

    def extend(self, lease_ms: int | None = None) -> Answer:
        """Push the held lease out to ``lease_ms`` (the room's length) from the server's now."""
        held = self.need()
        lease = self.lease_ms() if lease_ms is None else jobs.check_lease(lease_ms)
        began = time.monotonic()
        try:
            jobs.extend(self.conn, self.room, held.id, held.token, lease)
        except errors.EchoMQError as exc:
            return self._failed("extend", held.id, held.token, exc, began, lease)
        self._write("extend", held.id, held.token, "accepted", "extended", began, lease_ms=lease)
        return Answer("extend", held.id, held.token, "accepted", "extended",
                      f"extended {held.id}: your lease runs {lease} ms from now")

    def stall(self) -> str:
        """Stop working on the held job on purpose: the lease runs out while you hold it."""
        held = self.need()
        self.stalled = True
        return (f"you stopped working on {held.id}; your lease runs out within "
                f"{self.held_lease_ms} ms and the reaper will give the job to someone else")

    def drop(self) -> str:
        """Forget the held job without telling the server (as a crash would)."""
        held = self.need()
        self.held = None
        return f"you let go of {held.id} without a word; its lease will run out"

    def enqueue(self, n: int = 1, payload: str = '{"task": "workshop"}') -> int:
        """Enqueue ``n`` new jobs on the room's queue; how many were enqueued."""
        jobs.check_int("n", n, 1, 100_000)
        done = 0
        for _ in range(n):
            job_id = branded.mint("JOB")
            began = time.monotonic()
            reply = jobs.enqueue(self.conn, self.room, job_id, payload)
            self._write("enqueue", job_id, 0, "accepted", reply, began)
            done += reply == "enqueued"
        return done

    def reap(self) -> int:
        """Return expired leases to pending (logged when some were); how many."""
        return self._round("reap", lambda: jobs.reap_dropping(self.conn, self.room)[0])

    def promote(self) -> int:
        """Move due retries to pending (logged when some were); how many."""
        return self._round("promote", lambda: jobs.promote_dropping(self.conn, self.room)[0])

    # --- the log -----------------------------------------------------------------------

    def need(self) -> jobs.Claimed:
        """The held job; ValueError (in a line) when you hold none."""
        if self.held is None:
            raise ValueError("you hold no job: claim one first")
        return self.held

    def _settle(self, verb: str, send: Callable[[], object]) -> Answer:
        held, stalled = self.need(), self.stalled
        began = time.monotonic()
        try:
            reply = send()
        except errors.EchoMQError as exc:
            return self._failed(verb, held.id, held.token, exc, began, stalled=stalled)
        self.held = None
        self._write(verb, held.id, held.token, "accepted", str(reply), began, stalled=stalled)
        words = (f"completed {held.id} with token {held.token}: the job is done" if verb ==
                 "complete" else f"gave {held.id} back with token {held.token}: {reply}")
        return Answer(verb, held.id, held.token, "accepted", str(reply), words)

    def _round(self, verb: str, send: Callable[[], int]) -> int:
        began = time.monotonic()
        moved = send()
        if moved:
            self._write(verb, "", 0, "accepted", str(moved), began)
        return moved

    def _failed(self, verb: str, job_id: str, token: int, exc: errors.EchoMQError,
                began: float, lease_ms: int = 0, *, stalled: bool = False) -> Answer:
        """Log a call that raised ``exc`` and say it plainly; a lease found stale or gone is
        let go. A refusal of another kind (an ACL's) is raised."""
        outcome: Outcome = ("refused" if isinstance(exc, errors.Refusal)
                            else "gone" if isinstance(exc, errors.JobGone) else "lost-reply")
        if isinstance(exc, (errors.StaleToken, errors.JobGone)):
            self.held = None
        self._write(verb, job_id, token, outcome, errors.kind_of(exc), began, lease_ms=lease_ms,
                    stalled=stalled, detail=exc.detail)
        return Answer(verb, job_id, token, outcome, errors.kind_of(exc), _plain(verb, exc))

    def _write(self, verb: str, job_id: str, token: int, outcome: Outcome, reply: str,
               began: float, *, lease_ms: int = 0, stalled: bool = False,
               detail: str = "") -> None:
        """Append one line to the actor's stream; the entry's id is the server's clock then."""
        if not self.logs:
            return
        ended = time.monotonic()
        fields: dict[str, str | int] = {
            "verb": verb, "job": job_id, "token": token, "outcome": outcome, "reply": reply,
            "lease_ms": lease_ms, "stalled": int(stalled), "detail": detail[:200],
        }
        try:
            if ended - self._calibrated > RECALIBRATE_S:
                self.calibrate()
            fields["began_ms"] = f"{self.server_ms(began):.3f}"
            fields["ended_ms"] = f"{self.server_ms(ended):.3f}"
            with reaching(self.conn):
                self.conn.xadd(self.log, fields)  # type: ignore[arg-type]
        except errors.ServerUnavailable:
            pass  # the call's own answer already said the server is away


def client(seat: Seat, opener: websocket.Opener | None = None) -> redis.Redis:
    """A client for ``seat``, not yet pinged: to the room's gateway over TCP, or, in the
    browser (a tab opens no TCP socket) or when ``opener`` is given, over its WebSocket side,
    logged in there with the seat's own name and password."""
    if not websocket.IN_BROWSER and opener is None:
        return connect(seat.url, ping=False)
    if not seat.gateway:
        raise ValueError("this page runs in your browser, which reaches a room only through "
                         "its gateway, and this link names none: ask your instructor for the "
                         "link that ends in ?gateway=ws://…")
    return websocket.client(seat.gateway, seat.name, seat.password, pool_class=LabPool,
                            opener=opener, **client_options())


def join(link: str, opener: websocket.Opener | None = None) -> Desk:
    """A desk for the learner a join link names, on the room it names (pinged once), through
    the room's gateway (see :func:`client`), which writes the desk's log."""
    seat: Seat = parse_link(link)
    conn = client(seat, opener)
    try:
        with reaching(conn):
            conn.ping()
    except errors.EchoMQError:
        conn.close()
        raise
    desk = Desk(conn, seat.room, seat.name, logs=False)
    desk.calibrate()
    return desk
