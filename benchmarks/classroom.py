"""``python -m benchmarks.classroom``: a workshop of robot learners through the room's gateway.

The room runs as the instructor runs it (``python -m echomq_lab.classroom start``, its own
process: server, gateway, reaper); the robots run in several processes of their own, each robot
one learner with its own join link; this process keeps the queue fed, then lets the room drain.
Two paces: ``class`` (a press every 1-3 s, some stalls past the lease) and ``storm`` (as fast as
a robot can). Reported: jobs/s, claim p50/p95 as a robot saw them, stale refusals, fence
violations (the audit of the gateway's record against what the server holds), whether the tally
matches every robot's own counts, robots that died, and each process's CPU (where it
saturates). For example::

    python -m benchmarks.classroom --learners 250 --seconds 60 --pace class
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import redis

from benchmarks.processor import process_seconds
from echomq_lab import servers
from echomq_lab.classroom import calls, join, tally
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.drill import Habits, learn
from echomq_lab.keyspace import keys
from echomq_lab.sim import audit
from echomq_lab.snapshot import snapshot

ROOM = "bench"
DRAIN_S = 60.0
#: A class's pace: seconds between presses, the chance a robot stalls past its lease.
PRESS_S, STALL = (1.0, 3.0), 0.15
CLASS_LEASE_MS = 3000
#: Over how many seconds a class's robots join.
JOIN_S = 5.0


def _p(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` (seconds) in ms, 0 when there are none."""
    if len(values) < 2:
        return round(values[0] * 1000, 2) if values else 0.0
    return round(statistics.quantiles(values, n=100)[int(q * 100) - 1] * 1000, 2)


def _at_class_pace(link: str, done: threading.Event, seed: int, did: Counter[str],
                   claims: list[float]) -> None:
    """A person's pace: claim, work 1-3 s (sometimes stall past the lease), complete."""
    rng = random.Random(seed)
    desk = join(link)
    while not done.is_set():
        began = time.monotonic()
        desk.claim()
        claims.append(time.monotonic() - began)
        if desk.held is None:
            done.wait(rng.uniform(*PRESS_S))
            continue
        did["claims"] += 1
        stall = rng.random() < STALL
        done.wait(desk.held_lease_ms / 1000 + rng.uniform(0.3, 1.5) if stall
                  else rng.uniform(*PRESS_S))
        settled = desk.complete()
        if settled.outcome == "accepted":
            did["completes"] += 1
        elif settled.reply == "EMQSTALE":
            did["stale"] += 1
        done.wait(rng.uniform(*PRESS_S))
    desk.conn.close()


def _storm(link: str, done: threading.Event, seed: int, did: Counter[str],
           claims: list[float]) -> None:
    desk = join(link)
    timed = _Timed(desk)
    learn(timed, done, seed, did, Habits())  # type: ignore[arg-type]
    claims.extend(timed.claims)
    desk.conn.close()


class _Timed:
    """A desk whose claims are timed as the robot saw them."""

    def __init__(self, desk: Any) -> None:
        self.desk, self.claims = desk, cast(list[float], [])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.desk, name)

    def claim(self, *args: Any) -> Any:
        began = time.monotonic()
        try:
            return self.desk.claim(*args)
        finally:
            self.claims.append(time.monotonic() - began)


def _robots(links: list[tuple[str, str]], pace: str, stop_at: float, drain: Any,
            out: Any) -> None:
    """One process of robots (a thread each) until ``stop_at``, then until ``drain`` is set;
    each robot's counts, its claims' times and its death (if it died) sent to ``out``."""
    done = threading.Event()
    did = {name: Counter[str]() for name, _ in links}
    claims: dict[str, list[float]] = {name: [] for name, _ in links}
    died: dict[str, str] = {}
    work = _at_class_pace if pace == "class" else _storm

    def robot(n: int, name: str, link: str) -> None:
        # people join over a few seconds, not in one instant (the gateway lets only a few
        # sockets from one address wait to log in at once)
        done.wait(random.Random(name).uniform(0, JOIN_S) if pace == "class" else n * 0.02)
        try:
            work(link, done, n, did[name], claims[name])
        except Exception as exc:  # a robot that died is reported, not hidden
            died[name] = f"{type(exc).__name__}: {exc}"[:300]
            traceback.print_exc()

    threads = [threading.Thread(target=robot, args=(n, name, link), daemon=True)
               for n, (name, link) in enumerate(links)]
    for t in threads:
        t.start()
    drain.wait()
    done.set()
    for t in threads:
        t.join(timeout=30)
    for t, (name, _) in zip(threads, links, strict=True):
        if t.is_alive():
            died[name] = "still running 30 s after the end"
    out.put({"did": {k: dict(v) for k, v in did.items()}, "claims": claims, "died": died,
             "cpu_s": process_seconds(os.getpid())})


