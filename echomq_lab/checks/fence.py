"""The checks of page 02: the token after reprocess, a token above attempts, the right token
after its lease was reaped."""

from __future__ import annotations

import redis

from echomq_lab import jobs
from echomq_lab.checks.base import (
    LONG_MS,
    SHORT_MS,
    Check,
    Observed,
    claim_it,
    fields,
    fresh_job,
    row_of,
)
from echomq_lab.fencing import attempt, prepare, queue_keys
from echomq_lab.stories import wrote

_AFTER_REPROCESS = ("1", "2", "3")


def _observe_after_reprocess(conn: redis.Redis, queue: str) -> Observed:
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


def _fence_check(key: str, lease: str, which: str, question: str,
                 answers: dict[str, str], lesson: str) -> Check:
    """A page-02 check that completes the sample row (see ``_fence_observed``) and grades the
    outcome's kind through ``answers`` (outcome kind -> choice; the choices in that order)."""

    def observe(conn: redis.Redis, queue: str) -> Observed:
        kind, did = _fence_observed(conn, queue, lease, which)
        return Observed(answers.get(kind), did)

    return Check(key, 2, question, tuple(answers.values()), observe, lesson)


def token_above() -> Check:
    """Page 02: token 3 against a row whose attempts is 2."""
    return _fence_check(
        "token_above", "held", "future",
        "The row's attempts is 2 and its lease is held. A worker completes it with token 3. "
        "What does the server answer?",
        {"accepted": "accepted: a higher token is newer, so it wins",
         "EMQSTALE": "refused EMQSTALE: only the row's own attempts holds the lease",
         "EMQSTATE": "refused EMQSTATE: the job is not active"},
        "The check is equality, not order: any token but the row's attempts is refused, and "
        "a refused call writes nothing.",
    )


def token_reaped() -> Check:
    """Page 02: the right token after the lease was reaped."""
    return _fence_check(
        "token_reaped", "reaped", "live",
        "A worker holds token 2, the row's attempts is 2, but its lease ran out and the reaper "
        "returned the job to pending. The worker now completes with token 2. What happens?",
        {"accepted": "accepted: the token matches attempts",
         "EMQSTALE": "refused EMQSTALE: the token matches, but it holds no lease",
         "job gone": "refused, because the job is gone"},
        "The lab's scripts also check that the id is still in active: a token whose lease was "
        "reaped holds nothing, even before the next claim mints a newer one.",
    )
