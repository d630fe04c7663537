"""Durable claims: run a script, then ask with WAIT how many replicas have it.

Replication is asynchronous: a primary answers a script before its replicas have the write,
and a failover in between loses it. :func:`run_and_wait` sends the script's EVALSHA and a
``WAIT numreplicas timeout`` on one connection to the node that owns the keys, pipelined (one
round trip, two commands), and returns the reply with the number of replicas that
acknowledged. WAIT narrows the window; it is not consensus, and it undoes nothing when too few
replicas answer: the caller decides what a short count means. :func:`claim` is the cluster
lab's durable claim: the course's claim, then WAIT, and no work on a token no replica holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.exceptions import AskError, NoScriptError, ResponseError

from echomq_lab import errors, jobs, keyspace
from echomq_lab.connection import node_client, reaching
from echomq_lab.scripts import Arg, Script, load

#: How long a durable claim waits for its replicas by default, in ms.
WAIT_MS = 1000
#: How often a redirected (MOVED/ASK) or not-yet-loaded (NOSCRIPT) call is sent again; both
#: mean the script did not run, so sending it again cannot run it twice.
_ATTEMPTS = 3


def _unknown_wait(reply: object) -> bool:
    """True when the server does not know WAIT (the embedded one): it has no replicas."""
    return isinstance(reply, ResponseError) and "unknown command" in str(reply).lower()


def _send(node: redis.Redis, script: Script, keys: Sequence[str], args: Sequence[Arg],
          replicas: int, timeout_ms: int) -> list[Any]:
    pipe = node.pipeline(transaction=False)
    pipe.evalsha(script.sha, len(keys), *keys, *args)
    pipe.wait(replicas, timeout_ms)
    return list(pipe.execute(raise_on_error=False))


def _settled(script: Script, reply: object, acked: object) -> tuple[Any, int]:
    """The pair :func:`run_and_wait` returns, or the typed error the replies stand for."""
    if isinstance(reply, ResponseError):
        raise script.refusal(reply)
    if _unknown_wait(acked):
        return reply, 0
    if isinstance(acked, Exception):
        raise acked
    return reply, int(str(acked))


def run_and_wait(conn: redis.Redis, script: Script, keys: Sequence[str], args: Sequence[Arg],
                 replicas: int, timeout_ms: int) -> tuple[Any, int]:
    """Run ``script`` on the node owning ``keys`` and WAIT for ``replicas`` for ``timeout_ms``.

    Returns ``(reply, acked)``: the script's reply and how many replicas acknowledged every
    write of that connection so far (0 on a server that has no replication, like the embedded
    one). A script refusal raises its typed error, a lost server
    :class:`errors.ServerUnavailable`.
    """
    node = node_client(conn, keys[0])
    for _ in range(_ATTEMPTS):
        with reaching(conn):
            reply, acked = _send(node, script, keys, args, replicas, timeout_ms)
            if isinstance(reply, NoScriptError):
                script.load_into(node)
                continue
            if isinstance(reply, AskError):  # MOVED too: the slot lives elsewhere now
                if isinstance(conn, RedisCluster):
                    conn.nodes_manager.initialize()
                node = node_client(conn, keys[0])
                continue
            return _settled(script, reply, acked)
    raise errors.ServerUnavailable(
        f"the node owning {keys[0]} kept redirecting the call; the cluster is changing hands"
    )


def claim(
    conn: redis.Redis, queue: str, lease_ms: int, *, replicas: int, timeout_ms: int = WAIT_MS
) -> jobs.Claimed | None:
    """:func:`jobs.claim`, then WAIT up to ``timeout_ms`` for ``replicas`` replicas to hold it.

    Raises :class:`errors.NotReplicated` when fewer acknowledged: the job stays leased, but its
    token may not survive a failover, so the worker must not start on it (the lease runs out
    and the reaper hands the job on). None when nothing is pending.
    """
    keys = jobs.sets(queue, "pending", "active")
    args: list[Arg] = [keyspace.job_prefix(queue), jobs.check_lease(lease_ms)]
    wanted = jobs.check_int("replicas", replicas, 0, 64)
    wait_ms = jobs.check_int("timeout_ms", timeout_ms, 1, jobs.MAX_MS)
    for _ in range(jobs.CLAIM_RUNS):
        reply, acked = run_and_wait(conn, load("claim"), keys, args, wanted, wait_ms)
        if len(reply) == 2:  # only members with no job behind them: look again
            continue
        if not reply:
            return None
        claimed = jobs.Claimed(reply[0].decode("ascii"), reply[1], reply[2])
        if acked < wanted:
            raise errors.NotReplicated(
                f"claim of {claimed.id} (token {claimed.token}) reached {acked} of {wanted} "
                f"replica(s) in {wait_ms} ms; it may not survive a failover, do not start on it",
                job_id=claimed.id, token=claimed.token, acked=acked, wanted=wanted,
            )
        return claimed
    return None
