"""Durable writes: run a script, then ask with WAIT how many replicas have it.

Replication is asynchronous: a primary answers a script before its replicas have the write,
and a failover in between loses it. :func:`run_and_wait` sends the script's EVALSHA and a
``WAIT numreplicas timeout`` on one connection to the node that owns the keys, pipelined (one
round trip, two commands), and returns the reply with the number of replicas that
acknowledged. WAIT narrows the window; it is not consensus, and it undoes nothing when too few
replicas answer: the caller decides what a short count means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.exceptions import AskError, NoScriptError, ResponseError

from echomq_lab import errors
from echomq_lab.connection import node_client, reaching
from echomq_lab.scripts import Arg, Script

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
