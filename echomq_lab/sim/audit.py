"""The ledger of a run (every call and its answer, in the order they ended), and its audit:
one verdict per invariant of the fence (:data:`VERDICTS`), each with the violations that broke
it. A lost reply hides whether its call ran: the audit allows for that.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from echomq_lab import errors
from echomq_lab.keyspace import SetName
from echomq_lab.snapshot import Drift, Snapshot, drifts

Outcome = Literal["accepted", "refused", "gone", "lost-reply"]
#: A settle turned away: refused by the fence, or its row found gone.
TURNED_AWAY: frozenset[str] = frozenset({"refused", "gone"})


@dataclass(frozen=True)
class Call:
    """One call and its answer: ``accepted`` (``reply``: what the handle returned),
    ``refused`` (its wire class), ``gone`` (no row) or ``lost-reply`` (it may or may not have
    run). Times: wall-clock seconds since the run began. ``token``: minted or presented, or 0."""

    seq: int
    actor: str
    verb: str
    job_id: str
    token: int
    outcome: Outcome
    reply: str
    detail: str = ""
    started: float = 0.0
    ended: float = 0.0
    lease_ms: int = 0
    stalled: bool = False
    after_lost_reply: bool = False


def accepted(call: Call, verb: str) -> bool:
    return call.verb == verb and call.outcome == "accepted"


def dead_lettered(call: Call) -> bool:
    """An accepted retry that moved its job to the dead set."""
    return accepted(call, "retry") and call.reply == "dead"


def gone_on_resend(call: Call) -> bool:
    """A complete, sent again after a lost reply, that found the row gone."""
    return call.verb == "complete" and call.outcome == "gone" and call.after_lost_reply


class Ledger:
    """An append-only, thread-safe list of :class:`Call` records, and the jobs seen to finish;
    times on ``clock`` (the host's, or a run's own)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.t0 = clock()
        self.calls: list[Call] = []
        self.finished: set[str] = set()
        self._lock = threading.Lock()

    def now(self) -> float:
        """Seconds since the ledger began, on the run's clock."""
        return self.clock() - self.t0

    def record(self, actor: str, verb: str, job_id: str, token: int, outcome: Outcome,
               reply: str, *, started: float, detail: str = "", lease_ms: int = 0,
               stalled: bool = False, after_lost_reply: bool = False) -> Call:
        """Append one call, ended now."""
        with self._lock:
            call = Call(len(self.calls), actor, verb, job_id, token, outcome, reply, detail,
                        started, self.now(), lease_ms, stalled, after_lost_reply)
            self.calls.append(call)
            if accepted(call, "complete") or dead_lettered(call) or gone_on_resend(call):
                self.finished.add(job_id)
        return call

    def record_error(self, actor: str, verb: str, job_id: str, token: int,
                     exc: errors.EchoMQError, *, started: float, lease_ms: int = 0,
                     stalled: bool = False, after_lost_reply: bool = False) -> Call:
        """Append a call that raised ``exc``, with :func:`errors.kind_of` as its reply."""
        outcome: Outcome = ("refused" if isinstance(exc, errors.Refusal)
                            else "gone" if isinstance(exc, errors.JobGone) else "lost-reply")
        return self.record(actor, verb, job_id, token, outcome, errors.kind_of(exc),
                           started=started, detail=exc.detail, lease_ms=lease_ms,
                           stalled=stalled, after_lost_reply=after_lost_reply)


V_ONCE = "every job completed exactly once or dead"
V_FINAL = "every accepted complete carried the job's final token"
V_TOKENS = "no token was handed to two leases"
V_STALE = "every refusal was for a token that really was stale"
V_DRIFT = "the drift check found no drift at any sampled moment"
V_CLEAN = "nothing left behind but the dead"
V_ORPHANS = "no job was claimed again after its row was deleted"
V_LEASE = "no job was settled by a worker that had lost its lease"
V_RUN = "the run finished cleanly (no timeout, no crashed thread)"
VERDICTS: tuple[str, ...] = (V_ONCE, V_FINAL, V_TOKENS, V_STALE, V_DRIFT, V_CLEAN, V_ORPHANS,
                             V_LEASE, V_RUN)

