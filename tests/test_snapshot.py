"""snapshot() and view(): one atomic read of a queue, whole or windowed, on every backend."""

from __future__ import annotations

import pytest
import redis

from echomq_lab import Snapshot, branded, jobs
from echomq_lab.scripts import load
from echomq_lab.snapshot import SET_OF_STATE, check, drifts, snapshot, view
from tests.support.state import BINARY, deadline_window, dump, server_ms
from tests.support.traffic import assert_one_evalsha, preload, traffic

Q = "snap"
LONG = 60_000


def test_snapshot_of_an_empty_queue(conn: redis.Redis) -> None:
    with deadline_window(conn, 0) as window:
        snap = snapshot(conn, Q)
    assert isinstance(snap, Snapshot)
    assert snap.queue == Q
    assert window[0] <= snap.now_ms <= window[1]
    assert snap.sets == {"pending": [], "active": [], "schedule": [], "dead": []}
    assert snap.rows == {}
    assert snap.ids() == [] and drifts(snap) == []


def test_snapshot_after_every_kind_of_transition(conn: redis.Redis) -> None:
    gone, dead, retried, active, future, p_old, p_new = (branded.mint() for _ in range(7))
    # gone: claimed and completed (nothing must remain)
    jobs.enqueue(conn, Q, gone, b"gone")
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and jobs.complete(conn, Q, gone, got.token) == "completed"
    # dead: failed at the cap
    jobs.enqueue(conn, Q, dead, b"dead")
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and jobs.retry(conn, Q, dead, got.token, 0, 1, "fatal") == "dead"
    # retried: failed below the cap, scheduled 30 s out
    jobs.enqueue(conn, Q, retried, b"retried")
    got = jobs.claim(conn, Q, LONG)
    assert got is not None
    with deadline_window(conn, 30_000) as retry_window:
        jobs.retry(conn, Q, retried, got.token, 30_000, 3, b"flaky")
    # active: claimed, then extended (extend tells the exact deadline)
    jobs.enqueue(conn, Q, active, BINARY)
    got = jobs.claim(conn, Q, 1_000)
    assert got is not None and got.id == active
    deadline = jobs.extend(conn, Q, active, got.token, LONG)
    # future: enqueued at a fixed run-at
    run_at = server_ms(conn) + 3_600_000
    jobs.enqueue_at(conn, Q, future, b"future", run_at)
    # two pending, enqueued newest first
    jobs.enqueue(conn, Q, p_new, b"new")
    jobs.enqueue(conn, Q, p_old, b"old")
    before = dump(conn)

    with deadline_window(conn, 0) as window:
        snap = snapshot(conn, Q)

    assert dump(conn) == before  # read-only
    assert window[0] <= snap.now_ms <= window[1]
    retry_at = snap.score("schedule", retried)
    assert retry_at is not None and retry_window[0] <= retry_at <= retry_window[1]
    assert snap.sets == {
        "pending": [(p_old, 0), (p_new, 0)],  # equal scores: byte order = mint order
        "active": [(active, deadline)],
        "schedule": [(retried, retry_at), (future, run_at)],
        "dead": [(dead, 0)],
    }
    assert snap.rows == {
        dead: {b"state": b"dead", b"attempts": b"1", b"payload": b"dead", b"last_error": b"fatal"},
        retried: {
            b"state": b"scheduled",
            b"attempts": b"1",
            b"payload": b"retried",
            b"last_error": b"flaky",
        },
        active: {b"state": b"active", b"attempts": b"1", b"payload": BINARY},
        future: {b"state": b"scheduled", b"attempts": b"0", b"payload": b"future"},
        p_old: {b"state": b"pending", b"attempts": b"0", b"payload": b"old"},
        p_new: {b"state": b"pending", b"attempts": b"0", b"payload": b"new"},
    }
    assert all(isinstance(score, int) for pairs in snap.sets.values() for _, score in pairs)
    assert gone not in snap.ids()
    assert snap.ids() == sorted([dead, retried, active, future, p_old, p_new])
    assert snap.members("pending") == [p_old, p_new]
    assert snap.score("active", active) == deadline and snap.score("pending", active) is None
    for job_id, fields in snap.rows.items():
        assert snap.holders(job_id) == [SET_OF_STATE[fields[b"state"].decode()]]
    assert drifts(snap) == []


