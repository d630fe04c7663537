"""What a self-check is: a question, its choices, and how the server's answer grades them.

The words of every question live in ``questions.toml`` (read by :mod:`.questions`); the code
that runs each one lives in :mod:`.observers`. This module holds the types they meet in, and
the helpers the observers use to set a job up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import redis

from echomq_lab import branded, jobs
from echomq_lab.queues import reset
from echomq_lab.row import Row, decoded

#: The lease the checks take when they want it to run out: short, so a check takes well under
#: a second.
SHORT_MS = 60
#: The lease the checks take when it must stay held while they look.
LONG_MS = 600_000


@dataclass(frozen=True)
class Observed:
    """What the server did in one check: the outcome word the choices are matched on (None:
    nothing the choices name) and a sentence naming what it did."""

    outcome: str | None
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
    ``outcomes[i]`` is the outcome that makes ``choices[i]`` right; ``lesson`` is the fact
    behind the answer, in a sentence."""

    key: str
    page: int
    question: str
    choices: tuple[str, ...]
    outcomes: tuple[str, ...]
    observe: Callable[[redis.Redis, str], Observed]
    lesson: str

    def answer_for(self, seen: Observed) -> str | None:
        """The choice the observation makes right; None when no choice names its outcome."""
        for choice, outcome in zip(self.choices, self.outcomes, strict=True):
            if outcome == seen.outcome:
                return choice
        return None

    @property
    def queue(self) -> str:
        """The queue this check runs on unless it is given another: ``check-<key>``."""
        return f"check-{self.key}".replace("_", "-")

    def grade(self, conn: redis.Redis, queue: str, choice: str) -> Graded:
        """Run the check on ``queue`` and grade ``choice``; ValueError for an unknown choice."""
        if choice not in self.choices:
            raise ValueError(f"{choice!r} is not one of the choices: {'; '.join(self.choices)}")
        seen = self.observe(conn, queue)
        answer = self.answer_for(seen)
        right = answer == choice
        if right:
            head = "Right."
        elif answer is None:
            head = "None of the choices fits what the server did."
        else:
            head = f"Not this one: the server's answer is “{answer}”."
        return Graded(choice, right, f"{head} The server: {seen.did}. {self.lesson}", seen.did)


def fresh_job(conn: redis.Redis, queue: str, payload: bytes = b'{"report": "march"}') -> str:
    """Empty ``queue`` and enqueue one new job; its id."""
    reset(conn, queue)
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, queue, job_id, payload)
    return job_id


def claim_it(conn: redis.Redis, queue: str, job_id: str, lease_ms: int) -> jobs.Claimed:
    """Claim on ``queue``, which must hand out ``job_id``; RuntimeError saying so otherwise."""
    claimed = jobs.claim(conn, queue, lease_ms)
    if claimed is None or claimed.id != job_id:
        raise RuntimeError(f"the claim in {queue!r} did not take {job_id}: {claimed}")
    return claimed


def row_of(conn: redis.Redis, queue: str, job_id: str) -> Row | None:
    """The job's row, or None when it has none."""
    return Row.from_record(jobs.record(conn, queue, job_id))


def new_row(conn: redis.Redis, queue: str,
            payload: bytes = b'{"report": "march"}') -> tuple[str, Row | None]:
    """Empty ``queue``, enqueue one new job with ``payload`` and read its row back: (id, row)."""
    job_id = fresh_job(conn, queue, payload)
    return job_id, row_of(conn, queue, job_id)


def fields(row: Row | None) -> str:
    """The row's fields as ``name=value`` (values cut at 24 characters)."""
    if row is None:
        return "no row"
    return ", ".join(f"{decoded(k)}={row.shown(k)[:24]}" for k in row.field_order())
