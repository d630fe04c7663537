"""Count, live, the requests a client sends: the lab's one request counter.

:func:`counting` records every command a client sends inside a block; :func:`transition_calls`
walks one job through every transition and counts each call's requests, on whichever server
the lab is using. No benchmark file is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis

from echomq_lab import branded, clock, jobs, queues, scripts

#: 2100-01-01 in Unix ms: a run-at time that is never due while the walk runs.
FAR_FUTURE_MS = 4_102_444_800_000


@contextmanager
def counting(conn: redis.Redis) -> Iterator[list[str]]:
    """Record the name of every command ``conn`` sends inside the block, in order.

    Each ``execute_command`` call of a client that is not pipelining is one request and one
    reply: one round trip. The client is restored when the block ends, even on an error.
    """
    calls: list[str] = []
    original: Callable[..., Any] = conn.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        calls.append(str(args[0]).upper())
        return original(*args, **options)

    conn.__dict__["execute_command"] = counted
    try:
        yield calls
    finally:
        conn.__dict__.pop("execute_command", None)


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


def transition_calls(conn: redis.Redis, queue: str) -> list[Traced]:
    """Walk one job through every transition on ``queue`` and count each call's requests.

    Each step is named by the handle it calls (a second call of one handle says why in
    brackets). The queue is emptied first and last; the script cache is warmed first. Waiting
    for a lease to run out (before ``reap``) reads the server's clock, outside the counted calls.
    """
    queues.reset(conn, queue)
    warm_up(conn)
    out: list[Traced] = []

    def traced(name: str, call: Callable[[], object], show: Callable[[Any], str] = str) -> Any:
        with counting(conn) as calls:
            reply = call()
        out.append(Traced(name, show(reply), tuple(calls)))
        return reply

    def token(c: jobs.Claimed | None) -> str:
        return "nothing pending" if c is None else f"token {c.token}"

    def claim(lease_ms: int) -> jobs.Claimed:
        got: jobs.Claimed | None = traced("claim", lambda: jobs.claim(conn, queue, lease_ms), token)
        if got is None:
            raise RuntimeError(f"claim on {queue!r} found nothing pending")
        return got

    first, later, fixed = branded.mint(), branded.mint(), branded.mint()
    try:
        traced("enqueue", lambda: jobs.enqueue(conn, queue, first, b'{"n": 1}'))
        c = claim(60_000)
        traced(
            "extend",
            lambda: jobs.extend(conn, queue, first, c.token, 60_000),
            lambda _: "lease pushed back",
        )
        traced("retry", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "boom"))
        traced("promote", lambda: jobs.promote(conn, queue), lambda n: f"{n} moved")
        c = claim(1)
        clock.wait_out_lease(conn, queue, first)
        traced("reap", lambda: jobs.reap(conn, queue), lambda n: f"{n} returned")
        c = claim(60_000)
        traced("retry (at the cap)", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "x"))
        traced("reprocess", lambda: jobs.reprocess(conn, queue, first))
        c = claim(60_000)
        traced("complete", lambda: jobs.complete(conn, queue, first, c.token))
        traced("enqueue_in", lambda: jobs.enqueue_in(conn, queue, later, b"{}", 60_000))
        traced("enqueue_at", lambda: jobs.enqueue_at(conn, queue, fixed, b"{}", FAR_FUTURE_MS))
    finally:
        queues.reset(conn, queue)
    return out
