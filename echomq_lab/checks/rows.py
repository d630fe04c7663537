"""The checks of pages 00 and 01: what claim writes, what deletes a row, what a new row holds,
where the id and the mint time live."""

from __future__ import annotations

import redis

from echomq_lab import branded, clock, jobs, keyspace
from echomq_lab.checks.base import (
    LONG_MS,
    SHORT_MS,
    Check,
    Observed,
    claim_it,
    fields,
    fresh_job,
    new_row,
    row_of,
)
from echomq_lab.connection import reaching
from echomq_lab.queues import reset
from echomq_lab.row import FIELD_NAMES, decoded
from echomq_lab.stories import wrote

_CLAIM_FIELDS = ("state only", "attempts only", "state and attempts", "state, attempts and payload")


def _observe_claim_fields(conn: redis.Redis, queue: str) -> Observed:
    job_id = fresh_job(conn, queue)
    before = row_of(conn, queue, job_id)
    claimed = jobs.claim(conn, queue, LONG_MS)
    after = row_of(conn, queue, job_id)
    old = before.raw if before else {}
    new = after.raw if after else {}
    changed = {k.decode() for k in new if old.get(k) != new.get(k)}
    named = {frozenset({"state"}): 0, frozenset({"attempts"}): 1,
             frozenset({"state", "attempts"}): 2, frozenset(FIELD_NAMES): 3}  # fmt: skip
    index = named.get(frozenset(changed))
    token = claimed.token if claimed else None
    did = f"claim wrote {wrote(before, after)} and handed the worker token {token}"
    if "payload" not in changed:
        did += "; the payload was left as it was"
    return Observed(None if index is None else _CLAIM_FIELDS[index], did)


def claim_fields() -> Check:
    """Page 00: which fields does claim change?"""
    return Check(
        "claim_fields", 0, "A pending job is claimed. Which of its fields does claim change?",
        _CLAIM_FIELDS, _observe_claim_fields,
        "Claim moves the job to active and adds one to attempts; the new value is the token.",
    )


_DELETERS = ("complete", "retry at the attempts cap", "reap", "none of them: rows are kept")


def _observe_deleters(conn: redis.Redis, queue: str) -> Observed:
    gone: list[str] = []
    notes: list[str] = []
    for verb in _DELETERS[:3]:
        job_id = fresh_job(conn, queue)
        held = claim_it(conn, queue, job_id, SHORT_MS if verb == "reap" else LONG_MS)
        if verb == "complete":
            jobs.complete(conn, queue, job_id, held.token)
        elif verb == "reap":
            clock.wait_out_lease(conn, queue, job_id)
            jobs.reap(conn, queue)
        else:
            jobs.retry(conn, queue, job_id, held.token, 0, 1, "it failed")
        row = row_of(conn, queue, job_id)
        if row is None:
            gone.append(verb)
        shown = "is gone" if row is None else "holds " + fields(row)
        notes.append(f"after {verb} the row {shown}")
    reset(conn, queue)
    answer = gone[0] if len(gone) == 1 else (_DELETERS[3] if not gone else None)
    return Observed(answer, "; ".join(notes))


def row_deleter() -> Check:
    """Page 00: which transition deletes the row?"""
    return Check(
        "row_deleter", 0, "Which of these transitions deletes the job's row?", _DELETERS,
        _observe_deleters,
        "Only complete retires a job: its row and its lease go. A dead job keeps its row, so "
        "it can be looked at and reprocessed; reap only moves the id back to pending.",
    )



_FRESH = (
    "three fields: state=pending, attempts=0, payload",
    "four fields: id, state=pending, attempts=0, payload",
    "two fields: state=pending and payload (attempts comes with the first claim)",
    "five fields: id, created_at, state, attempts, payload",
)


def _observe_fresh_row(conn: redis.Redis, queue: str) -> Observed:
    job_id, row = new_row(conn, queue)
    names = set(row.raw) if row else set()
    shapes = {
        frozenset({b"state", b"attempts", b"payload"}): 0,
        frozenset({b"id", b"state", b"attempts", b"payload"}): 1,
        frozenset({b"state", b"payload"}): 2,
        frozenset({b"id", b"created_at", b"state", b"attempts", b"payload"}): 3,
    }
    index = shapes.get(frozenset(names))
    if index == 0 and row is not None and (row.state, row.attempts) != ("pending", 0):
        index = None
    answer = None if index is None else _FRESH[index]
    did = f"HGETALL of the new row gives {len(names)} fields: {fields(row)}"
    return Observed(answer, did)


def fresh_row() -> Check:
    """Page 01: what does a freshly enqueued row hold?"""
    return Check(
        "fresh_row", 1, "A job has just been enqueued. What does its row hold?", _FRESH,
        _observe_fresh_row,
        "The one HSET in enqueue writes exactly three fields; nothing else is added at birth.",
    )


_ID_FIELD = (
    "yes: an id field repeats the job's id",
    "no: the id is the last part of the row's key",
)


def _observe_id_field(conn: redis.Redis, queue: str) -> Observed:
    job_id, row = new_row(conn, queue)
    has_id = row is not None and b"id" in row.raw
    key = keyspace.job_key(queue, job_id)
    did = (f"the row's key is {key} and its fields are "
           f"{', '.join(decoded(k) for k in row.field_order()) if row else 'none'}")
    return Observed(_ID_FIELD[0] if has_id else _ID_FIELD[1], did)


def id_field() -> Check:
    """Page 01: is there an id field?"""
    return Check(
        "id_field", 1, "Does the row store the job's id in a field of its own?", _ID_FIELD,
        _observe_id_field,
        "The key already names the job, so a field holding the id again would only be a "
        "second copy that could disagree with the first.",
    )


_MINT = (
    "in a created_at field of the row",
    "inside the id: its first bits are the mint time",
    "in the job's score in the pending set",
)


def _observe_mint_time(conn: redis.Redis, queue: str) -> Observed:
    job_id, row = new_row(conn, queue)
    with reaching(conn):
        score = conn.zscore(keyspace.queue_key(queue, "pending"), job_id)
    minted = branded.parse(job_id).minted_at
    if row is not None and b"created_at" in row.raw:
        answer: str | None = _MINT[0]
    elif score:
        answer = _MINT[2]
    else:
        answer = _MINT[1]
    did = (f"the row has no created_at field ({fields(row)}), pending scores the job "
           f"{score:g}, and the id {job_id} decodes to a mint time of "
           f"{minted.isoformat(timespec='milliseconds')}")
    return Observed(answer, did)


def mint_time() -> Check:
    """Page 01: where is the mint time?"""
    return Check(
        "mint_time", 1, "Where does the lab keep the moment a job was created?", _MINT,
        _observe_mint_time,
        "A branded id begins with the milliseconds since 2024 at which it was minted, so the "
        "id carries its own birth time and sorts in mint order; pending scores every job 0.",
    )
