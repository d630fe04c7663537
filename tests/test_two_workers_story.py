"""The two-workers story teaches what the course asks before it is asked, and makes the cost of
no fence something a reader can point at.

- the fork after the reaper: A wakes first, before anyone claims again; its token still equals
  the row's attempts, so the course's complete (the token only, on a copy of the job) accepts
  it and leaves the id in pending with no row, which the course's claim hands out again with
  token 1 on a row made anew (no payload); the lab's complete then refuses it as stale (the id
  is no longer in active), the row untouched; the fork is offered with the fence on only, once
  the reaper has run, and still after a pick at B's token (a fresh job is taken back to it);
- a wrong prediction is answered beside its question, without a tick and without naming the
  right choice, and the same question waits for another pick;
- the other setting is replayed with the story's own lease and no prediction the reader did not
  make, and drawn as lanes of its own beside the reader's run;
- A's late complete is drawn as a picture: A's token against the row's attempts, the fence
  refusing (fence on) or not reading it (fence off);
- what happened is shown beside what the system now believes; with the fence off that names
  B's thrown-away work and a job that never runs again;
- the log says a refusal once (no "refused ... refused"), and the clock says when it is paused.
"""

from __future__ import annotations

import re

import pytest
import redis

from echomq_lab import check, connection, jobs
from echomq_lab.lessons import two_workers as tw
from echomq_lab.widgets import TwoWorkersStory, look
from echomq_lab.widgets.diagram import LABEL_SIZE, NODE_TEXT_SIZE
from echomq_lab.widgets.two_workers import fence_svg

Q = "story-teach"


@pytest.fixture
def fresh() -> redis.Redis:
    return connection.connect(fresh=True)


def to_the_fork(panel: TwoWorkersStory) -> None:
    for step in ("a_claims", "a_stalls", "reaper_returns"):
        panel.press(step)


def test_the_fork_runs_the_courses_complete_then_the_labs(fresh: redis.Redis) -> None:
    panel = TwoWorkersStory(fresh, Q, lease_ms=60)
    assert panel.fork_box.layout.display == "none" and panel.story.fork is None
    to_the_fork(panel)
    assert panel.story.fork == tw.BRANCH[0] and panel.fork_box.layout.display == "flex"
    before = jobs.record(fresh, Q, panel.story.job_id)
    assert before is not None and before[b"attempts"] == b"1"  # A's token still matches
    panel.buttons["fork"].click()
    assert panel.story.next_step == tw.BRANCH[0]
    assert [b.description for b in panel.next_box.children] == list(
        tw.PREDICTIONS[tw.BRANCH[0]].choices)  # predict first
    assert "nothing else" in tw.PREDICTIONS[tw.BRANCH[0]].question  # the rule it asks about
    copy = panel.story.copy_queue

    # the course's complete (the token only), on a copy brought to the same point
    by = {b.description: b for b in panel.choices[tw.BRANCH[0]]}
    by[tw.STALE].click()  # the reader's wrong guess
    assert not panel.last_ok and panel.last_message.startswith("Not refused")
    assert by[tw.STALE].icon == "times" and by[tw.STALE].disabled  # no tick beside it
    assert panel.story.next_step == tw.BRANCH[0]  # asked again before moving on
    by[tw.ACCEPTED].click()
    assert panel.last_ok and panel.last_message.startswith("Right: ")
    copy_id = fresh.zrange(f"emq:{{{copy}}}:pending", 0, -1)
    assert copy_id == []  # the course's claim took the id left in pending
    assert "handed that id out again, with token 1 and no payload" in panel.story.copy_left
    (copy_active,) = fresh.zrange(f"emq:{{{copy}}}:active", 0, -1)
    copy_row = jobs.record(fresh, copy, copy_active.decode())
    assert copy_row == {b"attempts": b"1", b"state": b"active"}  # a row made anew, no payload
    assert "the id stayed in pending" in panel.story.copy_left
    assert jobs.record(fresh, Q, panel.story.job_id) == before  # the story's job untouched

    # then the lab's complete, on the story's job
    assert panel.story.next_step == tw.LAB_BRANCH[0]
    panel.press(tw.LAB_BRANCH[0], tw.ACCEPTED)
    assert not panel.last_ok and "where is the job's id now" in panel.last_message
    panel.press(tw.LAB_BRANCH[0])
    assert panel.last_ok and "holds no lease" in panel.last_message
    assert "lab's addition beyond the course" in panel.last_message
    assert jobs.record(fresh, Q, panel.story.job_id) == before  # refused: nothing written
    assert "accepted ✗" in panel.log.value and "refused with EMQSTALE</b> ✓" in panel.log.value
    panel.press("b_claims")
    panel.press("b_completes")
    assert panel.story.next_step is None and check(fresh, Q) == []
    assert "lease gone: refused" in panel.text() and "1 = 1: accepted" in panel.text()
    assert "the lab's refused with EMQSTALE" in panel.story.verdict()


