"""Whole-queue housekeeping from the host: emptying one queue and nothing else, and preparing
the queues of a notebook."""

from __future__ import annotations

import redis

from echomq_lab import errors, jobs, keyspace
from echomq_lab.connection import describe, eviction_note, eviction_policy, node_client, reaching


def reset(conn: redis.Redis, queue: str) -> int:
    """Delete every key under ``emq:{queue}:`` (its four sets and rows) and return how many;
    other queues and the ``{emq}:`` reserve stay. SCAN finds them in bounded steps, on the
    node that owns the queue's slot."""
    pattern = keyspace.base(queue) + "*"
    with reaching(conn):
        found = list(node_client(conn, pattern).scan_iter(match=pattern, count=500))
        if found:
            conn.delete(*found)
    return len(found)


def prepare(conn: redis.Redis, *queues: str) -> str:
    """Empty each of ``queues`` and say, in one line, which server the lab talks to. A server
    out of reach is not an error: the line says so, so a first cell never ends in a traceback."""
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
    """Claim on ``queue`` for a demonstration that drives ``job_id``, a job it enqueued itself;
    :class:`errors.SomeoneElse` says what the claim handed out when it was not that job."""
    claimed = jobs.claim(conn, queue, lease_ms)
    if claimed is None or claimed.id != job_id:
        got = "nothing" if claimed is None else claimed.id
        raise errors.SomeoneElse(f"the claim in queue {queue!r} handed out {got}, not {job_id}")
    return claimed
