"""Shared fixtures: one client per backend (fakeredis, Valkey, Redis).

Real servers are started lazily, once per session, the first time a test
needs them, and stopped at session end. A missing server binary skips the
tests that need it, or fails them when ``ECHOMQ_REQUIRE_BACKENDS=1`` (CI).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import fakeredis
import pytest
import redis

import echomq_lab

sys.path.insert(0, str(Path(__file__).parent))

from servers import Kind, RunningServer, ServerStartError, start_server  # noqa: E402

BACKENDS: tuple[str, ...] = ("fakeredis", "valkey", "redis")
REQUIRE_ENV = "ECHOMQ_REQUIRE_BACKENDS"


def fresh_fake_client() -> redis.Redis:
    """Return a client on a brand-new, empty in-process server (isolated per test)."""
    return echomq_lab.connect(fresh=True)


@dataclass
class BackendReport:
    """What happened to one backend during the session, for the terminal summary."""

    tests: int = 0
    version: str = ""
    skipped: str = ""


_REPORT: dict[str, BackendReport] = {name: BackendReport() for name in BACKENDS}
_REPORT["fakeredis"].version = f"fakeredis {fakeredis.__version__} (in-process)"


def backends_required() -> bool:
    """True when a missing backend must fail the run instead of skipping."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def _unavailable(kind: str, reason: str) -> NoReturn:
    """Record ``reason`` for ``kind`` and skip the test (or fail it when required)."""
    _REPORT[kind].skipped = reason
    if backends_required():
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
    pytest.skip(reason)


def _session_server(kind: Kind) -> Iterator[RunningServer]:
    """Start a ``kind`` server for the session, yield it, stop it afterwards."""
    try:
        server = start_server(kind)
    except ServerStartError as exc:
        _unavailable(kind, str(exc))
    _REPORT[kind].version = f"{kind}-server {server.version} ({server.binary})"
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[RunningServer]:
    """Session-wide Valkey (>= 8) process on a free loopback port."""
    yield from _session_server("valkey")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RunningServer]:
    """Session-wide Redis (7.x) process on a free loopback port."""
    yield from _session_server("redis")


@pytest.fixture(scope="session")
def valkey_url(valkey_server: RunningServer) -> str:
    """``redis://127.0.0.1:PORT/0`` of the session's Valkey server."""
    return valkey_server.url


@pytest.fixture(scope="session")
def redis_url(redis_server: RunningServer) -> str:
    """``redis://127.0.0.1:PORT/0`` of the session's Redis server."""
    return redis_server.url


@pytest.fixture(params=BACKENDS, ids=list(BACKENDS))
def backend_name(request: pytest.FixtureRequest) -> str:
    """Name of the backend under test: "fakeredis", "valkey" or "redis"."""
    return str(request.param)


@pytest.fixture
def conn(backend_name: str, request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """A bytes-returning client on an empty backend (data and script cache flushed)."""
    if backend_name == "fakeredis":
        client = fresh_fake_client()
    else:
        url: str = request.getfixturevalue(f"{backend_name}_url")
        client = echomq_lab.connect(url)
        client.flushall()
        client.script_flush()
    _REPORT[backend_name].tests += 1
    try:
        yield client
    finally:
        client.close()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Count the tests that ask for a real server directly (not through ``conn``)."""
    names = getattr(item, "fixturenames", ())
    for kind in ("valkey", "redis"):
        if f"{kind}_url" in names or f"{kind}_server" in names:
            _REPORT[kind].tests += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print one line per backend: how many tests used it, or why it was skipped."""
    terminalreporter.section("echomq backends")
    for name, rep in _REPORT.items():
        if rep.skipped:
            verdict = "FAILED" if backends_required() else "skipped"
            line = f"{verdict} ({rep.skipped.splitlines()[0]})"
        elif rep.tests:
            line = f"ran {rep.tests} test(s) on {rep.version}"
        else:
            line = "not used"
        terminalreporter.write_line(f"{name:>9}: {line}")
