"""The whole fence: every fenced verb, every kind of token, a lease held or already reaped.

API (for pages and widgets)::

    from echomq_lab import fencing
    fencing.VERBS    # the fenced verbs, from the transitions registry
    fencing.TOKENS   # ("live", "stale", "future")
    fencing.LEASES   # ("held", "reaped")
    trial = fencing.run(conn, queue, "retry", "stale", "held")   # or a token number: 3
    trial.outcome    # Outcome: .accepted, .kind ("accepted" | "EMQSTALE" | ...), .detail
    trial.untouched  # True when the queue's keys are exactly as before the call
    trial.line()     # one line in words, e.g. "retry with token 1 (stale): refused EMQSTALE ..."
    fencing.attempt(lambda: jobs.complete(...))   # any call -> Outcome, never raises a refusal

Each :func:`run` builds a fresh sample row by real transitions (:func:`stories.sample_row`:
the current token is 2, token 1 is stale), optionally lets its lease run out and reaps it, then
runs the verb's real script with the chosen token and compares the queue before and after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

import redis

from echomq_lab import errors, jobs, keyspace, transitions
from echomq_lab.clock import wait_out_lease
from echomq_lab.connection import reaching
from echomq_lab.stories import HOLD_MS, SampleRow, sample_row, wrote

#: A fenced verb's name: one of :data:`VERBS`.
Verb = str
TokenKind = Literal["live", "stale", "future"]
LeaseKind = Literal["held", "reaped"]
#: The fenced verbs, as the registry lists them.
VERBS: tuple[Verb, ...] = transitions.FENCED
TOKENS: tuple[TokenKind, ...] = ("live", "stale", "future")
LEASES: tuple[LeaseKind, ...] = ("held", "reaped")
#: What each kind of token is, against the sample row whose attempts is 2.
TOKEN_WORDS: dict[str, str] = {
    "live": "the row's attempts: the token the last claim handed out",
    "stale": "the first claim's token, from before the reap",
    "future": "one more than the row's attempts: no claim has minted it",
}
LEASE_WORDS: dict[str, str] = {
    "held": "the lease is still held (the job is in active)",
    "reaped": "the lease ran out and reap returned the job to pending",
}


@dataclass(frozen=True)
class Outcome:
    """What the server answered one call: accepted (with its reply) or refused (and why).

    ``kind`` is ``"accepted"``, a wire class (``EMQSTALE``, ``EMQKIND``, ``EMQSTATE``) or a
    host condition's label (``job gone``); ``detail`` is the reply or the refusal's text.
    """

    kind: str
    detail: str

    @property
    def accepted(self) -> bool:
        """True when the server carried the call out."""
        return self.kind == "accepted"

    def words(self) -> str:
        """``accepted (reply)`` or ``refused EMQSTALE: token 1 is stale, ...``."""
        if self.accepted:
            return f"accepted ({self.detail})"
        return f"refused {self.kind}: {self.detail}"


def attempt(call: Callable[[], Any]) -> Outcome:
    """Run ``call``; its reply as an accepted :class:`Outcome`, or the refusal it raised.

    Refusals and host conditions become outcomes; a bad argument (ValueError/TypeError) and a
    dead server (ServerUnavailable) still raise.
    """
    try:
        reply = call()
    except errors.Refusal as exc:
        return Outcome(exc.wire_class, exc.detail)
    except errors.JobGone as exc:
        return Outcome(exc.label, exc.detail)
    return Outcome("accepted", str(reply))


def token_of(sample: SampleRow, kind: str | int) -> int:
    """The token of kind ``kind`` (live, stale or future) for ``sample``; an int is itself.

    ValueError for an unknown kind, TypeError/ValueError for an int that is no token.
    """
    if isinstance(kind, int) and not isinstance(kind, bool):
        if kind < 1:
            raise ValueError(f"token must be at least 1, got {kind}")
        return kind
    if kind == "live":
        return sample.token
    if kind == "stale":
        return sample.stale_token
    if kind == "future":
        return sample.token + 1
    if not isinstance(kind, str):
        raise TypeError(f"token must be an int or a kind, not {type(kind).__name__}")
    raise ValueError(f"unknown token kind {kind!r}: pick one of {', '.join(TOKENS)}")


def kind_of(sample: SampleRow, token: int) -> str:
    """What ``token`` is against ``sample``: live, stale (older) or future (newer)."""
    if token == sample.token:
        return "live"
    return "stale" if token < sample.token else "future"


def queue_keys(conn: redis.Redis, queue: str) -> dict[bytes, Any]:
    """Every key of ``queue`` with its full content (sets with scores, rows as dicts)."""
    out: dict[bytes, Any] = {}
    with reaching(conn):
        for key in sorted(cast(list[bytes], list(conn.scan_iter(keyspace.base(queue) + "*")))):
            kind = cast(bytes, conn.type(key))
            if kind == b"hash":
                out[key] = dict(cast(dict[bytes, bytes], conn.hgetall(key)))
            else:
                out[key] = conn.zrange(key, 0, -1, withscores=True)
    return out


def call_verb(conn: redis.Redis, queue: str, verb: str, job_id: str, token: int) -> Outcome:
    """Run fenced verb ``verb`` on ``job_id`` with ``token``; retry asks for no delay, extend
    for a lease twice the sample row's, so an accepted extend always moves the deadline."""
    if verb == "complete":
        return attempt(lambda: jobs.complete(conn, queue, job_id, token))
    if verb == "retry":
        return attempt(lambda: jobs.retry(conn, queue, job_id, token, 0, 5, "it failed"))
    if verb == "extend":
        longer = 2 * HOLD_MS
        return attempt(lambda: f"new deadline {jobs.extend(conn, queue, job_id, token, longer)}")
    raise ValueError(f"unknown verb {verb!r}: pick one of {', '.join(VERBS)}")


