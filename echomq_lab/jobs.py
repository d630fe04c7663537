"""The course's handles: one function per transition (the registry, :mod:`echomq_lab.transitions`,
names which), each one script run per call but claim's.

Every handle has the same shape: check the arguments (a malformed id, queue name, lease or token
raises ``ValueError``/``TypeError`` before anything is sent), build the keys, run the script
with EVALSHA, map the reply. One run, except where a claim's run finds only members with no job
behind them: it runs again past them, :data:`CLAIM_RUNS` times at most. Refusals come back as
the typed errors of :mod:`echomq_lab.errors`; docs/protocol.md says what each script takes,
does and answers.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, cast

import redis

from echomq_lab import errors, keyspace
from echomq_lab.connection import reaching
from echomq_lab.scripts import Arg, arguments, load

#: The bounds the handles check numbers against: the scripts' own
#: (:mod:`echomq_lab.scripts.arguments`).
MAX_MS, MAX_RUN_AT_MS, MAX_TOKEN = arguments.MAX_MS, arguments.MAX_RUN_AT_MS, arguments.MAX_TOKEN
#: The most claim scripts one claim runs while it finds only dropped members (each run looks
#: at up to 100 of them).
CLAIM_RUNS = 10

Payload = bytes | bytearray | memoryview | str


class Claimed(NamedTuple):
    """What claim hands a worker: the job's id, its payload verbatim, and the fencing token."""

    id: str
    payload: bytes
    token: int


class Dropped(NamedTuple):
    """Members a claim, reap or promote removed from the set it read because no job stood
    behind them: ``orphans`` are well-formed ids whose row is gone (deleted by another client,
    or evicted), ``malformed`` are members that are not a JOB id at all. Neither got a row or
    a token."""

    orphans: tuple[bytes, ...] = ()
    malformed: tuple[bytes, ...] = ()

    @property
    def total(self) -> int:
        """How many members were dropped, of both kinds."""
        return len(self.orphans) + len(self.malformed)

    def plus(self, other: Dropped) -> Dropped:
        """Both reports together, in order."""
        return Dropped(self.orphans + other.orphans, self.malformed + other.malformed)


NOTHING_DROPPED = Dropped()


# --- argument checks: each raises TypeError/ValueError saying what is wrong ---------------


def check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is a plain int (not a bool) in ``low..high``."""
    return arguments.Number(name, low, high).check(value)


def check_lease(value: object) -> int:
    """``value`` if it is a lease the protocol accepts (1 ms .. one year)."""
    return arguments.LEASE.check(value, "lease_ms")


def check_token(value: object) -> int:
    """``value`` if it is a token claim could have minted (a positive int)."""
    return arguments.TOKEN.check(value)


def check_payload(value: object) -> bytes:
    """``value`` as the bytes a row stores (a str as UTF-8)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"payload must be bytes or str, not {type(value).__name__}")


def check_text(name: str, value: object) -> bytes:
    """``value`` as bytes, if it is a str or bytes."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{name} must be str or bytes, not {type(value).__name__}")


# --- the handles ---------------------------------------------------------------------------


def enqueue(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload
) -> Literal["enqueued", "duplicate"]:
    """Write a new row {state: pending, attempts: 0, payload} and add the id to pending.

    An id that already has a row answers ``"duplicate"`` and changes nothing. A well-formed id
    of another namespace is refused by the script (:class:`errors.KindRefused`); an id whose
    row is gone while it still stands in one of the queue's sets is refused
    (:class:`errors.BadRow`): a new row there would let a token be minted twice.
    """
    k = keyspace.keys(queue)
    data = check_payload(payload)
    # KEYS: the row, then pending, active, schedule, dead. ARGV: the id, the payload.
    reply = load("enqueue")(conn, [k.row(job_id), *k.sets], [job_id, data])
    return "enqueued" if reply == 1 else "duplicate"


def enqueue_at(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload, run_at_ms: int
) -> Literal["scheduled", "duplicate"]:
    """Write a new row in state ``scheduled``, due at ``run_at_ms`` (Unix ms, server clock)."""
    at = check_int("run_at_ms", run_at_ms, 0, MAX_RUN_AT_MS)
    return _schedule(conn, queue, job_id, payload, "at", at)


def enqueue_in(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload, delay_ms: int
) -> Literal["scheduled", "duplicate"]:
    """Write a new row in state ``scheduled``, due ``delay_ms`` after the server's now."""
    delay = check_int("delay_ms", delay_ms, 0, MAX_MS)
    return _schedule(conn, queue, job_id, payload, "in", delay)


