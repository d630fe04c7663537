"""The conformance list (docs/protocol.md), one test per behaviour, on every backend.

Each test asserts the whole server state after the step (every key, its type and content;
rows compared as dicts because HGETALL order differs between servers), the reply, and the
exception class with its wire class. Lease expiry uses leases of tens of milliseconds and
sleeps several times longer; no test asserts how long anything took.

The shared helpers (``dump``, ``server_ms``, ``deadline_window``, ``BINARY``) live in
``tests.support.state``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest
import redis

from echomq_lab import branded, errors, jobs, scripts, transitions
from echomq_lab.snapshot import Drift, check, drifts, snapshot
from tests.support.backends import backend_names
from tests.support.state import BINARY, deadline_window, dump, server_ms

Q = "conformance"
PENDING = f"emq:{{{Q}}}:pending"
ACTIVE = f"emq:{{{Q}}}:active"
SCHEDULE = f"emq:{{{Q}}}:schedule"
DEAD = f"emq:{{{Q}}}:dead"

LONG_LEASE = 60_000
SHORT_LEASE = 50
#: Comfortably longer than SHORT_LEASE, so the lease has surely expired after it.
EXPIRE_WAIT_S = 0.3



@pytest.fixture(params=[*backend_names(), "browser"], ids=[*backend_names(), "browser"])
def backend_name(request: pytest.FixtureRequest) -> str:
    """Every backend, and the browser's (Pyodide + fengari, as the static site runs it)."""
    return str(request.param)


# ----------------------------------------------------------------------- helpers ---


def row(payload: bytes, state: str, attempts: int, **extra: bytes) -> dict[bytes, bytes]:
    """A row as HGETALL gives it (as a dict)."""
    fields = {b"state": state.encode(), b"attempts": str(attempts).encode(), b"payload": payload}
    fields.update({k.encode(): v for k, v in extra.items()})
    return fields


def rkey(job_id: str) -> bytes:
    return f"emq:{{{Q}}}:job:{job_id}".encode()


def zset(*pairs: tuple[str, float]) -> tuple[str, list[tuple[bytes, float]]]:
    return ("zset", [(m.encode(), float(s)) for m, s in pairs])


def hash_(fields: dict[bytes, bytes]) -> tuple[str, dict[bytes, bytes]]:
    return ("hash", fields)


def score(conn: redis.Redis, key: str, job_id: str) -> int:
    value = conn.zscore(key, job_id)
    assert value is not None, f"{job_id} is not in {key}"
    return int(value)


def ids(n: int) -> list[str]:
    """``n`` fresh JOB ids in mint order."""
    return [branded.mint() for _ in range(n)]


def refused(
    conn: redis.Redis, exc_type: type[errors.EchoMQError], call: Callable[[], object]
) -> errors.EchoMQError:
    """Run ``call``, expect ``exc_type``, and check the server did not change."""
    before = dump(conn)
    with pytest.raises(exc_type) as info:
        call()
    assert dump(conn) == before
    assert type(info.value) is exc_type
    if issubclass(exc_type, errors.Refusal):  # the server's answer keeps its wire class
        assert str(info.value) == f"{exc_type.wire_class}: {info.value.detail}"
    else:  # the host's own condition is said in the lab's words, with no wire class
        assert str(info.value) == info.value.detail and not info.value.detail.startswith("EMQ")
    return info.value


# ------------------------------------------------------------------------ behaviours ---


def test_b01_enqueue_writes_three_fields_and_one_pending_member(conn: redis.Redis) -> None:
    (job,) = ids(1)
    assert jobs.enqueue(conn, Q, job, BINARY) == "enqueued"
    assert dump(conn) == {
        rkey(job): hash_(row(BINARY, "pending", 0)),
        PENDING.encode(): zset((job, 0)),
    }
    assert jobs.record(conn, Q, job) == row(BINARY, "pending", 0)


