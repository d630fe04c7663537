"""One simulated run: how it behaves, who acts in it, and the figures it ends with.

* :class:`Settings` -- sizes, chances, lease and work times, the faults; :meth:`Settings.check`
  refuses a setting out of range before anything starts;
* the actors -- a producer, the workers, a reaper, a promoter, a sampler and, when asked, the
  faults (an evictor, a re-sender); each is a function of the run's shared :class:`RunState`,
  its thread name and index, and every answer the server gives goes into the ledger;
* :class:`Simulation` (and :func:`simulate`) -- enqueue, let the actors loose, stop, read the
  queue's final state and hand ledger and state to :func:`.audit.audit`;
* :class:`Result` -- the figures of a run, its ledger and its verdicts.

A worker claims a job, works for a moment (or stalls past its lease), then completes it or, when
the work "fails", retries it (dead at the attempts cap). Actors survive a server that goes away:
a call that raises :class:`errors.ServerUnavailable` is recorded as a lost reply, the actor backs
off and carries on.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import fakeredis
import redis

from echomq_lab import branded, errors, jobs, keyspace, unfenced
from echomq_lab.connection import EMBEDDED, ENV_URL, connect, describe, reaching
from echomq_lab.sim.audit import Audit, Sample, audit
from echomq_lab.sim.follow import Lease, leases
from echomq_lab.sim.ledger import Call, Ledger, accepted
from echomq_lab.snapshot import Drift, Snapshot, drifts, snapshot

# ---- settings: how a run behaves -----------------------------------------------------------

_INTS = ("jobs", "workers", "max_attempts", "payload_bytes", "seed", "evictions")
_CHANCES = ("stall", "fail")
_RANGES = ("lease_ms", "work_ms", "overrun_ms", "retry_delay_ms")
_PERIODS = ("reap_every_s", "promote_every_s", "sample_every_s", "timeout_s", "evict_every_s")
_SWITCHES = ("fence", "resend", "resend_guard")


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
    evictions: int = 0  # job rows deleted under live leases during the run (the eviction fault)
    evict_every_s: float = 0.01
    # False: the workers' completes skip the fence (the unfenced complete, a demonstration)
    fence: bool = True
    resend: bool = False  # the producer re-sends each evicted id at once (the re-send fault)
    # False: the re-send uses the unguarded enqueue (a demonstration) instead of jobs.enqueue
    resend_guard: bool = True

    def check(self) -> None:
        """Raise ValueError/TypeError when a setting is out of range."""
        for name in _SWITCHES:
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False")
        if self.resend and not self.evictions:
            raise ValueError("resend re-sends evicted ids: it needs evictions above 0")
        self._check_counts()
        self._check_chances_and_ranges()
        for name in _PERIODS:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.queue:
            keyspace.check_queue(self.queue)

    def _check_counts(self) -> None:
        """The whole-number settings: ints (not bools), and in range."""
        for name in _INTS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if self.jobs < 1 or self.workers < 1 or self.max_attempts < 1:
            raise ValueError("jobs, workers and max_attempts must be at least 1")
        if self.evictions < 0:
            raise ValueError("evictions must not be negative")
        if not 0 <= self.payload_bytes <= 1 << 20:
            raise ValueError("payload_bytes must be between 0 and 1 MiB")

    def _check_chances_and_ranges(self) -> None:
        """Chances between 0 and 1; ranges ordered and not negative; leases of at least 1 ms."""
        for name in _CHANCES:
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} is a probability: between 0 and 1")
        for name in _RANGES:
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be a range (low, high) with 0 <= low <= high")
        if self.lease_ms[0] < 1:
            raise ValueError("leases must be at least 1 ms")


# ---- clients, and the backoff they use while the server is away ----------------------------

ClientFactory = Callable[[], redis.Redis]


class Backoff:
    """Bounded exponential backoff with jitter: half the step, plus up to half again at random."""

    def __init__(self, rng: random.Random, base_s: float = 0.005, cap_s: float = 0.5) -> None:
        self.rng, self.base_s, self.cap_s, self.n = rng, base_s, cap_s, 0

    def wait(self, stop: threading.Event) -> None:
        """Wait one step (doubling each time, up to the cap), or until ``stop`` is set."""
        step = min(self.cap_s, self.base_s * 2**self.n)
        self.n = min(self.n + 1, 30)
        stop.wait(step / 2 + self.rng.uniform(0, step / 2))

    def reset(self) -> None:
        """Start again from the shortest step (the server answered)."""
        self.n = 0


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


# ---- what the threads of one run share -----------------------------------------------------

class RunState:
    """The shared state of one run. ``stop`` ends new claims; ``abort`` drops leases in hand.

    Every method is safe to call from any of the run's threads.
    """

    def __init__(self, settings: Settings, queue: str, make: ClientFactory,
                 url: str | None) -> None:
        self.settings, self.queue, self.make, self.url = settings, queue, make, url
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.abort = threading.Event()
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.holding: dict[str, bool] = {}
        self.samples: list[Sample] = []
        self.notes: list[str] = []
        self.payloads: dict[str, bytes] = {}
        self.run_ids: list[str] = []
        self.server = f"fakeredis {fakeredis.__version__}" if url is None else "unknown"

    @property
    def finished(self) -> int:
        """How many jobs the ledger has seen finish (completed or dead) so far."""
        return len(self.ledger.finished)

    @property
    def restarts(self) -> int:
        """How many times the server was seen to restart (its run_id changed)."""
        return max(0, len(set(self.run_ids)) - 1)

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``name``."""
        with self.lock:
            self.counts[name] += n

    def note(self, text: str) -> None:
        """Keep a run-level failure (it becomes a violation of the run verdict)."""
        with self.lock:
            self.notes.append(text)

    def down(self, name: str) -> None:
        """Count one call of thread ``name`` that found the server unreachable."""
        self.count("connection_errors")

    def sample(self, found: tuple[Drift, ...]) -> None:
        """Keep one drift check's findings, stamped with the ledger's clock."""
        with self.lock:
            self.samples.append(Sample(self.ledger.now(), found))

    def client(self, name: str) -> redis.Redis | None:
        """A client of thread ``name``'s own, made again and again while the server is away;
        None if the run stopped first."""
        backoff = Backoff(random.Random(f"{self.settings.seed}:{name}:connect"))
        while not self.stop.is_set():
            try:
                return self.make()
            except errors.ServerUnavailable:
                self.down(name)
                backoff.wait(self.stop)
        return None

    def watch_restarts(self, conn: redis.Redis) -> None:
        """Note the server's name and run_id (a real server changes its run_id on restart)."""
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
        if run_id and (not self.run_ids or self.run_ids[-1] != run_id):
            with self.lock:
                self.run_ids.append(run_id)


