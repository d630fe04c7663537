"""Two workers, one job: real transitions step by step, the reader predicting B's token and the
answer to A's late complete first (``fence=False``: that complete is the unfenced script's).
Once the reaper has run, the story forks: B claims (the main path, the course's), or A wakes
first, before anyone claims again (:data:`BRANCH`): A's complete goes first through the
course's complete, which checks the token only, on a copy of the job brought to the same point
(:data:`COPY_SUFFIX`), after which the course's claim takes the copy's next turn, and then
through the lab's own complete on the story's job (:data:`LAB_BRANCH`). Once the main path has
passed the fork (B claimed, a wrong guess at B's token included), "A wakes first" is still
offered: it takes a fresh job to the reaper's step by itself, then forks.

A prediction is answered by the server: the first pick takes the step, and its result is held
back until the reader picks the outcome the server gave; each wrong pick gets one line that
says where to look (the row, the lanes, the heading), never the right choice or the sum that
gives it. A step that fails (job taken by someone else, no
server) is not taken."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import redis

from echomq_lab import errors, jobs, keyspace
from echomq_lab.clock import lease_deadline, server_now_ms, wait_out_lease
from echomq_lab.lessons import unfenced
from echomq_lab.lessons.stories import DEFAULT_LEASE_MS, HOLD_MS, new_job, row_of
from echomq_lab.queues import claim_expected, forget
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
#: The fork after the reaper: A wakes before anyone claims the job again and completes through
#: the course's complete (the token only), run on a copy of the job brought to the same point.
BRANCH: tuple[str, str] = ("a_wakes_course", "A wakes first, before anyone claims again: the "
                                             "course's complete, on a copy of the job")
#: Then the same call through the lab's complete, on the story's own job.
LAB_BRANCH: tuple[str, str] = ("a_wakes_lab", "the same call through the lab's complete, on "
                                              "the story's job")
#: The steps of the branched story: A's two early completes, then B claims and completes.
BRANCHED_NAMES: tuple[str, ...] = (*STEP_NAMES[:3], BRANCH[0], LAB_BRANCH[0], "b_claims",
                                   "b_completes")
TITLES: dict[str, str] = dict((*STEPS, BRANCH, LAB_BRANCH))
#: The queue the course's complete runs on in the branch: the story's queue and this suffix.
COPY_SUFFIX = "-course"

#: What a late complete can come to: bare answers, each one a reader could believe.
ACCEPTED, STALE, GONE = "accepted", "refused with EMQSTALE", "refused, the job is gone"
COMPLETES = (ACCEPTED, STALE, GONE)

#: The one sentence naming the lab's addition beyond the course, said once A's second early
#: complete has been answered (never before: it would answer the question).
LAB_ADDITION = ("This check of the lease is the lab's addition beyond the course: the course's "
                "complete compares the token with attempts and nothing else.")


@dataclass(frozen=True)
class Prediction:
    """A question asked before ``step``; the step's outcome is one of ``choices``."""

    step: str
    question: str
    choices: tuple[str, ...]


#: The predictions, by the step they come before. Each names the rule it asks about.
PREDICTIONS: dict[str, Prediction] = {ask.step: ask for ask in (
    Prediction("b_claims", "B claims the job now. Which token does B get?", ("1", "2", "0")),
    Prediction("a_completes", "A wakes up and calls complete with the token it holds. What "
               "does the server say?", COMPLETES),
    Prediction(BRANCH[0], "No one has claimed since the reaper. A calls the course's complete, "
               "which compares the token with attempts and nothing else. What does it say?",
               COMPLETES),
    Prediction(LAB_BRANCH[0], "Now the same call, at the same point, through the lab's "
               "complete on the story's job. What does it say?", COMPLETES),
)}
#: The answers a program gives first when it plays the whole story (it expects the fence).
PROGRAM_GUESSES: dict[str, str] = {"b_claims": "2", "a_completes": STALE, BRANCH[0]: ACCEPTED,
                                   LAB_BRANCH[0]: STALE}


