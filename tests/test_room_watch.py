"""The room as the instructor runs it, watched: its server killed, then started again by the
room itself; ``resume`` of a live room touching nothing; Ctrl-C while the server does not
answer keeping the room's file; ``room-state.json`` checked before it is obeyed; and no moment,
on ``resume``, where a connection gets in without a room's password. On a real Valkey."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from pathlib import Path

import pytest

from echomq_lab import servers
from echomq_lab.classroom import join
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.resp import Replies, command
from echomq_lab.classroom.room import STATE, Room, RoomError, resume
from tests.support.rooms import Said, admin, pending, run_room, wait_for_room

ROOM = "watched"


def _start(out: Path, jobs: int = 10) -> tuple[object, Said, dict[str, object]]:
    proc = run_room("start", "--room", ROOM, "--learners", "2", "--out", str(out))
    said = Said(proc)
    data = wait_for_room(out, proc)
    with admin(data) as conn:
        Board(conn, ROOM).enqueue(jobs)
    return proc, said, data


def _server_pid(data: dict[str, object]) -> int:
    with admin(data) as conn:
        return int(conn.info("server")["process_id"])


def _end(proc: object) -> None:
    import subprocess

    assert isinstance(proc, subprocess.Popen)
    if proc.poll() is None:  # Ctrl-C: the room ends its server (its own session) itself
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_a_killed_server_is_said_and_started_again_by_the_room(
        tmp_path: Path, valkey_tools: tuple[str, str]) -> None:
    out = tmp_path / "room"
    proc, said, data = _start(out)
    try:
        first = _server_pid(data)
        os.kill(first, signal.SIGKILL)
        assert servers.wait_until(lambda: said.has("is back on port"), 60, 0.2), said.text
        assert said.has("is not answering: starting it again from its file")
        assert said.has("10 job(s) pending, 0 leased")
        assert _server_pid(data) != first and pending(data, ROOM) == 10
        desk = join(data["learners"][0]["link"])  # type: ignore[index]
        claimed = desk.claim()  # through the same gateway, to the new server
        assert claimed.outcome == "accepted" and desk.complete().outcome == "accepted"
        desk.conn.close()
        os.killpg(proc.pid, signal.SIGINT)  # type: ignore[attr-defined]
        assert proc.wait(timeout=30) == 0  # type: ignore[attr-defined]
        said.thread.join(timeout=10)
        assert said.has("closed, with 9 job(s) not finished")
        assert not (out / STATE).exists()
    finally:
        _end(proc)


def _room_files(out: Path) -> dict[str, tuple[bytes, int]]:
    """The room's own files: each one's bytes and time of last change."""
    files = (out / "room.json", out / STATE)
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def test_resume_of_a_live_room_says_already_running_and_touches_nothing(
        tmp_path: Path, valkey_tools: tuple[str, str]) -> None:
    out = tmp_path / "room"
    proc, _said, data = _start(out)
    try:
        before = _room_files(out)
        server = _server_pid(data)
        again = run_room("resume", str(out))
        code = again.wait(timeout=60)
        words = again.stdout.read() if again.stdout else ""
        assert code == 2 and "already running" in words and words.count("\n") == 1, words
        assert _room_files(out) == before
        assert _server_pid(data) == server and pending(data, ROOM) == 10
        assert proc.poll() is None  # type: ignore[attr-defined]
    finally:
        _end(proc)


def test_ctrl_c_while_the_server_does_not_answer_keeps_the_room_and_its_jobs(
        tmp_path: Path, valkey_tools: tuple[str, str]) -> None:
    out = tmp_path / "room"
    proc, said, data = _start(out)
    server = _server_pid(data)
    try:
        os.kill(server, signal.SIGSTOP)  # hung: not answering, and its port still held
        assert servers.wait_until(lambda: said.has("is not answering"), 60, 0.2), said.text
        os.killpg(proc.pid, signal.SIGINT)  # type: ignore[attr-defined]
        assert proc.wait(timeout=60) == 0  # type: ignore[attr-defined]
        said.thread.join(timeout=10)
        assert said.has("its file and its folder are kept"), said.text
        assert said.has(f"resume {out}") and said.has("--discard")
        assert (out / STATE).exists() and (out / "room.json").exists()
        assert (out / "server" / "appendonlydir").is_dir()
        os.kill(server, signal.SIGCONT)
        again = run_room("resume", str(out))
        try:
            assert wait_for_room(out, again) == data
            assert pending(data, ROOM) == 10
        finally:
            os.killpg(again.pid, signal.SIGINT)
            again.wait(timeout=60)
        assert not (out / STATE).exists()
    finally:
        os.kill(server, signal.SIGCONT) if _alive(server) else None
        _end(proc)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _state(tmp_path: Path) -> dict[str, object]:
    room = Room("tampered", "127.0.0.1", "127.0.0.1",
                {"instructor": "i" * 24, "learner-1": "l" * 16}, {"learner-1": "s" * 24,
                                                                 "gateway": "g" * 24},
                servers.free_port(), servers.free_port(), servers.free_port(), tmp_path)
    return room.state()


@pytest.mark.parametrize("damage", [
    ("passwords", {"instructor": "", "learner-1": "l" * 16}),
    ("server_passwords", {"learner-1": "s" * 24}),
    ("server_passwords", {"learner-1": "short", "gateway": "g" * 24}),
    ("passwords", {"instructor": "i" * 24, "intruder": "x" * 16}),
    ("server_port", 0), ("lease_ms", "3000"), ("room", "a b"), ("origins", "http://x"),
])
def test_a_tampered_state_is_refused_in_one_line_and_nothing_starts(
        tmp_path: Path, damage: tuple[str, object]) -> None:
    state = _state(tmp_path)
    assert Room is not None and state["room"] == "tampered"
    state[damage[0]] = damage[1]
    (tmp_path / STATE).write_text(json.dumps(state))
    with pytest.raises(RoomError) as refused:
        resume(tmp_path)
    said = str(refused.value)
    assert "\n" not in said and "is damaged, so it is not obeyed" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE]  # no server, no room.json


def test_no_connection_gets_in_without_a_password_while_resume_starts_the_server(
        tmp_path: Path, valkey_tools: tuple[str, str]) -> None:
    out = tmp_path / "room"
    proc, _said, data = _start(out)
    server = _server_pid(data)
    port = json.loads((out / STATE).read_text())["server_port"]
    os.killpg(proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    proc.wait(timeout=10)  # type: ignore[attr-defined]
    os.kill(server, signal.SIGKILL)
    racing = threading.Event()
    answers: list[object] = []
    tries = [0]
    attempts = [command("AUTH", "default", ""), command("PING"),
                command("ACL", "SETUSER", "intruder", "on", ">x", "~*", "+@all"),
                command("HELLO", "3", "AUTH", "default", "")]

    def race() -> None:
        while not racing.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                    replies = Replies()
                    sock.sendall(b"".join(attempts))
                    got: list[object] = []
                    while len(got) < len(attempts):
                        data_in = sock.recv(1 << 16)
                        if not data_in:
                            break
                        got += [r.value for r in replies.feed(data_in)]
                    tries[0] += 1
                    answers.extend(got)
            except OSError:
                continue

    thread = threading.Thread(target=race, daemon=True)
    thread.start()
    again = run_room("resume", str(out))
    try:
        wait_for_room(out, again)
        servers.wait_until(lambda: tries[0] > 20, 10, 0.05)
        racing.set()
        thread.join(timeout=10)
        assert tries[0] > 0  # the loop reached the server
        from echomq_lab.classroom.resp import Err

        accepted = [a for a in answers if not isinstance(a, Err)]
        assert accepted == [], accepted[:3]
        with admin(data) as conn:
            users = {u.decode() if isinstance(u, bytes) else u for u in conn.acl_users()}
        assert "intruder" not in users and pending(data, ROOM) == 10
    finally:
        racing.set()
        os.killpg(again.pid, signal.SIGINT)
        again.wait(timeout=60)


def test_the_server_takes_the_port_a_plan_gives_and_a_taken_one_is_refused(
        valkey_tools: tuple[str, str]) -> None:
    from echomq_lab.classroom import open_room

    planned = servers.free_port()
    with open_room(ROOM, 1, server_port=planned) as room, room.admin() as conn:
        assert room.server_port == planned and conn.ping()
        with pytest.raises(RoomError, match=f"port {planned} is in use"):
            open_room(ROOM, 1, server_port=planned)