def _ping_flood(link: str, drain: Any, out: Any) -> None:
    """One learner's page that sends WebSocket pings as fast as its socket takes them, until
    ``drain`` is set; how many it sent goes to ``out``."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    from echomq_lab.classroom.room import parse_link

    seat = parse_link(link)
    sent, closed = 0, ""
    try:  # no keepalive of its own: a paced socket would not answer it in time
        with connect(seat.gateway, open_timeout=60, close_timeout=1, ping_interval=None) as ws:
            ws.send(json.dumps({"user": seat.name, "password": seat.password}))
            ws.recv(timeout=60)
            while not drain.is_set():
                ws.ping()
                sent += 1
    except (OSError, WebSocketException) as exc:
        closed = f"{type(exc).__name__}: {exc}"[:200]
    out.put({"flood_pings_sent": sent, "flood_closed": closed})


def _feed(board: Board, until: float, depth: int) -> int:
    """Keep about ``depth`` jobs pending until ``until``; how many were enqueued."""
    fed, pending = 0, keys(ROOM).pending
    while time.monotonic() < until:
        short = depth - int(board.conn.zcard(pending))
        if short > 0:
            fed += board.desk.enqueue(min(short, 200))
        time.sleep(0.05)
    return fed


class Refused(RuntimeError):
    """The room would not run this benchmark (it said why in one line)."""


def run(learners: int, seconds: float, pace: str, port: int | None, processes: int,
        folder: Path, flood: bool = False) -> dict[str, Any]:
    """One run of ``learners`` robots at ``pace``; the figures."""
    argv = [sys.executable, "-m", "echomq_lab.classroom", "start", "--room", ROOM,
            "--learners", str(learners), "--out", str(folder), "--lease-ms",
            str(CLASS_LEASE_MS if pace == "class" else Habits().lease_ms)]
    # the room's terminal goes to a file (a pipe nobody reads would stop the room when full)
    said_path = folder / "room.log"
    with said_path.open("w") as said_file:
        room_proc = subprocess.Popen([*argv, *(["--port", str(port)] if port else [])],
                                     stdout=subprocess.DEVNULL, stderr=said_file, text=True)
    path = folder / "room.json"
    try:
        started = servers.wait_until(lambda: path.exists() or room_proc.poll() is not None,
                                     120, 0.1)
        if room_proc.poll() is not None or not started:
            if room_proc.poll() is None:
                room_proc.terminate()
            said = said_path.read_text(errors="replace").strip()
            raise Refused((said.splitlines() or ["it did not start within 120 s"])[-1])
        seats = json.loads(path.read_text())
        return _measure(seats, room_proc, learners, seconds, pace, processes, flood)
    finally:
        room_proc.terminate()
        room_proc.wait(timeout=30)


def _measure(seats: dict[str, Any], room_proc: subprocess.Popen[str], learners: int,
             seconds: float, pace: str, processes: int, flood: bool) -> dict[str, Any]:
    admin = redis.Redis.from_url(seats["instructor"]["url"], socket_timeout=30)
    board = Board(admin, ROOM)
    server_pid = int(admin.info("server")["process_id"])
    cpu0 = {"server": process_seconds(server_pid), "gateway": process_seconds(room_proc.pid),
            "feeder": process_seconds(os.getpid())}
    links = [(s["name"], s["link"]) for s in seats["learners"]]
    ctx = mp.get_context("spawn")
    drain, out = ctx.Event(), ctx.Queue()
    flooding = None
    if flood:  # the last seat floods pings instead of working; the others are measured
        flooder, flood_out = links.pop(), ctx.Queue()
        flooding = ctx.Process(target=_ping_flood, args=(flooder[1], drain, flood_out))
        flooding.start()
    began = time.monotonic()
    workers = [ctx.Process(target=_robots, args=(links[i::processes], pace,
                                                 began + seconds, drain, out))
               for i in range(processes)]
    for w in workers:
        w.start()
    fed = _feed(board, began + seconds, learners if pace == "class" else 2 * learners)
    drain_until = time.monotonic() + DRAIN_S
    while time.monotonic() < drain_until and board.outstanding():
        time.sleep(0.2)
    elapsed = time.monotonic() - began
    drain.set()
    got = [out.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    flooded = flood_out.get(timeout=60) if flooding is not None else {}
    cpu = {"server": process_seconds(server_pid) - cpu0["server"],
           "gateway, reaper": process_seconds(room_proc.pid) - cpu0["gateway"],
           "robots": sum(g["cpu_s"] for g in got),
           "this feeder": process_seconds(os.getpid()) - cpu0["feeder"]}
    did: dict[str, Counter[str]] = {}
    claims: list[float] = []
    died: dict[str, str] = {}
    for g in got:
        did |= {k: Counter(v) for k, v in g["did"].items()}
        claims += [t for times in g["claims"].values() for t in times]
        died |= g["died"]
    ledger = calls(admin, ROOM)
    at_gateway = [c.ended - c.started for c in ledger if c.verb == "claim"]
    counted = tally(admin, ROOM)
    verdict = audit(ledger, snapshot(admin, ROOM))
    names = [n for n, _ in links]
    none: dict[str, int] = {}
    mismatched = [u for u in names
                  if any(counted.get(u, none).get(k, 0) != did.get(u, Counter()).get(k, 0)
                         for k in ("claims", "completes", "stale"))]
    k = keys(ROOM)
    left = {s: int(admin.zcard(key)) for s, key in zip(("pending", "active", "schedule", "dead"),
                                                      k.sets, strict=True)}
    stale = [counted.get(u, none).get("stale", 0) for u in names]
    figures: dict[str, Any] = {
        "pace": pace, "learners": learners, "robot_processes": processes,
        "seconds": seconds, "elapsed_s": round(elapsed, 1), "cpus": os.cpu_count(),
        "jobs": fed, "completed": verdict.completed, "dead": verdict.dead, "left": left,
        "jobs_per_s": round((verdict.completed + verdict.dead) / elapsed, 1),
        "claims": sum(c.get("claims", 0) for c in counted.values()),
        "claim_p50_ms": _p(claims, 0.5), "claim_p95_ms": _p(claims, 0.95),
        # the room's own part: from the gateway taking a claim to the server's answer, as
        # the gateway's record times it (a robot's figure adds its own process's waits)
        "claim_p50_ms_at_gateway": _p(at_gateway, 0.5),
        "claim_p95_ms_at_gateway": _p(at_gateway, 0.95),
        "stale_refused": sum(stale), "fence_violations": len(verdict.violations),
        "violations": verdict.violations[:20], "verdicts": verdict.verdicts,
        "tally_matches_every_learner": not mismatched, "tally_mismatched": mismatched[:20],
        "robots_died": len(died), "deaths": dict(list(died.items())[:10]),
        "cpu_share_of_one_core": {n: round(s / elapsed, 2) for n, s in cpu.items()},
    }
    shares: dict[str, float] = figures["cpu_share_of_one_core"]
    figures["busiest"] = max(shares, key=lambda n: shares[n])
    if flooding is not None:
        figures["ping_flood"] = {"learner": flooder[0], **flooded}
    admin.close()
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.classroom",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--port", type=int, default=None,
                        help="the gateway's port (default: a free one)")
    parser.add_argument("--pace", choices=("class", "storm", "both"), default="both")
    parser.add_argument("--storm-learners", type=int, default=None,
                        help="robots in the storm (default: --learners)")
    parser.add_argument("--processes", type=int, default=4, help="robot processes")
    parser.add_argument("--ping-flood", action="store_true",
                        help="one learner floods WebSocket pings while the others work")
    parser.add_argument("--out", default="results/classroom.json")
    args = parser.parse_args(argv)
    paces = ("class", "storm") if args.pace == "both" else (args.pace,)
    results: dict[str, Any] = {}
    for pace in paces:
        n = args.storm_learners or args.learners if pace == "storm" else args.learners
        load = os.getloadavg()
        try:
            with tempfile.TemporaryDirectory(prefix="echomq-bench-") as folder:
                results[pace] = run(n, args.seconds, pace, args.port, args.processes,
                                    Path(folder), args.ping_flood)
        except Refused as exc:
            print(f"benchmarks.classroom: the room refused the {pace} run: {exc}",
                  file=sys.stderr)
            return 2
        results[pace]["load_1_5_15_before"] = [round(x, 2) for x in load]
        results[pace]["load_1_5_15_after"] = [round(x, 2) for x in os.getloadavg()]
        for name, value in results[pace].items():
            if name not in ("violations", "verdicts", "tally_mismatched", "deaths"):
                print(f"{pace:>5} {name:>28}: {value}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    ok = all(r["fence_violations"] == 0 and r["tally_matches_every_learner"]
             and not r["robots_died"] for r in results.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