Fate = Literal["completed", "dead", "unfinished", "lost", "evicted"]


@dataclass(frozen=True)
class Sample:
    """One drift check taken during the run: when, and what it found."""

    at: float
    drifts: tuple[Drift, ...]


@dataclass
class Audit:
    """Each verdict's violations (empty when it held), and figures. ``refusals``: settles turned
    away, but the finishers'. ``stale_completes_accepted``: settles accepted from a lease no
    longer live; ``settled_after_lease_lost``: the jobs they settled."""

    problems: dict[str, list[str]]
    completed: int
    dead: int
    lost: list[str]
    unfinished: list[str]
    refusals: int
    refusals_by_class: dict[str, int]
    duplicates: int
    resolved_after_lost_reply: int
    evicted: int
    orphans_dropped: int
    stale_completes_accepted: int
    settled_after_lease_lost: int
    resent: int
    resends_refused: int

    @property
    def tokens_minted_twice(self) -> int:
        """How many tokens some job handed to more than one lease."""
        return len(self.problems.get(V_TOKENS, []))

    @property
    def verdicts(self) -> dict[str, bool]:
        return {name: not self.problems.get(name) for name in VERDICTS}

    @property
    def violations(self) -> list[str]:
        return [msg for name in VERDICTS for msg in self.problems.get(name, [])]


class _Run:
    """What the whole ledger says, read once and indexed for the per-job checks."""

    def __init__(self, calls: Sequence[Call], final: Snapshot | None) -> None:
        enqueued: list[str] = []
        self.by_job: dict[str, list[Call]] = defaultdict(list)
        self.dropped: dict[str, list[Call]] = defaultdict(list)  # orphans or malformed members
        for c in calls:
            if accepted(c, "enqueue") and (c.reply == "enqueued" or c.after_lost_reply):
                enqueued.append(c.job_id)
            if c.job_id and c.verb != "enqueue":
                self.by_job[c.job_id].append(c)
            if accepted(c, "drop"):
                self.dropped[c.job_id].append(c)
        self.enqueued = list(dict.fromkeys(enqueued))
        lost = [c for c in calls if c.outcome == "lost-reply"]
        self.lost_claims = sum(1 for c in lost if c.verb == "claim")
        #: (verb, job id, token) of each call whose reply was lost
        self.lost_keys = {(c.verb, c.job_id, c.token) for c in lost if c.job_id}
        #: the reaps that returned jobs, ordered by end
        self.reaps = sorted((c for c in calls if accepted(c, "reap") and c.reply != "0"),
                            key=lambda c: c.ended)
        self.final = final
        self.final_dead = set(final.members("dead")) if final else set()
        self.on_server = set(final.ids()) if final else set()
        #: job id -> the call that deleted its row (the eviction fault)
        self.evictions = {c.job_id: c for c in calls if accepted(c, "evict")}


class _Job:
    """One job's calls, and what they add up to. A complete of the final token re-sent after a
    lost reply that found the row gone retired the job, unless another complete was accepted."""

    def __init__(self, job_id: str, mine: list[Call], run: _Run) -> None:
        self.job_id, self.calls = job_id, mine
        self.claims = [c for c in mine if accepted(c, "claim")]
        self.final_token = max((c.token for c in self.claims), default=0)
        finishing = [c for c in mine if accepted(c, "complete")]
        landed = [c for c in mine if gone_on_resend(c) and c.token == self.final_token]
        self.landed_on_resend = not finishing and bool(landed)
        self.finishing = [landed[-1]] if self.landed_on_resend else finishing
        self.dead_calls = [c for c in mine if dead_lettered(c)]
        self.dead = bool(self.dead_calls) or job_id in run.final_dead
        #: in the final dead set, with no accepted retry seen to put it there
        self.dead_unseen = job_id in run.final_dead and not self.dead_calls
        #: the final lease's retry lost its reply (it may have dead-lettered the job)
        self.retry_lost = ("retry", job_id, self.final_token) in run.lost_keys
        #: the job's ends accepted on a lost reply's evidence
        self.resolved = int(self.landed_on_resend) + int(self.dead_unseen and self.retry_lost)


