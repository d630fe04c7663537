"""A crowded room, through the gateway: a class of 500 behind one address (a lab's Wi-Fi) all
log in, while a flood of sockets that never log in is held to its share; a learner flooding
their WebSocket with pings is read at their pace, not faster, and everyone else still gets in.
No assertion waits on a clock: the pace is checked as an upper bound (a slow machine only
lowers it); another learner's latency under a flood is measured in ``benchmarks.classroom``.
On a real Valkey."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from echomq_lab.classroom import Room, open_room
from echomq_lab.classroom.gateway import Limits
from echomq_lab.classroom.pace import BEFORE_LOGIN
from echomq_lab.classroom.resp import command

ROOM = "crowd"
CLASS = 500
LIMITS = Limits(login_s=30.0)


@pytest.fixture(scope="module")
def room(valkey_tools: tuple[str, str]) -> Iterator[Room]:
    with open_room(ROOM, CLASS, lease_ms=60_000, limits=LIMITS) as opened:
        yield opened


def _log_in(room: Room, user: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", room.port), timeout=30)
    sock.sendall(command("AUTH", user, room.passwords[user]))
    said = sock.recv(200)
    assert said == b"+OK\r\n", (user, said)
    return sock


def test_a_class_behind_one_address_joins_while_a_flood_is_held_to_its_share(
        room: Room) -> None:
    flood: list[socket.socket] = []
    refused = 0
    try:
        for _ in range(LIMITS.waiting_per_address + 20):  # never log in, from one address
            sock = socket.socket()
            sock.bind(("127.0.0.2", 0))
            sock.connect(("127.0.0.1", room.port))
            flood.append(sock)
        for sock in flood[-20:]:
            sock.settimeout(10)
            refused += sock.recv(200).startswith(b"-ERR too many sockets from your address")
        assert refused == 20  # the flood holds its address's share, no more
        joined: list[socket.socket] = []
        lock = threading.Lock()

        def join(users: list[str]) -> None:
            for user in users:
                sock = _log_in(room, user)
                with lock:
                    joined.append(sock)

        users = room.learners
        threads = [threading.Thread(target=join, args=(users[i::10],)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert len(joined) == CLASS  # every learner of the class, from 127.0.0.1, got in
        joined[0].sendall(command("PING"))
        assert joined[0].recv(100) == b"+PONG\r\n"
        for sock in joined:
            sock.close()
    finally:
        for sock in flood:
            sock.close()


def test_a_ping_flood_is_read_at_the_learners_pace_and_others_still_get_in(
        room: Room) -> None:
    from websockets.sync.client import connect

    user = "learner-7"
    with connect(room.gateway_url, open_timeout=10) as ws:  # type: ignore[arg-type]
        ws.send(json.dumps({"user": user, "password": room.passwords[user]}))
        assert json.loads(ws.recv())["ok"] is True
        began = time.monotonic()
        pings = 3000
        waiters = [ws.ping(str(n).encode()) for n in range(pings)]
        time.sleep(1.0)
        answered = sum(1 for w in waiters if w.is_set())
        elapsed = time.monotonic() - began
        # a bucket of `burst` plus `per_s` a second: the gateway cannot have answered more
        most = LIMITS.burst + LIMITS.per_s * elapsed + 2 * sum(BEFORE_LOGIN)
        assert 0 < answered <= most < pings, (answered, most)
        with redis.Redis.from_url(room.url("learner-8"), socket_timeout=10) as other:
            assert other.ping()  # another learner is served meanwhile
        ws.send(command("PING"))  # the flooder's own socket still works, at its pace
        assert ws.recv(timeout=60) == b"+PONG\r\n"
