"""Hostile data on a shared server, written the way a careless second client writes it.

Every test here plays two clients on one server: the lab's handles on one side, raw redis-py
commands (``DEL``, ``HSET``, ``ZADD``, ``SET``) on the other, standing in for another notebook,
a script someone typed, or eviction under ``maxmemory``. Each runs on fakeredis, Valkey and
Redis (the ``conn`` fixture). What must hold:

- no transition writes into a row that is not there: an id whose row is gone is an orphan,
  dropped from the set it was read from, and nothing mints a token for it again;
- a member that is not a well-formed JOB id is never given a row;
- a row whose ``attempts`` is not a whole number is refused (``EMQROW``) before any write.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import time

import pytest
import redis

import echomq_lab
from echomq_lab import branded, errors, jobs, keyspace, sim, snapshot
from echomq_lab.measure import counting
from echomq_lab.scripts import include_text, load
from echomq_lab.servers import RunningServer
from tests.support.state import dump

Q = "hostile"
PENDING = keyspace.queue_key(Q, "pending")
ACTIVE = keyspace.queue_key(Q, "active")
SCHEDULE = keyspace.queue_key(Q, "schedule")
DEAD = keyspace.queue_key(Q, "dead")
LONG_LEASE = 60_000
SHORT_LEASE = 50
#: Comfortably longer than SHORT_LEASE, so the lease has surely expired after it.
EXPIRE_WAIT_S = 0.3


def rkey(job_id: str | bytes) -> bytes:
    """The row key of ``job_id``, as bytes (the id may be any member another client wrote)."""
    raw = job_id.encode() if isinstance(job_id, str) else job_id
    return keyspace.job_prefix(Q).encode() + raw


def members(conn: redis.Redis, key: str) -> list[bytes]:
    return list(conn.zrange(key, 0, -1))


def nothing_of(conn: redis.Redis, job_id: str | bytes) -> None:
    """Assert the job has no row and sits in no set."""
    raw = job_id.encode() if isinstance(job_id, str) else job_id
    assert conn.exists(rkey(raw)) == 0, f"a row was written for {raw!r}"
    for key in (PENDING, ACTIVE, SCHEDULE, DEAD):
        assert conn.zscore(key, raw) is None, f"{raw!r} is still in {key}"


# -- 1. the fence holds when a row vanishes under a lease ---------------------------------------


def test_reap_drops_an_orphan_lease_and_no_second_token_is_minted(conn: redis.Redis) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"cargo")
    first = jobs.claim(conn, Q, SHORT_LEASE)
    assert first is not None and first.token == 1
    conn.delete(rkey(job))  # another client's DEL, or eviction, under a live lease
    time.sleep(EXPIRE_WAIT_S)

    assert jobs.reap_dropping(conn, Q) == (0, jobs.Dropped(orphans=(job.encode(),)))
    nothing_of(conn, job)  # no partial {state} row, and the id is gone from active
    assert dump(conn) == {}
    assert jobs.claim(conn, Q, LONG_LEASE) is None  # nothing to mint token 1 for again
    # The first worker's complete with its token 1 is not accepted: there is no job left.
    with pytest.raises(errors.JobGone):
        jobs.complete(conn, Q, job, first.token)
    assert dump(conn) == {}


def test_reap_keeps_its_count_for_live_jobs_beside_an_orphan(conn: redis.Redis) -> None:
    lost, kept = branded.mint(), branded.mint()
    jobs.enqueue(conn, Q, lost, b"lost")
    jobs.enqueue(conn, Q, kept, b"kept")
    assert jobs.claim(conn, Q, SHORT_LEASE) is not None
    held = jobs.claim(conn, Q, SHORT_LEASE)
    assert held is not None and held.id == kept
    conn.delete(rkey(lost))
    time.sleep(EXPIRE_WAIT_S)

    assert jobs.reap(conn, Q) == 1  # the plain handle keeps its int reply
    nothing_of(conn, lost)
    assert members(conn, PENDING) == [kept.encode()]
    again = jobs.claim(conn, Q, LONG_LEASE)
    assert again is not None and (again.id, again.payload, again.token) == (kept, b"kept", 2)
    # the worker that held the lease before the reap is now stale, and is refused
    before = dump(conn)
    with pytest.raises(errors.StaleToken):
        jobs.complete(conn, Q, kept, held.token)
    assert dump(conn) == before


def test_the_stale_complete_is_refused_before_the_reap_too(conn: redis.Redis) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"x")
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None
    conn.delete(rkey(job))
    before = dump(conn)
    with pytest.raises(errors.JobGone):
        jobs.complete(conn, Q, job, got.token)
    with pytest.raises(errors.JobGone):
        jobs.extend(conn, Q, job, got.token, LONG_LEASE)
    with pytest.raises(errors.StaleToken):
        jobs.retry(conn, Q, job, got.token, 0, 5, "boom")
    assert dump(conn) == before  # nothing wrote a row back


def test_promote_drops_an_orphan_schedule_member(conn: redis.Redis) -> None:
    lost, kept = branded.mint(), branded.mint()
    jobs.enqueue_in(conn, Q, lost, b"lost", 0)
    jobs.enqueue_in(conn, Q, kept, b"kept", 0)
    conn.delete(rkey(lost))

    moved, dropped = jobs.promote_dropping(conn, Q)
    assert (moved, dropped) == (1, jobs.Dropped(orphans=(lost.encode(),)))
    nothing_of(conn, lost)
    assert members(conn, PENDING) == [kept.encode()]
    assert conn.hgetall(rkey(kept)) == {
        b"state": b"pending", b"attempts": b"0", b"payload": b"kept"
    }


def test_claim_moves_past_orphans_to_the_next_job(conn: redis.Redis) -> None:
    a, b, c = branded.mint(), branded.mint(), branded.mint()
    for job in (a, b, c):
        jobs.enqueue(conn, Q, job, job.encode())
    conn.delete(rkey(a), rkey(b))

    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got == jobs.Claimed(c, c.encode(), 1)
    assert dropped == jobs.Dropped(orphans=(a.encode(), b.encode()))
    nothing_of(conn, a)
    nothing_of(conn, b)
    assert members(conn, ACTIVE) == [c.encode()]
    assert members(conn, PENDING) == []


def test_claim_of_only_orphans_is_none_and_reports_them(conn: redis.Redis) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"x")
    conn.delete(rkey(job))
    assert jobs.claim_dropping(conn, Q, LONG_LEASE) == (None, jobs.Dropped(orphans=(job.encode(),)))
    assert dump(conn) == {}
    assert jobs.claim_dropping(conn, Q, LONG_LEASE) == (None, jobs.NOTHING_DROPPED)


def test_a_row_key_of_another_type_is_an_orphan_and_left_alone(conn: redis.Redis) -> None:
    job, live = branded.mint(), branded.mint()
    jobs.enqueue(conn, Q, job, b"x")
    jobs.enqueue(conn, Q, live, b"y")
    conn.delete(rkey(job))
    conn.set(rkey(job), b"someone else's string")

    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got is not None and got.id == live
    assert dropped.orphans == (job.encode(),)
    assert conn.get(rkey(job)) == b"someone else's string"  # not ours to delete or write
    # the same key under an expired lease: reap drops the member and writes nothing
    conn.zadd(ACTIVE, {job: 0})
    assert jobs.reap_dropping(conn, Q) == (0, jobs.Dropped(orphans=(job.encode(),)))
    assert conn.type(rkey(job)) == b"string"


def test_claim_reaches_a_job_behind_more_orphans_than_one_script_run_reads(
    conn: redis.Redis,
) -> None:
    orphans = [branded.mint() for _ in range(250)]
    conn.zadd(PENDING, dict.fromkeys(orphans, 0))  # members written with no rows behind them
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"behind")
    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got == jobs.Claimed(job, b"behind", 1)
    assert dropped.orphans == tuple(o.encode() for o in orphans)
    assert members(conn, PENDING) == []


def test_claim_gives_up_after_its_bounded_runs_and_the_next_call_carries_on(
    conn: redis.Redis,
) -> None:
    per_call = jobs.CLAIM_RUNS * 100
    orphans = [branded.mint() for _ in range(per_call + 5)]
    conn.zadd(PENDING, dict.fromkeys(orphans, 0))
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"behind")
    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got is None and dropped.total == per_call
    assert conn.zcard(PENDING) == 6
    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got == jobs.Claimed(job, b"behind", 1) and dropped.total == 5


# -- 4. a member that is not an id is never given a row -----------------------------------------

MALFORMED: tuple[bytes, ...] = (
    b"AAA",
    b"<img src=x onerror=alert(1)>",
    "JOB\u00e9\u00e9\u00e9\u00e9\u00e9".encode(),  # non-ASCII, 13 bytes
    b"JOB\xff\xfe0000000000"[:14],
    b"ORD" + branded.mint()[3:].encode(),  # well-formed, but not a JOB id
    b"JOBzzzzzzzzzzz",  # 14 characters of base62 above 2^63-1
    b"JOB" + b"0" * 10 + b"-",
    b"job" + branded.mint()[3:].encode(),
    b"",
)


@pytest.mark.parametrize("member", MALFORMED, ids=range(len(MALFORMED)))
def test_claim_never_gives_a_malformed_member_a_row(conn: redis.Redis, member: bytes) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"real")
    conn.zadd(PENDING, {member: 0})
    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got is not None and got.id == job  # the followed job is the real one
    after, more = jobs.claim_dropping(conn, Q, LONG_LEASE)  # a member sorting after the job
    assert after is None
    assert dropped.plus(more) == jobs.Dropped(malformed=(member,))
    nothing_of(conn, member)
    assert members(conn, PENDING) == []


def test_the_largest_id_is_well_formed_and_one_above_is_not(conn: redis.Redis) -> None:
    top = branded.encode("JOB", 2**63 - 1)
    assert top == "JOBAzL8n0Y58m7"
    over = b"JOBAzL8n0Y58m8"
    assert not branded.valid(over.decode())
    conn.hset(rkey(top), mapping={"state": "pending", "attempts": "0", "payload": "p"})
    conn.hset(rkey(over), mapping={"state": "pending", "attempts": "0", "payload": "p"})
    conn.zadd(PENDING, {top: 0, over: 0})
    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got == jobs.Claimed(top, b"p", 1) and dropped == jobs.NOTHING_DROPPED
    assert jobs.claim_dropping(conn, Q, LONG_LEASE) == (None, jobs.Dropped(malformed=(over,)))
    # a row another client wrote for the malformed member is not claim's to touch
    assert conn.hgetall(rkey(over)) == {b"state": b"pending", b"attempts": b"0", b"payload": b"p"}


def test_reap_and_promote_drop_malformed_members(conn: redis.Redis) -> None:
    conn.zadd(ACTIVE, {b"AAA": 0, b"\xff\xfe": 0})
    conn.zadd(SCHEDULE, {b"AAA": 0})
    reaped, dropped = jobs.reap_dropping(conn, Q)
    assert reaped == 0 and set(dropped.malformed) == {b"AAA", b"\xff\xfe"}
    assert jobs.promote_dropping(conn, Q) == (0, jobs.Dropped(malformed=(b"AAA",)))
    assert dump(conn) == {}


def test_the_lua_id_check_agrees_with_the_host(conn: redis.Redis) -> None:
    """Every member the host calls a well-formed JOB id is claimed; every other is dropped."""
    samples = [branded.mint(), branded.encode("JOB", 0), "JOBAzL8n0Y58m7", "JOBAzL8n0Y58m8",
               "JOBzzzzzzzzzzz", "JOB0000000000", "JOB000000000000", "USR0KHTOWnGLuC",
               "JOB0KHTOWnGLu!", "JOB0KHTOWnGLu ", "JOB0KHTOWnGLu\u00e9"]  # fmt: skip
    for sample in samples:
        raw = sample.encode()
        conn.hset(rkey(raw), mapping={"state": "pending", "attempts": "0", "payload": "p"})
        conn.zadd(PENDING, {raw: 0})
        got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
        host_says = branded.valid(sample) and sample.startswith("JOB")
        assert (got is not None) == host_says, sample
        assert dropped.malformed == (() if host_says else (raw,)), sample
        conn.flushall()


# -- 5. a row whose attempts is not a whole number loses nothing --------------------------------

BAD_ATTEMPTS = (b"one", b"-1", b"007", b"1.5", b" 1", b"1e3", b"", b"9" * 19, b"\xff")


@pytest.mark.parametrize("value", BAD_ATTEMPTS, ids=[repr(v) for v in BAD_ATTEMPTS])
def test_claim_refuses_a_row_with_a_bad_attempts_before_any_write(
    conn: redis.Redis, value: bytes
) -> None:
    orphan, job = branded.mint(), branded.mint()
    jobs.enqueue(conn, Q, orphan, b"o")
    jobs.enqueue(conn, Q, job, b"j")
    conn.delete(rkey(orphan))
    conn.hset(rkey(job), "attempts", value)
    before = dump(conn)
    with pytest.raises(errors.BadRow) as info:
        jobs.claim(conn, Q, LONG_LEASE)
    assert dump(conn) == before  # the job is still pending; even the orphan was not dropped
    assert str(info.value) == f"EMQROW: job {job} has no whole-number attempts; nothing was claimed"
    assert info.value.wire_class == "EMQROW" and isinstance(info.value, errors.Refusal)
    # once someone mends the row, the next claim takes it and mints the next token
    conn.hset(rkey(job), "attempts", "4")
    got, dropped = jobs.claim_dropping(conn, Q, LONG_LEASE)
    assert got == jobs.Claimed(job, b"j", 5) and dropped.orphans == (orphan.encode(),)


@pytest.mark.parametrize("missing", [b"attempts", b"payload"])
def test_claim_refuses_a_row_without_attempts_or_payload(conn: redis.Redis, missing: bytes) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"j")
    conn.hdel(rkey(job), missing)
    before = dump(conn)
    with pytest.raises(errors.BadRow, match=missing.decode()):
        jobs.claim(conn, Q, LONG_LEASE)
    assert dump(conn) == before


def test_fenced_transitions_refuse_a_bad_attempts_with_emqrow(conn: redis.Redis) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"j")
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None
    conn.hset(rkey(job), "attempts", "one")
    before = dump(conn)
    calls = {
        "complete": lambda: jobs.complete(conn, Q, job, got.token),
        "retry": lambda: jobs.retry(conn, Q, job, got.token, 0, 3, "e"),
        "extend": lambda: jobs.extend(conn, Q, job, got.token, LONG_LEASE),
    }
    for name, call in calls.items():
        with pytest.raises(errors.BadRow, match=f"job {job} has no whole-number attempts"):
            call()
        assert dump(conn) == before, name
    # a whole number that is not the token is still plain EMQSTALE
    conn.hset(rkey(job), "attempts", "2")
    with pytest.raises(errors.StaleToken):
        jobs.complete(conn, Q, job, got.token)


# -- the scripts say what they check --------------------------------------------------------------


@pytest.mark.parametrize("name", ["claim", "reap", "promote"])
def test_sweeping_scripts_state_the_orphan_check_in_their_header(name: str) -> None:
    header = load(name).header
    for word in ("orphan", "malformed", "well-formed JOB id", "{orphans}"):
        assert word in header, (name, word)


@pytest.mark.parametrize("name", ["claim", "complete", "retry", "extend"])
def test_attempts_checking_scripts_name_emqrow_in_their_header(name: str) -> None:
    assert "EMQROW" in load(name).header


def _function(name: str, script: str) -> str:
    source = load(script).source
    found = re.search(rf"^local function {name}\(.*?^end$", source, re.S | re.M)
    assert found, (script, name)
    return found.group(0)


def test_the_shared_lua_checks_are_one_text() -> None:
    """well_formed comes from its one include file; whole is kept as identical copies."""
    defined = _function("well_formed", "claim")
    assert defined in include_text("well_formed")
    assert {_function("well_formed", s) for s in ("claim", "reap", "promote")} == {defined}
    assert len({_function("whole", s) for s in ("claim", "complete", "retry", "extend")}) == 1


# -- the eviction fault in the simulation -------------------------------------------------------

EVICTING = dict(jobs=200, workers=4, stall=0.2, fail=0.1, lease_ms=(20, 60), seed=3,
                timeout_s=120, evictions=25)  # fmt: skip


def _url(backend_name: str, request: pytest.FixtureRequest) -> str | None:
    """The server a simulation on ``backend_name`` talks to (None: the embedded one)."""
    if backend_name == "fakeredis":
        return None
    return str(request.getfixturevalue(f"{backend_name}_url"))


def test_rows_deleted_under_live_leases_mint_no_token_twice(
    backend_name: str, request: pytest.FixtureRequest
) -> None:
    result = sim.simulate(url=_url(backend_name, request), **EVICTING)  # type: ignore[arg-type]
    assert result.evicted == 25  # the fault really struck, 25 times, each under a live lease
    assert result.orphans_dropped >= 25  # every evicted id was dropped, none given a row back
    assert result.tokens_minted_twice == 0
    assert result.stale_completes_accepted == 0
    assert result.violations == [], "\n".join(result.violations[:20])
    assert result.completed + result.dead + result.evicted == 200
    assert result.lost_jobs == 0 and result.unfinished_jobs == 0
    evicted = {c.job_id for c in result.ledger if c.verb == "evict"}
    gone = [c for c in result.ledger if c.job_id in evicted and c.outcome == "gone"]
    assert gone, "some worker met its deleted row at complete, and was turned away"


@pytest.fixture(scope="module")
def evicting_run() -> sim.Result:
    result = sim.simulate(**EVICTING)  # type: ignore[arg-type]
    assert result.violations == [] and result.evicted == 25
    return result


def test_the_audit_catches_a_claim_after_an_eviction(evicting_run: sim.Result) -> None:
    calls = list(evicting_run.ledger)
    evict = next(c for c in calls if c.verb == "evict")
    claim = next(c for c in calls if c.verb == "claim" and c.job_id == evict.job_id)
    again = dataclasses.replace(claim, seq=len(calls), started=evict.ended + 0.5,
                                ended=evict.ended + 0.5, actor="w9")  # fmt: skip
    verdict = sim.audit(calls + [again], evicting_run.final)
    assert verdict.problems[sim.V_ORPHANS] == [
        f"job {evict.job_id}: w9 claimed it with token {claim.token} after its row was deleted "
        "(nothing may mint a token for an orphan)"
    ]
    assert verdict.tokens_minted_twice == 1  # the same token handed out twice, too


def test_the_audit_catches_an_evicted_id_that_was_never_dropped(evicting_run: sim.Result) -> None:
    calls = [c for c in evicting_run.ledger if c.verb != "drop"]
    verdict = sim.audit(calls, evicting_run.final)
    assert verdict.problems[sim.V_ORPHANS][0].startswith("25 evicted ids left the sets without")


# -- 10. a frozen server gives one bounded wait; a refused password says so ---------------------
# (``own_server``, a real server of the test's own, comes from tests/conftest.py)


def test_a_refused_password_says_authentication_failed(own_server: RunningServer) -> None:
    echomq_lab.connect(own_server.url).config_set("requirepass", "sekrit")
    wrong = own_server.url.replace("redis://", "redis://:wrong@")
    for url in (own_server.url, wrong):
        with pytest.raises(errors.AuthFailed) as info:
            echomq_lab.connect(url)
        text = str(info.value)
        assert text.startswith("authentication failed at redis://")
        assert "cannot reach" not in text and "wrong" not in text  # the password stays hidden
        assert errors.kind_of(info.value) == "authentication failed"
    # a client already connected meets the new password on its next connection: same words
    conn = echomq_lab.connect(own_server.url.replace("redis://", "redis://:sekrit@"))
    conn.config_set("requirepass", "changed")
    conn.connection_pool.disconnect()
    with pytest.raises(errors.AuthFailed, match="^authentication failed at redis://:\\*\\*\\*@"):
        jobs.claim(conn, Q, LONG_LEASE)


def test_a_frozen_server_is_one_no_answer_that_may_have_run(own_server: RunningServer) -> None:
    conn = echomq_lab.connect(own_server.url + "?socket_timeout=0.3")
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"x")
    os.kill(own_server.proc.pid, signal.SIGSTOP)
    try:
        with counting() as sent, pytest.raises(errors.NoAnswer) as info:
            jobs.claim(conn, Q, LONG_LEASE)
    finally:
        os.kill(own_server.proc.pid, signal.SIGCONT)
    assert sent == ["EVALSHA"]  # one EVALSHA sent, one wait, no silent resend
    assert str(info.value).endswith("did not answer within 0.3 s; the call may or may not have run")
    assert isinstance(info.value, errors.ServerUnavailable)
    # thawed, the server answers again on the same client; the claim had not run
    got = jobs.claim(conn, Q, LONG_LEASE)
    assert got is not None and got.id == job and got.token == 1


# -- 3, 4, 5. check() lists what another client wrote ---------------------------------------------


def _kinds(conn: redis.Redis) -> dict[str, set[str]]:
    """check()'s drifts as {kind: {subject, ...}}."""
    if isinstance(conn, redis.RedisCluster):
        pytest.skip("check() walks the row keys with one SCAN, which a cluster client cannot "
                    "send without naming a node (the same on main: not this issue's change)")
    found: dict[str, set[str]] = {}
    for drift in snapshot.check(conn, Q):
        found.setdefault(drift.kind, set()).add(drift.job_id)
    return found


