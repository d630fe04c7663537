"""Where a job cycle's Python goes, counted rather than timed: bytecodes per cycle, by owner.

A wall-clock ratio of two cycles a few per cent apart moves by as much from one run to the
next on a shared machine. The number of Python bytecodes the library executes per cycle does
not: it is the same on every run of the same code, so it shows exactly what a change to the
library added or took away. (The client's count can move a little between runs: a reply that
reaches the socket in two pieces takes the parser's read loop twice.) Each bytecode is
counted with ``sys.settrace`` opcode events (far slower than a real run, so only counts are
kept, never times) and filed under who ran it:

- ``library``: code in the ``echomq_lab`` package (the handles, the id and argument checks,
  the dispatch of :class:`echomq_lab.scripts.Script`);
- ``loop``: the benchmark's own loop (:mod:`benchmarks.workloads`);
- ``client``: everything else, which is redis-py (connection pool, serializer, parser,
  retry, observability hooks) and the standard library under it.

Code without a file of its own (a dataclass's generated ``__init__``, ``<string>``) is filed
under the caller that runs it.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import redis

import echomq_lab
from benchmarks.workloads import BareCycle, Cycle, Workload

LIBRARY = str(Path(echomq_lab.__file__).parent)
LOOP = str(Path(__file__).parent)
GROUPS = ("library", "loop", "client")
#: Cycles counted per workload: the count per cycle is the same for every cycle of one code.
CYCLES = 20


def _owner(frame: FrameType | None) -> str:
    while frame is not None and frame.f_code.co_filename.startswith("<"):
        frame = frame.f_back
    name = "" if frame is None else frame.f_code.co_filename
    if name.startswith(LIBRARY):
        return "library"
    if name.startswith(LOOP):
        return "loop"
    return "client"


def count(workload: Workload) -> dict[str, Any]:
    """Bytecodes per op of one ``run()`` of ``workload``, by owner and by library function.

    The workload runs once untraced first (scripts loaded, connection open, caches filled),
    so the counted run is the steady state a real loop runs in.
    """
    workload.reset(2)
    workload.run()
    groups: Counter[str] = Counter()
    functions: Counter[str] = Counter()

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            owner = _owner(frame)
            groups[owner] += 1
            if owner == "library":
                code = frame.f_code
                functions[f"{code.co_qualname} ({Path(code.co_filename).name})"] += 1
        return trace

    sys.settrace(trace)
    try:
        workload.run()
    finally:
        sys.settrace(None)
    ops = workload.ops
    return {
        "total": sum(groups.values()) / ops,
        "groups": {g: groups[g] / ops for g in GROUPS},
        "library_functions": {f: n / ops for f, n in functions.most_common()},
    }


def measure(conn: redis.Redis, cycles: int = CYCLES) -> dict[str, Any]:
    """The job cycle through the library and by bare ``evalsha``, counted on ``conn``."""
    library = count(Cycle("library", conn, cycles, "bytecodes-lib"))
    bare = count(BareCycle("bare", conn, cycles, "bytecodes-bare"))
    return {
        "library_cycle": library,
        "bare_cycle": bare,
        "library_minus_bare": library["total"] - bare["total"],
        "note": "Python bytecodes per job cycle (enqueue, claim, complete), counted with "
        "sys.settrace opcode events; library = the echomq_lab package, loop = the bench's "
        "loop, client = redis-py and the standard library",
    }


def text(found: dict[str, Any], top: int = 6) -> str:
    """Two lines and the library's heaviest functions, for the bench's printed table."""
    lib, bare = found["library_cycle"], found["bare_cycle"]
    lines = [
        "Python bytecodes per job cycle (counted, not timed):",
        *(
            f"  {name:<8} {w['total']:>6,.0f}  = client {w['groups']['client']:,.0f}"
            f" + library {w['groups']['library']:,.0f} + loop {w['groups']['loop']:,.0f}"
            for name, w in (("library", lib), ("bare", bare))
        ),
        f"  the library adds {found['library_minus_bare']:,.0f}; its heaviest functions:",
    ]
    lines += [f"    {n:>5.0f}  {f}" for f, n in list(lib["library_functions"].items())[:top]]
    return "\n".join(lines)
