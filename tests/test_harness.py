"""Checks of the test harness itself: every backend answers and behaves alike."""

from __future__ import annotations

import pytest
import redis
from servers import Kind, RunningServer, start_server, version_ok

# One script exercising keys, args, a write, integer/status/float/false replies.
PROBE_SCRIPT = """
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
return {KEYS[1], ARGV[1], n, redis.status_reply('OK'), 3.7, false, 'tail'}
"""
PROBE_EXPECTED = [b"probe", b"5", 5, b"OK", 3, None, b"tail"]


def test_ping(conn: redis.Redis) -> None:
    assert conn.ping() is True


def test_eval_same_reply_on_every_backend(conn: redis.Redis) -> None:
    # Floats truncate to integers; false becomes a nil bulk reply inside the array.
    assert conn.eval(PROBE_SCRIPT, 1, "probe", 5) == PROBE_EXPECTED
    assert conn.get("probe") == b"5"


def test_evalsha_after_script_load(conn: redis.Redis) -> None:
    sha = conn.script_load(PROBE_SCRIPT)
    assert conn.script_exists(sha) == [True]
    assert conn.evalsha(sha, 1, "probe", 2) == [b"probe", b"2", 2, b"OK", 3, None, b"tail"]


def test_lua_error_is_a_response_error(conn: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError):
        conn.eval("return redis.call('NO_SUCH_COMMAND')", 0)


def test_responses_are_bytes(conn: redis.Redis) -> None:
    conn.set("k", "v")
    assert conn.get("k") == b"v"


@pytest.mark.parametrize("round_", ["first", "second"])
def test_each_test_starts_empty(conn: redis.Redis, round_: str) -> None:
    """Whichever round runs second sees the first one's key and script flushed."""
    sha = conn.script_load("return 'leftover'")
    assert conn.dbsize() == 0
    conn.set("leftover", round_)
    conn.script_flush()
    assert conn.script_exists(sha) == [False]
    conn.script_load("return 'leftover'")


def test_fake_servers_are_isolated() -> None:
    import conftest

    first, second = conftest.fresh_fake_client(), conftest.fresh_fake_client()
    first.set("only-here", 1)
    assert second.get("only-here") is None


def _major(version: str) -> int:
    return int(version.split(".")[0])


def test_valkey_version(valkey_server: RunningServer) -> None:
    assert _major(valkey_server.version) >= 8
    with redis.Redis.from_url(valkey_server.url) as client:
        info = client.info("server")
    assert str(info["valkey_version"]) == valkey_server.version


def test_redis_version(redis_server: RunningServer) -> None:
    assert _major(redis_server.version) == 7
    with redis.Redis.from_url(redis_server.url) as client:
        info = client.info("server")
    assert "valkey_version" not in info
    assert str(info["redis_version"]) == redis_server.version


def test_version_rules() -> None:
    assert version_ok("valkey", "8.1.8") and version_ok("valkey", "9.0.0")
    assert not version_ok("valkey", "7.2.4")
    assert version_ok("redis", "7.0.15")
    assert not version_ok("redis", "6.2.0") and not version_ok("redis", "8.0.0")


@pytest.mark.parametrize("kind", ["valkey", "redis"])
def test_stop_ends_the_process(kind: Kind, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue(f"{kind}_server")  # same skip/fail policy as the session server
    server = start_server(kind)
    server.stop()
    assert server.proc.returncode is not None
    assert not server.workdir.exists()
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(server.url, socket_connect_timeout=1).ping()
    server.stop()  # idempotent
