"""Measure on the lab's own server: the requests a client sends, and what a job cycle costs.

:func:`counting` counts the requests the lab's clients write (a command, or a whole pipeline, is
one); :func:`commandstats` reads INFO commandstats; :func:`transition_calls` and
:func:`job_cycles` are the live measure of the page lab-one-round-trip; :func:`read_bench` reads
what ``make bench`` wrote for the page.

That lab's layer: may import the protocol core; never the lessons' stories, the widgets or the
other labs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import redis

from echomq_lab import branded, clock, jobs, keyspace, queues, scripts, transitions
from echomq_lab.connection import reaching, tapped
from echomq_lab.drift import SET_OF_STATE

if TYPE_CHECKING:
    from IPython.display import Image

#: Commands whose name is two words on the wire (``SCRIPT LOAD``, ``CLIENT SETINFO``, ...).
TWO_WORDS = frozenset(b"SCRIPT CLIENT CONFIG CLUSTER OBJECT MEMORY SLOWLOG FUNCTION ACL COMMAND "
                      b"XINFO XGROUP LATENCY MODULE PUBSUB".split())


def commands(packed: bytes) -> list[tuple[bytes, ...]]:
    """Every command in ``packed`` (RESP as redis-py writes it), each as its words, in order;
    ValueError when ``packed`` is not that."""
    found, at = [], 0
    while at < len(packed):
        end = packed.index(b"\r\n", at)
        count, at = int(packed[at + 1 : end]), end + 2
        words = []
        for _ in range(count):
            end = packed.index(b"\r\n", at)
            size, at = int(packed[at + 1 : end]), end + 2
            words.append(bytes(packed[at : at + size]))
            at += size + 2
        found.append(tuple(words))
    return found


def command_name(words: Sequence[bytes]) -> str:
    """A command's name: its first word, upper-case, or its first two (:data:`TWO_WORDS`)."""
    head = [w.upper() for w in words[:2]]
    two = len(head) > 1 and head[0] in TWO_WORDS
    return b" ".join(head if two else head[:1]).decode(errors="replace")


def request_name(commands: Sequence[str]) -> str:
    """One request's name: its lone command's, ``MULTI[n]`` (a transaction) or ``PIPELINE[n]``."""
    if len(commands) == 1:
        return commands[0]
    if commands[0] == "MULTI" and commands[-1] == "EXEC":
        return f"MULTI[{len(commands) - 2}]"
    return f"PIPELINE[{len(commands)}]"


@contextmanager
def counting() -> Iterator[list[str]]:
    """Record every request this thread sends on the lab's clients (those
    :func:`echomq_lab.connect` makes) inside the block, one entry a round trip
    (:func:`request_name`). A resend counts; a new connection's handshake does not. Blocks may
    nest and threads may count at once; redis-py is never patched, so other clients go unseen."""
    calls: list[str] = []

    def seen(packed: bytes) -> None:
        try:
            calls.append(request_name([command_name(c) for c in commands(packed)]))
        except (ValueError, TypeError):  # not RESP as redis-py writes it: still one request
            calls.append("?")

    with tapped(seen):
        yield calls


def calls_text(calls: Sequence[str]) -> str:
    """``["EVALSHA"]`` → ``"1 EVALSHA"``; several → ``"3 requests: EVALSHA, SCRIPT LOAD, ..."``."""
    if not calls:
        return "no request"
    if len(calls) == 1:
        return f"1 {calls[0]}"
    return f"{len(calls)} requests: {', '.join(calls)}"


class Stat(NamedTuple):
    """One command's counters on the server: how often it ran, and its microseconds."""

    calls: int
    usec: int


def commandstats(node: redis.Redis) -> dict[str, Stat]:
    """``INFO commandstats`` of one server by command name (``evalsha``, ``script|load``)."""
    with reaching(node):
        info = node.info("commandstats")
    return {str(key).removeprefix("cmdstat_"): Stat(int(v["calls"]), int(v.get("usec", 0)))
            for key, v in info.items()}


#: 2100-01-01 in Unix ms: a run-at time that is never due while the walk runs.
FAR_FUTURE_MS = 4_102_444_800_000
#: The lease each measured claim takes: long enough that nothing reaps it meanwhile.
LEASE_MS = 60_000
#: The transitions of one job cycle, in order (the registry names it).
CYCLE = transitions.CYCLE


@dataclass(frozen=True)
class Traced:
    """One transition called live: what it answered and the requests the client sent."""

    name: str
    reply: str
    calls: tuple[str, ...]

    def line(self) -> str:
        """``name:  1 EVALSHA  -> reply``, in fixed-width columns."""
        return f"{self.name + ':':<24}{calls_text(self.calls):<16}-> {self.reply}"


