"""The named handles of the protocol: one function per transition, one script run per call.

Each handle checks its arguments first (a malformed id, queue name, lease or token raises
``ValueError``/``TypeError`` before anything reaches the server), builds the keys, and runs its
script with one EVALSHA. Refusals come back as the typed errors of :mod:`echomq_lab.errors`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal, NamedTuple, cast

import redis

from echomq_lab import durable, errors, keyspace
from echomq_lab.branded import check as check_id
from echomq_lab.connection import reaching
from echomq_lab.scripts import Arg, load

#: The longest lease or delay the lab accepts: one year, in ms.
MAX_MS = 365 * 24 * 3600 * 1000
#: The latest run-at the lab accepts (ms since the Unix epoch): far beyond any real clock,
#: and small enough that every score stays an exact integer on every server.
MAX_RUN_AT_MS = 2**52
#: The largest token the lab passes on (far beyond any real count of claims).
MAX_TOKEN = 2**62
#: The leases and tokens the lab accepts, as ranges: ``x in LEASES`` is one C call for an int.
LEASES = range(1, MAX_MS + 1)
TOKENS = range(1, MAX_TOKEN + 1)
#: claim's defaults: a claim that no replica need hold, and how long a durable one waits.
NO_REPLICAS, WAIT_MS = 0, 1000
#: The scripts of the three transitions a worker runs per job, read once.
ENQUEUE, CLAIM, COMPLETE = load("enqueue"), load("claim"), load("complete")


class Claimed(NamedTuple):
    """What claim hands a worker: the job's id, its payload verbatim, and the fencing token."""

    id: str
    payload: bytes
    token: int


#: Builds a Claimed from its three fields without the Python-level ``__new__`` (claim's hot path).
_claimed = tuple.__new__


class Dropped(NamedTuple):
    """Members a claim, reap or promote removed from the set it read, because no job stood behind
    them: ``orphans`` are well-formed ids whose row is gone (deleted by another client, or
    evicted), ``malformed`` are members that are not a well-formed JOB id at all. Neither got a
    row or a token."""

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
#: The most claim scripts one :func:`claim_dropping` call runs while it finds only dropped
#: members (each script run looks at up to 100 of them).
CLAIM_RUNS = 10

Payload = bytes | bytearray | memoryview | str


def _int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is a plain int in low..high; TypeError/ValueError saying what is wrong."""
    if type(value) is int and low <= value <= high:
        return value
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def check_lease(value: object) -> int:
    """``value`` if it is a lease the protocol accepts (1 ms .. one year); raise otherwise."""
    return _int("lease_ms", value, 1, MAX_MS)


def _token(value: object) -> int:
    return _int("token", value, 1, MAX_TOKEN)


def _payload(value: object) -> bytes:
    if type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"payload must be bytes or str, not {type(value).__name__}")


def check_payload(value: object) -> bytes:
    """``value`` as the bytes a row stores (a str as UTF-8); TypeError if it is no payload."""
    return _payload(value)


def _text(name: str, value: object) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    raise TypeError(f"{name} must be str or bytes, not {type(value).__name__}")


class _Keys(NamedTuple):
    """One queue's set keys and row-key prefix, built once per queue name."""

    pending: str
    active: str
    schedule: str
    dead: str
    prefix: str


@lru_cache(maxsize=1024)
def _q(queue: str) -> _Keys:
    """The keys of ``queue``; a bad name raises here, so only good names are ever cached."""
    base = keyspace.base(queue)
    return _Keys(base + "pending", base + "active", base + "schedule", base + "dead", base + "job:")


def _keys(queue: str, *kinds: str) -> list[str]:
    q = _q(queue)
    return [getattr(q, k) for k in kinds]  # kinds are this module's own set names


def _row(queue: str, job_id: str) -> str:
    return _q(queue).prefix + check_id(job_id)


