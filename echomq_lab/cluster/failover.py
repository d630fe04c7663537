"""The fence across a failover: a token is only as durable as the write that minted it.

:func:`run` stages one failover on a local cluster, every call in a ledger audited at the end:
worker 1 claims on a primary cut off from its replicas, the primary dies, a replica is promoted
and mints the same token for worker 2, unless both use :func:`durable_claim`.
``python -m echomq_lab.cluster.failover`` runs :func:`experiment` both ways and prints it."""

from __future__ import annotations

import contextlib
import signal
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import redis
from redis.cluster import RedisCluster
from redis.exceptions import AskError, NoScriptError, ResponseError

from echomq_lab import branded, errors, jobs, keyspace, queues
from echomq_lab.cluster import Cluster, ClusterError, Node, Shard, start_cluster
from echomq_lab.connection import connect, node_client, reaching
from echomq_lab.measure import commandstats, counting
from echomq_lab.scripts import Arg, Script, load
from echomq_lab.servers import wait_until
from echomq_lab.sim.audit import Audit, Ledger, audit
from echomq_lab.snapshot import snapshot

#: A node fails after one second and a cut-off replica may still be promoted: a quick failover.
NODE_TIMEOUT_MS, REPLICA_VALIDITY_FACTOR = 1000, 0
#: No lease runs out during a run; the durable claims wait this long for their replica.
LEASE_MS, WAIT_MS = 60_000, 200
#: How often a redirected (MOVED/ASK) or NOSCRIPT call, which did not run, is sent again.
_ATTEMPTS = 3


def run_and_wait(conn: redis.Redis, script: Script, keys: Sequence[str], args: Sequence[Arg],
                 replicas: int, timeout_ms: int) -> tuple[Any, int]:
    """Run ``script`` on the node owning ``keys`` pipelined with ``WAIT replicas timeout_ms``:
    ``(reply, acked)``, acked being 0 on the embedded server. A refusal raises its typed error."""
    node = node_client(conn, keys[0])
    for _ in range(_ATTEMPTS):
        with reaching(conn):
            pipe = node.pipeline(transaction=False)
            pipe.evalsha(script.sha, len(keys), *keys, *args)
            pipe.wait(replicas, timeout_ms)
            reply, acked = pipe.execute(raise_on_error=False)
            if isinstance(reply, NoScriptError):
                script.load_into(node)
                continue
            if isinstance(reply, AskError):  # MOVED too: the slot lives elsewhere now
                if isinstance(conn, RedisCluster):
                    conn.nodes_manager.initialize()
                node = node_client(conn, keys[0])
                continue
            if isinstance(reply, ResponseError):
                raise script.refusal(reply)
            if isinstance(acked, ResponseError) and "unknown command" in str(acked).lower():
                return reply, 0  # the embedded server knows no WAIT: it has no replicas
            if isinstance(acked, Exception):
                raise acked
            return reply, int(acked)
    raise errors.ServerUnavailable(f"the node owning {keys[0]} kept redirecting the call; "
                                   "the cluster is changing hands")


def durable_claim(conn: redis.Redis, queue: str, lease_ms: int, *, replicas: int,
                  timeout_ms: int = 1000) -> jobs.Claimed | None:
    """:func:`jobs.claim`, then WAIT up to ``timeout_ms`` for ``replicas`` replicas to hold it;
    None when nothing is pending. Fewer acknowledgements raise :class:`errors.NotReplicated`:
    the job stays leased but its token may not survive a failover, so the worker must not start
    on it (the lease runs out and the reaper hands the job on)."""
    k = keyspace.keys(queue)
    keys = [k.pending, k.active]
    args: list[Arg] = [k.rows, jobs.check_lease(lease_ms)]
    wanted = jobs.check_int("replicas", replicas, 0, 64)
    wait_ms = jobs.check_int("timeout_ms", timeout_ms, 1, jobs.MAX_MS)
    for _ in range(jobs.CLAIM_RUNS):
        reply, acked = run_and_wait(conn, load("claim"), keys, args, wanted, wait_ms)
        if len(reply) == 2:  # only members with no job behind them: look again
            continue
        claimed = jobs.claimed_from(reply)
        if claimed is None:
            return None
        if acked < wanted:
            raise errors.NotReplicated(
                f"claim of {claimed.id} (token {claimed.token}) reached {acked} of {wanted} "
                f"replica(s) in {wait_ms} ms; it may not survive a failover, do not start on it",
                job_id=claimed.id, token=claimed.token, acked=acked, wanted=wanted,
            )
        return claimed
    return None


def _claim(conn: redis.Redis, queue: str, *, durable: bool) -> jobs.Claimed | None:
    if durable:
        return durable_claim(conn, queue, LEASE_MS, replicas=1, timeout_ms=WAIT_MS)
    return jobs.claim(conn, queue, LEASE_MS)


