"""Faults: the server is killed with SIGKILL in the middle of a run and started again.

With an append-only file fsynced on every write, no enqueued job is lost and the ledger's
invariants hold; the workers see the server go away, back off and carry on. Restarted without
persistence, the run reports the loss plainly and still ends (it does not hang).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from echomq_lab import errors
from echomq_lab.servers import RunningServer
from echomq_lab.sim import Result, Settings, Simulation
from tests.support.backends import kill_server, restart_server

pytestmark = pytest.mark.slow  # a few seconds each; still part of `make test`

AOF = ["--appendonly", "yes", "--appendfsync", "always"]
NO_PERSISTENCE = ["--save", "", "--appendonly", "no"]
JOBS = 400
KILL_AFTER = 120  # jobs finished before the kill


@pytest.fixture
def aof_server(own_server_of: Callable[..., RunningServer]) -> Iterator[RunningServer]:
    with own_server_of("valkey", AOF) as server:
        yield server


@pytest.fixture
def volatile_server(own_server_of: Callable[..., RunningServer]) -> Iterator[RunningServer]:
    with own_server_of("valkey", NO_PERSISTENCE) as server:
        yield server


def kill_and_restart(server: RunningServer, down_for: float = 0.3) -> None:
    """SIGKILL the server, wait, start it again with the same command line, port and dir."""
    kill_server(server)
    time.sleep(down_for)  # the workers find it gone and back off
    restart_server(server)


def run_with_a_crash(server: RunningServer, seed: int) -> Result:
    settings = Settings(jobs=JOBS, workers=4, lease_ms=(20, 60), seed=seed, timeout_s=60)
    sim = Simulation(settings, url=server.url)
    results: list[Result] = []
    failures: list[BaseException] = []

    def body() -> None:
        try:
            results.append(sim.run())
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    for _ in range(6000):  # wait (bounded) until the run is well under way
        if sim.finished >= KILL_AFTER or not thread.is_alive():
            break
        time.sleep(0.01)
    assert thread.is_alive() and sim.finished >= KILL_AFTER, "the run never got under way"
    kill_and_restart(server)
    thread.join(timeout=settings.timeout_s + 30)
    assert not thread.is_alive(), "the run did not end after its timeout"
    assert not failures, failures
    return results[0]


def test_kill_9_with_fsynced_aof_loses_nothing(aof_server: RunningServer) -> None:
    result = run_with_a_crash(aof_server, seed=21)
    assert result.violations == [], "\n".join(result.violations[:20])
    assert result.completed + result.dead == JOBS
    assert result.lost_jobs == 0 and result.unfinished_jobs == 0
    # The crash really happened and the workers rode it out.
    assert result.restarts_seen == 1
    assert result.connection_errors > 0
    assert not result.timed_out
    # A lost reply is the host's finding, in the lab's own words, never a made-up wire class.
    lost = {c.reply for c in result.ledger if c.outcome == "lost-reply"}
    assert lost <= {errors.ServerUnavailable.label}, lost
    print(f"\nkill -9 with fsynced AOF: {figures(result)}")


def test_restart_without_persistence_reports_the_loss(volatile_server: RunningServer) -> None:
    result = run_with_a_crash(volatile_server, seed=22)
    assert not result.timed_out, "the run should end on its own once nothing is left"
    assert result.restarts_seen == 1
    assert result.lost_jobs > 0
    assert result.completed + result.dead + result.lost_jobs == JOBS
    assert len(result.violations) == 1, result.violations
    assert result.violations[0].startswith(
        f"{result.lost_jobs} jobs vanished: the server restarted without persistence"
    )
    assert result.verdicts["every job completed exactly once or dead"] is False
    print(f"\nrestart without persistence: {figures(result)}")


def figures(result: Result) -> str:
    """The run's figures in one line (shown with ``pytest -s``)."""
    return (
        f"{result.jobs} jobs, {result.completed} completed, {result.dead} dead, "
        f"{result.lost_jobs} lost, {result.connection_errors} connection errors seen, "
        f"{result.lost_replies} lost replies, {len(result.violations)} violation(s)"
    )