def enqueue(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload
) -> Literal["enqueued", "duplicate"]:
    """Write a new row {state: pending, attempts: 0, payload} and add the id to pending.

    An id that already has a row answers ``"duplicate"`` and changes nothing. A well-formed id
    of another namespace is refused by the script: :class:`errors.KindRefused`.
    """
    q = _q(queue)
    row = q.prefix + check_id(job_id)
    if type(payload) is not bytes:
        payload = _payload(payload)
    # EVALSHA's own order: the script, how many keys (2), the keys (the row, pending), the ARGV.
    # (A NOSCRIPT, an error reply or a lost connection is handled by the script's recover.)
    try:
        reply = conn.execute_command(  # type: ignore[no-untyped-call]
            "EVALSHA", ENQUEUE.sha, 2, row, q.pending, job_id, payload
        )
    except redis.RedisError as exc:
        reply = ENQUEUE.recover(conn, exc, 2, row, q.pending, job_id, payload)
    return "enqueued" if reply == 1 else "duplicate"


def _schedule(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload, mode: str, ms: int
) -> Literal["scheduled", "duplicate"]:
    row, data = _row(queue, job_id), _payload(payload)
    args: list[Arg] = [job_id, data, mode, str(ms)]
    reply = load("schedule")(conn, [row, *_keys(queue, "schedule")], args)
    return "scheduled" if reply == 1 else "duplicate"


def enqueue_at(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload, run_at_ms: int
) -> Literal["scheduled", "duplicate"]:
    """Write a new row in state ``scheduled``, due at ``run_at_ms`` (Unix ms, server clock)."""
    return _schedule(
        conn, queue, job_id, payload, "at", _int("run_at_ms", run_at_ms, 0, MAX_RUN_AT_MS)
    )


def enqueue_in(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload, delay_ms: int
) -> Literal["scheduled", "duplicate"]:
    """Write a new row in state ``scheduled``, due ``delay_ms`` after the server's now."""
    return _schedule(
        conn, queue, job_id, payload, "in", _int("delay_ms", delay_ms, 0, MAX_MS)
    )


def _dropped(orphans: list[bytes], malformed: list[bytes]) -> Dropped:
    return Dropped(tuple(orphans), tuple(malformed))


def _claim_more(
    conn: redis.Redis,
    q: _Keys,
    lease_ms: int,
    reply: list[Any] | None,
    wanted: int = 0,
    wait_ms: int = 0,
) -> tuple[Claimed | None, Dropped]:
    """Claim's loop, on checked arguments: read ``reply`` (a script run already made, or None
    to make one), and while a run finds only dropped members run the script again, at most
    :data:`CLAIM_RUNS` runs in all, so a run of orphans at the head of pending does not hide
    the jobs behind it. With ``wanted`` replicas each run WAITs up to ``wait_ms`` for them,
    and :class:`errors.NotReplicated` is raised for a job claimed on fewer.

    Raises :class:`errors.BadRow` when the oldest job's row has no whole-number ``attempts``
    or no payload; that refusal changes nothing.
    """
    keys = [q.pending, q.active]
    args: list[Arg] = [q.prefix, lease_ms]
    dropped, script, acked = NOTHING_DROPPED, CLAIM, 0
    for _ in range(CLAIM_RUNS):
        if reply is None:
            if wanted:
                reply, acked = durable.run_and_wait(conn, script, keys, args, wanted, wait_ms)
            else:
                reply = script(conn, keys, args)
        if len(reply) == 2:  # only dropped members: look again behind them
            dropped = dropped.plus(_dropped(*reply))
            reply = None
            continue
        if len(reply) not in (3, 5):  # {}: nothing is pending
            break
        if len(reply) == 5:
            dropped = dropped.plus(_dropped(*reply[3:]))
        claimed = _claimed(Claimed, (reply[0].decode("ascii"), reply[1], reply[2]))
        if acked < wanted:
            raise _not_replicated(claimed, acked, wanted, wait_ms)
        return claimed, dropped
    return None, dropped


