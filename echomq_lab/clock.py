"""The server's clock, the only one leases and run-at times are kept on (never the host's): a
wait here is only a pause between two reads of the server's ``TIME``."""

from __future__ import annotations

import time

import redis

from echomq_lab import keyspace
from echomq_lab.connection import reaching

#: How long a wait for the server clock may take beyond the time it should need.
WAIT_SLACK_S = 30.0


def server_now_ms(conn: redis.Redis) -> int:
    """The server's clock in ms, computed the way the scripts compute it from ``TIME``."""
    with reaching(conn):
        seconds, micros = conn.time()
    return int(seconds) * 1000 + int(micros) // 1000


def wait_for_server(conn: redis.Redis, until_ms: int, *, poll_s: float = 0.05) -> int:
    """Block until the server's clock reads at least ``until_ms``; return the server's now.
    TimeoutError if the server's clock does not get there in time."""
    now = server_now_ms(conn)
    limit = time.monotonic() + max(0, until_ms - now) / 1000 + WAIT_SLACK_S
    while now < until_ms:
        if time.monotonic() > limit:
            raise TimeoutError(f"the server clock did not reach {until_ms} (it reads {now})")
        time.sleep(min(poll_s, max(0.001, (until_ms - now) / 1000)))
        now = server_now_ms(conn)
    return now


def lease_deadline(conn: redis.Redis, queue: str, job_id: str) -> int | None:
    """The job's lease deadline (its score in active), or None if it holds no lease."""
    with reaching(conn):
        score = conn.zscore(keyspace.queue_key(queue, "active"), job_id)
    return None if score is None else int(score)


def wait_out_lease(conn: redis.Redis, queue: str, job_id: str) -> int:
    """Wait until the job's lease has expired on the server clock; return the server's now.
    ValueError when the job holds no lease (nothing to wait for)."""
    deadline = lease_deadline(conn, queue, job_id)
    if deadline is None:
        raise ValueError(f"job {job_id} holds no lease in queue {queue!r}: nothing to wait for")
    return wait_for_server(conn, deadline)