@dataclass
class _Tally:
    """The audit's running count while it walks the jobs."""

    problems: defaultdict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    fates: defaultdict[Fate, list[str]] = field(default_factory=lambda: defaultdict(list))
    classes: Counter[str] = field(default_factory=Counter)
    duplicated: set[str] = field(default_factory=set)
    resolved: int = 0
    stale_accepted: int = 0  # accepted settles whose lease was no longer the live one
    lease_lost: set[str] = field(default_factory=set)  # jobs settled by a lost lease


def _shared_tokens(job: _Job) -> list[str]:
    """A violation for each token that more than one accepted claim handed out."""
    holders: dict[int, list[str]] = defaultdict(list)
    for c in job.claims:
        holders[c.token].append(c.actor)
    return [f"job {job.job_id}: token {token} was handed to {', '.join(who)}"
            for token, who in sorted(holders.items()) if len(who) > 1]


def _once_problems(job: _Job, run: _Run) -> Iterator[str]:
    """Violations of "completed exactly once or dead" that one job shows on its own."""
    jid = job.job_id
    if job.dead_unseen and not job.retry_lost:
        yield f"job {jid} is in the dead set but no accepted retry put it there"
    if len(job.finishing) > 1:
        tokens = ", ".join(str(c.token) for c in job.finishing)
        yield f"job {jid} was completed {len(job.finishing)} times (tokens {tokens})"
    if job.finishing and job.dead:
        yield f"job {jid} was completed and is also dead"
    left = run.final is not None and jid not in run.final_dead and jid in run.on_server
    if job.dead_calls and left:
        yield f"job {jid} was dead-lettered but left the dead set"


def _fate(job: _Job, run: _Run) -> Fate:
    """How the job ended: completed, evicted, dead, unfinished (on the server), or lost."""
    if job.finishing:
        return "completed"
    if job.job_id in run.evictions:
        return "evicted"
    if job.dead and (run.final is None or job.job_id in run.final_dead):
        return "dead"
    if run.final is not None and job.job_id in run.on_server:
        return "unfinished"
    return "lost"


def _check_refusals(job: _Job, run: _Run, tally: _Tally) -> None:
    """Count the job's turned-away settles, and prove each one was for a stale token."""
    finishers = {(c.actor, c.token) for c in job.finishing}
    for c in job.calls:
        if c.verb not in SETTLES or c.outcome not in TURNED_AWAY or (c.actor, c.token) in finishers:
            continue
        tally.classes[c.reply] += 1
        why = unproven(c, job, run)
        if why is None:
            tally.duplicated.add(job.job_id)
        elif not (c.after_lost_reply and (c.verb, job.job_id, c.token) in run.lost_keys):
            # (a resend whose own first attempt may have landed meets that attempt, not a fence)
            said = (f"found the job gone ({c.detail})" if c.outcome == "gone"
                    else f"was refused {c.reply} ({c.detail})")
            tally.problems[V_STALE].append(
                f"job {job.job_id}: {c.actor}'s {c.verb} with token {c.token} {said}, but {why}")


def _claimed_after_eviction(job: _Job, run: _Run) -> list[str]:
    """A violation for each claim of the job that began after its row was deleted."""
    evicted = run.evictions.get(job.job_id)
    return [f"job {job.job_id}: {c.actor} claimed it with token {c.token} after its row was "
            "deleted (nothing may mint a token for an orphan)"
            for c in job.claims if evicted is not None and c.started > evicted.ended]


