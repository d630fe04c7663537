"""The practice room: a room of one on the embedded server, for a page opened without a join
link. Your desk is ``learner-1``; a classmate (``learner-2``) and the reaper act only when you
stall, so the page tells the same story each time it runs."""

from __future__ import annotations

from dataclasses import dataclass

from echomq_lab import keyspace
from echomq_lab.classroom.board import REAPER
from echomq_lab.classroom.desk import Desk
from echomq_lab.classroom.record import ctl_key
from echomq_lab.clock import server_now_ms, wait_out_lease
from echomq_lab.connection import connect

ROOM = "practice"
LEASE_MS = 1000
JOBS = 5


@dataclass
class Practice:
    """Your desk, your classmate's and the reaper's, on one embedded server of their own."""

    you: Desk
    classmate: Desk
    reaper: Desk

    def stalled(self) -> str:
        """After you stall: wait out your lease on the server's clock, let the reaper return
        the job, and let your classmate claim it. What happened, in a line."""
        held = self.you.held
        if held is None or not self.you.stalled:
            return ""
        wait_out_lease(self.you.conn, ROOM, held.id)
        returned = self.reaper.reap()
        if self.classmate.held is not None:  # the classmate finishes what it held before
            self.classmate.complete()
        answer = self.classmate.claim(LEASE_MS * 10)
        mate = self.classmate.actor
        took = ("" if self.classmate.held is None else
                f"; {mate} claimed it with token {answer.token}" if answer.job_id == held.id
                else f"; {mate} claimed {answer.job_id}, another job")
        return f"Then your lease ran out; the reaper returned {returned} job(s) to pending{took}"

    def refill(self) -> int:
        """Enqueue more jobs when nothing is pending (so the practice never runs dry)."""
        return 0 if self.you.conn.zcard(keyspace.keys(ROOM).pending) else self.reaper.enqueue(JOBS)


def practice() -> Practice:
    """A fresh practice room with a few jobs pending."""
    conn = connect(fresh=True)
    conn.hset(ctl_key(ROOM), mapping={"lease_ms": LEASE_MS, "reaper": "on",
                                    "t0_ms": server_now_ms(conn)})
    room = Practice(Desk(conn, ROOM, "learner-1"), Desk(conn, ROOM, "learner-2"),
                    Desk(conn, ROOM, REAPER))
    room.reaper.enqueue(JOBS)
    return room
