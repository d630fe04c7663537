"""The two-workers-one-job story as a step machine, built only from real transitions.

Worker A claims the story's job with a short lease and stalls past it; the reaper returns the
job; worker B claims it (token 2); A wakes and completes with its stale token 1 and is refused
``EMQSTALE``; B completes. :class:`TwoWorkers` runs one step at a time, and:

- owns its job: starting (again) enqueues a fresh job and forgets only the story's previous one,
  so two stories on one queue do not empty it under each other;
- says in one line when someone else took its job (a claim that handed out another job, or
  found nothing pending), and does not take the step;
- never mistakes a server it could not reach for the fence: such a step is not taken (the
  error is raised, one line) and can be pressed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from echomq_lab import branded, errors, jobs
from echomq_lab.clock import wait_out_lease
from echomq_lab.queues import forget
from echomq_lab.row import Row
from echomq_lab.stories import DEFAULT_LEASE_MS, HOLD_MS
from echomq_lab.transitions import RETIRED

SomeoneElse = errors.SomeoneElse


def _record(conn: redis.Redis, queue: str, job_id: str) -> Row | None:
    return Row.from_record(jobs.record(conn, queue, job_id))


def _state(row: Row | None) -> str:
    return RETIRED if row is None else (row.state or "?")


#: The steps of the two-workers story, in order, with what each one does.
STEPS: tuple[tuple[str, str], ...] = (
    ("a_claims", "A claims the job (token 1, a short lease)"),
    ("a_stalls", "A stalls: its lease runs out on the server clock"),
    ("reaper_returns", "the reaper returns the job to pending"),
    ("b_claims", "B claims the job (token 2)"),
    ("a_completes", "A wakes up and completes with token 1"),
    ("b_completes", "B completes with token 2"),
)
STEP_NAMES: tuple[str, ...] = tuple(name for name, _ in STEPS)


@dataclass(frozen=True)
class StepResult:
    """One step of the story: what was done, what the server answered, and if it refused."""

    step: str
    title: str
    message: str
    refused: bool = False


@dataclass
class TwoWorkers:
    """Two workers, one job: a step machine the two-workers widget drives.

    :meth:`start` enqueues the story's job (forgetting the story's previous one, and nothing
    else); :meth:`step` runs the next step (and only the next one). Worker A's lease is
    ``lease_ms``; worker B holds its lease long.
    """

    conn: redis.Redis
    queue: str
    lease_ms: int = DEFAULT_LEASE_MS
    payload: bytes | str = b'{"report": "march"}'
    job_id: str = ""
    token_a: int | None = None
    token_b: int | None = None
    done: list[StepResult] = field(default_factory=list)

    def start(self) -> str:
        """Enqueue one fresh job and rewind to the first step; return its id. The story's
        previous job (if any) is forgotten; other jobs on the queue are left alone."""
        jobs.check_lease(self.lease_ms)
        if self.job_id:
            forget(self.conn, self.queue, self.job_id)
        self.job_id = branded.mint("JOB")
        jobs.enqueue(self.conn, self.queue, self.job_id, self.payload)
        self.token_a = self.token_b = None
        self.done = []
        return self.job_id

    @property
    def next_step(self) -> str | None:
        """The name of the step that may run now, or None when the story is over."""
        if not self.job_id:
            return None
        return STEP_NAMES[len(self.done)] if len(self.done) < len(STEPS) else None

    def step(self, name: str) -> StepResult:
        """Run step ``name``; it must be :attr:`next_step` (ValueError otherwise)."""
        if name not in STEP_NAMES:
            raise ValueError(f"unknown step {name!r}: the steps are {', '.join(STEP_NAMES)}")
        if name != self.next_step:
            nxt = self.next_step or "none (the story is over: start again)"
            raise ValueError(f"step {name!r} is not next; the next step is {nxt}")
        title = dict(STEPS)[name]
        result = getattr(self, "_" + name)(title)
        assert isinstance(result, StepResult)
        self.done.append(result)
        return result

    def _claim(self, who: str, lease_ms: int) -> int:
        """Claim for ``who``; :class:`SomeoneElse` (one line) unless it took the story's job."""
        claimed = jobs.claim(self.conn, self.queue, lease_ms)
        if claimed is None:
            where = _state(_record(self.conn, self.queue, self.job_id))
            raise SomeoneElse(
                f"{who}'s claim found nothing pending: someone else took this story's job "
                f"{self.job_id} (it is {where} now); start again"
            )
        if claimed.id != self.job_id:
            raise SomeoneElse(
                f"{who}'s claim handed out {claimed.id}, not this story's job {self.job_id}: "
                f"someone else uses queue {self.queue!r}; that lease runs out in {lease_ms} ms "
                "and reap returns the job"
            )
        return claimed.token

    def _a_claims(self, title: str) -> StepResult:
        self.token_a = self._claim("A", self.lease_ms)
        return StepResult("a_claims", title,
                          f"A holds token {self.token_a}; its lease is {self.lease_ms} ms")

    def _a_stalls(self, title: str) -> StepResult:
        wait_out_lease(self.conn, self.queue, self.job_id)
        return StepResult("a_stalls", title,
                          "the server clock passed A's deadline; A still believes it holds the job")

    def _reaper_returns(self, title: str) -> StepResult:
        count = jobs.reap(self.conn, self.queue)
        row = _record(self.conn, self.queue, self.job_id)
        return StepResult("reaper_returns", title,
                          f"reap returned {count} job to pending; state={_state(row)}, "
                          f"attempts={row.shown(b'attempts', '?') if row else '?'} (untouched)")

    def _b_claims(self, title: str) -> StepResult:
        self.token_b = self._claim("B", HOLD_MS)
        return StepResult("b_claims", title,
                          f"B holds token {self.token_b}; the row's attempts is now "
                          f"{self.token_b}, so A's token {self.token_a} is stale")

    def _complete(self, step: str, title: str, who: str, token: int | None) -> StepResult:
        assert token is not None
        try:
            jobs.complete(self.conn, self.queue, self.job_id, token)
        except (errors.Refusal, errors.JobGone) as exc:  # the server's answer, not a lost call
            return StepResult(step, title, f"{who} refused: {exc} (the row is untouched)",
                              refused=True)
        return StepResult(step, title,
                          f"{who} completed with token {token}: the row and the lease are gone")

    def _a_completes(self, title: str) -> StepResult:
        return self._complete("a_completes", title, "A", self.token_a)

    def _b_completes(self, title: str) -> StepResult:
        return self._complete("b_completes", title, "B", self.token_b)
