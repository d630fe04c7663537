"""The owned keyspace: every key of a queue is built here, never inside a script.

``emq:{Q}:pending|active|schedule|dead`` are sorted sets and ``emq:{Q}:job:<ID>`` is the row.
The braces make the queue name the hashtag, so one queue's keys share one cluster slot.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, NamedTuple

from redis.crc import key_slot

from echomq_lab.branded import check

SetName = Literal["pending", "active", "schedule", "dead"]
SET_NAMES: tuple[SetName, ...] = ("pending", "active", "schedule", "dead")

#: The braced base reserved for deployment facts; a queue key starts ``emq:{`` instead.
RESERVED_BASE = "{emq}:"

_QUEUE = re.compile(r"[A-Za-z0-9._-]{1,64}")


def check_queue(queue: object) -> str:
    """Return ``queue`` if it is 1-64 characters of ``[A-Za-z0-9._-]``; raise otherwise."""
    if not isinstance(queue, str):
        raise TypeError(f"queue name must be a str, not {type(queue).__name__}")
    if not _QUEUE.fullmatch(queue):
        raise ValueError(
            f"bad queue name {queue!r}: use 1-64 characters of letters, digits, '.', '_' or '-'"
        )
    return queue


class QueueKeys(NamedTuple):
    """Every key of one queue: the base, its four sorted sets and the prefix of its rows."""

    base: str
    pending: str
    active: str
    schedule: str
    dead: str
    #: The row-key prefix ``emq:{Q}:job:``: a job's row is this prefix and its id.
    rows: str

    @property
    def sets(self) -> tuple[str, str, str, str]:
        """The four sets in :data:`SET_NAMES` order: pending, active, schedule, dead."""
        return self.pending, self.active, self.schedule, self.dead

    def row(self, job_id: str) -> str:
        """The row key of a well-formed branded id (a malformed one raises)."""
        return self.rows + check(job_id)


def keys(queue: str) -> QueueKeys:
    """The keys of ``queue``; a name that is not 1-64 of ``[A-Za-z0-9._-]`` raises."""
    if not isinstance(queue, str):
        check_queue(queue)  # raises: only a str is looked up in the cache below
    return _keys(queue)


@lru_cache(maxsize=1024)
def _keys(queue: str) -> QueueKeys:
    """A good name's keys, built once (a bad one raises, and is not cached)."""
    base = f"emq:{{{check_queue(queue)}}}:"
    pending, active, schedule, dead = (base + name for name in SET_NAMES)
    return QueueKeys(base, pending, active, schedule, dead, rows=base + "job:")


def base(queue: str) -> str:
    """The prefix every key of ``queue`` starts with: ``emq:{Q}:``."""
    return keys(queue).base


def queue_key(queue: str, kind: str) -> str:
    """The key of one of the queue's sorted sets, or the job-key prefix when kind is ``job:``."""
    if kind not in SET_NAMES and kind != "job:":
        raise ValueError(f"unknown key type {kind!r}: expected one of {', '.join(SET_NAMES)}")
    return base(queue) + kind


def job_prefix(queue: str) -> str:
    """The prefix of every row key of ``queue``: ``emq:{Q}:job:``."""
    return keys(queue).rows


def job_key(queue: str, job_id: str) -> str:
    """The row key ``emq:{Q}:job:<ID>`` of a well-formed branded id."""
    return keys(queue).row(job_id)


def slot(key: str | bytes) -> int:
    """The Redis Cluster slot of ``key`` (CRC16-XMODEM of its hashtag, mod 16384)."""
    return int(key_slot(key.encode() if isinstance(key, str) else key))
