"""A complete with no fence, shipped only to show what the fence prevents.

:func:`complete_unfenced` runs ``unfenced_complete.lua``: ``complete.lua`` without its token
and lease checks. A late worker's call is accepted and the job is retired under the worker
that holds the live lease. Nothing in :mod:`echomq_lab.jobs` reaches it; the two-worker story
and the simulation call it only when asked to run without the fence.
"""

from __future__ import annotations

from typing import Literal

import redis

from echomq_lab import errors, keyspace
from echomq_lab.branded import check as check_id
from echomq_lab.scripts import load

#: Shown wherever this script's work appears, so it is never mistaken for the protocol's.
LABEL = "unfenced complete (a demonstration, not the protocol)"


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
