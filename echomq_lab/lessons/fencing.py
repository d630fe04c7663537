"""The whole fence: every fenced verb, every kind of token, a lease held or already reaped,
each run on a fresh sample row (:func:`stories.sample_row`) comparing the queue around the call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import redis

from echomq_lab import errors, jobs, keyspace, transitions
from echomq_lab.clock import wait_out_lease
from echomq_lab.connection import reaching
from echomq_lab.lessons.stories import HOLD_MS, SampleRow, sample_row, wrote

TOKENS: tuple[str, ...] = ("live", "stale", "future")
LEASES: tuple[str, ...] = ("held", "reaped")
VERBS: tuple[str, ...] = transitions.FENCED


def _offered(what: str, value: object, choices: tuple[str, ...]) -> None:
    """ValueError naming the choices when ``value`` is not one of them."""
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}: pick one of {', '.join(choices)}")


@dataclass(frozen=True)
class Outcome:
    """What the server answered one call: ``kind`` is ``"accepted"``, a wire class (``EMQSTALE``)
    or a host condition's label (``job gone``); ``detail`` is the reply or the refusal's text."""

    kind: str
    detail: str

    @property
    def accepted(self) -> bool:
        return self.kind == "accepted"

    def words(self) -> str:
        """``accepted (reply)`` or ``refused EMQSTALE: token 1 is stale, ...``."""
        if self.accepted:
            return f"accepted ({self.detail})"
        return f"refused {self.kind}: {self.detail}"


def attempt(call: Callable[[], Any]) -> Outcome:
    """Run ``call``: its reply as an accepted :class:`Outcome`, or the refusal or host condition
    it raised; a bad argument and a dead server still raise."""
    try:
        reply = call()
    except errors.Refusal as exc:
        return Outcome(exc.wire_class, exc.detail)
    except errors.JobGone as exc:
        return Outcome(exc.label, exc.detail)
    return Outcome("accepted", str(reply))


def token_of(sample: SampleRow, kind: str | int) -> int:
    """The token of kind ``kind`` (live, stale or future) for ``sample``; an int is itself
    (ValueError below 1)."""
    if isinstance(kind, int) and not isinstance(kind, bool):
        if kind < 1:
            raise ValueError(f"token must be at least 1, got {kind}")
        if kind > jobs.MAX_TOKEN:
            raise ValueError(f"token {kind} is far larger than any claim could hand out: try "
                             "a small number, like the row's attempts")
        return kind
    if not isinstance(kind, str):
        raise TypeError(f"token must be an int or a kind, not {type(kind).__name__}")
    _offered("token kind", kind, TOKENS)
    return {"live": sample.token, "stale": sample.stale_token, "future": sample.token + 1}[kind]


def queue_keys(conn: redis.Redis, queue: str) -> dict[bytes, Any]:
    """Every key of ``queue`` with its full content (sets with scores, rows as dicts)."""
    out: dict[bytes, Any] = {}
    with reaching(conn):
        for key in sorted(cast(list[bytes], list(conn.scan_iter(keyspace.base(queue) + "*")))):
            if conn.type(key) == b"hash":
                out[key] = dict(cast(dict[bytes, bytes], conn.hgetall(key)))
            else:
                out[key] = conn.zrange(key, 0, -1, withscores=True)
    return out


def call_verb(conn: redis.Redis, queue: str, verb: str, job_id: str, token: int) -> Outcome:
    """Run fenced verb ``verb`` (its registry entry's call) on ``job_id`` with ``token``; the
    reply in the entry's words. A delay asked for is none, a lease twice the sample row's (so an
    accepted extend always moves the deadline), a cap on attempts 5."""
    _offered("verb", verb, VERBS)
    t = transitions.get(verb)
    values = {"job": job_id, "token": token, "lease": 2 * HOLD_MS, "delay": 0,
              "max_attempts": 5, "error": "it failed"}
    handle = getattr(jobs, t.call.handle)
    return attempt(lambda: t.reads(handle(conn, queue, *t.arguments(values))))


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
    _offered("lease", lease, LEASES)
    if lease == "held":
        return sample_row(conn, queue, lease_ms=lease_ms)
    sample = sample_row(conn, queue, lease_ms=lease_ms, hold_ms=lease_ms)
    wait_out_lease(conn, queue, sample.job_id)
    if jobs.reap(conn, queue) != 1:
        raise errors.SomeoneElse(f"the reap in {queue!r} did not return {sample.job_id}")
    return sample


def _effect(before: dict[bytes, Any], after: dict[bytes, Any], row: bytes) -> str:
    """What a call did to the queue, in words: the row's change, or the lease's."""
    if before.get(row) == after.get(row):
        return "nothing changed" if before == after else "the row is unchanged; the lease moved"
    written = wrote(before.get(row), after.get(row))
    return "it deleted the row and its lease" if after.get(row) is None else f"it wrote {written}"


def present(conn: redis.Redis, queue: str, sample: SampleRow, verb: str, token: int,
            lease: str) -> Trial:
    """Run ``verb`` with ``token`` on the prepared ``sample``; compare the queue around it."""
    row = keyspace.job_key(queue, sample.job_id).encode()
    before = queue_keys(conn, queue)
    outcome = call_verb(conn, queue, verb, sample.job_id, token)
    after = queue_keys(conn, queue)
    kind = "live" if token == sample.token else "stale" if token < sample.token else "future"
    return Trial(verb, kind, lease, sample, token, outcome, before == after,
                 _effect(before, after, row))


def check_choice(verb: str, token: str | int, lease: str) -> None:
    """ValueError (or TypeError) naming the choices when one of the three is not offered."""
    _offered("verb", verb, VERBS)
    _offered("lease", lease, LEASES)
    token_of(SampleRow("", 2, 1), token)


def run(conn: redis.Redis, queue: str, verb: str, token: str | int, lease: str, *,
        lease_ms: int = 60) -> Trial:
    """Empty the queue, build a fresh sample row, put its lease in state ``lease``, present
    ``token`` (a kind or a number). A choice not offered raises before anything is written."""
    check_choice(verb, token, lease)
    sample = prepare(conn, queue, lease, lease_ms=lease_ms)
    return present(conn, queue, sample, verb, token_of(sample, token), lease)