def _not_replicated(
    claimed: Claimed, acked: int, wanted: int, wait_ms: int
) -> errors.NotReplicated:
    return errors.NotReplicated(
        f"claim of {claimed.id} (token {claimed.token}) reached {acked} of {wanted} "
        f"replica(s) in {wait_ms} ms; it may not survive a failover, do not start on it",
        job_id=claimed.id, token=claimed.token, acked=acked, wanted=wanted,
    )


def claim_dropping(
    conn: redis.Redis, queue: str, lease_ms: int
) -> tuple[Claimed | None, Dropped]:
    """:func:`claim`, and what it dropped from pending on the way (orphans, malformed members)."""
    return _claim_more(conn, _q(queue), check_lease(lease_ms), None)


def claim(
    conn: redis.Redis,
    queue: str,
    lease_ms: int,
    *,
    replicas: int = NO_REPLICAS,
    timeout_ms: int = WAIT_MS,
) -> Claimed | None:
    """Lease the oldest pending job for ``lease_ms``; None when nothing is pending.

    The returned token is the row's new ``attempts``; present it to complete, retry and extend.
    Pending members with no job behind them are dropped on the way (see :func:`claim_dropping`).
    ``replicas=N`` makes the claim durable: the same connection then WAITs up to
    ``timeout_ms`` for N replicas to hold the claim, and :class:`errors.NotReplicated` is raised
    when fewer did (the job stays leased; do not start work on that token).
    Raises :class:`errors.BadRow` when the oldest job's row has no whole-number ``attempts``
    or no payload; that refusal changes nothing.

    The common call (the default durability; a job and nothing dropped) is answered here, in
    one script run; any other reply, or any ``replicas``/``timeout_ms`` passed, goes on to
    claim's loop, :func:`_claim_more`.
    """
    q = _q(queue)
    if type(lease_ms) is not int or lease_ms not in LEASES:
        check_lease(lease_ms)
    if replicas is NO_REPLICAS and timeout_ms is WAIT_MS:
        # 2 keys (pending, active), then the ARGV (the row-key prefix, the lease).
        try:
            reply = conn.execute_command(  # type: ignore[no-untyped-call]
                "EVALSHA", CLAIM.sha, 2, q.pending, q.active, q.prefix, lease_ms
            )
        except redis.RedisError as exc:
            reply = CLAIM.recover(conn, exc, 2, q.pending, q.active, q.prefix, lease_ms)
        if len(reply) == 3:  # {id, payload, token}: a job and nothing dropped
            return _claimed(Claimed, (reply[0].decode("ascii"), reply[1], reply[2]))
        return _claim_more(conn, q, lease_ms, reply)[0]
    wanted = _int("replicas", replicas, 0, 64)
    wait_ms = _int("timeout_ms", timeout_ms, 1, MAX_MS)
    return _claim_more(conn, q, lease_ms, None, wanted, wait_ms)[0]


def complete(conn: redis.Redis, queue: str, job_id: str, token: int) -> Literal["completed"]:
    """Retire the job: delete its row and its active member, if ``token`` still holds the lease.

    Raises :class:`errors.StaleToken` for a stale token or a lease that is gone (nothing
    changes), and :class:`errors.JobGone` when the row does not exist.
    """
    q = _q(queue)
    row = q.prefix + check_id(job_id)
    if type(token) is not int or token not in TOKENS:
        _token(token)
    # 2 keys (active, the row), then the ARGV (the id, the token).
    try:
        reply = conn.execute_command(  # type: ignore[no-untyped-call]
            "EVALSHA", COMPLETE.sha, 2, q.active, row, job_id, token
        )
    except redis.RedisError as exc:
        reply = COMPLETE.recover(conn, exc, 2, q.active, row, job_id, token)
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
    keys = [*_keys(queue, "active", "schedule", "dead"), _row(queue, job_id)]
    args: list[Arg] = [
        job_id,
        str(_token(token)),
        str(_int("delay_ms", delay_ms, 0, MAX_MS)),
        str(_int("max_attempts", max_attempts, 1, 2**62)),
        _text("error", error),
    ]
    reply = load("retry")(conn, keys, args)
    return "dead" if reply == b"dead" else "scheduled"