def _lease_lost_by(c: Call, job: _Job, run: _Run) -> str | None:
    """How the ledger proves accepted settle ``c`` came from a lost lease, or None: a later claim
    before ``c``, or the id dropped as an orphan after ``c`` (the eviction fault's aside)."""
    own = [k for k in job.claims
           if k.actor == c.actor and k.token == c.token and k.started <= c.started]
    mine = max(own, key=lambda k: k.started) if own else None
    for k in job.claims:  # a later lease: a higher token (its call may have started earlier)
        later = mine is None or (k.token, k.started) > (mine.token, mine.started)
        if k is not mine and k.ended < c.started and later:
            return f"{k.actor} had claimed it with token {k.token} before that"
    dropped_after = any(d.started > c.ended for d in run.dropped.get(job.job_id, []))
    if dropped_after and job.job_id not in run.evictions:
        return "its id was left in a set without its row, and dropped as an orphan"
    return None


def _check_settles(job: _Job, run: _Run, tally: _Tally) -> None:
    """Each accepted complete or dead-letter must carry the final token and come from the live
    lease; count those that did not (what the fence is there to refuse)."""
    for c in job.finishing + job.dead_calls:
        stale = c.token != job.final_token
        if stale:
            verb = "complete" if c.verb == "complete" else "dead-letter"
            tally.problems[V_FINAL].append(f"job {job.job_id}: a {verb} with token {c.token} "
                                           f"was accepted, but the job's final token is "
                                           f"{job.final_token}")
        why = _lease_lost_by(c, job, run)
        if why is not None:
            tally.problems[V_LEASE].append(f"job {job.job_id}: {c.actor}'s {c.verb} with token "
                                           f"{c.token} was accepted, but {why}")
            tally.lease_lost.add(job.job_id)
        tally.stale_accepted += int(stale or why is not None)


def _audit_job(job: _Job, run: _Run, tally: _Tally) -> None:
    """Every per-job check into ``tally`` (a lost or evicted job's refusals are not the fence's)."""
    tally.problems[V_ORPHANS].extend(_claimed_after_eviction(job, run))
    tally.problems[V_TOKENS].extend(_shared_tokens(job))
    tally.problems[V_ONCE].extend(_once_problems(job, run))
    _check_settles(job, run, tally)
    tally.resolved += job.resolved
    fate = _fate(job, run)
    tally.fates[fate].append(job.job_id)
    if fate not in ("lost", "evicted"):
        _check_refusals(job, run, tally)


def _missing(tally: _Tally, restarts: int) -> Iterator[str]:
    """The run-wide violations of "exactly once": jobs lost, jobs left unfinished."""
    lost, unfinished = len(tally.fates["lost"]), len(tally.fates["unfinished"])
    nowhere = "they are neither completed, dead, nor on the server"
    if lost and restarts:
        yield (f"{lost} jobs vanished: the server restarted without persistence (it "
               f"restarted {restarts} time(s) and came back without them; {nowhere})")
    elif lost:
        yield f"{lost} jobs vanished: {nowhere}"
    if unfinished:
        yield f"{unfinished} jobs were still unfinished on the server when the run stopped"


def _sampled_drift(samples: Sequence[Sample], excused: set[str]) -> Iterator[str]:
    """One violation per drift check that found something, naming its first drift. A drift of a
    job whose row the eviction fault deleted (its id waiting to be dropped) is the fault's."""
    for sample in samples:
        found = [d for d in sample.drifts if d.job_id not in excused]
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            yield f"drift at {sample.at:.3f} s: {found[0]}{more}"


def _undropped(run: _Run) -> Iterator[str]:
    """Evicted jobs whose id no transition dropped, though the final state no longer holds it."""
    gone = [j for j in run.evictions if j not in run.dropped and j not in run.on_server]
    if run.final is not None and gone:
        yield (f"{len(gone)} evicted ids left the sets without being dropped as orphans, "
               f"e.g. {gone[0]}")


def _leftovers(final: Snapshot | None, enqueued: set[str]) -> Iterator[str]:
    """What the final state holds beyond the dead jobs' rows (or that it could not be read)."""
    if final is None:
        yield "the final state could not be read from the server"
        return
    names: tuple[SetName, ...] = ("pending", "active", "schedule")
    for name in names:
        members = final.members(name)
        if members:
            yield f"{len(members)} ids left in {name} at the end, e.g. {members[0]}"
    dead = set(final.members("dead"))
    rows = [job_id for job_id in final.rows if job_id not in dead]
    if rows:
        yield f"{len(rows)} rows left behind that are not dead, e.g. {rows[0]}"
    if strangers := dead - enqueued:
        yield f"{len(strangers)} dead ids were never enqueued by this run"
    yield from (f"final state drift: {drift}" for drift in drifts(final))


