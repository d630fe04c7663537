"""Nothing lost when the instructor's process dies: ``start`` in a process group of its own,
jobs acknowledged, then kill -9 of that whole group (and, the second time, of the server too);
``resume DIR`` brings the same room back on the same ports with the same links and every job;
``stop DIR`` removes the room and its passwords. On a real Valkey."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from echomq_lab.classroom import join
from echomq_lab.classroom.board import Board
from tests.support.rooms import pending, run_room, wait_for_room

ROOM = "durable"


def _run(*args: str) -> subprocess.Popen[str]:
    return run_room(*args)


def _wait_for_room(out: Path, proc: subprocess.Popen[str]) -> dict[str, object]:
    return wait_for_room(out, proc)


def _pending(data: dict[str, object]) -> int:
    return pending(data, ROOM)


def test_kill_9_then_resume_finds_every_acknowledged_job(tmp_path: Path,
                                                         valkey_tools: tuple[str, str]) -> None:
    out = tmp_path / "room"
    first = _run("start", "--room", ROOM, "--learners", "3", "--out", str(out))
    data = _wait_for_room(out, first)
    assert (out / "room.json").stat().st_mode & 0o077 == 0
    with redis.Redis.from_url(data["instructor"]["url"], socket_timeout=5) as admin:  # type: ignore[index]
        Board(admin, ROOM).enqueue(20)
        server_pid = int(admin.info("server")["process_id"])
    desk = join(data["learners"][0]["link"])  # type: ignore[index]
    assert desk.claim().outcome == "accepted" and desk.complete().outcome == "accepted"
    desk.conn.close()
    time.sleep(2.0)  # "acknowledged a couple of seconds earlier"
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)

    second = _run("resume", str(out))
    try:
        again = _wait_for_room(out, second)
        assert again == data  # the same ports, learners and links
        assert _pending(again) == 19
        with redis.Redis.from_url(data["instructor"]["url"], socket_timeout=5) as admin:  # type: ignore[index]
            assert int(admin.info("server")["process_id"]) == server_pid  # it outlived its starter
        os.kill(server_pid, signal.SIGKILL)  # now the server dies too: its file brings it back
        os.killpg(second.pid, signal.SIGKILL)
        second.wait(timeout=10)
        third = _run("resume", str(out))
        try:
            assert _wait_for_room(out, third) == data
            assert _pending(data) == 19
            desk = join(data["learners"][1]["link"])  # type: ignore[index]
            claimed = desk.claim()
            assert claimed.outcome == "accepted" and desk.complete().outcome == "accepted"
            desk.conn.close()
            stopped = subprocess.run([sys.executable, "-m", "echomq_lab.classroom", "stop",
                                      str(out)], capture_output=True, text=True, timeout=60)
            assert stopped.returncode == 0, stopped.stderr
            assert third.wait(timeout=20) == 0
        finally:
            if third.poll() is None:
                os.killpg(third.pid, signal.SIGKILL)
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
    assert not (out / "room.json").exists() and not (out / "room-state.json").exists()
    assert not (out / "server").exists()
    with redis.Redis.from_url(data["instructor"]["url"], socket_timeout=2) as admin:  # type: ignore[index]
        try:
            admin.ping()
            alive = True
        except redis.ConnectionError:
            alive = False
    assert not alive
