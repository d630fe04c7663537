"""The actors of a run: the producer, the workers, and the reaper, promoter, sampler and evictor.

Each actor is a function of the run's shared :class:`RunState`, its thread name and index. A
worker claims a job, works for a moment (or stalls past its lease), then completes it or, when
the work "fails", retries it (dead at the attempts cap). Every answer goes into the ledger.
Actors survive a server that goes away: a call that raises :class:`errors.ServerUnavailable` is
recorded as a lost reply, the actor backs off and carries on.

The evictor is the eviction fault: another client deleting job rows under live leases (as a
server under ``maxmemory`` with ``allkeys-lru`` would). Each id a claim, reap or promote then
drops as an orphan goes into the ledger as a ``drop`` call, so the audit can show that nothing
minted a token for it again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import redis

from echomq_lab import branded, errors, jobs, keyspace
from echomq_lab.connection import reaching
from echomq_lab.sim.clients import Backoff
from echomq_lab.sim.state import RunState
from echomq_lab.snapshot import drifts, snapshot

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
    """One complete, or one retry after a simulated failure; the handle's reply."""
    if verb == "complete":
        return jobs.complete(conn, run.queue, got.id, got.token)
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


#: The eviction fault, as one atomic step of another client: pick one live lease (deadline
#: still ahead on the server's clock) among the first 50 and delete its job row. The id stays in
#: active, as it does when a server evicts the row. Replies the id, or nil when none was live.
EVICT_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0, 50)
if #live == 0 then
  return false
end
local id = live[tonumber(ARGV[2]) % #live + 1]
if redis.call('DEL', ARGV[1] .. id) == 0 then
  return false
end
return id
"""


def evictor(run: RunState, name: str, index: int) -> None:
    """Delete ``evictions`` job rows under live leases, one every ``evict_every_s``."""
    rng = random.Random(f"{run.settings.seed}:{name}")
    keys = [keyspace.queue_key(run.queue, "active")]
    prefix = keyspace.job_prefix(run.queue)

    def step(conn: redis.Redis) -> float | None:
        if run.counts["evicted"] >= run.settings.evictions:
            return 3600.0  # done: sleep until the run stops
        started = run.ledger.now()
        with reaching(conn):
            got = conn.eval(EVICT_LUA, 1, *keys, prefix, rng.randrange(1 << 30))
        if got is not None:
            run.count("evicted")
            run.ledger.record(name, "evict", got.decode("ascii"), 0, "accepted", "row deleted",
                              started=started)
        return None

    if run.settings.evictions:
        _loop(run, name, run.settings.evict_every_s, step)
