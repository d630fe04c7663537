"""The views, headless: RecordView, SetsView and StateDiagram on a fresh embedded server.

Each test drives real transitions, then checks what the view renders (its text and key bits of
its HTML) against what the server holds.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import pytest
import redis

from echomq_lab import branded, connect, jobs, transitions
from echomq_lab.clock import server_now_ms, wait_out_lease
from echomq_lab.servers import RunningServer
from echomq_lab.snapshot import snapshot
from echomq_lab.widgets import RecordView, SetsView
from echomq_lab.widgets import look as style
from echomq_lab.widgets.diagram import EDGES, NODES, StateDiagram, find_edge
from echomq_lab.widgets.record_view import GONE, show_value
from echomq_lab.widgets.sets_view import due_left, lease_left

Q = "views"


@pytest.fixture
def fresh() -> redis.Redis:
    return connect(fresh=True)


def _changed_rows(html_text: str) -> list[str]:
    """The field names in rows the table marks as changed."""
    return re.findall(r'<tr class="emq-changed"[^>]*><td[^>]*>([a-z_]+)', html_text)


def test_record_view_lights_what_claim_wrote(fresh: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(fresh, Q, job_id, b"hello")
    view = RecordView(fresh, Q, job_id)
    assert view.changed == set()
    assert _changed_rows(view.table.value) == []
    assert style.state_badge("pending") in view.title.value
    assert "attempts   0" in view.text()

    jobs.claim(fresh, Q, 60_000)
    view.refresh()
    assert view.row == jobs.record(fresh, Q, job_id)
    assert view.changed == {b"state", b"attempts"}
    assert sorted(_changed_rows(view.table.value)) == ["attempts", "state"]
    assert f"background:{style.CHANGED_BG}" in view.table.value
    assert style.STATE_COLOURS["active"] in view.title.value
    assert "state      active  (changed)" in view.text()
    assert "attempts   1  (changed)" in view.text()
    assert "payload    'hello'" in view.text()

    view.refresh()  # nothing changed since the last look: nothing lit
    assert view.changed == set() and _changed_rows(view.table.value) == []


def test_record_view_says_when_the_row_is_gone(fresh: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(fresh, Q, job_id, b"x")
    claimed = jobs.claim(fresh, Q, 60_000)
    assert claimed is not None
    view = RecordView(fresh, Q, job_id)
    jobs.complete(fresh, Q, job_id, claimed.token)
    view.refresh()
    assert view.row is None and view.state is None
    assert GONE in view.table.value and GONE in view.text()
    never = branded.mint()
    view.show(never)
    assert view.text().endswith(GONE)


def test_record_view_lists_a_dropped_field(fresh: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(fresh, Q, job_id, b"x")
    claimed = jobs.claim(fresh, Q, 60_000)
    assert claimed is not None
    jobs.retry(fresh, Q, job_id, claimed.token, 0, 1, "boom")
    view = RecordView(fresh, Q, job_id)
    assert "last_error boom" in view.text()
    jobs.reprocess(fresh, Q, job_id)
    view.refresh()
    assert view.removed == {b"last_error"}
    assert "last_error (removed)" in view.text()
    assert 'class="emq-removed"' in view.table.value


def test_record_view_shows_payloads_safely(fresh: redis.Redis) -> None:
    tricky = branded.mint()
    jobs.enqueue(fresh, Q, tricky, "<script>alert(1)</script>")
    view = RecordView(fresh, Q, tricky)
    assert "<script>" not in view.table.value
    assert "&lt;script&gt;" in view.table.value
    binary = branded.mint()
    jobs.enqueue(fresh, Q, binary, b"\xff\x00ok")
    view.show(binary)
    assert "payload    b'\\xff\\x00ok'" in view.text()
    assert html.escape(repr(b"\xff\x00ok")) in view.table.value
    assert show_value(b"a" * 500).endswith("… (500 bytes)")


def test_record_view_displays_through_its_widget(fresh: redis.Redis) -> None:
    view = RecordView(fresh, Q)
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == view.text() == "the row: no job yet"
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.widget.model_id


def test_sets_view_times_are_on_the_server_clock(fresh: redis.Redis) -> None:
    leased, later, dead = branded.mint(), branded.mint(), branded.mint()
    jobs.enqueue(fresh, Q, leased, b"a")
    jobs.enqueue_in(fresh, Q, later, b"b", 60_000)
    jobs.enqueue(fresh, Q, dead, b"c")
    first = jobs.claim(fresh, Q, 60_000)
    second = jobs.claim(fresh, Q, 60_000)
    assert first is not None and second is not None and second.id == dead
    jobs.retry(fresh, Q, dead, second.token, 0, 1, "gave up")
    view = SetsView(fresh, Q, highlight=leased)
    snap = view.snap
    assert snap is not None
    deadline = snap.score("active", leased)
    run_at = snap.score("schedule", later)
    assert deadline is not None and run_at is not None
    text = view.text()
    assert f"active:   {leased} ({lease_left(deadline, snap.now_ms)})" in text
    assert f"schedule: {later} ({due_left(run_at, snap.now_ms)})" in text
    assert re.search(r"expires in 5\d s", text) and re.search(r"due in 5\d s", text)
    assert f"dead:     {dead}" in text and "pending:  (empty)" in text
    assert text.endswith("drift check: no drift")
    assert style.SET_COLOURS["active"] in view.columns["active"].value
    assert "font-weight:bold;" in view.columns["active"].value  # the highlighted id
    assert "emq-ok" in view.check_line.value


def test_sets_view_says_expired_after_the_deadline(fresh: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(fresh, Q, job_id, b"a")
    jobs.claim(fresh, Q, 50)
    wait_out_lease(fresh, Q, job_id)
    view = SetsView(fresh, Q)
    assert re.search(rf"{job_id} \(expired \d+ ms ago\)", view.text())
    assert lease_left(100, 100) == "expired 0 ms ago"
    assert lease_left(140, 100) == "expires in 40 ms"
    assert due_left(90, 100) == "was due 10 ms ago"
    assert lease_left(600_000, 1_500) == "expires in 9 min 58 s"
    assert due_left(42_900, 0) == "due in 42 s"


def test_sets_view_tick_redraws_the_time_left_on_the_server_clock(fresh: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(fresh, Q, job_id, b"a")
    view = SetsView(fresh, Q)
    assert not view.timed() and not view.tick()  # nothing timed: the clock may stop
    jobs.claim(fresh, Q, 80)
    view.refresh()
    assert view.timed() and re.search(r"expires in \d+ ms", view.text())
    wait_out_lease(fresh, Q, job_id)
    assert view.tick()  # the members stay; only the time left is redrawn
    assert re.search(rf"{job_id} \(expired \d+ ms ago\)", view.text())
    assert "expired" in view.columns["active"].value


def test_sets_view_shows_drift_from_the_same_snapshot(fresh: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(fresh, Q, job_id, b"a")
    # break the invariant behind the protocol's back, to see the verdict change
    fresh.hset(f"emq:{{{Q}}}:job:{job_id}", "state", "active")
    view = SetsView(fresh, Q)
    assert view.text().endswith(f"drift check: state-mismatch: {job_id} has state 'active' "
                                "but is in pending")
    assert "emq-refused" in view.check_line.value
    snap = snapshot(fresh, Q)
    view.refresh(snap)
    assert view.snap is snap


def test_sets_view_refresh_uses_the_given_snapshot_only(fresh: redis.Redis) -> None:
    view = SetsView(fresh, Q)
    snap = snapshot(fresh, Q)
    jobs.enqueue(fresh, Q, branded.mint(), b"late")
    view.refresh(snap)
    assert "pending:  (empty)" in view.text()
    view.refresh()
    assert "pending:  (empty)" not in view.text()
    assert server_now_ms(fresh) >= snap.now_ms


def test_diagram_lights_the_transition_taken() -> None:
    diagram = StateDiagram()
    assert diagram.text() == "state diagram: current state = no job"
    assert "emq-current" not in diagram.svg.value
    diagram.update("active", ("claim", "pending", "active"))
    svg = diagram.svg.value
    assert svg.count("emq-edge-lit") == 1
    assert re.search(r'class="emq-edge emq-edge-lit" data-transition="claim"', svg)
    assert svg.count('class="emq-current"') == 1
    for state in NODES:
        assert f'class="emq-node emq-node-{state}"' in svg
        assert style.STATE_COLOURS[state] in svg
    assert diagram.text() == (
        "state diagram: current state = active; lit: claim (pending -> active)"
    )
    diagram.update("dead", ("retry", "active", "dead"))
    assert 'data-transition="retry (at the cap)"' in diagram.svg.value.split("emq-edge-lit")[1]
    diagram.update("scheduled", ("promote", "scheduled", "scheduled"))
    assert "emq-edge-lit" not in diagram.svg.value
    assert diagram.text().endswith("promote moved nothing (scheduled)")
    diagram.update("limbo")  # another client's state: drawn, no node ringed, named in words
    assert "emq-current" not in diagram.svg.value
    assert "current state = 'limbo' (no such state on the diagram" in diagram.text()


def test_every_transition_has_an_edge() -> None:
    labels = {name for edge in EDGES for name in edge.names}
    assert set(transitions.NAMES) | {"enqueue_in", "enqueue_at"} == labels
    assert find_edge("retry", "active", "scheduled") is not None
    assert find_edge("claim", "active", "pending") is None


def test_every_panel_survives_a_server_that_went_down(
    own_server_of: Callable[..., RunningServer],
) -> None:
    """Stop the server under the panels: each press shows one "cannot reach" line, no raise."""
    from echomq_lab import connect
    from echomq_lab.widgets import FencePanel, LabPanel, TransitionPanel, TwoWorkersStory

    server = own_server_of("valkey")
    try:
        conn = connect(server.url)
        fence = FencePanel(conn, "down-fence", lease_ms=50)
        panels = (TransitionPanel(conn, "down-t"), TwoWorkersStory(conn, "down-s"),
                  LabPanel(conn, "down-l"))
    finally:
        server.stop()
    transitions, story, lab = panels
    transitions.press("enqueue")
    story.buttons["a_claims"].click()
    lab.buttons["enqueue"].click()
    lab.buttons["refresh"].click()
    fence.token.value = 2
    fence.buttons["complete"].click()
    for panel in (transitions, story, lab, fence):
        assert panel.last_message.startswith("cannot reach redis://127.0.0.1:"), (
            panel.last_message)
        assert "\n" not in panel.last_message
    # said once, on the message line; the views keep their last drawing (a redraw after a lost
    # call would only wait on the server again)
    assert "cannot reach redis://127.0.0.1:" in fence.message.value
    assert "EMQ" not in fence.sets.check_line.value


def test_the_ticker_runs_in_the_front_end_and_stops_when_nothing_is_left() -> None:
    from echomq_lab.widgets.ticker import Ticker

    answers = [True, True, False]
    ticker = Ticker(lambda: answers.pop(0))
    sent = []
    ticker.play.observe(lambda change: sent.append(change["new"]), names="playing")
    ticker.start()
    assert sent == [True] and ticker.running  # false then true: the front end starts its timer
    ticker.play.value += 1  # a front-end tick arrives as a value change
    ticker.play.value += 1
    assert ticker.ticks == 2 and ticker.running
    assert not ticker.tick() and not ticker.running  # nothing left to watch: it stops
    ticker.start()
    assert sent == [True, False, True]


def test_the_transition_panel_asks_for_a_prediction_first_when_ticked() -> None:
    from echomq_lab import connection
    from echomq_lab.widgets import TransitionPanel

    conn = connection.connect(fresh=True)
    panel = TransitionPanel(conn, "predict-first")
    assert panel.guesses.layout.display == "none"  # offered, not imposed
    panel.predict.value = True
    assert panel.guesses.layout.display == "flex"
    said = panel.press("enqueue")  # no guess yet: nothing runs
    assert said.startswith("predict first") and not panel.last_ok
    assert panel.runner.job_id is None
    panel.guess_state.value, panel.guess_attempts.value = "pending", "as it was"
    assert panel.press("enqueue").endswith("you said state pending (✓); you said attempts as "
                                           "it was (✓)")
    panel.guess_state.value, panel.guess_attempts.value = "pending", "one up"  # a wrong state
    said = panel.press("claim")
    assert "you said state pending (✗: it is active)" in said and "attempts one up (✓)" in said
    assert "(✓)" not in said.split("you said state pending")[1].split(";")[0]  # no tick on it
    assert "✓" not in panel.message.value.split("claim wrote")[0]  # nor leading the line
    assert panel.guess_state.value is None  # cleared for the next run