def test_check_lists_odd_data_as_drift(conn: redis.Redis) -> None:
    inf_job, paused, one = (branded.mint() for _ in range(3))
    conn.set(rkey("lock"), b"held by someone")
    conn.zadd(ACTIVE, {"JOB\u00e9t\u00e9\u00e9t\u00e9\u00e9".encode(): 5, b"\xff\xfe": 7})
    for job, state, attempts in ((inf_job, "scheduled", "0"), (paused, "paused", "0"),
                                 (one, "pending", "one")):  # fmt: skip
        conn.hset(rkey(job), mapping={"state": state, "attempts": attempts, "payload": b"p"})
    conn.zadd(SCHEDULE, {inf_job: float("inf")})
    conn.zadd(PENDING, {paused: 0, one: 0, b"AAA": 0})
    kinds = _kinds(conn)
    assert kinds["wrong-type"] == {rkey("lock").decode()}
    assert kinds["malformed-member"] == {"JOB\u00e9t\u00e9\u00e9t\u00e9\u00e9", repr(b"\xff\xfe"),
                                         "AAA"}  # fmt: skip
    assert kinds["score-not-finite"] == {inf_job}
    assert kinds["unknown-state"] == {paused}
    assert kinds["bad-attempts"] == {one}


def test_a_set_key_of_the_wrong_type_is_drift_not_an_error(conn: redis.Redis) -> None:
    conn.set(PENDING, b"not a sorted set")
    assert _kinds(conn) == {"wrong-type": {PENDING}}


def test_a_malformed_member_is_drift_and_claim_never_follows_it(conn: redis.Redis) -> None:
    conn.zadd(PENDING, {b"AAA": 0})
    assert _kinds(conn) == {"malformed-member": {"AAA"}, "member-without-row": {"AAA"}}
    assert jobs.claim_dropping(conn, Q, LONG_LEASE) == (None, jobs.Dropped(malformed=(b"AAA",)))
    assert snapshot.check(conn, Q) == [] and dump(conn) == {}