def test_the_courses_complete_alone_leaves_an_id_with_no_row(fresh: redis.Redis) -> None:
    from echomq_lab import branded
    from echomq_lab.lessons import unfenced

    job_id = branded.mint()
    jobs.enqueue(fresh, Q, job_id, b"x")
    token = jobs.claim(fresh, Q, 1).token
    check_lease_out = __import__("echomq_lab.clock", fromlist=["wait_out_lease"])
    check_lease_out.wait_out_lease(fresh, Q, job_id)
    assert jobs.reap(fresh, Q) == 1
    with pytest.raises(Exception, match="EMQSTALE"):  # the lab's: refused
        jobs.complete(fresh, Q, job_id, token)
    assert unfenced.complete_token_only(fresh, Q, job_id, token) == "completed"  # the course's
    assert jobs.record(fresh, Q, job_id) is None
    assert fresh.zrange(f"emq:{{{Q}}}:pending", 0, -1) == [job_id.encode()]
    assert check(fresh, Q) != []  # a member of pending with no row: the drift check sees it
    claimed, dropped = jobs.claim_dropping(fresh, Q, 1000)
    assert claimed is None and dropped.orphans == (job_id.encode(),)


def test_a_wrong_prediction_is_answered_beside_the_question(fresh: redis.Redis) -> None:
    panel = TwoWorkersStory(fresh, Q, lease_ms=60)
    to_the_fork(panel)
    assert "token 2" not in panel.text()
    panel.press("b_claims", "1")
    said = panel.last_message
    assert not panel.last_ok and said.startswith("Not 1") and "2" not in said
    assert "✓" not in panel.message.value and "✗" in panel.message.value
    kids = list(panel.widget.children)
    assert kids.index(panel.message) == kids.index(panel.next_box) + 2  # beside the question
    assert panel.story.next_step == "b_claims" and "Pick again" in panel.prompt.value
    assert "B has not claimed the job" in panel.text()  # the answer is held back
    assert "attempts 1" in panel.text()
    panel.press("b_claims", "0")
    assert not panel.last_ok and "2" not in panel.last_message
    panel.press("b_claims", "2")
    assert panel.last_ok and panel.last_message.startswith("Right: B holds token 2")
    assert panel.story.next_step == "a_completes"
    assert all(not c.startswith("accepted:") and ":" not in c
               for ask in tw.PREDICTIONS.values() for c in ask.choices)  # bare answers


def test_the_fork_is_offered_only_with_the_fence_and_only_at_the_fork(fresh: redis.Redis) -> None:
    panel = TwoWorkersStory(fresh, Q, lease_ms=60)
    panel.buttons["fork"].click()  # too early: refused in words, nothing taken
    assert not panel.last_ok and "only with the fence on" in panel.last_message
    assert "Error" not in panel.last_message
    to_the_fork(panel)
    panel.choices["b_claims"][1].click()  # the reader chose the main path
    # still offered: pressed, a fresh job is taken back to the fork first
    assert panel.story.fork == tw.BRANCH[0] and not panel.buttons["fork"].disabled
    assert "fresh job" in panel.fork_note.value
    panel.buttons["fork"].click()
    assert panel.last_ok and "a fresh job" in panel.last_message, panel.last_message
    assert panel.story.next_step == tw.BRANCH[0] and len(panel.story.done) == 3
    assert panel.story.fork is None and panel.buttons["fork"].disabled
    off = TwoWorkersStory(fresh, Q + "-off", lease_ms=60, fence=False)
    to_the_fork(off)
    assert off.story.fork is None and off.fork_box.layout.display == "none"