# ---- the actors: producer, workers, housekeepers, faults -----------------------------------
# The evictor is the eviction fault: another client deleting job rows under live leases (as a
# server under maxmemory with allkeys-lru would); with ``resend`` the producer then sends each
# of those ids again (the re-send fault). Each id a claim, reap or promote drops as an orphan
# goes into the ledger as a ``drop`` call, so the audit can show no token was minted for it.

Step = Callable[[redis.Redis], float | None]


def _enqueue_one(run: RunState, conn: redis.Redis, job_id: str, payload: bytes,
                 deadline: float, backoff: Backoff) -> None:
    """Enqueue one job, resending after a lost reply until the server answers or time is up."""
    lost = False
    while True:
        started = run.ledger.now()
        try:
            reply = jobs.enqueue(conn, run.queue, job_id, payload)
        except errors.ServerUnavailable as exc:
            run.down("producer")
            run.ledger.record_error("producer", "enqueue", job_id, 0, exc, started=started)
            if time.monotonic() > deadline:
                raise
            lost = True
            backoff.wait(run.stop)
            continue
        backoff.reset()
        run.ledger.record("producer", "enqueue", job_id, 0, "accepted", reply,
                          started=started, after_lost_reply=lost)
        return


def enqueue_all(run: RunState, conn: redis.Redis, deadline: float) -> None:
    """Enqueue the run's jobs, each with a seeded payload the workers check on claim."""
    s = run.settings
    rng = random.Random(f"{s.seed}:payloads")
    backoff = Backoff(rng)
    for n in range(s.jobs):
        job_id = branded.mint()
        payload = n.to_bytes(4, "big") + rng.randbytes(s.payload_bytes)
        run.payloads[job_id] = payload
        _enqueue_one(run, conn, job_id, payload, deadline, backoff)


