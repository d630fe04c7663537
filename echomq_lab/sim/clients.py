"""Clients for a run's threads, and the backoff they use while the server is away."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import fakeredis
import redis

from echomq_lab.connection import EMBEDDED, connect, describe

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
