"""``python -m benchmarks.classroom``: a workshop of robot learners on one real Valkey, each its
own client and ACL user, for a minute; the figures printed and written as JSON.

For example: ``python -m benchmarks.classroom --learners 30 --seconds 60 --out
results/classroom.json``. The board keeps the queue fed while the minute runs; then the room
drains. Exit status 0 when the audit of the room's ledger found no violation, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from echomq_lab.classroom import acl_refusals, calls, join, open_room, tally
from echomq_lab.classroom.board import Board, Reaper
from echomq_lab.classroom.drill import Habits, learn
from echomq_lab.classroom.room import Room, join_link
from echomq_lab.keyspace import keys
from echomq_lab.sim import audit
from echomq_lab.sim.audit import Call
from echomq_lab.snapshot import snapshot

ROOM = "bench"
DRAIN_S = 60.0


def _p(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values`` in ms, 0 when there are none."""
    if len(values) < 2:
        return round(values[0] * 1000, 2) if values else 0.0
    return round(statistics.quantiles(values, n=100)[int(q * 100) - 1] * 1000, 2)


def _feed(board: Board, room: Room, until: float, depth: int) -> int:
    """Keep about ``depth`` jobs pending until ``until``; how many were enqueued."""
    fed, pending = 0, keys(room.name).pending
    while time.monotonic() < until:
        short = depth - int(board.conn.zcard(pending))
        if short > 0:
            fed += board.desk.enqueue(short)
        time.sleep(0.05)
    return fed


def _run(room: Room, learners: int, seconds: float) -> tuple[dict[str, Any], list[Call]]:
    admin = room.admin()
    board = Board(admin, room.name)
    reaper = Reaper(room.admin, room.name, every_s=0.02).start()
    done = threading.Event()
    did = {user: Counter[str]() for user in room.learners}
    desks = [join(join_link(room.url(user), room.name)) for user in room.learners]
    threads = [threading.Thread(target=learn, args=(d, done, n, did[d.actor], Habits()))
               for n, d in enumerate(desks)]
    began = time.monotonic()
    for t in threads:
        t.start()
    fed = _feed(board, room, began + seconds, 2 * learners)
    drain_until = time.monotonic() + DRAIN_S
    while time.monotonic() < drain_until and board.outstanding():
        time.sleep(0.1)
    done.set()
    for t in threads:
        t.join(timeout=10)
    elapsed = time.monotonic() - began
    reaper.stop()
    ledger = calls(admin, room.name)
    counted = tally(admin, room.name)
    verdict = audit(ledger, snapshot(admin, room.name))
    settles = [c.ended - c.started for c in ledger if c.verb in ("complete", "retry")]
    claims = [c.ended - c.started for c in ledger if c.verb == "claim"]
    stale = [counted[u]["stale"] for u in room.learners]
    mismatched = [u for u in room.learners
                  if any(counted[u][k] != did[u][k] for k in ("claims", "completes", "stale"))]
    out: dict[str, Any] = {
        "server": room.server.label.split(" (")[0], "cpus": os.cpu_count(),
        "learners": learners, "seconds": seconds, "elapsed_s": round(elapsed, 1),
        "jobs": fed, "completed": verdict.completed, "dead": verdict.dead,
        "claims": sum(c["claims"] for c in counted.values()),
        "completes": sum(c["completes"] for c in counted.values()),
        "stale_refused": sum(stale), "stale_per_learner_min": min(stale),
        "stale_per_learner_max": max(stale),
        "retries": sum(c["retries"] for c in counted.values()),
        "extends": sum(c["extends"] for c in counted.values()),
        "found_gone": sum(c["gone"] for c in counted.values()),
        "jobs_per_s": round((verdict.completed + verdict.dead) / elapsed, 1),
        "claim_p50_ms": _p(claims, 0.5), "claim_p95_ms": _p(claims, 0.95),
        "settle_p50_ms": _p(settles, 0.5), "settle_p95_ms": _p(settles, 0.95),
        "tally_matches_learners": not mismatched, "tally_mismatched": mismatched,
        "acl_refusals": sum(sum(c.values()) for c in acl_refusals(admin).values()),
        "fence_violations": len(verdict.violations), "violations": verdict.violations[:50],
        "verdicts": verdict.verdicts, "habits": Habits().__dict__,
    }
    admin.close()
    return out, ledger


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.classroom",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--learners", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--out", default="results/classroom.json")
    args = parser.parse_args(argv)
    with open_room(ROOM, args.learners) as room:
        figures, _ = _run(room, args.learners, args.seconds)
    for name, value in figures.items():
        if name not in ("violations", "verdicts", "habits", "tally_mismatched"):
            print(f"{name:>24}: {value}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"written to {args.out}")
    return 0 if figures["fence_violations"] == 0 and figures["tally_matches_learners"] else 1


if __name__ == "__main__":
    sys.exit(main())
