"""The page lab-the-fence-under-load without threads: the actors taken in turn in one loop, on
the embedded server whose
``TIME`` reads the run's own clock. The loop run must audit clean with the fence, show what the
fence refuses without it, give the same run for the same seed, and need no thread at all (the
browser cannot start one); the SVG timeline must draw the leases it is given.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from echomq_lab import branded, jobs, keyspace
from echomq_lab.sim import V_FINAL, V_LEASE, Lease, Result, Settings, simulate
from echomq_lab.sim.charts import OUTCOME_LOOK, lease_timeline_svg
from echomq_lab.sim.loop import Interleave, Pause, RunClock, clocked_server, threads_can_start
from echomq_lab.sim.run import uses_threads
from echomq_lab.widgets import SimulationPanel
from tools.course import file_of

LOAD = dict(jobs=60, workers=4, stall=0.25, fail=0.1, lease_ms=(40, 80), seed=5, runner="loop")


def _refuse(self: threading.Thread) -> None:
    raise RuntimeError("can't start new thread")


@pytest.fixture
def no_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a thread raises, as it does in the browser."""
    monkeypatch.setattr(threading.Thread, "start", _refuse)


@pytest.fixture(scope="module")
def fenced() -> Result:
    return simulate(**LOAD)  # type: ignore[arg-type]


# -- the run, taken in turn ------------------------------------------------------------------


def test_a_loop_run_audits_clean_and_the_fence_refused_stale_settles(fenced: Result) -> None:
    assert fenced.violations == [], "\n".join(fenced.violations[:10])
    assert fenced.completed + fenced.dead == 60
    assert fenced.stalls > 0 and fenced.reaped > 0
    assert fenced.refusals > 0 and fenced.refusals_by_class.get("EMQSTALE", 0) > 0
    assert fenced.stale_completes_accepted == 0 and fenced.settled_after_lease_lost == 0


def test_without_the_fence_the_loop_run_shows_what_the_fence_refuses() -> None:
    load = {**LOAD, "jobs": 120, "stall": 0.4, "fail": 0.0}
    on = simulate(**load)  # type: ignore[arg-type]
    off = simulate(**{**load, "fence": False})  # type: ignore[arg-type]
    assert on.violations == [] and on.refusals_by_class.get("EMQSTALE", 0) > 0
    assert off.stale_completes_accepted > 0 and off.settled_after_lease_lost > 0
    assert not off.verdicts[V_FINAL] and not off.verdicts[V_LEASE]
    assert off.verdicts["no token was handed to two leases"]  # claims still mint once
    assert on.settings.fence and not off.settings.fence and on.queue != off.queue


def _story(result: Result) -> list[tuple[object, ...]]:
    """The ledger with each job id replaced by its place in the enqueue order (ids are minted
    fresh in every run), everything else as recorded, times to the microsecond."""
    place = {c.job_id: n for n, c in enumerate(c for c in result.ledger if c.verb == "enqueue")}
    return [(c.actor, c.verb, place.get(c.job_id, c.job_id if c.verb in ("reap", "promote")
                                        else "?"), c.token, c.outcome, c.reply,
             round(c.started, 6), round(c.ended, 6), c.lease_ms, c.stalled)
            for c in result.ledger]


def test_a_seed_gives_the_same_loop_run(fenced: Result) -> None:
    again = simulate(**LOAD)  # type: ignore[arg-type]
    assert _story(again) == _story(fenced)
    assert again.elapsed_s == fenced.elapsed_s
    other = simulate(**{**LOAD, "seed": 6})  # type: ignore[arg-type]
    assert _story(other) != _story(fenced)


def test_auto_takes_the_loop_for_the_embedded_server_and_where_threads_cannot_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert threads_can_start()
    assert not uses_threads("auto", None) and uses_threads("threads", None)
    assert uses_threads("auto", "redis://127.0.0.1:1/0") and not uses_threads("loop", "x")
    monkeypatch.setattr(threading.Thread, "start", _refuse)
    assert not threads_can_start()
    assert not uses_threads("auto", "redis://127.0.0.1:1/0")
    with pytest.raises(RuntimeError, match="cannot start threads: use runner='loop'"):
        uses_threads("threads", None)
    monkeypatch.setattr("sys.platform", "emscripten")
    assert not threads_can_start()


