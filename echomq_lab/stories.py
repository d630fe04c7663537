"""The stories the notebooks tell, built only from real transitions.

Everything here calls the protocol's handles (:mod:`echomq_lab.jobs`); nothing writes a row or a
set by hand. Time is always the SERVER's clock (its ``TIME``), the clock the scripts use for
leases and run-at: a story that waits for a lease to expire polls the server, not the host.

- :func:`sample_row` builds the course's sample row, whose current token is 2.
- :class:`Transitions` runs one named transition on the job it follows and says what it wrote.
- the two-workers-one-job story is :class:`echomq_lab.two_workers.TwoWorkersStory`.
- :class:`Worker` is a worker that holds at most one job and its token (the free-play lab).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import redis

from echomq_lab import branded, errors, jobs, keyspace, transitions
from echomq_lab.clock import server_now_ms, wait_out_lease
from echomq_lab.connection import reaching
from echomq_lab.queues import reset
from echomq_lab.row import Row, decoded, in_order
from echomq_lab.transitions import RETIRED, START

#: Short leases keep a reader waiting about a second, not a minute.
DEFAULT_LEASE_MS = 1500
#: The lease a story's second worker takes: long enough that nothing reaps it meanwhile.
HOLD_MS = 600_000


def _record(conn: redis.Redis, queue: str, job_id: str) -> Row | None:
    """The job's row, or None when it has none."""
    return Row.from_record(jobs.record(conn, queue, job_id))


def _state(row: Row | None) -> str:
    if row is None:
        return RETIRED
    return row.state or "?"


def _shown(value: bytes) -> str:
    text = decoded(value)
    return text if len(text) <= 40 else text[:40] + "…"


def wrote(before: Mapping[bytes, bytes] | None, after: Mapping[bytes, bytes] | None) -> str:
    """What a transition wrote to a row, e.g. ``state=active, attempts=1``.

    A deleted row reads ``deleted the row``; dropped fields read ``dropped last_error``. The
    parts follow the row's display order (:func:`echomq_lab.row.in_order`).
    """
    if after is None:
        return "deleted the row" if before is not None else "wrote no row"
    old: Mapping[bytes, bytes] = before if before is not None else {}
    parts = []
    for name in in_order([*old, *after]):
        if name not in after:
            parts.append(f"dropped {decoded(name)}")
        elif old.get(name) == after[name]:
            continue
        elif name == b"payload":
            parts.append(f"payload ({len(after[name])} bytes)")
        else:
            parts.append(f"{decoded(name)}={_shown(after[name])}")
    return ", ".join(parts) if parts else "nothing"


# -- the sample row ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleRow:
    """The course's sample row: one job whose current token is 2 and whose token 1 is stale."""

    job_id: str
    token: int
    stale_token: int


def sample_row(
    conn: redis.Redis,
    queue: str,
    *,
    lease_ms: int = 300,
    hold_ms: int = HOLD_MS,
    payload: bytes | str = b'{"report": "march"}',
) -> SampleRow:
    """Build the sample row by real transitions only; the queue is emptied first.

    enqueue → claim (token 1, a lease of ``lease_ms``) → wait until that lease has expired on
    the server clock → reap (back to pending) → claim again (token 2, held for ``hold_ms``).
    """
    jobs.check_lease(lease_ms)
    jobs.check_lease(hold_ms)
    reset(conn, queue)
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, queue, job_id, payload)
    first = jobs.claim(conn, queue, lease_ms)
    if first is None or first.id != job_id:
        raise RuntimeError(f"the first claim in {queue!r} did not take {job_id}: {first}")
    wait_out_lease(conn, queue, job_id)
    if jobs.reap(conn, queue) != 1:
        raise RuntimeError(f"the reap in {queue!r} did not return {job_id}")
    second = jobs.claim(conn, queue, hold_ms)
    if second is None or second.id != job_id:
        raise RuntimeError(f"the second claim in {queue!r} did not take {job_id}: {second}")
    return SampleRow(job_id, second.token, first.token)


# -- one transition at a time ------------------------------------------------------------------


def _claimed_before(row: Row | None, token: int) -> Row | None:
    """The row as it stood before the claim that minted ``token``: claim writes only
    ``state`` (pending to active) and ``attempts`` (one more), so those two are put back."""
    if row is None:
        return None
    before = dict(row)
    before[b"state"], before[b"attempts"] = b"pending", str(token - 1).encode()
    return Row(before)


