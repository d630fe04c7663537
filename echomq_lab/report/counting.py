"""Count, live, the requests a client sends: the lab's one request counter.

:func:`counting` records every command a client sends inside a block (:func:`counting_requests`
the writes of every client, at the socket); :func:`walk` takes one
job through every transition, each call through a step the caller gives (the benchmark's step
reads the server's command counters); :func:`transition_calls` walks with :func:`counting`
as the step, on whichever server the lab is using. No benchmark file is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
from redis.connection import AbstractConnection

from echomq_lab import branded, clock, jobs, queues, scripts

#: 2100-01-01 in Unix ms: a run-at time that is never due while the walk runs.
FAR_FUTURE_MS = 4_102_444_800_000


def _counted_pipeline(pipe: Any, calls: list[str]) -> Any:
    """``pipe`` with its flushes counted: each ``execute`` that sends is one request, recorded
    as ``MULTI[n]`` (a transaction of n commands) or ``PIPELINE[n]``; a command sent at once
    while the pipeline WATCHes is one request under its own name."""
    flush: Callable[..., Any] = pipe.execute
    at_once: Callable[..., Any] = pipe.immediate_execute_command

    def execute(*args: Any, **options: Any) -> Any:
        if pipe.command_stack or pipe.watching:
            kind = "MULTI" if pipe.transaction else "PIPELINE"
            calls.append(f"{kind}[{len(pipe.command_stack)}]")
        return flush(*args, **options)

    def immediate(*args: Any, **options: Any) -> Any:
        calls.append(str(args[0]).upper())
        return at_once(*args, **options)

    pipe.__dict__["execute"] = execute
    pipe.__dict__["immediate_execute_command"] = immediate
    return pipe


@contextmanager
def counting_requests() -> Iterator[list[int]]:
    """Count the requests any client of this process writes inside the block: one per
    command sent alone, one per pipeline (its commands travel together). ``[n]`` is the count.

    It counts at the socket, below redis-py's retries, so a resend would count twice; the
    :func:`counting` record above names each call but sees only what the caller asked for.
    """
    box = [0]
    original: Callable[..., Any] = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> Any:
        box[0] += 1
        return original(self, command, check_health)

    setattr(AbstractConnection, "send_packed_command", counted)  # noqa: B010
    try:
        yield box
    finally:
        setattr(AbstractConnection, "send_packed_command", original)  # noqa: B010


@contextmanager
def counting(conn: redis.Redis) -> Iterator[list[str]]:
    """Record every request ``conn`` sends inside the block, in order: one entry a round trip.

    A command sent alone is recorded by its name (``EVALSHA``); a pipeline made with
    ``conn.pipeline()`` inside the block is recorded once per flush, as ``MULTI[n]`` or
    ``PIPELINE[n]``. The client is restored when the block ends, even on an error.
    """
    calls: list[str] = []
    original: Callable[..., Any] = conn.execute_command
    make_pipeline: Callable[..., Any] = conn.pipeline

    def counted(*args: Any, **options: Any) -> Any:
        calls.append(str(args[0]).upper())
        return original(*args, **options)

    def pipeline(*args: Any, **options: Any) -> Any:
        return _counted_pipeline(make_pipeline(*args, **options), calls)

    conn.__dict__["execute_command"] = counted
    conn.__dict__["pipeline"] = pipeline
    try:
        yield calls
    finally:
        conn.__dict__.pop("execute_command", None)
        conn.__dict__.pop("pipeline", None)


def calls_text(calls: Sequence[str]) -> str:
    """``["EVALSHA"]`` → ``"1 EVALSHA"``; several → ``"3 requests: EVALSHA, SCRIPT LOAD, ..."``."""
    if not calls:
        return "no request"
    if len(calls) == 1:
        return f"1 {calls[0]}"
    return f"{len(calls)} requests: {', '.join(calls)}"


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


#: One step of :func:`walk`: run ``call`` (one handle's call) as ``name``; return its reply.
Step = Callable[[str, Callable[[], Any]], Any]


def walk(conn: redis.Redis, queue: str, step: Step) -> None:
    """Walk one new job through every handle of the transitions on ``queue``, each call
    made through ``step``.

    The job is enqueued, claimed, its lease extended, failed and promoted back, claimed with a
    1 ms lease that ``reap`` takes back, failed at the cap of three attempts (dead), reprocessed,
    claimed a fourth time and completed; then two jobs are scheduled (``enqueue_in``,
    ``enqueue_at``). A step is named by the handle it calls (a second call of one handle says
    why in brackets). Waiting for the 1 ms lease reads the server's clock, outside every step.
    RuntimeError when a reply is not the one the walk expects.
    """
    first, later, fixed = branded.mint(), branded.mint(), branded.mint()

    def run(name: str, call: Callable[[], object], want: object) -> None:
        reply = step(name, call)
        if reply != want:
            raise RuntimeError(f"{name} on {queue!r} answered {reply!r}, expected {want!r}")

    def claim(lease_ms: int) -> jobs.Claimed:
        got = step("claim", lambda: jobs.claim(conn, queue, lease_ms))
        if not isinstance(got, jobs.Claimed) or got.id != first:
            raise RuntimeError(f"claim on {queue!r} handed {got!r}, expected {first}")
        return got

    run("enqueue", lambda: jobs.enqueue(conn, queue, first, b'{"n": 1}'), "enqueued")
    c = claim(60_000)
    step("extend", lambda: jobs.extend(conn, queue, first, c.token, 60_000))
    run("retry", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "boom"), "scheduled")
    run("promote", lambda: jobs.promote(conn, queue), 1)
    claim(1)
    clock.wait_out_lease(conn, queue, first)
    run("reap", lambda: jobs.reap(conn, queue), 1)
    c = claim(60_000)
    run("retry (at the cap)", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "x"), "dead")
    run("reprocess", lambda: jobs.reprocess(conn, queue, first), "pending")
    c = claim(60_000)
    run("complete", lambda: jobs.complete(conn, queue, first, c.token), "completed")
    run("enqueue_in", lambda: jobs.enqueue_in(conn, queue, later, b"{}", 60_000), "scheduled")
    run("enqueue_at", lambda: jobs.enqueue_at(conn, queue, fixed, b"{}", FAR_FUTURE_MS),
        "scheduled")  # fmt: skip


#: How :func:`transition_calls` shows a reply that is not a word, by the handle that gave it.
SHOWN: dict[str, Callable[[Any], str]] = {
    "claim": lambda c: "nothing pending" if c is None else f"token {c.token}",
    "extend": lambda _: "lease pushed back",
    "promote": lambda n: f"{n} moved",
    "reap": lambda n: f"{n} returned",
}


def transition_calls(conn: redis.Redis, queue: str) -> list[Traced]:
    """:func:`walk` one job through every transition on ``queue``, counting each call's
    requests. The queue is emptied first and last; the script cache is warmed first."""
    queues.reset(conn, queue)
    warm_up(conn)
    out: list[Traced] = []

    def traced(name: str, call: Callable[[], Any]) -> Any:
        with counting(conn) as calls:
            reply = call()
        out.append(Traced(name, SHOWN.get(name, str)(reply), tuple(calls)))
        return reply

    try:
        walk(conn, queue, traced)
    finally:
        queues.reset(conn, queue)
    return out