def _claim(run: RunState, conn: redis.Redis, name: str, rng: random.Random,
           backoff: Backoff) -> tuple[jobs.Claimed, int] | None:
    """Claim one job with a random lease; None (after a short pause) when none was had."""
    lease_ms = rng.randint(*run.settings.lease_ms)
    started = run.ledger.now()
    try:
        got, dropped = jobs.claim_dropping(conn, run.queue, lease_ms)
    except errors.ServerUnavailable as exc:
        run.down(name)
        run.ledger.record_error(name, "claim", "", 0, exc, started=started, lease_ms=lease_ms)
        backoff.wait(run.stop)
        return None
    backoff.reset()
    record_drops(run, name, dropped, started)
    if got is None:
        run.stop.wait(rng.uniform(0.001, 0.004))
        return None
    run.holding[name] = True
    detail = "" if run.payloads.get(got.id) == got.payload else "payload differs"
    run.ledger.record(name, "claim", got.id, got.token, "accepted", "claimed",
                      started=started, lease_ms=lease_ms, detail=detail)
    if detail:
        run.note(f"{name} claimed {got.id} and its payload differs from the enqueued")
    return got, lease_ms


def record_drops(run: RunState, name: str, dropped: jobs.Dropped, started: float) -> None:
    """One ``drop`` call in the ledger per member a transition dropped (orphan or malformed)."""
    for kind, found in (("orphan", dropped.orphans), ("malformed", dropped.malformed)):
        for member in found:
            job_id = member.decode("ascii", "replace")
            run.ledger.record(name, "drop", job_id, 0, "accepted", kind, started=started)
    run.count("orphans_dropped", dropped.total)


def _send(run: RunState, conn: redis.Redis, verb: str, got: jobs.Claimed, delay_ms: int) -> str:
    """One complete, or one retry after a simulated failure; the handle's reply.

    With ``fence=False`` the complete goes through the unfenced complete (a demonstration that
    checks neither token nor lease); a retry always goes through the fence.
    """
    if verb == "complete":
        complete = jobs.complete if run.settings.fence else unfenced.complete_unfenced
        return complete(conn, run.queue, got.id, got.token)
    return jobs.retry(conn, run.queue, got.id, got.token, delay_ms, run.settings.max_attempts,
                      f"simulated failure on attempt {got.token}")


def settle(run: RunState, conn: redis.Redis, name: str, verb: str, got: jobs.Claimed,
           stalled: bool, backoff: Backoff, delay_ms: int = 0) -> None:
    """Complete or retry one lease; resend after a lost reply until the server answers."""
    lost = False
    while True:
        started = run.ledger.now()
        try:
            reply = _send(run, conn, verb, got, delay_ms)
        except (errors.Refusal, errors.JobGone) as exc:
            run.ledger.record_error(name, verb, got.id, got.token, exc, started=started,
                                    stalled=stalled, after_lost_reply=lost)
            return
        except errors.ServerUnavailable as exc:
            run.down(name)
            run.ledger.record_error(name, verb, got.id, got.token, exc, started=started,
                                    stalled=stalled)
            lost = True
            backoff.wait(run.abort)
            if run.abort.is_set():
                return
            continue
        backoff.reset()
        run.ledger.record(name, verb, got.id, got.token, "accepted", reply, started=started,
                          stalled=stalled, after_lost_reply=lost)
        return


