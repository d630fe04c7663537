"""Measure now, on the lab's own server: our job cycle, and what python-rq spends per job.

API (for the measure panel and pages)::

    from echomq_lab.report import live
    cycle = live.job_cycles(conn, "lab-06", 300, progress=lambda done: ...)
    cycle.jobs_per_s, cycle.requests_per_job      # e.g. 900.0, 3.0
    cycle.per_transition                          # {"enqueue": ("EVALSHA",), "claim": ..., ...}
    live.rq_version()                             # "3.0.0", or None when python-rq is absent
    cost = live.rq_cycles(conn, 100)              # python-rq: enqueue + one burst worker
    cost.requests_per_job, cost.busiest           # e.g. 23.5, [("HSET", 6.1), ...]
    live.own_client(conn)                         # a client of its own on the same server

Every request is counted by :func:`echomq_lab.report.counting.counting`, the lab's one request
counter: one entry a round trip, a pipeline flush counted once. python-rq is driven the way
``benchmarks/run.py`` drives it (``rq.Queue.enqueue`` of a no-op job, then a
``SimpleWorker`` in burst mode), on the same connection and server as our cycle.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import redis

from echomq_lab import branded, jobs, queues, transitions
from echomq_lab.connection import reaching
from echomq_lab.report.counting import counting, warm_up

Progress = Callable[[int], None]
#: The lease each measured claim takes: long enough that nothing reaps it meanwhile.
LEASE_MS = 60_000
#: The transitions of one job cycle, in order: a new job's shortest way to retirement.
CYCLE = transitions.path(transitions.START, transitions.RETIRED)


@dataclass(frozen=True)
class Cycle:
    """``jobs`` job cycles (enqueue, claim, complete) timed and counted on one connection."""

    jobs: int
    seconds: float
    per_transition: dict[str, tuple[str, ...]]
    requests: int

    @property
    def jobs_per_s(self) -> float:
        """Job cycles per second of the host's clock."""
        return self.jobs / self.seconds if self.seconds > 0 else 0.0

    @property
    def requests_per_job(self) -> float:
        """Requests (round trips) per job cycle, over every cycle measured."""
        return self.requests / self.jobs


