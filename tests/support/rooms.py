"""A room run as the instructor runs it (``python -m echomq_lab.classroom ...``, a process of
its own in a session of its own), for the tests that kill, resume and stop it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import redis

from echomq_lab import keyspace, servers
from echomq_lab.classroom import Room


class Said:
    """What a room's process prints (stdout and stderr), collected as it comes."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def has(self, part: str) -> bool:
        return any(part in line for line in self.lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def run_room(*args: str) -> subprocess.Popen[str]:
    """``python -m echomq_lab.classroom ARGS`` in a session (and process group) of its own."""
    return subprocess.Popen([sys.executable, "-m", "echomq_lab.classroom", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def up(data: dict[str, Any]) -> bool:
    """True once the first learner's link logs in and pings through the gateway."""
    seat = data["learners"][0]
    try:
        with redis.Redis.from_url(seat["url"], socket_timeout=2) as learner:
            return bool(learner.ping())
    except redis.RedisError:
        return False


def wait_for_room(out: Path, proc: subprocess.Popen[str]) -> dict[str, Any]:
    """``room.json`` of the room in ``out`` once a learner gets through its gateway."""
    path = out / "room.json"
    ready = servers.wait_until(lambda: path.exists() and up(json.loads(path.read_text())),
                               30, 0.2)
    assert ready, proc.stdout.read() if proc.poll() is not None and proc.stdout else ""
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def learner(room: Room, user: str = "learner-1") -> redis.Redis:
    """A client of ``room``'s gateway, logged in as ``user`` (the link a learner is given)."""
    return redis.Redis.from_url(room.url(user), socket_timeout=5)


def admin(data: dict[str, Any]) -> redis.Redis:
    return redis.Redis.from_url(data["instructor"]["url"], socket_timeout=5)


def pending(data: dict[str, Any], room: str) -> int:
    with admin(data) as conn:
        return int(conn.zcard(keyspace.keys(room).pending))