def test_b01_str_payload_is_stored_as_utf8(conn: redis.Redis) -> None:
    (job,) = ids(1)
    assert jobs.enqueue(conn, Q, job, "h\u00e9llo \u2603") == "enqueued"
    assert jobs.record(conn, Q, job) == row("h\u00e9llo \u2603".encode(), "pending", 0)


def test_b02_second_enqueue_is_duplicate_and_changes_nothing(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"first")
    before = dump(conn)
    assert jobs.enqueue(conn, Q, job, b"second") == "duplicate"
    assert jobs.enqueue_in(conn, Q, job, b"third", 1000) == "duplicate"
    assert jobs.enqueue_at(conn, Q, job, b"fourth", 0) == "duplicate"
    assert dump(conn) == before
    assert jobs.record(conn, Q, job) == row(b"first", "pending", 0)


def test_b02_duplicate_of_an_active_job_changes_nothing(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"first")
    jobs.claim(conn, Q, LONG_LEASE)
    before = dump(conn)
    assert jobs.enqueue(conn, Q, job, b"again") == "duplicate"
    assert dump(conn) == before


def test_b03_foreign_namespace_refused_emqkind_before_any_write(conn: redis.Redis) -> None:
    order = "ORD" + branded.mint()[3:]
    for call in (
        lambda: jobs.enqueue(conn, Q, order, b"x"),
        lambda: jobs.enqueue_in(conn, Q, order, b"x", 10),
        lambda: jobs.enqueue_at(conn, Q, order, b"x", 10),
    ):
        exc = refused(conn, errors.KindRefused, call)
        assert exc.wire_class == "EMQKIND"
        assert order in exc.detail
    assert dump(conn) == {}
    # With other jobs present the refusal still touches nothing.
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"ok")
    refused(conn, errors.KindRefused, lambda: jobs.enqueue(conn, Q, order, b"x"))
    assert conn.exists(rkey(order)) == 0


def test_b04_pending_newest_first_is_mint_order_reversed(conn: redis.Redis) -> None:
    minted = ids(6)
    shuffled = minted[:]
    random.Random(4).shuffle(shuffled)
    for job in shuffled:  # enqueue order must not matter: the id carries the mint time
        jobs.enqueue(conn, Q, job, job.encode())
    assert jobs.browse(conn, Q, 10) == minted[::-1]
    assert jobs.browse(conn, Q, 2) == minted[::-1][:2]
    raw = conn.zrange(PENDING, "+", "-", desc=True, bylex=True)
    assert [m.decode() for m in raw] == minted[::-1]
    # ...and claim pops the oldest first.
    claimed = [jobs.claim(conn, Q, LONG_LEASE) for _ in minted]
    assert [c.id for c in claimed if c is not None] == minted


def test_b05_claim_mints_token_1_and_leases_until_now_plus_lease(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, BINARY)
    lease = 45_000
    with deadline_window(conn, lease) as window:
        got = jobs.claim(conn, Q, lease)
    assert got == jobs.Claimed(job, BINARY, 1)
    assert isinstance(got.payload, bytes) and got.payload == BINARY
    deadline = score(conn, ACTIVE, job)
    assert window[0] <= deadline <= window[1]
    assert dump(conn) == {
        rkey(job): hash_(row(BINARY, "active", 1)),
        ACTIVE.encode(): zset((job, deadline)),
    }


def test_b05_claim_on_empty_queue_is_none_and_writes_nothing(conn: redis.Redis) -> None:
    assert jobs.claim(conn, Q, LONG_LEASE) is None
    assert dump(conn) == {}