def test_snapshot_tracks_each_step(conn: redis.Redis) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"x")
    assert snapshot(conn, Q).holders(job) == ["pending"]
    got = jobs.claim(conn, Q, LONG)
    assert got is not None
    snap = snapshot(conn, Q)
    assert snap.holders(job) == ["active"] and snap.rows[job][b"attempts"] == b"1"
    assert jobs.retry(conn, Q, job, got.token, 0, 1, "e") == "dead"
    assert snapshot(conn, Q).holders(job) == ["dead"]
    assert jobs.reprocess(conn, Q, job) == "pending"
    snap = snapshot(conn, Q)
    assert snap.holders(job) == ["pending"] and b"last_error" not in snap.rows[job]
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and got.token == 2
    jobs.complete(conn, Q, job, got.token)
    snap = snapshot(conn, Q)
    assert snap.ids() == [] and snap.rows == {}


def test_snapshot_reads_only_its_own_queue(conn: redis.Redis) -> None:
    mine, other, prefixed = branded.mint(), branded.mint(), branded.mint()
    jobs.enqueue(conn, Q, mine, b"m")
    jobs.enqueue(conn, "snap2", other, b"o")  # a name that extends ours
    jobs.enqueue(conn, "sna", prefixed, b"p")  # a name that ours extends
    snap = snapshot(conn, Q)
    assert snap.ids() == [mine]
    assert list(snap.rows) == [mine]
    assert snapshot(conn, "snap2").ids() == [other]
    assert snapshot(conn, "sna").ids() == [prefixed]


def test_a_row_in_no_set_shows_only_when_followed(conn: redis.Redis) -> None:
    lonely = branded.mint()
    conn.hset(f"emq:{{{Q}}}:job:{lonely}", mapping={"state": "active", "attempts": "3"})
    assert snapshot(conn, Q).ids() == []  # no script lists keys by pattern
    snap = snapshot(conn, Q, follow=[lonely])
    assert snap.rows == {lonely: {b"state": b"active", b"attempts": b"3"}}
    assert snap.holders(lonely) == []
    assert [d.kind for d in drifts(snap)] == ["row-in-no-set"]
    assert [d.kind for d in drifts(view(conn, Q, [lonely]))] == ["row-in-no-set"]
    assert [(d.kind, d.job_id) for d in check(conn, Q)] == [("row-in-no-set", lonely)]


@pytest.fixture
def real(backend_name: str) -> bool:
    return backend_name != "fakeredis"


def test_snapshot_is_one_evalsha(conn: redis.Redis, real: bool) -> None:
    for _ in range(3):
        jobs.enqueue(conn, Q, branded.mint(), b"x")
    assert jobs.claim(conn, Q, LONG) is not None
    preload(conn)
    before = dump(conn)
    with traffic(conn, real) as t:
        snap = snapshot(conn, Q)
    assert_one_evalsha(t, real, load("view").sha)
    assert len(snap.ids()) == 3
    if real:  # and the script itself wrote nothing
        writes = {"cmdstat_hset", "cmdstat_zadd", "cmdstat_zrem", "cmdstat_del", "cmdstat_hdel"}
        assert not writes & set(t.calls), t.calls
    assert dump(conn) == before


# ------------------------------------------------------------------ the bounded view ---


def _fill(conn: redis.Redis, n: int) -> list[str]:
    made = [branded.mint() for _ in range(n)]
    for job in made:
        jobs.enqueue(conn, Q, job, b"x")
    return made


