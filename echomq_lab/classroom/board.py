"""What the instructor drives: the room's reaper (a thread that honours the room's ``reaper``
switch), the lease length, jobs enqueued, storms of stalls, and one reading of the whole room
(:class:`Reading`) for the board to draw."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import redis

from echomq_lab import errors, jobs, keyspace
from echomq_lab.classroom.desk import Desk
from echomq_lab.classroom.ledger import Follow, acl_refusals, order, tally_of
from echomq_lab.classroom.record import ctl_key
from echomq_lab.classroom.room import INSTRUCTOR
from echomq_lab.drift import Report, check
from echomq_lab.sim.audit import STALE, Call, accepted
from echomq_lab.sim.leases import Lease, leases

REAPER = "reaper"
#: The longest a storm may run, and the most stalling workers it may start.
STORM_MAX_S = 120.0
STORM_MAX_WORKERS = 20


def reaper_on(conn: redis.Redis, room: str) -> bool:
    """True unless the instructor paused the room's reaper."""
    return conn.hget(ctl_key(room), "reaper") != b"off"


class Reaper:
    """A thread that, every ``every_s`` while the room's reaper is on, returns expired leases
    to pending and promotes due retries, logging each round that moved something."""

    def __init__(self, make: Callable[[], redis.Redis], room: str, every_s: float = 0.05) -> None:
        self.make, self.room, self.every_s = make, room, every_s
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"{room}-reaper", daemon=True)
        self.rounds = 0

    def start(self) -> Reaper:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        desk: Desk | None = None
        while not self.stopping.wait(self.every_s):
            try:
                desk = desk or Desk(self.make(), self.room, REAPER)
                if reaper_on(desk.conn, self.room):
                    desk.reap()
                    desk.promote()
                    self.rounds += 1
            except (errors.EchoMQError, redis.RedisError):
                desk = None  # the server is away: a new client next round
                self.stopping.wait(1.0)


@dataclass(frozen=True)
class Reading:
    """The room at one moment: the ledger's leases, tokens minted, stale refusals by name,
    counts per learner, the drift check's report, ACL refusals by user, the settings, the
    queue's sizes, and the log lines that were not calls."""

    leases: list[Lease]
    tokens_minted: int
    stale_by_learner: dict[str, int]
    counts: dict[str, dict[str, int]]
    drift: Report
    acl: dict[str, Counter[str]]
    lease_ms: int
    reaper_on: bool
    pending: int
    active: int
    #: Log lines per actor that are not calls.
    unreadable: dict[str, int]
    #: Settles accepted from a learner who did not hold the lease (who, verb, job, holder):
    #: the fence stops stale workers, not one who read another's token from its row.
    crossed: list[tuple[str, str, str, str]]


class Board:
    """The instructor's side of ``room`` on ``conn`` (the instructor's client)."""

    def __init__(self, conn: redis.Redis, room: str) -> None:
        self.conn, self.room = conn, room
        self.desk = Desk(conn, room, INSTRUCTOR)
        self.follow = Follow(conn, room)
        self._storms: list[threading.Thread] = []

    def enqueue(self, n: int) -> str:
        done = self.desk.enqueue(n)
        return f"enqueued {done} job(s) on the room's queue"

    def set_lease(self, lease_ms: int) -> str:
        """Set the lease length every learner's next claim takes."""
        self.conn.hset(ctl_key(self.room), "lease_ms", jobs.check_lease(lease_ms))
        return f"leases are now {lease_ms} ms"

    def set_reaper(self, on: bool) -> str:
        """Run or pause the room's reaper (a paused reaper leaves expired leases alone)."""
        self.conn.hset(ctl_key(self.room), "reaper", "on" if on else "off")
        return "the reaper runs" if on else "the reaper is paused: expired leases stay put"

    def storm(self, workers: int = 5, seconds: float = 20.0, seed: int = 0) -> str:
        """Start ``workers`` stalling workers (``storm-1``...) for ``seconds``: each claims,
        stalls past its lease, then tries to complete (and is refused once the job moved on)."""
        jobs.check_int("workers", workers, 1, STORM_MAX_WORKERS)
        if not 0 < seconds <= STORM_MAX_S:
            raise ValueError(f"a storm lasts more than 0 and at most {STORM_MAX_S:g} s")
        until = time.monotonic() + seconds
        for n in range(1, workers + 1):
            desk = Desk(self.conn, self.room, f"storm-{n}")
            rng = random.Random(f"{seed}:{n}")
            thread = threading.Thread(target=_stall_until, args=(desk, until, rng), daemon=True)
            thread.start()
            self._storms.append(thread)
        return f"{workers} stalling worker(s) join for {seconds:g} s"

    def outstanding(self) -> int:
        """Jobs not yet finished: pending, leased or scheduled, counted in one transaction
        (three separate reads could miss a job the reaper moves between them)."""
        pipe = self.conn.pipeline(transaction=True)
        for key in keyspace.keys(self.room).sets[:3]:
            pipe.zcard(key)
        return sum(int(n) for n in pipe.execute())

    def storming(self) -> bool:
        return any(t.is_alive() for t in self._storms)

    def read(self) -> Reading:
        """One reading of the room (the logs, the queue's sizes, a drift check)."""
        ledger = self.follow.calls()
        learners = sorted({c.actor for c in ledger if c.actor.startswith("learner-")},
                          key=order)
        stale = Counter(c.actor for c in ledger if c.outcome == "refused" and c.reply == STALE)
        acl = acl_refusals(self.conn, self.room)
        lease = self.conn.hget(ctl_key(self.room), "lease_ms")
        k = keyspace.keys(self.room)
        return Reading(
            leases=leases(ledger), tokens_minted=_minted(ledger), stale_by_learner=dict(stale),
            counts=tally_of(ledger, learners), drift=check(self.conn, self.room), acl=acl,
            lease_ms=int(lease or 0), reaper_on=reaper_on(self.conn, self.room),
            pending=int(self.conn.zcard(k.pending)), active=int(self.conn.zcard(k.active)),
            unreadable=dict(self.follow.unreadable), crossed=list(self.follow.crossed),
        )


def _minted(ledger: list[Call]) -> int:
    """Tokens minted: one per accepted claim."""
    return sum(1 for c in ledger if accepted(c, "claim"))


def _stall_until(desk: Desk, until: float, rng: random.Random) -> None:
    """Claim, stall past the lease, complete (refused if the job moved on), until ``until``."""
    while time.monotonic() < until:
        try:
            answer = desk.claim()
            if desk.held is None:
                time.sleep(0.2 if answer.reply == "empty" else 1.0)
                continue
            desk.stall()
            time.sleep(desk.held_lease_ms / 1000 + rng.uniform(0.2, 0.8))
            desk.complete()
        except (errors.EchoMQError, redis.RedisError, ValueError):
            time.sleep(1.0)