def _count(reply: int | list[object]) -> tuple[int, Dropped]:
    if isinstance(reply, list):
        moved, orphans, malformed = cast(tuple[int, list[bytes], list[bytes]], reply)
        return int(moved), _dropped(orphans, malformed)
    return int(reply), NOTHING_DROPPED


def _promote_run(conn: redis.Redis, queue: str, batch: int) -> tuple[int, Dropped]:
    args: list[Arg] = [keyspace.job_prefix(queue), str(_int("batch", batch, 1, 100_000))]
    return _count(load("promote")(conn, _keys(queue, "schedule", "pending"), args))


def promote_dropping(conn: redis.Redis, queue: str, batch: int = 100) -> tuple[int, Dropped]:
    """:func:`promote`, and the due members it dropped because no job stood behind them."""
    return _promote_run(conn, queue, batch)


def promote(conn: redis.Redis, queue: str, batch: int = 100) -> int:
    """Move up to ``batch`` due scheduled jobs to pending; return how many moved.

    Due members whose row is gone, or that are not well-formed ids, are dropped from schedule
    and not counted (see :func:`promote_dropping`).
    """
    return _promote_run(conn, queue, batch)[0]


def _reap_run(conn: redis.Redis, queue: str) -> tuple[int, Dropped]:
    reply = load("reap")(conn, _keys(queue, "active", "pending"), [keyspace.job_prefix(queue)])
    return _count(reply)


def reap_dropping(conn: redis.Redis, queue: str) -> tuple[int, Dropped]:
    """:func:`reap`, and the expired members it dropped because no job stood behind them."""
    return _reap_run(conn, queue)


def reap(conn: redis.Redis, queue: str) -> int:
    """Return up to 100 jobs whose lease expired to pending; return how many were returned.

    Expired members whose row is gone, or that are not well-formed ids, are dropped from active
    and not counted (see :func:`reap_dropping`): no token is ever minted for them again.
    """
    return _reap_run(conn, queue)[0]


def reprocess(conn: redis.Redis, queue: str, job_id: str) -> Literal["pending"]:
    """Send a dead job back to pending (last_error dropped, attempts kept).

    Raises :class:`errors.WrongState` when the job is not dead, :class:`errors.JobGone` when
    its row does not exist.
    """
    keys = [_row(queue, job_id), *_keys(queue, "dead", "pending")]
    if load("reprocess")(conn, keys, [job_id]) == -1:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return "pending"


def extend(conn: redis.Redis, queue: str, job_id: str, token: int, lease_ms: int) -> int:
    """Push the lease to ``lease_ms`` after the server's now; return the new deadline (ms).

    Raises :class:`errors.StaleToken` for a stale token or a lease that is gone (a reaped job
    is never put back in active), :class:`errors.JobGone` when the row does not exist.
    """
    keys = [*_keys(queue, "active"), _row(queue, job_id)]
    args: list[Arg] = [job_id, str(_token(token)), str(check_lease(lease_ms))]
    reply = int(load("extend")(conn, keys, args))
    if reply == -1:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return reply


def browse(conn: redis.Redis, queue: str, n: int) -> list[str]:
    """Up to ``n`` pending ids, newest first (the pending set walked backwards by bytes)."""
    key = keyspace.queue_key(queue, "pending")
    count = _int("n", n, 1, 1_000_000)
    with reaching(conn):
        reply = conn.zrange(key, "+", "-", desc=True, bylex=True, offset=0, num=count)
    ids = cast(list[bytes], reply)
    return [i.decode("ascii") for i in ids]


def record(conn: redis.Redis, queue: str, job_id: str) -> dict[bytes, bytes] | None:
    """The job's row as a dict of bytes, or None when it has no row."""
    with reaching(conn):
        row = cast(dict[bytes, bytes], conn.hgetall(_row(queue, job_id)))
    return dict(row) or None
