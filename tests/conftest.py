"""Shared fixtures: one client per backend (fakeredis, Valkey, Redis).

The building blocks live in :mod:`echomq_lab.testing` (the backends registry, the launchers and
one session's server pool); this file only turns them into fixtures. Real servers are started
lazily, once per session, the first time a test needs them, and stopped at session end. A
missing server binary skips the tests that need it, saying why, or fails them when
``ECHOMQ_REQUIRE_BACKENDS=1`` (CI). The run ends with an "echomq backends" summary.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn

import pytest

# The helpers assert; let pytest explain their failures as it does for tests.
pytest.register_assert_rewrite("echomq_lab.testing")

import redis  # noqa: E402

from echomq_lab.testing import (  # noqa: E402
    REQUIRE_ENV,
    BackendUnavailable,
    Server,
    ServerPool,
    backend_names,
    backends_required,
    server_kinds,
)

POOL = ServerPool()


def _unavailable(reason: str) -> NoReturn:
    """Skip the test for ``reason`` (or fail it when backends are required)."""
    if backends_required():
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
    pytest.skip(reason)


def _session_server(name: str) -> Server:
    """The session's ``name`` server (started on first use), or a skip/fail saying why not."""
    try:
        return POOL.server(name)
    except BackendUnavailable as exc:
        reason = str(exc)
    _unavailable(reason)  # outside the except: the report shows the reason alone


@pytest.fixture(scope="session")
def server_pool() -> Iterator[ServerPool]:
    """The session's servers; every one of them is stopped when the session ends."""
    try:
        yield POOL
    finally:
        POOL.stop_all()


@pytest.fixture(scope="session")
def valkey_server(server_pool: ServerPool) -> Server:
    """Session-wide Valkey (>= 8) process on a free loopback port."""
    return _session_server("valkey")


@pytest.fixture(scope="session")
def redis_server(server_pool: ServerPool) -> Server:
    """Session-wide Redis (7.x) process on a free loopback port."""
    return _session_server("redis")


@pytest.fixture(scope="session")
def cluster_server(server_pool: ServerPool) -> Server:
    """Session-wide 3-primary Valkey Cluster on free loopback ports."""
    return _session_server("cluster")


@pytest.fixture(scope="session")
def cluster_url(cluster_server: Server) -> str:
    """``redis://127.0.0.1:PORT/0?cluster=1`` of the session's cluster."""
    return cluster_server.url


@pytest.fixture(scope="session")
def valkey_url(valkey_server: Server) -> str:
    """``redis://127.0.0.1:PORT/0`` of the session's Valkey server."""
    return valkey_server.url


@pytest.fixture(scope="session")
def redis_url(redis_server: Server) -> str:
    """``redis://127.0.0.1:PORT/0`` of the session's Redis server."""
    return redis_server.url


@pytest.fixture(params=backend_names(), ids=list(backend_names()))
def backend_name(request: pytest.FixtureRequest) -> str:
    """Name of the backend under test: one of ``echomq_lab.testing.BACKENDS``."""
    return str(request.param)


@pytest.fixture
def conn(backend_name: str, server_pool: ServerPool) -> Iterator[redis.Redis]:
    """A bytes-returning client on an empty backend (data and script cache flushed)."""
    if backend_name in server_kinds():
        _session_server(backend_name)  # started once a session, or a skip/fail saying why
    client = server_pool.client(backend_name)
    server_pool.used(backend_name)
    try:
        yield client
    finally:
        client.close()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Count the tests that ask for a real server directly (not through ``conn``)."""
    names = getattr(item, "fixturenames", ())
    for kind in server_kinds():
        if f"{kind}_url" in names or f"{kind}_server" in names:
            POOL.used(kind)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print one line per backend: how many tests used it, or why it was skipped."""
    terminalreporter.section("echomq backends")
    for line in POOL.summary(backends_required()):
        terminalreporter.write_line(line)