def test_a_run_and_the_panel_need_no_thread(no_threads: None) -> None:
    result = simulate(jobs=30, workers=3, stall=0.3, lease_ms=(30, 60), seed=2)
    assert result.violations == [] and result.completed + result.dead == 30
    panel = SimulationPanel(jobs=20, workers=3, stall=0.3, lease_ms=(30, 60))
    panel.buttons["run"].click()
    assert panel.result is not None and panel.result.violations == []
    assert panel.progress.value == 20 and "<svg" in panel.picture.value
    refused = SimulationPanel(jobs=5, runner="threads")
    assert refused.run() is None
    assert "this Python cannot start threads" in refused.last_message
    assert "RuntimeError" not in refused.last_message  # a learner reads words, not a class name


def test_runner_is_checked() -> None:
    with pytest.raises(ValueError, match="runner must be one of auto, threads, loop"):
        Settings(runner="fibres").check()


# -- the run's own clock and the loop ---------------------------------------------------------


def test_the_embedded_servers_time_reads_the_runs_clock() -> None:
    clock = RunClock()
    conn = clocked_server(clock)()
    seconds, _ = conn.time()
    assert seconds == clock.us // 1_000_000
    clock.sleep_until(clock.now() + 3600)
    assert conn.time()[0] == seconds + 3600  # an hour passes on the run's clock, not the host's
    jobs.enqueue(conn, "q", branded.mint(), b"x")
    claimed = jobs.claim(conn, "q", 500)
    assert claimed is not None
    deadline = conn.zscore(keyspace.queue_key("q", "active"), claimed.id)
    now_ms = clock.us // 1000
    assert deadline is not None and now_ms < deadline <= now_ms + 500  # the script's TIME too


def _sleeper(log: list[tuple[str, float]], clock: RunClock, name: str,
             pauses: list[float], until: threading.Event) -> Iterator[Pause]:
    for seconds in pauses:
        cut = yield Pause(seconds, until)
        log.append((name if not cut else f"{name} cut", round(clock.us / 1e6 % 100, 3)))


def test_the_loop_resumes_whoever_is_due_first_and_wakes_the_cut_short() -> None:
    clock, stop, log = RunClock(), threading.Event(), []  # type: ignore[var-annotated]
    start = round(clock.us / 1e6 % 100, 3)
    loop = Interleave(clock, [_sleeper(log, clock, "a", [0.010, 0.010], stop),  # type: ignore[list-item]
                              _sleeper(log, clock, "b", [0.015, 5.0], stop)])  # type: ignore[list-item]
    loop.run(done=lambda: len(log) == 3)
    assert [name for name, _ in log] == ["a", "b", "a"]
    assert [round(t - start, 3) for _, t in log] == [0.010, 0.015, 0.020]
    stop.set()  # b's five-second pause is cut short: it goes now, told so
    loop.run()
    assert log[-1][0] == "b cut" and round(log[-1][1] - start, 3) == 0.020
    assert len(loop) == 0


# -- the timeline, as SVG -----------------------------------------------------------------------


def _lease(worker: str, job: str, token: int, start: float, end: float, outcome: str, *,
           stalled: bool = False, ran_again: bool = False) -> Lease:
    return Lease(worker, job, token, start, end, 40, outcome, stalled, ran_again)


LEASES = [
    _lease("w0", "JOBA", 1, 0.10, 0.16, "refused", stalled=True),
    _lease("w1", "JOBA", 2, 0.15, 0.17, "completed", ran_again=True),
    _lease("w1", "JOBB", 1, 0.18, 0.19, "retried"),
    _lease("w10", "JOBC", 3, 0.20, 0.21, "dead"),
    _lease("w2", "JOBD", 1, 0.90, 0.95, "completed"),
]


def _svg(markup: str) -> ET.Element:
    """The timeline's SVG, parsed (it must be well-formed XML)."""
    body = markup[markup.index("<svg"): markup.index("</svg>") + len("</svg>")]
    return ET.fromstring(body)


def _bars(svg: ET.Element) -> list[ET.Element]:
    return [e for e in svg.iter("{http://www.w3.org/2000/svg}rect")
            if "emq-lease" in e.get("class", "")]