def warm_up(conn: redis.Redis) -> None:
    """Load every protocol script on the server (idempotent), so no call meets NOSCRIPT."""
    for name in scripts.names():
        conn.script_load(scripts.load(name).source)


#: One step of :func:`walk`: run ``call`` as ``name`` and return its reply.
Step = Callable[[str, Callable[[], Any]], Any]


def walk(conn: redis.Redis, queue: str, step: Step) -> None:
    """Walk one new job through every transition handle on ``queue``, each call made through
    ``step(name, call)``; RuntimeError when a reply is not the expected one. A transition of
    the registry that this journey does not take is demonstrated after it
    (:func:`demonstrate`), once its script is written (:func:`echomq_lab.scripts.written`)."""
    first, later, fixed = branded.mint(), branded.mint(), branded.mint()
    walked: set[str] = set()  # the handles the journey called

    def took(name: str, call: Callable[[], Any]) -> Any:
        walked.add(name.split()[0])  # "retry (at the cap)" is a retry
        return step(name, call)

    def run(name: str, call: Callable[[], object], want: object) -> None:
        reply = took(name, call)
        if reply != want:
            raise RuntimeError(f"{name} on {queue!r} answered {reply!r}, expected {want!r}")

    run("enqueue", lambda: jobs.enqueue(conn, queue, first, b'{"n": 1}'), "enqueued")
    c = took("claim", lambda: queues.claim_expected(conn, queue, first, LEASE_MS))
    took("extend", lambda: jobs.extend(conn, queue, first, c.token, LEASE_MS))
    run("retry", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "boom"), "scheduled")
    run("promote", lambda: jobs.promote(conn, queue), 1)
    took("claim", lambda: queues.claim_expected(conn, queue, first, 1))
    clock.wait_out_lease(conn, queue, first)
    run("reap", lambda: jobs.reap(conn, queue), 1)
    c = took("claim", lambda: queues.claim_expected(conn, queue, first, LEASE_MS))
    run("retry (at the cap)", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "x"), "dead")
    run("reprocess", lambda: jobs.reprocess(conn, queue, first), "pending")
    c = took("claim", lambda: queues.claim_expected(conn, queue, first, LEASE_MS))
    run("complete", lambda: jobs.complete(conn, queue, first, c.token), "completed")
    run("enqueue_in", lambda: jobs.enqueue_in(conn, queue, later, b"{}", 60_000), "scheduled")
    run("enqueue_at", lambda: jobs.enqueue_at(conn, queue, fixed, b"{}", FAR_FUTURE_MS),
        "scheduled")  # fmt: skip
    for t in scripts.written():  # a stub (make transition's) has nothing to show yet
        if t.call.handle not in walked:
            demonstrate(conn, queue, t, step)


def _call(conn: redis.Redis, queue: str, t: transitions.Transition,
          values: dict[str, object]) -> Callable[[], Any]:
    """``t``'s demonstration call (its registry entry's) with ``values``, ready to run."""
    handle = getattr(jobs, t.call.handle)
    args = t.arguments(values)
    return lambda: handle(conn, queue, *args)


def bring(conn: redis.Redis, queue: str, t: transitions.Transition,
          source: str | None = None) -> dict[str, object]:
    """A new job brought to ``source`` (else where ``t``'s first edge starts) along the
    registry's shortest way, and the values ``t``'s demonstration call takes for it (its id is
    ``values["job"]``; :meth:`~echomq_lab.transitions.Transition.arguments` picks them). A retry
    on the way reaches the cap (the way to dead); before a transition that picks its jobs, the
    job's time (its lease, its delay) runs out. RuntimeError if the job is not at ``source``."""
    source = source or t.edges[0].source
    values: dict[str, object] = {
        "job": branded.mint(), "payload": b"{}", "lease": 1 if t.picks else LEASE_MS,
        "delay": 0, "max_attempts": 1, "error": "walked"}  # fmt: skip
    if source != transitions.START:
        for name in transitions.path(transitions.START, source):
            reply = _call(conn, queue, transitions.get(name), values)()
            if isinstance(reply, jobs.Claimed):
                values["token"] = reply.token
        row = jobs.record(conn, queue, str(values["job"])) or {}
        if row.get(b"state", b"").decode() != source:
            raise RuntimeError(f"the walk could not bring a job to {source} for {t.name}")
        if t.picks:
            key = keyspace.queue_key(queue, SET_OF_STATE[source])
            with reaching(conn):
                due = conn.zscore(key, str(values["job"]))
            clock.wait_for_server(conn, int(due or 0) + 1)
    values["lease"] = LEASE_MS
    return values


