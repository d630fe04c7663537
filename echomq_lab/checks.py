"""Self-checks graded by the server: a question, a few choices, and the real transitions decide.

API (for pages and widgets; no widget library is imported here)::

    from echomq_lab import checks
    check = checks.claim_fields()          # one factory per question (see PAGES)
    check.question, check.choices          # the text shown, the choices as shown
    graded = check.grade(conn, queue, check.choices[2])
    graded.right, graded.explanation       # bool; what the server did and why
    checks.for_page(2)                     # the checks of page 02, in page order
    checks.get("token_above")              # a check by its key

Grading runs the check's setup on ``queue`` (emptied first) by real transitions, runs the
transition the question is about, and reads what the server did. The right choice is derived
from that observation, never stored: if the server behaved otherwise, the grading follows it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import redis

from echomq_lab import branded, clock, jobs, keyspace, scripts
from echomq_lab.connection import reaching
from echomq_lab.fencing import attempt, prepare, queue_keys
from echomq_lab.queues import reset
from echomq_lab.row import FIELD_NAMES, Row, decoded
from echomq_lab.stories import wrote

#: The lease the checks take when they want it to run out: short, so a check takes well under
#: a second.
SHORT_MS = 60
#: The lease the checks take when it must stay held while they look.
LONG_MS = 600_000


@dataclass(frozen=True)
class Observed:
    """What the server did in one check: the choice it makes right (None: no choice fits) and
    a sentence naming what it did."""

    answer: str | None
    did: str


@dataclass(frozen=True)
class Graded:
    """A reader's choice, graded: whether it is right and an explanation naming what the
    server did."""

    choice: str
    right: bool
    explanation: str
    did: str


@dataclass(frozen=True)
class Check:
    """One question. ``observe`` runs the real transitions on a queue and says what happened;
    ``lesson`` is the fact behind the answer, in a sentence."""

    key: str
    page: int
    question: str
    choices: tuple[str, ...]
    observe: Callable[[redis.Redis, str], Observed]
    lesson: str

    @property
    def queue(self) -> str:
        """The queue this check runs on unless it is given another: ``check-<key>``."""
        return f"check-{self.key}".replace("_", "-")

    def grade(self, conn: redis.Redis, queue: str, choice: str) -> Graded:
        """Run the check on ``queue`` and grade ``choice``; ValueError for an unknown choice."""
        if choice not in self.choices:
            raise ValueError(f"{choice!r} is not one of the choices: {'; '.join(self.choices)}")
        seen = self.observe(conn, queue)
        right = seen.answer == choice
        if right:
            head = "Right."
        elif seen.answer is None:
            head = "None of the choices fits what the server did."
        else:
            head = f"Not this one: the server's answer is “{seen.answer}”."
        return Graded(choice, right, f"{head} The server: {seen.did}. {self.lesson}", seen.did)


def _fresh_job(conn: redis.Redis, queue: str, payload: bytes = b'{"report": "march"}') -> str:
    """Empty ``queue`` and enqueue one new job; its id."""
    reset(conn, queue)
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, queue, job_id, payload)
    return job_id


def _row(conn: redis.Redis, queue: str, job_id: str) -> Row | None:
    return Row.from_record(jobs.record(conn, queue, job_id))


def _fields(row: Row | None) -> str:
    if row is None:
        return "no row"
    return ", ".join(f"{decoded(k)}={row.shown(k)[:24]}" for k in row.field_order())


# -- page 00 -----------------------------------------------------------------------------------

_CLAIM_FIELDS = ("state only", "attempts only", "state and attempts", "state, attempts and payload")


def _observe_claim_fields(conn: redis.Redis, queue: str) -> Observed:
    job_id = _fresh_job(conn, queue)
    before = _row(conn, queue, job_id)
    claimed = jobs.claim(conn, queue, LONG_MS)
    after = _row(conn, queue, job_id)
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
        job_id = _fresh_job(conn, queue)
        held = jobs.claim(conn, queue, SHORT_MS if verb == "reap" else LONG_MS)
        assert held is not None and held.id == job_id
        if verb == "complete":
            jobs.complete(conn, queue, job_id, held.token)
        elif verb == "reap":
            clock.wait_out_lease(conn, queue, job_id)
            jobs.reap(conn, queue)
        else:
            jobs.retry(conn, queue, job_id, held.token, 0, 1, "it failed")
        row = _row(conn, queue, job_id)
        if row is None:
            gone.append(verb)
        shown = "is gone" if row is None else "holds " + _fields(row)
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


# -- page 01 -----------------------------------------------------------------------------------

_FRESH = (
    "three fields: state=pending, attempts=0, payload",
    "four fields: id, state=pending, attempts=0, payload",
    "two fields: state=pending and payload (attempts comes with the first claim)",
    "five fields: id, created_at, state, attempts, payload",
)


def _observe_fresh_row(conn: redis.Redis, queue: str) -> Observed:
    job_id = _fresh_job(conn, queue)
    row = _row(conn, queue, job_id)
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
    did = f"HGETALL of the new row gives {len(names)} fields: {_fields(row)}"
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
    job_id = _fresh_job(conn, queue)
    row = _row(conn, queue, job_id)
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
    job_id = _fresh_job(conn, queue)
    row = _row(conn, queue, job_id)
    with reaching(conn):
        score = conn.zscore(keyspace.queue_key(queue, "pending"), job_id)
    minted = branded.parse(job_id).minted_at
    if row is not None and b"created_at" in row.raw:
        answer: str | None = _MINT[0]
    elif score:
        answer = _MINT[2]
    else:
        answer = _MINT[1]
    did = (f"the row has no created_at field ({_fields(row)}), pending scores the job "
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


# -- page 02 -----------------------------------------------------------------------------------

_AFTER_REPROCESS = ("1", "2", "3")


def _observe_after_reprocess(conn: redis.Redis, queue: str) -> Observed:
    job_id = _fresh_job(conn, queue)
    first = jobs.claim(conn, queue, LONG_MS)
    assert first is not None
    jobs.retry(conn, queue, job_id, first.token, 0, 2, "first try failed")
    jobs.promote(conn, queue)
    second = jobs.claim(conn, queue, LONG_MS)
    assert second is not None
    jobs.retry(conn, queue, job_id, second.token, 0, 2, "second try failed")
    dead = _row(conn, queue, job_id)
    jobs.reprocess(conn, queue, job_id)
    back = _row(conn, queue, job_id)
    third = jobs.claim(conn, queue, LONG_MS)
    token = str(third.token) if third else "none"
    did = (f"the dead row held {_fields(dead)}; reprocess wrote {wrote(dead, back)}, leaving "
           f"attempts at {back.shown(b'attempts', '?') if back else '?'}; the next claim "
           f"handed out token {token}")
    return Observed(token if token in _AFTER_REPROCESS else None, did)


def after_reprocess() -> Check:
    """Page 02: attempts after reprocess and another claim (from a dead job, attempts 2)."""
    return Check(
        "after_reprocess", 2,
        "A job died after two tries (attempts is 2). It is reprocessed, then claimed again. "
        "What token does that claim hand out?",
        _AFTER_REPROCESS, _observe_after_reprocess,
        "Reprocess keeps attempts; only claim changes it, by one, so every token is new.",
    )


def _fence_observed(conn: redis.Redis, queue: str, lease: str, which: str) -> tuple[str, str]:
    """Complete the sample row (attempts 2) with token 3 or 2; (outcome kind, what it did)."""
    sample = prepare(conn, queue, lease, lease_ms=SHORT_MS)
    token = sample.token + 1 if which == "future" else sample.token
    before = queue_keys(conn, queue)
    outcome = attempt(lambda: jobs.complete(conn, queue, sample.job_id, token))
    after = queue_keys(conn, queue)
    where = "held its lease" if lease == "held" else "had been reaped back to pending"
    did = f"the row's attempts was {sample.token} and the job {where}; complete with token " \
          f"{token} was {outcome.words()}"
    if not outcome.accepted:
        did += "; the row is untouched" if before == after else "; yet the keys changed"
    return outcome.kind, did


_ABOVE = (
    "accepted: a higher token is newer, so it wins",
    "refused EMQSTALE: only the row's own attempts holds the lease",
    "refused EMQSTATE: the job is not active",
)


def _observe_token_above(conn: redis.Redis, queue: str) -> Observed:
    kind, did = _fence_observed(conn, queue, "held", "future")
    answer = {"accepted": _ABOVE[0], "EMQSTALE": _ABOVE[1], "EMQSTATE": _ABOVE[2]}.get(kind)
    return Observed(answer, did)


def token_above() -> Check:
    """Page 02: token 3 against a row whose attempts is 2."""
    return Check(
        "token_above", 2,
        "The row's attempts is 2 and its lease is held. A worker completes it with token 3. "
        "What does the server answer?",
        _ABOVE, _observe_token_above,
        "The check is equality, not order: any token but the row's attempts is refused, and "
        "a refused call writes nothing.",
    )


_REAPED = (
    "accepted: the token matches attempts",
    "refused EMQSTALE: the token matches, but it holds no lease",
    "refused, because the job is gone",
)


def _observe_token_reaped(conn: redis.Redis, queue: str) -> Observed:
    kind, did = _fence_observed(conn, queue, "reaped", "live")
    answer = {"accepted": _REAPED[0], "EMQSTALE": _REAPED[1], "job gone": _REAPED[2]}.get(kind)
    return Observed(answer, did)


def token_reaped() -> Check:
    """Page 02: the right token after the lease was reaped."""
    return Check(
        "token_reaped", 2,
        "A worker holds token 2, the row's attempts is 2, but its lease ran out and the reaper "
        "returned the job to pending. The worker now completes with token 2. What happens?",
        _REAPED, _observe_token_reaped,
        "The lab's scripts also check that the id is still in active: a token whose lease was "
        "reaped holds nothing, even before the next claim mints a newer one.",
    )


# -- page 03 -----------------------------------------------------------------------------------

#: A payload no text decoder likes: NUL bytes, invalid UTF-8, every byte value once.
BINARY = b"\x00head\xff\xfe" + bytes(range(256)) + b"tail\x00"
_ROUND = (
    "the same bytes, byte for byte",
    "the bytes, with the invalid UTF-8 replaced",
    "a copy cut at the first NUL byte",
)


def _observe_round_trip(conn: redis.Redis, queue: str) -> Observed:
    _fresh_job(conn, queue, BINARY)
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
    job_id = _fresh_job(conn, queue, payload)
    row = _row(conn, queue, job_id)
    seen = [row.state or "?" if row else "no row"]
    first = jobs.claim(conn, queue, LONG_MS)
    assert first is not None
    seen += [str(first.token), jobs.retry(conn, queue, job_id, first.token, 0, 3, "e")]
    seen.append(str(jobs.promote(conn, queue)))
    second = jobs.claim(conn, queue, LONG_MS)
    assert second is not None
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


#: Every check, by page, in the order the page asks them.
PAGES: dict[int, tuple[Callable[[], Check], ...]] = {
    0: (claim_fields, row_deleter),
    1: (fresh_row, id_field, mint_time),
    2: (after_reprocess, token_above, token_reaped),
    3: (payload_round_trip, payload_read),
}
FACTORIES: dict[str, Callable[[], Check]] = {f.__name__: f for fs in PAGES.values() for f in fs}


def for_page(page: int) -> list[Check]:
    """The checks of page ``page`` (0-3), in page order."""
    if page not in PAGES:
        raise ValueError(f"no checks for page {page!r}: the pages are {sorted(PAGES)}")
    return [f() for f in PAGES[page]]


def get(key: str) -> Check:
    """The check called ``key``; ValueError naming the keys when there is none."""
    if key not in FACTORIES:
        raise ValueError(f"no check called {key!r}: pick one of {', '.join(FACTORIES)}")
    return FACTORIES[key]()
