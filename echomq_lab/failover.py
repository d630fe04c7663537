"""The fence across a failover, measured: a token is only as durable as the write that minted it.

:func:`run` stages one failover on a local cluster with a replica per primary, the same way
each time: the job is enqueued and known to reach the replica (``WAIT 1``); the replica is
frozen and its link cut, so nothing more reaches it; worker 1 claims (token 1 on the primary
only); the primary is killed; the replica thaws, is promoted, and worker 2 claims the same job.
The promoted replica never saw the first claim, so it mints token 1 again. Every call goes into
a :class:`~echomq_lab.sim.audit.Ledger` and the run ends with the simulation's audit.

With ``durable=True`` both workers claim with ``durable.claim(..., replicas=1)``: worker 1's
claim reaches no replica, :class:`errors.NotReplicated` is raised and worker 1 never starts.
:func:`measure` times claims; :func:`experiment` does both on a cluster of its own.
``python -m echomq_lab.failover`` runs the experiment both ways and prints it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, cast

import redis

from echomq_lab import branded, errors, jobs, keyspace, queues
from echomq_lab.cluster import Cluster, ClusterError, Node, Shard, start_cluster
from echomq_lab.connection import connect
from echomq_lab.durable import claim as durable_claim
from echomq_lab.measure import commandstats, counting
from echomq_lab.sim.audit import Audit, Call, Ledger, audit
from echomq_lab.snapshot import snapshot

#: Cluster settings that make the failover quick and certain: a node is judged failed after
#: one second, and a replica cut off from its primary may still be promoted.
NODE_TIMEOUT_MS = 1000
REPLICA_VALIDITY_FACTOR = 0
#: Long enough that no lease runs out during a run: the reaper plays no part here.
LEASE_MS = 60_000
#: How long a durable claim waits for its replica.
WAIT_MS = 200


def start(**options: Any) -> Cluster:
    """A cluster of three primaries with two replicas each, set up for :func:`run` (one run
    per primary: each run leaves its shard with one primary and one replica)."""
    return start_cluster(
        replicas=2, node_timeout_ms=NODE_TIMEOUT_MS,
        replica_validity_factor=REPLICA_VALIDITY_FACTOR, **options,
    )


@dataclass
class Run:
    """One staged failover: what happened (``steps``), every call (``ledger``), the audit."""

    durable: bool
    queue: str
    job_id: str
    ledger: Ledger
    audit: Audit | None = None
    steps: list[str] = field(default_factory=list)
    promoted_in_s: float = 0.0

    @property
    def violations(self) -> list[str]:
        """What the audit found wrong: each fence violation in one line."""
        return self.audit.violations if self.audit is not None else []

    def calls(self) -> list[str]:
        """The ledger in plain lines: who called what with which token, and the answer."""
        return [_call_line(c) for c in self.ledger.calls]


def _call_line(c: Call) -> str:
    token = f"token {c.token}" if c.token else "no token"
    what = c.reply if c.outcome in ("accepted", "refused") else f"{c.outcome}: {c.reply}"
    return f"{c.seq}. {c.actor:<8} {c.verb:<8} {token:<8} -> {what}"


def pick_queue(cluster: Cluster, prefix: str = "failover") -> tuple[str, Shard]:
    """The first queue ``prefix-N`` whose slot's primary has two live replicas, and that shard.

    Raises :class:`ClusterError` when no primary has two replicas left (each run uses one up).
    """
    shards = [s for s in cluster.shards() if len(s.replicas) >= 2]
    if not shards:
        raise ClusterError("no primary of this cluster has two replicas left; start a new one")
    for i in range(10_000):
        queue = f"{prefix}-{i}"
        slot = keyspace.slot(keyspace.base(queue))
        for shard in shards:
            if any(lo <= slot <= hi for lo, hi in shard.slots):
                return queue, shard
    raise ClusterError("no queue name landed on a replicated primary")  # pragma: no cover


def _other_node(cluster: Cluster, shard: Shard) -> Node:
    """A live primary of another shard: a seed that survives this shard's failover."""
    return next(s.primary for s in cluster.shards() if s.primary != shard.primary)