@dataclass
class Run:
    """One staged failover: what happened (``steps``), every call (``ledger``) and the audit."""

    durable: bool
    queue: str
    job_id: str
    ledger: Ledger
    audit: Audit | None = None
    steps: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[str]:
        return self.audit.violations if self.audit is not None else []

    def calls(self) -> list[str]:
        """The ledger in plain lines."""
        lines = []
        for c in self.ledger.calls:
            token = f"token {c.token}" if c.token else "no token"
            what = c.reply if c.outcome in ("accepted", "refused") else f"{c.outcome}: {c.reply}"
            lines.append(f"{c.seq}. {c.actor:<8} {c.verb:<8} {token:<8} -> {what}")
        return lines


def pick_queue(cluster: Cluster, prefix: str = "failover", replicas: int = 2) -> tuple[str, Shard]:
    """The first queue ``prefix-N`` whose primary has ``replicas`` live replicas, and its shard."""
    shards = [s for s in cluster.shards() if len(s.replicas) >= replicas]
    if not shards:
        raise ClusterError(f"no primary of this cluster has {replicas} replica(s) left; "
                           "start a new one")
    for i in range(10_000):
        queue = f"{prefix}-{i}"
        slot = keyspace.slot(keyspace.base(queue))
        for shard in shards:
            if any(lo <= slot <= hi for lo, hi in shard.slots):
                return queue, shard
    raise ClusterError("no queue name landed on a replicated primary")  # pragma: no cover


def _replication(node: Node) -> dict[str, Any]:
    """``node``'s INFO replication, or ``{"error": ...}`` when it does not answer."""
    with node.client() as client:
        try:
            info = cast(dict[str, Any], client.info("replication"))
        except redis.RedisError as exc:
            return {"error": str(exc)}
    return {k: info.get(k) for k in ("role", "master_port", "master_link_status")}


def _wait_following(replica: Node, primary: Node) -> None:
    """Tell ``replica`` to follow ``primary`` every second until it does (30 s at most)."""
    with primary.client() as client:
        primary_id = client.cluster("MYID")
    following = {"role": "slave", "master_port": primary.port, "master_link_status": "up"}
    for _ in range(30):
        with replica.client() as client, contextlib.suppress(redis.RedisError):
            client.cluster("REPLICATE", primary_id)  # refused while it catches up: ask again
        if wait_until(lambda: _replication(replica) == following, 1.0):
            return
    raise ClusterError(f"{replica.address} did not follow {primary.address} in 30 s; "
                       f"it says {_replication(replica)}")


def _claim_as(worker: str, conn: redis.Redis, r: Run) -> jobs.Claimed | None:
    """``worker`` claims ``r``'s job, into the ledger and the steps."""
    started = r.ledger.now()
    try:
        got = _claim(conn, r.queue, durable=r.durable)
    except errors.NotReplicated as exc:
        call = r.ledger.record_error(worker, "claim", exc.job_id, exc.token, exc,
                                     started=started, lease_ms=LEASE_MS)
        r.steps.append(f"{worker} claims: {call.reply}, does not start ({call.detail})")
        return None
    if got is not None:
        r.ledger.record(worker, "claim", got.id, got.token, "accepted", "claimed",
                        started=started, lease_ms=LEASE_MS)
    r.steps.append(f"{worker} claims: " + (f"token {got.token}" if got else "nothing pending"))
    return got


def _complete_as(worker: str, conn: redis.Redis, r: Run, token: int) -> None:
    """``worker`` completes ``r``'s job with ``token``, into the ledger and the steps."""
    started = r.ledger.now()
    try:
        reply: str = jobs.complete(conn, r.queue, r.job_id, token)
    except errors.EchoMQError as exc:
        reply = r.ledger.record_error(worker, "complete", r.job_id, token, exc,
                                      started=started).reply
    else:
        r.ledger.record(worker, "complete", r.job_id, token, "accepted", reply, started=started)
    r.steps.append(f"{worker} completes with token {token}: {reply}")


def _row_text(node: Node, queue: str, job_id: str) -> str:
    """The job's row as ``node`` itself holds it."""
    with node.client() as client:
        row = cast(dict[bytes, bytes], client.hgetall(keyspace.job_key(queue, job_id)))
    fields = (f"{k.decode()}={row[k].decode()}" for k in (b"state", b"attempts"))
    return ", ".join(fields) if row else "no row"


