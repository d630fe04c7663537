"""The panels, headless: buttons pressed with ``.click()`` on a fresh embedded server.

Every test checks both sides: what the panel renders (``text()`` and key bits of its HTML) and
what the server holds (``jobs.record``, ``snapshot``). Bad input must show one line and change
nothing.
"""

from __future__ import annotations

import pytest
import redis

from echomq_lab import connect, jobs
from echomq_lab.clock import wait_out_lease
from echomq_lab.lessons.two_workers import STEP_NAMES
from echomq_lab.snapshot import Snapshot, check, snapshot
from echomq_lab.widgets import FencePanel, LabPanel, TransitionPanel, TwoWorkersStory
from echomq_lab.widgets import look as style

Q = "panels"


@pytest.fixture
def fresh() -> redis.Redis:
    return connect(fresh=True)


def same(a: Snapshot, b: Snapshot) -> bool:
    """Two snapshots hold the same sets and rows (the clock aside)."""
    return a.sets == b.sets and a.rows == b.rows


def test_transition_panel_runs_the_real_handles(fresh: redis.Redis) -> None:
    panel = TransitionPanel(fresh, Q, lease_ms=60_000)
    assert panel.text().startswith("(nothing run yet)\nfollowing no job yet")

    assert panel.press("enqueue").startswith("enqueue wrote state=pending, attempts=0")
    job_id = panel.runner.job_id
    assert job_id is not None and jobs.record(fresh, Q, job_id) is not None

    panel.picker.value = "claim"
    panel.buttons["run"].click()
    assert panel.last_ok and panel.last_message == "claim wrote state=active, attempts=1 (token 1)"
    row = jobs.record(fresh, Q, job_id)
    assert row is not None and row[b"state"] == b"active" and row[b"attempts"] == b"1"
    assert 'class="emq-changed"' in panel.record.table.value
    assert panel.diagram.current == "active"
    assert 'data-transition="claim"' in panel.diagram.svg.value.split("emq-edge-lit")[1]
    assert style.STATE_COLOURS["active"] in panel.following.value
    text = panel.text()
    assert f"following {job_id} (token 1)" in text
    assert f"active:   {job_id} (expires in" in text
    assert "drift check: no drift" in text
    assert "emq-ok" in panel.message.value

    panel.delay.value = 0
    panel.max_attempts.value = 1
    assert panel.press("retry").startswith("retry with token 1 wrote state=dead")
    assert snapshot(fresh, Q).members("dead") == [job_id]
    assert panel.press("reprocess") == "reprocess wrote state=pending, dropped last_error"
    assert panel.press("claim") == "claim wrote state=active, attempts=2 (token 2)"
    assert panel.press("complete").startswith("complete with token 2 deleted the row")
    assert jobs.record(fresh, Q, job_id) is None
    assert panel.diagram.current == "completed"
    assert "no row (completed or never enqueued)" in panel.text()
    assert check(fresh, Q) == []


def test_transition_panel_bad_input_changes_nothing(fresh: redis.Redis) -> None:
    panel = TransitionPanel(fresh, Q)
    panel.press("enqueue")
    before = snapshot(fresh, Q)
    panel.lease.value = 0
    assert panel.press("claim") == "lease_ms must be between 1 and 31536000000, got 0"
    assert not panel.last_ok
    assert "emq-refused" in panel.message.value and "Traceback" not in panel.message.value
    assert panel.message.value.count("\n") == 0
    assert same(before, snapshot(fresh, Q))
    assert panel.press("complete") == (
        f"no token held for {panel.runner.job_id}: run claim first"
    )
    assert panel.press("reprocess") == "EMQSTATE: the job is pending, not dead"
    assert same(before, snapshot(fresh, Q))
    assert panel.text().startswith("[refused] EMQSTATE: the job is pending, not dead")


def test_transition_panel_stale_token_is_refused(fresh: redis.Redis) -> None:
    panel = TransitionPanel(fresh, Q, lease_ms=60_000)
    panel.press("enqueue")
    panel.press("claim")
    panel.runner.token = 5  # as if the panel held an older lease's token
    before = snapshot(fresh, Q)
    assert panel.press("extend") == "EMQSTALE: token 5 is stale, the row's attempts is 1"
    assert same(before, snapshot(fresh, Q))
    assert panel.record.changed == set()