def _promoted(cluster: Cluster, replica: Node, slot: int) -> bool:
    try:
        return cluster.owner(slot).primary.port == replica.port
    except (ClusterError, redis.RedisError):
        return False


def _following(cluster: Cluster, replica: Node, primary: Node) -> bool:
    try:
        shard = cluster.owner(cluster_first_slot(cluster, primary))
    except (ClusterError, redis.RedisError):
        return False
    if replica not in shard.replicas:
        return False
    client = replica.client()
    try:
        info = client.info("replication")
    except redis.RedisError:
        return False
    finally:
        client.close()
    return info.get("master_link_status") == "up" and info.get("master_port") == primary.port


def _replication(node: Node) -> str:
    client = node.client()
    try:
        info = client.info("replication")
    except redis.RedisError as exc:
        return f"nothing ({exc})"
    finally:
        client.close()
    keys = ("role", "master_port", "master_link_status")
    return ", ".join(f"{k}={info.get(k)}" for k in keys)


def cluster_first_slot(cluster: Cluster, primary: Node) -> int:
    """The first slot ``primary`` serves now."""
    return next(s.first_slot for s in cluster.shards() if s.primary == primary)


def _never_fail_over(replica: Node) -> None:
    """Keep ``replica`` out of elections, so the other replica is the one promoted."""
    client = replica.client()
    try:
        client.config_set("cluster-replica-no-failover", "yes")
    finally:
        client.close()


def _follow(replica: Node, primary_id: str) -> None:
    """Ask ``replica`` to replicate from the node ``primary_id`` (``CLUSTER REPLICATE``)."""
    client = replica.client()
    try:
        client.cluster("REPLICATE", primary_id)
    except redis.RedisError:
        pass  # not ready yet (still catching up on the cluster's news): asked again later
    finally:
        client.close()


def _wait_following(cluster: Cluster, replica: Node, primary: Node, timeout_s: float = 30.0
                    ) -> None:
    """Return once ``replica`` replicates from ``primary``, telling it to (``CLUSTER
    REPLICATE``) every second until it does; ClusterError after ``timeout_s``."""
    primary_id = next(s.primary_id for s in cluster.shards() if s.primary == primary)
    deadline = time.monotonic() + timeout_s
    asked = 0.0
    while not _following(cluster, replica, primary):
        if time.monotonic() > deadline:
            raise ClusterError(f"{replica.address} did not follow {primary.address} in "
                               f"{timeout_s:g} s; it says {_replication(replica)}")
        if time.monotonic() - asked > 1.0:
            _follow(replica, primary_id)
            asked = time.monotonic()
        time.sleep(0.05)


def _wait_promotion(cluster: Cluster, replica: Node, slot: int, timeout_s: float = 30.0) -> float:
    """Seconds until ``replica`` serves ``slot``; ClusterError after ``timeout_s``."""
    t0 = time.monotonic()
    while not _promoted(cluster, replica, slot):
        if time.monotonic() - t0 > timeout_s:
            raise ClusterError(f"{replica.address} was not promoted within {timeout_s:g} s")
        time.sleep(0.05)
    return time.monotonic() - t0


def _claim(conn: redis.Redis, queue: str, *, durable: bool) -> jobs.Claimed | None:
    """A plain claim (the course's), or a durable one that waits for one replica."""
    if durable:
        return durable_claim(conn, queue, LEASE_MS, replicas=1, timeout_ms=WAIT_MS)
    return jobs.claim(conn, queue, LEASE_MS)