@dataclass(frozen=True)
class StepResult:
    """One step taken; ``outcome`` is the choice of its prediction the server's answer matches,
    ``predicted`` the reader's first pick and ``tries`` every wrong pick, in order."""

    step: str
    title: str
    message: str
    refused: bool = False
    outcome: str = ""
    predicted: str = ""
    at_ms: int = 0
    tries: tuple[str, ...] = ()

    @property
    def prediction_right(self) -> bool | None:
        """Whether the reader's first pick matched the server (None: nothing was predicted)."""
        return None if not self.predicted else self.predicted == self.outcome


@dataclass
class TwoWorkersStory:
    """Two workers, one job (A's lease is ``lease_ms``, B's long): :meth:`start`, then steps;
    a step that asks for a prediction is taken by :meth:`predict`."""

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
    #: The step the reader's first pick took, held back until a pick matches its outcome.
    held: StepResult | None = None
    #: The row and lease deadline as they were before the held step (what is shown meanwhile).
    held_view: tuple[Row | None, int | None] = (None, None)
    #: The wrong picks made for the held step, in order.
    tries: list[str] = field(default_factory=list)
    #: What the course's complete left on the copy of the job (the branch), in one line.
    copy_left: str = ""

    def start(self) -> str:
        """Forget the story's previous job, enqueue a fresh one and rewind; return its id."""
        jobs.check_lease(self.lease_ms)
        if self.job_id:
            forget(self.conn, self.queue, self.job_id)
        self.job_id = new_job(self.conn, self.queue)
        self.started_ms = server_now_ms(self.conn)
        self.token_a = self.token_b = self.deadline_a = None
        self.done, self.branched, self.held, self.tries = [], False, None, []
        self.copy_left = ""
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
        """The branch that may be taken (fence on, not taken yet): at the fork itself (the
        reaper just run, B's token not yet picked), or once the main path has passed it (B
        claimed), when :meth:`branch` first takes a fresh job back to the fork; else None."""
        at_fork = len(self.done) == 3 and self.held is None
        passed = len(self.done) > 3 or self.held is not None
        if not (self.fence and self.job_id) or self.branched or not (at_fork or passed):
            return None
        return BRANCH[0]

    @property
    def at_fork(self) -> bool:
        """True right after the reaper, before B's token is picked (no rewind needed)."""
        return len(self.done) == 3 and self.held is None

    @property
    def waiting_for(self) -> Prediction | None:
        """The prediction the reader owes before the story moves on, or None."""
        return PREDICTIONS.get(self.next_step or "") if self.asks else None

    def branch(self) -> str:
        """Take the fork: A wakes first, before anyone claims again (see :attr:`fork`). Past
        the fork, a fresh job is first taken there by the first three steps (A's lease waited
        out on the server's clock)."""
        if self.fork is None:
            raise ValueError("A can wake first only with the fence on, once the reaper has run")
        again = ""
        if not self.at_fork:
            self.start()
            for name in STEP_NAMES[:3]:
                self.step(name)
            again = (f"a fresh job, {self.job_id}, was taken to the same point (A claimed, its "
                     "lease ran out, the reaper ran); ")
        self.branched = True
        return f"{again}A wakes first, before anyone claims the job again"

    def _must_be_next(self, step: str) -> None:
        if step not in TITLES:
            raise ValueError(f"unknown step {step!r}: the steps are {', '.join(TITLES)}")
        if step == BRANCH[0] and step == self.fork and self.at_fork:
            self.branched = True
        if step != self.next_step:
            nxt = self.next_step or "none (the story is over: start again)"
            raise ValueError(f"step {step!r} is not next; the next step is {nxt}")

    def predict(self, step: str, choice: str) -> str:
        """Pick ``choice`` for ``step`` (it must be next and ask for a prediction). The first
        pick takes the step on the server; a pick that matches the outcome ends the step
        ("Right: ..."), any other is told why in one line ("Not ...") and may be tried again."""
        ask = PREDICTIONS.get(step)
        if ask is None:
            raise ValueError(f"step {step!r} asks for no prediction; {', '.join(PREDICTIONS)} do")
        self._must_be_next(step)
        if choice not in ask.choices:
            raise ValueError(f"{choice!r} is not a choice; the choices are {list(ask.choices)}")
        if choice in self.tries:
            raise ValueError(f"you tried {choice!r} already: pick another")
        if self.held is None:
            row, deadline, _ = self.server_view()
            message, refused, outcome = self._take(step, wait=True)
            self.held_view, self.tries = (row, deadline), []
            self.held = StepResult(step, TITLES[step], message, refused, outcome, choice,
                                   server_now_ms(self.conn))
        held = self.held
        if choice != held.outcome and held.outcome in ask.choices:
            self.tries.append(choice)
            return self.refute(step, choice)
        self.done.append(replace(held, tries=tuple(self.tries)))
        self.held, self.tries = None, []
        return f"Right: {held.message}. {self.why(step)}".strip()

    @property
    def missed(self) -> bool:
        """True while the last pick was wrong and the step waits for another."""
        return self.held is not None

    def expected(self, step: str) -> str:
        """The outcome the rules give ``step`` at this point of the story."""
        return {"b_claims": str((self.token_a or 0) + 1),
                "a_completes": STALE if self.fence else ACCEPTED,
                BRANCH[0]: ACCEPTED, LAB_BRANCH[0]: STALE}.get(step, "")

    def refute(self, step: str, choice: str) -> str:
        """Why not ``choice`` at ``step``, as a pointer to what to look at (the row the server
        holds, the lanes, the heading), in one line that names neither the outcome nor the
        arithmetic that gives it; the reader picks again."""
        held = self.held
        if held is None or held.outcome != self.expected(step):
            return f"Not {choice}: the server did something else. Pick again."
        look = "Pick again."
        if step == "b_claims":
            mine = " That is the token A holds." if choice == str(self.token_a) else ""
            return (f"Not {choice}.{mine} Look at the row under “the server holds” "
                    f"after the reaper, and at what A's claim did to it. {look}")
        if step == "a_completes" and not self.fence:
            return (f"Not {choice}. Read the heading: which complete does A's call go through, "
                    "and what does that copy look at? " + look if choice != GONE else
                    "Not that. Look at the row under “the server holds” just before "
                    f"A's call: who was working on it? {look}")
        if choice == GONE:
            return ("Not that. Look under “the server holds”: is there a row, and "
                    f"what did the reaper change? {look}")
        if step == "a_completes":
            return (f"Not {choice}. Compare the token in A's lane with the row's attempts under "
                    f"“the server holds”. {look}")
        if step == BRANCH[0]:
            return (f"Not {choice}. Compare A's token with the attempts the reaper left, and "
                    f"reread what the question says this complete compares. {look}")
        if step == LAB_BRANCH[0]:
            return (f"Not {choice}. A's token and attempts are as before; look at the lanes and "
                    f"the lease: where is the job's id now? {look}")
        return f"Not {choice}. {look}"

    def why(self, step: str) -> str:
        """Why the server answered ``step`` as it did, once the reader has it right (one
        sentence, capitalised)."""
        said = self._why(step)
        return said[:1].upper() + said[1:]

    def _why(self, step: str) -> str:
        if step == "b_claims":
            return ("claim adds one to attempts and hands the new value out as the token; the "
                    "reaper never touched attempts.")
        if step == BRANCH[0]:
            return ("the token still equals attempts, so the course's complete retired a job A "
                    "no longer held, and the course's claim, which never asks for a row, took "
                    "the id it left behind.")
        if step == LAB_BRANCH[0]:
            return ("the lab's complete also asks that the id be in active (a lease still held), "
                    f"and the reaper took it out. {LAB_ADDITION}")
        if step == "a_completes" and self.fence:
            return "complete compares A's token with the row's attempts; they differ."
        if step == "a_completes":
            return "this complete reads no token: the row and B's lease are deleted under B."
        return ""

    def step(self, name: str, *, wait: bool = True) -> StepResult:
        """Run step ``name``, the next one, if it asks for no prediction (ValueError otherwise:
        :meth:`predict` takes it). With ``wait=False`` ``a_stalls`` raises :class:`NotYet`
        while A's lease has time left."""
        self._must_be_next(name)
        if (ask := self.waiting_for) is not None:
            raise ValueError(f"predict first: {ask.question} ({' / '.join(ask.choices)})")
        result = StepResult(name, TITLES[name], *self._take(name, wait), "",
                            server_now_ms(self.conn))
        self.done.append(result)
        return result

    def settle(self, name: str, first: str) -> StepResult:
        """Answer ``name``'s prediction as a program would: ``first``, then each other choice
        in order until one is right; the step taken."""
        ask = PREDICTIONS[name]
        self.predict(name, first)
        for choice in ask.choices:
            if self.held is None:
                break
            if choice != first and choice not in self.tries:
                self.predict(name, choice)
        return self.done[-1]

    def run_through(self, *, branch: bool = False) -> str:
        """Play the whole story (``branch``: A wakes first) on a fresh job, picking
        :data:`PROGRAM_GUESSES` first; return its log."""
        self.start()
        for name in BRANCHED_NAMES if branch and self.fence else STEP_NAMES:
            if name in PREDICTIONS and self.asks:
                self.settle(name, PROGRAM_GUESSES[name])
            else:
                self.step(name)
        return self.log_text()

    def replay(self) -> str:
        """Play the whole story on a fresh job, asking for no prediction; return its log."""
        self.asks = False
        return self.run_through()

    def server_view(self) -> tuple[Row | None, int | None, int]:
        """The story's row, its lease deadline and the server's now (no job yet: no row; a held
        step: the row and deadline as they were before it)."""
        now = server_now_ms(self.conn)
        if not self.job_id:
            return None, None, now
        if self.held is not None:
            return (*self.held_view, now)
        row = row_of(self.conn, self.queue, self.job_id)
        return row, lease_deadline(self.conn, self.queue, self.job_id), now

    def lease_left_ms(self) -> int | None:
        """Time left on the lease by the server's clock (below 0 once run out; None: no lease)."""
        _, deadline, now = self.server_view()
        return None if deadline is None else deadline - now

    def believes(self, who: str) -> str:
        """What worker ``who`` ("A" or "B") believes, in one line."""
        taken = {r.step: r for r in self.done}
        claimed = "a_claims" if who == "A" else "b_claims"
        token = self.token_a if who == "A" else self.token_b
        settle = [r for r in self.done if r.step == f"{who.lower()}_completes"
                  or (who == "A" and r.step in (BRANCH[0], LAB_BRANCH[0]))]
        if claimed not in taken or token is None:
            return f"{who} has not claimed the job"
        if not settle:
            return f"{who} holds the job with token {token} and is working on it"
        if settle[-1].refused:
            return f"{who} was told its work does not count ({settle[-1].outcome})"
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
            noun = "job" if count == 1 else "jobs"
            return (f"reap returned {count} {noun} to pending; state={state}, "
                    f"attempts={attempts} (untouched)", False, "")
        if name == BRANCH[0]:
            return self._complete_on_copy()
        if name == LAB_BRANCH[0]:
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

    @property
    def copy_queue(self) -> str:
        """The queue of the copy the course's complete runs on."""
        return self.queue + COPY_SUFFIX

    def _complete_on_copy(self) -> tuple[str, bool, str]:
        """A's early complete through the course's complete (the token only), on a copy of the
        job brought by real transitions to the story's point (claimed once, its lease run out,
        reaped); then the next claim on the copy's queue, to show what was left behind."""
        assert self.token_a is not None
        queue = self.copy_queue
        copy_id = new_job(self.conn, queue, fresh=True)
        for _ in range(self.token_a):
            claim_expected(self.conn, queue, copy_id, 1)
            wait_out_lease(self.conn, queue, copy_id)
            jobs.reap(self.conn, queue)
        try:
            unfenced.complete_token_only(self.conn, queue, copy_id, self.token_a)
        except errors.StaleToken as exc:
            return f"A refused: {exc} (on the copy; the row is untouched)", True, STALE
        except errors.JobGone as exc:
            return f"A refused: {exc}", True, GONE
        pending = self.conn.zscore(keyspace.queue_key(queue, "pending"), copy_id) is not None
        claimed = unfenced.claim_course(self.conn, queue, HOLD_MS)
        if claimed is None:
            took = "the course's claim then found nothing pending"
        elif claimed.id == copy_id:
            payload = (f"{len(claimed.payload)} bytes of payload" if claimed.payload
                       else "no payload")
            took = (f"the course's claim then handed that id out again, with token "
                    f"{claimed.token} and {payload}: a row made anew")
        else:
            took = f"the course's claim then handed out {claimed.id}"
        self.copy_left = (f"the row was deleted while the id {'stayed' if pending else 'was not'}"
                          f" in pending; {took}")
        return (f"A's complete with token {self.token_a} was accepted by the course's "
                f"complete, on a copy of the job: {self.copy_left}", False, ACCEPTED)

    def _complete_reaped(self) -> tuple[str, bool, str]:
        """A completes on its reaped lease through the lab's complete: its token still equals
        the row's attempts, but the id is no longer in active, so the lease is gone."""
        assert self.token_a is not None
        try:
            jobs.complete(self.conn, self.queue, self.job_id, self.token_a)
        except errors.StaleToken as exc:
            return f"A refused: {exc} (the row is untouched)", True, STALE
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
        return ("fence on: complete compares the token with the row's attempts" if self.fence
                else f"fence off: A's late complete goes through the {unfenced.LABEL}")

    def log_text(self) -> str:
        """The story as plain text: each step taken with its outcome, preceded by the
        prediction it asked for, the picks made and whether the first was right."""
        out = [self.heading()]
        for i, result in enumerate(self.done):
            if result.predicted:
                verdict = "as predicted" if result.prediction_right else "not as predicted"
                picks = " then ".join(repr(p) for p in (*result.tries, result.outcome))
                out.append(f"   predict: {PREDICTIONS[result.step].question} -> {picks}; "
                           f"the server: {result.outcome!r} ({verdict})")
            mark = "refused" if result.refused else "done"
            out.append(f"{i + 1}. {result.title} [{mark}] {result.message}")
        nxt = self.next_step
        out.append(f"next: {TITLES[nxt]}" if nxt else self.verdict())
        return "\n".join(out).rstrip()

    def verdict(self) -> str:
        """What the finished story comes to, in one line (empty while it is not over)."""
        if self.next_step is not None or not self.done:
            return ""
        by = {r.step: r for r in self.done}
        b = self.done[-1]
        if LAB_BRANCH[0] in by:
            return ("in the end: the course's complete let A retire a job it no longer held, "
                    "and the course's claim handed its id out again on a row made anew; the "
                    f"lab's {by[LAB_BRANCH[0]].outcome}, and B's work counts")
        a = by["a_completes"]
        first = f"A's late complete {a.outcome}"
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
        if LAB_BRANCH[0] in by:
            happened += ["the reaper returned the job to pending",
                         f"A woke before anyone claimed again. The course's complete, on a copy "
                         f"of the job, accepted token {self.token_a}: {self.copy_left}",
                         f"the lab's complete with token {self.token_a}: "
                         f"{by[LAB_BRANCH[0]].outcome}, the id no longer in active",
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