def test_fence_panel_refuses_the_stale_token_and_accepts_the_live_one(fresh: redis.Redis) -> None:
    panel = FencePanel(fresh, Q, lease_ms=80)
    assert panel.sample is not None
    job_id = panel.sample.job_id
    row = jobs.record(fresh, Q, job_id)
    assert row is not None and row[b"attempts"] == b"2" and row[b"state"] == b"active"
    assert panel.header_text() == f"sample row {job_id}: the row's attempts is 2"

    panel.token.value = 1
    panel.buttons["run"].click()  # a fresh sample row, then complete with token 1
    assert panel.sample.job_id != job_id
    job_id = panel.sample.job_id
    row = jobs.record(fresh, Q, job_id)
    assert panel.last_message == (
        "complete with token 1 (stale, lease held): refused EMQSTALE: token 1 is stale, the "
        "row's attempts is 2; the row is untouched"
    )
    assert "emq-refused" in panel.message.value
    assert row is not None and row[b"attempts"] == b"2"
    assert snapshot(fresh, Q).members("active") == [job_id]
    assert "attempts   2\n" in panel.text() and "(changed)" not in panel.text()

    before = snapshot(fresh, Q)
    panel.token.value = 0
    panel.buttons["run"].click()
    assert panel.last_message == "token must be at least 1, got 0"
    assert same(before, snapshot(fresh, Q))

    panel.token.value = 2
    panel.buttons["complete"].click()  # the run button's older name
    job_id = panel.sample.job_id
    assert panel.last_ok and panel.last_message == (
        "complete with token 2 (live, lease held): accepted (completed); it deleted the row "
        "and its lease"
    )
    assert jobs.record(fresh, Q, job_id) is None
    assert snapshot(fresh, Q).members("active") == []
    assert panel.header_text().endswith("the row is gone")
    assert "no row (completed or never enqueued)" in panel.text()

    panel.buttons["rebuild"].click()
    assert panel.sample.job_id != job_id and panel.trial is None
    new_row = jobs.record(fresh, Q, panel.sample.job_id)
    assert new_row is not None and new_row[b"attempts"] == b"2"
    assert check(fresh, Q) == []


def test_fence_panel_without_a_row_says_so(fresh: redis.Redis) -> None:
    panel = FencePanel(fresh, Q, build=False)
    assert panel.header_text() == "no sample row yet"
    assert snapshot(fresh, Q).rows == {}
    panel.token.value = -1
    panel.buttons["run"].click()
    assert panel.last_message == "token must be at least 1, got -1"
    assert snapshot(fresh, Q).rows == {} and panel.sample is None


