"""Two workers, one job: real transitions step by step, the reader predicting B's token and the
answer to A's late complete first (``fence=False``: that complete is the unfenced script's).
Once the reaper has run, the story forks: B claims (the main path), or A wakes first, before
anyone claims again, and completes on its reaped lease (:data:`BRANCH`, with the fence only).
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
#: The branch at the fork after the reaper: A wakes before anyone claims the job again.
BRANCH: tuple[str, str] = ("a_wakes_early", "A wakes first, before anyone claims again, and "
                                            "completes with the token it holds")
#: The steps of the branched story: A's early complete, then B claims and completes.
BRANCHED_NAMES: tuple[str, ...] = (*STEP_NAMES[:3], BRANCH[0], "b_claims", "b_completes")
TITLES: dict[str, str] = dict((*STEPS, BRANCH))

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
    Prediction(BRANCH[0], "A wakes now. No one has claimed since the reaper, so A's token still "
               "equals the row's attempts. A calls complete: what does the server say?",
               (ACCEPTED, STALE, GONE)),
)}
#: The answers a program gives when it plays the whole story (it expects the fence).
PROGRAM_GUESSES: dict[str, str] = {"b_claims": "2", "a_completes": STALE, BRANCH[0]: STALE}


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
    #: False: the story never waits for a prediction (a replay the reader only watches).
    asks: bool = field(default=True, kw_only=True)
    branched: bool = False
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
        self.done, self.predicted, self.branched = [], {}, False
        return self.job_id

    @property
    def path(self) -> tuple[str, ...]:
        """The steps of this run: :data:`STEP_NAMES`, or :data:`BRANCHED_NAMES` once branched."""
        return BRANCHED_NAMES if self.branched else STEP_NAMES

    @property
    def next_step(self) -> str | None:
        """The step that may run now, or None when the story is over (or not started)."""
        path = self.path
        return path[len(self.done)] if self.job_id and len(self.done) < len(path) else None

    @property
    def fork(self) -> str | None:
        """The branch that may be taken instead of the next step (fence on, the reaper just
        run, nothing predicted yet), or None."""
        at_fork = not self.branched and len(self.done) == 3 and not self.predicted
        return BRANCH[0] if self.fence and self.job_id and at_fork else None

    @property
    def waiting_for(self) -> Prediction | None:
        """The prediction the reader owes before the next step, or None."""
        nxt = self.next_step or ""
        return None if nxt in self.predicted or not self.asks else PREDICTIONS.get(nxt)

    def branch(self) -> str:
        """Take the fork: A wakes first, before anyone claims again (see :attr:`fork`)."""
        if self.fork is None:
            raise ValueError("A can wake first only with the fence on, right after the reaper "
                             "and before B's token is predicted")
        self.branched = True
        return "A wakes first, before anyone claims the job again"

    def _must_be_next(self, step: str) -> None:
        if step not in TITLES:
            raise ValueError(f"unknown step {step!r}: the steps are {', '.join(TITLES)}")
        if step == BRANCH[0] and step == self.fork:
            self.branched = True
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
        result = StepResult(name, TITLES[name], *self._take(name, wait),
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

    def replay(self) -> str:
        """Play the whole story on a fresh job, asking for no prediction; return its log."""
        self.asks = False
        self.start()
        for name in STEP_NAMES:
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
        settle = [r for r in self.done
                  if r.step == f"{who.lower()}_completes" or (who == "A" and r.step == BRANCH[0])]
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
        if name == BRANCH[0]:
            return self._complete_reaped()
        if name == "b_claims":
            self.token_b = self._claim("B", HOLD_MS)
            still = "" if self.branched else f", and A still holds token {self.token_a}"
            return (f"B holds token {self.token_b}; the row's attempts is now {self.token_b}"
                    f"{still}", False, str(self.token_b))
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

    def _complete_reaped(self) -> tuple[str, bool, str]:
        """A completes on its reaped lease (always the fenced complete): its token still equals
        the row's attempts, but the id is no longer in active, so the lease is gone."""
        assert self.token_a is not None
        try:
            jobs.complete(self.conn, self.queue, self.job_id, self.token_a)
        except errors.StaleToken as exc:
            return (f"A refused: {exc} (the token matches attempts, but the reaper took the id "
                    "out of active; the row is untouched)", True, STALE)
        except errors.JobGone as exc:
            return f"A refused: {exc}", True, GONE
        return f"A completed with token {self.token_a}: the row is gone", False, ACCEPTED

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
        out.append(f"next: {TITLES[nxt]}" if nxt else self.verdict())
        return "\n".join(out).rstrip()

    def verdict(self) -> str:
        """What the finished story comes to, in one line (empty while it is not over)."""
        if self.next_step is not None or not self.done:
            return ""
        a = next(r for r in self.done if r.step in ("a_completes", BRANCH[0]))
        b = self.done[-1]
        if a.step == BRANCH[0]:
            return (f"in the end: A, waking after the reaper, {a.outcome} (its lease was gone); "
                    "B's work counts")
        first = f"A's late complete {'accepted' if a.outcome == ACCEPTED else a.outcome}"
        if b.outcome == GONE:
            return f"in the end: {first}; B found the job gone and its work is lost"
        return f"in the end: B's work counts; {first}"

    def aftermath(self) -> tuple[list[str], list[str]]:
        """Once the story is over: what happened, and what the system now believes (each a few
        short lines); two empty lists while it runs."""
        if self.next_step is not None or not self.done:
            return [], []
        by = {r.step: r for r in self.done}
        lease = f"{self.lease_ms / 1000:g} s"
        happened = [f"A claimed with token {self.token_a} and stalled; its {lease} lease ran out"]
        if BRANCH[0] in by:
            happened += ["the reaper returned the job to pending",
                         f"A woke before anyone claimed again: its complete with token "
                         f"{self.token_a} was refused EMQSTALE, the id no longer in active",
                         f"B claimed with token {self.token_b}, and its complete retired the job"]
            return happened, ["the job is done, finished by B, the worker that held its lease",
                              "A was told at once that its work does not count"]
        happened.append(f"the reaper returned the job; B claimed it with token {self.token_b}")
        a, b = by["a_completes"], by["b_completes"]
        if a.outcome == ACCEPTED and b.outcome == GONE:
            happened += [f"A's late complete with token {self.token_a} went through: the row and "
                         "B's lease were deleted while B was still working",
                         f"B's complete with token {self.token_b} found no row: B's finished "
                         "work was thrown away"]
            return happened, [
                "the job is done, on the word of A, whose lease had run out before it reported",
                "B, the one worker holding the lease, is told the job is gone",
                "if A's result was stale or half made, nothing will ever run the job again"]
        happened += [f"A's late complete with token {self.token_a}: {a.outcome}; nothing was "
                     "written" if a.refused else f"A's late complete: {a.outcome}",
                     f"B's complete with token {self.token_b}: "
                     f"{'accepted, the job retired' if not b.refused else b.outcome}"]
        believed = (["the job is done, finished by B, the worker that held its lease",
                     "A knows its work does not count and can drop its result"]
                    if a.refused and not b.refused else [self.verdict()])
        return happened, believed
