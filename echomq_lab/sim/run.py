"""One run: :class:`Settings`, :class:`Simulation` and its actors, :class:`Result`. Workers
claim, work (or stall past the lease) and settle beside a reaper, a promoter, a drift sampler
and the faults asked for, every answer in the ledger (a lost reply too, then a backoff).

Each actor is a generator that pauses by yielding (:mod:`.loop`): the same actors run as
threads (a real server, where round trips overlap) or taken in turn in one loop with no thread
(the embedded server, on a clock of the run's own: fast, and the same run for the same seed;
and wherever threads cannot start, as in the browser). ``Settings.runner`` picks; "auto" does
as just said."""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import fakeredis
import redis

from echomq_lab import branded, errors, jobs, keyspace
from echomq_lab.connection import EMBEDDED, ENV_URL, connect, describe, reaching
from echomq_lab.keyspace import SetName
from echomq_lab.lessons import unfenced
from echomq_lab.scripts import load
from echomq_lab.sim.audit import Audit, Call, Ledger, Sample, accepted, audit
from echomq_lab.sim.leases import Lease, leases
from echomq_lab.sim.loop import (
    Actor,
    Clock,
    HostClock,
    Interleave,
    Pause,
    RunClock,
    clocked_server,
    drive,
    threads_can_start,
)
from echomq_lab.snapshot import Snapshot, drifts, snapshot


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
    evictions: int = 0  # job rows deleted under live leases (the eviction fault)
    evict_every_s: float = 0.01
    fence: bool = True  # False: complete without the fence (a demonstration)
    resend: bool = False  # re-send each evicted id at once (the re-send fault)
    resend_guard: bool = True  # False: re-send through the unguarded enqueue (a demonstration)
    runner: str = "auto"  # "threads", "loop" (no thread), or "auto" (see the module's docstring)

    def check(self) -> None:
        """Raise TypeError/ValueError, in one line, when a setting is out of range."""
        for name in ("fence", "resend", "resend_guard"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False")
        if self.runner not in RUNNERS:
            raise ValueError(f"runner must be one of {', '.join(RUNNERS)}, not {self.runner!r}")
        if self.resend and not self.evictions:
            raise ValueError("resend re-sends evicted ids: it needs evictions above 0")
        for name in ("jobs", "workers", "max_attempts", "payload_bytes", "seed", "evictions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if self.jobs < 1 or self.workers < 1 or self.max_attempts < 1:
            raise ValueError("jobs, workers and max_attempts must be at least 1")
        if self.evictions < 0:
            raise ValueError("evictions must not be negative")
        if not 0 <= self.payload_bytes <= 1 << 20:
            raise ValueError("payload_bytes must be between 0 and 1 MiB")
        if self.queue:
            keyspace.check_queue(self.queue)
        for name in ("stall", "fail"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} is a probability: between 0 and 1")
        for name in ("lease_ms", "work_ms", "overrun_ms", "retry_delay_ms"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be a range (low, high) with 0 <= low <= high")
        if self.lease_ms[0] < 1:
            raise ValueError("leases must be at least 1 ms")
        for name in ("reap_every_s", "promote_every_s", "sample_every_s", "timeout_s",
                     "evict_every_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")


#: The ways a run's actors can be run (see the module's docstring).
RUNNERS = ("auto", "threads", "loop")


def uses_threads(runner: str, url: str | None) -> bool:
    """Whether a run with ``runner`` on ``url`` (None: embedded) runs its actors as threads:
    "auto" does for a real server where threads can start. RuntimeError for "threads" where
    they cannot."""
    if runner == "threads" and not threads_can_start():
        raise RuntimeError("this Python cannot start threads: use runner='loop' or 'auto'")
    return runner == "threads" or (runner == "auto" and url is not None and threads_can_start())


class Backoff:
    """Bounded exponential backoff with jitter: half the step, plus up to half again at random."""

    def __init__(self, rng: random.Random, base_s: float = 0.005, cap_s: float = 0.5) -> None:
        self.rng, self.base_s, self.cap_s, self.n = rng, base_s, cap_s, 0

    def pause(self, stop: threading.Event) -> Pause:
        """The next step (doubling each time, up to the cap), cut short when ``stop`` is set."""
        step = min(self.cap_s, self.base_s * 2**self.n)
        self.n = min(self.n + 1, 30)
        return Pause(step / 2 + self.rng.uniform(0, step / 2), stop)

    def wait(self, stop: threading.Event) -> bool:
        """Wait one step in this thread, or until ``stop`` is set (True)."""
        pause = self.pause(stop)
        return stop.wait(pause.seconds)

    def reset(self) -> None:
        """Start again from the shortest step (the server answered)."""
        self.n = 0


#: How often (s) the run asks the server whether anything is left, once it looks idle.
PROBE_EVERY_S = 0.25


class Simulation:
    """One run: call :meth:`run` (in any thread), watch :attr:`finished`. ``stopping`` ends new
    claims, ``aborting`` (only with or after it) drops the leases in hand. :attr:`threaded`
    says how the actors run; ``on_turn``, if set, is called at each look at the progress."""

    def __init__(self, settings: Settings | None = None, url: str | None = None) -> None:
        self.settings = settings or Settings()
        self.settings.check()
        self.url = url
        self.threaded = uses_threads(self.settings.runner, url)
        self.queue = self.settings.queue or f"sim-{branded.mint()[3:]}"
        self.clock: Clock = HostClock()
        if url is None and not self.threaded:  # one fresh embedded server on the run's clock
            self.clock = own = RunClock()
            self.make: Callable[[], redis.Redis] = clocked_server(own)
            self.backend, self.server = EMBEDDED, f"fakeredis {fakeredis.__version__}"
        elif url is None:  # the run's clients share one fresh embedded server
            self.make = partial(fakeredis.FakeRedis, server=fakeredis.FakeServer(),
                                decode_responses=False)
            self.backend, self.server = EMBEDDED, f"fakeredis {fakeredis.__version__}"
        else:  # connect() turns silent resends off: one could run a script twice
            self.make = partial(connect, url)
            with connect(url) as first:
                self.backend, self.server = describe(first), "unknown"
        self.ledger = Ledger(self.clock.now)
        self.on_turn: Callable[[], None] | None = None
        #: On the embedded server (slow scripts in the browser) the periodic actors look with a
        #: plain read before they run a script that may have nothing to do.
        self.look_first = url is None
        self.timed_out = False
        self.stopping = threading.Event()
        self.aborting = threading.Event()
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.holding: dict[str, bool] = {}
        self.samples: list[Sample] = []
        self.notes: list[str] = []
        self.payloads: dict[str, bytes] = {}
        self.run_ids: list[str] = []

    @property
    def finished(self) -> int:
        """How many jobs the ledger has seen finish (completed or dead) so far."""
        return len(self.ledger.finished)

    def stop(self) -> None:
        """Ask the run to stop early (it then reports what was left unfinished)."""
        self.stopping.set()
        self.aborting.set()

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] += n

    def note(self, text: str) -> None:
        with self.lock:
            self.notes.append(text)

    def run(self) -> Result:
        """Enqueue, work every job to its end (or until the timeout), audit, return the figures."""
        s = self.settings
        deadline = self.clock.now() + s.timeout_s
        conn = self.make()
        self.solo(enqueue_all(self, conn, deadline))
        self.watch_restarts(conn)
        began = self.clock.now()
        timed_out = self._work_through(conn, deadline)
        elapsed_s = self.clock.now() - began
        if timed_out:
            self.note(f"the run stopped at its timeout of {s.timeout_s:g} s "
                      f"with {s.jobs - self.finished} jobs not seen to finish")
        final = _final_snapshot(conn, self.queue)
        self.watch_restarts(conn)
        conn.close()
        restarts = max(0, len(set(self.run_ids)) - 1)
        verdict = audit(self.ledger.calls, final, self.samples, restarts=restarts, notes=self.notes)
        calls, c = list(self.ledger.calls), self.counts
        return Result(
            **vars(verdict), settings=s, backend=self.backend, server=self.server,
            queue=self.queue, jobs=s.jobs, workers=s.workers,
            claims=sum(1 for k in calls if accepted(k, "claim")),
            stalls=c["stalls"], failures=c["failures"], reaped=c["reap"], promoted=c["promote"],
            connection_errors=c["connection_errors"],
            lost_replies=sum(1 for k in calls if k.outcome == "lost-reply"),
            lost_jobs=len(verdict.lost), unfinished_jobs=len(verdict.unfinished),
            drift_samples=len(self.samples), restarts_seen=restarts, timed_out=timed_out,
            elapsed_s=round(elapsed_s, 3), ledger=calls, samples=list(self.samples), final=final,
        )  # fmt: skip

    def watch_restarts(self, conn: redis.Redis) -> None:
        """Note a real server's name and run_id (which changes when it restarts)."""
        if self.url is None:
            return
        try:
            with reaching(conn):
                info = conn.info("server")
        except (errors.ServerUnavailable, redis.ResponseError):
            return
        run_id = str(info.get("run_id", ""))
        version = info.get("valkey_version") or info.get("redis_version") or "?"
        self.server = f"{info.get('server_name', 'redis')} {version}"
        if run_id and (not self.run_ids or self.run_ids[-1] != run_id):
            with self.lock:
                self.run_ids.append(run_id)

    def solo(self, actor: Actor) -> None:
        """Run one actor to its end, the run's way (in this thread, or in a loop of its own)."""
        if self.threaded:
            drive(actor)
        else:
            Interleave(self.clock, [actor]).run()

    def _actors(self) -> tuple[list[Actor], list[Actor]]:
        """The workers ``w0``... and the others: reaper, promoter, sampler, evictor."""
        workers = [worker(self, f"w{i}") for i in range(self.settings.workers)]
        return workers, [body(self, body.__name__)
                         for body in (reaper, promoter, sampler, evictor)]

    def _work_through(self, conn: redis.Redis, deadline: float) -> bool:
        """Run the actors until the work is done or the deadline (then True). A worker still in
        a (stale) lease then settles it, unless time is up."""
        if self.threaded:
            self._in_threads(conn, deadline)
        else:
            self._in_turn(conn, deadline)
        return self.timed_out

    def _in_threads(self, conn: redis.Redis, deadline: float) -> None:
        """Each actor in a thread of its own; this one watches."""
        s = self.settings
        workers, others = self._actors()
        threads = [threading.Thread(target=drive, args=(actor,), daemon=True)
                   for actor in (*workers, *others)]
        for t in threads:
            t.start()
        drive(self._watch(conn, deadline, lambda: any(t.is_alive() for t in threads[:s.workers])))
        self.stopping.set()
        if self.timed_out:
            self.aborting.set()
        for t in threads[: s.workers]:
            t.join(timeout=5 + (s.lease_ms[1] + s.overrun_ms[1]) / 1000)
        self.aborting.set()
        for t in threads:
            t.join(timeout=5)

    def _in_turn(self, conn: redis.Redis, deadline: float) -> None:
        """Every actor, the watcher too, taken in turn in one loop (no thread)."""
        workers, others = self._actors()
        loop = Interleave(self.clock, [*workers, *others])

        def working() -> bool:
            return any(w in loop for w in workers)

        watch = self._watch(conn, deadline, working)
        loop.add(watch)
        loop.run(done=lambda: watch not in loop)
        self.stopping.set()
        if self.timed_out:
            self.aborting.set()
        loop.run(done=lambda: not working())
        self.aborting.set()
        loop.run()

    def _watch(self, conn: redis.Redis, deadline: float, working: Callable[[], bool]) -> Actor:
        """Look every 10 ms until every job finished, no worker is ``working``, nothing is left
        (seen twice), or the deadline (then :attr:`timed_out`); then stop the run."""
        quiet = 0
        next_probe = self.clock.now() + PROBE_EVERY_S
        while not self.stopping.is_set():
            if self.on_turn is not None:
                self.on_turn()
            if self.finished >= self.settings.jobs or not working():
                break
            if self.clock.now() > deadline:
                self.timed_out = True
                break
            if self.clock.now() >= next_probe:
                next_probe = self.clock.now() + PROBE_EVERY_S
                quiet = quiet + 1 if self._nothing_left(conn) else 0
                if quiet >= 2:
                    break
            yield Pause(0.01, self.stopping)
        self.stopping.set()

    def _nothing_left(self, conn: redis.Redis) -> bool:
        """True when no job waits on the server and no worker holds a lease."""
        try:
            with reaching(conn):
                pipe = conn.pipeline(transaction=True)
                for name in ("pending", "active", "schedule"):
                    pipe.zcard(keyspace.queue_key(self.queue, name))
                counts = pipe.execute()
        except errors.ServerUnavailable:
            return False
        return not any(counts) and not any(self.holding.values())


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


def answered(sim: Simulation, actor: str, verb: str, job_id: str, token: int,
             send: Callable[[], str], backoff: Backoff, *, stalled: bool = False,
             deadline: float = math.inf) -> Actor:
    """Call ``send`` until the server answers (a refusal or a gone row too), each try in the
    ledger; after a lost reply send again, unless the run aborts (or raise past ``deadline``)."""
    lost = False
    while True:
        started = sim.ledger.now()
        try:
            reply = send()
            break
        except (errors.Refusal, errors.JobGone) as exc:
            sim.ledger.record_error(actor, verb, job_id, token, exc, started=started,
                                    stalled=stalled, after_lost_reply=lost)
            return
        except errors.ServerUnavailable as exc:
            sim.count("connection_errors")
            sim.ledger.record_error(actor, verb, job_id, token, exc, started=started,
                                    stalled=stalled)
            if sim.clock.now() > deadline:
                raise
            lost = True
            if (yield backoff.pause(sim.aborting)):
                return
    backoff.reset()
    sim.ledger.record(actor, verb, job_id, token, "accepted", reply, started=started,
                      stalled=stalled, after_lost_reply=lost)


def enqueue_all(sim: Simulation, conn: redis.Redis, deadline: float) -> Actor:
    """Enqueue the run's jobs, each with a seeded payload the workers check on claim."""
    s = sim.settings
    rng = random.Random(f"{s.seed}:payloads")
    backoff = Backoff(rng)
    for n in range(s.jobs):
        job_id = branded.mint()
        payload = sim.payloads[job_id] = n.to_bytes(4, "big") + rng.randbytes(s.payload_bytes)
        send = partial(jobs.enqueue, conn, sim.queue, job_id, payload)
        yield from answered(sim, "producer", "enqueue", job_id, 0, send, backoff,
                            deadline=deadline)


def record_drops(sim: Simulation, name: str, dropped: jobs.Dropped, started: float) -> None:
    """Ledger a ``drop`` call for each orphan or malformed member a transition dropped."""
    for kind, found in (("orphan", dropped.orphans), ("malformed", dropped.malformed)):
        for member in found:
            job_id = member.decode("ascii", "replace")
            sim.ledger.record(name, "drop", job_id, 0, "accepted", kind, started=started)


def _claim(sim: Simulation, conn: redis.Redis, name: str,
           rng: random.Random) -> tuple[jobs.Claimed, int] | None:
    """Claim one job with a random lease; None when there was none to claim."""
    lease_ms = rng.randint(*sim.settings.lease_ms)
    started = sim.ledger.now()
    try:
        got, dropped = jobs.claim_dropping(conn, sim.queue, lease_ms)
    except errors.ServerUnavailable as exc:
        sim.ledger.record_error(name, "claim", "", 0, exc, started=started, lease_ms=lease_ms)
        raise
    record_drops(sim, name, dropped, started)
    if got is None:
        return None
    sim.holding[name] = True
    detail = "" if sim.payloads.get(got.id) == got.payload else "payload differs"
    sim.ledger.record(name, "claim", got.id, got.token, "accepted", "claimed",
                      started=started, lease_ms=lease_ms, detail=detail)
    if detail:
        sim.note(f"{name} claimed {got.id} and its payload differs from the enqueued")
    return got, lease_ms


def _work(sim: Simulation, conn: redis.Redis, name: str, got: jobs.Claimed, lease_ms: int,
          rng: random.Random, backoff: Backoff) -> Actor:
    """Work one lease (maybe stalling past it), then complete it (unfenced without the fence)
    or, when the work failed, retry it; unless the run aborts first."""
    s = sim.settings
    stalled = rng.random() < s.stall
    failed = rng.random() < s.fail
    if stalled:
        sim.count("stalls")
        pause = (lease_ms + rng.uniform(*s.overrun_ms)) / 1000
    else:
        pause = rng.uniform(*s.work_ms) / 1000
    if (yield Pause(pause, sim.aborting)):
        return
    send: Callable[[], str]
    if failed:
        sim.count("failures")
        send = partial(jobs.retry, conn, sim.queue, got.id, got.token,
                       rng.randint(*s.retry_delay_ms), s.max_attempts,
                       f"simulated failure on attempt {got.token}")
    else:
        complete = jobs.complete if s.fence else unfenced.complete_unfenced
        send = partial(complete, conn, sim.queue, got.id, got.token)
    verb = "retry" if failed else "complete"
    yield from answered(sim, name, verb, got.id, got.token, send, backoff, stalled=stalled)
    sim.holding[name] = False


#: One round of an actor's loop: it may pause, and returns a longer pause to take, or None.
Step = Callable[[redis.Redis], Generator[Pause, bool, float | None]]


def _at_once(step: Callable[[redis.Redis], float | None]) -> Step:
    """``step`` (which never pauses) as a :data:`Step`."""

    def run(conn: redis.Redis) -> Generator[Pause, bool, float | None]:
        return step(conn)
        yield  # unreachable: it makes ``run`` a generator

    return run


def _loop(sim: Simulation, name: str, every_s: float, step: Step) -> Actor:
    """Run ``step`` on a client of its own every ``every_s`` (or the longer pause it returns)
    until the run stops, backing off while the server is away; a crash becomes a run note."""
    backoff = Backoff(random.Random(f"{sim.settings.seed}:{name}"))
    conn: redis.Redis | None = None
    try:
        while not sim.stopping.is_set():
            try:
                conn = sim.make() if conn is None else conn
                pause = yield from step(conn)
            except errors.ServerUnavailable:
                sim.count("connection_errors")
                yield backoff.pause(sim.stopping)
                continue
            backoff.reset()
            yield Pause(max(every_s, pause or 0.0), sim.stopping)
    except Exception as exc:  # noqa: BLE001 - reported, and the run goes on
        sim.note(f"{name} crashed: {type(exc).__name__}: {exc}")
    finally:
        sim.holding[name] = False
        if conn is not None:
            conn.close()


def worker(sim: Simulation, name: str) -> Actor:
    """Claim, work and settle jobs until the run stops (seeded by the number in ``w<n>``)."""
    rng = random.Random(f"{sim.settings.seed}:worker:{name[1:]}")
    backoff = Backoff(rng)

    idle = False  # the last claim found nothing: look before claiming again

    def step(conn: redis.Redis) -> Generator[Pause, bool, float | None]:
        nonlocal idle
        pending = keyspace.queue_key(sim.queue, "pending")
        looked = not (idle and sim.look_first) or _read(conn, conn.zcard, pending)
        held = _claim(sim, conn, name, rng) if looked else None
        idle = held is None
        if held is None:
            return rng.uniform(0.001, 0.004)  # nothing to claim: a short pause
        yield from _work(sim, conn, name, *held, rng, backoff)
        return 0.0

    yield from _loop(sim, name, 0.0, step)


def _round(sim: Simulation, name: str, verb: str,
           call: Callable[[], tuple[int, jobs.Dropped]]) -> int:
    """One reap or promote: what it moved and dropped into the ledger; how many it handled."""
    started = sim.ledger.now()
    n, dropped = call()
    record_drops(sim, name, dropped, started)
    if n:
        sim.count(verb, n)
        sim.ledger.record(name, verb, "", 0, "accepted", str(n), started=started)
    return n + dropped.total


def _read(conn: redis.Redis, command: Callable[..., Any], *args: Any) -> Any:
    """A plain read (no script), through :func:`reaching` (ServerUnavailable when it fails)."""
    with reaching(conn):
        return command(*args)


def _due(conn: redis.Redis, queue: str, name: SetName) -> bool:
    """Whether the set's earliest score (a lease's deadline, a retry's run-at) has come on the
    server's clock: a plain read, so the script runs only when it has work to do."""
    with reaching(conn):
        pipe = conn.pipeline(transaction=False)
        pipe.time()
        pipe.zrange(keyspace.queue_key(queue, name), 0, 0, withscores=True)
        (seconds, micros), first = pipe.execute()
    return bool(first) and first[0][1] <= int(seconds) * 1000 + int(micros) // 1000


def reaper(sim: Simulation, name: str) -> Actor:
    """Return expired leases to pending every ``reap_every_s`` (on the embedded server only when
    one has expired), in rounds of up to 100."""

    def step(conn: redis.Redis) -> None:
        if sim.look_first and not _due(conn, sim.queue, "active"):
            return
        while _round(sim, name, "reap", partial(jobs.reap_dropping, conn, sim.queue)) >= 100:
            pass

    yield from _loop(sim, name, sim.settings.reap_every_s, _at_once(step))


def promoter(sim: Simulation, name: str) -> Actor:
    """Move due retried jobs back to pending every ``promote_every_s`` (on the embedded server
    only when one is due)."""

    def step(conn: redis.Redis) -> None:
        if not sim.look_first or _due(conn, sim.queue, "schedule"):
            promote = partial(jobs.promote_dropping, conn, sim.queue, batch=1000)
            _round(sim, name, "promote", promote)

    yield from _loop(sim, name, sim.settings.promote_every_s, _at_once(step))


def sampler(sim: Simulation, name: str) -> Actor:
    """Check an atomic snapshot for drift every ``sample_every_s``, or less often: a snapshot
    blocks the server while it reads every row, so it is kept under ~10% of the time."""

    def step(conn: redis.Redis) -> float:
        began = sim.clock.now()
        found = tuple(drifts(snapshot(conn, sim.queue)))
        took = sim.clock.now() - began
        with sim.lock:
            sim.samples.append(Sample(sim.ledger.now(), found))
        sim.watch_restarts(conn)
        return 10 * took

    yield from _loop(sim, name, sim.settings.sample_every_s, _at_once(step))


def evictor(sim: Simulation, name: str) -> Actor:
    """Delete ``evictions`` rows under leases with half the shortest lease still to run
    (``evict.lua``), one every ``evict_every_s``. With ``resend`` the producer re-sends each
    evicted id at once: refused by ``jobs.enqueue``, given a fresh row if unguarded."""
    s = sim.settings
    rng = random.Random(f"{s.seed}:{name}")
    backoff = Backoff(rng)
    keys = [keyspace.queue_key(sim.queue, "active")]
    prefix = keyspace.job_prefix(sim.queue)
    resend = jobs.enqueue if s.resend_guard else unfenced.enqueue_unguarded

    def step(conn: redis.Redis) -> Generator[Pause, bool, float | None]:
        if sim.counts["evicted"] >= s.evictions:
            return 3600.0  # done: sleep until the run stops
        started = sim.ledger.now()
        got = load("evict")(conn, keys, [prefix, rng.randrange(1 << 30), s.lease_ms[0] // 2])
        if got is not None:
            job_id = got.decode("ascii")
            sim.count("evicted")
            sim.ledger.record(name, "evict", job_id, 0, "accepted", "row deleted", started=started)
            if s.resend:
                send = partial(resend, conn, sim.queue, job_id, sim.payloads[job_id])
                yield from answered(sim, "producer", "resend", job_id, 0, send, backoff)
        return None

    if s.evictions:
        yield from _loop(sim, name, s.evict_every_s, step)


@dataclass(kw_only=True)
class Result(Audit):
    """A run's audit (verdicts, figures), and its own figures, ledger, samples, final state."""

    settings: Settings
    backend: str
    server: str
    queue: str
    jobs: int
    workers: int
    claims: int
    stalls: int
    failures: int
    reaped: int
    promoted: int
    connection_errors: int
    lost_replies: int
    lost_jobs: int
    unfinished_jobs: int
    drift_samples: int
    restarts_seen: int
    timed_out: bool
    elapsed_s: float  # on the run's clock: simulated seconds when it is a RunClock
    ledger: list[Call] = field(repr=False, default_factory=list)
    samples: list[Sample] = field(repr=False, default_factory=list)
    final: Snapshot | None = field(repr=False, default=None)

    def leases(self) -> list[Lease]:
        """Every lease of the run, for the timeline."""
        return leases(self.ledger)
