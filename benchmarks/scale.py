"""Cost as the work grows: the job cycle, one panel click and the drift check on deep queues.

``python -m benchmarks.scale [--quick] [--with-1m] [--out PATH] [--chart PATH]`` starts a Valkey
of its own and, for each queue depth (100, 10k, 100k; 1M with ``--with-1m``) in an empty server
and in one holding 1M other keys (``DEBUG POPULATE``), each point on a server emptied with
``FLUSHALL SYNC`` (nothing of the last point still being freed), measures:

* the job cycle through the library (enqueue, claim the oldest, complete), jobs/s;
* one ``view()`` (what a panel reads per click), ms;
* ``TransitionPanel.press`` through enqueue, claim, extend, complete (60 presses), click to
  render ms, and the longest single server command during the clicks (``SLOWLOG`` keeping the
  commands of 1 ms or more, reset before); then the same presses again with every command
  logged, for the median and 99th percentile of the script runs;
* at the deepest queue of the busy server: ``check()`` with two drifts planted deep in it,
  what it found, its wall time, and the longest command it sent.

The figures go under ``"scale"`` in
``benchmarks/results.json`` (the rest of the file is kept) and the log-log chart to
``docs/scale.png``; a plain-text table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import redis

import echomq_lab
from benchmarks import charts, results
from benchmarks.pipeline import enqueue_many
from benchmarks.results import ScalePoint as Point
from benchmarks.results import longest_text
from echomq_lab import branded, drift, jobs, keyspace
from echomq_lab.servers import RunningServer, start_server
from echomq_lab.snapshot import view

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "benchmarks" / "results.json"
DEFAULT_CHART = ROOT / "docs" / "scale.png"
QUEUE = "scale"
OTHER_KEYS = 1_000_000
DEPTHS = (100, 10_000, 100_000)
BIG = 1_000_000
LEASE_MS = 600_000
#: The presses of one round on the panel; repeated to :data:`PRESSES` clicks.
ROUND = ("enqueue", "claim", "extend", "complete")
PRESSES = 60


@dataclass(frozen=True)
class Sizes:
    """How much each point measures."""

    cycles: int
    views: int
    presses: int


FULL = Sizes(cycles=600, views=50, presses=PRESSES)
QUICK = Sizes(cycles=30, views=5, presses=8)


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def fill(conn: redis.Redis, queue: str, n: int, batch: int = 1000) -> float:
    """Enqueue ``n`` jobs with the enqueue script, ``batch`` per pipeline; return the seconds."""
    start = time.perf_counter()
    for offset in range(0, n, batch):
        items = [(branded.mint(), b"{}") for _ in range(min(batch, n - offset))]
        enqueue_many(conn, queue, items, batch)
    return time.perf_counter() - start


def cycle_rate(conn: redis.Redis, queue: str, cycles: int) -> float:
    """Jobs/s of enqueue + claim (the oldest) + complete through the library; depth kept."""
    ids = [branded.mint() for _ in range(cycles)]
    start = time.perf_counter()
    for job_id in ids:
        jobs.enqueue(conn, queue, job_id, b"{}")
        got = jobs.claim(conn, queue, LEASE_MS)
        if got is None:
            raise RuntimeError("claim found nothing pending in a filled queue")
        jobs.complete(conn, queue, got.id, got.token)
    return cycles / (time.perf_counter() - start)


def view_ms(conn: redis.Redis, queue: str, views: int) -> float:
    """Median ms of one ``view()`` of ``queue`` following one job."""
    follow = [branded.mint()]
    spent = []
    for _ in range(views):
        start = time.perf_counter()
        view(conn, queue, follow)
        spent.append((time.perf_counter() - start) * 1000)
    return statistics.median(spent)


def run_delay_ms(pid: int | None) -> float:
    """How long process ``pid`` has waited for a CPU so far, ms (/proc/PID/schedstat), or 0."""
    if pid is None:
        return 0.0
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


@dataclass
class Logged:
    """What SLOWLOG saw of the commands in one window, and how long the server waited for a CPU.

    On a busy machine the operating system can pause the server in the middle of a command;
    SLOWLOG counts that pause as the command's time, so ``server_waited_ms`` is kept beside it.
    """

    commands: int
    median_us: int
    p99_us: int
    longest_us: int
    longest: str
    over_1ms: int
    server_waited_ms: float


class CommandLog:
    """SLOWLOG on for a block (every command at or above ``threshold_us``), read afterwards."""

    def __init__(
        self, conn: redis.Redis, pid: int | None, threshold_us: int = 0, max_len: int = 10_000
    ) -> None:
        self.conn, self.pid, self.threshold, self.max_len = conn, pid, threshold_us, max_len
        self.waited = 0.0
        #: What :meth:`read` found: the logged entries, SLOWLOG's and CONFIG's own left out.
        self.entries: list[dict[str, Any]] = []

    def __enter__(self) -> CommandLog:
        self.conn.config_set("slowlog-log-slower-than", self.threshold)
        self.conn.config_set("slowlog-max-len", self.max_len)
        self.conn.slowlog_reset()
        self.waited = run_delay_ms(self.pid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.waited = run_delay_ms(self.pid) - self.waited

    def read(self) -> Logged:
        """The logged commands (SLOWLOG and CONFIG left out); logging back to its default."""
        entries: list[dict[str, Any]] = self.conn.slowlog_get(self.max_len)
        self.conn.config_set("slowlog-log-slower-than", 10_000)
        mine = [e for e in entries if not _words(e).upper().startswith(("SLOWLOG", "CONFIG"))]
        self.entries = mine
        times = sorted(int(e["duration"]) for e in mine)
        if not times:
            return Logged(0, 0, 0, 0, "", 0, self.waited)
        top = max(mine, key=lambda e: int(e["duration"]))
        # SLOWLOG lists the commands a script runs as well as the script: the median and p99
        # are of the script runs (EVALSHA) alone, the longest and the count of all.
        runs = sorted(int(e["duration"]) for e in mine if _words(e).upper().startswith("EVALSHA"))
        runs = runs or times
        return Logged(
            len(times), runs[len(runs) // 2], round(percentile(runs, 99)), times[-1],
            _words(top)[:60], sum(t >= 1000 for t in times), self.waited,
        )  # fmt: skip


#: Commands check() sends that read and change nothing, so the bench may send them again.
READ_ONLY = frozenset(
    {"HMGET", "HGET", "HGETALL", "ZSCAN", "SCAN", "ZSCORE", "ZMSCORE", "ZRANGE", "ZCARD", "TYPE",
     "EXISTS", "HLEN"}
)  # fmt: skip


def resent_us(conn: redis.Redis, commands: Sequence[str], times: int = 5) -> tuple[int, int]:
    """The longest own time of ``commands`` (SLOWLOG's words), and how many were sent again.

    SLOWLOG counts a pause of the server in the middle of a command as that command's time.
    Each read-only command is sent ``times`` times more, on the same data, with SLOWLOG logging
    every command; its quickest run is its own cost, and the longest of those is returned
    (0 when none could be sent again). A command SLOWLOG shortened (more than 32 arguments,
    or a long one cut) or that writes is not sent.
    """
    chosen = sorted({c for c in commands if _resendable(c)})
    if not chosen:
        return 0, 0
    with CommandLog(conn, None, threshold_us=0, max_len=len(chosen) * times + 10) as log:
        for words in chosen:
            for _ in range(times):
                conn.execute_command(*words.split(" "))  # type: ignore[no-untyped-call]
    log.read()
    quickest: dict[str, int] = {}
    for e in log.entries:
        words, took = _words(e), int(e["duration"])
        quickest[words] = min(took, quickest.get(words, took))
    return max((quickest.get(c, 0) for c in chosen), default=0), len(chosen)


def _resendable(words: str) -> bool:
    name = words.split(" ", 1)[0].upper()
    return name in READ_ONLY and "more arguments)" not in words and "more bytes)" not in words


def _words(entry: dict[str, Any]) -> str:
    command = entry["command"]
    return command.decode(errors="replace") if isinstance(command, bytes) else str(command)


def clicks(
    conn: redis.Redis, queue: str, presses: int, pid: int | None
) -> tuple[list[float], Logged]:
    """Click-to-render ms of ``presses`` presses, and what the server ran meanwhile.

    The presses run twice. The first time SLOWLOG keeps only commands of 1 ms or more, so
    logging costs the server nothing while it runs: the click times, the longest command and
    the count over 1 ms come from there. The second time it logs every command (the commands a
    script runs as well), which gives the median and 99th percentile of the script runs but
    makes each script pay for logging the commands it runs.
    """
    from echomq_lab.widgets import TransitionPanel

    panel = TransitionPanel(conn, queue)
    for name in ROUND:  # warm up: scripts loaded, widgets built
        panel.press(name)
    spent = []
    with CommandLog(conn, pid, threshold_us=1000) as slow:
        for k in range(presses):
            start = time.perf_counter()
            panel.press(ROUND[k % len(ROUND)])
            spent.append((time.perf_counter() - start) * 1000)
    longest = slow.read()
    with CommandLog(conn, pid) as every:
        for k in range(presses):
            panel.press(ROUND[k % len(ROUND)])
    spread = every.read()
    return spent, Logged(
        spread.commands, spread.median_us, spread.p99_us, longest.longest_us, longest.longest,
        longest.over_1ms, longest.server_waited_ms,
    )  # fmt: skip


def empty_out(conn: redis.Redis, wait_s: float = 120.0) -> None:
    """Delete every key, and wait until the server has freed them all.

    Valkey frees a ``FLUSHALL`` in a background thread by default (``lazyfree-lazy-user-flush``):
    left to run, that thread would still be freeing the last point's million keys while the
    next point is measured, competing with the server's main thread for the machine. ``SYNC``
    frees them before the reply; the wait covers anything a lazy delete left behind.
    """
    conn.execute_command("FLUSHALL", "SYNC")  # type: ignore[no-untyped-call]
    deadline = time.monotonic() + wait_s
    while int(conn.info("memory").get("lazyfree_pending_objects", 0)):
        if time.monotonic() > deadline:
            raise RuntimeError("the server is still freeing keys after a FLUSHALL")
        time.sleep(0.05)


def point(conn: redis.Redis, keys: str, depth: int, sizes: Sizes, pid: int | None) -> Point:
    """Fill ``conn`` to ``depth`` (the keyspace already laid) and measure every figure."""
    took = fill(conn, QUEUE, depth)
    rate = cycle_rate(conn, QUEUE, sizes.cycles)
    one_view = view_ms(conn, QUEUE, sizes.views)
    spent, log = clicks(conn, QUEUE, sizes.presses, pid)
    return Point(
        keys, depth, rate, one_view, statistics.median(spent), percentile(spent, 95), max(spent),
        log.longest_us, log.longest, took, log.median_us, log.p99_us, log.over_1ms,
        log.server_waited_ms,
    )  # fmt: skip


def _processed(conn: redis.Redis) -> int:
    return int(conn.info("stats")["total_commands_processed"])


def check_deep(conn: redis.Redis, depth: int, pid: int | None) -> dict[str, Any]:
    """Plant two drifts deep in the queue, run ``check()``; what it found and what it cost.

    SLOWLOG keeps only commands of 1 ms or more here (the walk sends about one per row).
    """
    pending = keyspace.queue_key(QUEUE, "pending")
    deep = cast(list[bytes], conn.zrange(pending, depth * 3 // 4, depth * 3 // 4 + 1))
    mismatch, orphan = (d.decode() for d in deep)
    conn.hset(keyspace.job_key(QUEUE, mismatch), "state", "dead")
    conn.zrem(pending, orphan)  # its row stays: a row in no set
    before = _processed(conn)
    with CommandLog(conn, pid, threshold_us=1000) as log:
        start = time.perf_counter()
        report = drift.check(conn, QUEUE)
        wall = time.perf_counter() - start
    sent = _processed(conn) - before
    slow = log.read()
    own_us, resent = resent_us(conn, [_words(e) for e in log.entries])
    return {
        "depth": depth,
        "planted": {"state-mismatch": mismatch, "row-in-no-set": orphan},
        "found": sorted((d.kind, d.job_id) for d in report),
        "found_all_planted": {(d.kind, d.job_id) for d in report}
        == {("state-mismatch", mismatch), ("row-in-no-set", orphan)},
        "members": report.members,
        "rows": report.rows,
        "calls": report.calls,
        "commands": sent,
        "consistent": report.consistent,
        "wall_s": wall,
        "commands_over_1ms": slow.over_1ms,
        "longest_command_us": slow.longest_us,
        "longest_command": slow.longest,
        "server_waited_ms": slow.server_waited_ms,
        # Each of those commands of 1 ms or more sent again, five times: the longest of their
        # quickest runs (their own cost, without any pause of the server).
        "longest_command_resent_us": own_us,
        "commands_resent": resent,
    }


# --------------------------------------------------------------------------------------------
# The run, the table, the chart


#: The niceness the benchmark's own server runs at, so that other work on a shared machine
#: pauses it less often (SLOWLOG counts such a pause as part of the command it interrupts).
SERVER_NICE = -10


def _raise_priority(pid: int) -> int:
    """Run ``pid`` at :data:`SERVER_NICE` if this process may; the niceness it runs at."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, SERVER_NICE)
    except OSError:
        pass
    return os.getpriority(os.PRIO_PROCESS, pid)


def run(quick: bool = False, with_1m: bool = False) -> dict[str, Any]:
    """Start a Valkey, measure every point, stop it; the results (JSON-ready)."""
    sizes = QUICK if quick else FULL
    depths = (100, 1_000) if quick else DEPTHS + ((BIG,) if with_1m else ())
    others = 10_000 if quick else OTHER_KEYS
    server: RunningServer = start_server("valkey", extra_args=["--enable-debug-command", "yes"])
    niced = _raise_priority(server.proc.pid)
    points: list[Point] = []
    load_before = os.getloadavg()
    try:
        conn = echomq_lab.connect(server.url)
        out: dict[str, Any] = {}
        for keys in ("empty", f"{others:,} other keys"):
            for depth in depths:
                empty_out(conn)
                if keys != "empty":
                    conn.execute_command(  # type: ignore[no-untyped-call]
                        "DEBUG", "POPULATE", others, "other"
                    )
                points.append(point(conn, keys, depth, sizes, server.proc.pid))
                print(_row(points[-1]), flush=True)
        out["check"] = check_deep(conn, depths[-1], server.proc.pid)
        conn.close()
    finally:
        server.stop()
    out["points"] = [asdict(p) for p in points]
    out["load_avg"] = {"before": load_before, "after": os.getloadavg()}
    out["server_nice"] = niced
    out["quick"] = quick
    out["other_keys"] = others
    out["presses"] = f"TransitionPanel.press cycling {', '.join(ROUND)}, {sizes.presses} presses"
    out["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out["version"] = server.version
    return out


def _row(p: Point) -> str:
    return (
        f"{p.keyspace:<20}{p.depth:>10,}  {p.cycle_jobs_s:,.0f} jobs/s  "
        f"click p95 {p.click_p95_ms:.1f} ms  "
        f"longest command {longest_text(p.longest_command_us)} µs"
    )


def table(scale: dict[str, Any]) -> str:
    """The points, the check and the parser figures as plain text (the report's own table)."""
    return results.scale_text({"scale": scale})


def chart(scale: dict[str, Any], path: Path) -> Path:
    """The log-log chart of :func:`benchmarks.charts.scale_chart`, saved as a PNG."""
    return charts.save(lambda ax: charts.scale_chart({"scale": scale}, ax), path)


def store(scale: dict[str, Any], out: Path) -> None:
    """Write ``scale`` under ``"scale"`` in ``out``, keeping every other key of the file."""
    results: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    results["scale"] = scale
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small depths (a smoke run)")
    parser.add_argument("--with-1m", action="store_true", help="also a 1,000,000-job queue")
    parser.add_argument("--out", type=Path, default=None, help="results file to update")
    parser.add_argument("--chart", type=Path, default=None, help="where the PNG goes")
    args = parser.parse_args(argv)
    scale = run(quick=args.quick, with_1m=args.with_1m)
    out = args.out or (ROOT / "benchmarks" / "results-quick.json" if args.quick else DEFAULT_OUT)
    store(scale, out)
    drawn = chart(scale, args.chart or (ROOT / "benchmarks" / "scale-quick.png"
                                        if args.quick else DEFAULT_CHART))
    print(table(scale))
    print(f"\nwritten to {out} and {drawn}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
