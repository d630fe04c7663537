"""What the threads of one run share: the ledger, the stop signals, counters and notes."""

from __future__ import annotations

import random
import threading
from collections import Counter

import fakeredis
import redis

from echomq_lab import errors
from echomq_lab.connection import reaching
from echomq_lab.sim.audit import Sample
from echomq_lab.sim.clients import Backoff, ClientFactory
from echomq_lab.sim.ledger import Ledger
from echomq_lab.sim.settings import Settings
from echomq_lab.snapshot import Drift


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
