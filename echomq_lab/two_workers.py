"""The two-workers-one-job story as a step machine, built only from real transitions.

Worker A claims the story's job with a short lease and stalls past it; the reaper returns the
job; worker B claims it; A wakes and completes with its old token; B completes. Before B's
claim and before A's late complete the reader commits to a prediction (:data:`PREDICTIONS`);
the step is not taken until then, and the server's answer grades it.

``TwoWorkersStory(conn, queue, fence=False)`` runs A's late complete through
:func:`echomq_lab.unfenced.complete_unfenced`, a copy of ``complete`` with the fence taken out
(a demonstration, labelled as one): A's call is accepted, and B, still working, finds the job
gone. With the fence (the default) A is refused ``EMQSTALE`` and B completes.

The story:

- owns its job: starting (again) enqueues a fresh job and forgets only the story's previous one,
  so two stories on one queue do not empty it under each other;
- says in one line when someone else took its job (:class:`echomq_lab.errors.SomeoneElse`),
  and does not take the step;
- never mistakes a server it could not reach for the fence: such a step is not taken (the
  error is raised, one line) and can be pressed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import redis

from echomq_lab import branded, errors, jobs, unfenced
from echomq_lab.clock import lease_deadline, server_now_ms, wait_out_lease
from echomq_lab.queues import claim_expected, forget
from echomq_lab.row import Row
from echomq_lab.stories import DEFAULT_LEASE_MS, HOLD_MS
from echomq_lab.transitions import RETIRED

SomeoneElse = errors.SomeoneElse


class NotYet(ValueError):
    """A step that waits on the server's clock was asked for before its time came."""


def _record(conn: redis.Redis, queue: str, job_id: str) -> Row | None:
    return Row.from_record(jobs.record(conn, queue, job_id))


def _state(row: Row | None) -> str:
    return RETIRED if row is None else (row.state or "?")


#: The steps of the two-workers story, in order, with what each one does. The titles never
#: give away an outcome the reader is asked to predict.
STEPS: tuple[tuple[str, str], ...] = (
    ("a_claims", "A claims the job, with a short lease"),
    ("a_stalls", "A stalls: its lease runs out on the server's clock"),
    ("reaper_returns", "the reaper returns the job to pending"),
    ("b_claims", "B claims the job"),
    ("a_completes", "A wakes up and completes with the token it holds"),
    ("b_completes", "B finishes its work and completes"),
)
STEP_NAMES: tuple[str, ...] = tuple(name for name, _ in STEPS)

#: What A's late complete can come to, as the reader's choices say it.
ACCEPTED, STALE, GONE = "accepted: the job is retired", "refused EMQSTALE", "refused: no such job"


@dataclass(frozen=True)
class Prediction:
    """A question asked before ``step``; the step's outcome is one of ``choices``."""

    step: str
    question: str
    choices: tuple[str, ...]


#: The predictions, by the step they come before.
PREDICTIONS: dict[str, Prediction] = {
    "b_claims": Prediction("b_claims", "B claims the job now. Which token does B get?",
                           ("1", "2", "0")),
    "a_completes": Prediction("a_completes",
                              "A wakes up and calls complete with its token. "
                              "What does the server say?", (ACCEPTED, STALE, GONE)),
}
#: The answers a program gives when it plays the whole story (a reader who expects the fence).
PROGRAM_GUESSES: dict[str, str] = {"b_claims": "2", "a_completes": STALE}


@dataclass(frozen=True)
class StepResult:
    """One step of the story: what was done, what the server answered, and if it refused.

    ``outcome`` is the choice of the step's prediction that the server's answer matches
    (empty for a step without one); ``predicted`` is the reader's choice.
    """

    step: str
    title: str
    message: str
    refused: bool = False
    outcome: str = ""
    predicted: str = ""
    at_ms: int = 0

    @property
    def prediction_right(self) -> bool | None:
        """Whether the reader's prediction matched the server (None: nothing was predicted)."""
        return None if not self.predicted else self.predicted == self.outcome