def run(cluster: Cluster, *, durable: bool, prefix: str = "failover") -> Run:
    """Stage one failover on ``cluster`` and audit it; the killed primary stays down."""
    queue, shard = pick_queue(cluster, prefix)
    primary, replica, second_replica = shard.primary, shard.replicas[0], shard.replicas[1]
    slot = keyspace.slot(keyspace.base(queue))
    other = next(s.primary for s in cluster.shards() if s.primary != primary)
    conn1 = connect(cluster.url_via(other))  # a seed that survives this shard's failover
    queues.reset(conn1, queue)
    r = Run(durable, queue, branded.mint("JOB"), Ledger())
    started = r.ledger.now()
    r.ledger.record("host", "enqueue", r.job_id, 0, "accepted",
                  jobs.enqueue(conn1, queue, r.job_id, b"work"), started=started)
    with primary.client() as node:
        acked = int(node.wait(2, 10_000))
        r.steps.append(f"enqueued {r.job_id} on the primary of slot {slot}; WAIT 2 -> {acked}: "
                       "both replicas have the job")
        with second_replica.client() as second:  # it may not run for election
            second.config_set("cluster-replica-no-failover", "yes")
        replica.signal(signal.SIGSTOP)
        second_replica.signal(signal.SIGSTOP)
        node.client_kill_filter(_type="replica")
    r.steps.append("both replicas frozen (SIGSTOP), their links cut (CLIENT KILL TYPE "
                   "replica); the second may not run for election (cluster-replica-no-failover)")
    held = _claim_as("worker 1", conn1, r)
    conn1.close()
    primary.signal(signal.SIGKILL)
    replica.signal(signal.SIGCONT)
    t0 = time.monotonic()
    if not wait_until(lambda: _replication(replica).get("role") == "master", 30.0):
        raise ClusterError(f"{replica.address} was not promoted within 30 s")
    r.steps.append(f"primary killed (SIGKILL), one replica thawed; promoted in "
                   f"{time.monotonic() - t0:.1f} s")
    promoted_row = _row_text(replica, queue, r.job_id)  # read before the other replica syncs
    second_replica.signal(signal.SIGCONT)
    _wait_following(second_replica, replica)
    r.steps.append("the second replica thawed and told to follow the promoted one")
    conn2 = connect(cluster.url_via(replica))
    r.steps.append(f"the promoted replica holds the row as: {promoted_row}")
    second = _claim_as("worker 2", conn2, r)
    if held is not None:  # worker 1, reconnected, finishes its work
        _complete_as("worker 1", conn2, r, held.token)
    if second is not None:
        _complete_as("worker 2", conn2, r, second.token)
    r.audit = audit(r.ledger.calls, snapshot(conn2, queue))
    conn2.close()
    return r


@dataclass(frozen=True)
class Cost:
    """What a claim costs one way: round trips, commands the server ran, latency."""

    durable: bool
    round_trips: float
    commands: float
    median_ms: float
    mean_ms: float

    def line(self) -> str:
        mode = "durable (replicas=1)" if self.durable else "plain"
        return (f"{mode:<21} {self.round_trips:.1f} round trip(s), {self.commands:.1f} "
                f"command(s), median {self.median_ms:.3f} ms, mean {self.mean_ms:.3f} ms")


def _server_calls(node: Node) -> int:
    with node.client() as client:
        stats = commandstats(client)
    return sum(stats[c].calls for c in ("evalsha", "wait") if c in stats)


def measure(cluster: Cluster, claims: int = 200, *, durable: bool) -> Cost:
    """Time ``claims`` claims one way on a queue whose primary has a replica (the jobs stay
    claimed: the cluster is thrown away after)."""
    queue, shard = pick_queue(cluster, "cost", replicas=1)
    if not wait_until(lambda: cluster.settled_for(shard.primary), 30.0):
        raise ClusterError(f"{shard.primary.address} still maps slots to a dead node after 30 s")
    conn = connect(cluster.url_via(shard.primary))
    queues.reset(conn, queue)
    _claim(conn, queue, durable=durable)  # loads the script
    for _ in range(claims):
        jobs.enqueue(conn, queue, branded.mint("JOB"), b"x")
    took: list[float] = []
    before = _server_calls(shard.primary)
    with counting() as sent:
        for _ in range(claims):
            t0 = time.perf_counter()
            _claim(conn, queue, durable=durable)
            took.append((time.perf_counter() - t0) * 1000)
    commands = _server_calls(shard.primary) - before
    conn.close()
    return Cost(durable, len(sent) / claims, commands / claims,
                statistics.median(took), statistics.fmean(took))


#: Fresh clusters :func:`experiment` may stage on (the promoted replica may lose the row).
STAGINGS = 3


def experiment(durable: bool, claims: int = 200) -> tuple[Run, Cost]:
    """One run on a cluster of its own (two replicas a primary), and the cost of ``claims``
    claims on it; staged again on a new cluster when the promoted replica lost the row."""
    for attempt in range(1, STAGINGS + 1):
        with start_cluster(replicas=2, node_timeout_ms=NODE_TIMEOUT_MS,
                           replica_validity_factor=REPLICA_VALIDITY_FACTOR) as cluster:
            r = run(cluster, durable=durable)
            lost = any(step.endswith("holds the row as: no row") for step in r.steps)
            if attempt == STAGINGS or not lost:
                return r, measure(cluster, claims, durable=durable)
    raise AssertionError("unreachable")  # pragma: no cover


def main() -> int:
    for durable in (False, True):
        r, cost = experiment(durable)
        print(f"--- {'durable claim' if durable else 'plain claim'} ({r.queue})")
        print("\n".join(r.steps + r.calls()))
        print(f"violations: {len(r.violations)}")
        print("\n".join(f"  {v}" for v in r.violations))
        print(cost.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
