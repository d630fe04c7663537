"""Stories told by real transitions on the server's clock: :func:`sample_row` (token 2),
:class:`Transitions` (one transition at a time) and :class:`Worker` (free play)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import redis

from echomq_lab import branded, errors, jobs, keyspace, transitions
from echomq_lab.clock import server_now_ms, wait_out_lease
from echomq_lab.connection import reaching
from echomq_lab.drift import SET_OF_STATE
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
    return (f"; dropped, as only the lab's scripts do (the course's would write a row for it): "
            f"{'; '.join(parts)}" if parts else "")


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

    def values(self, t: transitions.Transition) -> dict[str, object]:
        """What the panel gives each kind of argument of ``t``'s call (:data:`ARGUMENTS`);
        ValueError when ``t`` needs a job or a token the panel does not hold."""
        job_id, token = self.job_id, self.token
        if t.starts:
            job_id = branded.mint("JOB")
        elif job_id is None and not t.picks:
            starters = " or ".join(s.name for s in transitions.TRANSITIONS if s.starts)
            raise ValueError(f"no job yet: run {starters} first")
        if token is None and "token" in t.call.takes:
            raise ValueError(f"no token held for {job_id}: run claim first")
        return {"job": job_id, "payload": PAYLOAD, "token": token, "lease": self.lease_ms,
                "delay": self.delay_ms, "max_attempts": self.max_attempts,
                "error": f"try {token} failed"}

    def run(self, name: str) -> Taken:
        """Run transition ``name`` (its registry entry's call); return what happened. Unknown
        names raise ValueError naming the choices; a missing job or token, before anything."""
        t = transitions.get(name)
        values = self.values(t)
        followed = self.job_id
        old = None if t.starts else row_of(self.conn, self.queue, followed)
        handle = getattr(jobs, t.dropping or t.call.handle)
        reply = handle(self.conn, self.queue, *t.arguments(values))
        reply, dropped = reply if t.dropping else (reply, jobs.NOTHING_DROPPED)
        if t.starts:
            self.job_id, self.token = cast(str, values["job"]), None
        elif isinstance(reply, jobs.Claimed):
            self.job_id, self.token = reply.id, reply.token
        row = row_of(self.conn, self.queue, self.job_id)
        if isinstance(reply, jobs.Claimed) and reply.id != followed:
            # another job than the one followed: before the claim it was where the claim
            # starts, one attempt fewer (a claim writes state and attempts, nothing else)
            old = None if row is None else Row({**row, b"state": t.edges[0].source.encode(),
                                                b"attempts": str(reply.token - 1).encode()})
        said = self._said(t, values, reply, old, row, followed) + dropped_note(dropped)
        before = START if followed is None or t.starts else _state(old)
        if self.job_id != followed and not t.starts:
            before = t.edges[0].source
        after = _state(row) if self.job_id else before
        return Taken(name, self.job_id, before, after, said)

    def _said(self, t: transitions.Transition, values: Mapping[str, object], reply: object,
              old: Row | None, row: Row | None, followed: str | None) -> str:
        """What ``t`` did, in words: what it wrote on the followed job, or what it moved."""
        head = t.name + (f" with token {values['token']}" if "token" in t.call.takes else "")
        if t.picks and not isinstance(reply, jobs.Claimed):
            if reply is None:
                return f"{head} found no {t.edges[0].source} job to hand out"
            said = f"{head}: {t.reads(reply)} to {t.edges[0].target}"
            if followed and old != row:
                return f"{said}; it wrote {wrote(old, row)}"
            return said + (self._why_nothing(t) if reply == 0 else "")
        if row is None:
            return f"{head} deleted the row: the job is retired"
        if row == old:
            return f"{head} wrote nothing to the row: {t.reads(reply)}"
        said = f"{head} wrote {wrote(old, row)}"
        if isinstance(reply, jobs.Claimed):
            said += f" (token {reply.token})"
            if reply.id != followed:
                took = f"; it took the oldest pending job, {reply.id}, not the one followed"
                said += (took if followed else "") + f"; the panel follows {reply.id} now"
        if t.starts and "delay" in t.call.takes:
            said += f", due in {values['delay']} ms ({t.call.handle})"
        if t.starts and followed:
            said += f"; a new job, {self.job_id}: the panel follows it now"
        cap = values["max_attempts"]
        if "max_attempts" in t.call.takes and isinstance(cap, int) and (row.attempts or 0) >= cap:
            said += f" (attempts reached max_attempts={values['max_attempts']})"
        return said

    def _why_nothing(self, t: transitions.Transition) -> str:
        """Why ``t`` (promote, reap: a transition that picks the jobs whose time has come) moved
        nothing, with the followed job's time left if it waits in the set ``t`` reads."""
        kind = SET_OF_STATE[t.edges[0].source]
        score = None
        if self.job_id is not None:
            with reaching(self.conn):
                score = self.conn.zscore(keyspace.queue_key(self.queue, kind), self.job_id)
        if score is None:
            return f" (nothing in {kind} was due)"
        left = int(score) - server_now_ms(self.conn)
        return f" (nothing in {kind} was due yet: {self.job_id} is due in {left} ms)"


@dataclass
class Worker:
    """A worker that holds at most one job and its token: it claims, presents its token to a
    fenced transition, or drops the job. Each says what happened in one line; a refusal
    propagates, and a stale or gone job is let go."""

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

    def present(self, name: str, *, lease_ms: int, delay_ms: int = 1000,
                max_attempts: int = 3) -> str:
        """Run fenced transition ``name`` (its registry entry's call) with the held job's id and
        token. The job is let go unless ``name`` leaves its state alone (extend), and always
        when the server finds it stale or gone."""
        t = transitions.get(name)
        if not t.fenced:
            raise ValueError(f"{name} takes no token: a worker presents its token to "
                             f"{', '.join(transitions.FENCED)}")
        held = self._need()
        values = {"job": held.id, "token": held.token, "lease": lease_ms, "delay": delay_ms,
                  "max_attempts": max_attempts, "error": f"worker {self.name} gave up on try "
                  f"{held.token}"}  # fmt: skip
        try:
            reply = getattr(jobs, t.call.handle)(self.conn, self.queue, *t.arguments(values))
        except (errors.StaleToken, errors.JobGone):
            self.held = None
            raise
        if t.writes:
            self.held = None
        return (f"worker {self.name} ran {name} on {held.id} with token {held.token}: "
                f"{t.reads(reply)}")

    def drop(self) -> str:
        """Forget the held job without telling the server (a crash, as far as it knows)."""
        held, self.held = self.held, None
        return f"worker {self.name} dropped {held.id if held else 'nothing'}"
