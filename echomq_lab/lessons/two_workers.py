"""Two workers, one job: real transitions step by step, the reader predicting B's token and the
answer to A's late complete first (``fence=False``: that complete is the unfenced script's).
A step that fails (job taken by someone else, no server) is not taken."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from echomq_lab import errors, jobs
from echomq_lab.clock import lease_deadline, server_now_ms, wait_out_lease
from echomq_lab.lessons import unfenced
from echomq_lab.lessons.stories import DEFAULT_LEASE_MS, HOLD_MS, new_job, row_of
from echomq_lab.queues import forget
from echomq_lab.row import Row
from echomq_lab.transitions import RETIRED


class NotYet(ValueError):
    """A step that waits on the server's clock was asked for before its time came."""


#: The steps, in order, with their titles (which never give away a predicted outcome).
STEPS: tuple[tuple[str, str], ...] = (
    ("a_claims", "A claims the job, with a short lease"),
    ("a_stalls", "A stalls: its lease runs out on the server's clock"),
    ("reaper_returns", "the reaper returns the job to pending"),
    ("b_claims", "B claims the job"),
    ("a_completes", "A wakes up and completes with the token it holds"),
    ("b_completes", "B finishes its work and completes"),
)
STEP_NAMES: tuple[str, ...] = tuple(name for name, _ in STEPS)

#: What a late complete can come to, as the reader's choices say it.
ACCEPTED, STALE, GONE = "accepted: the job is retired", "refused EMQSTALE", "refused: no such job"


@dataclass(frozen=True)
class Prediction:
    """A question asked before ``step``; the step's outcome is one of ``choices``."""

    step: str
    question: str
    choices: tuple[str, ...]


#: The predictions, by the step they come before.
PREDICTIONS: dict[str, Prediction] = {ask.step: ask for ask in (
    Prediction("b_claims", "B claims the job now. Which token does B get?", ("1", "2", "0")),
    Prediction("a_completes", "A wakes up and calls complete with its token. What does the "
               "server say?", (ACCEPTED, STALE, GONE)),
)}
#: The answers a program gives when it plays the whole story (it expects the fence).
PROGRAM_GUESSES: dict[str, str] = {"b_claims": "2", "a_completes": STALE}


