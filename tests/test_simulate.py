"""The load lab: a short run holds every invariant on each backend, and the audit can fail."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.simulate import main, summary
from echomq_lab import errors, sim
from echomq_lab.sim import (
    V_CLEAN,
    V_DRIFT,
    V_FINAL,
    V_LEASE,
    V_ONCE,
    V_ORPHANS,
    V_STALE,
    V_TOKENS,
    Call,
    Result,
    Sample,
    Settings,
    audit,
)
from echomq_lab.snapshot import Drift, Snapshot

# Short leases keep a run of a few hundred jobs to a few seconds; the stalls still overrun them.
SHORT = dict(jobs=300, workers=4, stall=0.2, fail=0.1, lease_ms=(20, 60), seed=7, timeout_s=120)


def assert_fence_held(result: Result, jobs: int) -> None:
    assert result.violations == [], "\n".join(result.violations[:20])
    assert all(result.verdicts.values())
    assert result.completed + result.dead == jobs
    assert result.lost_jobs == 0 and result.unfinished_jobs == 0
    # The fence was really exercised: leases stalled past their deadline and were refused.
    assert result.stalls > 0
    assert result.refusals > 0
    assert result.duplicates > 0
    assert result.drift_samples > 0
    assert not result.timed_out


def test_short_run_embedded() -> None:
    result = sim.simulate(**SHORT)  # type: ignore[arg-type]
    assert_fence_held(result, 300)
    assert result.connection_errors == 0
    assert result.claims >= 300


def test_short_run_on_valkey(valkey_url: str) -> None:
    result = sim.simulate(url=valkey_url, **SHORT)  # type: ignore[arg-type]
    assert_fence_held(result, 300)
    assert result.server.startswith("valkey ")


# ------------------------------------------------------------------ the checker can fail


@pytest.fixture(scope="module")
def run() -> Result:
    """One embedded run with many stalls, whose ledger the tests below doctor."""
    result = sim.simulate(
        jobs=80, workers=3, stall=0.4, fail=0.2, lease_ms=(15, 30), seed=11, timeout_s=120
    )
    assert result.violations == []
    assert result.refusals > 0 and result.dead + result.completed == 80
    return result


def final_of(result: Result) -> Snapshot:
    """The run's end state, rebuilt from what the audit saw (the dead rows only)."""
    dead = sorted(
        c.job_id for c in result.ledger
        if c.verb == "retry" and c.outcome == "accepted" and c.reply == "dead"
    )  # fmt: skip
    rows = {j: {b"state": b"dead", b"attempts": b"1", b"payload": b""} for j in dead}
    sets: dict = {"pending": [], "active": [], "schedule": [], "dead": [(j, 0) for j in dead]}
    return Snapshot(result.queue, 0, sets, rows)


def doctored(result: Result, change: Callable[[list[Call]], list[Call]]) -> list[str]:
    return audit(change(list(result.ledger)), final_of(result)).violations


def first(calls: list[Call], pred: Callable[[Call], bool]) -> Call:
    return next(c for c in calls if pred(c))


def is_complete(c: Call) -> bool:
    return c.verb == "complete" and c.outcome == "accepted"


def is_refusal(c: Call) -> bool:
    return c.outcome == "refused"


def test_the_untouched_ledger_passes(run: Result) -> None:
    assert audit(run.ledger, final_of(run)).violations == []


def test_two_accepted_completes_of_one_job_are_caught(run: Result) -> None:
    def twice(calls: list[Call]) -> list[Call]:
        c = first(calls, is_complete)
        return calls + [dataclasses.replace(c, seq=len(calls), actor="w99")]

    found = doctored(run, twice)
    assert any("was completed 2 times" in v for v in found), found


def test_a_complete_with_a_non_final_token_is_caught(run: Result) -> None:
    # A job whose first lease was cut off: pretend the stale lease's complete was accepted
    # instead of the live one's.
    refused = first(run.ledger, lambda c: is_refusal(c) and c.verb == "complete")

    def stale_wins(calls: list[Call]) -> list[Call]:
        out = []
        for c in calls:
            if c.job_id == refused.job_id and is_complete(c):
                continue  # the live lease's complete is dropped...
            if c is refused:
                c = dataclasses.replace(c, outcome="accepted", reply="completed", detail="")
            out.append(c)
        return out

    found = audit(stale_wins(list(run.ledger)), final_of(run))
    assert found.problems.get(V_FINAL), found.violations
    assert any(refused.job_id in v and "final token" in v for v in found.problems[V_FINAL])