def test_two_workers_story_buttons_follow_the_story(fresh: redis.Redis) -> None:
    story = TwoWorkersStory(fresh, Q, lease_ms=80)
    job_id = story.story.job_id
    enabled = [k for k, b in story.buttons.items() if not b.disabled]
    assert enabled == ["a_claims", "restart", "other"]
    assert story.next_box.children == (story.buttons["a_claims"],)

    story.buttons["b_claims"].click()  # out of turn: refused, nothing changes
    assert story.last_message == (
        "step 'b_claims' is not next; the next step is a_claims"
    )
    assert jobs.record(fresh, Q, job_id) == {
        b"state": b"pending", b"attempts": b"0", b"payload": b'{"report": "march"}'
    }

    story.buttons["a_claims"].click()
    assert story.ticker.running  # the live clock starts with A's lease
    assert "lease:" in story.lanes.value and "left" in story.lanes.value
    assert story.story.next_step == "a_stalls" and story.ticker.tick()  # not yet: nothing taken
    wait_out_lease(fresh, Q, job_id)
    story.ticker.tick()  # the clock, not a click, takes the stall
    assert story.story.next_step == "reaper_returns"
    assert "lease ran out" in story.text()
    story.buttons["reaper_returns"].click()

    # B's token is hidden until the reader commits
    assert story.buttons["b_claims"].disabled
    assert [b.description for b in story.next_box.children] == ["1", "2", "0"]
    assert "token 2" not in story.text()
    story.choices["b_claims"][0].click()  # says 1: the server takes the step, and says no
    assert not story.last_ok and story.story.next_step == "b_claims"
    story.choices["b_claims"][1].click()  # says 2
    row = jobs.record(fresh, Q, job_id)
    assert row is not None and row[b"attempts"] == b"2"
    assert "your picks: 1 ✗, <b>2</b> ✓" in story.log.value

    story.choices["a_completes"][1].click()  # refused with EMQSTALE
    assert story.last_ok
    assert story.last_message.startswith(
        "Right: A refused: EMQSTALE: token 1 is stale, the row's attempts is 2"
    )
    assert "emq-ok" in story.message.value
    assert jobs.record(fresh, Q, job_id) == row
    story.buttons["b_completes"].click()
    assert story.last_ok and jobs.record(fresh, Q, job_id) is None
    text = story.text()
    assert "[refused] A refused: EMQSTALE" in text
    assert "6. B finishes its work and completes [done] B completed with token 2" in text
    assert "the server holds: no row: the job is retired" in text
    assert not story.ticker.tick() and not story.ticker.running  # nothing left to watch
    # over: start again, the other setting, or the branch not taken (a fresh job taken there)
    assert [k for k, b in story.buttons.items() if not b.disabled] == ["restart", "fork", "other"]
    assert "fence on" in story.side_by_side.value

    story.buttons["restart"].click()
    assert story.story.job_id != job_id
    assert snapshot(fresh, Q).members("pending") == [story.story.job_id]


def test_two_workers_story_without_the_fence_side_by_side(fresh: redis.Redis) -> None:
    story = TwoWorkersStory(fresh, Q, lease_ms=60)
    story.fence.value = False
    assert "unfenced complete (a demonstration, not the protocol)" in story.heading.value
    log = story.run_through()
    assert "B found the job gone and its work is lost" in log
    assert "complete accepted" in story.text() and "complete: the job is gone" in story.text()
    story.buttons["other"].click()  # plays the fenced story on a queue of its own
    both = story.side_by_side.value
    assert "fence on" in both and "fence off" in both and "refused EMQSTALE" in both
    assert check(fresh, Q) == [] and check(fresh, Q + "-on") == []


def test_lab_panel_free_play(fresh: redis.Redis) -> None:
    lab = LabPanel(fresh, Q, workers=("A", "B", "C"), lease_ms=100)
    assert {"enqueue", "reap", "promote", "A.claim", "C.extend", "B.drop"} <= set(lab.buttons)
    lab.buttons["enqueue"].click()
    job_id = snapshot(fresh, Q).members("pending")[0]
    lab.buttons["A.claim"].click()
    assert lab.cards["A"].worker.holding() == f"holds {job_id} with token 1"
    assert not lab.cards["A"].buttons["complete"].disabled
    lab.buttons["B.claim"].click()
    assert lab.last_message == "worker B: nothing pending"

    # A's lease runs out; the reaper returns the job; B takes it with token 2
    wait_out_lease(fresh, Q, job_id)
    lab.buttons["reap"].click()
    assert lab.last_message == "the reaper returned 1 expired lease to pending"
    lab.cards["B"].lease.value = 5000
    lab.buttons["B.claim"].click()
    assert lab.cards["B"].worker.holding() == f"holds {job_id} with token 2"
    before = snapshot(fresh, Q)
    lab.buttons["A.complete"].click()
    assert lab.last_message == "EMQSTALE: token 1 is stale, the row's attempts is 2"
    assert same(before, snapshot(fresh, Q))
    assert lab.cards["A"].worker.held is None and lab.cards["A"].buttons["complete"].disabled
    lab.max_attempts.value = 2
    lab.delay.value = 0
    lab.buttons["B.retry"].click()
    assert lab.last_message == f"worker B ran retry on {job_id} with token 2: dead"
    assert snapshot(fresh, Q).members("dead") == [job_id]
    text = lab.text()
    assert text.splitlines()[:3] == [
        "worker A: holds nothing", "worker B: holds nothing", "worker C: holds nothing"
    ]
    assert f"dead:     {job_id}" in text and "drift check: no drift" in text
    # the row view shows the job the last press touched, the fields it changed lit
    assert f"the row emq:{{{Q}}}:job:{job_id}" in text
    assert "  state      dead  (changed)" in text
    assert text.endswith("last_error worker B gave up on try 2  (changed)")


