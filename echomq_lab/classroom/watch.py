"""The room watches its server: a thread of the instructor's process that pings it, says in the
instructor's terminal when it stops answering, and starts it again from its append-only file
(same port, same users from the ACL file, the protocol's scripts loaded again), then says how
many jobs it came back with. Learners meanwhile get "the room's server is away" from the
gateway, and their next call after it is back goes through."""

from __future__ import annotations

import threading
from collections.abc import Callable

import redis

from echomq_lab import keyspace
from echomq_lab.classroom.room import INSTRUCTOR, Room, RoomError, restart_server

#: Seconds between pings, the failed pings in a row that mean the server is gone, and how
#: long one ping may take.
EVERY_S, MISSES, PING_S = 1.0, 2, 2.0


class Watchdog:
    """Pings ``room``'s server every :data:`EVERY_S`; after :data:`MISSES` failures in a row
    it says so through ``say`` and starts the server again (and keeps trying, once a round,
    until it is back). :attr:`restarts` counts the times it brought the server back."""

    def __init__(self, room: Room, say: Callable[[str], None]) -> None:
        self.room, self.say = room, say
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"{room.name}-watch", daemon=True)
        self.restarts = 0

    def start(self) -> Watchdog:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)

    def answers(self) -> bool:
        """True when the server answers the instructor's PING now."""
        try:
            with redis.Redis.from_url(self.room.url(INSTRUCTOR), socket_timeout=PING_S,
                                      socket_connect_timeout=PING_S) as conn:
                return bool(conn.ping())
        except redis.RedisError:
            return False

    def _run(self) -> None:
        missed = 0
        while not self.stopping.wait(EVERY_S):
            if self.answers():
                missed = 0
                continue
            missed += 1
            if missed == MISSES:
                self.say(f"room {self.room.name!r}: its server on port {self.room.server_port} "
                         "is not answering: starting it again from its file")
            if missed >= MISSES and not self.stopping.is_set():
                self._restart()

    def _restart(self) -> None:
        try:
            restart_server(self.room)
        except RoomError as exc:
            self.say(f"room {self.room.name!r}: the server did not start again ({exc}); "
                     "trying again")
            return
        self.restarts += 1
        k = keyspace.keys(self.room.name)
        with self.room.admin() as conn:
            pending, active = int(conn.zcard(k.pending)), int(conn.zcard(k.active))
        self.say(f"room {self.room.name!r}: its server is back on port {self.room.server_port} "
                 f"from its file: {pending} job(s) pending, {active} leased")
