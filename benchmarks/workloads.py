"""The measured workloads the benchmarks share: the library's job cycle, the same scripts by
bare ``evalsha``, and the no-op limits.

Each workload is prepared (``reset``, untimed) and then run one slice at a time, so several can
be interleaved on one machine: :func:`interleave` runs them in shuffled slices.
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from echomq_lab import branded, jobs, keyspace, queues
from echomq_lab.scripts import load

NOOP = "return 0"
QUEUE = "bench"
LEASE_MS = 60_000
BATCH = 100

#: The seed of the slice order: every run shuffles the workloads the same way.
SHUFFLE_SEED = 20261201


@dataclass
class Figure:
    """One measured quantity, repeated: the values in order, summarised by median/min/max."""

    name: str
    unit: str
    values: list[float] = field(default_factory=list)
    note: str = ""
    #: CPU time per op, per repeat: this process (client) and the server's main thread.
    client_cpu_us: list[float] = field(default_factory=list)
    server_cpu_us: list[float] = field(default_factory=list)
    #: The rate of every slice, in the order run (repeat after repeat): what ratios pair up.
    slice_rates: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def cpu_us(self) -> float:
        """Median CPU time per op, client and server together (load on the machine aside)."""
        return statistics.median(
            c + s for c, s in zip(self.client_cpu_us, self.server_cpu_us, strict=True)
        )

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "unit": self.unit,
            "median": self.median,
            "min": min(self.values),
            "max": max(self.values),
            "values": self.values,
            "note": self.note,
        }
        if self.client_cpu_us:
            out["cpu_us_per_op"] = {
                "client": statistics.median(self.client_cpu_us),
                "server": statistics.median(self.server_cpu_us),
                "total": self.cpu_us,
            }
        return out


def ratios(top: Figure, bottom: Figure, scale: float = 1.0) -> list[float]:
    """Per-slice ``top / (bottom * scale)``: the two ran in the same slice, a moment apart.

    Pairing slices, not whole repeats, keeps a burst of load elsewhere on the machine (or one
    slow slice) from moving a ratio: it moves one pair of many, and the median is taken after.
    """
    pairs = zip(top.slice_rates, bottom.slice_rates, strict=True)
    return [t / (b * scale) for t, b in pairs]


class Workload:
    """A unit of measured work: ``reset`` before each repeat (untimed), ``run`` one slice."""

    name = ""
    unit = "ops/s"
    ops = 1

    def reset(self, slices: int) -> None:
        """Prepare ``slices`` slices' worth of input (not timed)."""

    def run(self) -> None:  # pragma: no cover - every workload overrides it
        raise NotImplementedError


class NoopEvalsha(Workload):
    """The limit: a no-op EVALSHA, one round trip each, on one connection."""

    unit = "round trips/s"

    def __init__(self, name: str, conn: redis.Redis, ops: int) -> None:
        self.name, self.conn, self.ops = name, conn, ops
        self.sha = str(conn.script_load(NOOP))

    def run(self) -> None:
        evalsha, sha = self.conn.evalsha, self.sha
        for _ in range(self.ops):
            evalsha(sha, 0)


class NoopPipelined(Workload):
    """The pipelined limit: no-op EVALSHAs, ``batch`` per flush."""

    unit = "scripts/s"

    def __init__(self, name: str, conn: redis.Redis, ops: int, batch: int = BATCH) -> None:
        self.name, self.conn, self.ops, self.batch = name, conn, ops, batch
        self.sha = str(conn.script_load(NOOP))

    def run(self) -> None:
        for start in range(0, self.ops, self.batch):
            pipe = self.conn.pipeline(transaction=False)
            for _ in range(min(self.batch, self.ops - start)):
                pipe.evalsha(self.sha, 0)
            pipe.execute()


class Cycle(Workload):
    """The full job cycle through the library: enqueue, claim, complete, per job."""

    unit = "jobs/s"

    def __init__(self, name: str, conn: redis.Redis, ops: int, queue: str = QUEUE) -> None:
        self.name, self.conn, self.ops, self.queue = name, conn, ops, queue
        self.ids: list[str] = []
        self.cursor = 0

    def reset(self, slices: int) -> None:
        # Ids are minted ahead (untimed): the figure is the transitions, not the minter.
        self.ids = [branded.mint() for _ in range(self.ops * slices)]
        self.cursor = 0

    def run(self) -> None:
        conn, queue = self.conn, self.queue
        batch = self.ids[self.cursor : self.cursor + self.ops]
        self.cursor += self.ops
        for job_id in batch:
            jobs.enqueue(conn, queue, job_id, b"{}")
            claimed = queues.claim_expected(conn, queue, job_id, LEASE_MS)
            jobs.complete(conn, queue, claimed.id, claimed.token)


