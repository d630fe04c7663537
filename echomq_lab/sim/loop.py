"""How a run's actors take turns. Each actor (a worker, the reaper, ...) is a generator that
does its calls and yields a :class:`Pause` between them. Two drivers run the same actors:

- :func:`drive`, one thread per actor, on the host's clock (real concurrency: for a real
  server, where round trips overlap);
- :class:`Interleave`, one loop, no thread: it always resumes the actor whose pause ends first
  (ties in the order they paused). With the embedded server it runs on a :class:`RunClock`, a
  clock of the run's own that the server's ``TIME`` reads too, so a pause costs no real time and
  a fixed seed gives the same run every time. With a real server it sleeps on the host's clock.

:func:`threads_can_start` tells whether this Python can start a thread at all (a page in the
browser cannot).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import fakeredis
import redis


@dataclass(frozen=True)
class Pause:
    """An actor's wait: ``seconds`` long, cut short when ``until`` is set."""

    seconds: float
    until: threading.Event


#: An actor: yields pauses, is sent True when a pause was cut short, ends when its work does.
Actor = Generator[Pause, bool, None]


class Clock(Protocol):
    """A run's clock, in seconds since the epoch."""

    def now(self) -> float: ...

    def sleep_until(self, t: float) -> None: ...


class HostClock:
    """The host's clock: a wait is a real sleep."""

    def now(self) -> float:
        return time.time()

    def sleep_until(self, t: float) -> None:
        time.sleep(max(0.0, t - time.time()))


#: How far (µs) a :class:`RunClock` moves each time it is read: every reading (a ledger time, a
#: ``TIME`` inside a script) is distinct, so the order of the times is the order of the calls.
TICK_US = 1


#: Where every :class:`RunClock` starts (2027-01-15 08:00 UTC): the same second each time, so
#: the same seed gives the same run to the microsecond.
RUN_CLOCK_START_S = 1_800_000_000


class RunClock:
    """A run's own clock, kept in whole microseconds: it starts at :data:`RUN_CLOCK_START_S`
    and moves only when read (by :data:`TICK_US`) or when :class:`Interleave` moves it to the
    end of the next pause."""

    def __init__(self) -> None:
        self.us = RUN_CLOCK_START_S * 1_000_000

    def now(self) -> float:
        self.us += TICK_US
        return self.us / 1_000_000

    def sleep_until(self, t: float) -> None:
        self.us = max(self.us, round(t * 1_000_000))

    def time_reply(self) -> list[bytes]:
        """The server's ``TIME`` reply on this clock: seconds and microseconds."""
        self.us += TICK_US
        return [str(self.us // 1_000_000).encode(), str(self.us % 1_000_000).encode()]


def clocked_server(clock: RunClock) -> Callable[[], redis.Redis]:
    """A maker of clients to one fresh embedded server whose ``TIME`` (in a script too) reads
    ``clock``; everything else is the embedded server as :func:`echomq_lab.connection.connect`
    gives it."""
    server = fakeredis.FakeServer()

    class ClockedConnection(fakeredis.FakeRedisConnection):
        def _connect(self) -> Any:
            sock = super()._connect()
            sock.time = clock.time_reply  # the command TIME looks itself up on the socket
            return sock

    return partial(fakeredis.FakeRedis, server=server, decode_responses=False,
                   connection_class=ClockedConnection)


def threads_can_start() -> bool:
    """False in the browser (Pyodide) or wherever starting a thread raises RuntimeError."""
    if sys.platform == "emscripten":
        return False
    try:
        probe = threading.Thread(target=lambda: None, daemon=True)
        probe.start()
    except RuntimeError:
        return False
    probe.join()
    return True


def drive(actor: Actor) -> None:
    """Run ``actor`` to its end in this thread, each pause a real wait on its event."""
    try:
        pause = next(actor)
        while True:
            pause = actor.send(pause.until.wait(pause.seconds))
    except StopIteration:
        return


class Interleave:
    """Actors taken in turn in one loop, on ``clock``: the next to go is the one whose pause ends
    first (or is cut short: its event is set), ties in the order they paused."""

    def __init__(self, clock: Clock, actors: Iterable[Actor] = ()) -> None:
        self.clock = clock
        self._waiting: list[tuple[float, int, Actor, Pause | None]] = []
        self._n = 0
        for actor in actors:
            self.add(actor)

    def add(self, actor: Actor) -> None:
        """Put ``actor`` in line; it starts at the next turn."""
        self._waiting.append((self.clock.now(), self._n, actor, None))
        self._n += 1

    def __contains__(self, actor: object) -> bool:
        return any(entry[2] is actor for entry in self._waiting)

    def __len__(self) -> int:
        return len(self._waiting)

    def _due(self, entry: tuple[float, int, Actor, Pause | None]) -> tuple[float, int]:
        wake, n, _, pause = entry
        cut = pause is not None and pause.until.is_set()
        return (min(wake, self.clock.now()) if cut else wake, n)

    def step(self) -> None:
        """Resume the actor due first, until its next pause (or its end)."""
        entry = min(self._waiting, key=self._due)
        self._waiting.remove(entry)
        wake, _, actor, pause = entry
        cut = pause is not None and pause.until.is_set()
        if not cut:
            self.clock.sleep_until(wake)
        try:
            nxt = next(actor) if pause is None else actor.send(cut)
        except StopIteration:
            return
        self._waiting.append((self.clock.now() + nxt.seconds, self._n, actor, nxt))
        self._n += 1

    def run(self, done: Callable[[], bool] = lambda: False) -> None:
        """Take turns until every actor has ended or ``done()`` is true."""
        while self._waiting and not done():
            self.step()
