"""What one learner's volume cannot do to a room: their log stays capped however much they send,
and the board still opens (in pages, within a small output buffer) and draws in Chromium;
filler refusals cannot hide a rarer kind; a room near its memory budget refuses learners' calls
in one line before it could fail to record them, so the record and the server agree. Each
attack goes through the gateway, with a learner's own link. On a real Valkey."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import redis

from echomq_lab import keyspace, scripts, servers
from echomq_lab.classroom import Room, acl_refusals, open_room, tally
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.memory import margin
from echomq_lab.classroom.record import LOG_LEN, log_key
from echomq_lab.classroom.resp import Err, Replies, command

if TYPE_CHECKING:
    from playwright.sync_api import Browser

ROOM = "limits"
#: Streams trim whole nodes (``MAXLEN ~``): a log may run this far past its cap.
NODE = 100


@pytest.fixture(scope="module")
def room(valkey_tools: tuple[str, str]) -> Iterator[Room]:
    with open_room(ROOM, 3, lease_ms=60_000) as opened, opened.admin() as admin:
        Board(admin, ROOM).enqueue(5)
        yield opened


def _send_all(room: Room, user: str, requests: list[bytes], batch: int = 16) -> list[object]:
    """Log in as ``user`` on the gateway's TCP side and send ``requests`` ``batch`` at a time;
    every reply, in order."""
    out: list[object] = []
    with socket.create_connection(("127.0.0.1", room.port), timeout=30) as sock:
        sock.sendall(command("AUTH", user, room.passwords[user]))
        assert sock.recv(100) == b"+OK\r\n"
        replies = Replies()
        for start in range(0, len(requests), batch):
            chunk = requests[start:start + batch]
            sock.sendall(b"".join(chunk))
            got: list[object] = []
            while len(got) < len(chunk):
                got += [r.value for r in replies.feed(sock.recv(1 << 16))]
            out += got
    return out


def test_log_spam_stays_capped_and_the_board_opens_in_pages(room: Room,
                                                           browser: Browser) -> None:
    k = keyspace.keys(ROOM)
    sha = scripts.load("complete").sha
    with room.admin() as admin:
        (job,) = [m.decode() for m in admin.zrange(k.pending, 0, 0)]
        stale = command("EVALSHA", sha, "2", k.active, k.row(job), job, "999")
        spam = LOG_LEN + 1500
        replies = _send_all(room, "learner-1", [stale] * spam)
        assert len(replies) == spam
        length = int(admin.xlen(log_key(ROOM, "learner-1")))
        assert LOG_LEN <= length <= LOG_LEN + NODE
        # every line of it would not fit through this buffer at once; pages of it do
        admin.config_set("client-output-buffer-limit", "normal 256kb 256kb 10")
        try:
            with room.admin() as small:
                reading = Board(small, ROOM).read()
                assert small.ping()  # the board's connection was not cut
        finally:
            admin.config_set("client-output-buffer-limit", "normal 16mb 8mb 10")
    assert reading.stale_by_learner["learner-1"] == length  # every line kept, read in pages
    from echomq_lab.widgets.classroom import BoardPanel

    with room.admin() as admin:
        panel = BoardPanel(Board(admin, ROOM))
        panel.redraw(timeline=True)
        shown = "".join(f"<section>{v.value}</section>" for v in
                        (panel.summary, panel.table, panel.acl, panel.picture))
    page = browser.new_page()
    try:
        page.set_content(f"<!doctype html><html><body>{shown}</body></html>")
        assert "learner-1" in page.inner_text("body")
    finally:
        page.close()


def test_filler_refusals_cannot_hide_a_flushall(room: Room) -> None:
    k = keyspace.keys(ROOM)
    filler = [command("DEL", k.pending)] * 3000 + [command("FLUSHALL")]
    replies = _send_all(room, "learner-2", filler)
    assert all(isinstance(r, Err) and r.line.startswith("NOPERM") for r in replies)
    with room.admin() as admin:
        refused = acl_refusals(admin, ROOM)["learner-2"]
        assert refused["command del"] == 3000
        assert refused["command flushall"] == 1
        from echomq_lab.widgets.classroom import BoardPanel

        panel = BoardPanel(Board(admin, ROOM))
        panel.redraw()
        assert "command flushall ×1" in panel.acl.value


def test_invented_command_names_are_counted_without_growing_the_record(room: Room) -> None:
    made_up = [command(f"NOSUCH{n}") for n in range(200)]
    _send_all(room, "learner-3", made_up)
    with room.admin() as admin:
        refused = acl_refusals(admin, ROOM)["learner-3"]
    assert refused == {"command unknown": 200}


def test_a_room_near_its_memory_budget_refuses_calls_before_it_could_not_record_them(
        room: Room) -> None:
    k = keyspace.keys(ROOM)
    claim = scripts.load("claim").sha
    with room.admin() as admin, redis.Redis.from_url(room.url("learner-3"),
                                                     socket_timeout=5) as learner:
        budget = admin.config_get("maxmemory")["maxmemory"]
        used = int(admin.info("memory")["used_memory"])
        near = used + margin(used) // 2
        admin.config_set("maxmemory", near)
        try:
            # a stale complete of another learner's as the probe: the gateway reads the
            # server's memory every so often, and nothing here may depend on when
            with redis.Redis.from_url(room.url("learner-2"), socket_timeout=5) as probe:
                (job,) = [m.decode() for m in admin.zrange(k.pending, 0, 0)]
                complete = scripts.load("complete").sha

                def full() -> bool:
                    try:
                        probe.evalsha(complete, 2, k.active, k.row(job), job, 999)
                    except redis.ResponseError as exc:
                        return str(exc).startswith("the room is full")
                    return False

                assert servers.wait_until(full, 10, 0.1)
            before = (admin.zrange(k.pending, 0, -1), admin.zrange(k.active, 0, -1),
                      admin.xlen(log_key(ROOM, "learner-3")), tally(admin, ROOM)["learner-3"])
            with pytest.raises(redis.ResponseError) as said:
                learner.evalsha(claim, 2, k.pending, k.active, k.rows, 60_000)
            assert str(said.value).startswith("the room is full") and "\n" not in str(said.value)
            assert learner.ping() and learner.hgetall(k.rows + "nothing") == {}  # reads go on
            after = (admin.zrange(k.pending, 0, -1), admin.zrange(k.active, 0, -1),
                     admin.xlen(log_key(ROOM, "learner-3")), tally(admin, ROOM)["learner-3"])
            assert after == before
        finally:
            admin.config_set("maxmemory", budget)

        def taken() -> bool:
            try:
                return bool(learner.evalsha(claim, 2, k.pending, k.active, k.rows, 60_000))
            except redis.ResponseError:
                return False

        assert servers.wait_until(taken, 10, 0.1)
        assert tally(admin, ROOM)["learner-3"]["claims"] == 1
        assert int(admin.zcard(k.active)) == 1
        assert acl_refusals(admin, ROOM)["learner-3"]["command room full"] >= 1