def _work(run: RunState, conn: redis.Redis, name: str, got: jobs.Claimed, lease_ms: int,
          rng: random.Random, backoff: Backoff) -> bool:
    """Work one lease (maybe stalling past it, maybe failing) and settle it; False when the run
    was aborted mid-lease (the lease is abandoned; the audit will say so)."""
    s = run.settings
    stalled = rng.random() < s.stall
    failed = rng.random() < s.fail
    if stalled:
        run.count("stalls")
        pause = (lease_ms + rng.uniform(*s.overrun_ms)) / 1000
    else:
        pause = rng.uniform(*s.work_ms) / 1000
    if run.abort.wait(pause):
        return False
    if failed:
        run.count("failures")
        delay = rng.randint(*s.retry_delay_ms)
        settle(run, conn, name, "retry", got, stalled, backoff, delay)
    else:
        settle(run, conn, name, "complete", got, stalled, backoff)
    run.holding[name] = False
    return True


def worker(run: RunState, name: str, index: int) -> None:
    """Claim, work and settle jobs until the run stops (seeded by the worker's index)."""
    rng = random.Random(f"{run.settings.seed}:worker:{index}")
    backoff = Backoff(rng)
    conn = run.client(name)
    if conn is None:
        return
    try:
        while not run.stop.is_set():
            held = _claim(run, conn, name, rng, backoff)
            if held is not None and not _work(run, conn, name, *held, rng, backoff):
                break
    finally:
        conn.close()


def _loop(run: RunState, name: str, every_s: float, step: Step) -> None:
    """Run ``step`` every ``every_s`` until the run stops, riding out a lost server.

    A step may return a longer pause than ``every_s`` for the next round.
    """
    backoff = Backoff(random.Random(f"{run.settings.seed}:{name}"))
    conn = run.client(name)
    if conn is None:
        return
    try:
        while not run.stop.is_set():
            try:
                pause = step(conn)
            except errors.ServerUnavailable:
                run.down(name)
                backoff.wait(run.stop)
                continue
            backoff.reset()
            run.stop.wait(max(every_s, pause or 0.0))
    finally:
        conn.close()


def reaper(run: RunState, name: str, index: int) -> None:
    """Return expired leases to pending, in rounds of up to 100, every ``reap_every_s``."""

    def step(conn: redis.Redis) -> None:
        while True:
            started = run.ledger.now()
            n, dropped = jobs.reap_dropping(conn, run.queue)
            record_drops(run, name, dropped, started)
            if n:
                run.count("reaped", n)
                run.ledger.record(name, "reap", "", 0, "accepted", str(n), started=started)
            if n + dropped.total < 100:
                return

    _loop(run, name, run.settings.reap_every_s, step)


def promoter(run: RunState, name: str, index: int) -> None:
    """Move due retried jobs back to pending every ``promote_every_s``."""

    def step(conn: redis.Redis) -> None:
        started = run.ledger.now()
        n, dropped = jobs.promote_dropping(conn, run.queue, batch=1000)
        record_drops(run, name, dropped, started)
        if n:
            run.count("promoted", n)
            run.ledger.record(name, "promote", "", 0, "accepted", str(n), started=started)

    _loop(run, name, run.settings.promote_every_s, step)


def sampler(run: RunState, name: str, index: int) -> None:
    """Take an atomic snapshot and run the drift check every ``sample_every_s`` (or less often:
    a snapshot blocks the server while it reads every row, so it is kept under ~10%)."""

    def step(conn: redis.Redis) -> float:
        began = time.monotonic()
        found = tuple(drifts(snapshot(conn, run.queue)))
        took = time.monotonic() - began
        run.sample(found)
        run.watch_restarts(conn)
        return 10 * took

    _loop(run, name, run.settings.sample_every_s, step)


#: The eviction fault, as one atomic step of another client: pick one live lease among the
#: first 50 whose deadline is at least ARGV[3] ms ahead on the server's clock, and delete its
#: job row. The id stays in active, as it does when a server evicts the row. Replies the id, or
#: nil when no lease was live enough.
EVICT_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local from = '(' .. (now + tonumber(ARGV[3]))
local live = redis.call('ZRANGE', KEYS[1], from, '+inf', 'BYSCORE', 'LIMIT', 0, 50)
if #live == 0 then
  return false
