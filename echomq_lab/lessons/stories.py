"""Stories told by real transitions on the server's clock: :func:`sample_row` (token 2),
:class:`Transitions` (one transition at a time) and :class:`Worker` (free play)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import redis

from echomq_lab import branded, errors, jobs, keyspace, transitions
from echomq_lab.clock import server_now_ms, wait_out_lease
from echomq_lab.connection import reaching
from echomq_lab.queues import claim_expected, reset
from echomq_lab.row import Row, decoded, in_order
from echomq_lab.transitions import RETIRED, START

#: Short leases keep a reader waiting about a second, not a minute.
DEFAULT_LEASE_MS = 1500
#: The lease a story's second worker takes: long enough that nothing reaps it meanwhile.
HOLD_MS = 600_000
PAYLOAD = b'{"report": "march"}'


def _state(row: Row | None) -> str:
    return RETIRED if row is None else row.state or "?"


def row_of(conn: redis.Redis, queue: str, job_id: str | None) -> Row | None:
    """The job's row (None without a job or a row)."""
    return None if job_id is None else Row.from_record(jobs.record(conn, queue, job_id))


def new_job(conn: redis.Redis, queue: str, payload: bytes = PAYLOAD, *,
            fresh: bool = False) -> str:
    """Enqueue one new job (on an emptied queue when ``fresh``); its id."""
    if fresh:
        reset(conn, queue)
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, queue, job_id, payload)
    return job_id


def wrote(before: Mapping[bytes, bytes] | None, after: Mapping[bytes, bytes] | None) -> str:
    """What a transition wrote to a row, e.g. ``state=active, attempts=1``, in the row's display
    order; a deleted row reads ``deleted the row``, a dropped field ``dropped last_error``."""
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
            text = decoded(after[name])
            parts.append(f"{decoded(name)}={text if len(text) <= 40 else text[:40] + '…'}")
    return ", ".join(parts) if parts else "nothing"


@dataclass(frozen=True)
class SampleRow:
    """The course's sample row: one job whose current token is 2 and whose token 1 is stale."""

    job_id: str
    token: int
    stale_token: int


def sample_row(conn: redis.Redis, queue: str, *, lease_ms: int = 300,
               hold_ms: int = HOLD_MS) -> SampleRow:
    """Empty the queue, then enqueue, claim (token 1, for ``lease_ms``), wait that lease out on
    the server clock, reap, and claim again (token 2, held for ``hold_ms``)."""
    jobs.check_lease(lease_ms)
    jobs.check_lease(hold_ms)
    job_id = new_job(conn, queue, fresh=True)
    first = claim_expected(conn, queue, job_id, lease_ms)
    wait_out_lease(conn, queue, job_id)
    if jobs.reap(conn, queue) != 1:
        raise errors.SomeoneElse(f"the reap in {queue!r} did not return {job_id}")
    second = claim_expected(conn, queue, job_id, hold_ms)
    return SampleRow(job_id, second.token, first.token)


def dropped_note(dropped: jobs.Dropped, shown: int = 3) -> str:
    """What a claim, promote or reap dropped, as a tail for its message (empty: nothing)."""
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
    name: str
    job_id: str | None
    before: str
    after: str
    message: str


