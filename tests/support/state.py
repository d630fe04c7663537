"""Reading a server whole, for tests that assert every key after a step.

:func:`dump` gives the entire keyspace as plain Python values (rows as dicts, since HGETALL's
order differs between servers); :func:`deadline_window` brackets a call with two reads of the
server's clock, so a test can check a deadline the script computed without trusting the host's
clock. :data:`BINARY` is a payload that exercises binary safety.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import redis

from echomq_lab.clock import server_now_ms

#: A payload with NUL bytes, invalid UTF-8 and over 64 bytes (Redis 7 switches the hash
#: encoding past 64 bytes, which reorders HGETALL).
BINARY = b"\x00head\xff\xfe" + bytes(range(256)) + b"tail\x00"

#: The server's clock (TIME) in ms, the clock every script reads: the library's own reading.
server_ms = server_now_ms

#: Slack (ms) around a bracketing pair of TIME reads; covers clock granularity only.
CLOCK_SLACK_MS = 2


def _content(conn: redis.Redis, key: bytes, kind: str) -> Any:
    """The value of ``key`` (of type ``kind``) as a plain, order-free Python value."""
    if kind == "hash":
        return dict(conn.hgetall(key))
    if kind == "zset":
        pairs: list[tuple[bytes, float]] = cast(Any, conn.zrange(key, 0, -1, withscores=True))
        return [(m, s) for m, s in pairs]
    if kind == "string":
        return conn.get(key)
    if kind == "set":
        return set(conn.smembers(key))
    if kind == "list":
        return conn.lrange(key, 0, -1)
    return kind


def dump(conn: redis.Redis) -> dict[bytes, tuple[str, Any]]:
    """The whole keyspace: every key with its type and its full content (order-free rows)."""
    out: dict[bytes, tuple[str, Any]] = {}
    keys: list[bytes] = cast(Any, conn.keys("*"))
    for key in sorted(keys):
        kind = cast(bytes, conn.type(key)).decode()
        out[key] = (kind, _content(conn, key, kind))
    return out


@contextmanager
def deadline_window(conn: redis.Redis, offset_ms: int) -> Iterator[list[int]]:
    """Bracket a call with two TIME reads; yields [low, high] for ``now + offset_ms``.

    The list is filled when the block exits: any ``now`` read by a script inside the block
    lies between the two reads, so ``now + offset_ms`` lies in [low, high].
    """
    window: list[int] = []
    before = server_ms(conn)
    yield window
    after = server_ms(conn)
    window.extend([before + offset_ms - CLOCK_SLACK_MS, after + offset_ms + CLOCK_SLACK_MS])