def test_b06_stale_token_complete_refused_then_live_token_completes(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None and got.token == 1
    for wrong in (2, 99):
        exc = refused(conn, errors.StaleToken, lambda w=wrong: jobs.complete(conn, Q, job, w))
        assert exc.wire_class == "EMQSTALE"
        assert str(exc) == f"EMQSTALE: token {wrong} is stale, the row's attempts is 1"
    assert jobs.complete(conn, Q, job, got.token) == "completed"
    assert dump(conn) == {}


def test_b06_truly_stale_token_after_a_second_lease(conn: redis.Redis) -> None:
    """Token 1 becomes stale once a later claim mints token 2."""
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    first = jobs.claim(conn, Q, LONG_LEASE)
    assert first is not None
    assert jobs.retry(conn, Q, job, first.token, 0, 5, "e1") == "scheduled"
    assert jobs.promote(conn, Q) == 1
    second = jobs.claim(conn, Q, LONG_LEASE)
    assert second is not None and second.token == 2
    exc = refused(conn, errors.StaleToken, lambda: jobs.complete(conn, Q, job, first.token))
    assert exc.detail == "token 1 is stale, the row's attempts is 2"
    assert jobs.complete(conn, Q, job, second.token) == "completed"
    assert dump(conn) == {}


def test_b07_complete_leaves_nothing_of_the_job(conn: redis.Redis) -> None:
    keep, job = ids(2)
    jobs.enqueue(conn, Q, keep, b"stays")
    jobs.enqueue(conn, Q, job, b"goes")
    jobs.claim(conn, Q, LONG_LEASE)  # keep (the older) is claimed first
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None and got.id == job
    keep_deadline = score(conn, ACTIVE, keep)
    assert jobs.complete(conn, Q, job, got.token) == "completed"
    assert dump(conn) == {
        rkey(keep): hash_(row(b"stays", "active", 1)),
        ACTIVE.encode(): zset((keep, keep_deadline)),
    }
    assert jobs.record(conn, Q, job) is None
    # Completing again finds no row: JobGone, and still nothing changes.
    refused(conn, errors.JobGone, lambda: jobs.complete(conn, Q, job, got.token))


def test_b08_retry_below_cap_schedules_promote_returns_it_claim_mints_2(
    conn: redis.Redis,
) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, BINARY)
    first = jobs.claim(conn, Q, LONG_LEASE)
    assert first is not None and first.token == 1
    delay = 0
    with deadline_window(conn, delay) as window:
        assert jobs.retry(conn, Q, job, first.token, delay, 3, "boom \xff") == "scheduled"
    run_at = score(conn, SCHEDULE, job)
    assert window[0] <= run_at <= window[1]
    scheduled = row(BINARY, "scheduled", 1, last_error="boom \xff".encode())
    assert dump(conn) == {rkey(job): hash_(scheduled), SCHEDULE.encode(): zset((job, run_at))}

    assert jobs.promote(conn, Q) == 1
    pending = row(BINARY, "pending", 1, last_error="boom \xff".encode())
    assert dump(conn) == {rkey(job): hash_(pending), PENDING.encode(): zset((job, 0))}

    second = jobs.claim(conn, Q, LONG_LEASE)
    assert second == jobs.Claimed(job, BINARY, 2)
    assert jobs.record(conn, Q, job) == row(BINARY, "active", 2, last_error="boom \xff".encode())


