"""The live measure of lab-one-round-trip, headless: the request counter, the commandstats
reader, "measure now" on each backend, and the benchmark's tables read (or found missing) beside
the page.

Speeds are not asserted (no wall-clock thresholds); the counts are: every transition of the
cycle sends one EVALSHA, so a job is three requests. Afterwards nothing is left on the server.
python-rq is measured by the benchmark only (tests/test_benchmarks_smoke.py). A copy of that page
opened where no benchmark ran says so in one line and still measures live.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.connection import AbstractConnection

import echomq_lab
from benchmarks.run import calls_delta
from echomq_lab import branded, jobs, keyspace, measure, scripts, transitions
from echomq_lab.measure import calls_text, counting
from echomq_lab.widgets import MeasurePanel
from tests.support.state import dump

#: Every handle of the registry's written transitions: the live walk calls each one.
HANDLES = tuple(h for t in scripts.written() for h in t.handles)


@pytest.fixture(autouse=True)
def _one_server(backend_name: str) -> None:
    if backend_name == "cluster":
        pytest.skip("lab-one-round-trip measures one server; the cluster has a lab of its own, "
                    "lab-one-queue-one-slot")

#: The journey :func:`measure.walk` takes (its own code), and what each step answers.
JOURNEY = ["enqueue", "claim", "extend", "retry", "promote", "claim", "reap", "claim",
           "retry (at the cap)", "reprocess", "claim", "complete", "enqueue_in", "enqueue_at"]
ANSWERS = ["enqueued", "token 1", "lease pushed back", "scheduled", "1 moved", "token 2",
           "1 returned", "token 3", "dead", "pending", "token 4", "completed", "scheduled",
           "scheduled"]
#: Then every written transition of the registry the journey did not call, demonstrated.
WALKED = [*JOURNEY, *(t.call.handle for t in scripts.written()
                      if t.call.handle not in {j.split()[0] for j in JOURNEY})]


def test_measure_now_counts_one_round_trip_per_transition(conn: redis.Redis) -> None:
    panel = MeasurePanel(conn, jobs=30)
    assert panel.text() == "not measured yet"
    cycle = panel.run(wait=True)
    assert cycle is not None and cycle is panel.cycle and cycle.jobs == 30
    assert cycle.per_transition == {n: ("EVALSHA",) for n in measure.CYCLE}
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
    assert dump(conn) == {}
    assert "word-break:normal" in panel.result.value  # long lines wrap at a space, not in a word


# -- the request counter ----------------------------------------------------------------------


def test_counting_counts_a_pipeline_flush_once(conn: redis.Redis) -> None:
    sent = AbstractConnection.send_packed_command
    with counting() as calls:
        pipe = conn.pipeline()
        pipe.set("a", 1).get("a").delete("a")
        pipe.execute()
        conn.pipeline(transaction=False).set("b", 1).get("b").execute()
        conn.get("b")
        conn.delete("b")
        conn.script_load("return 1")
    assert calls == ["MULTI[3]", "PIPELINE[2]", "GET", "DEL", "SCRIPT LOAD"]
    assert AbstractConnection.send_packed_command is sent  # redis-py as it was


def test_calls_text() -> None:
    assert calls_text([]) == "no request"
    assert calls_text(["EVALSHA"]) == "1 EVALSHA"
    assert calls_text(["EVALSHA", "SCRIPT LOAD", "EVALSHA"]) == (
        "3 requests: EVALSHA, SCRIPT LOAD, EVALSHA"
    )


def test_counting_sees_the_cold_cache_once_then_one_evalsha() -> None:
    conn = echomq_lab.connect(fresh=True, ping=False)  # its handshake falls in the block
    queue = "count-cold"
    with counting() as cold:
        jobs.enqueue(conn, queue, branded.mint(), b"a")
    with counting() as warm:
        jobs.enqueue(conn, queue, branded.mint(), b"b")
    assert cold == ["EVALSHA", "SCRIPT LOAD", "EVALSHA"]  # and no HELLO, no CLIENT SETINFO
    assert warm == ["EVALSHA"]


def test_counting_ends_cleanly_after_an_error_and_blocks_nest(conn: redis.Redis) -> None:
    conn.hset("count-a-hash", "f", "v")
    sent = AbstractConnection.send_packed_command
    with counting() as outer:
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"), counting() as inner:
            conn.incr("count-a-hash")  # a hash is not a counter: the server refuses
        conn.ping()
    assert inner == ["INCRBY"] and outer == ["INCRBY", "PING"]
    assert AbstractConnection.send_packed_command is sent
    with counting() as after:
        pass
    conn.ping()
    assert after == []


def test_counting_counts_only_its_own_thread(conn: redis.Redis) -> None:
    go, done = threading.Event(), threading.Event()

    def other() -> None:
        go.wait(10)
        for _ in range(5):
            conn.get("someone-else")
        done.set()

    worker = threading.Thread(target=other, daemon=True)
    worker.start()
    with counting() as calls:
        go.set()
        assert done.wait(10)
        conn.get("mine")
    worker.join(10)
    assert calls == ["GET"]


# -- the commandstats reader -------------------------------------------------------------------


def test_commandstats_reads_the_servers_own_count(conn: redis.Redis, backend_name: str) -> None:
    if backend_name == "fakeredis":
        pytest.skip("fakeredis answers no INFO, so it keeps no per-command counters")
    measure.warm_up(conn)  # no NOSCRIPT: the enqueue is its one EVALSHA
    before = measure.commandstats(conn)
    jobs.enqueue(conn, "stats", branded.mint(), b"x")
    after = measure.commandstats(conn)
    delta = calls_delta(before, after)
    assert delta.get("evalsha") == 1 and "info" not in delta
    assert {"hset", "zadd"} <= set(delta)  # what ran inside the script counts too
    assert after["evalsha"].usec >= before.get("evalsha", measure.Stat(0, 0)).usec
    conn.delete(*conn.keys(keyspace.base("stats") + "*"))


# -- one job through every transition ----------------------------------------------------------


def test_every_transition_is_one_evalsha_live(conn: redis.Redis) -> None:
    queue = "count-live"
    traced = measure.transition_calls(conn, queue)
    assert {t.name.split(" ")[0] for t in traced} == set(HANDLES)
    assert all(t.calls == ("EVALSHA",) for t in traced), [t.line() for t in traced]
    assert [t.name for t in traced] == WALKED
    assert [t.reply for t in traced][: len(JOURNEY)] == ANSWERS
    assert all(t.reply for t in traced)  # each demonstrated one answered, in its entry's words
    assert traced[0].line() == "enqueue:                1 EVALSHA       -> enqueued"
    assert list(conn.scan_iter(match=keyspace.base(queue) + "*")) == []


def test_the_walk_stops_at_the_first_reply_it_did_not_expect() -> None:
    conn = echomq_lab.connect(fresh=True)
    seen: list[str] = []

    def step(name: str, call: Any) -> Any:
        seen.append(name)
        reply = call()
        return 0 if name == "promote" else reply  # as if promote had found nothing due

    with pytest.raises(RuntimeError, match=r"promote on 'walk-odd' answered 0, expected 1"):
        measure.walk(conn, "walk-odd", step)
    assert seen == ["enqueue", "claim", "extend", "retry", "promote"]


@pytest.mark.parametrize("name", transitions.NAMES)
def test_each_transition_is_demonstrated_from_its_registry_entry(
    conn: redis.Redis, name: str
) -> None:
    """What the walk does for a transition its journey does not take: a job of its own, brought
    along the registry's way to where the transition starts, then the entry's call."""
    t, queue, seen = transitions.get(name), f"demo-{name}", []

    def step(label: str, call: Any) -> Any:
        seen.append(label)
        return call()

    reply = measure.demonstrate(conn, queue, t, step)
    assert seen == [t.call.handle]
    assert reply is not None and reply != 0  # it did its work: a picked job, a moved one...
    assert t.reads(reply)
    assert echomq_lab.check(conn, queue) == []


def test_the_walk_demonstrates_a_transition_its_journey_does_not_take(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stretch = dataclasses.replace(transitions.get("extend"), name="stretch",
                                  call=transitions.Call("stretch", ("job", "token", "lease")))
    monkeypatch.setattr(jobs, "stretch", jobs.extend, raising=False)
    monkeypatch.setattr(transitions, "TRANSITIONS", (*transitions.TRANSITIONS, stretch))
    seen: list[str] = []

    def step(name: str, call: Any) -> Any:
        seen.append(name)
        return call()

    measure.walk(echomq_lab.connect(fresh=True), "walk-new", step)
    assert seen == [*WALKED, "stretch"]
    monkeypatch.setattr(scripts, "is_stub", lambda name: name == "extend")  # as if just made
    seen.clear()
    measure.walk(echomq_lab.connect(fresh=True), "walk-stub", step)
    assert seen == WALKED  # a stub is left out of the walk: it has nothing to show yet


# -- the panel ---------------------------------------------------------------------------------


def test_the_button_measures_in_the_background(conn: redis.Redis) -> None:
    panel = MeasurePanel(conn, jobs=30)
    assert panel.buttons["measure"].tooltip and panel.jobs.tooltip and panel.progress.tooltip
    panel.buttons["measure"].click()
    assert panel.run(wait=True) is None  # a second one while it goes is refused
    until = time.monotonic() + 60
    while panel.running and time.monotonic() < until:
        time.sleep(0.05)
    assert panel.cycle is not None
    assert "3 requests, every one an EVALSHA" in panel.result.value


def test_a_dead_server_is_one_line() -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    panel = MeasurePanel(dead, jobs=30)
    panel.run(wait=True)
    assert not panel.last_ok and panel.cycle is None
    assert panel.last_message.startswith("the measurement stopped: ")
    assert "\n" not in panel.last_message and "Traceback" not in panel.status.value
    with pytest.raises(ValueError, match="jobs must be between 1 and 100000"):
        measure.job_cycles(dead, "q", 0)


# -- what `make bench` left beside the page ----------------------------------------------------


@pytest.mark.parametrize("content", [None, "{not json", '{"header": "x"}', "[1, 2]"])
def test_no_benchmark_beside_the_page_is_one_line(
    tmp_path: Path, content: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    if content is not None:
        (tmp_path / measure.BENCH_FILE).write_text(content)
    bench = measure.read_bench(tmp_path)
    assert bench.tables == {} and bench.charts == {}
    assert "\n" not in bench.header and "Traceback" not in bench.header
    assert "make bench" in bench.header
    for name in ("figures", "throughput", "wire", "transitions", "scale"):
        assert bench.show(name) is None
    assert capsys.readouterr().out == ""  # the header has said it once; nothing more
