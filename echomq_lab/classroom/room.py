"""A room: one real Valkey, an ACL user per learner and one for the instructor, ``room.json``.

Every learner works the room's one queue (the room's name is the queue), so they contend for
the same jobs. A learner's user may read every key of the room, write only the queue's sets,
its rows and the learner's own log stream, and run only the commands the transitions' scripts
and the pages' reads need (:data:`LEARNER_COMMANDS`). The default user is switched off, the
server evicts nothing, and ``maxclients`` fits the room.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import redis

from echomq_lab import keyspace, scripts, servers
from echomq_lab.scripts import VIEWS
from echomq_lab.transitions import SCRIPTS

#: The commands a learner's user may send: the scripts (EVALSHA, and SCRIPT LOAD on first use),
#: what those scripts run inside (every command a script runs is checked against the caller),
#: the pages' reads, and the learner's own log. No SCRIPT FLUSH/KILL, no KEYS, SCAN or CONFIG.
LEARNER_COMMANDS: tuple[str, ...] = (
    "evalsha", "script|load",
    "ping", "time", "client|setname", "client|setinfo",
    "hincrby", "hset", "hget", "hmget", "hgetall", "hdel", "del", "exists", "type",
    "zadd", "zrem", "zrange", "zscore", "zcard",
    "multi", "exec", "discard",
    "xadd", "xrange", "xlen",
)  # fmt: skip
#: Clients a room allows per learner (a page may hold a few), and for the instructor's side.
CLIENTS_PER_LEARNER = 4
INSTRUCTOR_CLIENTS = 32
INSTRUCTOR = "instructor"
#: The room's settings hash (lease length, the reaper on or off), written by the instructor.
CTL = "ctl"
DEFAULT_LEASE_MS = 3000
MAX_LEARNERS = 500
JOIN_SCHEME = "echomq"
#: How many kinds of ACL refusal the server remembers (each with its count).
ACL_LOG_LEN = 1000


class RoomError(RuntimeError):
    """A room could not be opened or joined; ``str()`` is one line."""


def learner_name(n: int) -> str:
    """``learner-<n>``, the user name of the ``n``-th learner (from 1)."""
    return f"learner-{n}"


def log_key(room: str, actor: str) -> str:
    """The stream where ``actor`` (a learner, the instructor, the reaper) logs its calls."""
    return f"{keyspace.base(room)}log:{actor}"


def ctl_key(room: str) -> str:
    """The room's settings hash: ``lease_ms``, ``reaper`` (``on``/``off``), ``t0_ms``."""
    return keyspace.base(room) + CTL


def learner_rules(room: str, name: str, password: str, *, may_load: bool = True) -> list[str]:
    """The ``ACL SETUSER`` rules of learner ``name``: read the room, write the queue and the
    learner's own log, nothing else anywhere. Without ``may_load`` the learner may run only the
    scripts already loaded (the room loads the protocol's when it opens): no Lua of their own."""
    k = keyspace.keys(room)
    writes = [*k.sets, k.rows + "*", log_key(room, name)]
    commands = [c for c in LEARNER_COMMANDS if may_load or c != "script|load"]
    return ["reset", "on", f">{password}", "resetchannels", "-@all",
            *(f"+{c}" for c in commands),
            f"%R~{k.base}*", *(f"%RW~{key}" for key in writes)]


def instructor_rules(password: str) -> list[str]:
    """The instructor may do anything (the board reads ACL LOG and CLIENT LIST)."""
    return ["reset", "on", f">{password}", "~*", "&*", "+@all"]


def url_of(user: str, password: str, host: str, port: int) -> str:
    """``redis://user:password@host:port/0`` (an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"redis://{quote(user, safe='')}:{quote(password, safe='')}@{shown}:{port}/0"


def join_link(url: str, room: str, gateway: str = "") -> str:
    """The link a learner pastes into a page: the server URL with the room in place of the db,
    ``echomq://learner-1:secret@host:port/ROOM``, and ``?gateway=ws://host:port`` after it when
    the room runs a WebSocket gateway (the way in for a page in the browser)."""
    parts = urlsplit(url)
    query = f"gateway={quote(gateway, safe=':/[]')}" if gateway else ""
    return parts._replace(scheme=JOIN_SCHEME, path=f"/{room}", query=query).geturl()


@dataclass(frozen=True)
class Seat:
    """What a join link says: the server URL for the user, the room (its queue), the user, and
    the room's WebSocket gateway ("" when the link names none)."""

    url: str
    room: str
    name: str
    gateway: str = ""

    @property
    def password(self) -> str:
        return unquote(urlsplit(self.url).password or "")


def _gateway_of(query: str) -> str:
    """The ``gateway`` a join link's query names ("" for none); ValueError unless it reads
    ``ws://host:port`` (or ``wss://``)."""
    named = parse_qs(query).get("gateway", [""])[-1]
    if not named:
        return ""
    parts = urlsplit(named)
    try:
        good = parts.scheme in ("ws", "wss") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number
        good = False
    if not good:
        raise ValueError("that join link is damaged: its gateway should look like "
                         "ws://host:port")
    return named


