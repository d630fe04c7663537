"""The stories the notebooks tell (echomq_lab.lessons.stories), on every backend.

Each story is built from real transitions; these tests check what the server holds afterwards,
and that the waits are on the server's clock.
"""

from __future__ import annotations

import pytest
import redis

from echomq_lab import branded, errors, jobs, keyspace, transitions
from echomq_lab.clock import server_now_ms, wait_for_server, wait_out_lease
from echomq_lab.lessons.stories import Transitions, Worker, sample_row, wrote
from echomq_lab.lessons.two_workers import (
    ACCEPTED,
    GONE,
    PREDICTIONS,
    STALE,
    STEP_NAMES,
    NotYet,
    TwoWorkersStory,
)
from echomq_lab.queues import reset
from echomq_lab.snapshot import check, snapshot

Q = "stories"


def test_reset_deletes_only_that_queues_keys(conn: redis.Redis) -> None:
    for queue in (Q, "other"):
        jobs.enqueue(conn, queue, branded.mint(), b"x")
        jobs.enqueue_in(conn, queue, branded.mint(), b"y", 60_000)
        jobs.claim(conn, queue, 60_000)
    conn.set("{emq}:version", b"1")
    before_other = snapshot(conn, "other")

    assert reset(conn, Q) == 4  # pending was emptied by the claim: active, schedule, 2 rows
    assert not conn.keys(keyspace.base(Q) + "*")
    after_other = snapshot(conn, "other")
    assert after_other.sets == before_other.sets and after_other.rows == before_other.rows
    assert conn.get("{emq}:version") == b"1"
    assert reset(conn, Q) == 0


@pytest.mark.host
def test_reset_refuses_a_bad_queue_name(conn: redis.Redis) -> None:
    with pytest.raises(ValueError):
        reset(conn, "a*")


def test_wait_for_server_reads_the_server_clock(conn: redis.Redis) -> None:
    start = server_now_ms(conn)
    now = wait_for_server(conn, start + 120)
    assert now >= start + 120
    assert server_now_ms(conn) >= now


