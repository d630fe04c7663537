"""Scripts with a guard taken out, shipped only to show what the guard prevents (nothing in
:mod:`echomq_lab.jobs` reaches them): a complete that ignores the token, the course's complete
that checks the token and nothing else, the course's claim that hands out whatever id it pops,
and an enqueue that writes a fresh row for an id whose
row was lost while the queue still held it."""

from __future__ import annotations

from typing import Literal

import redis

from echomq_lab import errors, keyspace
from echomq_lab.jobs import Claimed, Payload, check_lease, check_payload, check_token
from echomq_lab.scripts import load

#: How the unfenced complete is named wherever its work shows, so it is never taken for the
#: protocol's own.
LABEL = "unfenced complete (a demonstration, not the protocol)"


def complete_unfenced(
    conn: redis.Redis, queue: str, job_id: str, token: int
) -> Literal["completed"]:
    """Retire the job whatever ``token`` is (``unfenced_complete.lua`` sends it and ignores it):
    the row and the active member are deleted. :class:`errors.JobGone` when there is no row."""
    keys = [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, job_id)]
    if load("unfenced_complete")(conn, keys, [job_id, check_token(token)]) == 0:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return "completed"


#: How the course's complete is named wherever its work shows: the token against attempts only.
COURSE_LABEL = "course's complete (the token against attempts only)"


def complete_token_only(
    conn: redis.Redis, queue: str, job_id: str, token: int
) -> Literal["completed"]:
    """Complete as the course states it (``token_only_complete.lua``): refused
    :class:`errors.StaleToken` when ``token`` is not the row's attempts, else the row and the
    active member are deleted, whether or not the id still held a lease.
    :class:`errors.JobGone` when there is no row."""
    keys = [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, job_id)]
    if load("token_only_complete")(conn, keys, [job_id, check_token(token)]) == 0:
        raise errors.JobGone(f"job {job_id} has no row in queue {queue!r}")
    return "completed"


def claim_course(conn: redis.Redis, queue: str, lease_ms: int) -> Claimed | None:
    """Claim as the course states it (``course_claim.lua``): pop the oldest pending id and mint
    its token, whether or not a row stands behind it; None when nothing is pending. An id whose
    row is gone is handed out with token 1 (a row made anew) and an empty payload."""
    keys = [keyspace.queue_key(queue, "pending"), keyspace.queue_key(queue, "active")]
    reply = load("course_claim")(conn, keys, [keyspace.queue_key(queue, "job:"),
                                             check_lease(lease_ms)])
    if not reply:
        return None
    job_id, payload, token = reply
    return Claimed(job_id.decode() if isinstance(job_id, bytes) else str(job_id),
                   payload if isinstance(payload, bytes) else b"", int(token))


def enqueue_unguarded(
    conn: redis.Redis, queue: str, job_id: str, payload: Payload
) -> Literal["enqueued", "duplicate"]:
    """Enqueue as if the queue's sets did not matter (``unguarded_enqueue.lua``): an id with no
    row gets a fresh one (attempts 0) even while its old lease still stands in active."""
    keys = [keyspace.job_key(queue, job_id), keyspace.queue_key(queue, "pending")]
    reply = load("unguarded_enqueue")(conn, keys, [job_id, check_payload(payload)])
    return "enqueued" if reply == 1 else "duplicate"
