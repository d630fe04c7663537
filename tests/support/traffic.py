"""What a block of code sent to the server: the client's commands, and the server's own count.

:func:`traffic` records every command the lab's clients send inside a ``with`` block (through
the package's one request counter, :func:`echomq_lab.connection.tapped`, read by
:func:`echomq_lab.measure.commands`) and, on a real server, the change in
``INFO stats commandstats`` across it. :func:`assert_one_evalsha` checks
that a block sent one EVALSHA and nothing else, from both sides. fakeredis has no INFO, so
there only the client's side is checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import redis
from redis.cluster import RedisCluster
from redis.connection import Connection

from echomq_lab.connection import tapped
from echomq_lab.measure import command_name, commands
from echomq_lab.scripts import load, names

_PACKER: Any = cast(Any, Connection)()  # never connected: only encodes commands as RESP
INFO_ARGS = ("INFO", "stats", "commandstats")
SCRIPT_RUNNERS = ("cmdstat_eval", "cmdstat_evalsha", "cmdstat_eval_ro", "cmdstat_evalsha_ro")


def packed_size(*args: Any) -> int:
    """Bytes the server receives for one command (RESP, as redis-py encodes it)."""
    chunks: list[bytes] = _PACKER.pack_command(*args)
    return sum(len(chunk) for chunk in chunks)


@dataclass
class Traffic:
    """What one block sent: client-side commands, and on real servers the INFO deltas."""

    sent: list[tuple[bytes, ...]] = field(default_factory=list)  # each command's words
    calls: dict[str, int] = field(default_factory=dict)  # commandstats deltas (non-zero)
    total_commands: int = 0
    input_bytes: int = 0

    def names(self) -> list[str]:
        """The command names sent, upper-case, in order."""
        return [command_name(words) for words in self.sent]


Stats = tuple[int, int, dict[str, int]]


def _one_node_stats(node: redis.Redis) -> Stats:
    info = node.info(*INFO_ARGS[1:])
    calls = {k: int(v["calls"]) for k, v in info.items() if k.startswith("cmdstat_")}
    return int(info["total_commands_processed"]), int(info["total_net_input_bytes"]), calls


def _server_stats(conn: redis.Redis) -> dict[str, Stats]:
    """Each node's counters: the one server's, or every primary's of a cluster (by name)."""
    if not isinstance(conn, RedisCluster):
        return {"": _one_node_stats(conn)}
    return {
        n.name: _one_node_stats(cast(redis.Redis, conn.get_redis_connection(n)))
        for n in conn.get_primaries()
    }


def _served(now: dict[str, Stats], before: dict[str, Stats]) -> str:
    """The node whose counters moved beyond the INFO read (on a cluster: the primary that ran
    the block's commands); the only node of a single server."""
    moved = [name for name in now
             if any(v != before[name][2].get(k, 0) for k, v in now[name][2].items()
                    if k != "cmdstat_info")]
    return moved[0] if len(moved) == 1 else next(iter(now))


def _settle(out: Traffic, conn: redis.Redis, before: dict[str, Stats]) -> None:
    """Fill ``out`` with the server's counters now, less ``before``."""
    now = _server_stats(conn)
    node = _served(now, before)
    (total, nbytes, calls), was = now[node], before[node]
    out.total_commands = total - was[0]
    out.input_bytes = nbytes - was[1]
    deltas = {k: v - was[2].get(k, 0) for k, v in calls.items()}
    out.calls = {k: v for k, v in deltas.items() if v}


@contextmanager
def traffic(conn: redis.Redis, real: bool) -> Iterator[Traffic]:
    """Record the commands sent inside the block (and ``conn``'s server's counters when
    ``real``)."""
    out = Traffic()
    before = _server_stats(conn) if real else None
    with tapped(lambda packed: out.sent.extend(commands(packed))):
        yield out
    if before is not None:
        _settle(out, conn, before)


def assert_one_evalsha(t: Traffic, real: bool, sha: str) -> None:
    """The block sent exactly one EVALSHA of ``sha`` and nothing else."""
    assert t.names() == ["EVALSHA"], t.names()
    assert t.sent[0][1] == sha.encode()
    if not real:
        return
    assert t.calls.get("cmdstat_evalsha") == 1
    assert t.calls.get("cmdstat_info") == 1  # the first INFO read
    assert not any(k.startswith("cmdstat_script") for k in t.calls), t.calls
    assert not any(t.calls.get(k) for k in SCRIPT_RUNNERS if k != "cmdstat_evalsha")
    assert "cmdstat_fcall" not in t.calls
    inside = sum(v for k, v in t.calls.items() if k not in ("cmdstat_info", "cmdstat_evalsha"))
    assert t.total_commands == 1 + 1 + inside
    assert t.input_bytes == packed_size(*INFO_ARGS) + packed_size(*t.sent[0])


def preload(conn: redis.Redis) -> None:
    """Load every script into the server's cache, checking each SHA the server gives back."""
    for name in names():
        assert conn.script_load(load(name).source) == load(name).sha