def dropped_note(dropped: jobs.Dropped, shown: int = 3) -> str:
    """What a claim, promote or reap dropped, as a tail for its message (empty when nothing),
    e.g. ``; dropped 1 orphan (no row): 'JOB…'``; members shown by the one display rule."""
    parts = []
    for kind, found in (("orphan (no row)", dropped.orphans),
                        ("member that is not a JOB id", dropped.malformed)):  # fmt: skip
        if found:
            names = ", ".join(repr(decoded(m)) for m in found[:shown])
            more = f" and {len(found) - shown} more" if len(found) > shown else ""
            parts.append(f"{len(found)} × {kind}: {names}{more}")
    return f"; dropped {'; '.join(parts)}" if parts else ""


@dataclass(frozen=True)
class Taken:
    """A transition that ran: its name, the job, the state before and after, and a message."""

    name: str
    job_id: str | None
    before: str
    after: str
    message: str


@dataclass
class Transitions:
    """Run any transition on the job it follows, keeping that job's id and its last token.

    ``enqueue`` and ``schedule`` mint a new job and follow it; ``claim`` follows whatever job it
    took (the oldest pending) and keeps its token; ``complete``, ``retry`` and ``extend``
    present that token; ``promote`` and ``reap`` act on the whole queue. Refusals propagate as
    the library raises them (``EchoMQError``, ``ValueError``, ``TypeError``) with nothing changed.
    """

    conn: redis.Redis
    queue: str
    lease_ms: int = DEFAULT_LEASE_MS
    delay_ms: int = 1000
    max_attempts: int = 3
    payload: bytes | str = b'{"report": "march"}'
    job_id: str | None = None
    token: int | None = None

    def forget_job(self) -> None:
        """Follow no job any more (after the queue was emptied)."""
        self.job_id, self.token = None, None

    def _need_job(self) -> str:
        if self.job_id is None:
            raise ValueError("no job yet: run enqueue (or schedule) first")
        return self.job_id

    def _need_token(self) -> tuple[str, int]:
        job_id = self._need_job()
        if self.token is None:
            raise ValueError(f"no token held for {job_id}: run claim first")
        return job_id, self.token

    def run(self, name: str) -> Taken:
        """Run transition ``name``; return what happened. Unknown names raise ValueError."""
        transitions.get(name)  # ValueError naming the choices for a name the registry lacks
        q, conn = self.queue, self.conn
        followed = self.job_id
        before_row = _record(conn, q, followed) if followed else None
        before = _state(before_row) if followed else START
        if name in ("enqueue", "schedule"):
            new_id = branded.mint("JOB")
            if name == "enqueue":
                jobs.enqueue(conn, q, new_id, self.payload)
            else:
                jobs.enqueue_in(conn, q, new_id, self.payload, self.delay_ms)
            self.job_id, self.token = new_id, None
            row = _record(conn, q, new_id)
            if name == "enqueue":
                msg = f"enqueue wrote {wrote(None, row)}"
            else:
                msg = (f"schedule wrote {wrote(None, row)}, due in {self.delay_ms} ms "
                       "(enqueue_in)")
            switched = f"; a new job, {new_id}: the panel follows it now" if followed else ""
            return self._done(name, new_id, START, row, msg + switched)
        if name == "claim":
            claimed, dropped = jobs.claim_dropping(conn, q, self.lease_ms)
            if claimed is None:
                return self._done(name, followed, before, before_row,
                                  "claim found nothing pending (it returned None)"
                                  + dropped_note(dropped))
            self.job_id, self.token = claimed.id, claimed.token
            row = _record(conn, q, claimed.id)
            note = ""
            if claimed.id != followed:  # claim only wrote state and attempts on that row
                before = "pending"
                before_row = _claimed_before(row, claimed.token)
                note = (f"; it took the oldest pending job, {claimed.id}, not the one followed"
                        if followed else "") + f"; the panel follows {claimed.id} now"
            msg = f"claim wrote {wrote(before_row, row)} (token {claimed.token}){note}"
            return self._done(name, claimed.id, before, row, msg + dropped_note(dropped))
        if name in ("promote", "reap"):
            count, dropped = (jobs.promote_dropping(conn, q) if name == "promote"
                              else jobs.reap_dropping(conn, q))
            row = _record(conn, q, followed) if followed else None
            what = "due job" if name == "promote" else "expired lease"
            msg = f"{name} moved {count} {what}{'' if count == 1 else 's'} to pending"
            if followed and before_row != row:
                msg += f"; it wrote {wrote(before_row, row)}"
            elif count == 0:
                msg += self._why_nothing(name)
            return self._done(name, followed, before, row, msg + dropped_note(dropped))
        if name == "reprocess":
            job_id = self._need_job()
            jobs.reprocess(conn, q, job_id)
            row = _record(conn, q, job_id)
            msg = f"reprocess wrote {wrote(before_row, row)}"
            return self._done(name, job_id, before, row, msg)
        job_id, token = self._need_token()
        if name == "complete":
            jobs.complete(conn, q, job_id, token)
            msg = f"complete with token {token} deleted the row: the job is retired"
            return self._done(name, job_id, before, None, msg)
        if name == "retry":
            outcome = jobs.retry(conn, q, job_id, token, self.delay_ms, self.max_attempts,
                                 f"try {token} failed")
            row = _record(conn, q, job_id)
            msg = f"retry with token {token} wrote {wrote(before_row, row)}"
            if outcome == "dead":
                msg += f" (attempts reached max_attempts={self.max_attempts})"
            return self._done(name, job_id, before, row, msg)
        # extend
        jobs.extend(conn, q, job_id, token, self.lease_ms)
        row = _record(conn, q, job_id)
        msg = (f"extend with token {token} re-scored the lease to server now + {self.lease_ms} ms;"
               " the row is unchanged")
        return self._done(name, job_id, before, row, msg)

    def _why_nothing(self, name: str) -> str:
        """Why a promote or reap moved nothing, with the followed job's time left if it has one."""
        kind = "schedule" if name == "promote" else "active"
        score = None
        if self.job_id is not None:
            with reaching(self.conn):
                score = self.conn.zscore(keyspace.queue_key(self.queue, kind), self.job_id)
        if score is None:
            return " (nothing was due yet)" if name == "promote" else " (no lease had expired)"
        left = int(score) - server_now_ms(self.conn)
        if name == "promote":
            return f" (nothing was due yet: {self.job_id} is due in {left} ms)"
        return f" (no lease had expired: {self.job_id} expires in {left} ms)"

    def _done(self, name: str, job_id: str | None, before: str, row: Row | None,
              message: str) -> Taken:
        after = _state(row) if job_id else before
        return Taken(name, job_id, before, after, message)


