"""Pipelined enqueue: many enqueue scripts sent per round trip.

:func:`enqueue_many` is written so it can move into ``echomq_lab/jobs.py`` as it is (it uses
only the library's public pieces plus the handle's own argument checks). Every id and payload
is checked before anything is sent, so bad input raises and changes nothing; each job is still
one run of the unchanged ``enqueue`` script, so the rows are exactly what ``jobs.enqueue``
writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import redis
from redis.exceptions import NoScriptError, ResponseError

from echomq_lab import branded, errors, keyspace
from echomq_lab.connection import reaching
from echomq_lab.jobs import Payload, _payload
from echomq_lab.scripts import Script, load

#: How many scripts one flush carries at most.
MAX_BATCH = 10_000


def _flush(
    conn: redis.Redis, script: Script, keys: Sequence[tuple[str, str]], args: Sequence[list[bytes]]
) -> list[object]:
    """Send one EVALSHA per job in one pipeline; replies in order, errors as values."""
    pipe = conn.pipeline(transaction=False)
    for (row, pending), (job_id, data) in zip(keys, args, strict=True):
        pipe.evalsha(script.sha, 2, row, pending, job_id, data)
    replies: list[object] = pipe.execute(raise_on_error=False)
    return replies


def enqueue_many(
    conn: redis.Redis,
    queue: str,
    items: Iterable[tuple[str, Payload]],
    batch: int = 100,
) -> list[Literal["enqueued", "duplicate"]]:
    """Enqueue ``(job_id, payload)`` pairs, ``batch`` EVALSHAs per round trip, in order.

    Returns one ``"enqueued"``/``"duplicate"`` per item. Malformed ids, payloads or queue
    names, and ids outside the ``JOB`` namespace, are refused before anything is sent
    (``ValueError``/``TypeError``/:class:`errors.KindRefused`). The first flush after a
    SCRIPT FLUSH answers NOSCRIPT for every item; the script is then loaded and only those
    items are sent again (an item that met NOSCRIPT did not run).
    """
    if not isinstance(batch, int) or isinstance(batch, bool):
        raise TypeError(f"batch must be an int, not {type(batch).__name__}")
    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be between 1 and {MAX_BATCH}, got {batch}")
    pending = keyspace.queue_key(queue, "pending")
    prefix = keyspace.job_prefix(queue)
    checked: list[tuple[str, str]] = []
    args: list[list[bytes]] = []
    for job_id, payload in items:
        branded.check(job_id)
        if not job_id.startswith("JOB"):
            raise errors.KindRefused(f"{job_id} is not a JOB id")
        checked.append((prefix + job_id, pending))
        args.append([job_id.encode("ascii"), _payload(payload)])
    script = load("enqueue")
    out: list[Literal["enqueued", "duplicate"]] = []
    with reaching(conn):
        for start in range(0, len(checked), batch):
            keys, chunk = checked[start : start + batch], args[start : start + batch]
            replies = _flush(conn, script, keys, chunk)
            missing = [k for k, r in enumerate(replies) if isinstance(r, NoScriptError)]
            if missing:
                if conn.script_load(script.source) != script.sha:
                    raise RuntimeError(f"server hashed {script.name}.lua differently")
                again = _flush(
                    conn, script, [keys[k] for k in missing], [chunk[k] for k in missing]
                )
                for k, reply in zip(missing, again, strict=True):
                    replies[k] = reply
            for reply in replies:
                if isinstance(reply, ResponseError):
                    refusal = errors.from_reply(str(reply))
                    raise refusal if refusal is not None else reply
                out.append("enqueued" if reply == 1 else "duplicate")
    return out
