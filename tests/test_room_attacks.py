"""One learner, with nothing but their own join link, tries what broke the room before: each
attempt is refused in one line and leaves the room as it was; the instructor and the other
learners still get in; what the board and the tally report comes from the gateway's record.
On a real Valkey (the conftest's ``valkey_tools`` skips, saying why, without one)."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator

import pytest
import redis

from echomq_lab import branded, keyspace, scripts
from echomq_lab.classroom import Room, acl_refusals, join, open_room, tally
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.gateway import Limits
from echomq_lab.classroom.resp import command
from tests.support.rooms import learner as _learner

ROOM = "attacks"
LIMITS = Limits(login_s=1.5, waiting_per_address=32)  # the mechanism, at a size a test opens fast


@pytest.fixture(scope="module")
def room(valkey_tools: tuple[str, str]) -> Iterator[Room]:
    with open_room(ROOM, 4, lease_ms=60_000, limits=LIMITS) as opened, opened.admin() as admin:
        Board(admin, ROOM).enqueue(7)
        yield opened


@pytest.fixture
def admin(room: Room) -> Iterator[redis.Redis]:
    with room.admin() as conn:
        yield conn


def _state(admin: redis.Redis) -> dict[str, object]:
    """Every key of the room but the gateway's record of refusals: its type and contents."""
    out: dict[str, object] = {}
    for raw in admin.scan_iter(match=keyspace.base(ROOM) + "*"):
        key = raw.decode()
        kind = admin.type(key).decode()
        if ":gate:" in key:
            continue
        out[key] = (kind, admin.zrange(key, 0, -1, withscores=True) if kind == "zset" else
                    admin.hgetall(key) if kind == "hash" else admin.xlen(key))
    out["scripts"] = admin.execute_command("INFO", "memory")["number_of_cached_scripts"]
    return out


def test_each_attack_is_refused_in_one_line_and_changes_nothing(room: Room,
                                                               admin: redis.Redis) -> None:
    k = keyspace.keys(ROOM)
    before = _state(admin)
    counts = tally(admin, ROOM)
    (job,) = [m.decode() for m in admin.zrange(k.pending, 0, 0)]
    made_up = branded.mint("JOB")
    attacks: list[tuple[object, ...]] = [
        ("DEL", k.pending), ("HSET", k.row(job), "attempts", "0"),
        ("ZADD", k.pending, "0", "JOBmadeup"),
        ("SCRIPT", "LOAD", "redis.call('SET', KEYS[1], 1) while true do end"),
        ("EVAL", "while true do end", "0"), ("FUNCTION", "LOAD", "#!lua name=x\n"),
        ("CLIENT", "SETNAME", "instructor"), ("HELLO", "2", "SETNAME", "instructor"),
        ("XADD", keyspace.base(ROOM) + "log:learner-1", "*", "verb", "claim", "job", job,
         "token", "1", "outcome", "accepted", "reply", "claimed", "began_ms", "1",
         "ended_ms", "2"),
        ("EVALSHA", scripts.load("unfenced_complete").sha, "2", k.active, k.row(job), job),
        ("EVALSHA", scripts.load("enqueue").sha, "5", k.row(made_up), *k.sets,
         made_up, "{}"),
        ("EVALSHA", scripts.load("claim").sha, "2", "emq:{other}:pending",
         "emq:{other}:active", "emq:{other}:job:", "1000"),
        ("EVALSHA", scripts.load("complete").sha, "2", k.active, k.pending, job, "1"),
        ("CONFIG", "SET", "maxmemory", "0"), ("MULTI",), ("SUBSCRIBE", "x"), ("MONITOR",),
    ]
    with _learner(room) as learner:
        for attack in attacks:
            with pytest.raises(redis.exceptions.ResponseError) as refused:
                learner.execute_command(*attack)
            said = str(refused.value)
            assert "\n" not in said and said, attack
            assert learner.ping()  # the connection stays usable
    assert _state(admin) == before
    assert tally(admin, ROOM) == counts
    assert sum(acl_refusals(admin, ROOM)["learner-1"].values()) >= len(attacks)


def test_a_learners_link_does_not_work_on_the_servers_port(room: Room) -> None:
    with redis.Redis(host="127.0.0.1", port=room.server_port, username="learner-1",
                     password=room.passwords["learner-1"], socket_timeout=5) as direct:
        with pytest.raises(redis.AuthenticationError):
            direct.ping()


def test_a_two_megabyte_request_is_refused_in_one_line_naming_the_limit(
        room: Room, admin: redis.Redis) -> None:
    before = _state(admin)
    with socket.create_connection(("127.0.0.1", room.port), timeout=5) as sock:
        sock.sendall(command("AUTH", "learner-2", room.passwords["learner-2"]))
        assert sock.recv(100) == b"+OK\r\n"
        sock.sendall(command("HGET", keyspace.keys(ROOM).rows + "JOBx", "x" * (2 << 20)))
        said = sock.recv(1000)
    assert said == (f"-ERR request too large: this room takes at most "
                    f"{LIMITS.request_bytes} bytes per request\r\n").encode()
    assert _state(admin) == before


