"""Pipelined EVALSHA dispatch: many runs of one script, ``batch`` of them per round trip.

:func:`enqueue_many` fills a queue this way (the benchmarks' deep queues and pipelined
figure); :func:`run_many` is the dispatch, the batched twin of
:meth:`echomq_lab.scripts.Script.__call__`, sharing its SHA1, its
``SCRIPT LOAD`` check and its mapping of refusals: every call is one EVALSHA of the unchanged
script, sent down a non-transactional pipeline, so each run does exactly what a single call
does. After a SCRIPT FLUSH the first flush answers NOSCRIPT for every call in it; the script is
then loaded and only those calls are sent again (a call that met NOSCRIPT did not run).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import redis
from redis.exceptions import NoScriptError, ResponseError

from echomq_lab import errors, keyspace
from echomq_lab.connection import reaching
from echomq_lab.jobs import Payload, check_payload
from echomq_lab.scripts import Arg, Script, load

#: How many scripts one flush carries at most.
MAX_BATCH = 10_000

#: One run of a script: its keys and its arguments.
Call = tuple[Sequence[str], Sequence[Arg]]


def check_batch(batch: object) -> int:
    """``batch`` if it is an int in 1..:data:`MAX_BATCH`; TypeError/ValueError otherwise."""
    if not isinstance(batch, int) or isinstance(batch, bool):
        raise TypeError(f"batch must be an int, not {type(batch).__name__}")
    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be between 1 and {MAX_BATCH}, got {batch}")
    return batch


def run_many(
    conn: redis.Redis, script: Script, calls: Sequence[Call], batch: int = 100
) -> list[Any]:
    """Run ``script`` once per ``(keys, args)`` in ``calls``, ``batch`` per round trip, in order.

    Returns the replies in order. A refusal raises its typed error once its flush is back
    (the calls before it, and the others of that flush, have run); a lost connection raises
    :class:`echomq_lab.errors.ServerUnavailable`.
    """
    check_batch(batch)
    out: list[Any] = []
    with reaching(conn):
        for start in range(0, len(calls), batch):
            chunk = calls[start : start + batch]
            replies = _flush(conn, script, chunk)
            missing = [k for k, r in enumerate(replies) if isinstance(r, NoScriptError)]
            if missing:
                script.load_into(conn)
                again = _flush(conn, script, [chunk[k] for k in missing])
                for k, reply in zip(missing, again, strict=True):
                    replies[k] = reply
            for reply in replies:
                if isinstance(reply, ResponseError):
                    raise script.refusal(reply)
            out.extend(replies)
    return out


def _flush(conn: redis.Redis, script: Script, calls: Sequence[Call]) -> list[Any]:
    """Send one EVALSHA per call in one pipeline; replies in order, errors as values."""
    pipe = conn.pipeline(transaction=False)
    for keys, args in calls:
        pipe.evalsha(script.sha, len(keys), *keys, *args)
    replies: list[Any] = pipe.execute(raise_on_error=False)
    return replies


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
    sets = [keyspace.queue_key(queue, name) for name in keyspace.SET_NAMES]
    calls: list[Call] = []
    for job_id, payload in items:
        row = keyspace.job_key(queue, job_id)  # checks the id is a well-formed branded id
        if not job_id.startswith("JOB"):
            raise errors.KindRefused(f"{job_id} is not a JOB id")
        calls.append(([row, *sets], [job_id, check_payload(payload)]))
    replies = run_many(conn, load("enqueue"), calls, batch)
    return ["enqueued" if reply == 1 else "duplicate" for reply in replies]