def audit(calls: Sequence[Call], final: Snapshot | None, samples: Sequence[Sample] = (), *,
          restarts: int = 0, notes: Sequence[str] = ()) -> Audit:
    """Check a run's ledger, its final state (None: unread), its drift ``samples``, its
    server ``restarts`` and run-level failures (``notes``) against the fence's invariants."""
    run, tally = _Run(calls, final), _Tally()
    for job_id in run.enqueued:
        _audit_job(_Job(job_id, run.by_job.get(job_id, []), run), run, tally)
    tally.problems[V_ONCE].extend(_missing(tally, restarts))
    tally.problems[V_DRIFT].extend(_sampled_drift(samples, set(run.evictions)))
    tally.problems[V_ORPHANS].extend(_undropped(run))
    tally.problems[V_CLEAN].extend(_leftovers(final, set(run.enqueued)))
    tally.problems[V_RUN].extend(notes)
    fates, resends = tally.fates, Counter(c.outcome for c in calls if c.verb == "resend")
    return Audit(
        problems={name: tally.problems[name] for name in VERDICTS},
        completed=len(fates["completed"]), dead=len(fates["dead"]), lost=fates["lost"],
        unfinished=fates["unfinished"], evicted=len(fates["evicted"]),
        refusals=sum(tally.classes.values()),
        refusals_by_class=dict(sorted(tally.classes.items())),
        duplicates=len(tally.duplicated), resolved_after_lost_reply=tally.resolved,
        orphans_dropped=len(run.dropped), stale_completes_accepted=tally.stale_accepted,
        settled_after_lease_lost=len(tally.lease_lost),
        resent=resends["accepted"], resends_refused=resends["refused"],
    )  # fmt: skip


#: Ledger times are the client's and the server's TIME is rounded to the ms, so every
#: comparison with a lease deadline allows this much.
CLOCK_SLACK_S = 0.003
#: The verbs that settle a lease (the only calls the fence can turn away), and its answer.
SETTLES = ("complete", "retry")
STALE = "EMQSTALE"
_ATTEMPTS_IS = re.compile(r"attempts is (\d+)")


def unproven(c: Call, job: _Job, run: _Run) -> str | None:
    """None when the ledger proves ``job``'s turned-away call ``c`` was for a stale token (its
    lease could have expired, a reap ran after that, the job had moved on); else why not."""
    claims = job.claims
    if c.outcome != "gone" and c.reply != STALE:
        return f"a refusal of that class is not the fence's (only {STALE} or a gone row are)"
    lease = next((k for k in claims if k.token == c.token and k.actor == c.actor), None)
    if lease is None:
        return f"no claim ever handed token {c.token} to {c.actor}"
    expiry = lease.started + lease.lease_ms / 1000
    if c.ended + CLOCK_SLACK_S < expiry:
        return f"its lease of {lease.lease_ms} ms could not have expired yet"
    first = bisect.bisect_left(run.reaps, expiry - CLOCK_SLACK_S, key=lambda k: k.ended)
    if first == len(run.reaps) or run.reaps[first].started > c.ended:  # no reap in between
        return "no reap returned any job between the lease's expiry and the refusal"
    if c.outcome == "gone" or "gone" in c.detail:
        done = any(f.token > c.token and f.started <= c.ended for f in job.finishing)
        return None if done else "no later lease had retired the job"
    match = _ATTEMPTS_IS.search(c.detail)  # the server named the row's attempts: a later token?
    if not match:
        return None
    minted = int(match.group(1))
    if minted <= c.token:
        return f"the server said attempts is {minted}, not above the token"
    seen = any(k.token == minted and k.started <= c.ended for k in claims)
    if not seen and run.lost_claims == 0:
        return f"no claim before the refusal had minted token {minted}"
    return None