def test_b08_retry_delay_sets_run_at_now_plus_delay(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None
    delay = 30_000
    with deadline_window(conn, delay) as window:
        jobs.retry(conn, Q, job, got.token, delay, 3, b"later")
    assert window[0] <= score(conn, SCHEDULE, job) <= window[1]
    assert jobs.promote(conn, Q) == 0  # not due for another 30 s
    assert conn.zcard(SCHEDULE) == 1 and conn.exists(PENDING) == 0


def test_b09_retry_at_cap_dead_letters(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    first = jobs.claim(conn, Q, LONG_LEASE)
    assert first is not None
    assert jobs.retry(conn, Q, job, first.token, 0, 2, "one") == "scheduled"
    assert jobs.promote(conn, Q) == 1
    second = jobs.claim(conn, Q, LONG_LEASE)
    assert second is not None and second.token == 2
    assert jobs.retry(conn, Q, job, second.token, 0, 2, b"two") == "dead"
    assert dump(conn) == {
        rkey(job): hash_(row(b"p", "dead", 2, last_error=b"two")),
        DEAD.encode(): zset((job, 0)),
    }


def test_b09_max_attempts_one_dead_letters_on_first_failure(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None
    assert jobs.retry(conn, Q, job, got.token, 5_000, 1, "fatal") == "dead"
    assert dump(conn) == {
        rkey(job): hash_(row(b"p", "dead", 1, last_error=b"fatal")),
        DEAD.encode(): zset((job, 0)),
    }


def test_b10_expired_lease_reaped_reclaimed_first_worker_stale(conn: redis.Redis) -> None:
    short, long_ = ids(2)
    jobs.enqueue(conn, Q, short, b"s")
    jobs.enqueue(conn, Q, long_, b"l")
    worker_a = jobs.claim(conn, Q, SHORT_LEASE)
    other = jobs.claim(conn, Q, LONG_LEASE)
    assert worker_a is not None and worker_a.id == short and worker_a.token == 1
    assert other is not None and other.id == long_
    other_deadline = score(conn, ACTIVE, long_)
    time.sleep(EXPIRE_WAIT_S)

    assert jobs.reap(conn, Q) == 1  # only the expired lease
    assert dump(conn) == {
        rkey(short): hash_(row(b"s", "pending", 1)),  # attempts untouched by reap
        rkey(long_): hash_(row(b"l", "active", 1)),
        PENDING.encode(): zset((short, 0)),
        ACTIVE.encode(): zset((long_, other_deadline)),
    }
    assert jobs.reap(conn, Q) == 0

    worker_b = jobs.claim(conn, Q, LONG_LEASE)
    assert worker_b == jobs.Claimed(short, b"s", 2)
    exc = refused(conn, errors.StaleToken, lambda: jobs.complete(conn, Q, short, worker_a.token))
    assert exc.wire_class == "EMQSTALE"
    assert jobs.complete(conn, Q, short, worker_b.token) == "completed"
    assert dump(conn) == {
        rkey(long_): hash_(row(b"l", "active", 1)),
        ACTIVE.encode(): zset((long_, other_deadline)),
    }


def test_b10_reaped_lease_cannot_be_completed_before_reclaim(conn: redis.Redis) -> None:
    """The token still matches attempts, but the id holds no lease: EMQSTALE, no change."""
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    got = jobs.claim(conn, Q, SHORT_LEASE)
    assert got is not None
    time.sleep(EXPIRE_WAIT_S)
    assert jobs.reap(conn, Q) == 1
    exc = refused(conn, errors.StaleToken, lambda: jobs.complete(conn, Q, job, got.token))
    assert "holds no lease" in exc.detail
    refused(conn, errors.StaleToken, lambda: jobs.retry(conn, Q, job, got.token, 0, 5, "x"))
    assert dump(conn) == {
        rkey(job): hash_(row(b"p", "pending", 1)),
        PENDING.encode(): zset((job, 0)),
    }


def test_b10_reap_returns_at_most_100_a_call(conn: redis.Redis) -> None:
    minted = ids(103)
    for job in minted:
        jobs.enqueue(conn, Q, job, b"x")
    for _ in minted:
        assert jobs.claim(conn, Q, SHORT_LEASE) is not None
    time.sleep(EXPIRE_WAIT_S)
    assert jobs.reap(conn, Q) == 100
    assert conn.zcard(PENDING) == 100 and conn.zcard(ACTIVE) == 3
    assert jobs.reap(conn, Q) == 3
    assert jobs.reap(conn, Q) == 0
    assert jobs.browse(conn, Q, 200) == minted[::-1]
    assert all(jobs.record(conn, Q, j) == row(b"x", "pending", 1) for j in minted)


def test_b11_future_job_invisible_to_claim_until_promote_finds_it_due(
    conn: redis.Redis,
) -> None:
    near, far = ids(2)
    with deadline_window(conn, SHORT_LEASE) as near_window:
        assert jobs.enqueue_in(conn, Q, near, b"n", SHORT_LEASE) == "scheduled"
    with deadline_window(conn, LONG_LEASE) as far_window:
        assert jobs.enqueue_in(conn, Q, far, b"f", LONG_LEASE) == "scheduled"
    near_at, far_at = score(conn, SCHEDULE, near), score(conn, SCHEDULE, far)
    assert near_window[0] <= near_at <= near_window[1]
    assert far_window[0] <= far_at <= far_window[1]
    state = {
        rkey(near): hash_(row(b"n", "scheduled", 0)),
        rkey(far): hash_(row(b"f", "scheduled", 0)),
        SCHEDULE.encode(): zset((near, near_at), (far, far_at)),
    }
    assert dump(conn) == state

    assert jobs.claim(conn, Q, LONG_LEASE) is None
    time.sleep(EXPIRE_WAIT_S)  # near is now due, but only promote moves it
    assert jobs.claim(conn, Q, LONG_LEASE) is None
    assert dump(conn) == state

    assert jobs.promote(conn, Q) == 1
    assert dump(conn) == {
        rkey(near): hash_(row(b"n", "pending", 0)),
        rkey(far): hash_(row(b"f", "scheduled", 0)),
        SCHEDULE.encode(): zset((far, far_at)),
        PENDING.encode(): zset((near, 0)),
    }
    assert jobs.claim(conn, Q, LONG_LEASE) == jobs.Claimed(near, b"n", 1)
    assert jobs.claim(conn, Q, LONG_LEASE) is None


def test_b11_enqueue_at_scores_exactly_run_at(conn: redis.Redis) -> None:
    past, future = ids(2)
    now = server_ms(conn)
    assert jobs.enqueue_at(conn, Q, past, b"p", now - 1_000) == "scheduled"
    assert jobs.enqueue_at(conn, Q, future, b"f", now + 3_600_000) == "scheduled"
    assert score(conn, SCHEDULE, past) == now - 1_000
    assert score(conn, SCHEDULE, future) == now + 3_600_000
    assert jobs.claim(conn, Q, LONG_LEASE) is None
    assert jobs.promote(conn, Q, batch=10) == 1
    assert jobs.claim(conn, Q, LONG_LEASE) == jobs.Claimed(past, b"p", 1)


def test_b11_promote_respects_batch(conn: redis.Redis) -> None:
    minted = ids(5)
    for job in minted:
        jobs.enqueue_at(conn, Q, job, b"x", 1_000)
    assert jobs.promote(conn, Q, batch=2) == 2
    assert jobs.promote(conn, Q, batch=2) == 2
    assert jobs.promote(conn, Q, batch=2) == 1
    assert jobs.promote(conn, Q, batch=2) == 0
    assert jobs.browse(conn, Q, 10) == minted[::-1]
    assert check(conn, Q) == []


def _dead_job(conn: redis.Redis, payload: bytes = b"d") -> str:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, payload)
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None and got.id == job
    assert jobs.retry(conn, Q, job, got.token, 0, 1, "fatal") == "dead"
    return job


def test_b12_reprocess_moves_dead_to_pending(conn: redis.Redis) -> None:
    job = _dead_job(conn)
    assert jobs.reprocess(conn, Q, job) == "pending"
    assert dump(conn) == {
        rkey(job): hash_(row(b"d", "pending", 1)),  # last_error dropped, attempts kept
        PENDING.encode(): zset((job, 0)),
    }
    assert jobs.claim(conn, Q, LONG_LEASE) == jobs.Claimed(job, b"d", 2)


def test_b12_reprocess_of_a_job_that_is_not_dead_is_refused_emqstate(
    conn: redis.Redis,
) -> None:
    pending, active, scheduled = ids(3)
    jobs.enqueue(conn, Q, active, b"a")
    assert jobs.claim(conn, Q, LONG_LEASE) is not None
    jobs.enqueue(conn, Q, pending, b"p")
    jobs.enqueue_in(conn, Q, scheduled, b"s", LONG_LEASE)
    for job, state in ((pending, "pending"), (active, "active"), (scheduled, "scheduled")):
        exc = refused(conn, errors.WrongState, lambda j=job: jobs.reprocess(conn, Q, j))
        assert exc.wire_class == "EMQSTATE"
        assert exc.detail == f"the job is {state}, not dead"


def test_b13_extend_pushes_deadline_so_reap_leaves_it(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    got = jobs.claim(conn, Q, SHORT_LEASE)
    assert got is not None
    with deadline_window(conn, LONG_LEASE) as window:
        deadline = jobs.extend(conn, Q, job, got.token, LONG_LEASE)
    assert window[0] <= deadline <= window[1]
    assert score(conn, ACTIVE, job) == deadline
    time.sleep(EXPIRE_WAIT_S)  # the original short lease would have expired by now
    assert jobs.reap(conn, Q) == 0
    assert dump(conn) == {
        rkey(job): hash_(row(b"p", "active", 1)),
        ACTIVE.encode(): zset((job, deadline)),
    }
    exc = refused(conn, errors.StaleToken, lambda: jobs.extend(conn, Q, job, 2, LONG_LEASE))
    assert exc.detail == "token 2 is stale, the row's attempts is 1"
    assert jobs.complete(conn, Q, job, got.token) == "completed"


def test_b13_extend_never_readds_a_reaped_id_to_active(conn: redis.Redis) -> None:
    (job,) = ids(1)
    jobs.enqueue(conn, Q, job, b"p")
    got = jobs.claim(conn, Q, SHORT_LEASE)
    assert got is not None
    time.sleep(EXPIRE_WAIT_S)
    assert jobs.reap(conn, Q) == 1
    exc = refused(conn, errors.StaleToken, lambda: jobs.extend(conn, Q, job, got.token, LONG_LEASE))
    assert "holds no lease" in exc.detail
    assert dump(conn) == {
        rkey(job): hash_(row(b"p", "pending", 1)),
        PENDING.encode(): zset((job, 0)),
    }


#: The handles the random walk below calls by name; every other written transition of the
#: registry joins the walk through its entry's call (:func:`_by_entry`).
WALK_HANDLES = {"enqueue", "enqueue_in", "claim", "complete", "retry", "promote", "reap",
                "reprocess", "extend"}


def _by_entry(conn: redis.Redis, rng: random.Random, live: dict[str, int],
              t: transitions.Transition) -> None:
    """``t`` called as its entry says, on a job drawn from the queue's sets (a new id when
    they are empty), with the job's live token if it holds one; refusals are fine."""
    members = sorted(m.decode() for key in (PENDING, ACTIVE, SCHEDULE, DEAD)
                     for m in conn.zrange(key, 0, -1))
    job = rng.choice(members) if members else branded.mint()
    values = {"job": job, "payload": b"p", "token": live.get(job, 1), "lease": LONG_LEASE,
              "delay": 0, "max_attempts": 2, "error": "err"}
    try:
        getattr(jobs, t.call.handle)(conn, Q, *t.arguments(values))
    except errors.EchoMQError:
        pass
    if conn.zscore(ACTIVE, job) is None:
        live.pop(job, None)


def test_the_random_walk_names_only_the_registrys_handles() -> None:
    assert WALK_HANDLES <= set(transitions.HANDLES)


def _random_step(conn: redis.Redis, rng: random.Random, live: dict[str, int]) -> None:
    """One random transition; refusals are fine, drift is not."""
    others = {t.name: t for t in scripts.written() if not set(t.handles) & WALK_HANDLES}
    verb = rng.choice(
        ["enqueue", "enqueue_in", "claim", "claim_short", "complete", "retry", "promote",
         "reap", "reprocess", "extend", "stale", *sorted(others)]
    )  # fmt: skip
    if verb in others:
        _by_entry(conn, rng, live, others[verb])
        return
    try:
        if verb == "enqueue":
            jobs.enqueue(conn, Q, branded.mint(), rng.randbytes(rng.randrange(0, 80)))
        elif verb == "enqueue_in":
            jobs.enqueue_in(conn, Q, branded.mint(), b"later", rng.choice([0, 20, 60_000]))
        elif verb in ("claim", "claim_short"):
            got = jobs.claim(conn, Q, 20 if verb == "claim_short" else LONG_LEASE)
            if got is not None:
                live[got.id] = got.token
        elif verb in ("complete", "retry", "extend", "stale") and live:
            job = rng.choice(sorted(live))
            token = live[job] if verb != "stale" else live[job] + 1
            if verb == "complete" or verb == "stale":
                jobs.complete(conn, Q, job, token)
                live.pop(job)
            elif verb == "retry":
                jobs.retry(conn, Q, job, token, rng.choice([0, 60_000]), 2, "err")
                live.pop(job)
            else:
                jobs.extend(conn, Q, job, token, LONG_LEASE)
        elif verb == "promote":
            jobs.promote(conn, Q)
        elif verb == "reap":
            time.sleep(0.03)
            jobs.reap(conn, Q)
        elif verb == "reprocess":
            dead = conn.zrange(DEAD, 0, 0)
            if dead:
                jobs.reprocess(conn, Q, dead[0].decode())
    except (errors.StaleToken, errors.JobGone):
        if verb in ("complete", "retry", "extend", "stale"):
            live.pop(job, None)


def test_b14_state_matches_set_after_any_sequence(conn: redis.Redis) -> None:
    rng = random.Random(14)
    live: dict[str, int] = {}
    for _ in range(4):
        jobs.enqueue(conn, Q, branded.mint(), b"seed")
    every_state = {b"pending", b"active", b"scheduled", b"dead"}
    seen: set[bytes] = set()
    step = 0
    # At least 150 steps, and on until every state has shown up (reap outcomes depend on
    # timing, so the path varies a little between machines); the cap is far out of reach.
    while step < 150 or (seen != every_state and step < 2_000):
        _random_step(conn, rng, live)
        snap = snapshot(conn, Q)
        assert drifts(snap) == [], f"drift after step {step}"
        seen.update(r[b"state"] for r in snap.rows.values())
        step += 1
    # The sequence really visited every state, so the check above was not vacuous.
    assert seen == every_state
    assert check(conn, Q) == []


def test_b14_check_reports_every_kind_of_hand_made_drift(conn: redis.Redis) -> None:
    mismatch, orphan_member, orphan_row, twice, fine = ids(5)
    for job in (mismatch, twice, fine):
        jobs.enqueue(conn, Q, job, b"p")
    assert check(conn, Q) == []

    conn.hset(rkey(mismatch), "state", "dead")  # behind the protocol's back
    conn.zadd(ACTIVE, {orphan_member: 123})  # a member with no row
    conn.hset(rkey(orphan_row), mapping={"state": "active", "attempts": "1", "payload": "x"})
    conn.zadd(SCHEDULE, {twice: 456})  # now in pending and schedule

    found = check(conn, Q)
    assert all(isinstance(d, Drift) for d in found)
    assert {(d.kind, d.job_id) for d in found} == {
        ("state-mismatch", mismatch),
        ("member-without-row", orphan_member),
        ("row-in-no-set", orphan_row),
        ("in-two-sets", twice),
    }
    assert len(found) == 4
    by_kind = {d.kind: str(d) for d in found}
    want = f"state-mismatch: {mismatch} has state 'dead' but is in pending"
    assert by_kind["state-mismatch"] == want
    assert "active" in by_kind["member-without-row"]
    assert "no set" in by_kind["row-in-no-set"]
    assert "pending and schedule" in by_kind["in-two-sets"]

    # Repair by hand: the check is clean again.
    conn.hset(rkey(mismatch), "state", "pending")
    conn.zrem(ACTIVE, orphan_member)
    conn.delete(rkey(orphan_row))
    conn.zrem(SCHEDULE, twice)
    assert check(conn, Q) == []