class BareCycle(Cycle):
    """The same three scripts by bare ``conn.evalsha``: no argument checks, keys built ahead.

    Not a way to use the library: it shows what the scripts cost from Python, so the gap
    between it and :class:`Cycle` is the library's own Python time. Every key and id is
    built ahead.
    """

    def __init__(self, name: str, conn: redis.Redis, ops: int, queue: str = "bench-bare") -> None:
        super().__init__(name, conn, ops, queue)
        enqueue, claim, complete = (
            str(conn.script_load(load(n).source)) for n in ("enqueue", "claim", "complete")
        )
        self.prefix = keyspace.job_prefix(queue)
        pending, active, schedule, dead = (keyspace.queue_key(queue, s) for s in keyspace.SET_NAMES)
        self.sets = (pending, active, schedule, dead)
        self.shared: tuple[Callable[..., Any], str, str, str, str, str, str] = (
            conn.evalsha, enqueue, claim, complete, pending, active, self.prefix
        )
        self.jobs: list[tuple[str, str]] = []

    def reset(self, slices: int) -> None:
        super().reset(slices)
        self.jobs = [(i, self.prefix + i) for i in self.ids]

    def run(self) -> None:
        evalsha, enqueue, claim, complete, pending, active, prefix = self.shared
        sets = self.sets
        batch = self.jobs[self.cursor : self.cursor + self.ops]
        self.cursor += self.ops
        for job_id, row in batch:
            evalsha(enqueue, 5, row, *sets, job_id, b"{}")
            reply = evalsha(claim, 2, pending, active, prefix, LEASE_MS)
            if evalsha(complete, 2, active, row, job_id, reply[2]) != 1:
                raise RuntimeError(f"bare complete of {job_id} failed")


def server_cpu_ns(pid: int | None) -> int:
    """Nanoseconds the server's main thread has run on a CPU (/proc/PID/schedstat), or 0."""
    if pid is None:
        return 0
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


@contextmanager
def cores_apart(server_pid: int | None) -> Iterator[dict[str, int] | None]:
    """While inside: the server's main thread on one CPU and this process on another.

    Left to the scheduler, a client and a server that take turns on one connection sometimes
    share a core and sometimes not, and can change between the two mid-run. Two fixed cores,
    as a server and its clients have in production, rule the shared core out; the hop
    between cores still varies with how the idle core wakes (a no-op round trip of about
    19 us or about 31 us, timed at the socket on one 2-core AMD EPYC machine), which
    interleaving spreads over every workload alike. Yields ``{"client": cpu, "server": cpu}``,
    or None (nothing pinned) with fewer than two CPUs or no server pid; the CPUs allowed
    before are restored on the way out.
    """
    allowed = os.sched_getaffinity(0)
    if server_pid is None or len(allowed) < 2:
        yield None
        return
    client, server = sorted(allowed)[:2]
    before = os.sched_getaffinity(server_pid)
    os.sched_setaffinity(server_pid, {server})
    os.sched_setaffinity(0, {client})
    try:
        yield {"client": client, "server": server}
    finally:
        os.sched_setaffinity(0, allowed)
        os.sched_setaffinity(server_pid, before)


def interleave(
    workloads: Sequence[Workload], repeats: int, slices: int, server_pid: int | None = None
) -> dict[str, Figure]:
    """Run every workload ``repeats`` times, in ``slices`` alternating slices per repeat.

    Returns one :class:`Figure` per workload: its rate (ops per second) in each repeat and in
    each slice, and the CPU time per op of this process and of the server (``server_pid``),
    which other load on the machine does not inflate the way it inflates wall time. Each
    slice runs the workloads in a shuffled order (a fixed seed, so runs are comparable) and
    each workload starts from a collected heap (``gc.collect()``, untimed): no workload always
    follows the same neighbour, or pays for the garbage another one left.
    """
    figures = {w.name: Figure(w.name, w.unit) for w in workloads}
    shuffle = random.Random(SHUFFLE_SEED).shuffle
    for w in workloads:  # warm up: scripts loaded, code paths and connections hot
        w.reset(1)
        w.run()
    for _ in range(repeats):
        spent = dict.fromkeys(figures, 0.0)
        client = dict.fromkeys(figures, 0.0)
        server = dict.fromkeys(figures, 0)
        for w in workloads:
            w.reset(slices)
        for _ in range(slices):
            order = list(workloads)
            shuffle(order)
            for w in order:
                gc.collect()
                srv0, cpu0 = server_cpu_ns(server_pid), time.process_time()
                start = time.perf_counter()
                w.run()
                took = time.perf_counter() - start
                spent[w.name] += took
                client[w.name] += time.process_time() - cpu0
                server[w.name] += server_cpu_ns(server_pid) - srv0
                figures[w.name].slice_rates.append(w.ops / took)
        for w in workloads:
            n = w.ops * slices
            fig = figures[w.name]
            fig.values.append(n / spent[w.name])
            fig.client_cpu_us.append(client[w.name] / n * 1e6)
            fig.server_cpu_us.append(server[w.name] / n / 1e3)
    return figures
