"""The fence under load: many workers, stalls past the lease, failures, a reaper and a promoter,
with a ledger of every call, audited at the end.

A run enqueues ``jobs`` jobs, then starts ``workers`` worker threads plus a reaper, a promoter
and a sampler. Each worker claims a job, works for a moment (or stalls past its lease), then
completes it or, when the work "fails", retries it (dead at the attempts cap). Every answer the
server gives -- accepted, refused, or lost with the connection -- goes into the :class:`Ledger`.

:func:`audit` then reads the ledger and the queue's final state and checks the fence:

* every enqueued job was completed exactly once, or is dead;
* every accepted complete (and every dead-letter) carried the job's final token;
* no token was ever handed to two leases;
* every refusal was for a token that really was stale: its lease could have expired, a reap
  ran after that, and (for "attempts is N") a later claim had minted token N;
* the sampled drift checks (one atomic snapshot each) found nothing;
* nothing is left on the server but the dead jobs' rows.

Workers survive a server that goes away: a call that raises :class:`errors.ServerUnavailable`
is recorded as a lost reply (it may or may not have happened), the worker backs off (bounded
exponential, with jitter) and carries on. The audit allows for what a lost reply can hide.

Run it from a shell::

    python -m echomq_lab.simulate --jobs 20000 --workers 8 --stall 0.2 --out results/sim.json
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import random
import re
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import fakeredis
import redis

from echomq_lab import branded, errors, jobs, keyspace
from echomq_lab.connection import EMBEDDED, ENV_URL, connect, describe, reaching
from echomq_lab.keyspace import SetName
from echomq_lab.snapshot import Drift, Snapshot, drifts, snapshot

Outcome = Literal["accepted", "refused", "lost-reply"]

#: The verdicts the audit gives, in the order it prints them.
V_ONCE = "every job completed exactly once or dead"
V_FINAL = "every accepted complete carried the job's final token"
V_TOKENS = "no token was handed to two leases"
V_STALE = "every refusal was for a token that really was stale"
V_DRIFT = "check() found no drift at any sampled moment"
V_CLEAN = "nothing left behind but the dead"
V_RUN = "the run finished cleanly (no timeout, no crashed thread)"
VERDICTS: tuple[str, ...] = (V_ONCE, V_FINAL, V_TOKENS, V_STALE, V_DRIFT, V_CLEAN, V_RUN)

#: Slack, in seconds, when comparing the client's clock with the server's ms-rounded TIME.
CLOCK_SLACK_S = 0.003

_ATTEMPTS_IS = re.compile(r"attempts is (\d+)")


# ----------------------------------------------------------------------------------- the ledger


@dataclass(frozen=True)
class Call:
    """One call and the server's answer, as the ledger keeps it.

    Times are seconds since the run began, on the wall clock (the clock the server's TIME reads).
    ``token`` is the token a claim minted or a complete/retry presented (0 when none).
    ``reply`` is what an accepted call answered (``"completed"``, ``"dead"``, a count...), the
    wire class of a refusal (``"EMQSTALE"``...), or ``"EMQDOWN"`` for a lost reply.
    """

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


class Ledger:
    """An append-only, thread-safe list of :class:`Call` records."""

    def __init__(self, t0: float | None = None) -> None:
        self.t0 = time.time() if t0 is None else t0
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self.finished: set[str] = set()

    def now(self) -> float:
        """Seconds since the run began."""
        return time.time() - self.t0

    def record(self, actor: str, verb: str, job_id: str, token: int, outcome: Outcome,
               reply: str, *, started: float, detail: str = "", lease_ms: int = 0,
               stalled: bool = False, after_lost_reply: bool = False) -> Call:
        """Append one call (its end time is now) and return it."""
        ended = self.now()
        with self._lock:
            call = Call(len(self.calls), actor, verb, job_id, token, outcome, reply, detail,
                        started, ended, lease_ms, stalled, after_lost_reply)
            self.calls.append(call)
            if _settles(call):
                self.finished.add(job_id)
        return call


def _settles(call: Call) -> bool:
    """True when ``call`` shows its job finished (so the run can tell when it is done)."""
    if call.verb == "complete" and call.outcome == "accepted":
        return True
    if call.verb == "retry" and call.outcome == "accepted" and call.reply == "dead":
        return True
    return (call.verb == "complete" and call.reply == "EMQGONE" and call.after_lost_reply)


# ------------------------------------------------------------------------------------ the audit


@dataclass(frozen=True)
class Sample:
    """One drift check taken during the run: when, and what it found."""

    at: float
    drifts: tuple[Drift, ...]


@dataclass
class Audit:
    """The verdicts on one run: each verdict's violations, and the figures the audit counted."""

    problems: dict[str, list[str]]
    completed: int
    dead: int
    lost: list[str]
    unfinished: list[str]
    refusals: int
    refusals_by_class: dict[str, int]
    duplicates: int
    resolved_after_lost_reply: int

    @property
    def verdicts(self) -> dict[str, bool]:
        """Each verdict's name and whether it held."""
        return {name: not self.problems.get(name) for name in VERDICTS}

    @property
    def violations(self) -> list[str]:
        """Every violation, verdict by verdict."""
        return [msg for name in VERDICTS for msg in self.problems.get(name, [])]


def _lost_message(n: int, restarts: int) -> str:
    if restarts:
        return (
            f"{n} jobs vanished: the server restarted without persistence (it restarted "
            f"{restarts} time(s) and came back without them; they are neither completed, "
            "dead, nor on the server)"
        )
    return f"{n} jobs vanished: they are neither completed, dead, nor on the server"


def audit(
    calls: Sequence[Call],
    final: Snapshot | None,
    samples: Sequence[Sample] = (),
    *,
    restarts: int = 0,
    notes: Sequence[str] = (),
) -> Audit:
    """Check a run's ledger and its final snapshot against the fence's invariants.

    ``final`` is the queue read after the run (None if it could not be read); ``samples`` are
    the drift checks taken during the run; ``restarts`` is how many times the server was seen
    to restart; ``notes`` are run-level failures (timeout, crashed thread) to report as such.
    """
    problems: dict[str, list[str]] = defaultdict(list)
    by_job: dict[str, list[Call]] = defaultdict(list)
    enqueued: list[str] = []
    reaps: list[Call] = []
    lost_claims = 0
    lost_keys: set[tuple[str, str, int]] = set()
    for call in calls:
        if call.verb == "enqueue" and call.outcome == "accepted":
            if call.reply == "enqueued" or call.after_lost_reply:
                enqueued.append(call.job_id)
        elif call.verb == "reap" and call.outcome == "accepted" and call.reply != "0":
            reaps.append(call)
        elif call.verb == "claim" and call.outcome == "lost-reply":
            lost_claims += 1
        if call.outcome == "lost-reply" and call.job_id:
            lost_keys.add((call.verb, call.job_id, call.token))
        if call.job_id and call.verb != "enqueue":
            by_job[call.job_id].append(call)
    enqueued = list(dict.fromkeys(enqueued))
    reaps.sort(key=lambda c: c.ended)
    reap_ends = [c.ended for c in reaps]

    final_dead = set(final.members("dead")) if final else set()
    on_server = set(final.ids()) if final else set()
    completed = dead = resolved = 0
    lost: list[str] = []
    unfinished: list[str] = []
    refusal_classes: Counter[str] = Counter()
    duplicated: set[str] = set()

    def reaped_between(low: float, high: float) -> bool:
        """True when some reap that returned jobs ran after ``low`` and before ``high``."""
        i = bisect.bisect_left(reap_ends, low)
        return i < len(reaps) and reaps[i].started <= high

    for job_id in enqueued:
        mine = by_job.get(job_id, [])
        claims = [c for c in mine if c.verb == "claim" and c.outcome == "accepted"]
        holders: dict[int, list[Call]] = defaultdict(list)
        for c in claims:
            holders[c.token].append(c)
        for token, held in sorted(holders.items()):
            if len(held) > 1:
                who = ", ".join(c.actor for c in held)
                problems[V_TOKENS].append(f"job {job_id}: token {token} was handed to {who}")
        final_token = max(holders, default=0)
        accepted = [c for c in mine if c.verb == "complete" and c.outcome == "accepted"]
        gone_after_lost = [
            c for c in mine
            if c.verb == "complete" and c.reply == "EMQGONE" and c.after_lost_reply
        ]
        dead_calls = [
            c for c in mine if c.verb == "retry" and c.outcome == "accepted" and c.reply == "dead"
        ]
        # A complete whose reply was lost and whose resend found the row gone retired the job,
        # unless another lease's complete was accepted (then the resend met that one's work).
        # Only the final token's complete can have landed: an older token's first attempt was
        # refused by the fence, so a row it finds gone vanished some other way.
        finishing = list(accepted)
        landed = [c for c in gone_after_lost if c.token == final_token]
        if not accepted and landed:
            finishing = [landed[-1]]
            resolved += 1
        is_dead = bool(dead_calls) or job_id in final_dead
        if job_id in final_dead and not dead_calls:
            last_retry_lost = ("retry", job_id, final_token) in lost_keys
            if last_retry_lost:
                resolved += 1
            else:
                problems[V_ONCE].append(
                    f"job {job_id} is in the dead set but no accepted retry put it there"
                )
        if len(finishing) > 1:
            tokens = ", ".join(str(c.token) for c in finishing)
            problems[V_ONCE].append(
                f"job {job_id} was completed {len(finishing)} times (tokens {tokens})"
            )
        if finishing and is_dead:
            problems[V_ONCE].append(f"job {job_id} was completed and is also dead")
        for c in finishing + dead_calls:
            if c.token != final_token:
                verb = "complete" if c.verb == "complete" else "dead-letter"
                problems[V_FINAL].append(
                    f"job {job_id}: a {verb} with token {c.token} was accepted, "
                    f"but the job's final token is {final_token}"
                )
        if dead_calls and final is not None and job_id not in final_dead:
            if job_id in on_server:
                problems[V_ONCE].append(f"job {job_id} was dead-lettered but left the dead set")
        if finishing:
            completed += 1
        elif is_dead and (final is None or job_id in final_dead):
            dead += 1
        elif final is not None and job_id in on_server:
            unfinished.append(job_id)
        else:
            lost.append(job_id)
            continue  # the refusals of a vanished job are the vanishing's, not the fence's

        finishers = {(c.actor, c.token) for c in finishing}
        for c in mine:
            if c.outcome != "refused" or (c.actor, c.token) in finishers:
                continue
            refusal_classes[c.reply] += 1
            why = _refusal_unproven(c, claims, finishing, lost_claims, reaped_between)
            if why is None:
                duplicated.add(job_id)
            elif c.after_lost_reply and (c.verb, job_id, c.token) in lost_keys:
                pass  # its own earlier attempt may have landed: the resend meets that
            else:
                problems[V_STALE].append(
                    f"job {job_id}: {c.actor}'s {c.verb} with token {c.token} was refused "
                    f"{c.reply} ({c.detail}), but {why}"
                )

    if lost:
        problems[V_ONCE].append(_lost_message(len(lost), restarts))
    if unfinished:
        problems[V_ONCE].append(
            f"{len(unfinished)} jobs were still unfinished on the server when the run stopped"
        )
    for sample in samples:
        if sample.drifts:
            more = f" (and {len(sample.drifts) - 1} more)" if len(sample.drifts) > 1 else ""
            problems[V_DRIFT].append(f"drift at {sample.at:.3f} s: {sample.drifts[0]}{more}")
    if final is None:
        problems[V_CLEAN].append("the final state could not be read from the server")
    else:
        problems[V_CLEAN].extend(_leftovers(final, set(enqueued)))
    problems[V_RUN].extend(notes)
    return Audit(
        problems=dict(problems),
        completed=completed,
        dead=dead,
        lost=lost,
        unfinished=unfinished,
        refusals=sum(refusal_classes.values()),
        refusals_by_class=dict(sorted(refusal_classes.items())),
        duplicates=len(duplicated),
        resolved_after_lost_reply=resolved,
    )


def _refusal_unproven(
    c: Call,
    claims: Sequence[Call],
    finishing: Sequence[Call],
    lost_claims: int,
    reaped_between: Callable[[float, float], bool],
) -> str | None:
    """None when the ledger proves refusal ``c`` was for a stale token; else why not."""
    if c.reply not in ("EMQSTALE", "EMQGONE"):
        return "a refusal of that class is not the fence's (only EMQSTALE or EMQGONE are)"
    lease = next((k for k in claims if k.token == c.token and k.actor == c.actor), None)
    if lease is None:
        return f"no claim ever handed token {c.token} to {c.actor}"
    expiry = lease.started + lease.lease_ms / 1000
    if c.ended + CLOCK_SLACK_S < expiry:
        return f"its lease of {lease.lease_ms} ms could not have expired yet"
    if not reaped_between(expiry - CLOCK_SLACK_S, c.ended):
        return "no reap returned any job between the lease's expiry and the refusal"
    if c.reply == "EMQGONE" or "gone" in c.detail:
        done = any(f.token > c.token and f.started <= c.ended for f in finishing)
        return None if done else "no later lease had retired the job"
    match = _ATTEMPTS_IS.search(c.detail)
    if match:
        minted = int(match.group(1))
        if minted <= c.token:
            return f"the server said attempts is {minted}, not above the token"
        seen = any(k.token == minted and k.started <= c.ended for k in claims)
        if not seen and lost_claims == 0:
            return f"no claim before the refusal had minted token {minted}"
    return None


def _leftovers(final: Snapshot, enqueued: set[str]) -> list[str]:
    found: list[str] = []
    names: tuple[SetName, ...] = ("pending", "active", "schedule")
    for name in names:
        members = final.members(name)
        if members:
            found.append(f"{len(members)} ids left in {name} at the end, e.g. {members[0]}")
    dead = set(final.members("dead"))
    rows = [job_id for job_id in final.rows if job_id not in dead]
    if rows:
        found.append(f"{len(rows)} rows left behind that are not dead, e.g. {rows[0]}")
    strangers = sorted(dead - enqueued)
    if strangers:
        found.append(f"{len(strangers)} dead ids were never enqueued by this run")
    for drift in drifts(final):
        found.append(f"final state drift: {drift}")
    return found


# ----------------------------------------------------------------------------------- the leases


@dataclass(frozen=True)
class Lease:
    """One lease as the timeline draws it: from the claim to its settle (or its abandonment)."""

    worker: str
    job_id: str
    token: int
    start: float
    end: float
    lease_ms: int
    outcome: str  # completed | retried | dead | refused | lost
    stalled: bool
    ran_again: bool  # the job had run before under a lease that was cut off


def leases(calls: Iterable[Call]) -> list[Lease]:
    """Every accepted claim of ``calls`` as a :class:`Lease`, in claim order."""
    settles: dict[tuple[str, str, int], Call] = {}
    claims: list[Call] = []
    for c in calls:
        if c.verb == "claim" and c.outcome == "accepted":
            claims.append(c)
        elif c.verb in ("complete", "retry") and c.outcome != "lost-reply":
            settles[(c.actor, c.job_id, c.token)] = c
    cut: dict[str, int] = {}
    for (_, job_id, token), settle in settles.items():
        if settle.outcome == "refused":
            cut[job_id] = min(token, cut.get(job_id, token))
    out: list[Lease] = []
    for k in sorted(claims, key=lambda c: c.started):
        s = settles.get((k.actor, k.job_id, k.token))
        if s is None:
            outcome, end, stalled = "lost", k.ended + k.lease_ms / 1000, False
        else:
            end, stalled = s.ended, s.stalled
            if s.outcome == "refused":
                outcome = "refused"
            elif s.verb == "complete":
                outcome = "completed"
            else:
                outcome = "dead" if s.reply == "dead" else "retried"
        ran_again = k.job_id in cut and k.token > cut[k.job_id]
        out.append(
            Lease(k.actor, k.job_id, k.token, k.started, end, k.lease_ms, outcome, stalled,
                  ran_again)
        )
    return out


def ran_twice(all_leases: Sequence[Lease]) -> list[str]:
    """Ids of the jobs that ran exactly twice: a first lease that stalled and was refused, then
    a second that completed. The plainest picture of at-least-once under the fence."""
    by_job: dict[str, list[Lease]] = defaultdict(list)
    for lease in all_leases:
        by_job[lease.job_id].append(lease)
    found = []
    for job_id, mine in by_job.items():
        mine.sort(key=lambda le: le.token)
        if [(le.outcome, le.stalled) for le in mine] == [("refused", True), ("completed", False)]:
            found.append(job_id)
    return found


def lease_story(all_leases: Sequence[Lease], job_id: str) -> list[str]:
    """One line per lease of ``job_id``, in token order, in words (no times, no worker names)."""
    words = {
        "completed": "its complete was accepted: the job is retired",
        "retried": "its work failed; its retry was accepted",
        "dead": "its work failed at the attempts cap; its retry dead-lettered the job",
        "refused": "its settle was refused: the token was stale",
        "lost": "it never settled (reply lost, or the run stopped)",
    }
    lines = []
    for lease in sorted((le for le in all_leases if le.job_id == job_id), key=lambda le: le.token):
        how = "stalled past its lease" if lease.stalled else "worked within its lease"
        lines.append(f"token {lease.token}: claimed; {how}; {words[lease.outcome]}")
    return lines


# -------------------------------------------------------------------------------- the simulation


@dataclass(frozen=True)
class Settings:
    """How a run behaves. Times in ms unless named ``_s``; ranges are (low, high)."""

    jobs: int = 1000
    workers: int = 4
    stall: float = 0.2  # chance a lease stalls past its deadline
    fail: float = 0.1  # chance the work fails and is retried
    max_attempts: int = 3
    lease_ms: tuple[int, int] = (50, 200)
    work_ms: tuple[float, float] = (0.0, 2.0)
    overrun_ms: tuple[int, int] = (15, 40)  # how far past the lease a stall runs
    retry_delay_ms: tuple[int, int] = (0, 5)
    reap_every_s: float = 0.005
    promote_every_s: float = 0.005
    sample_every_s: float = 0.25
    timeout_s: float = 600.0
    seed: int = 0
    queue: str = ""  # "" -> a fresh name per run
    payload_bytes: int = 16

    def check(self) -> None:
        """Raise ValueError/TypeError when a setting is out of range."""
        for name in ("jobs", "workers", "max_attempts", "payload_bytes", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if self.jobs < 1 or self.workers < 1 or self.max_attempts < 1:
            raise ValueError("jobs, workers and max_attempts must be at least 1")
        if not 0 <= self.payload_bytes <= 1 << 20:
            raise ValueError("payload_bytes must be between 0 and 1 MiB")
        for name in ("stall", "fail"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} is a probability: between 0 and 1")
        for name in ("lease_ms", "work_ms", "overrun_ms", "retry_delay_ms"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be a range (low, high) with 0 <= low <= high")
        if self.lease_ms[0] < 1:
            raise ValueError("leases must be at least 1 ms")
        for name in ("reap_every_s", "promote_every_s", "sample_every_s", "timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.queue:
            keyspace.check_queue(self.queue)


@dataclass
class Result:
    """The figures of one run (see :meth:`to_dict`), its ledger, samples and audit."""

    settings: Settings
    backend: str
    server: str
    queue: str
    jobs: int
    workers: int
    claims: int
    stalls: int
    failures: int
    refusals: int
    refusals_by_class: dict[str, int]
    duplicates: int
    completed: int
    dead: int
    lost_jobs: int
    unfinished_jobs: int
    violations: list[str]
    verdicts: dict[str, bool]
    elapsed_s: float
    enqueue_s: float
    jobs_per_s: float
    reaped: int
    promoted: int
    drift_samples: int
    connection_errors: int
    lost_replies: int
    resolved_after_lost_reply: int
    restarts_seen: int
    timed_out: bool
    ledger: list[Call] = field(repr=False, default_factory=list)
    samples: list[Sample] = field(repr=False, default_factory=list)
    final: Snapshot | None = field(repr=False, default=None)

    FIGURES = (
        "jobs", "workers", "claims", "stalls", "failures", "refusals", "duplicates",
        "completed", "dead", "lost_jobs", "unfinished_jobs", "reaped", "promoted",
        "drift_samples", "connection_errors", "lost_replies", "restarts_seen", "elapsed_s",
        "jobs_per_s",
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain JSON-ready values (no ledger)."""
        out: dict[str, Any] = {"backend": self.backend, "server": self.server,
                               "queue": self.queue, "cpus": os.cpu_count()}
        for name in self.FIGURES:
            out[name] = getattr(self, name)
        out["enqueue_s"] = self.enqueue_s
        out["refusals_by_class"] = self.refusals_by_class
        out["resolved_after_lost_reply"] = self.resolved_after_lost_reply
        out["timed_out"] = self.timed_out
        out["violation_count"] = len(self.violations)
        out["violations"] = self.violations[:100]
        out["verdicts"] = self.verdicts
        out["settings"] = asdict(self.settings)
        return out

    def leases(self) -> list[Lease]:
        """Every lease of the run, for the timeline."""
        return leases(self.ledger)

    def summary(self) -> str:
        """The figures and verdicts as aligned text lines."""
        lines = [f"{'backend':>20}: {self.backend} ({self.server})"]
        for name in self.FIGURES:
            value = getattr(self, name)
            shown = f"{value:.2f}" if isinstance(value, float) else str(value)
            lines.append(f"{name:>20}: {shown}")
        lines.append(f"{'violations':>20}: {len(self.violations)}")
        for verdict, held in self.verdicts.items():
            lines.append(f"  {'ok ' if held else 'NO '} {verdict}")
        for msg in self.violations[:20]:
            lines.append(f"  violation: {msg}")
        return "\n".join(lines)


class _Backoff:
    """Bounded exponential backoff with jitter: half the step, plus up to half again at random."""

    def __init__(self, rng: random.Random, base_s: float = 0.005, cap_s: float = 0.5) -> None:
        self.rng, self.base_s, self.cap_s, self.n = rng, base_s, cap_s, 0

    def wait(self, stop: threading.Event) -> None:
        step = min(self.cap_s, self.base_s * 2**self.n)
        self.n = min(self.n + 1, 30)
        stop.wait(step / 2 + self.rng.uniform(0, step / 2))

    def reset(self) -> None:
        self.n = 0


ClientFactory = Callable[[], redis.Redis]


def client_factory(url: str | None) -> tuple[ClientFactory, str]:
    """A maker of clients on one server, and that server's description.

    ``url=None`` makes a fresh embedded server for this run; every client shares it. A URL gives
    each call its own client on that server (``connect`` switches redis-py's silent resends off,
    so every lost connection reaches the worker: a silent resend could run a script twice).
    """
    if url is None:
        server = fakeredis.FakeServer()

        def embedded() -> redis.Redis:
            return fakeredis.FakeRedis(server=server, decode_responses=False)

        return embedded, EMBEDDED

    def real() -> redis.Redis:
        return connect(url)

    first = real()
    try:
        where = describe(first)
    finally:
        first.close()
    return real, where


class Simulation:
    """One run. Call :meth:`run` (in any thread); watch :attr:`finished` while it goes."""

    def __init__(self, settings: Settings | None = None, url: str | None = None) -> None:
        self.settings = settings or Settings()
        self.settings.check()
        self.url = url
        self.queue = self.settings.queue or f"sim-{branded.mint()[3:]}"
        self._make, self.backend = client_factory(url)
        self.ledger = Ledger()
        self._stop = threading.Event()  # no new claims
        self._abort = threading.Event()  # drop whatever is in hand, now
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._holding: dict[str, bool] = {}
        self._samples: list[Sample] = []
        self._notes: list[str] = []
        self._run_ids: list[str] = []
        self._payloads: dict[str, bytes] = {}
        self.server = f"fakeredis {fakeredis.__version__}" if url is None else "unknown"

    @property
    def finished(self) -> int:
        """How many jobs the ledger has seen finish (completed or dead) so far."""
        return len(self.ledger.finished)

    def stop(self) -> None:
        """Ask the run to stop early (it then reports what was left unfinished)."""
        self._stop.set()
        self._abort.set()

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def _note(self, text: str) -> None:
        with self._lock:
            self._notes.append(text)

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> Result:
        """Enqueue, work every job to its end (or until the timeout), audit, return the figures."""
        s = self.settings
        deadline = time.monotonic() + s.timeout_s
        conn = self._make()
        start = time.monotonic()
        self._enqueue_all(conn, deadline)
        enqueue_s = time.monotonic() - start
        self._watch_restarts(conn)
        threads = [
            threading.Thread(target=self._guard, args=(f"w{i}", self._worker, i), daemon=True)
            for i in range(s.workers)
        ]
        threads += [
            threading.Thread(target=self._guard, args=(name, body, 0), daemon=True)
            for name, body in (
                ("reaper", self._reaper), ("promoter", self._promoter), ("sampler", self._sampler)
            )
        ]  # fmt: skip
        began = time.monotonic()
        for t in threads:
            t.start()
        timed_out = self._wait_until_done(conn, deadline, threads[: s.workers])
        # No new claims; a worker still in a (stale) lease settles it, unless time is up.
        self._stop.set()
        if timed_out:
            self._abort.set()
        for t in threads[: s.workers]:
            t.join(timeout=5 + (s.lease_ms[1] + s.overrun_ms[1]) / 1000)
        self._abort.set()
        for t in threads:
            t.join(timeout=5)
        elapsed = time.monotonic() - began
        if timed_out:
            self._note(
                f"the run stopped at its timeout of {s.timeout_s:g} s "
                f"with {s.jobs - self.finished} jobs not seen to finish"
            )
        final = self._final_snapshot(conn)
        self._watch_restarts(conn)
        conn.close()
        restarts = max(0, len(set(self._run_ids)) - 1)
        result = audit(self.ledger.calls, final, self._samples, restarts=restarts,
                       notes=self._notes)
        settled = result.completed + result.dead
        c = self._counts
        return Result(
            settings=s,
            backend=self.backend,
            server=self.server,
            queue=self.queue,
            jobs=s.jobs,
            workers=s.workers,
            claims=sum(1 for k in self.ledger.calls
                       if k.verb == "claim" and k.outcome == "accepted"),
            stalls=c["stalls"],
            failures=c["failures"],
            refusals=result.refusals,
            refusals_by_class=result.refusals_by_class,
            duplicates=result.duplicates,
            completed=result.completed,
            dead=result.dead,
            lost_jobs=len(result.lost),
            unfinished_jobs=len(result.unfinished),
            violations=result.violations,
            verdicts=result.verdicts,
            elapsed_s=round(elapsed, 3),
            enqueue_s=round(enqueue_s, 3),
            jobs_per_s=round(settled / elapsed, 1) if elapsed > 0 else 0.0,
            reaped=c["reaped"],
            promoted=c["promoted"],
            drift_samples=len(self._samples),
            connection_errors=c["connection_errors"],
            lost_replies=sum(1 for k in self.ledger.calls if k.outcome == "lost-reply"),
            resolved_after_lost_reply=result.resolved_after_lost_reply,
            restarts_seen=restarts,
            timed_out=timed_out,
            ledger=list(self.ledger.calls),
            samples=list(self._samples),
            final=final,
        )

    def _guard(self, name: str, body: Callable[[str, int], None], index: int) -> None:
        """Run a thread's body; an unexpected exception is a violation, not a silent death."""
        try:
            body(name, index)
        except Exception as exc:  # noqa: BLE001 - reported, and the run goes on
            self._note(f"thread {name} crashed: {type(exc).__name__}: {exc}")
        finally:
            self._holding[name] = False

    def _down(self, name: str) -> None:
        self._count("connection_errors")

    def _client(self, name: str) -> redis.Redis | None:
        """A client of this thread's own, made again and again while the server is away."""
        backoff = _Backoff(random.Random(f"{self.settings.seed}:{name}:connect"))
        while not self._stop.is_set():
            try:
                return self._make()
            except errors.ServerUnavailable:
                self._down(name)
                backoff.wait(self._stop)
        return None

    def _enqueue_all(self, conn: redis.Redis, deadline: float) -> None:
        s = self.settings
        rng = random.Random(f"{s.seed}:payloads")
        backoff = _Backoff(rng)
        for n in range(s.jobs):
            job_id = branded.mint()
            payload = n.to_bytes(4, "big") + rng.randbytes(s.payload_bytes)
            self._payloads[job_id] = payload
            lost = False
            while True:
                started = self.ledger.now()
                try:
                    reply = jobs.enqueue(conn, self.queue, job_id, payload)
                except errors.ServerUnavailable as exc:
                    self._down("producer")
                    self.ledger.record("producer", "enqueue", job_id, 0, "lost-reply", "EMQDOWN",
                                       started=started, detail=str(exc))
                    if time.monotonic() > deadline:
                        raise
                    lost = True
                    backoff.wait(self._stop)
                    continue
                backoff.reset()
                self.ledger.record("producer", "enqueue", job_id, 0, "accepted", reply,
                                   started=started, after_lost_reply=lost)
                break

    def _wait_until_done(
        self, conn: redis.Redis, deadline: float, workers: Sequence[threading.Thread]
    ) -> bool:
        """Block until every job finished, or nothing is left to do, or the deadline; True if
        the deadline ended it."""
        quiet = 0
        next_probe = time.monotonic() + 0.25
        while not self._stop.is_set():
            if self.finished >= self.settings.jobs:
                return False
            if time.monotonic() > deadline:
                return True
            if not any(t.is_alive() for t in workers):
                return False
            if time.monotonic() >= next_probe:
                next_probe = time.monotonic() + 0.25
                quiet = quiet + 1 if self._nothing_left(conn) else 0
                if quiet >= 2:
                    return False
            time.sleep(0.01)
        return False

    def _nothing_left(self, conn: redis.Redis) -> bool:
        """True when no job waits on the server and no worker holds a lease."""
        if any(self._holding.values()):
            return False
        try:
            with reaching(conn):
                pipe = conn.pipeline(transaction=True)
                for name in ("pending", "active", "schedule"):
                    pipe.zcard(keyspace.queue_key(self.queue, name))
                counts = pipe.execute()
        except errors.ServerUnavailable:
            return False
        return not any(counts) and not any(self._holding.values())

    def _final_snapshot(self, conn: redis.Redis) -> Snapshot | None:
        backoff = _Backoff(random.Random(0))
        until = time.monotonic() + 10
        while time.monotonic() < until:
            try:
                return snapshot(conn, self.queue)
            except errors.ServerUnavailable:
                backoff.wait(threading.Event())
        return None

    def _watch_restarts(self, conn: redis.Redis) -> None:
        """Note the server's run_id (a real server changes it when it restarts)."""
        if self.url is None:
            return
        try:
            with reaching(conn):
                info = conn.info("server")
        except (errors.ServerUnavailable, redis.ResponseError):
            return
        run_id = str(info.get("run_id", ""))
        name = str(info.get("server_name", "redis"))
        version = info.get("valkey_version") or info.get("redis_version") or "?"
        self.server = f"{name} {version}"
        if run_id and (not self._run_ids or self._run_ids[-1] != run_id):
            with self._lock:
                self._run_ids.append(run_id)

    # -- the threads ----------------------------------------------------------------------------

    def _worker(self, name: str, index: int) -> None:
        s = self.settings
        rng = random.Random(f"{s.seed}:worker:{index}")
        backoff = _Backoff(rng)
        conn = self._client(name)
        if conn is None:
            return
        q, ledger = self.queue, self.ledger
        try:
            while not self._stop.is_set():
                lease_ms = rng.randint(*s.lease_ms)
                started = ledger.now()
                try:
                    got = jobs.claim(conn, q, lease_ms)
                except errors.ServerUnavailable as exc:
                    self._down(name)
                    ledger.record(name, "claim", "", 0, "lost-reply", "EMQDOWN", started=started,
                                  detail=str(exc), lease_ms=lease_ms)
                    backoff.wait(self._stop)
                    continue
                backoff.reset()
                if got is None:
                    self._stop.wait(rng.uniform(0.001, 0.004))
                    continue
                self._holding[name] = True
                detail = "" if self._payloads.get(got.id) == got.payload else "payload differs"
                ledger.record(name, "claim", got.id, got.token, "accepted", "claimed",
                              started=started, lease_ms=lease_ms, detail=detail)
                if detail:
                    self._note(f"{name} claimed {got.id} and its payload differs from the enqueued")
                stalled = rng.random() < s.stall
                failed = rng.random() < s.fail
                if stalled:
                    self._count("stalls")
                    pause = (lease_ms + rng.uniform(*s.overrun_ms)) / 1000
                else:
                    pause = rng.uniform(*s.work_ms) / 1000
                if self._abort.wait(pause):
                    break  # aborted mid-lease: the lease is abandoned, the audit will say so
                if failed:
                    self._count("failures")
                    delay = rng.randint(*s.retry_delay_ms)
                    self._settle(conn, name, "retry", got.id, got.token, stalled, backoff, delay)
                else:
                    self._settle(conn, name, "complete", got.id, got.token, stalled, backoff)
                self._holding[name] = False
        finally:
            conn.close()

    def _settle(
        self,
        conn: redis.Redis,
        name: str,
        verb: str,
        job_id: str,
        token: int,
        stalled: bool,
        backoff: _Backoff,
        delay_ms: int = 0,
    ) -> None:
        """Complete or retry one lease; resend after a lost reply until the server answers."""
        s, lost = self.settings, False
        while True:
            started = self.ledger.now()
            try:
                reply: str
                if verb == "complete":
                    reply = jobs.complete(conn, self.queue, job_id, token)
                else:
                    reply = jobs.retry(conn, self.queue, job_id, token, delay_ms,
                                       s.max_attempts, f"simulated failure on attempt {token}")
            except (errors.StaleToken, errors.JobGone, errors.WrongState,
                    errors.KindRefused) as exc:
                self.ledger.record(name, verb, job_id, token, "refused", exc.wire_class,
                                   started=started, detail=exc.detail, stalled=stalled,
                                   after_lost_reply=lost)
                return
            except errors.ServerUnavailable as exc:
                self._down(name)
                self.ledger.record(name, verb, job_id, token, "lost-reply", "EMQDOWN",
                                   started=started, detail=str(exc), stalled=stalled)
                lost = True
                backoff.wait(self._abort)
                if self._abort.is_set():
                    return
                continue
            backoff.reset()
            self.ledger.record(name, verb, job_id, token, "accepted", reply, started=started,
                               stalled=stalled, after_lost_reply=lost)
            return

    def _loop(
        self, name: str, every_s: float, step: Callable[[redis.Redis], float | None]
    ) -> None:
        """Run ``step`` every ``every_s`` until the run stops, riding out a lost server.

        A step may return a longer pause than ``every_s`` for the next round.
        """
        rng = random.Random(f"{self.settings.seed}:{name}")
        backoff = _Backoff(rng)
        conn = self._client(name)
        if conn is None:
            return
        try:
            while not self._stop.is_set():
                try:
                    pause = step(conn)
                except errors.ServerUnavailable:
                    self._down(name)
                    backoff.wait(self._stop)
                    continue
                backoff.reset()
                self._stop.wait(max(every_s, pause or 0.0))
        finally:
            conn.close()

    def _reaper(self, name: str, index: int) -> None:
        def step(conn: redis.Redis) -> None:
            while True:
                started = self.ledger.now()
                n = jobs.reap(conn, self.queue)
                if n == 0:
                    return
                self._count("reaped", n)
                self.ledger.record(name, "reap", "", 0, "accepted", str(n), started=started)
                if n < 100:
                    return

        self._loop(name, self.settings.reap_every_s, step)

    def _promoter(self, name: str, index: int) -> None:
        def step(conn: redis.Redis) -> None:
            started = self.ledger.now()
            n = jobs.promote(conn, self.queue, batch=1000)
            if n:
                self._count("promoted", n)
                self.ledger.record(name, "promote", "", 0, "accepted", str(n), started=started)

        self._loop(name, self.settings.promote_every_s, step)

    def _sampler(self, name: str, index: int) -> None:
        def step(conn: redis.Redis) -> float:
            began = time.monotonic()
            snap = snapshot(conn, self.queue)
            found = tuple(drifts(snap))
            took = time.monotonic() - began
            with self._lock:
                self._samples.append(Sample(self.ledger.now(), found))
            self._watch_restarts(conn)
            # A snapshot blocks the server while it reads every row: keep it under ~10%.
            return 10 * took

        self._loop(name, self.settings.sample_every_s, step)


def lab_url() -> str | None:
    """The server :func:`connect` would use: ``ECHOMQ_REDIS_URL`` if set, else None (embedded)."""
    return os.environ.get(ENV_URL) or None


def simulate(url: str | None = None, **settings: Any) -> Result:
    """Run one simulation with :class:`Settings` given as keywords; return its :class:`Result`."""
    return Simulation(Settings(**settings), url=url).run()


# ---------------------------------------------------------------------------------- the command


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m echomq_lab.simulate``: run, print the figures, write them as JSON."""
    p = argparse.ArgumentParser(prog="python -m echomq_lab.simulate", description=__doc__.split(
        "\n\n")[0])
    d = Settings()
    p.add_argument("--jobs", type=int, default=d.jobs)
    p.add_argument("--workers", type=int, default=d.workers)
    p.add_argument("--stall", type=float, default=d.stall, help="chance a lease stalls")
    p.add_argument("--fail", type=float, default=d.fail, help="chance the work fails")
    p.add_argument("--max-attempts", type=int, default=d.max_attempts)
    p.add_argument("--lease-ms", type=int, nargs=2, default=d.lease_ms, metavar=("LOW", "HIGH"))
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--timeout", type=float, default=d.timeout_s, help="seconds, overall")
    p.add_argument("--url", default=None, help="a real server (default: embedded fakeredis)")
    p.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    a = p.parse_args(argv)
    try:
        settings = Settings(jobs=a.jobs, workers=a.workers, stall=a.stall, fail=a.fail,
                            max_attempts=a.max_attempts, lease_ms=tuple(a.lease_ms),
                            seed=a.seed, timeout_s=a.timeout)
        result = Simulation(settings, url=a.url).run()
    except (ValueError, TypeError, errors.EchoMQError) as exc:
        print(f"simulate: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {a.out}")
    return 1 if result.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
