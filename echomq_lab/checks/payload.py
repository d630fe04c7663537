"""The checks of page 03: the payload byte for byte, and whether any script reads it."""

from __future__ import annotations

import redis

from echomq_lab import jobs, scripts
from echomq_lab.checks.base import LONG_MS, Check, Observed, claim_it, fresh_job, new_row
from echomq_lab.queues import reset

#: A payload no text decoder likes: NUL bytes, invalid UTF-8, every byte value once.
BINARY = b"\x00head\xff\xfe" + bytes(range(256)) + b"tail\x00"
_ROUND = (
    "the same bytes, byte for byte",
    "the bytes, with the invalid UTF-8 replaced",
    "a copy cut at the first NUL byte",
)


def _observe_round_trip(conn: redis.Redis, queue: str) -> Observed:
    fresh_job(conn, queue, BINARY)
    claimed = jobs.claim(conn, queue, LONG_MS)
    got = claimed.payload if claimed else b""
    if got == BINARY:
        answer: str | None = _ROUND[0]
        did = f"claim returned {len(got)} bytes, identical to the {len(BINARY)} enqueued"
    else:
        cut = BINARY[: BINARY.index(b"\x00")]
        answer = _ROUND[2] if got == cut else None
        did = f"claim returned {len(got)} bytes of the {len(BINARY)} enqueued, not the same"
    return Observed(answer, did)


def payload_round_trip() -> Check:
    """Page 03: does claim return the payload byte for byte?"""
    return Check(
        "payload_round_trip", 3,
        f"A payload of {len(BINARY)} bytes with NUL bytes and invalid UTF-8 is enqueued, then "
        "claimed. "
        "What does claim hand the worker?",
        _ROUND, _observe_round_trip,
        "Redis strings are byte strings, and no script decodes the payload: what goes in comes "
        "out.",
    )


_READS = (
    "yes: claim looks inside it",
    "yes: enqueue checks it before writing",
    "no: scripts store it and hand it back; no decision depends on it",
)
#: Payloads that differ in every way a script could notice.
PROBES = (b"", b'{"report": "march"}', b"EMQSTALE not json {", BINARY, b"x" * 10_000)


def _walk_payload(conn: redis.Redis, queue: str, payload: bytes) -> list[str]:
    """Take one job with ``payload`` through enqueue, claim, retry, promote, claim, complete;
    the replies and states, ids left out."""
    job_id, row = new_row(conn, queue, payload)
    seen = [row.state or "?" if row else "no row"]
    first = claim_it(conn, queue, job_id, LONG_MS)
    seen += [str(first.token), jobs.retry(conn, queue, job_id, first.token, 0, 3, "e")]
    seen.append(str(jobs.promote(conn, queue)))
    second = claim_it(conn, queue, job_id, LONG_MS)
    seen += [str(second.token), jobs.complete(conn, queue, job_id, second.token)]
    return seen


def payload_lines() -> list[str]:
    """The lines of the shipped scripts that name the payload field, as ``script: line``."""
    return [f"{name}: {line.strip()}" for name in scripts.names()
            for line in scripts.load(name).source.splitlines()
            if "'payload'" in line and not line.lstrip().startswith("--")]  # fmt: skip


def _observe_reads(conn: redis.Redis, queue: str) -> Observed:
    walks = {p: _walk_payload(conn, queue, p) for p in PROBES}
    reset(conn, queue)
    same = len({tuple(w) for w in walks.values()}) == 1
    lines = "; ".join(payload_lines())
    did = (f"{len(PROBES)} jobs with very different payloads (empty, JSON, not JSON, binary, "
           f"10 kB) went through enqueue, claim, retry, promote, claim and complete with "
           f"{'the same' if same else 'different'} replies and states; the scripts name the "
           f"field only in {lines}")
    return Observed(_READS[2] if same else None, did)


def payload_read() -> Check:
    """Page 03: does any script read the payload?"""
    return Check(
        "payload_read", 3, "Does any protocol script look at what the payload says?", _READS,
        _observe_reads,
        "The payload is cargo: enqueue's HSET stores it and claim's HGET returns it unread.",
    )
