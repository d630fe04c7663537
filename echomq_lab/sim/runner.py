"""One simulated run: enqueue, let the workers and housekeepers loose, stop, audit.

:class:`Simulation` starts ``workers`` worker threads plus a reaper, a promoter, a sampler and
(with ``evictions``) an evictor (see :mod:`.actors`), waits until every job finished (or nothing
is left to do, or the timeout), reads the queue's final state and hands ledger and state to
:func:`.audit.audit`.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from echomq_lab import branded, errors, keyspace
from echomq_lab.connection import ENV_URL, reaching
from echomq_lab.sim import actors
from echomq_lab.sim.audit import audit
from echomq_lab.sim.clients import Backoff, client_factory
from echomq_lab.sim.ledger import Ledger
from echomq_lab.sim.result import Result, Timing, result_of
from echomq_lab.sim.settings import Settings
from echomq_lab.sim.state import RunState
from echomq_lab.snapshot import Snapshot, snapshot

Body = Callable[[RunState, str, int], None]
HOUSEKEEPERS: tuple[tuple[str, Body], ...] = (
    ("reaper", actors.reaper), ("promoter", actors.promoter), ("sampler", actors.sampler),
    ("evictor", actors.evictor),
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
        actors.enqueue_all(run, conn, deadline)
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
            (f"w{i}", actors.worker, i) for i in range(self.settings.workers)
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