end
local id = live[tonumber(ARGV[2]) % #live + 1]
if redis.call('DEL', ARGV[1] .. id) == 0 then
  return false
end
return id
"""


def resend(run: RunState, conn: redis.Redis, job_id: str) -> None:
    """The re-send fault: the producer, unsure its enqueue landed, sends an evicted id again.

    ``resend_guard`` picks the handle: ``jobs.enqueue`` refuses an id whose row is gone while
    the id still holds a place in the queue (``errors.BadRow``, nothing written); the unguarded
    enqueue (a demonstration) gives the id a fresh row with attempts 0.
    """
    send = jobs.enqueue if run.settings.resend_guard else unfenced.enqueue_unguarded
    started = run.ledger.now()
    try:
        reply = send(conn, run.queue, job_id, run.payloads[job_id])
    except errors.Refusal as exc:
        run.count("resends_refused")
        run.ledger.record_error("producer", "resend", job_id, 0, exc, started=started)
        return
    run.count("resent")
    run.ledger.record("producer", "resend", job_id, 0, "accepted", reply, started=started)


def evictor(run: RunState, name: str, index: int) -> None:
    """Delete ``evictions`` job rows under live leases, one every ``evict_every_s``; with
    ``resend``, re-send each evicted id at once.

    Only a lease with at least half the shortest lease still to run is picked, so the re-send
    that follows meets the lease still held (and a late one, dropped by the reaper as an
    orphan first, is a hole no enqueue can see).
    """
    rng = random.Random(f"{run.settings.seed}:{name}")
    margin = run.settings.lease_ms[0] // 2
    keys = [keyspace.queue_key(run.queue, "active")]
    prefix = keyspace.job_prefix(run.queue)

    def step(conn: redis.Redis) -> float | None:
        if run.counts["evicted"] >= run.settings.evictions:
            return 3600.0  # done: sleep until the run stops
        started = run.ledger.now()
        with reaching(conn):
            got = conn.eval(EVICT_LUA, 1, *keys, prefix, rng.randrange(1 << 30), margin)
        if got is not None:
            job_id = got.decode("ascii")
            run.count("evicted")
            run.ledger.record(name, "evict", job_id, 0, "accepted", "row deleted",
                              started=started)
            if run.settings.resend:
                resend(run, conn, job_id)
        return None

    if run.settings.evictions:
        _loop(run, name, run.settings.evict_every_s, step)


# ---- the run -------------------------------------------------------------------------------

Body = Callable[[RunState, str, int], None]
HOUSEKEEPERS: tuple[tuple[str, Body], ...] = (
    ("reaper", reaper), ("promoter", promoter), ("sampler", sampler),
    ("evictor", evictor),
)  # fmt: skip
#: How often (s) the run asks the server whether anything is left, once it looks idle.
PROBE_EVERY_S = 0.25


class Simulation:
    """One run. Call :meth:`run` (in any thread); watch :attr:`finished` while it goes."""

    def __init__(self, settings: Settings | None = None, url: str | None = None) -> None:
        self.settings = settings or Settings()
        self.settings.check()
        self.url = url
        self.queue = self.settings.queue or f"sim-{branded.mint()[3:]}"
        make, self.backend = client_factory(url)
        self._run = RunState(self.settings, self.queue, make, url)

    @property
    def ledger(self) -> Ledger:
        """The run's ledger, growing while it goes."""
        return self._run.ledger

    @property
    def server(self) -> str:
        """The server's name and version, once seen (``unknown`` for a real one until then)."""
        return self._run.server

    @property
    def finished(self) -> int:
        """How many jobs the ledger has seen finish (completed or dead) so far."""
        return self._run.finished

    def stop(self) -> None:
        """Ask the run to stop early (it then reports what was left unfinished)."""
        self._run.stop.set()
        self._run.abort.set()

    def run(self) -> Result:
        """Enqueue, work every job to its end (or until the timeout), audit, return the figures."""
        run, s = self._run, self.settings
        deadline = time.monotonic() + s.timeout_s
        conn = run.make()
        start = time.monotonic()
        enqueue_all(run, conn, deadline)
        enqueue_s = time.monotonic() - start
        run.watch_restarts(conn)
        began = time.monotonic()
        timed_out = self._work_through(conn, deadline)
        timing = Timing(enqueue_s, time.monotonic() - began, timed_out)
        if timed_out:
            run.note(f"the run stopped at its timeout of {s.timeout_s:g} s "
                     f"with {s.jobs - run.finished} jobs not seen to finish")
        final = _final_snapshot(conn, self.queue)
        run.watch_restarts(conn)
        conn.close()
        verdict = audit(run.ledger.calls, final, run.samples, restarts=run.restarts,
                        notes=run.notes)
        return result_of(run, self.backend, verdict, timing, final)

    def _threads(self) -> list[threading.Thread]:
        """The workers (first) and the housekeepers, each guarded, not yet started."""
        bodies: list[tuple[str, Body, int]] = [
            (f"w{i}", worker, i) for i in range(self.settings.workers)
        ]
        bodies += [(name, body, 0) for name, body in HOUSEKEEPERS]
        return [threading.Thread(target=self._guard, args=args, daemon=True) for args in bodies]

    def _work_through(self, conn: redis.Redis, deadline: float) -> bool:
        """Run the threads until the work is done or the deadline; True if the deadline ended
        it. No new claims after that; a worker still in a (stale) lease settles it, unless time
        is up."""
        run, s = self._run, self.settings
        threads = self._threads()
        for t in threads:
            t.start()
        timed_out = self._wait_until_done(conn, deadline, threads[: s.workers])
        run.stop.set()
        if timed_out:
            run.abort.set()
        for t in threads[: s.workers]:
            t.join(timeout=5 + (s.lease_ms[1] + s.overrun_ms[1]) / 1000)
        run.abort.set()
        for t in threads:
            t.join(timeout=5)
        return timed_out

    def _guard(self, name: str, body: Body, index: int) -> None:
        """Run a thread's body; an unexpected exception is a violation, not a silent death."""
        try:
            body(self._run, name, index)
        except Exception as exc:  # noqa: BLE001 - reported, and the run goes on
            self._run.note(f"thread {name} crashed: {type(exc).__name__}: {exc}")
        finally:
            self._run.holding[name] = False

    def _wait_until_done(
        self, conn: redis.Redis, deadline: float, workers: Sequence[threading.Thread]
    ) -> bool:
        """Block until every job finished, or nothing is left to do, or the deadline; True if
        the deadline ended it."""
        quiet = 0
        next_probe = time.monotonic() + PROBE_EVERY_S
        while not self._run.stop.is_set():
            if self.finished >= self.settings.jobs:
                return False
            if time.monotonic() > deadline:
                return True
            if not any(t.is_alive() for t in workers):
                return False
            if time.monotonic() >= next_probe:
                next_probe = time.monotonic() + PROBE_EVERY_S
                quiet = quiet + 1 if self._nothing_left(conn) else 0
                if quiet >= 2:
                    return False
            time.sleep(0.01)
        return False

    def _nothing_left(self, conn: redis.Redis) -> bool:
        """True when no job waits on the server and no worker holds a lease."""
        holding = self._run.holding
        if any(holding.values()):
            return False
        try:
            with reaching(conn):
                pipe = conn.pipeline(transaction=True)
                for name in ("pending", "active", "schedule"):
                    pipe.zcard(keyspace.queue_key(self.queue, name))
                counts = pipe.execute()
        except errors.ServerUnavailable:
            return False
        return not any(counts) and not any(holding.values())


def _final_snapshot(conn: redis.Redis, queue: str) -> Snapshot | None:
    """The queue's final state, read again for up to 10 s while the server is away."""
    backoff = Backoff(random.Random(0))
    until = time.monotonic() + 10
    while time.monotonic() < until:
        try:
            return snapshot(conn, queue)
        except errors.ServerUnavailable:
            backoff.wait(threading.Event())
    return None


def lab_url() -> str | None:
    """The server ``connect()`` would use: ``ECHOMQ_REDIS_URL`` if set, else None (embedded)."""
    return os.environ.get(ENV_URL) or None


def simulate(url: str | None = None, **settings: Any) -> Result:
    """Run one simulation with :class:`Settings` given as keywords; return its :class:`Result`."""
    return Simulation(Settings(**settings), url=url).run()


# ---- the figures of a run ------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """How a run went by the host's clock: seconds enqueuing, seconds working, timed out."""

    enqueue_s: float
    elapsed_s: float
    timed_out: bool


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
    evicted: int = 0
    orphans_dropped: int = 0
    tokens_minted_twice: int = 0
    stale_completes_accepted: int = 0
    settled_after_lease_lost: int = 0
    resent: int = 0
    resends_refused: int = 0
    ledger: list[Call] = field(repr=False, default_factory=list)
    samples: list[Sample] = field(repr=False, default_factory=list)
    final: Snapshot | None = field(repr=False, default=None)

    FIGURES = (
        "jobs", "workers", "claims", "stalls", "failures", "refusals", "duplicates",
        "completed", "dead", "lost_jobs", "unfinished_jobs", "reaped", "promoted",
        "drift_samples", "connection_errors", "lost_replies", "restarts_seen", "evicted",
        "orphans_dropped", "resent", "resends_refused", "tokens_minted_twice",
        "stale_completes_accepted", "settled_after_lease_lost", "elapsed_s", "jobs_per_s",
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
        lines = [f"{'backend':>24}: {self.backend} ({self.server})"]
        for name in self.FIGURES:
            value = getattr(self, name)
            shown = f"{value:.2f}" if isinstance(value, float) else str(value)
            lines.append(f"{name:>24}: {shown}")
        lines.append(f"{'violations':>24}: {len(self.violations)}")
        for verdict, held in self.verdicts.items():
            lines.append(f"  {'ok ' if held else 'NO '} {verdict}")
        for msg in self.violations[:20]:
            lines.append(f"  violation: {msg}")
        return "\n".join(lines)


def result_of(run: RunState, backend: str, verdict: Audit, timing: Timing,
              final: Snapshot | None) -> Result:
    """Gather a finished run's figures: its counters, its ledger, and the audit's verdicts."""
    s, c, calls = run.settings, run.counts, list(run.ledger.calls)
    settled = verdict.completed + verdict.dead
    elapsed = timing.elapsed_s
    return Result(
        settings=s, backend=backend, server=run.server, queue=run.queue,
        jobs=s.jobs, workers=s.workers,
        claims=sum(1 for k in calls if accepted(k, "claim")),
        stalls=c["stalls"], failures=c["failures"],
        refusals=verdict.refusals, refusals_by_class=verdict.refusals_by_class,
        duplicates=verdict.duplicates, completed=verdict.completed, dead=verdict.dead,
        lost_jobs=len(verdict.lost), unfinished_jobs=len(verdict.unfinished),
        violations=verdict.violations, verdicts=verdict.verdicts,
        elapsed_s=round(elapsed, 3), enqueue_s=round(timing.enqueue_s, 3),
        jobs_per_s=round(settled / elapsed, 1) if elapsed > 0 else 0.0,
        reaped=c["reaped"], promoted=c["promoted"], drift_samples=len(run.samples),
        connection_errors=c["connection_errors"],
        lost_replies=sum(1 for k in calls if k.outcome == "lost-reply"),
        resolved_after_lost_reply=verdict.resolved_after_lost_reply,
        restarts_seen=run.restarts, timed_out=timing.timed_out,
        evicted=verdict.evicted, orphans_dropped=verdict.orphans_dropped,
        tokens_minted_twice=verdict.tokens_minted_twice,
        stale_completes_accepted=verdict.stale_completes_accepted,
        settled_after_lease_lost=verdict.settled_after_lease_lost,
        resent=verdict.resent, resends_refused=verdict.resends_refused,
        ledger=calls, samples=list(run.samples), final=final,
    )  # fmt: skip
