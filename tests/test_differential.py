"""Differential test: the embedded fakeredis and a real Valkey must run the protocol alike.

What it does. A hypothesis ``RuleBasedStateMachine`` draws random sequences of the protocol's
transitions across three queues: enqueue (and the same id again, in its own or another queue),
enqueue_in, enqueue_at (in the past, the near future, the far future), claim, complete, retry
with caps of 1-3, extend, promote, reap, reprocess, browse, record, malformed or refused calls,
and pauses. Claims go into a bundle, so several workers hold tokens at once and many tokens go
stale (their job was reaped and claimed again, retried, or completed); other rules act for
whoever holds a live lease right now, or reprocess whatever is dead, so the success paths run
as well as the refusals. Every step runs the SAME call, with the SAME minted id and arguments,
first on a fresh embedded server (``connect(fresh=True)``) and then on the session's real Valkey
(the ``valkey_url`` fixture), in database 5, flushed at the start of each example, so the keys
of other tests on that server are never touched.

After every step it asserts:

* the two replies agree: the same value, or the same exception class and wire class (an
  ``extend`` deadline may differ by the step's skew, below);
* a call refused on a server changed nothing there (every queue's sets and rows as before);
* every queue's ``snapshot()`` agrees between the servers: pending and dead exactly (ids, zero
  scores, order), the rows exactly, active and schedule by membership and by score;
* ``drifts()`` of that same atomic snapshot (what ``check()`` computes) is empty on both.

Scores and clocks. A deadline or run-at is "now + n" on the server that ran the step, and the
step reaches the two servers a few ms apart, so these scores cannot be equal. Both servers
read this machine's clock (fakeredis calls ``time.time()``, Valkey the kernel clock; every
snapshot asserts its ``now_ms`` lies inside the call's window on the local clock), so the test
times each call and allows a score written by a step to differ by exactly the span from the
fake's call start to Valkey's call end (+3 ms): usually 1-2 ms, and a machine stall inside the
step widens it honestly. An absolute ``enqueue_at`` run-at must be identical. (Comparing
``score - now_ms`` per server with a fixed tolerance is both looser and flaky: a stall between
the two servers' snapshots shifts every relative score at once; 150 ms was seen on a busy
2-core machine.)

Time decides nothing by chance. Only ``reap`` (deadline <= now) and ``promote`` (run-at <= now)
look at the clock; claim, complete, retry and extend check tokens and set membership only. So
every time-derived score is either SHORT (leases 20-60 ms, delays 0-90 ms, run-ats from 10 s
ago to 90 ms ahead) or FAR (at least 60 s ahead, never due during an example), and before a
reap or promote the test snapshots that queue on both servers and sleeps until every short
score is at least ``MARGIN_MS`` (20 ms) in the past on both clocks. Every short lease is
therefore expired, and every far one live, when a reap runs, on both servers and in every
replay: no deadline is ever near "now" when a clock-reading step runs, and the outcome of a
sequence depends only on its draws. That last point matters twice: the two servers cannot
diverge by a race, and hypothesis sees the same rules enabled and the same bundles filled each
time it replays a prefix (anything else makes it abort with ``FlakyStrategyDefinition``). For
the same reason promote runs with a batch no smaller than the number of jobs an example can
create (the order of due ids with short run-ats depends on timing), and the live-lease rules
pick jobs in id order, not score order. The ``pause`` rule (30-80 ms) lets leases expire and
schedules come due between steps, so complete/retry/extend also meet leases that are expired
but not yet reaped (those still succeed: the protocol fences by reap, not by the clock), and
the waits before reap and promote are often already over.

Budget and reproduction. ``ECHOMQ_DIFF_EXAMPLES`` examples (default 200) of up to
``ECHOMQ_DIFF_STEPS`` steps (default 25); the test prints its seed, how many examples and steps
ran, the calls made and their outcomes, and fails if fewer examples ran than asked. Every run is
seeded (``ECHOMQ_DIFF_SEED``, else a random seed that is printed), so ``ECHOMQ_DIFF_SEED=N``
repeats a run: the same draws, hence the same sequences and outcomes (only the minted ids and
the timings differ). On a failure hypothesis also prints the shrunk step sequence with a note
per step (both servers' replies) and a ``@reproduce_failure(...)`` line; to replay just that
case, put the decorator on the ``Differential`` class.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

import pytest
import redis
from hypothesis import HealthCheck, note, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from echomq_lab import branded, connect, jobs
from echomq_lab.errors import EchoMQError, JobGone, KindRefused, StaleToken, kind_of
from echomq_lab.keyspace import SetName
from echomq_lab.snapshot import Snapshot, drifts, snapshot

EXAMPLES = int(os.environ.get("ECHOMQ_DIFF_EXAMPLES", "200"))
STEPS = int(os.environ.get("ECHOMQ_DIFF_STEPS", "25"))
SEED = int(os.environ.get("ECHOMQ_DIFF_SEED") or random.randrange(2**32))
DB = 5  # the Valkey database this test owns
QUEUES = ("orders", "mail.out", "q-3")
SIDES = ("fake", "valkey")

FAR_MS = 60_000  # every "far" lease, delay or run-at is at least this far ahead
FAR_CUTOFF_MS = 30_000  # a score further ahead than this is far: no step waits for it
MARGIN_MS = 20  # reap/promote run only once every short score is this far in the past
SLACK_MS = 3  # ms rounding and Valkey's cached clock, added to a step's measured skew
CLOCK_SLACK_MS = 50  # a snapshot's now_ms must lie within its call window, give or take this


class Job(NamedTuple):
    """An id that was enqueued (at least once) into ``queue``."""

    queue: str
    id: str


class Claim(NamedTuple):
    """A lease some worker holds, or held: the token may be stale by now."""

    worker: str
    queue: str
    id: str
    token: int


@dataclass(frozen=True)
class Outcome:
    """What one call answered on one server, and when (Unix ms, the shared clock)."""

    value: Any = None
    error: type[BaseException] | None = None
    wire: str | None = None
    message: str = ""
    t0_ms: float = field(default=0.0, compare=False)
    t1_ms: float = field(default=0.0, compare=False)

    def __str__(self) -> str:
        if self.error is None:
            return repr(self.value)
        return f"{self.error.__name__}[{self.wire}] {self.message}"


def run(conn: redis.Redis, fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
    """Call ``fn(conn, *args)``; capture the reply or the exception, and the call window."""
    t0 = time.time() * 1000
    try:
        value = fn(conn, *args)
    except Exception as exc:  # every kind of failure is part of the comparison
        t1 = time.time() * 1000
        wire = kind_of(exc) if isinstance(exc, EchoMQError) else None
        return Outcome(None, type(exc), wire, str(exc).splitlines()[0][:160], t0, t1)
    return Outcome(value, t0_ms=t0, t1_ms=time.time() * 1000)


def same_outcome(a: Outcome, b: Outcome, tolerance: int | None = None) -> bool:
    """True if both raised the same class and wire class, or both returned the same value.

    ``tolerance``: the value is a deadline in ms; the two may differ by that much.
    """
    if (a.error, a.wire) != (b.error, b.wire):
        return False
    if a.error is not None:
        return True
    if tolerance is not None and isinstance(a.value, int) and isinstance(b.value, int):
        return abs(a.value - b.value) <= tolerance
    return bool(a.value == b.value)


def snapshot_differences(a: Snapshot, b: Snapshot, skew: dict[tuple[str, str], int]) -> list[str]:
    """How snapshot ``a`` (fake) and ``b`` (Valkey) of one queue differ; empty if alike.

    ``skew[(queue, id)]`` is how far apart the two servers' clocks could read when the step that
    last wrote the id's time-derived score ran (0 for an absolute run-at).
    """
    out: list[str] = []
    exact: tuple[SetName, ...] = ("pending", "dead")
    timed: tuple[SetName, ...] = ("active", "schedule")
    for name in exact:
        if a.sets[name] != b.sets[name]:
            out.append(f"{name}: fake {a.sets[name]} != valkey {b.sets[name]}")
    for name in timed:
        sa, sb = dict(a.sets[name]), dict(b.sets[name])
        if sa.keys() != sb.keys():
            out.append(f"{name} members: fake {sorted(sa)} != valkey {sorted(sb)}")
            continue
        for job_id, score in sa.items():
            allowed = skew.get((a.queue, job_id), 0)
            if abs(score - sb[job_id]) > allowed:
                out.append(
                    f"{name} score of {job_id}: fake now{score - a.now_ms:+d} ms, valkey "
                    f"now{sb[job_id] - b.now_ms:+d} ms; apart by {score - sb[job_id]:+d} ms, "
                    f"allowed {allowed} ms"
                )
    if a.rows != b.rows:
        for job_id in sorted(set(a.rows) | set(b.rows)):
            if a.rows.get(job_id) != b.rows.get(job_id):
                out.append(
                    f"row {job_id}: fake {a.rows.get(job_id)} != valkey {b.rows.get(job_id)}"
                )
    return [f"[{a.queue}] {line}" for line in out]


def same_content(a: Snapshot, b: Snapshot) -> bool:
    """True if two snapshots of one server hold exactly the same sets and rows."""
    return a.sets == b.sets and a.rows == b.rows


@dataclass(frozen=True)
class Bad:
    """A malformed or refused call: ``build(queue)`` gives (handle, args); ``expect`` the class."""

    label: str
    expect: type[BaseException] | None
    build: Callable[[str], tuple[Callable[..., Any], tuple[Any, ...]]]

    def __repr__(self) -> str:
        return f"Bad({self.label!r})"


def _mint() -> str:
    return branded.mint("JOB")


BAD_CALLS: list[Bad] = [
    Bad("enqueue a 6-character id", ValueError, lambda q: (jobs.enqueue, (q, "JOB123", b"x"))),
    Bad("enqueue a lower-case namespace", ValueError,
        lambda q: (jobs.enqueue, (q, "job" + "0" * 11, b"x"))),
    Bad("enqueue an id above 2^63-1", ValueError,
        lambda q: (jobs.enqueue, (q, "JOB" + "z" * 11, b"x"))),
    Bad("enqueue a non-base62 id", ValueError,
        lambda q: (jobs.enqueue, (q, "JOB0000000000!", b"x"))),
    Bad("enqueue a non-str id", TypeError, lambda q: (jobs.enqueue, (q, 12345, b"x"))),
    Bad("enqueue an ORD id", KindRefused, lambda q: (jobs.enqueue, (q, branded.mint("ORD"), b"x"))),
    Bad("enqueue_in an ORD id", KindRefused,
        lambda q: (jobs.enqueue_in, (q, branded.mint("ORD"), b"x", 10))),
    Bad("enqueue_at an ORD id", KindRefused,
        lambda q: (jobs.enqueue_at, (q, branded.mint("ORD"), b"x", 0))),
    Bad("enqueue into queue ''", ValueError, lambda q: (jobs.enqueue, ("", _mint(), b"x"))),
    Bad("enqueue into queue 'a b'", ValueError, lambda q: (jobs.enqueue, ("a b", _mint(), b"x"))),
    Bad("enqueue into queue 'q{x}'", ValueError,
        lambda q: (jobs.enqueue, ("q{x}", _mint(), b"x"))),
    Bad("enqueue into queue 'a:b'", ValueError, lambda q: (jobs.enqueue, ("a:b", _mint(), b"x"))),
    Bad("enqueue into a 65-character queue", ValueError,
        lambda q: (jobs.enqueue, ("x" * 65, _mint(), b"x"))),
    Bad("enqueue into queue None", TypeError, lambda q: (jobs.enqueue, (None, _mint(), b"x"))),
    Bad("enqueue an int payload", TypeError, lambda q: (jobs.enqueue, (q, _mint(), 42))),
    Bad("enqueue_in a negative delay", ValueError,
        lambda q: (jobs.enqueue_in, (q, _mint(), b"x", -1))),
    Bad("enqueue_in a delay over a year", ValueError,
        lambda q: (jobs.enqueue_in, (q, _mint(), b"x", jobs.MAX_MS + 1))),
    Bad("enqueue_at a negative run-at", ValueError,
        lambda q: (jobs.enqueue_at, (q, _mint(), b"x", -1))),
    Bad("enqueue_at a float run-at", TypeError,
        lambda q: (jobs.enqueue_at, (q, _mint(), b"x", 1.5))),
    Bad("enqueue_at beyond 2^52", ValueError,
        lambda q: (jobs.enqueue_at, (q, _mint(), b"x", jobs.MAX_RUN_AT_MS + 1))),
    Bad("claim with lease 0", ValueError, lambda q: (jobs.claim, (q, 0))),
    Bad("claim with lease True", TypeError, lambda q: (jobs.claim, (q, True))),
    Bad("claim with lease '50'", TypeError, lambda q: (jobs.claim, (q, "50"))),
    Bad("complete an unknown id", JobGone, lambda q: (jobs.complete, (q, _mint(), 1))),
    Bad("complete with token 0", ValueError, lambda q: (jobs.complete, (q, _mint(), 0))),
    Bad("complete with token '1'", TypeError, lambda q: (jobs.complete, (q, _mint(), "1"))),
    Bad("retry an unknown id", StaleToken,
        lambda q: (jobs.retry, (q, _mint(), 1, 0, 3, "boom"))),
    Bad("retry with max_attempts 0", ValueError,
        lambda q: (jobs.retry, (q, _mint(), 1, 0, 0, "boom"))),
    Bad("retry with a negative delay", ValueError,
        lambda q: (jobs.retry, (q, _mint(), 1, -5, 3, "boom"))),
    Bad("retry with an int error", TypeError, lambda q: (jobs.retry, (q, _mint(), 1, 0, 3, 7))),
    Bad("extend an unknown id", JobGone, lambda q: (jobs.extend, (q, _mint(), 1, 50))),
    Bad("extend with lease 0", ValueError, lambda q: (jobs.extend, (q, _mint(), 1, 0))),
    Bad("reprocess an unknown id", JobGone, lambda q: (jobs.reprocess, (q, _mint()))),
    Bad("reprocess a malformed id", ValueError, lambda q: (jobs.reprocess, (q, "JOB-1"))),
    Bad("promote with batch 0", ValueError, lambda q: (jobs.promote, (q, 0))),
    Bad("browse 0 ids", ValueError, lambda q: (jobs.browse, (q, 0))),
    Bad("record a malformed id", ValueError, lambda q: (jobs.record, (q, "JOB"))),
    Bad("record an unknown id", None, lambda q: (jobs.record, (q, _mint()))),
]  # fmt: skip

queues = st.sampled_from(QUEUES)
picks = st.integers(0, 7)  # index (mod the count) into a list read from the last snapshot
payloads = st.one_of(
    st.binary(max_size=12), st.text(max_size=6), st.sampled_from([b"", b"\x00\xff\x00", "é"])
)
leases = st.one_of(st.integers(20, 60), st.integers(20, 60), st.just(FAR_MS))  # mostly short
workers = st.sampled_from(["w1", "w2", "w3"])
# Added to a claim's token: mostly the true token, sometimes a forged or invalid one.
token_shifts = st.sampled_from([0, 0, 0, 0, 1, -1, 2**40])
retry_delays = st.one_of(st.integers(0, 60), st.just(FAR_MS))
caps = st.integers(1, 3)
errors_text = st.one_of(st.text(max_size=8), st.binary(max_size=6))


class Differential(RuleBasedStateMachine):
    """Every rule runs one call on both servers and asserts the replies agree."""

    valkey: ClassVar[redis.Redis]  # set by the test before the run
    #: The embedded side's client: a fresh in-process server, or (set by the browser backend's
    #: test) a client on the browser backend, flushed.
    make_fake: ClassVar[Callable[[], redis.Redis]] = staticmethod(lambda: connect(fresh=True))
    stats: ClassVar[Counter[str]] = Counter()

    enqueued = Bundle("enqueued")
    claims = Bundle("claims")

    def __init__(self) -> None:
        super().__init__()
        self.fake = self.make_fake()
        self.valkey.flushdb()
        self.sides = {"fake": self.fake, "valkey": self.valkey}
        self.before = self._snap_all()  # the last snapshots: equal on both sides but for scores
        self.refused: set[str] = set()  # the sides that refused the last call
        self.skew: dict[tuple[str, str], int] = {}  # allowed score difference per (queue, id)
        self.last: tuple[Outcome, Outcome] = (Outcome(), Outcome())
        self.steps = 0

    # --- plumbing -----------------------------------------------------------------------

    def _snap(self, side: str, queue: str) -> Snapshot:
        """One atomic snapshot, checking that the server reads this machine's clock."""
        t0 = time.time() * 1000
        snap = snapshot(self.sides[side], queue)
        t1 = time.time() * 1000
        assert t0 - CLOCK_SLACK_MS <= snap.now_ms <= t1 + CLOCK_SLACK_MS, (
            f"{side} clock read {snap.now_ms} during a call from {t0:.0f} to {t1:.0f}: "
            "the servers must share this machine's clock"
        )
        return snap

    def _snap_all(self) -> dict[str, dict[str, Snapshot]]:
        return {side: {q: self._snap(side, q) for q in QUEUES} for side in SIDES}

    def _both(self, label: str, fn: Callable[..., Any], *args: Any, timed: bool = False) -> Outcome:
        """Run ``fn(conn, *args)`` on the fake, then on Valkey; assert the replies agree.

        ``label`` starts with the rule's kind ("claim: ..."). ``timed``: the reply is a
        deadline, compared within the step's skew. Returns the fake's outcome.
        """
        fake = run(self.fake, fn, args)
        real = run(self.valkey, fn, args)
        self.last = (fake, real)
        note(f"{label}: fake -> {fake} | valkey -> {real}")
        self._count(label, fake)
        self.refused = {s for s, o in zip(SIDES, self.last, strict=True) if o.error is not None}
        tolerance = self._step_skew() if timed else None
        assert same_outcome(fake, real, tolerance), (
            f"{label}: replies differ: fake {fake} / valkey {real}"
        )
        return fake

    def _step_skew(self) -> int:
        """How far apart (ms) the two servers' clocks could read during the last step.

        The fake's now lies in its call window and Valkey's in its own, so the two differ by at
        most the span from the first call's start to the second call's end.
        """
        fake, real = self.last
        return int(real.t1_ms - fake.t0_ms) + SLACK_MS

    def _wrote_time(self, queue: str, job_id: str, *, absolute: bool = False) -> None:
        """The last step gave ``job_id`` a time-derived score: remember the allowed skew."""
        self.skew[(queue, job_id)] = 0 if absolute else self._step_skew()

    def _count(self, label: str, out: Outcome) -> None:
        kind = label.split(":", 1)[0]
        self.steps += 1
        self.stats["rule " + kind] += 1
        if out.error is not None:
            outcome = out.error.__name__
        elif kind in ("promote", "reap"):
            outcome = "moved" if out.value else "none"
        elif kind == "extend":
            outcome = "extended"
        elif kind == "claim":
            outcome = "empty" if out.value is None else "granted"
        elif isinstance(out.value, str) and kind != "bad_input":
            outcome = out.value
        else:
            return
        self.stats[f"outcome {kind} {outcome}"] += 1

    def _settle(self, queue: str, set_name: SetName) -> None:
        """Sleep until every short score in ``set_name`` is MARGIN_MS in the past on both."""
        for _ in range(20):
            wait = 0
            for side in SIDES:
                snap = self._snap(side, queue)
                for _, score in snap.sets[set_name]:
                    ahead = score - snap.now_ms
                    if ahead <= FAR_CUTOFF_MS:
                        wait = max(wait, ahead + MARGIN_MS + 1)
            if wait <= 0:
                return
            self.stats["guard sleeps"] += 1
            self.stats["guard ms"] += wait
            time.sleep(wait / 1000)
        raise AssertionError(f"{queue} {set_name}: short scores never fell due")

    def _pick_queue(self, pick: int, set_name: SetName) -> str:
        """The pick-th queue whose ``set_name`` is not empty, or of all queues if none is."""
        busy = [q for q in QUEUES if self.before["fake"][q].sets[set_name]] or list(QUEUES)
        return busy[pick % len(busy)]

    def _live(self) -> list[Claim]:
        """The leases held right now, in (queue, id) order (score order depends on timing)."""
        live = []
        for q in QUEUES:
            snap = self.before["fake"][q]
            for job_id in sorted(snap.members("active")):
                live.append(Claim("holder", q, job_id, int(snap.rows[job_id][b"attempts"])))
        return live

    def _dead(self) -> list[Job]:
        return [Job(q, i) for q in QUEUES for i in self.before["fake"][q].members("dead")]

    # --- enqueueing ---------------------------------------------------------------------

    @rule(target=enqueued, queue=queues, payload=payloads)
    def enqueue(self, queue: str, payload: bytes | str) -> Job:
        job_id = branded.mint("JOB")
        out = self._both(f"enqueue: {queue} {job_id}", jobs.enqueue, queue, job_id, payload)
        assert out.value == "enqueued", out
        return Job(queue, job_id)

    @rule(target=enqueued, job=enqueued, payload=payloads, elsewhere=st.booleans())
    def enqueue_again(self, job: Job, payload: bytes | str, elsewhere: bool) -> Any:
        """The same id again: duplicate while its row lives, a new job after complete."""
        queue = QUEUES[(QUEUES.index(job.queue) + 1) % len(QUEUES)] if elsewhere else job.queue
        label = f"enqueue_again: {queue} {job.id}"
        out = self._both(label, jobs.enqueue, queue, job.id, payload)
        return Job(queue, job.id) if out.value == "enqueued" else multiple()

    @rule(
        target=enqueued,
        queue=queues,
        payload=payloads,
        delay=st.one_of(st.integers(0, 90), st.sampled_from([FAR_MS, jobs.MAX_MS])),
    )
    def enqueue_in(self, queue: str, payload: bytes | str, delay: int) -> Job:
        job_id = branded.mint("JOB")
        label = f"enqueue_in: {queue} {job_id} +{delay}ms"
        out = self._both(label, jobs.enqueue_in, queue, job_id, payload, delay)
        assert out.value == "scheduled", out
        self._wrote_time(queue, job_id)
        return Job(queue, job_id)

    @rule(
        target=enqueued,
        queue=queues,
        payload=payloads,
        offset=st.one_of(st.integers(-200, 90), st.sampled_from([-10_000, FAR_MS, "zero", "max"])),
    )
    def enqueue_at(self, queue: str, payload: bytes | str, offset: int | str) -> Job:
        """A run-at in the past, the near future or the far future: one value for both."""
        if offset == "zero":
            run_at = 0
        elif offset == "max":
            run_at = jobs.MAX_RUN_AT_MS
        else:
            assert isinstance(offset, int)
            run_at = int(time.time() * 1000) + offset
        job_id = branded.mint("JOB")
        label = f"enqueue_at: {queue} {job_id} at {run_at} (offset {offset})"
        out = self._both(label, jobs.enqueue_at, queue, job_id, payload, run_at)
        assert out.value == "scheduled", out
        self._wrote_time(queue, job_id, absolute=True)
        return Job(queue, job_id)

    # --- workers ------------------------------------------------------------------------

    def _claim(self, worker: str, queue: str, lease: int) -> Any:
        label = f"claim: {worker} takes from {queue} for {lease}ms"
        out = self._both(label, jobs.claim, queue, lease)
        if out.value is None:
            return multiple()
        self._wrote_time(queue, out.value.id)
        return Claim(worker, queue, out.value.id, out.value.token)

    @rule(target=claims, worker=workers, where=st.one_of(picks, picks, queues), lease=leases)
    def claim(self, worker: str, where: int | str, lease: int) -> Any:
        """A worker leases the oldest pending job of a named queue (maybe an empty one), or
        (``where`` an int) of the where-th queue that has pending jobs, if any has."""
        queue = where if isinstance(where, str) else self._pick_queue(where, "pending")
        return self._claim(worker, queue, lease)

    @rule(claim=claims, shift=token_shifts)
    def complete(self, claim: Claim, shift: int) -> None:
        token = claim.token + shift
        label = f"complete: {claim.worker} {claim.id} token {token}"
        self._both(label, jobs.complete, claim.queue, claim.id, token)

    @rule(claim=claims, shift=token_shifts, delay=retry_delays, cap=caps, error=errors_text)
    def retry(self, claim: Claim, shift: int, delay: int, cap: int, error: str | bytes) -> None:
        token = claim.token + shift
        label = f"retry: {claim.worker} {claim.id} token {token} +{delay}ms cap {cap}"
        out = self._both(label, jobs.retry, claim.queue, claim.id, token, delay, cap, error)
        if out.value == "scheduled":
            self._wrote_time(claim.queue, claim.id)

    @rule(claim=claims, shift=token_shifts, lease=leases)
    def extend(self, claim: Claim, shift: int, lease: int) -> None:
        token = claim.token + shift
        label = f"extend: {claim.worker} {claim.id} token {token} by {lease}ms"
        out = self._both(label, jobs.extend, claim.queue, claim.id, token, lease, timed=True)
        if out.error is None:
            self._wrote_time(claim.queue, claim.id)

    # The bundle rules above mostly meet stale or settled claims; these act for the worker
    # that holds a live lease right now (read from the last snapshot, the same on both).

    @precondition(lambda self: bool(self._live()))
    @rule(
        pick=picks,
        verb=st.sampled_from(["complete", "retry", "extend"]),
        delay=retry_delays,
        cap=caps,
        error=errors_text,
        lease=leases,
    )
    def act_live(
        self, pick: int, verb: str, delay: int, cap: int, error: str | bytes, lease: int
    ) -> None:
        """The holder of a live lease completes, retries (delay, cap, error) or extends it."""
        live = self._live()
        claim = live[pick % len(live)]
        if verb == "complete":
            self.complete(claim, 0)
        elif verb == "retry":
            self.retry(claim, 0, delay, cap, error)
        else:
            self.extend(claim, 0, lease)

    # --- housekeeping -------------------------------------------------------------------

    @rule(pick=picks, batch=st.sampled_from([STEPS, 100]))
    def promote(self, pick: int, batch: int) -> None:
        """Promote a queue that has scheduled jobs (when one has), once nothing is near due.

        The batch is never smaller than the jobs an example can create (one per step).
        """
        queue = self._pick_queue(pick, "schedule")
        self._settle(queue, "schedule")
        self._both(f"promote: {queue} batch {batch}", jobs.promote, queue, batch)

    @rule(pick=picks)
    def reap(self, pick: int) -> None:
        """Reap a queue that has leased jobs (when one has), once no lease is near expiry."""
        queue = self._pick_queue(pick, "active")
        self._settle(queue, "active")
        self._both(f"reap: {queue}", jobs.reap, queue)

    @rule(job=enqueued)
    def reprocess(self, job: Job) -> None:
        self._both(f"reprocess: {job.queue} {job.id}", jobs.reprocess, job.queue, job.id)

    @precondition(lambda self: bool(self._dead()))
    @rule(pick=picks)
    def reprocess_dead(self, pick: int) -> None:
        """Send back a job that is in the morgue right now."""
        dead = self._dead()
        self.reprocess(dead[pick % len(dead)])

    @rule(queue=queues, n=st.integers(1, 5))
    def browse(self, queue: str, n: int) -> None:
        self._both(f"browse: {queue} {n}", jobs.browse, queue, n)

    @rule(job=enqueued)
    def record(self, job: Job) -> None:
        self._both(f"record: {job.queue} {job.id}", jobs.record, job.queue, job.id)

    @rule(bad=st.sampled_from(BAD_CALLS), queue=queues)
    def bad_input(self, bad: Bad, queue: str) -> None:
        fn, args = bad.build(queue)  # built once: the same minted id goes to both servers
        out = self._both(f"bad_input: {bad.label}", fn, *args)
        if bad.expect is None:
            assert out.error is None, f"{bad.label}: expected a reply, got {out}"
        else:
            assert out.error is bad.expect, f"{bad.label}: expected {bad.expect.__name__}: {out}"

    @rule(ms=st.integers(30, 80))
    def pause(self, ms: int) -> None:
        """Let leases expire and schedules come due."""
        note(f"pause: {ms}ms")
        self.refused = set()
        self.steps += 1
        self.stats["rule pause"] += 1
        time.sleep(ms / 1000)

    # --- after every step ---------------------------------------------------------------

    @invariant()
    def servers_agree(self) -> None:
        now = self._snap_all()
        problems: list[str] = []
        for q in QUEUES:
            problems += snapshot_differences(now["fake"][q], now["valkey"][q], self.skew)
        for side in SIDES:
            for q in QUEUES:
                problems += [f"[{q}] {side} drift: {d}" for d in drifts(now[side][q])]
                if side in self.refused and not same_content(self.before[side][q], now[side][q]):
                    problems.append(f"[{q}] {side}: a refused call changed the queue")
        assert not problems, "servers disagree:\n  " + "\n  ".join(problems)
        self.before = now

    def teardown(self) -> None:
        self.fake.close()
        self.stats["examples"] += 1
        self.stats["steps"] += self.steps