@dataclass
class TwoWorkersStory:
    """Two workers, one job: a step machine the two-workers panel drives.

    :meth:`start` enqueues the story's job (forgetting the story's previous one, and nothing
    else); :meth:`predict` records the reader's choice before a step that asks for one;
    :meth:`step` runs the next step (and only the next one); :meth:`run_through` plays it all.
    Worker A's lease is ``lease_ms``; worker B holds its lease long. ``fence=False`` sends A's
    late complete through the unfenced demonstration script.
    """

    conn: redis.Redis
    queue: str
    lease_ms: int = DEFAULT_LEASE_MS
    payload: bytes | str = b'{"report": "march"}'
    fence: bool = field(default=True, kw_only=True)
    job_id: str = ""
    token_a: int | None = None
    token_b: int | None = None
    started_ms: int = 0
    deadline_a: int | None = None
    done: list[StepResult] = field(default_factory=list)
    predicted: dict[str, str] = field(default_factory=dict)

    def start(self) -> str:
        """Enqueue one fresh job and rewind to the first step; return its id. The story's
        previous job (if any) is forgotten; other jobs on the queue are left alone."""
        jobs.check_lease(self.lease_ms)
        if self.job_id:
            forget(self.conn, self.queue, self.job_id)
        self.job_id = branded.mint("JOB")
        jobs.enqueue(self.conn, self.queue, self.job_id, self.payload)
        self.started_ms = server_now_ms(self.conn)
        self.token_a = self.token_b = self.deadline_a = None
        self.done, self.predicted = [], {}
        return self.job_id

    @property
    def next_step(self) -> str | None:
        """The name of the step that may run now, or None when the story is over."""
        if not self.job_id:
            return None
        return STEP_NAMES[len(self.done)] if len(self.done) < len(STEPS) else None

    @property
    def waiting_for(self) -> Prediction | None:
        """The prediction the reader owes before the next step, or None."""
        nxt = self.next_step
        ask = PREDICTIONS.get(nxt) if nxt else None
        return ask if ask is not None and nxt not in self.predicted else None

    def predict(self, step: str, choice: str) -> None:
        """Commit to ``choice`` before ``step`` (it must be next and ask for a prediction)."""
        ask = PREDICTIONS.get(step)
        if ask is None:
            raise ValueError(f"step {step!r} asks for no prediction: only "
                             f"{', '.join(PREDICTIONS)} do")
        if step != self.next_step:
            raise ValueError(f"step {step!r} is not next; the next step is {self.next_step}")
        if choice not in ask.choices:
            raise ValueError(f"{choice!r} is not a choice; the choices are {list(ask.choices)}")
        self.predicted[step] = choice

    def step(self, name: str, *, wait: bool = True) -> StepResult:
        """Run step ``name``; it must be :attr:`next_step` (ValueError otherwise) and its
        prediction, if it asks for one, must be made.

        ``wait=False``: ``a_stalls`` raises :class:`NotYet` (nothing happens) while A's lease
        still has time left, instead of waiting for the server's clock.
        """
        if name not in STEP_NAMES:
            raise ValueError(f"unknown step {name!r}: the steps are {', '.join(STEP_NAMES)}")
        if name != self.next_step:
            nxt = self.next_step or "none (the story is over: start again)"
            raise ValueError(f"step {name!r} is not next; the next step is {nxt}")
        ask = self.waiting_for
        if ask is not None:
            raise ValueError(f"predict first: {ask.question} ({' / '.join(ask.choices)})")
        title = dict(STEPS)[name]
        if name == "a_stalls":
            result = self._a_stalls(title, wait)
        else:
            result = getattr(self, "_" + name)(title)
        assert isinstance(result, StepResult)
        result = StepResult(result.step, result.title, result.message, result.refused,
                            result.outcome, self.predicted.get(name, ""), server_now_ms(self.conn))
        self.done.append(result)
        return result

    def run_through(self, guesses: Mapping[str, str] | None = None) -> str:
        """Play the whole story from a fresh job, predictions answered by ``guesses`` (by
        default :data:`PROGRAM_GUESSES`); return :meth:`log_text`."""
        answers = {**PROGRAM_GUESSES, **(guesses or {})}
        self.start()
        for name in STEP_NAMES:
            if name in PREDICTIONS:
                self.predict(name, answers[name])
            self.step(name)
        return self.log_text()

    # -- what each side believes ----------------------------------------------------------

    def lease_left_ms(self) -> int | None:
        """Time left on the job's lease on the server's clock (negative once it ran out), or
        None when the job holds no lease."""
        if not self.job_id:
            return None
        deadline = lease_deadline(self.conn, self.queue, self.job_id)
        return None if deadline is None else deadline - server_now_ms(self.conn)

    def believes(self, who: str) -> str:
        """What worker ``who`` ("A" or "B") believes, in one line."""
        taken = {r.step: r for r in self.done}
        token = self.token_a if who == "A" else self.token_b
        settle = taken.get("a_completes" if who == "A" else "b_completes")
        if token is None:
            return f"{who} has not claimed the job"
        if settle is None:
            return f"{who} holds the job with token {token} and is working on it"
        if settle.refused:
            return f"{who} was told its work does not count ({settle.outcome or settle.message})"
        return f"{who} thinks its work counted: the job is done"

    # -- the steps --------------------------------------------------------------------------

    def _claim(self, who: str, lease_ms: int) -> int:
        """Claim for ``who``; :class:`SomeoneElse` (one line) unless it took the story's job."""
        try:
            return claim_expected(self.conn, self.queue, self.job_id, lease_ms).token
        except SomeoneElse as exc:
            where = _state(_record(self.conn, self.queue, self.job_id))
            if "handed out nothing" in str(exc):
                raise SomeoneElse(
                    f"{who}'s claim found nothing pending: someone else took this story's job "
                    f"{self.job_id} (it is {where} now); start again") from None
            raise SomeoneElse(f"{who}'s claim: {exc}, this story's job (it is {where}): "
                              f"someone else uses queue {self.queue!r}; start again") from None

    def _a_claims(self, title: str) -> StepResult:
        self.token_a = self._claim("A", self.lease_ms)
        self.deadline_a = lease_deadline(self.conn, self.queue, self.job_id)
        return StepResult("a_claims", title,
                          f"A holds token {self.token_a}; its lease is {self.lease_ms} ms")

    def _a_stalls(self, title: str, wait: bool) -> StepResult:
        if wait:
            wait_out_lease(self.conn, self.queue, self.job_id)
        else:
            left = self.lease_left_ms()
            if left is not None and left > 0:
                raise NotYet(f"A's lease has {left} ms left on the server's clock")
        return StepResult("a_stalls", title,
                          "the server's clock passed A's deadline; A still believes it holds "
                          "the job")

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
                          f"{self.token_b}, and A still holds token {self.token_a}",
                          outcome=str(self.token_b))

    def _a_completes(self, title: str) -> StepResult:
        token = self.token_a
        assert token is not None
        if not self.fence:
            try:
                unfenced.complete_unfenced(self.conn, self.queue, self.job_id, token)
            except errors.JobGone as exc:
                return StepResult("a_completes", title, f"A refused: {exc}", refused=True,
                                  outcome=GONE)
            return StepResult("a_completes", title,
                              f"A's complete with token {token} was accepted by the "
                              f"{unfenced.LABEL}: the row and B's lease are gone",
                              outcome=ACCEPTED)
        return self._complete("a_completes", title, "A", token)

    def _b_completes(self, title: str) -> StepResult:
        token = self.token_b
        assert token is not None
        if not self.fence:
            try:
                jobs.complete(self.conn, self.queue, self.job_id, token)
            except errors.JobGone:
                return StepResult("b_completes", title,
                                  f"B finds the job gone: its complete with token {token} "
                                  "has no row to retire, and B's work is lost", refused=True,
                                  outcome=GONE)
            except errors.Refusal as exc:
                return StepResult("b_completes", title, f"B refused: {exc}", refused=True)
            return StepResult("b_completes", title, f"B completed with token {token}")
        return self._complete("b_completes", title, "B", token)

    def _complete(self, step: str, title: str, who: str, token: int) -> StepResult:
        try:
            jobs.complete(self.conn, self.queue, self.job_id, token)
        except errors.StaleToken as exc:  # the server's answer, not a lost call
            return StepResult(step, title, f"{who} refused: {exc} (the row is untouched)",
                              refused=True, outcome=STALE)
        except errors.JobGone as exc:
            return StepResult(step, title, f"{who} refused: {exc}", refused=True, outcome=GONE)
        return StepResult(step, title,
                          f"{who} completed with token {token}: the row and the lease are gone",
                          outcome=ACCEPTED)

    # -- the log ------------------------------------------------------------------------------

    def heading(self) -> str:
        """Which complete A's late call goes through, in one line."""
        if self.fence:
            return "fence on: complete checks the token and the lease"
        return f"fence off: A's late complete goes through the {unfenced.LABEL}"

    def log_text(self) -> str:
        """The story as plain text: the steps taken with their outcome and, before each step
        that asked for one, the prediction and whether the server bore it out."""
        out = [self.heading()]
        for i, result in enumerate(self.done):
            ask = PREDICTIONS.get(result.step)
            if ask is not None and result.predicted:
                verdict = "as predicted" if result.prediction_right else "not as predicted"
                out.append(f"   predict: {ask.question} -> {result.predicted!r}; the server: "
                           f"{result.outcome!r} ({verdict})")
            mark = "refused" if result.refused else "done"
            out.append(f"{i + 1}. {result.title} [{mark}] {result.message}")
        nxt = self.next_step
        if nxt is not None:
            out.append(f"next: {dict(STEPS)[nxt]}")
        elif self.done:
            out.append(self.verdict())
        return "\n".join(out)

    def verdict(self) -> str:
        """What the finished story comes to, in one line (empty while it is not over)."""
        if self.next_step is not None or not self.done:
            return ""
        a, b = self.done[-2], self.done[-1]
        said = {ACCEPTED: "accepted", STALE: "refused EMQSTALE", GONE: "refused: no such job"}
        first = f"A's late complete {said.get(a.outcome, a.message)}"
        if b.outcome == GONE:
            return f"in the end: {first}; B found the job gone and its work is lost"
        return f"in the end: B's work counts; {first}"


#: The name the step machine had before the fence switch.
TwoWorkers = TwoWorkersStory
