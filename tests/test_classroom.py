"""The workshop on a real Valkey: a room's ACL users keep each learner inside the room, six
learners contend for one queue with stalls and the fence holds, the tally matches what each
learner did, and every refusal is attributed to the learner who met it."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from echomq_lab import jobs, keyspace, servers
from echomq_lab.classroom import Room, acl_refusals, calls, join, open_room, tally
from echomq_lab.classroom.board import Board, Reaper
from echomq_lab.classroom.drill import learn
from echomq_lab.classroom.ledger import TALLY_KEYS
from echomq_lab.classroom.room import join_link, learner_rules, parse_link
from echomq_lab.connection import describe
from echomq_lab.sim import audit
from echomq_lab.snapshot import snapshot, view

ROOM = "workshop"
LEARNERS = 6
JOBS = 60


@pytest.fixture(scope="module")
def room(valkey_tools: tuple[str, str]) -> Iterator[Room]:
    """A room of six on a Valkey of its own (without valkey-server the conftest's
    ``valkey_tools`` skips, printing why, or fails where backends are required)."""
    with open_room(ROOM, LEARNERS, lease_ms=200) as opened:
        yield opened


@pytest.fixture
def admin(room: Room) -> Iterator[redis.Redis]:
    with room.admin() as conn:
        yield conn


def _raw(room: Room, user: str) -> redis.Redis:
    """``user``'s own client, through the room's gateway (the learners' one way in)."""
    return redis.Redis.from_url(room.url(user), socket_timeout=5)


def _behind(room: Room, user: str) -> redis.Redis:
    """``user``'s ACL user on the server itself, with the password only the gateway knows:
    the second wall, tried as if the gateway had let something through."""
    return redis.Redis(host="127.0.0.1", port=room.server_port, username=user,
                       password=room.server_passwords[user], socket_timeout=5)


def _listening(port: int) -> bool:
    """True when something accepts connections on 127.0.0.1:``port`` (a port a closed
    listener left in TIME_WAIT is not free to bind, yet nothing listens there)."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


#: What no learner may run (item 2 of the workshop's safety list).
REFUSED: tuple[tuple[str, ...], ...] = (
    ("FLUSHALL",), ("FLUSHDB",), ("KEYS", "*"), ("CONFIG", "GET", "maxmemory-policy"),
    ("ACL", "LIST"), ("SCRIPT", "FLUSH"), ("SCRIPT", "KILL"), ("FUNCTION", "FLUSH"),
    ("SHUTDOWN", "NOSAVE"), ("DEBUG", "SLEEP", "0"), ("MONITOR",), ("EVAL", "return 1", "0"),
    ("SCAN", "0"),
)


def test_the_default_user_is_off_and_the_server_evicts_nothing(room: Room,
                                                               admin: redis.Redis) -> None:
    with redis.Redis(host="127.0.0.1", port=room.server_port, socket_timeout=5) as anonymous:
        with pytest.raises(redis.AuthenticationError):
            anonymous.get("x")
    assert admin.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
    assert int(admin.config_get("maxmemory")["maxmemory"]) >= 256 << 20
    assert admin.config_get("appendonly") == {"appendonly": "yes"}
    assert "normal 16777216 8388608 10" in admin.config_get(
        "client-output-buffer-limit")["client-output-buffer-limit"]
    assert int(admin.config_get("maxclients")["maxclients"]) >= LEARNERS * 4 + 32


def test_room_json_has_a_seat_and_a_link_per_learner(room: Room, tmp_path: Path) -> None:
    data = json.loads(room.write(tmp_path).read_text())
    assert data["room"] == ROOM and data["instructor"]["url"].startswith("redis://instructor:")
    assert [s["name"] for s in data["learners"]] == [f"learner-{n}" for n in range(1, 7)]
    for seat in data["learners"]:
        assert seat["queue"] == ROOM
        assert parse_link(seat["link"]).url == seat["url"]
    assert (tmp_path / "room.json").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize("command", REFUSED, ids=lambda c: " ".join(c[:2]))
def test_every_learner_is_refused_the_dangerous_commands(room: Room, admin: redis.Redis,
                                                         command: tuple[str, ...]) -> None:
    for user in room.learners:
        # the ACL says no (DEBUG is also off on the server, which would answer first)
        said = admin.execute_command("ACL", "DRYRUN", user, *command)
        assert said != b"OK" and b"no permissions" in said
        with _raw(room, user) as conn, pytest.raises(redis.exceptions.NoPermissionError,
                                                     match="runs only the lab's calls"):
            conn.execute_command(*command)
    assert admin.ping()  # the server is still up: no SHUTDOWN went through
    refused = acl_refusals(admin, ROOM)
    assert all(refused[u][f"command {command[0].lower()}"] >= 1 for u in room.learners)


def test_every_learner_is_refused_keys_outside_the_room(room: Room, admin: redis.Redis) -> None:
    admin.zadd(keyspace.keys("other").pending, {"JOBx": 0})
    outside = ["emq:{other}:pending", "plain-key", keyspace.base(ROOM)[:-1]]
    for n, user in enumerate(room.learners):
        other_log = f"{keyspace.base(ROOM)}log:{room.learners[(n + 1) % LEARNERS]}"
        with _raw(room, user) as conn:  # the gateway: reads of the room only, no writes
            for key in outside:
                with pytest.raises(redis.exceptions.NoPermissionError):
                    conn.zcard(key)
            for key in (other_log, keyspace.base(ROOM) + "ctl", "emq:{other}:pending"):
                with pytest.raises(redis.exceptions.NoPermissionError):
                    conn.zadd(key, {"JOBx": 1})
        with _behind(room, user) as conn:  # the second wall: the learner's own ACL user
            for key in (other_log, keyspace.base(ROOM) + "ctl", "emq:{other}:pending"):
                with pytest.raises(redis.exceptions.NoPermissionError):
                    conn.zadd(key, {"JOBx": 1})
            with pytest.raises(redis.exceptions.NoPermissionError):
                conn.script_load("return 1")
    refused = acl_refusals(admin, ROOM)
    for user in room.learners:
        assert refused[user]["key emq:{other}:pending"] >= 1  # the server's own ACL LOG
        assert refused[user]["command zcard"] >= 1  # the gateway's record
    assert admin.zcard("emq:{other}:pending") == 1


def test_a_learner_may_run_the_transitions_and_read_the_room(room: Room,
                                                             admin: redis.Redis) -> None:
    desk = join(join_link(room.url("learner-1"), ROOM))
    queue = f"{ROOM}"
    Board(admin, queue).enqueue(1)
    got = desk.claim(800)  # the room's lease is 200 ms: a learner's may be up to 4 times it
    assert got.outcome == "accepted" and desk.held is not None
    assert desk.extend(800).outcome == "accepted"
    assert view(desk.conn, queue).members("active") == [got.job_id]  # a window, not all
    assert desk.complete().outcome == "accepted"
    assert any(c.get("user") == "learner-1" for c in admin.client_list())


def test_learner_rules_name_only_the_room() -> None:
    rules = learner_rules("r1", "learner-2", "pw")
    keys = [r for r in rules if "~" in r]
    assert all("{r1}" in r for r in keys)
    assert "+@scripting" not in rules and "+evalsha" in rules
    assert not {"+script|load", "+xadd", "+client|setname"} & set(rules)


def test_a_bad_join_link_is_one_clear_error() -> None:
    for link in ("redis://x:y@h:1/0", "echomq://h:1/room", "echomq://u:p@h:1/bad room",
                 "echomq://u:p@h:notaport/room"):
        with pytest.raises(ValueError, match="join link"):
            parse_link(link)


def test_six_learners_contend_and_the_fence_holds(room: Room, admin: redis.Redis) -> None:
    reaper = Reaper(room.admin, ROOM, every_s=0.02).start()
    board = Board(admin, ROOM)
    before = tally(admin, ROOM)
    earlier = {c.job_id for c in calls(admin, ROOM) if c.verb == "enqueue"}
    board.enqueue(JOBS)
    done = threading.Event()
    did = {user: Counter[str]() for user in room.learners}
    desks = [join(join_link(room.url(user), ROOM)) for user in room.learners]
    threads = [threading.Thread(target=learn, args=(d, done, n, did[d.actor]))
               for n, d in enumerate(desks)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and board.outstanding():
        time.sleep(0.1)
    done.set()
    for t in threads:
        t.join(timeout=10)
    reaper.stop()
    assert board.outstanding() == 0, "the room did not finish its jobs"

    ledger = calls(admin, ROOM)
    enqueued = {c.job_id for c in ledger if c.verb == "enqueue"} - earlier
    mine = [c for c in ledger if c.job_id in enqueued or c.verb in ("reap", "promote")]
    verdict = audit(mine, snapshot(admin, ROOM))
    assert verdict.violations == []
    assert verdict.completed + verdict.dead == JOBS
    assert sum(d["stale"] for d in did.values()) > 0, "no stall ever met the fence"

    after = tally(admin, ROOM)
    for user in room.learners:
        counted = {k: after[user][k] - before.get(user, {}).get(k, 0) for k in after[user]}
        for name in ("claims", "completes", "stale", "retries", "extends"):
            assert counted[name] == did[user][name], (user, name)
    stale = [c for c in ledger if c.outcome == "refused"]
    assert stale and {c.actor for c in stale} <= set(room.learners)
    assert all(c.reply == "EMQSTALE" for c in stale)


def test_the_drift_check_sees_a_raw_write_at_once(room: Room, admin: redis.Redis) -> None:
    board = Board(admin, ROOM)
    board.enqueue(1)
    (job_id,) = jobs.browse(admin, ROOM, 1)
    admin.hset(keyspace.job_key(ROOM, job_id), "state", "active")  # a write outside the scripts
    kinds = {d.kind for d in board.read().drift}
    assert "state-mismatch" in kinds
    admin.hset(keyspace.job_key(ROOM, job_id), "state", "pending")
    assert list(board.read().drift) == []


def test_a_made_up_line_in_the_record_cannot_stop_the_board(room: Room,
                                                            admin: redis.Redis) -> None:
    """A learner may not write their log at all (the gateway does); even so, lines that are
    not calls, or a claim that "began" at 1 ms, leave the board and the tally standing."""
    board = Board(admin, ROOM)
    zero = dict.fromkeys(TALLY_KEYS, 0)
    before = board.read().counts.get("learner-5", zero)
    own = f"{keyspace.base(ROOM)}log:learner-5"
    with _raw(room, "learner-5") as learner, pytest.raises(redis.exceptions.NoPermissionError):
        learner.xadd(own, {"verb": "claim"})
    admin.xadd(own, {"verb": "claim"})
    admin.xadd(own, {"verb": "claim", "job": "x", "token": "many", "outcome": "accepted",
                     "reply": "claimed", "began_ms": "0", "ended_ms": "0"})
    admin.xadd(own, {"verb": "claim", "job": "JOBearly", "token": 1, "outcome": "accepted",
                     "reply": "claimed", "began_ms": "1", "ended_ms": "nan"})
    reading = board.read()
    assert reading.unreadable["learner-5"] == 3
    assert reading.counts.get("learner-5", zero) == before
    assert tally(admin, ROOM).get("learner-5", zero) == before
    admin.xadd(own, {"verb": "claim", "job": "JOBearly", "token": 1, "outcome": "accepted",
                     "reply": "claimed", "began_ms": "1", "ended_ms": "2", "lease_ms": 5})
    from echomq_lab.widgets.classroom import BoardPanel

    panel = BoardPanel(board)  # its timeline now spans decades: drawn, not raised
    assert "learner-5" in panel.picture.value
    admin.delete(own)


def test_the_board_switches_the_reaper_and_the_lease(room: Room, admin: redis.Redis) -> None:
    board = Board(admin, ROOM)
    board.set_lease(1234)
    board.set_reaper(False)
    reading = board.read()
    assert reading.lease_ms == 1234 and not reading.reaper_on
    assert join(join_link(room.url("learner-2"), ROOM)).lease_ms() == 1234
    board.set_reaper(True)
    board.set_lease(200)
    with pytest.raises(ValueError):
        board.set_lease(0)


def test_start_writes_room_json_and_removes_everything_on_sigterm(
        tmp_path: Path, valkey_tools: tuple[str, str]) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "echomq_lab.classroom", "start", "--room",
                             "cli", "--learners", "2", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    path = out / "room.json"
    assert servers.wait_until(path.exists, 30), proc.stderr.read() if proc.stderr else ""
    time.sleep(0.2)
    data = json.loads(path.read_text())
    with redis.Redis.from_url(data["learners"][0]["url"], socket_timeout=5) as learner:
        assert learner.ping()
    assert path.stat().st_mode & 0o077 == 0
    port = int(data["instructor"]["url"].rsplit(":", 1)[1].split("/")[0])
    gateway = int(data["gateway"].rsplit(":", 1)[1])
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    assert not path.exists()
    assert servers.wait_until(lambda: not _listening(port) and not _listening(gateway), 10)
    assert not (out / "server").exists() and not (out / "room-state.json").exists()


def test_a_learner_panel_joins_by_link_and_says_a_bad_link_in_one_line(room: Room,
                                                                       admin: redis.Redis) -> None:
    from echomq_lab.widgets.classroom import LearnerPanel

    panel = LearnerPanel()
    assert panel.practice is not None and "practice room" in panel.text()
    panel.link.value = "redis://not-a-join-link"
    panel.join_button.click()
    assert not panel.last_ok and "not a join link" in panel.last_message
    assert panel.practice is not None  # nothing changed
    panel.link.value = join_link(room.url("learner-4"), ROOM).replace("@", "x@", 1)
    panel.join_button.click()
    assert not panel.last_ok and "\n" not in panel.last_message
    panel.link.value = join_link(room.url("learner-4"), ROOM)
    panel.join_button.click()
    assert panel.last_ok and panel.desk.actor == "learner-4" and panel.practice is None
    Board(admin, ROOM).set_lease(5000)
    Board(admin, ROOM).enqueue(1)
    panel.buttons["claim"].click()
    assert panel.last_message.startswith("✓ claimed") or "claimed" in panel.last_message
    panel.buttons["complete"].click()
    assert "completed" in panel.last_message
    assert panel.counts()["completes"] >= 1
    Board(admin, ROOM).set_lease(200)


def test_the_board_panel_shows_a_raw_write_at_its_next_tick(room: Room,
                                                             admin: redis.Redis) -> None:
    from echomq_lab.widgets.classroom import BoardPanel

    board = Board(admin, ROOM)
    panel = BoardPanel(board, every_s=0.0)
    assert "rows and sets agree" in panel.text()
    board.enqueue(1)
    (job_id,) = jobs.browse(admin, ROOM, 1)
    admin.hset(keyspace.job_key(ROOM, job_id), "state", "dead")  # outside the scripts
    panel.ticker.tick()
    assert "state-mismatch" in panel.text() and job_id in panel.text()
    admin.hset(keyspace.job_key(ROOM, job_id), "state", "pending")
    panel.ticker.tick()
    assert "rows and sets agree" in panel.text()
    panel.reaper.value = False
    assert not board.read().reaper_on and "paused" in panel.text()
    panel.reaper.value = True


def test_a_storm_of_stalls_is_refused_by_name(room: Room, admin: redis.Redis) -> None:
    board = Board(admin, ROOM)
    reaper = Reaper(room.admin, ROOM, every_s=0.02).start()
    board.set_lease(100)
    board.enqueue(6)
    board.storm(workers=2, seconds=1.5)
    while board.storming():
        time.sleep(0.1)
    reaper.stop()
    board.set_lease(200)
    refused = board.read().stale_by_learner
    assert refused.get("storm-1", 0) + refused.get("storm-2", 0) > 0
    with pytest.raises(ValueError):
        board.storm(workers=0)


def test_the_gateway_maps_each_page_to_its_own_user(room: Room) -> None:
    from websockets.sync.client import connect

    for user in room.learners[:2]:
        with connect(room.gateway_url) as ws:
            ws.send(json.dumps({"user": user, "password": room.passwords[user]}))
            assert json.loads(ws.recv()) == {"ok": True, "user": user}
            ws.send(b"*2\r\n$6\r\nCLIENT\r\n$7\r\nGETNAME\r\n")
            assert ws.recv().startswith(b"-NOPERM")
            ws.send(b"*1\r\n$8\r\nFLUSHALL\r\n")
            assert ws.recv().startswith(b"-NOPERM this room runs only the lab's calls")
            ws.send(b"*1\r\n$4\r\nPING\r\n")
            assert ws.recv() == b"+PONG\r\n"
    for hello in (json.dumps({"user": "learner-1", "password": "wrong"}), "hello"):
        with connect(room.gateway_url) as ws:
            ws.send(hello)
            answer = json.loads(ws.recv())
            assert answer["ok"] is False and answer["error"]


class _SyncWebSocket:
    """The browser's WebSocket as a :class:`echomq_lab.browser.websocket.Transport`, played by
    the ``websockets`` package's client: the same connection class runs over it outside the
    browser."""

    def __init__(self, url: str, timeout: float | None) -> None:
        from websockets.sync.client import connect

        self._open = contextlib.ExitStack()
        self.ws = self._open.enter_context(connect(url, open_timeout=timeout))

    def send(self, data: str | bytes) -> None:
        self.ws.send(data)

    def receive(self, timeout: float | None) -> str | bytes | None:
        from websockets.exceptions import ConnectionClosed

        try:
            return self.ws.recv(timeout)
        except TimeoutError:
            return None
        except ConnectionClosed:
            return b""

    def close(self) -> None:
        self._open.close()


@pytest.fixture(scope="module")
def gateway(room: Room) -> str:
    """The WebSocket side of the room's gateway."""
    return room.gateway_url


def test_a_join_link_names_the_gateway_when_the_room_runs_one(room: Room, tmp_path: Path) -> None:
    link = join_link(room.url("learner-1"), ROOM, "ws://127.0.0.1:4000")
    assert link.endswith(f"/{ROOM}?gateway=ws://127.0.0.1:4000")
    seat = parse_link(link)
    assert (seat.gateway, seat.url, seat.password) == (
        "ws://127.0.0.1:4000", room.url("learner-1"), room.passwords["learner-1"])
    assert parse_link(join_link(room.url("learner-1"), ROOM)).gateway == ""
    for bad in ("http://h:1", "ws://h:port", "ws://", "h:1"):
        with pytest.raises(ValueError, match="gateway should look like ws://host:port"):
            parse_link(f"{join_link(room.url('learner-1'), ROOM)}?gateway={bad}")
    data = json.loads(room.write(tmp_path).read_text())
    assert data["gateway"] == room.gateway_url
    assert all(parse_link(s["link"]).gateway == data["gateway"] for s in data["learners"])


def test_a_desk_joins_through_the_gateway_as_its_own_user(room: Room, admin: redis.Redis,
                                                          gateway: str) -> None:
    """The browser's way in, played outside the browser: the learner's own ACL user on the
    server, the real handles through it, and a wrong password one line that changes nothing."""
    from echomq_lab import errors

    link = join_link(room.url("learner-5"), ROOM, gateway)
    Board(admin, ROOM).set_lease(5000)
    try:
        Board(admin, ROOM).enqueue(1)
        desk = join(link, opener=_SyncWebSocket)
        assert any(c.get("user") == "learner-5" for c in admin.client_list())
        answer = desk.claim()
        assert answer.outcome == "accepted" and answer.words.startswith("claimed")
        row = admin.hgetall(keyspace.job_key(ROOM, answer.job_id))
        assert int(row[b"attempts"]) == answer.token
        mine = [c for c in calls(admin, ROOM, ["learner-5"]) if c.job_id == answer.job_id]
        assert [(c.verb, c.outcome) for c in mine] == [("claim", "accepted")]
        assert desk.complete().outcome == "accepted"
        assert describe(desk.conn) == gateway  # what a lost call's message names
    finally:
        Board(admin, ROOM).set_lease(200)
    straight = join(link)  # outside the browser the same link reaches the gateway's TCP side
    assert describe(straight.conn).startswith("redis://") and straight.conn.ping()
    straight.conn.close()
    before = (tally(admin, ROOM), admin.xlen(f"{keyspace.base(ROOM)}log:learner-5"))
    wrong = link.replace(room.passwords["learner-5"], "not-the-password")
    with pytest.raises(errors.AuthFailed) as refused:
        join(wrong, opener=_SyncWebSocket)
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"authentication failed at {gateway}: WRONGPASS")
    assert (tally(admin, ROOM), admin.xlen(f"{keyspace.base(ROOM)}log:learner-5")) == before
    with pytest.raises(errors.ServerUnavailable, match="no gateway answered"):
        join(join_link(room.url("learner-5"), ROOM, f"ws://127.0.0.1:{servers.free_port()}"),
             opener=_SyncWebSocket)