def test_the_other_setting_is_replayed_with_the_storys_lease_and_no_predictions(
    fresh: redis.Redis,
) -> None:
    panel = TwoWorkersStory(fresh, Q, lease_ms=120)
    panel.run_through()
    panel.buttons["other"].click()
    assert panel.last_ok, panel.last_message
    off = panel.runs_text[False]
    assert "predict" not in off and "as predicted" not in off
    assert "its 0.12 s lease ran out" in off  # the story's own lease, not a shorter one
    assert panel.working.value == "" and not panel.buttons["other"].disabled
    both = panel.side_by_side.value
    assert both.count('class="emq-run"') == 2 and both.count('class="emq-lanes"') == 2
    assert both.count("svg class=\"emq-fence\"") == 2


def test_without_the_fence_the_cost_is_named_beside_what_happened(fresh: redis.Redis) -> None:
    panel = TwoWorkersStory(fresh, Q, lease_ms=60, fence=False)
    panel.run_through()
    happened, believed = panel.story.aftermath()
    assert any("thrown away" in line for line in happened)
    assert any("nothing will ever run the job again" in line for line in believed)
    assert any("whose lease had run out" in line for line in believed)
    shown = panel.side_by_side.value
    assert "what happened" in shown and "what the system now believes" in shown
    on = TwoWorkersStory(fresh, Q + "-on", lease_ms=60)
    on.run_through()
    assert on.story.aftermath()[1][0].startswith("the job is done, finished by B")


def test_the_fence_is_drawn_at_as_late_complete() -> None:
    refused = fence_svg(1, 2, fenced=True, leased=True)
    assert 'role="img"' in refused and "A: token 1" in refused and "row: attempts 2" in refused
    assert "1 ≠ 2: refused" in refused
    assert "not compared: accepted" in fence_svg(1, 2, fenced=False, leased=True)
    assert "lease gone: refused" in fence_svg(1, 1, fenced=True, leased=False)
    sizes = [int(s) for s in re.findall(r"font-size:(\d+)px", refused)]
    assert sizes and min(sizes) >= 11  # drawn at its own size, never scaled down


def test_the_log_says_a_refusal_once(fresh: redis.Redis) -> None:
    panel = TwoWorkersStory(fresh, Q, lease_ms=60)
    panel.run_through()
    assert "A refused: EMQSTALE" in panel.log.value
    assert not re.search(r"refused</span>\s*<span[^>]*>A refused", panel.log.value)


def test_the_clock_says_paused_and_its_button_has_a_name(fresh: redis.Redis) -> None:
    panel = TwoWorkersStory(fresh, Q, lease_ms=60_000)
    ticker = panel.ticker
    assert ticker.play.layout.display == "none"  # its icon-only buttons never show
    panel.press("a_claims")
    assert ticker.status.value == "live clock: running"
    ticker.button.click()
    assert ticker.status.value == "live clock: paused" and ticker.button.description
    panel._draw()
    assert "paused" in panel.clock_note.value
    ticker.button.click()
    assert ticker.running and ticker.status.value == "live clock: running"


def test_the_diagrams_words_render_at_11_px_or_more_in_the_transition_panel() -> None:
    scale = 470 / 740  # the panel draws the 740-unit diagram 470 px wide
    assert min(LABEL_SIZE, NODE_TEXT_SIZE) * scale >= 11


@pytest.mark.parametrize("exc", [ValueError("token must be at least 1, got 0"),
                                 TypeError("seed must be an int, not float"),
                                 KeyError("no such field")])
def test_a_refusal_is_said_in_words_without_a_python_class(exc: Exception) -> None:
    line = look.one_line(exc)
    assert type(exc).__name__ not in line and "Error" not in line
    assert line == str(exc.args[0])


def test_an_unexpected_failure_is_said_in_words() -> None:
    assert look.one_line(RuntimeError("boom")) == "something went wrong in the lab: boom"