def _count(n: object, name: str, low: int, high: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{name} must be an int, not {type(n).__name__}")
    if not low <= n <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {n}")
    return n


def own_client(conn: redis.Redis) -> redis.Redis:
    """A second client on ``conn``'s connection pool: the same server and settings, but
    counting its requests leaves every other user of ``conn`` (another panel, a cell)
    uncounted, and theirs out of the count."""
    return redis.Redis(connection_pool=conn.connection_pool)


def job_cycles(
    conn: redis.Redis, queue: str, n: int, progress: Progress | None = None, every: int = 25
) -> Cycle:
    """Run ``n`` job cycles through ``jobs.*`` on ``queue``, counting each call's requests.

    The queue is emptied first and last and the scripts are cached first, so no call meets
    NOSCRIPT. ``progress(done)`` is called every ``every`` jobs and at the end. RuntimeError
    when a reply is not the one the cycle expects.
    """
    _count(n, "jobs", 1, 100_000)
    queues.reset(conn, queue)
    warm_up(conn)
    seen: dict[str, set[tuple[str, ...]]] = {name: set() for name in CYCLE}
    requests = 0
    ids = [branded.mint() for _ in range(n)]
    start = time.perf_counter()
    try:
        for done, job_id in enumerate(ids, 1):
            with counting(conn) as sent:
                jobs.enqueue(conn, queue, job_id, b'{"n": 1}')
            seen["enqueue"].add(tuple(sent))
            with counting(conn) as got:
                claimed = jobs.claim(conn, queue, LEASE_MS)
            seen["claim"].add(tuple(got))
            if claimed is None or claimed.id != job_id:
                raise RuntimeError(f"claim on {queue!r} handed {claimed!r}, expected {job_id}")
            with counting(conn) as settled:
                jobs.complete(conn, queue, job_id, claimed.token)
            seen["complete"].add(tuple(settled))
            requests += len(sent) + len(got) + len(settled)
            if progress is not None and (done % every == 0 or done == n):
                progress(done)
        seconds = time.perf_counter() - start
    finally:
        queues.reset(conn, queue)
    per = {name: max(calls, key=len) for name, calls in seen.items()}
    return Cycle(n, seconds, per, requests)


# -- python-rq ---------------------------------------------------------------------------------


def noop() -> None:
    """The job python-rq's worker runs here: it does nothing, so the cost is the queue's."""
    return None


def rq_version() -> str | None:
    """python-rq's version when it is installed, else None."""
    try:
        rq = import_module("rq")
    except ImportError:
        return None
    return str(rq.__version__)


@dataclass(frozen=True)
class RqCost:
    """python-rq on the same connection: ``jobs`` no-op jobs enqueued, then worked in one burst."""

    version: str
    jobs: int
    seconds: float
    requests: int
    by_name: dict[str, int]

    @property
    def requests_per_job(self) -> float:
        """Requests (round trips) per job, the worker's start and stop spread over the jobs."""
        return self.requests / self.jobs

    @property
    def jobs_per_s(self) -> float:
        """Jobs per second, enqueue and worker together, by the host's clock."""
        return self.jobs / self.seconds if self.seconds > 0 else 0.0

    @property
    def busiest(self) -> list[tuple[str, float]]:
        """The requests python-rq sends most, per job, most first (at most eight)."""
        top = Counter(self.by_name).most_common(8)
        return [(name, count / self.jobs) for name, count in top]


def _rq_cleanup(conn: redis.Redis, queue: str, job_ids: list[str], extra: list[str]) -> None:
    """Delete the keys python-rq made for ``queue``, its jobs and its worker (``extra``), and
    take the queue off rq's list of queues; nothing else of rq's is touched."""
    with reaching(conn):
        found = list(conn.scan_iter(match=f"rq:*{queue}*", count=500))
        found += [f"rq:job:{j}" for j in job_ids] + [f"rq:results:{j}" for j in job_ids]
        if found or extra:
            conn.delete(*found, *extra)
        conn.srem("rq:queues", f"rq:queue:{queue}")


def _thread_worker(rq: Any) -> Any:
    """python-rq's SimpleWorker made safe off the main thread: no signal handlers, and job
    time limits kept by a timer thread instead of SIGALRM. It sends the same requests."""

    class ThreadWorker(rq.SimpleWorker):  # type: ignore[misc]
        death_penalty_class = import_module("rq.timeouts").TimerDeathPenalty

        def _install_signal_handlers(self) -> None:
            return None

    return ThreadWorker


def rq_cycles(
    conn: redis.Redis, n: int, progress: Progress | None = None, queue: str = "lab-rq"
) -> RqCost:
    """Enqueue ``n`` no-op jobs with python-rq on ``conn``'s server, then work them with one
    ``SimpleWorker`` burst, counting every request. ImportError when python-rq is absent;
    RuntimeError when it did not finish every job. rq's keys for ``queue`` are deleted after."""
    _count(n, "jobs", 1, 100_000)
    rq: Any = import_module("rq")
    made: list[str] = []
    extra: list[str] = []
    try:
        q = rq.Queue(queue, connection=conn)
        start = time.perf_counter()
        with counting(conn) as enqueued:
            for done in range(1, n + 1):
                made.append(q.enqueue(noop).id)
                if progress is not None and done % 25 == 0:
                    progress(done // 2)
        worker = _thread_worker(rq)([q], connection=conn)
        extra.append(worker.key)
        with counting(conn) as worked:
            worker.work(burst=True, logging_level="WARNING")
        seconds = time.perf_counter() - start
        finished = rq.registry.FinishedJobRegistry(queue=q).count
        if finished != n:
            raise RuntimeError(f"python-rq finished {finished} of {n} jobs")
    finally:
        _rq_cleanup(conn, queue, made, extra)
    if progress is not None:
        progress(n)
    calls = enqueued + worked
    return RqCost(str(rq.__version__), n, seconds, len(calls), dict(Counter(calls)))
