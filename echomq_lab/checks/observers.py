"""The code behind every self-check: each observer runs real transitions on a queue and reports
what the server did, as an outcome word and a sentence.

The words of the questions (question, choices, lesson) are in ``questions.toml``, each joined
to its observer by name (an entry's ``observer``, by default its key); :mod:`.questions` does
the joining and refuses to load when an observer has no question or a question no observer.
An observer is ``observer(conn, queue, **params) -> Observed``: it empties ``queue`` first,
and its outcome is a fact (a token, a reply, field names), never a choice's wording, so the
choices can be reworded or reordered without touching this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

import redis

from echomq_lab import branded, clock, jobs, keyspace, scripts
from echomq_lab.checks.base import (
    LONG_MS,
    SHORT_MS,
    Observed,
    claim_it,
    fields,
    fresh_job,
    new_row,
    row_of,
)
from echomq_lab.connection import reaching
from echomq_lab.fencing import attempt, prepare, queue_keys
from echomq_lab.queues import reset
from echomq_lab.row import FIELD_NAMES, decoded
from echomq_lab.stories import wrote

Observer = Callable[..., Observed]
_O = TypeVar("_O", bound=Observer)
#: Every observer, by its function's name.
OBSERVERS: dict[str, Observer] = {}


def observer(fn: _O) -> _O:
    """Register ``fn`` in :data:`OBSERVERS` under its name; ``fn`` itself, unchanged."""
    OBSERVERS[fn.__name__] = fn
    return fn


def _names(names: set[str]) -> str:
    """Field names as an outcome word: sorted, separated by spaces."""
    return " ".join(sorted(names))


# -- pages 00 and 01: what claim writes, what deletes a row, what a new row holds -----------


@observer
def claim_fields(conn: redis.Redis, queue: str) -> Observed:
    """Claim a new job; the outcome names the fields whose value changed."""
    job_id = fresh_job(conn, queue)
    before = row_of(conn, queue, job_id)
    claimed = jobs.claim(conn, queue, LONG_MS)
    after = row_of(conn, queue, job_id)
    old = before.raw if before else {}
    new = after.raw if after else {}
    changed = {k.decode() for k in new if old.get(k) != new.get(k)}
    token = claimed.token if claimed else None
    did = f"claim wrote {wrote(before, after)} and handed the worker token {token}"
    if "payload" not in changed:
        did += "; the payload was left as it was"
    return Observed(_names(changed), did)


#: The steps row_deleter takes, each on a job of its own: (outcome, the step in words).
_ENDINGS = (("complete", "complete"), ("retry", "retry at the attempts cap"), ("reap", "reap"))


@observer
def row_deleter(conn: redis.Redis, queue: str) -> Observed:
    """Complete one job, retry one at its cap, reap one; the outcome is the one step after
    which its row was gone, ``none`` when every row stayed (None when more than one went)."""
    gone: list[str] = []
    notes: list[str] = []
    for step, words in _ENDINGS:
        job_id = fresh_job(conn, queue)
        held = claim_it(conn, queue, job_id, SHORT_MS if step == "reap" else LONG_MS)
        if step == "complete":
            jobs.complete(conn, queue, job_id, held.token)
        elif step == "reap":
            clock.wait_out_lease(conn, queue, job_id)
            jobs.reap(conn, queue)
        else:
            jobs.retry(conn, queue, job_id, held.token, 0, 1, "it failed")
        row = row_of(conn, queue, job_id)
        if row is None:
            gone.append(step)
        shown = "is gone" if row is None else "holds " + fields(row)
        notes.append(f"after {words} the row {shown}")
    reset(conn, queue)
    outcome = gone[0] if len(gone) == 1 else ("none" if not gone else None)
    return Observed(outcome, "; ".join(notes))


@observer
def fresh_row(conn: redis.Redis, queue: str) -> Observed:
    """Enqueue a job; the outcome names its row's fields (None when the row holds the three
    fields but not at their initial values)."""
    _job_id, row = new_row(conn, queue)
    names = {decoded(k) for k in row.raw} if row else set()
    outcome: str | None = _names(names)
    newborn = row is not None and (row.state, row.attempts) == ("pending", 0)
    if names == set(FIELD_NAMES) and not newborn:
        outcome = None
    did = f"HGETALL of the new row gives {len(names)} fields: {fields(row)}"
    return Observed(outcome, did)


@observer
def id_field(conn: redis.Redis, queue: str) -> Observed:
    """Enqueue a job; ``id field`` when its row has a field named id, else ``key only``."""
    job_id, row = new_row(conn, queue)
    has_id = row is not None and b"id" in row.raw
    key = keyspace.job_key(queue, job_id)
    did = (f"the row's key is {key} and its fields are "
           f"{', '.join(decoded(k) for k in row.field_order()) if row else 'none'}")
    return Observed("id field" if has_id else "key only", did)


@observer
def mint_time(conn: redis.Redis, queue: str) -> Observed:
    """Enqueue a job; ``created_at`` when its row has such a field, else ``pending score``
    when pending scores it above 0, else ``id`` (the mint time decoded from the id)."""
    job_id, row = new_row(conn, queue)
    with reaching(conn):
        score = conn.zscore(keyspace.queue_key(queue, "pending"), job_id)
    minted = branded.parse(job_id).minted_at
    if row is not None and b"created_at" in row.raw:
        outcome = "created_at"
    elif score:
        outcome = "pending score"
    else:
        outcome = "id"
    did = (f"the row has no created_at field ({fields(row)}), pending scores the job "
           f"{score:g}, and the id {job_id} decodes to a mint time of "
           f"{minted.isoformat(timespec='milliseconds')}")
    return Observed(outcome, did)


# -- page 02: the token after reprocess, and completing the sample row -----------------------


@observer
def after_reprocess(conn: redis.Redis, queue: str) -> Observed:
    """Let a job die after two tries, reprocess it and claim it; the outcome is the token
    that claim handed out (``none`` when it handed out nothing)."""
    job_id = fresh_job(conn, queue)
    first = claim_it(conn, queue, job_id, LONG_MS)
    jobs.retry(conn, queue, job_id, first.token, 0, 2, "first try failed")
    jobs.promote(conn, queue)
    second = claim_it(conn, queue, job_id, LONG_MS)
    jobs.retry(conn, queue, job_id, second.token, 0, 2, "second try failed")
    dead = row_of(conn, queue, job_id)
    jobs.reprocess(conn, queue, job_id)
    back = row_of(conn, queue, job_id)
    third = jobs.claim(conn, queue, LONG_MS)
    token = str(third.token) if third else "none"
    did = (f"the dead row held {fields(dead)}; reprocess wrote {wrote(dead, back)}, leaving "
           f"attempts at {back.shown(b'attempts', '?') if back else '?'}; the next claim "
           f"handed out token {token}")
    return Observed(token, did)


@observer
def complete_sample(conn: redis.Redis, queue: str, *, lease: Literal["held", "reaped"],
                    token: Literal["future", "live"]) -> Observed:
    """Complete the sample row (attempts 2, its lease ``held`` or ``reaped``) with token 3
    (``future``) or 2 (``live``); the outcome is the reply's kind: ``accepted``, the refusal's
    class, or the lab's words for a condition such as ``job gone``."""
    sample = prepare(conn, queue, lease, lease_ms=SHORT_MS)
    sent = sample.token + 1 if token == "future" else sample.token
    before = queue_keys(conn, queue)
    outcome = attempt(lambda: jobs.complete(conn, queue, sample.job_id, sent))
    after = queue_keys(conn, queue)
    where = "held its lease" if lease == "held" else "had been reaped back to pending"
    did = f"the row's attempts was {sample.token} and the job {where}; complete with token " \
          f"{sent} was {outcome.words()}"
    if not outcome.accepted:
        did += "; the row is untouched" if before == after else "; yet the keys changed"
    return Observed(outcome.kind, did)