def test_wait_out_lease_refuses_a_job_without_lease(conn: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(conn, Q, job_id, b"x")
    with pytest.raises(ValueError, match="holds no lease"):
        wait_out_lease(conn, Q, job_id)


def test_sample_row_holds_token_2_by_real_transitions(conn: redis.Redis) -> None:
    jobs.enqueue(conn, Q, branded.mint(), b"left over")  # emptied first
    sample = sample_row(conn, Q, lease_ms=150)

    assert (sample.token, sample.stale_token) == (2, 1)
    row = jobs.record(conn, Q, sample.job_id)
    assert row == {b"state": b"active", b"attempts": b"2", b"payload": b'{"report": "march"}'}
    snap = snapshot(conn, Q)
    assert snap.members("active") == [sample.job_id]
    assert snap.members("pending") == snap.members("schedule") == snap.members("dead") == []
    assert check(conn, Q) == []
    # the stale token is refused and changes nothing; the live one completes
    with pytest.raises(errors.StaleToken, match="token 1 is stale, the row's attempts is 2"):
        jobs.complete(conn, Q, sample.job_id, 1)
    assert jobs.record(conn, Q, sample.job_id) == row
    assert jobs.complete(conn, Q, sample.job_id, 2) == "completed"
    assert jobs.record(conn, Q, sample.job_id) is None


@pytest.mark.host
def test_sample_row_refuses_a_bad_lease_before_touching_the_queue(conn: redis.Redis) -> None:
    job_id = branded.mint()
    jobs.enqueue(conn, Q, job_id, b"keep me")
    with pytest.raises(ValueError, match="lease_ms"):
        sample_row(conn, Q, lease_ms=0)
    assert jobs.record(conn, Q, job_id) is not None


def test_two_workers_story_runs_only_in_order(conn: redis.Redis) -> None:
    story = TwoWorkersStory(conn, Q, lease_ms=150)
    assert story.next_step is None
    job_id = story.start()
    assert jobs.record(conn, Q, job_id) == {
        b"state": b"pending", b"attempts": b"0", b"payload": b'{"report": "march"}'
    }
    with pytest.raises(ValueError, match="the next step is a_claims"):
        story.step("b_claims")
    with pytest.raises(ValueError, match="unknown step"):
        story.step("c_claims")

    results = {}
    for name in STEP_NAMES:
        assert story.next_step == name
        if name in PREDICTIONS:
            with pytest.raises(ValueError, match="predict first"):
                story.step(name)
            wrong = next(c for c in PREDICTIONS[name].choices if c != story.expected(name))
            said = story.predict(name, wrong)  # the first pick takes the step on the server
            assert said.startswith(f"Not {wrong.split()[0]}") and story.missed
            assert story.next_step == name  # the story waits for a right pick
            with pytest.raises(ValueError, match="tried"):
                story.predict(name, wrong)
            assert story.predict(name, story.expected(name)).startswith("Right: ")
            results[name] = story.done[-1]
            assert results[name].tries == (wrong,) and not results[name].prediction_right
        else:
            results[name] = story.step(name)
        if name == "b_claims":
            row = jobs.record(conn, Q, job_id)
            assert row is not None and row[b"attempts"] == b"2"
        if name == "a_completes":  # refused, the row untouched
            assert jobs.record(conn, Q, job_id) == row
            assert snapshot(conn, Q).members("active") == [job_id]
        assert check(conn, Q) == []
    assert story.next_step is None
    assert [r.refused for r in results.values()] == [False, False, False, False, True, False]
    assert results["b_claims"].outcome == "2"
    assert results["a_completes"].outcome == STALE
    assert results["a_completes"].message.startswith(
        "A refused: EMQSTALE: token 1 is stale, the row's attempts is 2"
    )
    assert "reap returned 1 job" in results["reaper_returns"].message
    assert (story.token_a, story.token_b) == (1, 2)
    assert jobs.record(conn, Q, job_id) is None
    snap = snapshot(conn, Q)
    assert all(not snap.sets[name] for name in snap.sets) and not snap.rows
    with pytest.raises(ValueError, match="the story is over"):
        story.step("a_claims")


def test_run_through_with_the_fence_ends_with_a_refused(conn: redis.Redis) -> None:
    log = TwoWorkersStory(conn, Q, lease_ms=80).run_through()
    lines = log.splitlines()
    assert lines[0].startswith("fence on")
    assert any(line.startswith("5. ") and "[refused] A refused: EMQSTALE" in line for line in lines)
    assert "6. B finishes its work and completes [done] B completed with token 2" in log
    assert lines[-1].endswith("A's late complete refused with EMQSTALE")
    assert log.count("(as predicted)") == 2  # the program guesses what the fence does
    assert check(conn, Q) == [] and not snapshot(conn, Q).rows


def test_run_through_without_the_fence_loses_bs_work(conn: redis.Redis) -> None:
    story = TwoWorkersStory(conn, Q, lease_ms=80, fence=False)
    log = story.run_through()
    assert "unfenced complete (a demonstration, not the protocol)" in log.splitlines()[0]
    a, b = story.done[-2], story.done[-1]
    assert (a.refused, a.outcome) == (False, ACCEPTED)
    assert (b.refused, b.outcome) == (True, GONE)
    assert "B finds the job gone" in b.message and "work is lost" in log.splitlines()[-1]
    assert "(not as predicted)" in log  # the program expected the fence
    assert "'refused with EMQSTALE' then 'accepted'" in log  # and then tried again
    assert jobs.record(conn, Q, story.job_id) is None
    assert check(conn, Q) == []


def test_the_fenced_story_never_reaches_the_unfenced_script(
    conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from echomq_lab.lessons import unfenced

    def boom(*_args: object) -> None:
        raise AssertionError("the fenced story ran the unfenced complete")

    monkeypatch.setattr(unfenced, "complete_unfenced", boom)
    assert "refused with EMQSTALE" in TwoWorkersStory(conn, Q, lease_ms=60).run_through()


def test_predictions_are_checked_and_the_stall_can_be_asked_not_to_wait(
    conn: redis.Redis,
) -> None:
    story = TwoWorkersStory(conn, Q, lease_ms=60_000)
    story.start()
    with pytest.raises(ValueError, match="asks for no prediction"):
        story.predict("a_claims", "1")
    with pytest.raises(ValueError, match="not next"):
        story.predict("b_claims", "2")
    story.step("a_claims")
    assert story.believes("A") == "A holds the job with token 1 and is working on it"
    assert story.believes("B") == "B has not claimed the job"
    left = story.lease_left_ms()
    assert left is not None and 0 < left <= 60_000
    with pytest.raises(NotYet, match="ms left on the server's clock"):
        story.step("a_stalls", wait=False)
    assert story.next_step == "a_stalls" and len(story.done) == 1

    short = TwoWorkersStory(conn, Q, lease_ms=50)
    short.start()
    for name in ("a_claims", "a_stalls", "reaper_returns"):
        short.step(name)
    with pytest.raises(ValueError, match="is not a choice"):
        short.predict("b_claims", "7")
    assert short.waiting_for is PREDICTIONS["b_claims"]


def test_a_story_whose_job_someone_else_took_says_so(conn: redis.Redis) -> None:
    story = TwoWorkersStory(conn, Q, lease_ms=60_000)
    job_id = story.start()
    jobs.claim(conn, Q, 60_000)  # another client takes it
    with pytest.raises(errors.SomeoneElse, match="A.s claim found nothing pending: someone else"):
        story.step("a_claims")
    assert story.next_step == "a_claims"
    assert jobs.record(conn, Q, job_id) is not None


def test_transitions_walk_every_transition(conn: redis.Redis) -> None:
    run = Transitions(conn, Q, lease_ms=60_000, delay_ms=0, max_attempts=2)
    with pytest.raises(ValueError, match="run enqueue"):
        run.run("complete")
    with pytest.raises(ValueError, match="unknown transition"):
        run.run("teleport")

    seen = {}
    for name in ("enqueue", "claim", "extend", "retry", "promote", "claim", "retry", "reprocess",
                 "claim", "complete"):
        taken = run.run(name)
        seen.setdefault(name, []).append(taken)
        assert check(conn, Q) == []
    # Every transition but those one worker's job meets no time for (schedule, reap) and the
    # other ways to retire it (a job retires once: here by complete).
    others = {t.name for t in transitions.TRANSITIONS if t.retires and t.name != "complete"}
    assert set(seen) | {"schedule", "reap"} | others == set(transitions.NAMES)
    assert not set(seen) & others
    assert seen["enqueue"][0].message == (
        "enqueue wrote state=pending, attempts=0, payload (19 bytes)"
    )
    assert seen["claim"][0].message == "claim wrote state=active, attempts=1 (token 1)"
    assert seen["extend"][0].message == (
        "extend with token 1 wrote nothing to the row: lease pushed back"
    )
    assert seen["promote"][0].message == "promote: 1 moved to pending; it wrote state=pending"
    assert seen["complete"][0].message == (
        "complete with token 3 deleted the row: the job is retired"
    )
    assert [t.after for t in seen["retry"]] == ["scheduled", "dead"]
    assert seen["retry"][1].message.endswith("(attempts reached max_attempts=2)")
    assert seen["reprocess"][0].message == "reprocess wrote state=pending, dropped last_error"
    assert seen["claim"][2].message == "claim wrote state=active, attempts=3 (token 3)"
    assert (seen["complete"][0].before, seen["complete"][0].after) == ("active", "completed")
    assert jobs.record(conn, Q, run.job_id or "") is None

    run.delay_ms = 60_000
    taken = run.run("schedule")
    assert (taken.before, taken.after) == ("start", "scheduled")
    assert run.token is None
    assert run.run("reap").message == "reap: 0 returned to pending (nothing in active was due)"
    assert run.run("promote").message.startswith(
        f"promote: 0 moved to pending (nothing in schedule was due yet: {run.job_id} is due in "
    )
    with pytest.raises(ValueError, match="run claim first"):
        run.run("extend")


def test_transitions_refusal_changes_nothing(conn: redis.Redis) -> None:
    run = Transitions(conn, Q)
    run.run("enqueue")
    run.run("claim")
    before = snapshot(conn, Q)
    run.token = 7
    with pytest.raises(errors.StaleToken):
        run.run("complete")
    with pytest.raises(errors.WrongState):
        run.run("reprocess")
    run.lease_ms = 0
    with pytest.raises(ValueError, match="lease_ms"):
        run.run("claim")
    after = snapshot(conn, Q)
    assert after.sets == before.sets and after.rows == before.rows


def test_worker_lets_a_stale_job_go(conn: redis.Redis) -> None:
    a, b = Worker(conn, Q, "A"), Worker(conn, Q, "B")
    job_id = branded.mint()
    jobs.enqueue(conn, Q, job_id, b"x")
    assert "token 1" in a.claim(100)
    with pytest.raises(ValueError, match="already holds"):
        a.claim(100)
    assert b.claim(100) == "worker B: nothing pending"
    wait_out_lease(conn, Q, job_id)
    assert jobs.reap(conn, Q) == 1
    assert "token 2" in b.claim(60_000)
    with pytest.raises(errors.StaleToken):
        a.present("complete", lease_ms=100)
    assert a.held is None
    assert b.present("extend", lease_ms=60_000) == (
        f"worker B ran extend on {job_id} with token 2: lease pushed back"
    )
    assert b.held is not None  # extend leaves the job where it is: B still holds it
    assert b.present("complete", lease_ms=100).endswith("with token 2: completed")
    assert jobs.record(conn, Q, job_id) is None
    with pytest.raises(ValueError, match="holds no job"):
        b.present("retry", lease_ms=100)
    with pytest.raises(ValueError, match="claim takes no token"):
        b.present("claim", lease_ms=100)
    with pytest.raises(ValueError, match="unknown transition 'finish'"):
        b.present("finish", lease_ms=100)


def test_wrote_names_changes_and_drops() -> None:
    assert wrote(None, None) == "wrote no row"
    assert wrote({b"state": b"active"}, None) == "deleted the row"
    assert wrote({b"state": b"dead", b"last_error": b"e"}, {b"state": b"pending"}) == (
        "state=pending, dropped last_error"
    )
    assert wrote({b"state": b"active"}, {b"state": b"active"}) == "nothing"
