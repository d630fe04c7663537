"""Two scripts with a guard taken out, shipped only to show what the guard prevents.

:func:`complete_unfenced` runs ``unfenced_complete.lua``: ``complete.lua`` without its token
and lease checks. A late worker's call is accepted and the job is retired under the worker
that holds the live lease. :func:`enqueue_unguarded` runs ``unguarded_enqueue.lua``: the
enqueue that writes a fresh row for an id whose row was lost while the queue still held it.
Nothing in :mod:`echomq_lab.jobs` reaches either; the two-worker story and the simulation call
them only when asked to run without the guard.
"""

from __future__ import annotations

from typing import Literal

import redis

from echomq_lab import errors, keyspace
from echomq_lab.branded import check as check_id
from echomq_lab.jobs import Payload, check_payload
from echomq_lab.scripts import load

#: Shown wherever these scripts' work appears, so it is never mistaken for the protocol's.
LABEL = "unfenced complete (a demonstration, not the protocol)"
UNGUARDED_LABEL = "unguarded enqueue (a demonstration, not the protocol)"


def complete_unfenced(
    conn: redis.Redis, queue: str, job_id: str, token: int
) -> Literal["completed"]:
    """Retire the job whatever ``token`` is: the row and the active member are deleted.

    Raises :class:`errors.JobGone` when the row does not exist. The token is sent, as a
    worker would send it, and ignored by the script.
    """
    keys = [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, check_id(job_id))]
    if load("unfenced_complete")(conn, keys, [job_id, str(token)]) == 0:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return "completed"


def enqueue_unguarded(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload
) -> Literal["enqueued", "duplicate"]:
    """Enqueue as if the queue's sets did not matter: an id with no row gets a fresh one
    (attempts 0) even while its old lease still stands in active."""
    keys = [keyspace.job_key(queue, check_id(job_id)), keyspace.queue_key(queue, "pending")]
    reply = load("unguarded_enqueue")(conn, keys, [job_id, check_payload(payload)])
    return "enqueued" if reply == 1 else "duplicate"
