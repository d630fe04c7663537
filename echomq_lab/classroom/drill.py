"""A robot learner, for filling a room (the benchmark, the tests, a rehearsal): it claims, then
stalls past its lease, extends, or works briefly, and completes or retries, counting what the
server answered the way the learner saw it."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass

from echomq_lab.classroom.desk import Desk


@dataclass(frozen=True)
class Habits:
    """How a robot learner works: chances to stall, extend and fail; times in ms."""

    lease_ms: int = 200
    stall: float = 0.25
    extend: float = 0.15
    fail: float = 0.1
    work_ms: tuple[float, float] = (0.0, 20.0)
    overrun_ms: tuple[float, float] = (50.0, 150.0)
    idle_ms: float = 10.0


def learn(desk: Desk, done: threading.Event, seed: int, did: Counter[str],
          habits: Habits = Habits()) -> None:
    """Work the room until ``done``: each accepted claim, complete, retry and extend and each
    stale refusal counted in ``did`` under the name :func:`ledger.tally` gives it."""
    rng = random.Random(seed)
    h = habits
    while not done.is_set():
        answer = desk.claim(h.lease_ms)
        if desk.held is None:
            did["empty" if answer.reply == "empty" else answer.reply] += 1
            time.sleep(h.idle_ms / 1000)
            continue
        did["claims"] += 1
        roll = rng.random()
        if roll < h.stall:
            desk.stall()
            time.sleep((h.lease_ms + rng.uniform(*h.overrun_ms)) / 1000)
        elif roll < h.stall + h.extend:
            extended = desk.extend(h.lease_ms)
            if extended.outcome == "accepted":
                did["extends"] += 1
            else:  # the lease ran out first (a busy room): nothing left to settle
                did["stale" if extended.reply == "EMQSTALE" else extended.reply] += 1
        if desk.held is None:
            continue
        time.sleep(rng.uniform(*h.work_ms) / 1000)
        settled = desk.retry(0, 5) if rng.random() < h.fail else desk.complete()
        if settled.outcome == "accepted":
            did["completes" if settled.verb == "complete" else "retries"] += 1
        else:
            did["stale" if settled.reply == "EMQSTALE" else settled.reply] += 1