def _schedule(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload, mode: str, ms: int
) -> Literal["scheduled", "duplicate"]:
    k = keyspace.keys(queue)
    data = check_payload(payload)
    # KEYS: the row, then the four sets. ARGV: the id, the payload, 'at' or 'in', the ms.
    reply = load("schedule")(conn, [k.row(job_id), *k.sets], [job_id, data, mode, ms])
    return "scheduled" if reply == 1 else "duplicate"


def claim(conn: redis.Redis, queue: str, lease_ms: int) -> Claimed | None:
    """Lease the oldest pending job for ``lease_ms``; None when nothing is pending.

    The token is the row's new ``attempts``: present it to complete, retry and extend.
    Pending members with no job behind them are dropped on the way (:func:`claim_dropping`
    is the same claim, and says which). Raises :class:`errors.BadRow` when the oldest job's
    row is broken (no whole-number ``attempts`` or no payload); that refusal changes nothing.
    """
    k = keyspace.keys(queue)
    # KEYS: pending, active. ARGV: the row-key prefix, the lease.
    reply = load("claim")(conn, [k.pending, k.active], [k.rows, check_lease(lease_ms)])
    if len(reply) == 2:  # {orphans, malformed}: the script met only members with no job
        return claim_dropping(conn, queue, lease_ms)[0]  # which looks past them
    return claimed_from(reply)


def claimed_from(reply: list[Any]) -> Claimed | None:
    """Claim's reply as a :class:`Claimed`: {} is None; {id, payload, token, ...} a job."""
    if not reply:
        return None
    return Claimed(reply[0].decode("ascii"), reply[1], reply[2])


def claim_dropping(
    conn: redis.Redis, queue: str, lease_ms: int
) -> tuple[Claimed | None, Dropped]:
    """:func:`claim`, and the members it dropped from pending on the way."""
    k = keyspace.keys(queue)
    keys = [k.pending, k.active]
    args: list[Arg] = [k.rows, check_lease(lease_ms)]
    dropped = NOTHING_DROPPED
    for _ in range(CLAIM_RUNS):
        reply = load("claim")(conn, keys, args)
        if len(reply) in (2, 5):  # members were dropped on the way: {..., orphans, malformed}
            dropped = dropped.plus(Dropped(tuple(reply[-2]), tuple(reply[-1])))
        if len(reply) != 2:  # 2: only dropped members, look again behind them
            return claimed_from(reply), dropped
    return None, dropped


def complete(conn: redis.Redis, queue: str, job_id: str, token: int) -> Literal["completed"]:
    """Retire the job: delete its row and its active member, if ``token`` still holds the lease.

    Raises :class:`errors.StaleToken` for a stale token or a lease that is gone (nothing
    changes), and :class:`errors.JobGone` when the row does not exist.
    """
    k = keyspace.keys(queue)
    reply = load("complete")(conn, [k.active, k.row(job_id)], [job_id, check_token(token)])
    if reply == 0:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return "completed"


def retry(
    conn: redis.Redis,
    queue: str,
    job_id: str,
    token: int,
    delay_ms: int,
    max_attempts: int,
    error: str | bytes,
) -> Literal["scheduled", "dead"]:
    """Give up the lease after a failure: ``"scheduled"`` again after ``delay_ms``, or
    ``"dead"`` once ``attempts`` has reached ``max_attempts``. ``error`` lands in last_error.

    Raises :class:`errors.StaleToken` if the row is gone, the token is stale or the lease gone.
    """
    k = keyspace.keys(queue)
    keys = [k.active, k.schedule, k.dead, k.row(job_id)]
    args: list[Arg] = [
        job_id,
        check_token(token),
        check_int("delay_ms", delay_ms, 0, MAX_MS),
        check_int("max_attempts", max_attempts, 1, MAX_TOKEN),
        check_text("error", error),
    ]
    reply = load("retry")(conn, keys, args)
    return "dead" if reply == b"dead" else "scheduled"


