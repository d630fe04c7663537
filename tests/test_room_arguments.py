"""A learner's odd numbers, through a room's gateway: each is refused in one ``EMQARG`` line and
leaves the room as it was (issue 43's attacks: ``1_000`` and Arabic-Indic digits as a lease,
a lease of 9000000000000000 ms, ``-5``, ``0``, a retry's delay and cap that are no numbers or
too large, a view of the whole queue). The room's bounds are :mod:`echomq_lab.classroom.bounds`.

Then a fenced transition registered at test time, as ``make transition`` would add it (its
header written by tools/transition.py, a body in place of the stub), passes the gateway with
no edit of the gateway: its keys and arguments come from its header.

On a real Valkey, a room's server (the conftest's ``valkey_tools`` skips, saying why, without).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from echomq_lab import errors, keyspace, scripts, transitions
from echomq_lab.classroom import Room, join, open_room
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.bounds import LEASE_TIMES, MAX_ATTEMPTS, VIEW_WINDOW
from echomq_lab.classroom.gateway import LEASE_READ_S
from echomq_lab.classroom.room import join_link
from echomq_lab.scripts import Script, expand, layout, leading_comments
from tests.support.rooms import learner
from tools import transition as make_transition

ROOM = "odd-numbers"
LEASE = 60_000
K = keyspace.keys(ROOM)


@pytest.fixture(scope="module")
def room(valkey_tools: tuple[str, str]) -> Iterator[Room]:
    with open_room(ROOM, 2, lease_ms=LEASE) as opened, opened.admin() as admin:
        Board(admin, ROOM).enqueue(3)
        yield opened


@pytest.fixture
def admin(room: Room) -> Iterator[redis.Redis]:
    with room.admin() as conn:
        yield conn


def state(admin: redis.Redis) -> dict[bytes, bytes]:
    """Every key of the queue (its sets and rows, not the room's record) with its DUMP."""
    keys = sorted(k for k in admin.scan_iter(match=K.base + "*")
                  if b":log:" not in k and b":gate:" not in k)
    return {k: admin.dump(k) for k in keys}


def evalsha(conn: redis.Redis, name: str, keys: list[str], args: list[Any]) -> Any:
    return conn.execute_command("EVALSHA", scripts.load(name).sha, len(keys), *keys, *args)


def refused(conn: redis.Redis, name: str, keys: list[str], args: list[Any], word: str) -> str:
    with pytest.raises(redis.ResponseError) as refusal:
        evalsha(conn, name, keys, args)
    said = str(refusal.value)
    assert said.startswith(f"EMQARG {word} must be "), said[:120]
    assert "\n" not in said and len(said) < 200
    assert conn.ping()  # the connection stays usable
    return said


def test_odd_leases_are_refused_in_one_line_and_the_queue_keeps_its_jobs(
    room: Room, admin: redis.Redis
) -> None:
    before = state(admin)
    pending = admin.zcard(K.pending)
    assert pending >= 1
    odd: list[Any] = ["1_000", "١٠٠٠", "abc", "nan", "inf", "1e308", "-0", "-5", "0", "",
                      "9000000000000000", str(LEASE * LEASE_TIMES + 1), str(LEASE // 8),
                      "7" * 60 * 1024, b"\xff\xfe\x00"]
    with learner(room) as conn:
        for lease in odd:
            refused(conn, "claim", [K.pending, K.active], [K.rows, lease], "lease")
    desk = join(join_link(room.url("learner-1"), ROOM))
    answer = desk.claim(LEASE * LEASE_TIMES + 1)  # the handle's own check allows a year
    assert (answer.outcome, answer.reply) == ("refused", "EMQARG") and desk.held is None
    assert answer.words == (f"claim refused: EMQARG: lease must be from {LEASE // LEASE_TIMES} "
                            f"to {LEASE * LEASE_TIMES} ms in this room (its lease is {LEASE} ms)")
    assert state(admin) == before and admin.zcard(K.pending) == pending


def test_a_held_job_cannot_be_bent_by_odd_numbers(room: Room, admin: redis.Redis) -> None:
    desk = join(join_link(room.url("learner-2"), ROOM))
    got = desk.claim()
    assert got.outcome == "accepted" and desk.held is not None
    job, token = desk.held.id, desk.held.token
    keys = layout.of("retry").keys(ROOM, job)
    before = state(admin)
    with learner(room, "learner-2") as conn:
        for delay, cap, word in (("1_000", 5, "delay"), ("-5", 5, "delay"),
                                 (str(LEASE * LEASE_TIMES + 1), 5, "delay"),
                                 (0, "abc", "max"), (0, "0", "max"), (0, "١", "max"),
                                 (0, MAX_ATTEMPTS + 1, "max")):
            refused(conn, "retry", keys, [job, token, delay, cap, "boom"], word)
        for lease in ("9000000000000000", "-5", "0", "1_000"):
            refused(conn, "extend", [K.active, K.row(job)], [job, token, lease], "lease")
        refused(conn, "complete", [K.active, K.row(job)], [job, "1_000"], "token")
        refused(conn, "view", [*K.sets], [K.rows, "all"], "window")
        refused(conn, "view", [*K.sets], [K.rows, VIEW_WINDOW + 1], "window")
        assert evalsha(conn, "view", [*K.sets], [K.rows, VIEW_WINDOW])[1][1] >= 1
    assert state(admin) == before
    assert desk.complete().outcome == "accepted"


def test_a_lease_the_instructor_sets_bounds_the_next_claims(room: Room, admin: redis.Redis) -> None:
    board = Board(admin, ROOM)
    try:
        board.set_lease(1000)
        time.sleep(LEASE_READ_S + 0.2)  # the gateway trusts its last reading this long
        with learner(room) as conn:
            refused(conn, "claim", [K.pending, K.active], [K.rows, 100_000], "lease")
            board.set_lease(LEASE)  # raised: obeyed at once (read again before a refusal)
            got = evalsha(conn, "claim", [K.pending, K.active], [K.rows, 100_000])
            assert len(got) == 3
            job, token = got[0].decode(), got[2]
            assert evalsha(conn, "complete", [K.active, K.row(job)], [job, token]) == 1
    finally:
        board.set_lease(LEASE)


# --- a transition added the way `make transition` adds one --------------------------------

NAME = "release"
#: The body written in place of the stub: a held job goes back to pending, if the token holds.
BODY = """--@include argument
local bad = branded('id', ARGV[1]) or row_of(KEYS[1], ARGV[1], KEYS[2])
  or decimal('token', ARGV[2], '1', '4611686018427387904')
if bad then
  return bad
end
local attempts = redis.call('HGET', KEYS[1], 'attempts')
if attempts ~= ARGV[2] or not redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  return redis.error_reply('EMQSTALE token ' .. ARGV[2] .. ' holds no lease')
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], 'state', 'pending')
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
"""


def made_transition() -> tuple[transitions.Transition, Script]:
    """The registry entry and the script ``make transition NAME=release --from active --to
    pending --takes "job token"`` writes, its stub line replaced by :data:`BODY`."""
    takes = ("job", "token")
    text = make_transition.lua(NAME, "give a held job back", takes)
    stub = next(line for line in text.splitlines() if line.startswith("return redis.error"))
    text = text.replace(stub + "\n", BODY)
    entry = make_transition.entry(NAME, ("active",), ("pending",), takes, "give a held job back")
    scope = {"Transition": transitions.Transition, "Edge": transitions.Edge,
             "Call": transitions.Call, "START": transitions.START,
             "RETIRED": transitions.RETIRED}
    made = eval(entry.strip().rstrip(","), scope)  # the tool's own text, read as the registry
    return made, Script(NAME, expand(text, f"{NAME}.lua"), leading_comments(text))


def test_a_fenced_transition_added_as_make_transition_does_passes_the_gateway(
    valkey_tools: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made, script = made_transition()
    assert made.fenced and "KEYS[3] active" in script.header
    monkeypatch.setattr(transitions, "TRANSITIONS", (*transitions.TRANSITIONS, made))
    load = scripts.load
    monkeypatch.setattr(scripts, "load", lambda name: script if name == NAME else load(name))
    room_name = "made-up"
    with open_room(room_name, 1, lease_ms=LEASE) as opened, opened.admin() as admin:
        Board(admin, room_name).enqueue(1)
        script.load_into(admin)  # a room opened after `make transition` loads it itself
        desk = join(join_link(opened.url("learner-1"), room_name))
        assert desk.claim().outcome == "accepted" and desk.held is not None
        job, token = desk.held.id, desk.held.token
        keys = layout.of(NAME).keys(room_name, job)
        with redis.Redis.from_url(opened.url("learner-1"), socket_timeout=5) as conn:
            with pytest.raises(errors.BadArgument, match="^EMQARG: token must be"):
                script(conn, keys, [job, "1_000"])
            assert script(conn, keys, [job, token]) == 1
            with pytest.raises(redis.exceptions.NoPermissionError, match="own keys"):
                script(conn, [*reversed(keys)], [job, token])  # its own keys, in order
        k = keyspace.keys(room_name)
        assert admin.zscore(k.pending, job) == 0 and admin.zscore(k.active, job) is None
        assert admin.hget(k.row(job), "state") == b"pending"