def test_view_shows_a_window_and_the_true_sizes(conn: redis.Redis) -> None:
    made = _fill(conn, 25)
    for _ in range(12):
        assert jobs.claim(conn, Q, LONG) is not None
    snap = view(conn, Q, window=5)
    assert snap.sizes == {"pending": 13, "active": 12, "schedule": 0, "dead": 0}
    assert snap.members("pending") == made[12:17]  # the oldest pending first
    assert snap.members("active") == made[:5]  # the soonest deadlines first
    assert snap.windowed("pending") and snap.windowed("active")
    assert not snap.windowed("dead") and snap.showing("dead") == "all 0"
    assert snap.showing("pending") == "showing 5 of 13"
    assert snap.rows == {}  # no row is read whole unless followed
    want = {j: "pending" for j in made[12:17]} | {j: "active" for j in made[:5]}
    assert snap.states == want
    assert drifts(snap) == []


def test_view_follows_jobs_beyond_its_window(conn: redis.Redis) -> None:
    made = _fill(conn, 30)
    deep, gone = made[-1], branded.mint()
    snap = view(conn, Q, [deep, gone], window=3)
    assert deep not in snap.members("pending")
    assert snap.rows == {deep: {b"state": b"pending", b"attempts": b"0", b"payload": b"x"}}
    assert snap.holders(deep) == ["pending"] and snap.score("pending", deep) == 0
    assert gone not in snap.ids()  # followed, but neither a row nor a member: nothing to show
    assert not snap.has_row(gone) and snap.holders(gone) == []
    assert drifts(snap) == []


def test_view_states_the_drift_of_what_it_read(conn: redis.Redis) -> None:
    made = _fill(conn, 20)
    conn.hset(f"emq:{{{Q}}}:job:{made[1]}", "state", "dead")  # inside the window
    conn.hset(f"emq:{{{Q}}}:job:{made[15]}", "state", "dead")  # beyond it
    conn.zadd(f"emq:{{{Q}}}:schedule", {made[2]: 5})  # in two sets: pending and schedule
    conn.delete(f"emq:{{{Q}}}:job:{made[3]}")  # a member without a row
    found = {(d.kind, d.job_id) for d in drifts(view(conn, Q, window=5))}
    assert found == {
        ("state-mismatch", made[1]),
        ("in-two-sets", made[2]),
        ("member-without-row", made[3]),
    }
    followed = {(d.kind, d.job_id) for d in drifts(view(conn, Q, [made[15]], window=0))}
    assert followed == {("state-mismatch", made[15])}


def test_view_cost_is_bounded_whatever_the_depth(conn: redis.Redis) -> None:
    # the reply holds at most 4 * window members, however many the queue holds
    _fill(conn, 60)
    small = view(conn, Q, window=4)
    assert sum(len(p) for p in small.sets.values()) == 4 and len(small.ids()) == 4
    assert snapshot(conn, Q).sizes["pending"] == 60 == len(snapshot(conn, Q).rows)


@pytest.mark.host
@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"window": -1}, ValueError),
        ({"window": 1001}, ValueError),
        ({"window": "10"}, TypeError),
        ({"window": True}, TypeError),
        ({"follow": ["JOB0000000000!"]}, ValueError),
        ({"follow": [f"JOB{i:011d}" for i in range(65)]}, ValueError),
    ],
)
def test_view_refuses_bad_arguments_before_the_wire(
    conn: redis.Redis, kwargs: dict[str, object], error: type[Exception]
) -> None:
    before = dump(conn)
    with pytest.raises(error):
        view(conn, Q, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        view(conn, "bad name", window=1)
    assert dump(conn) == before


def test_a_snapshot_says_which_rows_it_read(conn: redis.Redis) -> None:
    first, second, stranger = _fill(conn, 2) + [branded.mint()]
    small = view(conn, Q, [second], window=1)
    assert small.members("pending") == [first] and not small.whole
    assert small.knows_row(second) and second in small.rows  # followed
    assert not small.knows_row(first)  # shown in the window, but only its state was read
    assert not small.knows_row(stranger)
    whole = snapshot(conn, Q)
    assert whole.whole and whole.knows_row(first) and whole.knows_row(second)
    assert not whole.knows_row(stranger)  # not a member and not followed: unknown
    assert view(conn, Q, [stranger]).knows_row(stranger)  # followed: known to have no row