def _report(stats: Counter[str], elapsed: float, name: str, examples: int) -> str:
    def listing(prefix: str) -> str:
        items = sorted((k[len(prefix) :], v) for k, v in stats.items() if k.startswith(prefix))
        return ", ".join(f"{k} {v}" for k, v in items)

    return (
        f"differential fakeredis vs {name} (seed {SEED}): {stats['examples']} "
        f"examples run (asked for {examples}, up to {STEPS} steps each), {stats['steps']} "
        f"steps, {elapsed:.1f}s; "
        f"waits for short scores to pass: {stats['guard sleeps']} ({stats['guard ms']} ms)\n"
        f"  calls: {listing('rule ')}\n  outcomes: {listing('outcome ')}"
    )


#: The cluster runs fewer examples (its calls go through the cluster client's routing).
CLUSTER_EXAMPLES = max(1, EXAMPLES // 4)


@pytest.mark.slow
@pytest.mark.alone  # minutes: beside the others, not after them
def test_fakeredis_and_valkey_agree(valkey_url: str) -> None:
    """Random sequences of transitions give the same replies and state on both servers."""
    _agree(connect(valkey_url.rsplit("/", 1)[0] + f"/{DB}"), EXAMPLES, f"Valkey (db {DB})")


@pytest.mark.slow
@pytest.mark.alone  # minutes: beside the others, not after them
def test_fakeredis_and_the_cluster_agree(cluster_url: str) -> None:
    """The same on a 3-primary cluster (db 0, the only one it has); the three queues spread
    over its primaries."""
    _agree(connect(cluster_url), CLUSTER_EXAMPLES, "the cluster")


@pytest.mark.slow
@pytest.mark.alone  # minutes: beside the others, not after them
def test_the_browser_backend_and_valkey_agree(browser_url: str, valkey_url: str) -> None:
    """The same with the browser backend (Pyodide + fengari, as the static site runs the
    scripts) on the embedded side; a quarter of the examples (its Lua runs in JavaScript)."""

    def browser() -> redis.Redis:
        client = connect(browser_url)
        client.flushall()
        return client

    Differential.make_fake = staticmethod(browser)
    try:
        _agree(connect(valkey_url.rsplit("/", 1)[0] + "/6"), max(1, EXAMPLES // 4),
               "Valkey (db 6), the embedded side in the browser backend")
    finally:
        Differential.make_fake = staticmethod(lambda: connect(fresh=True))


def _agree(valkey: redis.Redis, examples: int, name: str) -> None:
    Differential.valkey = valkey
    Differential.stats = Counter()
    machine = seed(SEED)(Differential)
    print(f"\ndifferential on {name}: seed {SEED} (repeat with ECHOMQ_DIFF_SEED={SEED})")
    started = time.monotonic()
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=examples,
                stateful_step_count=STEPS,
                deadline=None,
                print_blob=True,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
    finally:
        print("\n" + _report(Differential.stats, time.monotonic() - started, name, examples))
        valkey.flushdb()
        valkey.close()
    assert Differential.stats["examples"] >= examples, "hypothesis ran fewer examples than asked"
