"""Smoke tests of the benchmarks: they run, their results have the promised shape, and every
transition costs exactly one EVALSHA and one round trip. No assertion here reads a clock."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
import redis

import echomq_lab
from benchmarks import page, scale, workloads
from benchmarks import run as bench
from benchmarks.pipeline import enqueue_many, run_many
from benchmarks.targets import scale_targets, targets
from benchmarks.workloads import Figure, ratios
from echomq_lab import branded, errors, jobs, keyspace, transitions
from echomq_lab.measure import BENCH_FILE, counting, read_bench
from echomq_lab.scripts import load
from tests.support.cluster import skip_reason
from tools.course import load as course_pages

ROOT = Path(__file__).resolve().parents[1]

#: Every handle of the transitions registry: each must be one EVALSHA and one round trip.
HANDLES = bench.handle_names()

TINY = bench.Sizes(
    repeats=2, slices=2, noop_ops=5, cycle_ops=3, embedded_ops=2, pipe_ops=120,
    rq_jobs=3, presses=4,
)  # fmt: skip


def test_every_transition_is_one_evalsha_and_one_round_trip(valkey_url: str) -> None:
    counts = bench.commands_per_transition(valkey_url)
    assert set(HANDLES) == {h for t in transitions.TRANSITIONS for h in t.handles}
    for name in HANDLES:
        assert counts[name]["evalsha"] == 1, (name, counts[name])
        assert counts[name]["round_trips"] == 1, (name, counts[name])
        assert counts[name]["top_level"] == {"evalsha": 1}, (name, counts[name])
    assert counts["retry (at the cap)"]["top_level"] == {"evalsha": 1}
    # The commands inside the script are counted apart: enqueue writes a row and a member.
    # the new-row gate looks the id up in each of the four sets (a row lost under a lease)
    assert counts["enqueue"]["nested"] == {"exists": 1, "zscore": 4, "hset": 1, "zadd": 1}
    # After SCRIPT FLUSH the first call pays NOSCRIPT, SCRIPT LOAD and the EVALSHA again.
    cold = counts["enqueue (cold cache)"]
    assert cold["top_level"] == {"evalsha": 2, "script|load": 1}
    assert cold["round_trips"] == 3


def test_the_counter_counts_a_pipeline_as_one_round_trip(valkey_url: str) -> None:
    client = echomq_lab.connect(valkey_url, ping=False)  # a lab client, not connected yet
    try:
        with counting() as trips:
            client.set("k", "v")  # the new connection's handshake is not counted
            pipe = client.pipeline(transaction=False)
            for _ in range(10):
                pipe.get("k")
            assert pipe.execute() == [b"v"] * 10
        assert trips == ["SET", "PIPELINE[10]"]
    finally:
        client.flushall()
        client.close()


def test_cycle_wire_cost_is_three_round_trips_per_job(valkey_url: str) -> None:
    cost = bench.cycle_wire_cost(valkey_url, jobs_n=5)
    assert cost["round_trips_per_job"] == 3
    assert cost["evalsha_per_job"] == 3
    # enqueue 7 (4 of them the gate's ZSCOREs) + claim 8 + complete 4 commands inside the
    # scripts, plus the 3 EVALSHAs.
    assert cost["commands_per_job"] == 22


def test_throughput_workloads_leave_no_job_behind(valkey_url: str) -> None:
    figures, cpus = bench.bench_throughput(valkey_url, TINY)
    assert cpus is None  # no server pid given: nothing is pinned
    assert set(figures) == {
        "noop_evalsha",
        "cycle_valkey",
        "cycle_bare_evalsha",
        "noop_evalsha_pipelined",
        "enqueue_pipelined",
        "cycle_embedded",
    }
    for figure in figures.values():
        assert len(figure.values) == TINY.repeats
        assert len(figure.slice_rates) == TINY.repeats * TINY.slices
        assert all(v > 0 for v in figure.values)
        summary = figure.summary()
        assert summary["min"] <= summary["median"] <= summary["max"]
    conn = redis.Redis.from_url(valkey_url)
    try:
        # Every cycle completed its job: nothing of either cycle queue remains.
        assert conn.keys("emq:{bench}:*") == []
        assert conn.keys("emq:{bench-bare}:*") == []
        pending = keyspace.queue_key("bench-pipe", "pending")
        assert conn.zcard(pending) == TINY.pipe_ops * TINY.slices  # the last repeat's batch
    finally:
        conn.flushall()
        conn.close()


def test_ratios_pair_the_slices_that_ran_together() -> None:
    top = Figure("top", "ops/s", slice_rates=[10.0, 30.0, 8.0])
    bottom = Figure("bottom", "ops/s", slice_rates=[5.0, 10.0, 8.0])
    assert ratios(top, bottom) == [2.0, 3.0, 1.0]
    assert ratios(top, bottom, scale=0.5) == [4.0, 6.0, 2.0]
    with pytest.raises(ValueError):
        ratios(top, Figure("short", "ops/s", slice_rates=[1.0]))


def test_resent_us_sends_again_only_commands_that_read(valkey_url: str) -> None:
    conn = redis.Redis.from_url(valkey_url)
    try:
        conn.hset("emq:{r}:job:JOB00000000001", mapping={"state": "pending", "attempts": "0"})
        logged = [
            "HMGET emq:{r}:job:JOB00000000001 state attempts",
            "SET emq:{r}:written x",  # writes: never sent again
            "HMGET emq:{r}:job:JOB00000000001 a b c... (40 more arguments)",  # shortened
        ]
        own_us, resent = scale.resent_us(conn, logged)
        assert resent == 1
        assert 0 <= own_us < 1_000_000
        assert conn.exists("emq:{r}:written") == 0
        assert scale.resent_us(conn, logged[1:]) == (0, 0)
    finally:
        conn.flushall()
        conn.close()


def test_the_check_goal_is_judged_on_its_commands_sent_again() -> None:
    results = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    check = results["scale"]["check"]

    def judged(**fields: object) -> tuple[str, bool | None]:
        check.update(fields)
        row = next(t for t in scale_targets(results) if t.name == "longest command of check()")
        return row.got, row.met

    # A pause of the server inside one quick command: logged 6.8 ms, 40 µs sent again.
    paused = {"commands_over_1ms": 9, "longest_command_us": 6774}
    assert judged(**paused, longest_command_resent_us=40, commands_resent=9) == (
        "40 µs sent again (6.8 ms as logged)", True
    )
    assert judged(longest_command_resent_us=6100)[1] is False  # slow every time: not met
    check.pop("longest_command_resent_us")
    check.pop("commands_resent")
    assert judged() == ("6.8 ms", False)  # an older file, without the figure: as logged


def test_rq_side_by_side_runs_every_job(valkey_url: str) -> None:
    figure, detail = bench.bench_rq(valkey_url, TINY)
    assert len(figure.values) == TINY.repeats
    assert detail["worker"].startswith("rq.SimpleWorker")
    # rq needs several commands and round trips per job; ours needs 3 round trips.
    assert detail["round_trips_per_job"] > 3
    assert detail["commands_per_job"] > detail["round_trips_per_job"]
    assert detail["last_commandstats_delta"].get("multi", 0) > 0  # its MULTI/EXEC blocks


def test_widget_bench_presses_the_transition_panel() -> None:
    result = bench.bench_widgets(TINY.presses)
    assert result["presses"] == TINY.presses
    assert result["refused"] == 0  # every life of PRESSES is accepted by the panel
    assert result["median_ms"] <= result["p95_ms"] <= result["max_ms"]


def test_presses_give_every_transition_a_life_along_the_diagram() -> None:
    lives = [bench.life(t) for t in transitions.TRANSITIONS]
    assert bench.PRESSES == tuple(name for life in lives for name in life)
    for t, life in zip(transitions.TRANSITIONS, lives, strict=True):
        assert life[-1] == t.name
        states = {transitions.START}
        for name in life:  # each press follows an edge from a state the job may be in
            states = {e.target for e in transitions.get(name).edges if e.source in states}
            assert states, (t.name, life, name)
    assert bench.life(transitions.get("reprocess")) == ("enqueue", "claim", "retry", "reprocess")
    with pytest.raises(ValueError, match="no way from"):
        transitions.path(transitions.RETIRED, transitions.START)


def test_main_quick_writes_json_and_prints_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "QUICK", TINY)
    out = tmp_path / "results.json"
    assert bench.main(["--quick", "--out", str(out), "--page", str(tmp_path)]) == 0
    results = json.loads(out.read_text())
    for key in ("uname_m", "cpu_model", "cores", "python", "redis_py", "valkey"):
        assert results["machine"][key], key
    assert results["quick"] is True
    # The stored verdicts are benchmarks.targets', every goal listed (its list is pinned in
    # test_benchreport); python-rq was measured, so its goal is there too.
    assert results["targets"] == [dataclasses.asdict(t) for t in targets(results)]
    assert "cycle vs python-rq" in [t["name"] for t in results["targets"]]
    by_name = {t["name"]: t for t in results["targets"]}
    assert by_name["EVALSHA per transition"]["met"] is True
    assert by_name["nbval suite"]["met"] is None  # not asked for
    for name in HANDLES:
        assert results["commands_per_transition"][name]["evalsha"] == 1
    assert set(results["busy"]) >= {"load_avg_before", "cpu_others_pct_of_all_cores"}
    assert "cycle vs bare evalsha" not in by_name and "bytecodes" not in results
    printed = capsys.readouterr().out
    assert "EVALSHA per transition" in printed
    assert str(out) in printed
    # what the page that shows the run reads, written where it was asked for; the page is
    # named by its slug, one of the course's
    assert f": {tmp_path / BENCH_FILE}" in printed
    assert page.PAGE in {p.slug for p in course_pages()}
    shown = read_bench(tmp_path)
    assert shown.tables and shown.header.startswith("measured: ")
    assert {"figures", "wire", "transitions", "scale"} <= set(shown.tables)
    assert set(shown.charts) == {"throughput", "wire", "scale"}


# -- enqueue_many: the pipelined batch the benchmark measures ----------------------------------


def _single_node_pipeline(backend_name: str) -> None:
    """Skip on the cluster: enqueue_many and run_many pipeline EVALSHA, which redis-py's
    cluster pipeline refuses."""
    reason = skip_reason(backend_name, "a single-node pipeline of EVALSHA (run_many)")
    if reason:
        pytest.skip(reason)


def test_enqueue_many_writes_what_enqueue_writes(conn: redis.Redis, backend_name: str) -> None:
    _single_node_pipeline(backend_name)
    ids = [branded.mint() for _ in range(5)]
    single = branded.mint()
    jobs.enqueue(conn, "q", single, b"\x00bytes")
    replies = enqueue_many(conn, "q", [(i, b"\x00bytes") for i in ids] + [(single, b"x")], 2)
    assert replies == ["enqueued"] * 5 + ["duplicate"]
    assert jobs.record(conn, "q", ids[0]) == jobs.record(conn, "q", single)
    assert jobs.record(conn, "q", single) == {
        b"state": b"pending",
        b"attempts": b"0",
        b"payload": b"\x00bytes",
    }
    assert jobs.browse(conn, "q", 10) == sorted([*ids, single], reverse=True)


@pytest.mark.host
@pytest.mark.parametrize(
    ("bad", "exc"),
    [
        (("JOB123", b"p"), ValueError),
        ((42, b"p"), TypeError),
        (("ORD0000000000A", b"p"), errors.KindRefused),
        (("JOB0000000000A", 42), TypeError),
    ],
)
def test_enqueue_many_refuses_bad_input_before_sending(
    conn: redis.Redis, bad: tuple[object, object], exc: type[Exception]
) -> None:
    good = branded.mint()
    with pytest.raises(exc):
        enqueue_many(conn, "q", [(good, b"p"), bad])  # type: ignore[list-item]
    assert jobs.record(conn, "q", good) is None  # the good item before it was not sent either


@pytest.mark.host
@pytest.mark.parametrize("batch", [0, -1, 10_001, True, 2.0])
def test_enqueue_many_refuses_a_bad_batch(conn: redis.Redis, batch: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        enqueue_many(conn, "q", [(branded.mint(), b"p")], batch)  # type: ignore[arg-type]


def test_enqueue_many_recovers_from_an_empty_script_cache(
    conn: redis.Redis, backend_name: str
) -> None:
    _single_node_pipeline(backend_name)
    conn.script_flush()
    ids = [branded.mint() for _ in range(3)]
    assert enqueue_many(conn, "q", [(i, b"p") for i in ids], 2) == ["enqueued"] * 3
    assert all(jobs.record(conn, "q", i) is not None for i in ids)


# -- run_many: the pipelined dispatch itself --------------------------------------------------


def test_run_many_raises_the_typed_refusal_after_its_flush(
    conn: redis.Redis, backend_name: str
) -> None:
    _single_node_pipeline(backend_name)
    job = branded.mint()
    jobs.enqueue(conn, "q", job, b"p")
    claimed = jobs.claim(conn, "q", 60_000)
    assert claimed is not None
    keys = [keyspace.queue_key("q", "active"), keyspace.job_key("q", job)]
    live = (keys, [job, str(claimed.token), "120000"])
    stale = (keys, [job, str(claimed.token + 1), "120000"])
    before = conn.zscore(keys[0], job)
    with pytest.raises(errors.StaleToken):
        run_many(conn, load("extend"), [stale, live], batch=2)
    assert conn.zscore(keys[0], job) != before  # the live call of that flush ran
    assert run_many(conn, load("extend"), [live], batch=1)[0] > 0


def test_cores_apart_pins_both_sides_and_restores_them() -> None:
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip(f"this machine lets the tests use {len(allowed)} CPU: nothing to pin apart")
    other = subprocess.Popen(["sleep", "30"])
    try:
        theirs = os.sched_getaffinity(other.pid)
        with workloads.cores_apart(other.pid) as cpus:
            assert cpus is not None and cpus["client"] != cpus["server"]
            assert os.sched_getaffinity(0) == {cpus["client"]}
            assert os.sched_getaffinity(other.pid) == {cpus["server"]}
        assert os.sched_getaffinity(0) == allowed
        assert os.sched_getaffinity(other.pid) == theirs
        with workloads.cores_apart(None) as nothing:
            assert nothing is None
            assert os.sched_getaffinity(0) == allowed
    finally:
        other.kill()
        other.wait()
