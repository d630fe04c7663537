"""The ledger of a run: every call an actor made, and what came of it, in the order it ended.

Each :class:`Call` has one of four outcomes:

* ``accepted`` -- the handle returned; ``reply`` is what it returned (``"completed"``, ``"dead"``,
  a count...);
* ``refused`` -- the server refused the call; ``reply`` is its wire class (``"EMQSTALE"``...);
* ``gone`` -- the script answered that the job's row does not exist; ``reply`` is the lab's own
  label for that (``"job gone"``), never a wire class;
* ``lost-reply`` -- the connection went before an answer came; the call may or may not have run;
  ``reply`` is the lab's label ``"server unreachable"``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal

from echomq_lab import errors

Outcome = Literal["accepted", "refused", "gone", "lost-reply"]

#: The outcomes of a settle that was turned away: refused by the fence, or its row found gone.
TURNED_AWAY: frozenset[str] = frozenset({"refused", "gone"})


@dataclass(frozen=True)
class Call:
    """One call and its answer, as the ledger keeps it.

    Times are seconds since the run began, on the wall clock (the clock the server's TIME reads).
    ``token`` is the token a claim minted or a complete/retry presented (0 when none).
    """

    seq: int
    actor: str
    verb: str
    job_id: str
    token: int
    outcome: Outcome
    reply: str
    detail: str = ""
    started: float = 0.0
    ended: float = 0.0
    lease_ms: int = 0
    stalled: bool = False
    after_lost_reply: bool = False


def outcome_of(exc: errors.EchoMQError) -> Outcome:
    """The ledger's outcome for a call that raised ``exc``."""
    if isinstance(exc, errors.Refusal):
        return "refused"
    if isinstance(exc, errors.JobGone):
        return "gone"
    return "lost-reply"


def accepted(call: Call, verb: str) -> bool:
    """True when ``call`` is an accepted call of ``verb``."""
    return call.verb == verb and call.outcome == "accepted"


def dead_lettered(call: Call) -> bool:
    """True when ``call`` is an accepted retry that moved its job to the dead set."""
    return accepted(call, "retry") and call.reply == "dead"


def gone_on_resend(call: Call) -> bool:
    """True when ``call`` is a complete resent after a lost reply that found the row gone."""
    return call.verb == "complete" and call.outcome == "gone" and call.after_lost_reply


def settles(call: Call) -> bool:
    """True when ``call`` shows its job finished (so the run can tell when it is done)."""
    return accepted(call, "complete") or dead_lettered(call) or gone_on_resend(call)


class Ledger:
    """An append-only, thread-safe list of :class:`Call` records, and the jobs seen to finish."""

    def __init__(self, t0: float | None = None) -> None:
        self.t0 = time.time() if t0 is None else t0
        self.calls: list[Call] = []
        self.finished: set[str] = set()
        self._lock = threading.Lock()

    def now(self) -> float:
        """Seconds since the run began."""
        return time.time() - self.t0

    def record(self, actor: str, verb: str, job_id: str, token: int, outcome: Outcome,
               reply: str, *, started: float, detail: str = "", lease_ms: int = 0,
               stalled: bool = False, after_lost_reply: bool = False) -> Call:
        """Append one call (its end time is now) and return it."""
        ended = self.now()
        with self._lock:
            call = Call(len(self.calls), actor, verb, job_id, token, outcome, reply, detail,
                        started, ended, lease_ms, stalled, after_lost_reply)
            self.calls.append(call)
            if settles(call):
                self.finished.add(job_id)
        return call

    def record_error(self, actor: str, verb: str, job_id: str, token: int,
                     exc: errors.EchoMQError, *, started: float, lease_ms: int = 0,
                     stalled: bool = False, after_lost_reply: bool = False) -> Call:
        """Append a call that raised ``exc``: its outcome, its :func:`errors.kind_of` as the
        reply, and its one-line detail."""
        return self.record(actor, verb, job_id, token, outcome_of(exc), errors.kind_of(exc),
                           started=started, detail=exc.detail, lease_ms=lease_ms,
                           stalled=stalled, after_lost_reply=after_lost_reply)