def test_in_the_browser_a_link_without_a_gateway_says_so(monkeypatch: pytest.MonkeyPatch,
                                                          room: Room) -> None:
    from echomq_lab.browser import websocket
    from echomq_lab.classroom.desk import client

    monkeypatch.setattr(websocket, "IN_BROWSER", True)
    with pytest.raises(ValueError, match="ask your instructor for the link that ends in"):
        client(parse_link(join_link(room.url("learner-2"), ROOM)))


def test_the_board_reads_a_relative_room_json_from_where_the_command_ran(
        room: Room, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ECHOMQ_ROOM_JSON=room/room.json voila notebooks/board-the-workshop.ipynb`` from the
    repository's root: the kernel runs in ``notebooks/``, the shell's PWD is the root."""
    from echomq_lab.widgets.classroom import board_from

    room.write(tmp_path / "room")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    monkeypatch.setenv("PWD", str(tmp_path))
    panel = board_from("room/room.json")
    if panel.ticker.running:
        panel.ticker.toggle()
    assert panel.board.room == ROOM and "drift check" in panel.text()


def test_the_practice_room_says_only_what_happened() -> None:
    from echomq_lab.classroom.practice import practice

    p = practice()
    for _ in range(3):  # the classmate still holds the last round's job the second time
        held = p.you.claim()
        p.you.stall()
        said = p.stalled()
        mate = p.classmate.held
        assert mate is not None
        if mate.id == held.job_id:
            assert said.endswith(f"learner-2 claimed it with token {mate.token}")
        else:
            assert f"learner-2 claimed {mate.id}, another job" in said
        assert p.you.complete().reply == "EMQSTALE"


def test_the_tally_names_every_learner_even_one_without_a_call(valkey_tools: tuple[str, str]
                                                                ) -> None:
    with open_room("quiet", 3) as quiet, quiet.admin() as admin:
        counted = tally(admin, "quiet")
    assert list(counted) == ["learner-1", "learner-2", "learner-3"]
    assert all(c == dict.fromkeys(TALLY_KEYS, 0) for c in counted.values())


def test_a_learner_press_shows_at_once_that_it_was_taken() -> None:
    """In the practice room, a press says "running…" with its button closed before the call
    runs, and the cue is gone once the call has answered."""
    from echomq_lab.widgets.classroom import LearnerPanel

    panel = LearnerPanel()
    claim = panel.buttons["claim"]
    seen: list[tuple[bool, str, bool]] = []
    panel.message.observe(lambda change: seen.append(
        (claim.disabled, str(change["new"]), panel.busy)), names="value")
    claim.click()
    first = seen[0]
    assert not first[0] and first[2] and "running…" in first[1]  # busy, never disabled
    assert not panel.busy and "emq-busy" not in panel.widget._dom_classes
    assert "running…" not in panel.message.value and "claimed" in panel.last_message