def test_the_timeline_draws_a_bar_per_lease_on_its_workers_row() -> None:
    svg = _svg(lease_timeline_svg(LEASES[:4]))
    bars = _bars(svg)
    assert [(b.get("data-worker"), b.get("data-job"), b.get("data-token")) for b in bars] == [
        ("w0", "JOBA", "1"), ("w1", "JOBA", "2"), ("w1", "JOBB", "1"), ("w10", "JOBC", "3")]
    xs = [float(b.get("x", "nan")) for b in bars]
    assert xs == sorted(xs) and xs[0] < xs[1]  # later claims further right
    rows = [float(b.get("y", "nan")) for b in bars]
    assert rows[1] == rows[2] and rows[0] < rows[1] < rows[3]  # w0, w1, w10: one row each
    fills = [b.get("fill") for b in bars]
    assert fills[1:] == [OUTCOME_LOOK[o][0] for o in ("completed", "retried", "dead")]
    assert fills[0] == "url(#emq-hatch)"  # the cut-off lease, striped
    text = "".join(svg.itertext())
    assert "w0" in text and "w10" in text and "seconds since the run began" in text


def test_a_cut_off_lease_shows_its_deadline_its_refused_settle_and_the_rerun() -> None:
    svg = _svg(lease_timeline_svg(LEASES[:2]))
    ns = "{http://www.w3.org/2000/svg}"
    ticks = [e for e in svg.iter(f"{ns}line") if e.get("class") == "emq-deadline"]
    bar = _bars(svg)[0]
    left, width = float(bar.get("x", "0")), float(bar.get("width", "0"))
    assert len(ticks) == 1 and left < float(ticks[0].get("x1", "0")) < left + width
    crosses = [e for e in svg.iter(f"{ns}text") if e.get("class") == "emq-refused"]
    assert len(crosses) == 1 and crosses[0].text == "✗"
    rings = [e for e in svg.iter(f"{ns}circle") if e.get("class") == "emq-again"]
    assert len(rings) == 1  # token 2 ran a job token 1 had worked on
    told = [t.text or "" for t in svg.iter(f"{ns}title")]
    assert told[0].startswith("w0, job JOBA, token 1: stalled past its lease")


def test_the_window_picks_the_leases_and_an_empty_one_says_so() -> None:
    svg = _svg(lease_timeline_svg(LEASES, (0.0, 0.5)))
    assert len(_bars(svg)) == 4  # w2's lease at 0.9 s is outside
    assert "emq-legend" in lease_timeline_svg(LEASES)
    empty = lease_timeline_svg(LEASES, (0.5, 0.6))
    assert "no lease in this window" in empty and "<svg" not in empty
    assert "no lease in this window" in lease_timeline_svg([])


def test_the_timeline_writes_in_the_themes_ink_and_escapes_its_title() -> None:
    markup = lease_timeline_svg(LEASES, title="<job & worker>")
    assert "&lt;job &amp; worker&gt;" in markup and "<job & worker>" not in markup
    assert "var(--jp-content-font-color0" in markup  # reads in Light and in Dark


def test_a_real_runs_timeline_draws_every_lease(fenced: Result) -> None:
    leases = fenced.leases()
    svg = _svg(lease_timeline_svg(leases))
    bars = _bars(svg)
    assert len(bars) == len(leases) == fenced.claims
    refused = sum(le.outcome == "refused" for le in leases)
    assert refused > 0 and sum(b.get("fill") == "url(#emq-hatch)" for b in bars) == refused


# -- the page, as the browser runs it -----------------------------------------------------------

NO_THREAD_NO_PLOT = '''
import json, sys, threading
sys.modules["matplotlib"] = None  # any import of it fails

def refuse(self):
    raise RuntimeError("can't start new thread")

threading.Thread.start = refuse
nb = json.load(open(sys.argv[1], encoding="utf-8"))
scope = {}
for cell in nb["cells"]:
    if cell["cell_type"] == "code":
        exec(compile("".join(cell["source"]), "cell", "exec"), scope)
print("ran to the end")
'''


def test_the_fence_lab_runs_top_to_bottom_with_no_thread_and_no_matplotlib() -> None:
    root = Path(__file__).resolve().parent.parent
    page = root / "notebooks" / file_of("lab-the-fence-under-load")
    env = {k: v for k, v in os.environ.items() if k != "ECHOMQ_REDIS_URL"}
    done = subprocess.run([sys.executable, "-c", NO_THREAD_NO_PLOT, str(page)], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.rstrip().endswith("ran to the end")