def demonstrate(conn: redis.Redis, queue: str, t: transitions.Transition, step: Step) -> Any:
    """Bring a new job to where ``t`` starts (:func:`bring`; those calls are not steps), then
    call ``t`` through ``step``, under its handle's name; return what ``step`` returned."""
    return step(t.call.handle, _call(conn, queue, t, bring(conn, queue, t)))


def transition_calls(conn: redis.Redis, queue: str) -> list[Traced]:
    """:func:`walk` on ``queue`` (emptied first and last), counting each call's requests."""
    queues.reset(conn, queue)
    warm_up(conn)
    out: list[Traced] = []

    def traced(name: str, call: Callable[[], Any]) -> Any:
        with counting() as calls:
            reply = call()
        shown = transitions.by_handle(name.split()[0]).reads(reply)
        out.append(Traced(name, shown, tuple(calls)))
        return reply

    try:
        walk(conn, queue, traced)
    finally:
        queues.reset(conn, queue)
    return out


@dataclass(frozen=True)
class Cycle:
    """``jobs`` job cycles (enqueue, claim, complete) timed and counted on one connection."""

    jobs: int
    seconds: float
    per_transition: dict[str, tuple[str, ...]]
    requests: int

    @property
    def jobs_per_s(self) -> float:
        """Jobs per second of the host's clock."""
        return self.jobs / self.seconds if self.seconds > 0 else 0.0

    @property
    def requests_per_job(self) -> float:
        """Requests (round trips) per job."""
        return self.requests / self.jobs


def job_cycles(conn: redis.Redis, queue: str, n: int,
               progress: Callable[[int], None] | None = None, every: int = 25) -> Cycle:
    """Run ``n`` job cycles on ``queue`` (emptied first and last), counting each call's
    requests; ``progress(done)`` is called every ``every`` jobs and at the end."""
    jobs.check_int("jobs", n, 1, 100_000)
    queues.reset(conn, queue)
    warm_up(conn)
    per: dict[str, tuple[str, ...]] = {}  # the most requests each transition sent
    requests = 0
    ids = [branded.mint() for _ in range(n)]
    start = time.perf_counter()
    try:
        for done, job_id in enumerate(ids, 1):
            with counting() as sent:
                jobs.enqueue(conn, queue, job_id, b'{"n": 1}')
            with counting() as got:
                claimed = queues.claim_expected(conn, queue, job_id, LEASE_MS)
            with counting() as settled:
                jobs.complete(conn, queue, job_id, claimed.token)
            for name, calls in zip(CYCLE, (sent, got, settled), strict=True):
                per[name] = max(per.get(name, ()), tuple(calls), key=len)
            requests += len(sent) + len(got) + len(settled)
            if progress is not None and (done % every == 0 or done == n):
                progress(done)
        seconds = time.perf_counter() - start
    finally:
        queues.reset(conn, queue)
    return Cycle(n, seconds, per, requests)


#: The file ``make bench`` writes next to the notebooks for lab-one-round-trip (charts beside it).
BENCH_FILE = "bench-results.json"


@dataclass(frozen=True)
class Bench:
    """What a benchmark run left for lab-one-round-trip: a header, tables and charts by name."""

    header: str
    tables: dict[str, str] = field(default_factory=dict)
    charts: dict[str, Path] = field(default_factory=dict)

    def show(self, name: str) -> Image | None:
        """Print the table ``name`` and return the chart ``name`` (a cell shows it), if any."""
        if name in self.tables:
            print(self.tables[name])
        if name not in self.charts:
            return None
        from IPython.display import Image

        return Image(filename=str(self.charts[name]))  # type: ignore[no-untyped-call]


def read_bench(folder: str | Path = ".") -> Bench:
    """What ``make bench`` wrote in ``folder``; for a missing or unreadable file, a Bench
    whose one-line header says so and how to measure it."""
    where = Path(folder) / BENCH_FILE
    how = "run `make bench` in the repository to measure it; the live counts work without it"
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
        header, tables = str(data["header"]), dict(data["tables"])
        charts = {str(k): where.parent / str(v) for k, v in dict(data.get("charts", {})).items()}
    except FileNotFoundError:
        return Bench(f"No benchmark run next to this page ({BENCH_FILE}): {how}.")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Bench(f"{where.name} could not be read ({type(exc).__name__}): {how}.")
    return Bench(header, {str(k): str(v) for k, v in tables.items()},
                 {k: path for k, path in charts.items() if path.is_file()})