def test_a_refusal_with_no_reap_behind_it_is_caught(run: Result) -> None:
    found = audit([c for c in run.ledger if c.verb != "reap"], final_of(run))
    assert len(found.problems.get(V_STALE, [])) == run.refusals
    assert "no reap returned any job" in found.problems[V_STALE][0]


def test_a_refusal_before_the_lease_could_expire_is_caught(run: Result) -> None:
    refused = first(run.ledger, is_refusal)
    claim = first(
        run.ledger,
        lambda c: c.verb == "claim" and c.job_id == refused.job_id and c.token == refused.token,
    )
    # A millisecond after the claim began: inside any lease of the run (15 ms or more), however
    # long the claim call itself took on a busy machine.
    early = dataclasses.replace(refused, ended=claim.started + 0.001)
    calls = [early if c is refused else c for c in run.ledger]
    problems = audit(calls, final_of(run)).problems.get(V_STALE, [])
    assert any("could not have expired yet" in v for v in problems), problems


def test_a_refusal_of_another_class_is_caught(run: Result) -> None:
    refused = first(run.ledger, is_refusal)
    wrong = dataclasses.replace(refused, reply="EMQSTATE", detail="the job is active, not dead")
    calls = [wrong if c is refused else c for c in run.ledger]
    problems = audit(calls, final_of(run)).problems.get(V_STALE, [])
    assert any("EMQSTATE" in v for v in problems), problems


def test_one_token_handed_to_two_leases_is_caught(run: Result) -> None:
    claim = first(run.ledger, lambda c: c.verb == "claim" and c.outcome == "accepted")
    calls = list(run.ledger) + [dataclasses.replace(claim, seq=-1, actor="w42")]
    problems = audit(calls, final_of(run)).problems.get(V_TOKENS, [])
    assert problems == [f"job {claim.job_id}: token {claim.token} was handed to {claim.actor}, w42"]


def test_a_vanished_job_is_caught(run: Result) -> None:
    done = first(run.ledger, is_complete)
    calls = [c for c in run.ledger if not (c.job_id == done.job_id and c.verb != "enqueue")]
    found = audit(calls, final_of(run))
    assert found.lost == [done.job_id]
    assert found.problems[V_ONCE] == [
        "1 jobs vanished: they are neither completed, dead, nor on the server"
    ]


def test_a_stale_complete_whose_reply_was_lost_does_not_retire_the_job(run: Result) -> None:
    """A job claimed twice vanishes (a restart without persistence) while the FIRST holder's
    complete loses its reply and its resend finds the row gone. That complete carried the stale
    token 1, so the fence had refused its first attempt: the job vanished, it was not retired."""
    # A job claimed at least twice that the run completed (so no row of it is left on the
    # server): which jobs those are depends on the run's timing, not only on its seed.
    completed = {c.job_id for c in run.ledger if is_complete(c)}
    job = first(run.ledger, lambda c: c.verb == "claim" and c.outcome == "accepted"
                and c.job_id in completed
                and any(d.job_id == c.job_id and d.verb == "claim" and d.token == 2
                        for d in run.ledger))

    def vanish_after_second_claim(calls: list[Call]) -> list[Call]:
        def kept(c: Call) -> bool:  # of this job: its enqueue and its first two claims only
            return c.job_id != job.job_id or c.verb == "enqueue" or (
                c.verb == "claim" and c.token <= 2)

        lost = dataclasses.replace(job, seq=len(calls), verb="complete", token=1,
                                   outcome="gone", reply="job gone", after_lost_reply=True)
        return [c for c in calls if kept(c)] + [lost]

    found = audit(vanish_after_second_claim(list(run.ledger)), final_of(run))
    assert found.lost == [job.job_id], found.violations
    assert not found.problems.get(V_FINAL), found.problems.get(V_FINAL)


def test_drift_and_leftovers_are_caught(run: Result) -> None:
    job = first(run.ledger, is_complete).job_id
    drift = Drift("state-mismatch", job, "has state 'active' but is in pending")
    final = final_of(run)
    final.sets["pending"].append((job, 0))
    final.rows[job] = {b"state": b"pending", b"attempts": b"1", b"payload": b""}
    found = audit(run.ledger, final, [Sample(0.5, (drift,))])
    assert found.problems[V_DRIFT] == [f"drift at 0.500 s: {drift}"]
    assert any("left in pending" in v for v in found.problems[V_CLEAN])
    assert any("rows left behind" in v for v in found.problems[V_CLEAN])


