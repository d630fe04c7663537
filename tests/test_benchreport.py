"""The benchmark report (``benchmarks.results``, ``targets``, ``charts``, ``page``): tables,
recomputed verdicts and charts from a results file, and what lab-one-round-trip is given of them.

Synthetic results built here pin the arithmetic (medians, the limit / 3, each goal's edge);
the committed ``benchmarks/results.json`` must read cleanly and its verdicts, recomputed,
must equal the ones the benchmark stored. Reading results loads no widget or plotting library
(checked in a fresh interpreter); lab-one-round-trip reads what :mod:`benchmarks.page` writes.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from benchmarks import charts, page
from benchmarks import results as br
from benchmarks.targets import TargetRow, targets, targets_text, verdicts_agree
from echomq_lab import measure, transitions

#: Every handle of the registry: the benchmark measures each one (enqueue_at and enqueue_in
#: apart), and the live walk calls each one.
HANDLES = transitions.HANDLES
#: The results file ``python -m benchmarks.run`` writes and the repository commits.
COMMITTED = Path(__file__).resolve().parents[1] / br.REPOSITORY_FILE


def _figure(unit: str, values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "unit": unit,
        "median": ordered[len(ordered) // 2],
        "min": ordered[0],
        "max": ordered[-1],
        "values": values,
        "note": f"synthetic {unit}",
    }


def _ratio(median: float, low: float, high: float) -> dict[str, Any]:
    return {"median": median, "min": low, "max": high, "values": [low, median, high], "note": ""}


def _one(nested: dict[str, int]) -> dict[str, Any]:
    return {"evalsha": 1, "round_trips": 1, "top_level": {"evalsha": 1}, "nested": nested}


def _results() -> dict[str, Any]:
    """A small, complete results dict with round numbers."""
    cpt = {name: _one({"hset": 1, "zadd": 1}) for name in HANDLES}
    cpt["enqueue (cold cache)"] = {
        "evalsha": 2,
        "round_trips": 3,
        "top_level": {"evalsha": 2, "script|load": 1},
        "nested": {"hset": 1},
    }
    return {
        "date": "2030-01-02T03:04:05+00:00",
        "quick": False,
        "machine": {
            "uname_m": "x86_64",
            "cpu_model": "Test CPU",
            "cores": 4,
            "python": "3.11.0",
            "redis_py": "8.1.0",
            "fakeredis": "2.41.0",
            "rq": "3.0.0",
            "valkey": "8.1.8",
            "redis_py_parser": "pure Python",
        },  # fmt: skip
        "figures": {
            "noop_evalsha": _figure("round trips/s", [9000.0, 6000.0, 12000.0]),
            "cycle_valkey": _figure("jobs/s", [2000.0, 1500.0, 2500.0]),
            "cycle_bare_evalsha": _figure("jobs/s", [2400.0, 2100.0, 2700.0]),
            "cycle_embedded": _figure("jobs/s", [800.0, 700.0, 900.0]),
            "rq_cycle": _figure("jobs/s", [150.0, 100.0, 200.0]),
        },
        "ratios": {
            "cycle_vs_limit_over_3": _ratio(0.95, 0.9, 1.0),
            "pipelined_enqueue_vs_limit": _ratio(0.85, 0.8, 0.9),
            "cycle_vs_bare": _ratio(0.99, 0.9, 1.1),
            "embedded_vs_valkey": _ratio(0.4, 0.3, 0.5),
            "cycle_vs_rq": _ratio(13.0, 10.0, 16.0),
        },
        "cpu_estimates": {"cycle_vs_limit_over_3": 0.97, "cycle_vs_rq": 12.5},
        "wire": {
            "echomq": {"round_trips_per_job": 3.0, "commands_per_job": 16.0},
            "rq": {
                "round_trips_per_job": 22.0,
                "commands_per_job": 65.0,
                "jobs_per_repeat": 100,
                "last_commandstats_delta": {"expire": 1700, "hset": 1600, "multi": 600},
            },
        },
        "commands_per_transition": cpt,
        "widgets": {"p95_ms": 8.0},
        "notebooks": {"wall_s": 30.0, "exit_code": 0},
        "busy": {
            "load_avg_before": [1.5, 1.0, 1.0],
            "cpu_busy_pct_of_all_cores": 40.0,
            "cpu_ours_pct_of_all_cores": 30.0,
            "cpu_others_pct_of_all_cores": 10.0,
            "cores": 4,
        },
    }


def _by_name(rows: list[TargetRow]) -> dict[str, TargetRow]:
    return {t.name: t for t in rows}


# ------------------------------------------------------------------------------ the tables


def test_figure_rows_keep_the_file_order_and_summaries() -> None:
    rows = br.figure_rows(_results())
    assert [r.key for r in rows] == [
        "noop_evalsha", "cycle_valkey", "cycle_bare_evalsha", "cycle_embedded", "rq_cycle",
    ]  # fmt: skip
    limit = rows[0]
    assert (limit.label, limit.unit) == ("no-op EVALSHA (the limit)", "round trips/s")
    assert (limit.median, limit.min, limit.max, limit.repeats) == (9000.0, 6000.0, 12000.0, 3)
    assert rows[-1].label == "python-rq job cycle"


def test_an_unknown_figure_keeps_its_own_name() -> None:
    results = _results()
    results["figures"]["something_new"] = _figure("ops/s", [1.0, 2.0, 3.0])
    assert br.figure_rows(results)[-1].label == "something_new"


def test_ratio_rows_carry_the_cpu_estimate_when_recorded() -> None:
    rows = {r.key: r for r in br.ratio_rows(_results())}
    assert rows["cycle_vs_limit_over_3"].cpu_estimate == 0.97
    assert rows["embedded_vs_valkey"].cpu_estimate is None
    assert (rows["cycle_vs_rq"].median, rows["cycle_vs_rq"].min) == (13.0, 10.0)


def test_text_tables_show_every_row() -> None:
    rep = br.report(_results())
    text = br.figures_text(rep)
    assert "no-op EVALSHA (the limit)" in text and "9,000" in text and "12,000" in text
    assert "cycle / (limit / 3)" in text and "0.97" in text
    assert br.wire_text(rep).splitlines()[2:] == [
        "echomq cycle            3.00     16.00",
        "python-rq              22.00     65.00",
    ]
    lines = br.transitions_text(rep).splitlines()
    assert len(lines) == 2 + len(HANDLES) + 1
    assert "script|load" in lines[-1]


def test_machine_and_busy_lines() -> None:
    rep = br.report(_results())
    assert rep.machine.startswith("x86_64 Test CPU, 4 cores; Python 3.11.0;")
    assert "Valkey 8.1.8" in rep.machine and "(pure Python parser)" in rep.machine
    assert rep.busy == (
        "load average 1.50 at the start; CPU 40.0% busy over 4 cores: 30.0% this run, "
        "10.0% other processes"
    )
    results = _results()
    del results["busy"]
    assert br.report(results).busy == "how busy the machine was: not recorded"


def test_server_time_line() -> None:
    results = _results()
    assert br.report(results).server_time == "server time inside the scripts: not recorded"
    results["wire"]["echomq"].update(server_us_per_job=55.88, server_us_per_3_noops=4.31)
    assert br.report(results).server_time == (
        "server time inside the scripts, per job: 55.9 us for enqueue + claim + complete, "
        "4.3 us for three no-op scripts"
    )


def test_rq_commands_per_job_most_frequent_first() -> None:
    assert br.report(_results()).rq_commands == [("expire", 17.0), ("hset", 16.0), ("multi", 6.0)]


# -------------------------------------------------------------------------------- verdicts


def test_targets_are_judged_from_the_numbers() -> None:
    rows = targets(_results())
    assert [t.name for t in rows] == [
        "cycle vs limit / 3",
        "pipelined enqueue vs its limit",
        "cycle vs python-rq",
        "EVALSHA per transition",
        "embedded cycle vs Valkey",
        "click-to-render p95",
        "nbval suite",
    ]
    t = _by_name(rows)
    assert t["cycle vs limit / 3"] == TargetRow(
        "cycle vs limit / 3", ">= 0.80", "0.95 (CPU est. 0.97)", True
    )
    # The library against bare EVALSHA is measured and shown, and judged by no goal.
    assert not any("bare" in row.name for row in rows)
    # Exactly at the goal is met; the embedded ratio (0.40) is below its 0.60.
    assert t["pipelined enqueue vs its limit"].met is True
    assert t["embedded cycle vs Valkey"] == TargetRow(
        "embedded cycle vs Valkey", ">= 0.60", "0.40", False
    )
    assert t["cycle vs python-rq"].got == "13.0x (CPU est. 12.5x)"
    assert t["EVALSHA per transition"] == TargetRow(
        "EVALSHA per transition", "exactly 1", f"1 for all {len(HANDLES)}", True
    )
    assert t["click-to-render p95"].got == "8.0 ms" and t["click-to-render p95"].met
    assert t["nbval suite"].got == "30.0 s (exit 0)" and t["nbval suite"].met


@pytest.mark.parametrize(
    ("median", "met"), [(0.8, True), (0.7999, False), (1.7, True), (0.0, False)]
)
def test_a_ratio_goal_edge(median: float, met: bool) -> None:
    results = _results()
    results["ratios"]["cycle_vs_limit_over_3"]["median"] = median
    assert _by_name(targets(results))["cycle vs limit / 3"].met is met


def test_a_transition_with_two_requests_fails_the_evalsha_goal() -> None:
    results = _results()
    results["commands_per_transition"]["claim"]["round_trips"] = 2
    results["commands_per_transition"]["reap"]["top_level"] = {"evalsha": 1, "time": 1}
    target = _by_name(targets(results))["EVALSHA per transition"]
    assert target == TargetRow(
        "EVALSHA per transition", "exactly 1", "not 1 for claim, reap", False
    )


def test_click_and_nbval_goals_are_strict_and_may_be_unmeasured() -> None:
    results = _results()
    results["widgets"] = {"p95_ms": 50.0}
    results["notebooks"] = {"wall_s": 20.0, "exit_code": 1}
    t = _by_name(targets(results))
    assert t["click-to-render p95"].met is False
    assert t["nbval suite"] == TargetRow(
        "nbval suite", "< 60 s, passing", "20.0 s (exit 1)", False
    )
    del results["widgets"], results["notebooks"]
    t = _by_name(targets(results))
    assert (t["click-to-render p95"].got, t["click-to-render p95"].met) == ("not measured", None)
    assert t["nbval suite"].met is None


def test_without_rq_the_rq_goal_bar_and_wire_row_are_left_out() -> None:
    results = _results()
    del results["figures"]["rq_cycle"], results["ratios"]["cycle_vs_rq"], results["wire"]["rq"]
    rep = br.report(results)
    assert "cycle vs python-rq" not in _by_name(targets(results))
    assert [b.label for b in rep.bars] == ["no-op limit ÷ 3", "our cycle", "bare EVALSHA",
                                           "embedded"]  # fmt: skip
    assert [w.who for w in rep.wire] == ["echomq cycle"]
    assert rep.rq_commands == []


def test_verdicts_agree_notices_a_stored_verdict_that_differs() -> None:
    results = _results()
    results["targets"] = [
        {"name": t.name, "goal": t.goal, "got": t.got, "met": t.met} for t in targets(results)
    ]
    assert verdicts_agree(results)
    embedded = next(t for t in results["targets"] if t["name"] == "embedded cycle vs Valkey")
    embedded["met"] = True  # the embedded ratio was 0.40: not met
    assert not verdicts_agree(results)


def test_the_targets_table_keeps_its_columns_apart() -> None:
    rows = [TargetRow("a long goal name that runs on", ">= 1", "2", True),
            TargetRow("b", "< 5", "not measured", None)]  # fmt: skip
    lines = targets_text(rows).splitlines()
    assert lines[2].split("  ")[0] == "a long goal name that runs on"
    assert lines[2].endswith("yes") and lines[3].endswith("-")
    assert lines[2].index(">= 1") == lines[3].index("< 5") == lines[0].index("goal")


# ------------------------------------------------------------------------------- bad input


def test_a_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    where = tmp_path / "nothing" / "results.json"
    with pytest.raises(br.ResultsMissing) as info:
        br.read(where)
    message = str(info.value)
    assert "\n" not in message and str(where) in message
    assert "python -m benchmarks.run" in message
    assert not where.parent.exists()


@pytest.mark.parametrize(
    ("text", "needle"),
    [("{not json", "not a JSON results file"), ("[1, 2]", "JSON list, not an object")],
)
def test_a_file_that_is_not_a_results_object_is_refused(
    tmp_path: Path, text: str, needle: str
) -> None:
    where = tmp_path / "results.json"
    where.write_text(text)
    with pytest.raises(br.ResultsInvalid, match=needle):
        br.read(where)
    assert where.read_text() == text


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (("figures",), None, "the results lack figures"),
        (("figures", "cycle_valkey", "median"), "fast", r"figures\.cycle_valkey\.median"),
        (("figures", "cycle_valkey", "max"), float("nan"), "finite"),
        (("ratios", "cycle_vs_rq", "median"), True, r"ratios\.cycle_vs_rq\.median"),
        (("wire", "echomq"), None, r"the results lack wire\.echomq"),
        (("commands_per_transition",), [1], "commands_per_transition should be an object"),
        (("date",), 20300102, "date should be str"),
    ],
)
def test_a_results_dict_with_a_hole_is_refused(
    path: tuple[str, ...], value: object, needle: str
) -> None:
    results = _results()
    before = copy.deepcopy(results)
    target = results
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    damaged = copy.deepcopy(results)
    with pytest.raises(br.ResultsInvalid, match=needle):
        br.report(results)
    assert results == damaged and results != before


def test_report_refuses_a_non_object() -> None:
    with pytest.raises(br.ResultsInvalid, match="not list"):
        br.report([])  # type: ignore[arg-type]


# -------------------------------------------------------------------------- the committed file


def test_the_committed_results_read_cleanly_and_verdicts_agree() -> None:
    assert COMMITTED.is_file(), f"{COMMITTED} is missing: run `make bench`"
    raw = json.loads(COMMITTED.read_text())
    rep = br.read(COMMITTED)
    assert rep.date == raw["date"]
    assert f"Valkey {raw['machine']['valkey']}" in rep.machine
    assert [f.key for f in rep.figures] == list(raw["figures"])
    for row in rep.figures:
        assert row.min <= row.median <= row.max
        assert row.median == raw["figures"][row.key]["median"]
    assert [r.key for r in rep.ratios] == list(raw["ratios"])
    stored = [TargetRow(t["name"], t["goal"], t["got"], t["met"]) for t in raw["targets"]]
    assert targets(raw) == stored, "recomputed verdicts differ from the benchmark's own"
    assert verdicts_agree(raw)
    warm = [t for t in rep.transitions if "cold" not in t.name]
    names = {t.name for t in warm}  # every handle, and retry once more at its cap
    # Every handle measured is one of the registry's, the cycle's among them (a transition
    # added since the run is measured by the next `make bench`).
    assert names - set(HANDLES) <= {"retry (at the cap)"} and set(measure.CYCLE) <= names
    assert all(t.evalsha == 1 and t.round_trips == 1 for t in warm)


# ------------------------------------------------------------------------- what gets loaded

HEAVY = ("ipywidgets", "IPython", "matplotlib")


def _loaded_after(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; the heavy libraries loaded by its end."""
    probe = (
        f"import json, sys\n{code}\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_reading_results_loads_no_widget_or_plotting_library() -> None:
    code = (
        "from benchmarks import results, targets\n"
        f"rep = results.read({str(COMMITTED)!r})\n"
        f"raw = results.load({str(COMMITTED)!r})\n"
        "assert results.figures_text(rep) and targets.targets_text(targets.targets(raw))"
    )
    assert _loaded_after(code) == []


def test_charts_load_matplotlib_only_to_draw() -> None:
    code = "from benchmarks import charts"
    assert _loaded_after(code) == []
    draw = f"{code}, results\ncharts.wire_chart(results.read({str(COMMITTED)!r}))"
    assert "matplotlib" in _loaded_after(draw)


# ------------------------------------------------------------------------------------ charts


def _bars(ax: Any) -> list[Rectangle]:
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def test_throughput_chart_draws_one_bar_per_contender() -> None:
    rep = br.report(_results())
    ax = charts.throughput_chart(rep)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["no-op limit ÷ 3", "our cycle", "bare EVALSHA", "embedded", "python-rq"]
    heights = [b.get_height() for b in _bars(ax)]
    assert heights == pytest.approx([3000.0, 2000.0, 2400.0, 800.0, 150.0])
    assert rep.bars[0].low == pytest.approx(2000.0) and rep.bars[0].high == pytest.approx(4000.0)
    assert [t.get_text() for t in ax.texts] == ["3,000", "2,000", "2,400", "800", "150"]
    assert "jobs/s" in ax.get_ylabel() and "2030-01-02" in ax.get_title()
    colours = {b.get_facecolor() for b in _bars(ax)}
    assert len(colours) == 5


def test_throughput_chart_draws_on_given_axes() -> None:
    ax = Figure().add_subplot()
    assert charts.throughput_chart(br.report(_results()), ax) is ax
    assert len(_bars(ax)) == 5


def test_wire_chart_pairs_ours_with_rq() -> None:
    ax = charts.wire_chart(br.report(_results()))
    heights = [b.get_height() for b in _bars(ax)]
    assert heights == pytest.approx([3.0, 16.0, 22.0, 65.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "round trips per job",
        "commands per job",
    ]
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["echomq cycle", "python-rq"]


def test_charts_of_the_committed_results() -> None:
    rep = br.read(COMMITTED)
    ax = charts.throughput_chart(rep)
    assert len(_bars(ax)) == len(rep.bars) == 5
    assert _bars(ax)[0].get_height() == pytest.approx(rep.figures[0].median / 3)


# ------------------------------------------------------------- what lab-one-round-trip reads


def test_the_page_file_holds_the_tables_and_charts_page_06_shows(tmp_path: Path) -> None:
    results = _results()
    written = page.write(results, tmp_path)
    assert written == tmp_path / measure.BENCH_FILE
    bench = measure.read_bench(tmp_path)
    assert bench.tables
    assert bench.header.splitlines()[0] == "measured: 2030-01-02T03:04:05+00:00 (a full run)"
    rep = br.report(results)
    assert bench.tables["figures"] == br.figures_text(rep)
    assert bench.tables["transitions"] == br.transitions_text(rep)
    assert bench.tables["wire"].startswith(br.wire_text(rep))
    assert "python-rq's busiest commands, per job:" in bench.tables["wire"]
    assert "scale" not in bench.tables  # this run measured no deep queue
    assert set(bench.charts) == {"throughput", "wire"}
    assert all(path.read_bytes().startswith(b"\x89PNG") for path in bench.charts.values())
    # what a learner reads: no goal, no verdict
    text = json.dumps(json.loads(written.read_text())).lower()
    assert "target" not in text and "goal" not in text


def test_the_page_file_of_the_committed_results_carries_the_deep_queue(tmp_path: Path) -> None:
    page.write(br.load(COMMITTED), tmp_path)
    bench = measure.read_bench(tmp_path)
    assert set(bench.charts) == {"throughput", "wire", "scale"}
    assert bench.tables["scale"].startswith("the server holds")
    assert "found both planted drifts" in bench.tables["scale"]
