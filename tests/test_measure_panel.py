"""The lab-06 panel, headless: "measure now" on each backend, the counts read back exactly.

Speeds are not asserted (no wall-clock thresholds); the counts are: every transition of the
cycle sends one EVALSHA, so a job is three requests, and python-rq, driven on the same
connection, sends more per job. Afterwards nothing of either is left on the server.
"""

from __future__ import annotations

import time

import pytest
import redis

from echomq_lab.report import counting, live
from echomq_lab.widgets import MeasurePanel
from tests.support.state import dump


@pytest.fixture(autouse=True)
def _one_server(backend_name: str) -> None:
    if backend_name == "cluster":
        pytest.skip("the live measure counts requests on one server's connection pool; a "
                    "cluster client keeps one pool per node, so this lab measures one server")

WALKED = ["enqueue", "claim", "extend", "retry", "promote", "claim", "reap", "claim",
          "retry (at the cap)", "reprocess", "claim", "complete", "enqueue_in", "enqueue_at"]


def test_measure_now_counts_one_round_trip_per_transition(conn: redis.Redis) -> None:
    panel = MeasurePanel(conn, jobs=30)
    assert panel.text() == "not measured yet"
    cycle = panel.run(wait=True)
    assert cycle is not None and cycle is panel.cycle and cycle.jobs == 30
    assert cycle.per_transition == {n: ("EVALSHA",) for n in live.CYCLE}
    assert cycle.requests == 90 and cycle.requests_per_job == 3
    assert cycle.jobs_per_s > 0 and panel.progress.value == 1.0
    lines = panel.counts_text().splitlines()
    assert lines[:4] == ["enqueue:    1 EVALSHA", "claim:      1 EVALSHA",
                         "complete:   1 EVALSHA", "per job:    3 requests, every one an EVALSHA"]
    assert [t.name for t in panel.walk] == WALKED
    assert all(t.calls == ("EVALSHA",) for t in panel.walk)
    assert panel.last_ok and panel.last_message.startswith("30 job cycles in ")
    assert "jobs per second on one connection" in panel.last_message
    assert panel.text().startswith(panel.last_message + "\n" + panel.counts_text())
    left = [k for k in dump(conn) if k != b"rq:clean_groups"]  # rq's own lock, with a TTL
    assert left == []


def test_python_rq_is_measured_on_the_same_server(conn: redis.Redis) -> None:
    if live.rq_version() is None:
        pytest.skip("python-rq is not installed: its per-job cost cannot be measured")
    cost = live.rq_cycles(conn, 20)
    assert cost.jobs == 20 and cost.requests > 3 * 20  # more than our three per job
    assert sum(cost.by_name.values()) == cost.requests
    assert cost.busiest[0][1] >= cost.busiest[-1][1]
    assert any(name.startswith("MULTI[") for name in cost.by_name)  # its pipelines, once each
    assert [k for k in dump(conn) if k != b"rq:clean_groups"] == []
    panel = MeasurePanel(conn, jobs=30)
    panel.run(wait=True)
    assert panel.rq is not None and panel.rq.jobs == 10
    assert panel.rq_text().startswith(f"python-rq {live.rq_version()}: 10 no-op jobs, ")
    assert "requests per job" in panel.text()


def test_counting_counts_a_pipeline_flush_once(conn: redis.Redis) -> None:
    with counting.counting(conn) as calls:
        pipe = conn.pipeline()
        pipe.set("a", 1).get("a").delete("a")
        pipe.execute()
        conn.pipeline(transaction=False).set("b", 1).execute()
        conn.get("b")
        conn.delete("b")
    assert calls == ["MULTI[3]", "PIPELINE[1]", "GET", "DEL"]
    assert "pipeline" not in conn.__dict__ and "execute_command" not in conn.__dict__


def test_the_button_measures_in_the_background(conn: redis.Redis) -> None:
    panel = MeasurePanel(conn, jobs=30, with_rq=False)
    assert panel.buttons["measure"].tooltip and panel.jobs.tooltip and panel.progress.tooltip
    panel.buttons["measure"].click()
    assert panel.run(wait=True) is None  # a second one while it goes is refused
    until = time.monotonic() + 60
    while panel.running and time.monotonic() < until:
        time.sleep(0.05)
    assert panel.cycle is not None and panel.rq is None
    assert panel.rq_text() == "python-rq: not measured (with_rq=False)"
    assert "3 requests, every one an EVALSHA" in panel.result.value


def test_a_dead_server_is_one_line() -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    panel = MeasurePanel(dead, jobs=30, with_rq=False)
    panel.run(wait=True)
    assert not panel.last_ok and panel.cycle is None
    assert panel.last_message.startswith("the measurement stopped: ")
    assert "\n" not in panel.last_message and "Traceback" not in panel.status.value
    with pytest.raises(ValueError, match="jobs must be between 1 and 100000"):
        live.job_cycles(dead, "q", 0)