# -- page 03: the payload byte for byte, and whether any script reads it -------------------

#: A payload no text decoder likes: NUL bytes, invalid UTF-8, every byte value once.
BINARY = b"\x00head\xff\xfe" + bytes(range(256)) + b"tail\x00"
#: Payloads that differ in every way a script could notice.
PROBES = (b"", b'{"report": "march"}', b"EMQSTALE not json {", BINARY, b"x" * 10_000)
#: What the questions' words may name as ``{name}``.
FACTS: dict[str, object] = {"binary_bytes": len(BINARY)}


@observer
def payload_round_trip(conn: redis.Redis, queue: str) -> Observed:
    """Enqueue :data:`BINARY` and claim it; ``same`` when claim returns it byte for byte,
    ``cut`` when it returns it cut at the first NUL byte, else None."""
    fresh_job(conn, queue, BINARY)
    claimed = jobs.claim(conn, queue, LONG_MS)
    got = claimed.payload if claimed else b""
    if got == BINARY:
        outcome: str | None = "same"
        did = f"claim returned {len(got)} bytes, identical to the {len(BINARY)} enqueued"
    else:
        outcome = "cut" if got == BINARY[: BINARY.index(b"\x00")] else None
        did = f"claim returned {len(got)} bytes of the {len(BINARY)} enqueued, not the same"
    return Observed(outcome, did)


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


@observer
def payload_read(conn: redis.Redis, queue: str) -> Observed:
    """Walk every payload of :data:`PROBES` through the cycle; ``unread`` when all got the
    same replies and states, else None."""
    walks = {p: _walk_payload(conn, queue, p) for p in PROBES}
    reset(conn, queue)
    same = len({tuple(w) for w in walks.values()}) == 1
    lines = "; ".join(payload_lines())
    did = (f"{len(PROBES)} jobs with very different payloads (empty, JSON, not JSON, binary, "
           f"10 kB) went through enqueue, claim, retry, promote, claim and complete with "
           f"{'the same' if same else 'different'} replies and states; the scripts name the "
           f"field only in {lines}")
    return Observed("unread" if same else None, did)