@dataclass(frozen=True)
class Trial:
    """One run of the fence: the verb, the token presented, the lease, and what happened."""

    verb: str
    token_kind: str
    lease: str
    sample: SampleRow
    token: int
    outcome: Outcome
    untouched: bool
    change: str

    def line(self) -> str:
        """The trial in one line: what was presented, what the server said, what changed."""
        head = f"{self.verb} with token {self.token} ({self.token_kind}, lease {self.lease})"
        if self.outcome.accepted:
            return f"{head}: {self.outcome.words()}; {self.change}"
        tail = "the row is untouched" if self.untouched else f"yet {self.change}"
        return f"{head}: {self.outcome.words()}; {tail}"


def prepare(conn: redis.Redis, queue: str, lease: str, *, lease_ms: int = 60) -> SampleRow:
    """A fresh sample row (attempts 2) whose lease is ``held`` or already ``reaped``."""
    if lease not in LEASES:
        raise ValueError(f"unknown lease {lease!r}: pick one of {', '.join(LEASES)}")
    if lease == "held":
        return sample_row(conn, queue, lease_ms=lease_ms)
    sample = sample_row(conn, queue, lease_ms=lease_ms, hold_ms=lease_ms)
    wait_out_lease(conn, queue, sample.job_id)
    if jobs.reap(conn, queue) != 1:
        raise RuntimeError(f"the reap in {queue!r} did not return {sample.job_id}")
    return sample


def _effect(before: dict[bytes, Any], after: dict[bytes, Any], row: bytes) -> str:
    """What a call did to the queue, in words: the row's change, or the lease's."""
    if before.get(row) == after.get(row):
        return "nothing changed" if before == after else "the row is unchanged; the lease moved"
    written = wrote(before.get(row), after.get(row))
    return "it deleted the row and its lease" if after.get(row) is None else f"it wrote {written}"


def present(
    conn: redis.Redis, queue: str, sample: SampleRow, verb: str, token: int, lease: str
) -> Trial:
    """Run ``verb`` with ``token`` on the prepared ``sample``; compare the queue around it."""
    row = keyspace.job_key(queue, sample.job_id).encode()
    before = queue_keys(conn, queue)
    outcome = call_verb(conn, queue, verb, sample.job_id, token)
    after = queue_keys(conn, queue)
    change = _effect(before, after, row)
    return Trial(verb, kind_of(sample, token), lease, sample, token, outcome, before == after,
                 change)


def check_choice(verb: str, token: str | int, lease: str) -> None:
    """ValueError (or TypeError) naming the choices when one of the three is not offered."""
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}: pick one of {', '.join(VERBS)}")
    if lease not in LEASES:
        raise ValueError(f"unknown lease {lease!r}: pick one of {', '.join(LEASES)}")
    token_of(SampleRow("", 2, 1), token)


def run(
    conn: redis.Redis, queue: str, verb: str, token: str | int, lease: str, *,
    lease_ms: int = 60,
) -> Trial:
    """Build a fresh sample row, put its lease in state ``lease``, present the token.

    ``token`` is a kind (live, stale, future) or a number. The queue is emptied first. A choice
    that is not offered raises ValueError/TypeError before anything is written.
    """
    check_choice(verb, token, lease)
    sample = prepare(conn, queue, lease, lease_ms=lease_ms)
    return present(conn, queue, sample, verb, token_of(sample, token), lease)


__all__ = [
    "LEASES",
    "LEASE_WORDS",
    "TOKENS",
    "TOKEN_WORDS",
    "VERBS",
    "Outcome",
    "Trial",
    "attempt",
    "call_verb",
    "check_choice",
    "kind_of",
    "prepare",
    "present",
    "queue_keys",
    "run",
    "token_of",
]