class _Actor:
    """One worker's calls, each written to the ledger with its outcome."""

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name, self.ledger = name, ledger

    def claim(self, conn: redis.Redis, run: Run) -> jobs.Claimed | None:
        started = self.ledger.now()
        try:
            got = _claim(conn, run.queue, durable=run.durable)
        except errors.NotReplicated as exc:
            self.ledger.record_error(self.name, "claim", exc.job_id, exc.token, exc,
                                     started=started, lease_ms=LEASE_MS)
            return None
        if got is not None:
            self.ledger.record(self.name, "claim", got.id, got.token, "accepted", "claimed",
                               started=started, lease_ms=LEASE_MS)
        return got

    def complete(self, conn: redis.Redis, run: Run, token: int) -> None:
        started = self.ledger.now()
        try:
            reply = jobs.complete(conn, run.queue, run.job_id, token)
        except errors.EchoMQError as exc:
            self.ledger.record_error(self.name, "complete", run.job_id, token, exc,
                                     started=started)
            return
        self.ledger.record(self.name, "complete", run.job_id, token, "accepted", reply,
                           started=started)


def _row_text(node: Node, queue: str, job_id: str) -> str:
    """The job's row as ``node`` itself holds it (read there, not routed)."""
    client = node.client()
    try:
        row = cast(dict[bytes, bytes], client.hgetall(keyspace.job_key(queue, job_id)))
    finally:
        client.close()
    if not row:
        return "no row"
    return ", ".join(f"{k.decode()}={row[k].decode()}" for k in (b"state", b"attempts"))


def run(cluster: Cluster, *, durable: bool, prefix: str = "failover") -> Run:
    """Stage one failover on ``cluster`` (see the module text) and audit it.

    The shard used keeps one primary (the promoted replica) and one replica (the second
    replica, thawed once the first was promoted); the killed primary stays down. Run once per
    cluster: a second failover on the same cluster is not staged reliably.
    """
    queue, shard = pick_queue(cluster, prefix)
    primary, replica, second_replica = shard.primary, shard.replicas[0], shard.replicas[1]
    slot = keyspace.slot(keyspace.base(queue))
    seed = cluster.url_via(_other_node(cluster, shard))
    ledger = Ledger()
    w1, w2, host = _Actor("worker 1", ledger), _Actor("worker 2", ledger), "host"
    conn1 = connect(seed)
    queues.reset(conn1, queue)
    job_id = branded.mint("JOB")
    r = Run(durable, queue, job_id, ledger)
    started = ledger.now()
    ledger.record(host, "enqueue", job_id, 0, "accepted",
                  jobs.enqueue(conn1, queue, job_id, b"work"), started=started)
    node = primary.client()
    acked = int(node.wait(2, 10_000))
    r.steps.append(f"enqueued {job_id} on the primary of slot {slot}; WAIT 2 -> {acked}: "
                   "both replicas have the job")
    _never_fail_over(second_replica)
    cluster.freeze(replica)
    cluster.freeze(second_replica)
    node.client_kill_filter(_type="replica")
    node.close()
    r.steps.append("both replicas frozen (SIGSTOP), their links cut (CLIENT KILL TYPE "
                   "replica); the second may not run for election (cluster-replica-no-failover)")
    held = w1.claim(conn1, r)
    r.steps.append(f"worker 1 claims: {_held(held, ledger)}")
    conn1.close()
    cluster.kill(primary)
    cluster.thaw(replica)
    r.promoted_in_s = _wait_promotion(cluster, replica, slot)
    r.steps.append(f"primary killed (SIGKILL), one replica thawed; promoted in "
                   f"{r.promoted_in_s:.1f} s")
    promoted_row = _row_text(replica, queue, job_id)  # read before the other replica syncs
    cluster.thaw(second_replica)
    _wait_following(cluster, second_replica, replica)
    r.steps.append("the second replica thawed and told to follow the promoted one")
    conn2 = connect(cluster.url_via(replica))
    r.steps.append(f"the promoted replica holds the row as: {promoted_row}")
    second = w2.claim(conn2, r)
    r.steps.append(f"worker 2 claims: {_held(second, ledger)}")
    if held is not None:
        conn1 = connect(cluster.url_via(replica))  # worker 1 reconnects and finishes its work
        w1.complete(conn1, r, held.token)
        r.steps.append(f"worker 1 completes with token {held.token}: {ledger.calls[-1].reply}")
        conn1.close()
    if second is not None:
        w2.complete(conn2, r, second.token)
        r.steps.append(f"worker 2 completes with token {second.token}: "
                       f"{ledger.calls[-1].reply}")
    r.audit = audit(ledger.calls, snapshot(conn2, queue))
    conn2.close()
    return r


