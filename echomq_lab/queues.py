"""Whole-queue housekeeping from the host: emptying one queue and nothing else."""

from __future__ import annotations

import redis

from echomq_lab import keyspace
from echomq_lab.connection import node_client, reaching


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