def test_leases_cover_every_claim(run: Result) -> None:
    leases = run.leases()
    assert len(leases) == run.claims
    outcomes = {lease.outcome for lease in leases}
    assert {"completed", "refused"} <= outcomes
    assert sum(lease.outcome == "refused" for lease in leases) == run.refusals
    assert any(lease.ran_again for lease in leases)
    assert all(lease.end >= lease.start for lease in leases)


# ------------------------------------------------------------------------ settings, command


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("jobs", 0, ValueError),
        ("workers", 1.5, TypeError),
        ("stall", 1.5, ValueError),
        ("lease_ms", (0, 10), ValueError),
        ("lease_ms", (50, 10), ValueError),
        ("queue", "bad queue", ValueError),
        ("timeout_s", 0, ValueError),
        ("fence", "off", TypeError),
        ("resend_guard", 0, TypeError),
        ("resend", True, ValueError),  # a re-send needs evicted ids to re-send
    ],
)
def test_bad_settings_are_refused(field: str, value: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        sim.Simulation(Settings(**{field: value}))  # type: ignore[arg-type]


def test_command_writes_the_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "sim.json"
    code = main(
        ["--jobs", "40", "--workers", "2", "--lease-ms", "20", "40", "--seed", "3",
         "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    figures = json.loads(out.read_text())
    assert figures["jobs"] == 40 and figures["workers"] == 2
    assert figures["completed"] + figures["dead"] == 40
    assert figures["violations"] == [] and figures["violation_count"] == 0
    assert all(figures["verdicts"].values())
    assert figures["settings"]["seed"] == 3
    printed = capsys.readouterr().out
    assert "violations: 0" in printed and f"wrote {out}" in printed


def test_command_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--jobs", "0"]) == 2
    assert "simulate:" in capsys.readouterr().err


def test_a_job_that_ran_twice_tells_its_story(run: Result) -> None:
    leases = run.leases()
    twice = sim.ran_twice(leases)
    assert twice
    story = sim.lease_story(leases, twice[0])
    # The stale settle is refused by the fence, or finds the row gone when the second lease
    # has already retired the job: which one depends on the threads' timing.
    assert story[0] in (
        "token 1: claimed; stalled past its lease; its settle was refused: the token was stale",
        "token 1: claimed; stalled past its lease; its settle found the job gone: another lease "
        "had retired it",
    )
    assert story[1:] == [
        "token 2: claimed; worked within its lease; its complete was accepted: the job is retired",
    ]
    assert sim.work_lost(leases) == []  # the fence let no lease retire a job under another


def test_lab_url_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ECHOMQ_REDIS_URL", raising=False)
    assert sim.lab_url() is None
    monkeypatch.setenv("ECHOMQ_REDIS_URL", "redis://127.0.0.1:1/0")
    assert sim.lab_url() == "redis://127.0.0.1:1/0"


def test_the_verdicts_read_as_ticks_and_crosses() -> None:
    from echomq_lab.sim.charts import verdicts_html

    html = verdicts_html({"held": True, "broken": False})
    assert "✓ held" in html and "✗ broken" in html


def test_two_runs_side_by_side(run: Result) -> None:
    from echomq_lab.sim.charts import side_by_side_html

    broken = dataclasses.replace(run, stale_completes_accepted=7,
                                 problems={**run.problems, V_FINAL: ["a stale complete"]})
    table = side_by_side_html({"fence on": run, "fence off": broken})
    assert table.count("<tr>") == 1 + 6 + len(sim.VERDICTS)
    assert ">fence on</th>" in table and ">fence off</th>" in table
    assert "stale completes accepted</td><td" in table and ">7</td>" in table
    assert table.count("✓") == 2 * len(sim.VERDICTS) - 1 and table.count("✗") == 1


# ------------------------------------------------------------- who spoke, in the ledger


@pytest.mark.parametrize(
    ("exc", "outcome", "reply"),
    [
        (errors.StaleToken("token 1 is stale, the row's attempts is 2"), "refused", "EMQSTALE"),
        (errors.JobGone("job JOB0x has no row in queue 'q'"), "gone", "job gone"),
        (errors.ServerUnavailable("cannot reach redis://127.0.0.1:1/0: refused"), "lost-reply",
         "server unreachable"),
    ],
)
def test_the_ledger_says_who_spoke(exc: errors.EchoMQError, outcome: str, reply: str) -> None:
    """A refusal keeps the server's wire class; a host condition keeps the lab's own label."""
    call = sim.Ledger().record_error("w0", "complete", "JOB0x", 1, exc, started=0.0)
    assert (call.outcome, call.reply, call.detail) == (outcome, reply, exc.detail)
    assert not (outcome != "refused" and call.reply.startswith("EMQ"))


def test_no_made_up_wire_class_in_a_run(run: Result) -> None:
    """Every reply that looks like a wire class is one the server really has."""
    for c in run.ledger:
        if c.outcome == "refused":
            assert c.reply in errors.WIRE_CLASSES, c
        else:
            assert not c.reply.startswith("EMQ"), c
    assert set(run.refusals_by_class) <= {"EMQSTALE", errors.JobGone.label}
    assert "EMQGONE" not in summary(run) and "EMQDOWN" not in summary(run)


# ------------------------------------------------------------------ the package's shape


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    """Python run in the repository's root (where ``benchmarks`` is found)."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          check=False, cwd=Path(__file__).resolve().parent.parent)


def test_importing_the_simulation_loads_no_widget_or_plot_library() -> None:
    code = (
        "import sys, echomq_lab.sim, benchmarks.simulate\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'ipywidgets', 'IPython', 'matplotlib'})\n"
        "print(','.join(heavy))\n"
    )
    done = run_python("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"importing echomq_lab.sim loaded {done.stdout.strip()}"


def test_the_command_runs_as_a_module() -> None:
    shown = run_python("-m", "benchmarks.simulate", "--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: python -m benchmarks.simulate ")
    for option in ("--jobs", "--workers", "--stall", "--fail", "--max-attempts", "--lease-ms",
                   "--seed", "--timeout", "--url", "--out"):
        assert option in shown.stdout
    refused = run_python("-m", "benchmarks.simulate", "--jobs", "0")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "simulate: jobs, workers and max_attempts must be at least 1"


# ------------------------------------------------------- the fence switched off, the re-send

# Many stalls that overrun short leases: the reaper hands most of those jobs to another worker
# well before the stalled one wakes, so a run without the fence accepts some stale completes
# however slow the machine (each stall outlasts its lease by 15-40 ms; the reaper runs every
# 5 ms and the freed job is first in pending).
UNDER_LOAD = dict(jobs=200, workers=4, stall=0.3, lease_ms=(40, 80), seed=5, timeout_s=120)


def test_without_the_fence_the_audit_reports_what_it_would_have_refused() -> None:
    result = sim.simulate(fence=False, **UNDER_LOAD)  # type: ignore[arg-type]
    assert result.stalls > 0 and result.reaped > 0
    assert result.stale_completes_accepted > 0
    assert result.settled_after_lease_lost > 0
    assert not result.verdicts[V_FINAL] and not result.verdicts[V_LEASE]
    assert result.violations
    # the story of one such job: a lost lease retired it, the live one found it gone
    lost = sim.work_lost(result.leases())
    assert lost
    story = sim.lease_story(result.leases(), lost[0])
    assert any("its complete was accepted" in line for line in story)
    assert any("found the job gone" in line for line in story)


def test_with_the_fence_the_same_load_shows_none() -> None:
    result = sim.simulate(fence=True, **UNDER_LOAD)  # type: ignore[arg-type]
    assert result.violations == [], "\n".join(result.violations[:20])
    assert result.stale_completes_accepted == 0 and result.settled_after_lease_lost == 0
    assert result.refusals > 0  # the fence was really exercised: it turned stale settles away
    assert sim.work_lost(result.leases()) == []


# Rows deleted under live leases (up to 20: the run may finish first), each id re-sent at once
# by the producer. Long leases keep the evicted lease held (and its id in active) when the
# re-send arrives, even on a slow machine.
RESENDING = dict(jobs=150, workers=4, stall=0.0, fail=0.1, lease_ms=(200, 300), seed=3,
                 timeout_s=120, evictions=20, resend=True)  # fmt: skip

def test_a_resend_without_the_guard_mints_a_token_twice() -> None:
    result = sim.simulate(resend_guard=False, **RESENDING)  # type: ignore[arg-type]
    evicted = sum(1 for c in result.ledger if c.verb == "evict")
    assert result.resent == evicted > 0 and result.resends_refused == 0
    assert result.tokens_minted_twice > 0
    assert not result.verdicts[V_TOKENS] and not result.verdicts[V_ORPHANS]


def test_a_resend_through_the_guard_is_refused_and_mints_nothing() -> None:
    result = sim.simulate(resend_guard=True, **RESENDING)  # type: ignore[arg-type]
    evicted = sum(1 for c in result.ledger if c.verb == "evict")
    assert result.resends_refused == evicted > 0 and result.resent == 0
    assert result.tokens_minted_twice == 0 and result.stale_completes_accepted == 0
    assert result.violations == [], "\n".join(result.violations[:20])
    refused = {c.reply for c in result.ledger if c.verb == "resend"}
    assert refused == {"EMQROW"}
