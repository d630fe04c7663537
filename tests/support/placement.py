"""Where a test runs: once or on every backend, and beside which other tests.

**Once, or once per backend.** A test that takes ``conn`` (or ``backend_name``) runs on every
backend of :mod:`.backends`, since what it checks is what a server did. A test whose checks all
happen on the host -- an argument refused before any command is sent, a panel's labels and
tooltips -- would only repeat itself there: mark it ``@pytest.mark.host`` (a module:
``pytestmark = pytest.mark.host``) and it runs once, on the embedded fakeredis
(:data:`HOST_BACKEND`), whatever ``ECHOMQ_BACKENDS`` names. What such a check reads on a real
server (that a refusal moved nothing in ``INFO commandstats``) stays per backend, in one test
that walks every case (tests/test_bad_input.py's ``..._send_nothing_to_the_server``). A host
test may not ask for a server of its own (:data:`SERVER_FIXTURES`): its collection fails,
saying so.

**Beside which tests.** ``make test`` runs pytest in several processes (pytest-xdist,
``--dist loadgroup``); :func:`group` names the unit of work each test belongs to and
:func:`ordered` puts the longest units first. The processes collect, the main process
schedules: each process writes its tests' units to a file (:func:`write_units`, in the folder
:data:`UNITS_ENV` names) and the main process's scheduler reads them (:func:`read_units`). (Not
pytest-xdist's own ``xdist_group`` marks: with pytest 9 they no longer reach its scheduler.)
One test file is one unit (a notebook's cells
and its reader's probe share one kernel; a module's Chromium, JupyterLab or server is started
once), and every file with a test marked ``browser`` joins one of two browser units: the files that
use a costly session fixture a browser test shares (:data:`SHARED_WITH_BROWSERS`: the
Binder-like install, then made once) join :data:`APP_GROUP` (the app: the install, Voila, a
Chromium), the others :data:`BROWSER_GROUP` (the site and JupyterLab in a Chromium). Within a
unit one browser at a time; the two units run beside each other, so the app's install and
Voila's runs, mostly Python, overlap the site's pages. A long test that shares nothing costly
with the rest of its file (no module fixture; its servers are the session's) is marked
``alone`` and is a unit by itself, so the file's long tests run side by side (the differential
tests, minutes each); a process running one is sent a short unit next (:func:`held_behind`).
A new test needs nothing of this: its file is its unit; mark it ``browser`` if it drives
Chromium, ``slow`` if it runs long.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

#: The marker of a test that runs once, not once per backend.
HOST = "host"
#: The backend a host test runs on: in-process, always there, nothing to start.
HOST_BACKEND = "fakeredis"
#: Fixtures that reach a real server: a host test asking for one is a mistake.
SERVER_FIXTURES = (
    "own_server", "own_server_of", "valkey_url", "redis_url", "cluster_url", "browser_url",
    "valkey_server", "redis_server", "cluster_server", "valkey_tools",
)
#: The unit of work of every file that drives Chromium, but those of :data:`APP_GROUP`.
BROWSER_GROUP = "browser"
#: The unit of work of every file that uses a fixture of :data:`SHARED_WITH_BROWSERS`.
APP_GROUP = "browser-app"
#: Session fixtures too costly to make twice that a browser test uses: a file using one joins
#: :data:`APP_GROUP` (one process makes it once).
SHARED_WITH_BROWSERS = ("binder_install",)
#: The marker of a long test that is a unit of work by itself.
ALONE = "alone"
#: The environment variable naming the folder where each process writes its tests' units.
UNITS_ENV = "ECHOMQ_TEST_UNITS"


class _Marked(Protocol):
    """What :func:`group` and :func:`ordered` read of a pytest item."""

    @property
    def path(self) -> Path: ...

    def get_closest_marker(self, name: str) -> object | None: ...


Item = TypeVar("Item", bound=_Marked)


def host_misuse(name: str, fixturenames: Sequence[str]) -> str | None:
    """Why host test ``name`` may not run as written (it asks for a server), or None."""
    wanted = [f for f in SERVER_FIXTURES if f in fixturenames]
    if not wanted:
        return None
    return (f"{name} is marked {HOST!r} (runs once, on {HOST_BACKEND}) but asks for "
            f"{', '.join(wanted)}: a test that needs a server is not a host test")


def browser_files(items: Sequence[_Marked]) -> dict[Path, str]:
    """{file: its browser unit} for the files with a test marked ``browser`` or using a fixture
    of :data:`SHARED_WITH_BROWSERS`: :data:`APP_GROUP` for the latter, else
    :data:`BROWSER_GROUP`."""
    units: dict[Path, str] = {}
    for item in items:
        if any(name in SHARED_WITH_BROWSERS for name in getattr(item, "fixturenames", ())):
            units[item.path] = APP_GROUP
        elif item.get_closest_marker("browser") is not None:
            units.setdefault(item.path, BROWSER_GROUP)
    return units


def group(item: _Marked, browsers: Mapping[Path, str], root: Path) -> str:
    """The unit of work ``item`` runs in: its browser unit (``browsers``, from
    :func:`browser_files`), its file, or (marked :data:`ALONE`) its test function, every
    parameter of it together."""
    if item.path in browsers:
        return browsers[item.path]
    try:
        file = item.path.relative_to(root).as_posix()
    except ValueError:
        file = item.path.as_posix()
    if item.get_closest_marker(ALONE) is not None:
        return f"{file}::{getattr(item, 'originalname', '')}"
    return file


def _rank(item: _Marked, browsers: Mapping[Path, str]) -> int:
    """0 for the browser units, 1 for a test marked :data:`ALONE`, 2 for a notebook or a slow
    test, 3 for the rest."""
    if item.path in browsers:
        return 0
    if item.get_closest_marker(ALONE) is not None:
        return 1
    if item.path.suffix == ".ipynb" or item.get_closest_marker("slow") is not None:
        return 2
    return 3


def ordered(items: Sequence[Item], browsers: Mapping[Path, str]) -> list[Item]:
    """``items`` with the long units first (the browsers, then notebooks and slow files),
    every file's tests kept together and in their order (a notebook's cells above all)."""
    rank: dict[Path, int] = {}
    for item in items:
        rank[item.path] = min(rank.get(item.path, 3), _rank(item, browsers))
    first: dict[Path, int] = {}
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
    return sorted(items, key=lambda item: (rank[item.path], first[item.path]))


def write_units(units: Mapping[str, str], worker: str) -> None:
    """Write ``units`` ({test id: unit}) for the main process, if it asked (:data:`UNITS_ENV`)."""
    folder = os.environ.get(UNITS_ENV)
    if folder:
        (Path(folder) / f"{worker}.json").write_text(json.dumps(dict(units)), encoding="utf-8")


def read_units() -> dict[str, str]:
    """{test id: unit}, as the processes wrote them; empty if none did."""
    folder = os.environ.get(UNITS_ENV)
    units: dict[str, str] = {}
    for path in sorted(Path(folder).glob("*.json")) if folder else []:
        units.update(json.loads(path.read_text(encoding="utf-8")))
    return units


def held_behind(running: Sequence[str]) -> bool:
    """Whether the units still ``running`` on a process are all single :data:`ALONE` tests. A
    pytest-xdist process holds its last test until it has the next one, so the unit it is then
    sent waits behind that long test: it should be a short one, from the end of the queue."""
    return bool(running) and all("::" in unit for unit in running)


def unit_of(nodeid: str, units: Mapping[str, str]) -> str:
    """The unit of test ``nodeid``: as written, else its file (a notebook's cells together)."""
    return units.get(nodeid) or nodeid.split("::", 1)[0]