def test_failed_logins_are_filed_by_address_and_cannot_push_real_refusals_out(
        room: Room, admin: redis.Redis) -> None:
    with _learner(room, "learner-3") as learner, pytest.raises(redis.exceptions.NoPermissionError):
        learner.flushall()
    with socket.create_connection(("127.0.0.1", room.port), timeout=5) as sock:
        for n in range(1200):  # made-up names, and a real learner's name with a wrong password
            name = "learner-2" if n % 2 else f"nobody-{n}"
            sock.sendall(command("AUTH", name, "guess"))
            assert sock.recv(200).startswith(b"-WRONGPASS")
    refused = acl_refusals(admin, ROOM)
    assert refused["learner-3"]["command flushall"] >= 1  # still there
    assert "command auth" not in refused.get("learner-2", {})
    assert not any(name.startswith("nobody") for name in refused)
    logins = admin.xlen(keyspace.base(ROOM) + "gate:logins")
    assert 1 <= logins <= LIMITS.records_per_window * 2  # rate-limited, counted, not written


def test_a_flood_of_sockets_cannot_lock_out_the_instructor_or_another_learner(
        room: Room, admin: redis.Redis) -> None:
    """Sockets that never log in, from one address (127.0.0.2: another machine, for the
    server), and one learner's link opened again and again."""
    idle = []
    for _ in range(LIMITS.waiting_per_address + 3):
        sock = socket.socket()
        sock.bind(("127.0.0.2", 0))
        sock.connect(("127.0.0.1", room.port))
        idle.append(sock)
    try:
        idle[-1].settimeout(5)
        assert idle[-1].recv(200).startswith(b"-ERR too many sockets from your address")
        mine = [_learner(room, "learner-4") for _ in range(LIMITS.connections)]
        assert all(c.ping() for c in mine)
        with _learner(room, "learner-4") as one_more, pytest.raises(
                redis.exceptions.ResponseError, match="too many connections"):
            one_more.ping()
        assert admin.ping()  # the instructor's way in is the server's own, kept free
        with _learner(room, "learner-1") as other:
            assert other.ping()
        idle[0].settimeout(LIMITS.login_s + 5)
        assert idle[0].recv(200).startswith(b"-ERR no login within")  # closed after a while
        for c in mine:
            c.close()
    finally:
        for sock in idle:
            sock.close()


def test_a_learner_who_reads_anothers_token_can_complete_that_job_and_the_board_says_so(
        room: Room, admin: redis.Redis) -> None:
    from echomq_lab.widgets.classroom import BoardPanel

    holder = join(room.manifest()["learners"][1]["link"])  # learner-2
    claimed = holder.claim()
    assert claimed.outcome == "accepted"
    with _learner(room, "learner-1") as thief:
        row = thief.hgetall(keyspace.keys(ROOM).row(claimed.job_id))
        token = int(row[b"attempts"])
        sha = scripts.load("complete").sha
        k = keyspace.keys(ROOM)
        assert thief.evalsha(sha, 2, k.active, k.row(claimed.job_id), claimed.job_id,
                             token) == 1
    board = Board(admin, ROOM)
    assert ("learner-1", "complete", claimed.job_id, "learner-2") in board.read().crossed
    assert "learner-1 completed a job learner-2 held" in BoardPanel(board).acl.value
    assert tally(admin, ROOM)["learner-1"]["completes"] >= 1


def test_a_full_room_refuses_writes_and_evicts_nothing(room: Room, admin: redis.Redis) -> None:
    before = _state(admin)
    used = int(admin.info("memory")["used_memory"])
    admin.config_set("maxmemory", used // 2)
    try:
        with pytest.raises(redis.exceptions.ResponseError, match="maxmemory"):
            Board(admin, ROOM).enqueue(1)
        assert _state(admin) == before
    finally:
        admin.config_set("maxmemory", f"{256 + 2 * 4}mb")


def test_the_gateway_refuses_an_untrusted_origin_and_closes_an_oversized_frame_in_a_line(
        room: Room, caplog: pytest.LogCaptureFixture) -> None:
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    with pytest.raises(InvalidStatus, match="403"):
        connect(room.gateway_url, origin="http://evil.example", open_timeout=5)  # type: ignore[arg-type]
    with connect(room.gateway_url, origin="http://127.0.0.1:8000", open_timeout=5) as ws:  # type: ignore[arg-type]
        ws.send(json.dumps({"user": "learner-1", "password": room.passwords["learner-1"]}))
        assert json.loads(ws.recv())["ok"] is True
        caplog.clear()
        with caplog.at_level(logging.INFO), pytest.raises(ConnectionClosed):
            ws.send(b"x" * (2 << 20))
            ws.recv(timeout=5)
        time.sleep(0.3)
    lines = [r for r in caplog.records if r.name.startswith(("echomq_lab", "websockets"))]
    assert lines and all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)
    with connect(room.gateway_url, open_timeout=5) as ws:  # the gateway is still up
        ws.send(json.dumps({"user": "learner-1", "password": room.passwords["learner-1"]}))
        assert json.loads(ws.recv())["ok"] is True


def test_bytes_that_are_not_the_protocol_close_that_socket_in_one_logged_line(
        room: Room, caplog: pytest.LogCaptureFixture) -> None:
    for junk in (b"GET / HTTP/1.1\r\n\r\n", b"*1\r\n:5\r\n", b"*x\r\n"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="echomq_lab.classroom.gateway"), \
                socket.create_connection(("127.0.0.1", room.port), timeout=5) as sock:
            sock.sendall(junk)
            said = sock.recv(300)
            assert said.startswith(b"-ERR ") and said.count(b"\r\n") == 1, said
            assert sock.recv(10) == b""  # closed
        time.sleep(0.1)
        lines = [r for r in caplog.records if r.name == "echomq_lab.classroom.gateway"]
        assert len(lines) == 1 and lines[0].exc_info is None
    with _learner(room) as learner:
        assert learner.ping()