@dataclass(frozen=True)
class StepResult:
    """One step taken; ``outcome`` is the choice of its prediction the server's answer matches."""

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
    """Two workers, one job (A's lease is ``lease_ms``, B's long): :meth:`start`, then steps."""

    conn: redis.Redis
    queue: str
    lease_ms: int = DEFAULT_LEASE_MS
    fence: bool = field(default=True, kw_only=True)
    job_id: str = ""
    token_a: int | None = None
    token_b: int | None = None
    started_ms: int = 0
    deadline_a: int | None = None
    done: list[StepResult] = field(default_factory=list)
    predicted: dict[str, str] = field(default_factory=dict)

    def start(self) -> str:
        """Forget the story's previous job, enqueue a fresh one and rewind; return its id."""
        jobs.check_lease(self.lease_ms)
        if self.job_id:
            forget(self.conn, self.queue, self.job_id)
        self.job_id = new_job(self.conn, self.queue)
        self.started_ms = server_now_ms(self.conn)
        self.token_a = self.token_b = self.deadline_a = None
        self.done, self.predicted = [], {}
        return self.job_id

    @property
    def next_step(self) -> str | None:
        """The step that may run now, or None when the story is over (or not started)."""
        return STEP_NAMES[len(self.done)] if self.job_id and len(self.done) < len(STEPS) else None

    @property
    def waiting_for(self) -> Prediction | None:
        """The prediction the reader owes before the next step, or None."""
        nxt = self.next_step or ""
        return None if nxt in self.predicted else PREDICTIONS.get(nxt)

    def _must_be_next(self, step: str) -> None:
        if step not in STEP_NAMES:
            raise ValueError(f"unknown step {step!r}: the steps are {', '.join(STEP_NAMES)}")
        if step != self.next_step:
            nxt = self.next_step or "none (the story is over: start again)"
            raise ValueError(f"step {step!r} is not next; the next step is {nxt}")

    def predict(self, step: str, choice: str) -> str:
        """Commit to ``choice`` before ``step`` (it must be next and ask for a prediction)."""
        ask = PREDICTIONS.get(step)
        if ask is None:
            raise ValueError(f"step {step!r} asks for no prediction; {', '.join(PREDICTIONS)} do")
        self._must_be_next(step)
        if choice not in ask.choices:
            raise ValueError(f"{choice!r} is not a choice; the choices are {list(ask.choices)}")
        self.predicted[step] = choice
        return f"you said: {choice}. Now let it happen."

    def step(self, name: str, *, wait: bool = True) -> StepResult:
        """Run step ``name``, the next one, its prediction made (ValueError otherwise). With
        ``wait=False`` ``a_stalls`` raises :class:`NotYet` while A's lease has time left."""
        self._must_be_next(name)
        if (ask := self.waiting_for) is not None:
            raise ValueError(f"predict first: {ask.question} ({' / '.join(ask.choices)})")
        result = StepResult(name, dict(STEPS)[name], *self._take(name, wait),
                            self.predicted.get(name, ""), server_now_ms(self.conn))
        self.done.append(result)
        return result

    def run_through(self) -> str:
        """Play the whole story on a fresh job with :data:`PROGRAM_GUESSES`; return its log."""
        self.start()
        for name in STEP_NAMES:
            if name in PROGRAM_GUESSES:
                self.predict(name, PROGRAM_GUESSES[name])
            self.step(name)
        return self.log_text()

    def server_view(self) -> tuple[Row | None, int | None, int]:
        """The story's row, its lease deadline and the server's now (no job yet: no row)."""
        now = server_now_ms(self.conn)
        if not self.job_id:
            return None, None, now
        row = row_of(self.conn, self.queue, self.job_id)
        return row, lease_deadline(self.conn, self.queue, self.job_id), now

    def lease_left_ms(self) -> int | None:
        """Time left on the lease by the server's clock (below 0 once run out; None: no lease)."""
        _, deadline, now = self.server_view()
        return None if deadline is None else deadline - now

    def believes(self, who: str) -> str:
        """What worker ``who`` ("A" or "B") believes, in one line."""
        token = self.token_a if who == "A" else self.token_b
        settle = [r for r in self.done if r.step == f"{who.lower()}_completes"]
        if token is None:
            return f"{who} has not claimed the job"
        if not settle:
            return f"{who} holds the job with token {token} and is working on it"
        if settle[0].refused:
            return f"{who} was told its work does not count ({settle[0].outcome})"
        return f"{who} thinks its work counted: the job is done"

    def _take(self, name: str, wait: bool) -> tuple[str, bool, str]:
        """Run step ``name`` on the server: (message, refused, outcome)."""
        if name == "a_claims":
            self.token_a = self._claim("A", self.lease_ms)
            self.deadline_a = lease_deadline(self.conn, self.queue, self.job_id)
            return f"A holds token {self.token_a}; its lease is {self.lease_ms} ms", False, ""
        if name == "a_stalls":
            if wait:
                wait_out_lease(self.conn, self.queue, self.job_id)
            elif (left := self.lease_left_ms() or 0) > 0:
                raise NotYet(f"A's lease has {left} ms left on the server's clock")
            return ("the server's clock passed A's deadline; A still believes it holds the job",
                    False, "")
        if name == "reaper_returns":
            count = jobs.reap(self.conn, self.queue)
            row = self.server_view()[0]
            state = row.shown(b"state", "?") if row else RETIRED
            attempts = row.shown(b"attempts", "?") if row else "?"
            return (f"reap returned {count} job to pending; state={state}, attempts={attempts} "
                    "(untouched)", False, "")
        if name == "b_claims":
            self.token_b = self._claim("B", HOLD_MS)
            return (f"B holds token {self.token_b}; the row's attempts is now {self.token_b}, "
                    f"and A still holds token {self.token_a}", False, str(self.token_b))
        return self._complete("A" if name == "a_completes" else "B")

    def _claim(self, who: str, lease_ms: int) -> int:
        """Claim for ``who``; :class:`SomeoneElse` (one line) unless it took the story's job."""
        claimed = jobs.claim(self.conn, self.queue, lease_ms)
        if claimed is not None and claimed.id == self.job_id:
            return claimed.token
        row = self.server_view()[0]
        state = row.shown(b"state", "?") if row else RETIRED
        ours = f"this story's job {self.job_id} (it is {state} now)"
        if claimed is None:
            raise errors.SomeoneElse(f"{who}'s claim found nothing pending: someone else took "
                                     f"{ours}; start again")
        raise errors.SomeoneElse(f"{who}'s claim took {claimed.id}, not {ours}: someone else "
                                 f"uses queue {self.queue!r}; start again")

    def _complete(self, who: str) -> tuple[str, bool, str]:
        """``who`` completes with its token; A's late call is unfenced when the fence is off."""
        token = self.token_a if who == "A" else self.token_b
        assert token is not None
        unfenced_call = who == "A" and not self.fence
        settle = unfenced.complete_unfenced if unfenced_call else jobs.complete
        try:
            settle(self.conn, self.queue, self.job_id, token)
        except errors.StaleToken as exc:  # the server's answer, not a lost call
            return f"{who} refused: {exc} (the row is untouched)", True, STALE
        except errors.JobGone as exc:
            if who == "B" and not self.fence:
                return (f"B finds the job gone: its complete with token {token} has no row to "
                        "retire, and B's work is lost", True, GONE)
            return f"{who} refused: {exc}", True, GONE
        if unfenced_call:
            return (f"A's complete with token {token} was accepted by the {unfenced.LABEL}: "
                    "the row and B's lease are gone", False, ACCEPTED)
        done = f"{who} completed with token {token}: the row and the lease are gone"
        return done, False, ACCEPTED

    def heading(self) -> str:
        """Which complete A's late call goes through, in one line."""
        return ("fence on: complete checks the token and the lease" if self.fence
                else f"fence off: A's late complete goes through the {unfenced.LABEL}")

    def log_text(self) -> str:
        """The story as plain text: each step taken with its outcome, preceded by the
        prediction it asked for and whether the server bore it out."""
        out = [self.heading()]
        for i, result in enumerate(self.done):
            if result.predicted:
                verdict = "as predicted" if result.prediction_right else "not as predicted"
                out.append(f"   predict: {PREDICTIONS[result.step].question} -> "
                           f"{result.predicted!r}; the server: {result.outcome!r} ({verdict})")
            mark = "refused" if result.refused else "done"
            out.append(f"{i + 1}. {result.title} [{mark}] {result.message}")
        nxt = self.next_step
        out.append(f"next: {dict(STEPS)[nxt]}" if nxt else self.verdict())
        return "\n".join(out).rstrip()

    def verdict(self) -> str:
        """What the finished story comes to, in one line (empty while it is not over)."""
        if self.next_step is not None or not self.done:
            return ""
        a, b = self.done[-2], self.done[-1]
        first = f"A's late complete {'accepted' if a.outcome == ACCEPTED else a.outcome}"
        if b.outcome == GONE:
            return f"in the end: {first}; B found the job gone and its work is lost"
        return f"in the end: B's work counts; {first}"