def test_lab_panel_bad_input_changes_nothing(fresh: redis.Redis) -> None:
    lab = LabPanel(fresh, Q)
    lab.buttons["enqueue"].click()
    lab.buttons["A.claim"].click()
    before = snapshot(fresh, Q)
    lab.delay.value = -5
    lab.buttons["A.retry"].click()
    assert lab.last_message == "delay_ms must be between 0 and 31536000000, got -5"
    assert same(before, snapshot(fresh, Q))
    lab.buttons["B.complete"].click()
    assert lab.last_message == "worker B holds no job: claim first"
    lab.payload.value = ""
    lab.buttons["enqueue"].click()
    assert lab.last_ok  # an empty payload is still a payload
    with pytest.raises(ValueError, match="one to three distinct"):
        LabPanel(fresh, Q, workers=("A", "A"))


def test_panels_display_as_their_widget(fresh: redis.Redis) -> None:
    panel = TransitionPanel(fresh, Q)
    bundle = panel._repr_mimebundle_()
    assert bundle["text/plain"] == panel.text()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == panel.widget.model_id


def test_transition_panel_says_when_it_switches_job_and_can_empty_the_queue(
    fresh: redis.Redis,
) -> None:
    panel = TransitionPanel(fresh, Q, lease_ms=60_000, delay_ms=0, max_attempts=9)
    panel.press("enqueue")
    old = panel.runner.job_id
    for name in ("claim", "retry", "promote", "claim", "retry", "promote"):
        panel.press(name)  # the old job: attempts 2, a last_error, pending again
    assert old is not None
    message = panel.press("schedule")
    assert message.startswith("schedule wrote state=scheduled, attempts=0")
    assert f"a new job, {panel.runner.job_id}: the panel follows it now" in message
    # claim takes the oldest pending job, not the one followed, and says only what it wrote
    message = panel.press("claim")
    assert message == (f"claim wrote state=active, attempts=3 (token 3); it took the oldest "
                       f"pending job, {old}, not the one followed; the panel follows {old} now")
    assert "last_error" not in message
    assert panel.record.changed == {b"state", b"attempts"}  # lit on the job it switched to

    panel.buttons["empty"].click()
    assert panel.last_message.startswith(f"emptied '{Q}': ")
    assert panel.runner.job_id is None and "following no job yet" in panel.text()
    assert snapshot(fresh, Q).rows == {}
    assert panel.press("enqueue").startswith("enqueue wrote state=pending, attempts=0")


def test_transition_panel_clock_starts_with_a_lease_and_stops_without(fresh: redis.Redis) -> None:
    panel = TransitionPanel(fresh, Q, lease_ms=60)
    panel.press("enqueue")
    assert not panel.ticker.running
    panel.press("claim")
    assert panel.ticker.running and panel.ticker.tick()
    wait_out_lease(fresh, Q, panel.runner.job_id or "")
    panel.ticker.tick()
    assert "expired" in panel.sets.columns["active"].value
    panel.press("reap")
    assert not panel.ticker.tick() and not panel.ticker.running


def test_two_workers_story_press_predicts_first_when_asked(fresh: redis.Redis) -> None:
    story = TwoWorkersStory(fresh, Q, lease_ms=50)
    for step in STEP_NAMES:
        story.press(step)  # the stall's button waits for A's deadline when a program presses it
    assert story.story.next_step is None and story.last_ok, story.last_message
    assert [r.predicted for r in story.story.done if r.predicted] == ["2", "refused with EMQSTALE"]
    story.buttons["restart"].click()
    for step in ("a_claims", "a_stalls", "reaper_returns"):
        story.press(step)
    assert story.press("b_claims", "0").startswith("Not 0")
    assert story.press("b_claims", "2").startswith("Right: B holds token 2")
    assert "your picks: 0 ✗, <b>2</b> ✓" in story.log.value
