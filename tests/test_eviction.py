"""Where the fence lives, and what can take it away: a lost row, then a re-sent id.

The token is the row's ``attempts``. When the row is lost while its lease still stands (an
eviction; deleting the row stands in for it here), a re-sent enqueue of the same id must not
write a fresh row, or the next claim mints a token a live worker already holds. On every
backend: the guarded enqueue refuses, and the unguarded demonstration shows the hole.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import redis

from echomq_lab import branded, connect, errors, jobs, keyspace
from echomq_lab.connection import eviction_policy
from echomq_lab.lessons.unfenced import complete_unfenced, enqueue_unguarded

Q = "evicted"
LONG = 60_000


def _lose_the_row(conn: redis.Redis, job_id: str) -> None:
    conn.delete(keyspace.job_key(Q, job_id))  # what an allkeys-* eviction does to one row


def _claimed_by_a(conn: redis.Redis) -> jobs.Claimed:
    job = branded.mint()
    assert jobs.enqueue(conn, Q, job, b"report") == "enqueued"
    a = jobs.claim(conn, Q, LONG)
    assert a is not None and a.id == job and a.token == 1
    return a


def test_a_resent_id_whose_row_was_lost_under_a_live_lease_is_refused(conn: redis.Redis) -> None:
    a = _claimed_by_a(conn)
    _lose_the_row(conn, a.id)
    with pytest.raises(errors.BadRow, match=r"has no row but is still in active"):
        jobs.enqueue(conn, Q, a.id, b"report")  # the producer, unsure, sends it again
    assert jobs.record(conn, Q, a.id) is None  # step 3 changed nothing
    assert conn.zscore(keyspace.queue_key(Q, "pending"), a.id) is None
    assert jobs.claim(conn, Q, LONG) is None  # so B has nothing to claim: no second token 1
    with pytest.raises(errors.JobGone):
        jobs.complete(conn, Q, a.id, a.token)  # and A's late complete is not accepted


@pytest.mark.parametrize("where", ["pending", "schedule", "dead"])
def test_an_id_standing_in_any_set_without_its_row_is_refused(
    conn: redis.Redis, where: keyspace.SetName
) -> None:
    job = branded.mint()
    conn.zadd(keyspace.queue_key(Q, where), {job: 0})
    for send in (
        lambda: jobs.enqueue(conn, Q, job, b"x"),
        lambda: jobs.enqueue_in(conn, Q, job, b"x", 1000),
    ):
        with pytest.raises(errors.BadRow, match=f"still in {where}"):
            send()
        assert jobs.record(conn, Q, job) is None


def test_the_replies_for_a_job_whose_row_exists_are_unchanged(conn: redis.Redis) -> None:
    a = _claimed_by_a(conn)
    assert jobs.enqueue(conn, Q, a.id, b"other") == "duplicate"
    assert jobs.enqueue_at(conn, Q, a.id, b"other", 0) == "duplicate"
    assert jobs.record(conn, Q, a.id) == {b"state": b"active", b"attempts": b"1",
                                         b"payload": b"report"}


def test_without_the_guard_a_token_is_minted_twice(conn: redis.Redis) -> None:
    a = _claimed_by_a(conn)
    _lose_the_row(conn, a.id)
    assert enqueue_unguarded(conn, Q, a.id, b"report") == "enqueued"  # a fresh row, attempts 0
    b = jobs.claim(conn, Q, LONG)
    assert b is not None and b.id == a.id and b.token == a.token == 1  # token 1, twice
    assert jobs.complete(conn, Q, a.id, a.token) == "completed"  # A's late word is taken
    with pytest.raises(errors.JobGone):
        jobs.complete(conn, Q, b.id, b.token)  # and B's work is lost


def test_what_the_guard_cannot_catch_a_lease_already_dropped_as_an_orphan(
    conn: redis.Redis,
) -> None:
    a = jobs.Claimed(branded.mint(), b"", 1)
    conn.zadd(keyspace.queue_key(Q, "active"), {a.id: 0})  # an expired lease whose row is gone
    assert jobs.reap_dropping(conn, Q)[1].orphans == (a.id.encode(),)  # the reaper drops it
    assert jobs.enqueue(conn, Q, a.id, b"report") == "enqueued"  # no trace left to refuse on
    b = jobs.claim(conn, Q, LONG)
    assert b is not None and b.token == 1  # only noeviction keeps this from happening


def test_the_embedded_server_reports_noeviction_and_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", errors.EvictionRisk)
        conn = connect(fresh=True)
    assert eviction_policy(conn) == "noeviction"


@pytest.mark.parametrize("policy,warns", [("allkeys-lru", True), ("noeviction", False)])
def test_connect_warns_once_when_the_server_can_evict(
    own_server_of: Callable[..., Any], policy: str, warns: bool
) -> None:
    with own_server_of("valkey", ("--maxmemory-policy", policy)) as server:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            conn = connect(server.url)
        risks = [w for w in seen if issubclass(w.category, errors.EvictionRisk)]
        assert len(risks) == (1 if warns else 0)
        if warns:
            assert policy in str(risks[0].message) and "noeviction" in str(risks[0].message)
        conn.close()


def test_the_demonstrations_refuse_bad_arguments_before_the_wire(conn: redis.Redis) -> None:
    a = _claimed_by_a(conn)
    with pytest.raises(TypeError, match="token must be an int"):
        complete_unfenced(conn, Q, a.id, "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bad id"):
        enqueue_unguarded(conn, Q, "JOB-not-an-id!", b"x")
    assert jobs.record(conn, Q, a.id) == {b"state": b"active", b"attempts": b"1",
                                         b"payload": b"report"}