# -- a worker for free play --------------------------------------------------------------------


@dataclass
class Worker:
    """A worker that holds at most one job and the token its claim minted.

    Its methods call the handles and return a one-line account. A refusal propagates (nothing
    changes on the server); a stale or gone job is then let go, the way a real worker would.
    """

    conn: redis.Redis
    queue: str
    name: str
    held: jobs.Claimed | None = None

    def holding(self) -> str:
        """What the worker holds, e.g. ``holds JOB… with token 2`` or ``holds nothing``."""
        if self.held is None:
            return "holds nothing"
        return f"holds {self.held.id} with token {self.held.token}"

    def _need(self) -> jobs.Claimed:
        if self.held is None:
            raise ValueError(f"worker {self.name} holds no job: claim first")
        return self.held

    def claim(self, lease_ms: int) -> str:
        if self.held is not None:
            raise ValueError(
                f"worker {self.name} already holds {self.held.id}; complete, retry or drop it first"
            )
        claimed = jobs.claim(self.conn, self.queue, lease_ms)
        if claimed is None:
            return f"worker {self.name}: nothing pending"
        self.held = claimed
        return (f"worker {self.name} claimed {claimed.id}: token {claimed.token},"
                f" lease {lease_ms} ms")

    def complete(self) -> str:
        held = self._need()
        try:
            jobs.complete(self.conn, self.queue, held.id, held.token)
        except (errors.StaleToken, errors.JobGone):
            self.held = None
            raise
        self.held = None
        return f"worker {self.name} completed {held.id} with token {held.token}: the row is gone"

    def retry(self, delay_ms: int, max_attempts: int) -> str:
        held = self._need()
        try:
            outcome = jobs.retry(self.conn, self.queue, held.id, held.token, delay_ms,
                                 max_attempts, f"worker {self.name} gave up on try {held.token}")
        except (errors.StaleToken, errors.JobGone):
            self.held = None
            raise
        self.held = None
        return f"worker {self.name} retried {held.id} with token {held.token}: {outcome}"

    def extend(self, lease_ms: int) -> str:
        held = self._need()
        try:
            jobs.extend(self.conn, self.queue, held.id, held.token, lease_ms)
        except (errors.StaleToken, errors.JobGone):
            self.held = None
            raise
        return (f"worker {self.name} extended {held.id} with token {held.token}: "
                f"lease = server now + {lease_ms} ms")

    def drop(self) -> str:
        """Forget the held job without telling the server (a crash, as far as it knows)."""
        held, self.held = self.held, None
        return f"worker {self.name} dropped {held.id if held else 'nothing'}"


__all__ = [
    "DEFAULT_LEASE_MS",
    "HOLD_MS",
    "SampleRow",
    "Taken",
    "Transitions",
    "Worker",
    "sample_row",
    "wrote",
]
