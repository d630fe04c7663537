"""Where a queue lives on a cluster: each key's slot, the primary that owns it, who answered.
Primaries are named in slot order (``primary 1`` serves slot 0); a single server is ``the
server``, owner of every slot."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import redis
from redis.cluster import RedisCluster
from redis.exceptions import ClusterCrossSlotError

from echomq_lab import branded, jobs, keyspace
from echomq_lab.connection import describe, reaching
from echomq_lab.measure import commandstats

SLOTS = 16384
T = TypeVar("T")


@dataclass(frozen=True)
class Primary:
    """One primary: its name in the lab (``primary 1``...), address and slot ranges."""

    name: str
    address: str
    slots: tuple[tuple[int, int], ...]

    def ranges(self) -> str:
        return ", ".join(f"{lo}-{hi}" for lo, hi in self.slots)


def primaries(conn: redis.Redis) -> list[Primary]:
    """Every primary, in slot order; a single server is one primary serving every slot."""
    if not isinstance(conn, RedisCluster):
        return [Primary("the server", describe(conn), ((0, SLOTS - 1),))]
    with reaching(conn):
        table = cast(dict[tuple[int, int], dict[str, Any]], conn.cluster_slots())
    by_address: dict[str, list[tuple[int, int]]] = {}
    for (lo, hi), owner in sorted(table.items()):
        host, port = owner["primary"][:2]
        by_address.setdefault(f"{host}:{port}", []).append((int(lo), int(hi)))
    return [Primary(f"primary {i}", addr, tuple(r))
            for i, (addr, r) in enumerate(by_address.items(), 1)]


def owner(conn: redis.Redis, key: str, known: list[Primary] | None = None) -> Primary:
    """The primary that owns ``key``'s slot."""
    s = keyspace.slot(key)
    for p in known if known is not None else primaries(conn):
        if any(lo <= s <= hi for lo, hi in p.slots):
            return p
    raise LookupError(f"no primary serves slot {s}")


def server_keyslot(conn: redis.Redis, key: str) -> int | None:
    """The server's ``CLUSTER KEYSLOT``, or None where it has no cluster support."""
    with reaching(conn):
        try:
            if isinstance(conn, RedisCluster):
                return int(conn.cluster_keyslot(key))
            return int(conn.cluster("KEYSLOT", key))
        except redis.ResponseError:
            return None


@dataclass(frozen=True)
class KeyPlace:
    """One key: the slot the lab computes, the slot the server says, its owner."""

    key: str
    slot: int
    server_slot: int | None
    owner: Primary

    def line(self) -> str:
        said = "-" if self.server_slot is None else str(self.server_slot)
        return f"{self.key:<44} slot {self.slot:>5}   server {said:>5}   {self.owner.name}"


def places(conn: redis.Redis, queue: str, job_id: str | None = None) -> list[KeyPlace]:
    """Where each key of ``queue`` lives: its four sets, and ``job_id``'s row when given."""
    keys = [keyspace.queue_key(queue, name) for name in keyspace.SET_NAMES]  # checks the name
    keys += [keyspace.job_key(queue, job_id)] if job_id else []
    known = primaries(conn)
    return [KeyPlace(k, keyspace.slot(k), server_keyslot(conn, k), owner(conn, k, known))
            for k in keys]


def spread(conn: redis.Redis, queues: Iterable[str]) -> dict[str, int]:
    """How many of ``queues`` each primary owns (every primary named, even with none)."""
    known = primaries(conn)
    counts = Counter(owner(conn, keyspace.base(q), known).name for q in queues)
    return {p.name: counts.get(p.name, 0) for p in known}


def _script_calls(conn: redis.Redis, known: list[Primary]) -> dict[str, int]:
    """How many EVALSHA each primary of the cluster ``conn`` has run so far."""
    assert isinstance(conn, RedisCluster)
    out = {}
    for p in known:
        node = conn.get_node(node_name=p.address)
        client = cast(redis.Redis, conn.get_redis_connection(node))
        with reaching(conn):
            stats = commandstats(client)
        out[p.name] = stats["evalsha"].calls if "evalsha" in stats else 0
    return out


def answered_by(conn: redis.Redis, action: Callable[[], T]) -> tuple[T, list[str]]:
    """Run ``action`` (a transition) and name the primaries whose EVALSHA count moved."""
    known = primaries(conn)
    if not isinstance(conn, RedisCluster):
        return action(), [known[0].name]
    before = _script_calls(conn, known)
    result = action()
    after = _script_calls(conn, known)
    return result, [name for name in after if after[name] > before[name]]


def cross_slot(conn: redis.Redis, first: str, second: str) -> str:
    """The one-line answer to a raw ``EVAL`` of one key of each of two queues, sent to the
    node owning the first (on a cluster: ``CROSSSLOT ...``)."""
    keys = [keyspace.queue_key(first, "pending"), keyspace.queue_key(second, "pending")]
    node: redis.Redis = conn
    if isinstance(conn, RedisCluster):
        node = cast(redis.Redis, conn.get_redis_connection(conn.get_node_from_key(keys[0])))
    with reaching(conn):
        try:
            reply = node.eval("return redis.call('EXISTS', KEYS[1], KEYS[2])", 2, *keys)
        except ClusterCrossSlotError as exc:
            return f"CROSSSLOT {exc}"
        except redis.ResponseError as exc:
            return f"refused: {exc}"
    return f"accepted (one server holds every slot): {reply!r}"


def one_per_primary(conn: redis.Redis, queues: Iterable[str]) -> dict[str, str]:
    """The first of ``queues`` each primary owns, by primary name (in primary order)."""
    known = primaries(conn)
    found: dict[str, str] = {}
    for q in queues:
        found.setdefault(owner(conn, keyspace.base(q), known).name, q)
    return {p.name: found[p.name] for p in known if p.name in found}


def walk_one_job(conn: redis.Redis, queue: str) -> list[tuple[str, str, str]]:
    """Enqueue, claim and complete one job on ``queue``: (verb, reply, who answered) each."""
    job = branded.mint("JOB")
    enq, who = answered_by(conn, lambda: jobs.enqueue(conn, queue, job, b"work"))
    steps: list[tuple[str, str, str]] = [("enqueue", enq, ", ".join(who))]
    got, who = answered_by(conn, lambda: jobs.claim(conn, queue, 30_000))
    steps.append(("claim", f"token {got.token}" if got else "nothing pending", ", ".join(who)))
    if got is not None:
        done, who = answered_by(conn, lambda: jobs.complete(conn, queue, got.id, got.token))
        steps.append(("complete", done, ", ".join(who)))
    return steps
