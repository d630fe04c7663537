"""The whole fence: complete, retry and extend × a live, stale, future or reaped token.

Each case builds a fresh sample row (attempts 2) by real transitions, runs the verb's real
script, and checks the exact outcome; on a refusal the whole keyspace is byte for byte what it
was before the call (``testing.state.dump``).
"""

from __future__ import annotations

import pytest
import redis

from echomq_lab import jobs, keyspace
from echomq_lab.lessons import fencing
from echomq_lab.lessons.stories import HOLD_MS
from echomq_lab.snapshot import check
from echomq_lab.widgets import FencePanel
from tests.support.state import deadline_window, dump

Q = "fence"
CASES = {  # case -> (token kind, lease)
    "live": ("live", "held"),
    "stale": ("stale", "held"),
    "future": ("future", "held"),
    "reaped": ("live", "reaped"),
}
ACCEPTED = {"complete": "completed", "retry": "scheduled"}


def stale(token: int) -> str:
    return f"token {token} is stale, the row's attempts is 2"


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("verb", fencing.VERBS)
def test_every_verb_against_every_token(conn: redis.Redis, verb: str, case: str) -> None:
    kind, lease = CASES[case]
    sample = fencing.prepare(conn, Q, lease, lease_ms=50)
    assert (sample.token, sample.stale_token) == (2, 1)
    token = fencing.token_of(sample, kind)
    assert token == {"live": 2, "stale": 1, "future": 3}[kind]
    before = dump(conn)
    with deadline_window(conn, 2 * HOLD_MS) as window:
        trial = fencing.present(conn, Q, sample, verb, token, lease)
    after = dump(conn)
    row_key = keyspace.job_key(Q, sample.job_id).encode()
    active = keyspace.queue_key(Q, "active").encode()

    if case != "live":
        want = stale(token) if case in ("stale", "future") else "token 2 holds no lease: " \
            "the job is not active (the lab's check, beyond the course's token)"
        assert (trial.outcome.kind, trial.outcome.detail) == ("EMQSTALE", want)
        assert after == before and trial.untouched
        assert trial.line().endswith("; the row is untouched")
        return
    assert trial.outcome.accepted and not trial.untouched
    if verb == "complete":
        assert trial.outcome.detail == "completed"
        assert row_key not in after and active not in after
        assert trial.change == "it deleted the row and its lease"
    elif verb == "retry":
        assert trial.outcome.detail == "scheduled"
        assert after[row_key][1][b"state"] == b"scheduled"
        assert after[row_key][1][b"last_error"] == b"it failed"
        assert [m for m, _ in after[keyspace.queue_key(Q, "schedule").encode()][1]] == [
            sample.job_id.encode()
        ]
    else:
        assert trial.outcome.detail == "lease pushed back"
        assert after[row_key] == before[row_key]
        [(member, deadline)] = after[active][1]
        assert member == sample.job_id.encode() and deadline != before[active][1][0][1]
        assert window[0] <= deadline <= window[1]
        assert trial.change == "the row is unchanged; the lease moved"
    assert check(conn, Q) == []


def test_run_builds_afresh_and_refuses_a_choice_not_offered(conn: redis.Redis) -> None:
    first = fencing.run(conn, Q, "complete", "live", "held", lease_ms=50)
    second = fencing.run(conn, Q, "retry", 7, "reaped", lease_ms=50)
    assert first.sample.job_id != second.sample.job_id
    assert jobs.record(conn, Q, first.sample.job_id) is None
    assert (second.token, second.token_kind, second.outcome.kind) == (7, "future", "EMQSTALE")
    before = dump(conn)
    for bad in [("cancel", "live", "held"), ("retry", "newest", "held"),
                ("retry", 0, "held"), ("retry", "live", "expired")]:
        with pytest.raises(ValueError):
            fencing.run(conn, Q, *bad)
    assert dump(conn) == before


def test_the_panel_runs_every_combination(conn: redis.Redis) -> None:
    panel = FencePanel(conn, Q, lease_ms=50)
    assert panel.text().splitlines()[1] == "verb complete, token 1, lease still held"
    assert all(panel.verb.tooltips) and all(panel.lease.tooltips) and panel.token.tooltip
    assert all(b.tooltip for b in panel.buttons.values())
    for verb in fencing.VERBS:
        for token, lease in [(2, "held"), (1, "held"), (3, "held"), (2, "reaped")]:
            panel.verb.value, panel.token.value, panel.lease.value = verb, token, lease
            panel.buttons["run"].click()
            trial = panel.trial
            assert trial is not None and trial.token == token and trial.verb == verb
            refused = (token, lease) != (2, "held")
            assert panel.last_ok is not refused and panel.last_message == trial.line()
            assert ("[refused]" if refused else "[ok]") in panel.text()
            if refused:
                assert "EMQSTALE" in panel.last_message and "emq-refused" in panel.message.value
                assert panel.record.changed == set()
                assert trial.untouched
    assert "lease already reaped" in panel.text()


def test_the_panel_shows_bad_input_in_one_line(conn: redis.Redis) -> None:
    panel = FencePanel(conn, Q, lease_ms=50)
    before = dump(conn)
    panel.token.value = 0
    panel.buttons["run"].click()
    assert panel.last_message == "token must be at least 1, got 0"
    assert dump(conn) == before and panel.trial is None
    panel.token.value = 2**62 + 1  # beyond any claim: said plainly, no bound in figures
    panel.buttons["run"].click()
    assert panel.last_message.startswith(f"token {2**62 + 1} is far larger than any claim")
    assert "between" not in panel.last_message and str(2**62) not in panel.last_message
    assert dump(conn) == before and panel.trial is None


def test_the_courses_claim_hands_out_again_what_the_courses_complete_left(
    conn: redis.Redis,
) -> None:
    """On every server: after a reaped lease, the course's complete (the token only) retires
    the job while its id waits in pending; the course's claim then pops that id and mints
    token 1 again on a row made anew, with no payload (the lab's claim would drop it)."""
    from echomq_lab import branded
    from echomq_lab.clock import wait_out_lease
    from echomq_lab.lessons import unfenced

    queue = Q + "-course"
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, queue, job_id, b"cargo")
    first = jobs.claim(conn, queue, 1)
    assert first is not None and first.token == 1
    wait_out_lease(conn, queue, job_id)
    assert jobs.reap(conn, queue) == 1
    assert unfenced.complete_token_only(conn, queue, job_id, 1) == "completed"
    again = unfenced.claim_course(conn, queue, HOLD_MS)
    assert again == jobs.Claimed(job_id, b"", 1)
    assert jobs.record(conn, queue, job_id) == {b"state": b"active", b"attempts": b"1"}
    assert unfenced.claim_course(conn, queue, HOLD_MS) is None  # nothing else pending