def _held(got: jobs.Claimed | None, ledger: Ledger) -> str:
    if got is not None:
        return f"token {got.token}"
    last = ledger.calls[-1]
    return f"{last.reply}, does not start ({last.detail})"


@dataclass(frozen=True)
class Cost:
    """What a claim costs, one way: per claim, round trips, commands the server ran, latency."""

    durable: bool
    claims: int
    round_trips: float
    commands: float
    median_ms: float
    mean_ms: float

    def line(self) -> str:
        """One line for a table: the mode, round trips, commands and latencies."""
        mode = "durable (replicas=1)" if self.durable else "plain"
        return (f"{mode:<21} {self.round_trips:.1f} round trip(s), {self.commands:.1f} "
                f"command(s), median {self.median_ms:.3f} ms, mean {self.mean_ms:.3f} ms")


def _healthy_queue(cluster: Cluster, prefix: str) -> tuple[str, Shard]:
    """A queue whose primary still has a replica (for measuring a durable claim)."""
    for i in range(10_000):
        queue = f"{prefix}-{i}"
        shard = cluster.owner(keyspace.slot(keyspace.base(queue)))
        if shard.replicas:
            return queue, shard
    raise ClusterError("no primary of this cluster has a replica")


def _server_calls(node: Node) -> int:
    client = node.client()
    try:
        stats = commandstats(client)
    finally:
        client.close()
    return sum(stats[c].calls for c in ("evalsha", "wait") if c in stats)


def measure(cluster: Cluster, claims: int = 200, *, durable: bool) -> Cost:
    """Time ``claims`` claims one way on a healthy cluster (each completed afterwards)."""
    queue, shard = _healthy_queue(cluster, "cost")
    conn = connect(cluster.url_via(shard.primary))
    queues.reset(conn, queue)
    _claim(conn, queue, durable=durable)  # loads the script
    for _ in range(claims):
        jobs.enqueue(conn, queue, branded.mint("JOB"), b"x")
    took: list[float] = []
    held: list[jobs.Claimed] = []
    before = _server_calls(shard.primary)
    with counting() as sent:
        for _ in range(claims):
            t0 = time.perf_counter()
            got = _claim(conn, queue, durable=durable)
            took.append((time.perf_counter() - t0) * 1000)
            if got is not None:
                held.append(got)
    commands = _server_calls(shard.primary) - before
    for got in held:
        jobs.complete(conn, queue, got.id, got.token)
    conn.close()
    return Cost(durable, claims, len(sent) / claims, commands / claims,
                statistics.median(took), statistics.fmean(took))


#: How many fresh clusters :func:`experiment` may stage on before it gives up: the staging itself
#: (the promoted replica must still hold the enqueued row) can miss on a loaded machine.
STAGINGS = 3


def _staged(r: Run) -> bool:
    """True when the failover was staged as meant: the promoted replica holds the job's row (as
    enqueued). Without it there is nothing to show, whichever way the claim was made."""
    return not any(step.endswith("holds the row as: no row") for step in r.steps)


def experiment(durable: bool, claims: int = 200) -> tuple[Run, Cost]:
    """One run on a cluster of its own (started, then stopped), and the cost of ``claims``
    claims made the same way on it afterwards. A staging that missed (see :func:`_staged`) is
    thrown away and staged again on a new cluster, up to :data:`STAGINGS` times."""
    for _ in range(STAGINGS - 1):
        with start() as cluster:
            r = run(cluster, durable=durable)
            if _staged(r):
                return r, measure(cluster, claims, durable=durable)
    with start() as cluster:
        return run(cluster, durable=durable), measure(cluster, claims, durable=durable)


def main() -> int:
    """Run the experiment both ways, each on a fresh cluster, and print what happened."""
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