@dataclass
class Transitions:
    """Run any transition on the job it follows (the one enqueue or schedule minted, or claim
    took, with its token); refusals propagate as the library raises them, nothing changed."""

    conn: redis.Redis
    queue: str
    lease_ms: int = DEFAULT_LEASE_MS
    delay_ms: int = 1000
    max_attempts: int = 3
    job_id: str | None = None
    token: int | None = None

    def forget_job(self) -> None:
        """Follow no job any more (after the queue was emptied)."""
        self.job_id, self.token = None, None

    def run(self, name: str) -> Taken:
        """Run transition ``name``; return what happened. Unknown names raise ValueError."""
        transitions.get(name)  # ValueError naming the choices for a name the registry lacks
        followed = self.job_id
        old = row_of(self.conn, self.queue, followed)
        before = START if followed is None or name in ("enqueue", "schedule") else _state(old)
        message, row = self._apply(name, followed, old)
        if name == "claim" and self.job_id != followed:
            before = "pending"
        after = _state(row) if self.job_id else before
        return Taken(name, self.job_id, before, after, message)

    def _apply(self, name: str, followed: str | None, old: Row | None) -> tuple[str, Row | None]:
        """Call the handle behind ``name``; return what it wrote, in words, and the row after."""
        conn, q = self.conn, self.queue
        if name in ("enqueue", "schedule"):
            if name == "enqueue":
                new_id, due = new_job(conn, q), ""
            else:
                new_id, due = branded.mint("JOB"), f", due in {self.delay_ms} ms (enqueue_in)"
                jobs.enqueue_in(conn, q, new_id, PAYLOAD, self.delay_ms)
            self.job_id, self.token = new_id, None
            row = row_of(conn, q, new_id)
            switched = f"; a new job, {new_id}: the panel follows it now" if followed else ""
            return f"{name} wrote {wrote(None, row)}{due}{switched}", row
        if name == "claim":
            claimed, dropped = jobs.claim_dropping(conn, q, self.lease_ms)
            if claimed is None:
                return "claim found nothing pending (it returned None)" + dropped_note(dropped), old
            self.job_id, self.token = claimed.id, claimed.token
            row, note = row_of(conn, q, claimed.id), ""
            if claimed.id != followed:  # claim wrote only state and attempts on that row
                was = {b"state": b"pending", b"attempts": str(claimed.token - 1).encode()}
                old = None if row is None else Row({**row, **was})
                if followed:
                    note = f"; it took the oldest pending job, {claimed.id}, not the one followed"
                note += f"; the panel follows {claimed.id} now"
            said = f"claim wrote {wrote(old, row)} (token {claimed.token})"
            return said + note + dropped_note(dropped), row
        if name in ("promote", "reap"):
            sweep = jobs.promote_dropping if name == "promote" else jobs.reap_dropping
            count, dropped = sweep(conn, q)
            row = row_of(conn, q, followed)
            what = "due job" if name == "promote" else "expired lease"
            message = f"{name} moved {count} {what}{'' if count == 1 else 's'} to pending"
            if followed and old != row:
                message += f"; it wrote {wrote(old, row)}"
            elif count == 0:
                message += self._why_nothing(name)
            return message + dropped_note(dropped), row
        job_id, token = self.job_id, self.token
        if job_id is None:
            raise ValueError("no job yet: run enqueue (or schedule) first")
        if name == "reprocess":
            jobs.reprocess(conn, q, job_id)
            row = row_of(conn, q, job_id)
            return f"reprocess wrote {wrote(old, row)}", row
        if token is None:
            raise ValueError(f"no token held for {job_id}: run claim first")
        if name == "complete":
            jobs.complete(conn, q, job_id, token)
            return f"complete with token {token} deleted the row: the job is retired", None
        if name == "retry":
            outcome = jobs.retry(conn, q, job_id, token, self.delay_ms, self.max_attempts,
                                 f"try {token} failed")
            row = row_of(conn, q, job_id)
            message = f"retry with token {token} wrote {wrote(old, row)}"
            if outcome == "dead":
                message += f" (attempts reached max_attempts={self.max_attempts})"
            return message, row
        jobs.extend(conn, q, job_id, token, self.lease_ms)
        return (f"extend with token {token} re-scored the lease to server now + {self.lease_ms} "
                "ms; the row is unchanged"), old

    def _why_nothing(self, name: str) -> str:
        """Why a promote or reap moved nothing, with the followed job's time left if it has one."""
        kind, why, when = (("schedule", "nothing was due yet", "is due in") if name == "promote"
                           else ("active", "no lease had expired", "expires in"))
        score = None
        if self.job_id is not None:
            with reaching(self.conn):
                score = self.conn.zscore(keyspace.queue_key(self.queue, kind), self.job_id)
        if score is None:
            return f" ({why})"
        return f" ({why}: {self.job_id} {when} {int(score) - server_now_ms(self.conn)} ms)"


@dataclass
class Worker:
    """A worker that holds at most one job and its token. Each method calls a handle and says
    what happened in one line; a refusal propagates, and a stale or gone job is let go."""

    conn: redis.Redis
    queue: str
    name: str
    held: jobs.Claimed | None = None

    def holding(self) -> str:
        """``holds JOB… with token 2`` or ``holds nothing``."""
        held = self.held
        return "holds nothing" if held is None else f"holds {held.id} with token {held.token}"

    def _need(self) -> jobs.Claimed:
        if self.held is None:
            raise ValueError(f"worker {self.name} holds no job: claim first")
        return self.held

    def _present(self, handle: Callable[..., object], *args: object,
                 keep: bool = False) -> tuple[jobs.Claimed, object]:
        """Call ``handle`` with the held job's id, token and ``args``; let the job go unless
        ``keep``, and always when the server finds it stale or gone."""
        held = self._need()
        try:
            reply = handle(self.conn, self.queue, held.id, held.token, *args)
        except (errors.StaleToken, errors.JobGone):
            self.held = None
            raise
        if not keep:
            self.held = None
        return held, reply

    def claim(self, lease_ms: int) -> str:
        if self.held is not None:
            raise ValueError(f"worker {self.name} already holds {self.held.id}; complete, retry or "
                             "drop it first")
        claimed = jobs.claim(self.conn, self.queue, lease_ms)
        if claimed is None:
            return f"worker {self.name}: nothing pending"
        self.held = claimed
        return (f"worker {self.name} claimed {claimed.id}: token {claimed.token},"
                f" lease {lease_ms} ms")

    def complete(self) -> str:
        held, _ = self._present(jobs.complete)
        return f"worker {self.name} completed {held.id} with token {held.token}: the row is gone"

    def retry(self, delay_ms: int, max_attempts: int) -> str:
        why = f"worker {self.name} gave up on try {self._need().token}"
        held, outcome = self._present(jobs.retry, delay_ms, max_attempts, why)
        return f"worker {self.name} retried {held.id} with token {held.token}: {outcome}"

    def extend(self, lease_ms: int) -> str:
        held, _ = self._present(jobs.extend, lease_ms, keep=True)
        return (f"worker {self.name} extended {held.id} with token {held.token}: "
                f"lease = server now + {lease_ms} ms")

    def drop(self) -> str:
        """Forget the held job without telling the server (a crash, as far as it knows)."""
        held, self.held = self.held, None
        return f"worker {self.name} dropped {held.id if held else 'nothing'}"