def promote(conn: redis.Redis, queue: str, batch: int = 100) -> int:
    """Move up to ``batch`` due scheduled jobs to pending; return how many moved.

    Due members whose row is gone, or that are not JOB ids, are dropped from schedule and not
    counted (:func:`promote_dropping` says which).
    """
    return promote_dropping(conn, queue, batch)[0]


def promote_dropping(conn: redis.Redis, queue: str, batch: int = 100) -> tuple[int, Dropped]:
    """:func:`promote`, and the due members it dropped because no job stood behind them."""
    k = keyspace.keys(queue)
    args: list[Arg] = [k.rows, check_int("batch", batch, 1, 100_000)]
    return _moved(load("promote")(conn, [k.schedule, k.pending], args))


def reap(conn: redis.Redis, queue: str) -> int:
    """Return up to 100 jobs whose lease expired to pending; return how many were returned.

    Expired members whose row is gone, or that are not JOB ids, are dropped from active and
    not counted (:func:`reap_dropping` says which): no token is ever minted for them again.
    """
    return reap_dropping(conn, queue)[0]


def reap_dropping(conn: redis.Redis, queue: str) -> tuple[int, Dropped]:
    """:func:`reap`, and the expired members it dropped because no job stood behind them."""
    k = keyspace.keys(queue)
    return _moved(load("reap")(conn, [k.active, k.pending], [k.rows]))


def _moved(reply: int | list[object]) -> tuple[int, Dropped]:
    """A count, or {count, orphans, malformed} when members were dropped."""
    if isinstance(reply, list):
        moved, orphans, malformed = cast(tuple[int, list[bytes], list[bytes]], reply)
        return int(moved), Dropped(tuple(orphans), tuple(malformed))
    return int(reply), NOTHING_DROPPED


def reprocess(conn: redis.Redis, queue: str, job_id: str) -> Literal["pending"]:
    """Send a dead job back to pending (last_error dropped, attempts kept).

    Raises :class:`errors.WrongState` when the job is not dead, :class:`errors.JobGone` when
    its row does not exist.
    """
    k = keyspace.keys(queue)
    if load("reprocess")(conn, [k.row(job_id), k.dead, k.pending], [job_id]) == -1:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return "pending"


def extend(conn: redis.Redis, queue: str, job_id: str, token: int, lease_ms: int) -> int:
    """Push the lease to ``lease_ms`` after the server's now; return the new deadline (ms).

    Raises :class:`errors.StaleToken` for a stale token or a lease that is gone (a reaped job
    is never put back in active), :class:`errors.JobGone` when the row does not exist.
    """
    k = keyspace.keys(queue)
    args: list[Arg] = [job_id, check_token(token), check_lease(lease_ms)]
    reply = int(load("extend")(conn, [k.active, k.row(job_id)], args))
    if reply == -1:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return reply


def browse(conn: redis.Redis, queue: str, n: int) -> list[str]:
    """Up to ``n`` pending ids, newest first (the pending set walked backwards by bytes)."""
    key = keyspace.queue_key(queue, "pending")
    count = check_int("n", n, 1, 1_000_000)
    with reaching(conn):
        reply = conn.zrange(key, "+", "-", desc=True, bylex=True, offset=0, num=count)
    ids = cast(list[bytes], reply)
    return [i.decode("ascii") for i in ids]


def record(conn: redis.Redis, queue: str, job_id: str) -> dict[bytes, bytes] | None:
    """The job's row as a dict of bytes, or None when it has no row."""
    with reaching(conn):
        row = cast(dict[bytes, bytes], conn.hgetall(keyspace.job_key(queue, job_id)))
    return dict(row) or None
