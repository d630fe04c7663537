"""Pipelined enqueue: many runs of the enqueue script per round trip.

:func:`enqueue_many` checks every id and payload before anything is sent, so bad input raises
and changes nothing; the dispatch is :func:`echomq_lab.scripts.pipeline.run_many`, so each job
is still one run of the unchanged ``enqueue`` script and the rows are exactly what
``jobs.enqueue`` writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import redis

from echomq_lab import errors, jobs, keyspace
from echomq_lab.jobs import Payload, check_payload
from echomq_lab.scripts import load
from echomq_lab.scripts.pipeline import Call, check_batch, run_many


def enqueue_many(
    conn: redis.Redis,
    queue: str,
    items: Iterable[tuple[str, Payload]],
    batch: int = 100,
) -> list[Literal["enqueued", "duplicate"]]:
    """Enqueue ``(job_id, payload)`` pairs, ``batch`` EVALSHAs per round trip, in order.

    Returns one ``"enqueued"``/``"duplicate"`` per item. Malformed ids, payloads or queue
    names, ids outside the ``JOB`` namespace and a bad ``batch`` are refused before anything
    is sent (``ValueError``/``TypeError``/:class:`errors.KindRefused`).
    """
    check_batch(batch)
    sets = jobs.sets(queue)
    calls: list[Call] = []
    for job_id, payload in items:
        row = keyspace.job_key(queue, job_id)  # checks the id is a well-formed branded id
        if not job_id.startswith("JOB"):
            raise errors.KindRefused(f"{job_id} is not a JOB id")
        calls.append(([row, *sets], [job_id, check_payload(payload)]))
    replies = run_many(conn, load("enqueue"), calls, batch)
    return ["enqueued" if reply == 1 else "duplicate" for reply in replies]
