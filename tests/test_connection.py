"""connect(): one shared embedded server per process, fresh ones on request, real ones by URL."""

from __future__ import annotations

import pytest
import redis

from echomq_lab import branded, connect, jobs
from echomq_lab.connection import EMBEDDED, ENV_URL, describe


def test_two_connects_are_two_workers_on_one_embedded_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV_URL, raising=False)
    producer, worker = connect(), connect()
    queue = f"shared-{branded.mint().lower()[-6:]}"
    job = branded.mint()
    assert jobs.enqueue(producer, queue, job, b"cargo") == "enqueued"
    claimed = jobs.claim(worker, queue, 1000)
    assert claimed is not None and claimed.id == job and claimed.payload == b"cargo"
    assert jobs.complete(producer, queue, job, claimed.token) == "completed"


def test_fresh_embedded_servers_share_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_URL, raising=False)
    a, b = connect(fresh=True), connect(fresh=True)
    jobs.enqueue(a, "iso", branded.mint(), b"x")
    assert jobs.claim(b, "iso", 1000) is None
    assert jobs.browse(connect(), "iso", 5) == []
    assert describe(a) == EMBEDDED


def test_the_environment_names_a_real_server(
    monkeypatch: pytest.MonkeyPatch, valkey_url: str
) -> None:
    monkeypatch.setenv(ENV_URL, valkey_url)
    conn = connect()
    assert not describe(conn).startswith("embedded")
    assert "valkey_version" in conn.info("server")


def test_a_real_client_never_resends_silently(valkey_url: str) -> None:
    """A lost reply must reach the caller: a resent script (say, a claim) could run twice."""
    conn = connect(valkey_url)
    connection = conn.connection_pool.make_connection()
    try:
        assert connection.retry.get_retries() == 0
    finally:
        connection.disconnect()


def test_fresh_with_a_url_is_refused() -> None:
    with pytest.raises(ValueError, match="fresh=True"):
        connect("redis://127.0.0.1:6379/0", fresh=True)


def test_replies_stay_bytes(valkey_url: str) -> None:
    conn = connect(valkey_url)
    assert isinstance(conn, redis.Redis)
    conn.set("emq-bytes-probe", b"\xff\x00")
    assert conn.get("emq-bytes-probe") == b"\xff\x00"
    conn.delete("emq-bytes-probe")
