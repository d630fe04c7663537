"""Whole-queue housekeeping from the host: emptying one queue and nothing else, and preparing
the queues of a notebook."""

from __future__ import annotations

import redis

from echomq_lab import errors, jobs, keyspace
from echomq_lab.connection import describe, eviction_note, eviction_policy, node_client, reaching


def reset(conn: redis.Redis, queue: str) -> int:
    """Delete every key of ``queue`` (its four sets and its rows); return how many went.

    Only keys under ``emq:{queue}:`` are touched: other queues and the ``{emq}:`` reserve stay.
    The keys are found with SCAN from the host, a bounded step at a time (on a cluster, on the
    node that owns the queue's slot: every key of the queue lives there).
    """
    pattern = keyspace.base(queue) + "*"
    with reaching(conn):
        found = list(node_client(conn, pattern).scan_iter(match=pattern, count=500))
        if found:
            conn.delete(*found)
    return len(found)


def prepare(conn: redis.Redis, *queues: str) -> str:
    """Empty each of ``queues`` and say, in one line, which server the lab talks to.

    A server that cannot be reached is not an error here: the line says so (and that the
    panels work once it answers), so a notebook's first cell never ends in a traceback.
    """
    try:
        for queue in queues:
            reset(conn, queue)
        evicts = eviction_note(eviction_policy(conn))
    except errors.ServerUnavailable as exc:
        return f"the lab's server: {exc}; start it, then press any panel's button"
    return f"the lab's server: {describe(conn)}; {evicts}"


def forget(conn: redis.Redis, queue: str, job_id: str) -> None:
    """Delete one job of ``queue`` from the host: its row and its member in each of the four
    sets. Housekeeping for a story that starts again; the queue's other jobs are untouched."""
    base = keyspace.base(queue)
    with reaching(conn):
        pipe = conn.pipeline(transaction=True)
        for name in keyspace.SET_NAMES:
            pipe.zrem(base + name, job_id)
        pipe.delete(keyspace.job_key(queue, job_id))
        pipe.execute()


def claim_expected(conn: redis.Redis, queue: str, job_id: str, lease_ms: int) -> jobs.Claimed:
    """Claim on ``queue`` and check the lease handed out is ``job_id``'s.

    A demonstration drives one job it enqueued itself; when the claim hands out nothing, or
    another job (someone else shares the queue), :class:`errors.SomeoneElse` says which.
    """
    claimed = jobs.claim(conn, queue, lease_ms)
    if claimed is None or claimed.id != job_id:
        got = "nothing" if claimed is None else claimed.id
        raise errors.SomeoneElse(f"the claim in queue {queue!r} handed out {got}, not {job_id}")
    return claimed