def parse_link(link: str) -> Seat:
    """The :class:`Seat` of a join link; ValueError in one line for anything else."""
    if not isinstance(link, str):
        raise TypeError(f"a join link is text, not {type(link).__name__}")
    parts = urlsplit(link.strip())
    room = parts.path.strip("/")
    if parts.scheme != JOIN_SCHEME or not parts.username or not parts.password or not room:
        raise ValueError("that is not a join link: it looks like "
                         "echomq://learner-1:secret@host:port/room")
    try:
        keyspace.check_queue(room)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"that join link is damaged: {exc}") from None
    host = parts.hostname or ""
    url = url_of(unquote(parts.username), unquote(parts.password), host, port or 6379)
    return Seat(url, room, unquote(parts.username), _gateway_of(parts.query))


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass
class Room:
    """A running room: its server, its users' passwords, where learners connect (``host``)."""

    name: str
    server: servers.RunningServer
    host: str
    passwords: dict[str, str]
    #: The WebSocket gateway's URL, when one runs beside the server (see :mod:`.gateway`).
    gateway: str = ""

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def learners(self) -> list[str]:
        return [n for n in self.passwords if n != INSTRUCTOR]

    def url(self, user: str) -> str:
        """The URL ``user`` connects with."""
        return url_of(user, self.passwords[user], self.host, self.port)

    def admin(self) -> redis.Redis:
        """A client of the instructor's on the loopback side of the server."""
        return redis.Redis.from_url(url_of(INSTRUCTOR, self.passwords[INSTRUCTOR], "127.0.0.1",
                                           self.port), socket_timeout=10)

    def manifest(self) -> dict[str, Any]:
        """What ``room.json`` holds: the room, the instructor's URL, each learner's seat (and
        the gateway's URL, for pages in the browser, when one runs)."""
        return {
            "room": self.name, **({"gateway": self.gateway} if self.gateway else {}),
            "instructor": {"url": self.url(INSTRUCTOR)},
            "learners": [{"name": n, "url": self.url(n), "queue": self.name,
                          "link": join_link(self.url(n), self.name, self.gateway)}
                         for n in self.learners],
        }

    def write(self, folder: str | Path) -> Path:
        """Write ``room.json`` into ``folder`` (made if missing, readable by its owner only)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "room.json"
        path.touch(mode=0o600)
        path.chmod(0o600)  # an older file keeps its mode through touch
        path.write_text(json.dumps(self.manifest(), indent=1) + "\n", encoding="utf-8")
        return path

    def stop(self) -> None:
        """Stop the server and remove its folder; idempotent."""
        self.server.stop()

    def __enter__(self) -> Room:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _start(host: str, port: int | None, maxclients: int) -> servers.RunningServer:
    """One Valkey through the launcher's parts, on ``port`` (a free one when None), listening
    on ``host`` and on loopback, evicting nothing."""
    binary, version = servers.which_binary("valkey")
    port = servers.free_port() if port is None else port
    if not servers.port_free(port):
        raise RoomError(f"port {port} is in use")
    folder = Path(tempfile.mkdtemp(prefix=f"echomq-room-{port}-"))
    binds = ["127.0.0.1"] if _loopback(host) else [host, "127.0.0.1"]
    argv = servers.server_argv(binary, port, folder, "--bind", *binds,
                               "--maxmemory-policy", "noeviction", "--maxclients",
                               str(maxclients), "--acllog-max-len", str(ACL_LOG_LEN))
    server = servers.RunningServer("valkey", f"redis://127.0.0.1:{port}/0", port,
                                   servers.spawn(argv, folder / "server.log"), version, binary,
                                   folder, argv)
    try:
        server.wait_ping(servers.START_TIMEOUT_S, "server.log")
    except servers.ServerStartError:
        server.stop()
        raise
    return server


def open_room(name: str, learners: int, *, host: str = "127.0.0.1", port: int | None = None,
              advertise: str | None = None, lease_ms: int = DEFAULT_LEASE_MS,
              may_load: bool = True) -> Room:
    """Start a room of ``learners`` learners on a new Valkey; the caller stops it.

    ``host`` is where the server listens (loopback unless a room's network is meant);
    ``advertise`` the address written into the URLs (``host`` by default). The protocol's
    scripts are loaded at once; with ``may_load=False`` learners may load no script of their
    own (a script of theirs that never ends would hold up the whole room)."""
    keyspace.check_queue(name)
    if not isinstance(learners, int) or not 1 <= learners <= MAX_LEARNERS:
        raise ValueError(f"learners must be a whole number from 1 to {MAX_LEARNERS}")
    if advertise is None and host in ("0.0.0.0", "::"):
        raise RoomError("listening on every address: say which one learners reach with "
                        "--advertise ADDRESS")
    try:
        server = _start(host, port, learners * CLIENTS_PER_LEARNER + INSTRUCTOR_CLIENTS)
    except servers.ServerStartError as exc:
        raise RoomError(str(exc).splitlines()[0]) from None
    passwords = {INSTRUCTOR: secrets.token_urlsafe(18)}
    passwords |= {learner_name(n): secrets.token_urlsafe(12) for n in range(1, learners + 1)}
    room = Room(name, server, advertise or host, passwords)
    try:
        _configure(room, lease_ms, may_load)
    except BaseException:
        room.stop()
        raise
    return room


def _configure(room: Room, lease_ms: int, may_load: bool) -> None:
    """Create the users, load the protocol's scripts, write the room's settings, then switch
    the default user off."""
    with redis.Redis(host="127.0.0.1", port=room.port, socket_timeout=10) as first:
        first.execute_command("ACL", "SETUSER", INSTRUCTOR,
                              *instructor_rules(room.passwords[INSTRUCTOR]))
        for user in room.learners:
            rules = learner_rules(room.name, user, room.passwords[user], may_load=may_load)
            first.execute_command("ACL", "SETUSER", user, *rules)
        for name in (*SCRIPTS, *VIEWS):
            scripts.load(name).load_into(first)
    with room.admin() as admin:
        now_s, now_us = admin.time()
        admin.hset(ctl_key(room.name), mapping={"lease_ms": lease_ms, "reaper": "on",
                                                "t0_ms": int(now_s) * 1000 + int(now_us) // 1000})
        admin.execute_command("ACL", "SETUSER", "default", "reset", "off")
        admin.execute_command("ACL", "LOG", "RESET")
