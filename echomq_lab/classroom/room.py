"""A room: one real Valkey on loopback, its gateway (:mod:`.gateway`, the learners' one way
in), an ACL user per learner, one for the gateway and one for the instructor, ``room.json``.

Every learner works the room's one queue (the room's name is the queue), so they contend for
the same jobs. The gateway passes on only the lab's calls; behind it, as a second wall, a
learner's user may read every key of the room, write only the queue's sets and rows, and run
only EVALSHA and the reads (:data:`LEARNER_COMMANDS`: the commands the scripts run inside are
checked against the caller too). The default user is switched off, the server keeps an
append-only file in the room's folder, evicts nothing, and outlives the process that started it
(:func:`resume` brings the same room back; :func:`stop_room` ends it for good).
"""

from __future__ import annotations

import atexit
import hashlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, quote, unquote, urlsplit

import redis

from echomq_lab import keyspace, scripts, servers
from echomq_lab.classroom import bounds
from echomq_lab.classroom.record import ctl_key
from echomq_lab.scripts import VIEWS
from echomq_lab.transitions import SCRIPTS

if TYPE_CHECKING:
    from echomq_lab.classroom.gateway import Gateway

#: The commands a learner's user may send: EVALSHA, what the scripts run inside (every command
#: a script runs is checked against the caller) and the pages' reads. No SCRIPT LOAD (no Lua of
#: a learner's), no XADD (the gateway writes the record), no CLIENT SETNAME, KEYS, SCAN, CONFIG.
LEARNER_COMMANDS: tuple[str, ...] = (
    "evalsha", "ping", "time",
    "hincrby", "hset", "hget", "hmget", "hgetall", "hdel", "del", "exists", "type",
    "zadd", "zrem", "zrange", "zscore", "zcard", "xrange", "xlen",
)  # fmt: skip
#: Connections the gateway allows each learner (a page may hold a few), and the ones the
#: server keeps for the instructor's side (the board, the reaper, the instructor's kernel).
CLIENTS_PER_LEARNER = 4
INSTRUCTOR_CLIENTS = 32
INSTRUCTOR = "instructor"
GATEWAY = "gateway"
DEFAULT_LEASE_MS = bounds.DEFAULT_LEASE_MS
MAX_LEARNERS = 1000
JOIN_SCHEME = "echomq"
#: How many kinds of ACL refusal the server remembers (each with its count).
ACL_LOG_LEN = 1000
#: The server's memory: a floor, and more per learner (their logs grow with every call).
MEMORY_MB, MEMORY_MB_PER_LEARNER = 256, 2
#: Where a room's folder keeps what ``resume`` needs (passwords included: the owner's only).
STATE = "room-state.json"
#: The server's users, in the room's server folder: read by the server before it listens.
ACL_FILE = "users.acl"
#: What a password in ``room-state.json`` must look like (as the room makes them).
PASSWORD = re.compile(r"[A-Za-z0-9_-]{16,128}")
#: Page origins the gateway trusts by default: pages served from this machine (the site run
#: locally, a notebook server); ``--origin`` names others.
LOCAL_ORIGINS: tuple[str, ...] = ("http://127.0.0.1", "http://localhost")


class RoomError(RuntimeError):
    """A room could not be opened or joined; ``str()`` is one line."""


def learner_name(n: int) -> str:
    """``learner-<n>``, the user name of the ``n``-th learner (from 1)."""
    return f"learner-{n}"


def learner_rules(room: str, name: str, password: str) -> list[str]:
    """The ``ACL SETUSER`` rules of learner ``name`` (the second wall, behind the gateway):
    read the room, write the queue's sets and rows, nothing else anywhere, no Lua of their own."""
    k = keyspace.keys(room)
    writes = [*k.sets, k.rows + "*"]
    return ["reset", "on", f">{password}", "resetchannels", "-@all",
            *(f"+{c}" for c in LEARNER_COMMANDS),
            f"%R~{k.base}*", *(f"%RW~{key}" for key in writes)]


def gateway_rules(room: str, password: str) -> list[str]:
    """The gateway's own user: it appends to the room's record (the logs, the refusals'
    counts) and reads the server's memory (INFO: it stops taking calls before the room fills)."""
    base = keyspace.base(room)
    return ["reset", "on", f">{password}", "resetchannels", "-@all", "+xadd", "+hincrby",
            "+ping", "+info", "+client|setinfo", f"%W~{base}log:*", f"%RW~{base}gate:*"]


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


def _listening(port: int) -> bool:
    """True when something accepts connections on 127.0.0.1:``port`` (a port a dead server
    left in TIME_WAIT cannot be bound by us, yet a server may listen there again)."""
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _private_file(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, readable by its owner only (from the first byte on)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older file keeps its mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    return path


@dataclass
class Room:
    """A running room: its server on loopback at ``server_port``, its gateway (TCP at
    ``port``, WebSocket at ``ws_port``, on ``listen``; ``host`` is the address learners reach),
    the link passwords (what learners hold), the server passwords (what the gateway logs in
    with), and the folder that keeps it (its append-only file, ``room.json``)."""

    name: str
    host: str
    listen: str
    passwords: dict[str, str]
    server_passwords: dict[str, str]
    server_port: int
    port: int
    ws_port: int
    folder: Path
    lease_ms: int = DEFAULT_LEASE_MS
    origins: tuple[str, ...] = LOCAL_ORIGINS
    owned: bool = True
    #: The gateway's limits (its defaults when None).
    limits: Any = None
    server: servers.RunningServer | None = None
    gateway: Gateway | None = field(default=None, repr=False)

    @property
    def learners(self) -> list[str]:
        return [n for n in self.passwords if n != INSTRUCTOR]

    @property
    def gateway_url(self) -> str:
        """The WebSocket side of the gateway, as learners reach it."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{shown}:{self.ws_port}"

    @property
    def label(self) -> str:
        return self.server.label if self.server is not None else "valkey-server (resumed)"

    def url(self, user: str) -> str:
        """The URL ``user`` connects with: a learner's reaches the gateway, the instructor's
        the server itself (on loopback)."""
        if user == INSTRUCTOR:
            return url_of(INSTRUCTOR, self.passwords[INSTRUCTOR], "127.0.0.1", self.server_port)
        return url_of(user, self.passwords[user], self.host, self.port)

    def admin(self) -> redis.Redis:
        """A client of the instructor's on the server."""
        return redis.Redis.from_url(self.url(INSTRUCTOR), socket_timeout=10)

    def manifest(self) -> dict[str, Any]:
        """What ``room.json`` holds: the room, the instructor's URL, each learner's seat, and
        the gateway's WebSocket URL (for pages in the browser)."""
        return {
            "room": self.name, "gateway": self.gateway_url,
            "instructor": {"url": self.url(INSTRUCTOR)},
            "learners": [{"name": n, "url": self.url(n), "queue": self.name,
                          "link": join_link(self.url(n), self.name, self.gateway_url)}
                         for n in self.learners],
        }

    def state(self) -> dict[str, Any]:
        """What :func:`resume` needs to bring this room back."""
        return {"room": self.name, "host": self.host, "listen": self.listen,
                "passwords": self.passwords, "server_passwords": self.server_passwords,
                "server_port": self.server_port, "port": self.port, "ws_port": self.ws_port,
                "lease_ms": self.lease_ms, "origins": list(self.origins), "pid": os.getpid()}

    def write(self, folder: str | Path | None = None) -> Path:
        """Write ``room.json`` (and what ``resume`` needs) into ``folder`` (the room's own by
        default; made if missing), each readable by its owner only."""
        out = Path(folder) if folder is not None else self.folder
        out.mkdir(parents=True, exist_ok=True)
        _private_file(out / STATE, json.dumps(self.state(), indent=1) + "\n")
        return _private_file(out / "room.json", json.dumps(self.manifest(), indent=1) + "\n")

    def detach(self) -> None:
        """Stop the gateway, leave the server running (``resume`` finds it)."""
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None

    def stop(self, *, discard: bool = False) -> str:
        """Stop the gateway and the server, and remove what the room wrote (its passwords
        with it); idempotent. A room of a folder of its own whose server is not answering
        (its jobs are in its file, unaccounted for) keeps its folder unless ``discard``:
        what was done, in one line."""
        self.detach()
        if not (self.owned or discard or _server_alive(self)) and (
                self.folder / "server").exists():
            return (f"room {self.name!r}: its server is not answering, so its file and its "
                    f"folder are kept (the jobs are in it): `python -m echomq_lab.classroom "
                    f"resume {self.folder}` brings the room back; `python -m "
                    f"echomq_lab.classroom stop {self.folder} --discard` removes it")
        outstanding = _outstanding(self)
        _shutdown(self.server_port, self.passwords[INSTRUCTOR])
        if self.server is not None:
            self.server.stop()
        for name in ("room.json", STATE):
            (self.folder / name).unlink(missing_ok=True)
        shutil.rmtree(self.folder / "server", ignore_errors=True)
        if self.owned:
            shutil.rmtree(self.folder, ignore_errors=True)
        return (f"room {self.name!r} closed{outstanding}: server stopped, room.json and "
                "passwords removed")

    def __enter__(self) -> Room:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _outstanding(room: Room) -> str:
    """", with N job(s) not finished" when the server says so ("" for none or no answer)."""
    try:
        with room.admin() as conn:
            left = sum(int(conn.zcard(key)) for key in keyspace.keys(room.name).sets[:3])
    except redis.RedisError:
        return ""
    return f", with {left} job(s) not finished" if left else ""


def _shutdown(port: int, password: str) -> None:
    """Ask the server on ``port`` to end (it fsyncs nothing more: the room is over)."""
    try:
        with redis.Redis(host="127.0.0.1", port=port, username=INSTRUCTOR, password=password,
                         socket_timeout=5) as conn:
            conn.shutdown(nosave=True)
    except redis.RedisError:
        pass  # already gone


def _server_alive(room: Room) -> bool:
    try:
        with room.admin() as conn:
            return bool(conn.ping())
    except redis.RedisError:
        return False


def acl_lines(room: Room) -> list[str]:
    """The server's users as ACL-file lines: the default user off (no login as it), then the
    instructor, the gateway and every learner, each password as its SHA-256 (the file holds
    no password)."""
    def line(user: str, rules: list[str]) -> str:
        hashed = [f"#{hashlib.sha256(r[1:].encode()).hexdigest()}" if r.startswith(">") else r
                  for r in rules if r != "reset"]
        return " ".join(["user", user, "reset", *hashed])

    # default: off, so no one logs in as it and no connection is let in without a login;
    # it keeps every permission because the server replays its append-only file as this
    # user, and a transaction in the file would otherwise be refused on the way back
    lines = [line("default", ["off", "~*", "&*", "+@all"]),
             line(INSTRUCTOR, instructor_rules(room.passwords[INSTRUCTOR])),
             line(GATEWAY, gateway_rules(room.name, room.server_passwords[GATEWAY]))]
    return lines + [line(u, learner_rules(room.name, u, room.server_passwords[u]))
                    for u in room.learners]


def _acl_file(room: Room, folder: Path) -> Path:
    """Write the room's users where the server reads them before it listens: from its first
    second, no connection gets in without a room's password (no ``default`` user)."""
    return _private_file(folder / ACL_FILE, "\n".join(acl_lines(room)) + "\n")


def _start_server(room: Room) -> servers.RunningServer:
    """The room's Valkey on loopback at its port, in its folder (its append-only file read
    back when there is one)."""
    if _listening(room.server_port):
        raise RoomError(f"port {room.server_port} is in use")
    folder = room.folder / "server"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    learners = len(room.learners)
    extra = [*servers.durable_args(MEMORY_MB + MEMORY_MB_PER_LEARNER * learners),
             "--maxclients", str(learners * CLIENTS_PER_LEARNER + INSTRUCTOR_CLIENTS + 4),
             "--acllog-max-len", str(ACL_LOG_LEN), "--aclfile", str(_acl_file(room, folder))]
    try:
        # a room with a folder of its own outlives its starter (resume finds it); a test's or a
        # benchmark's temporary room ends with the thread that opened it
        return servers.launch("valkey", room.server_port, folder, extra,
                              own_session=not room.owned)
    except servers.ServerStartError as exc:
        raise RoomError(str(exc).splitlines()[0]) from None


def _commands(room: Room) -> frozenset[str]:
    """The names of the commands the room's server knows, lower case."""
    with room.admin() as admin:
        names = cast(list[bytes | str], admin.command_list())
    return frozenset((n.decode() if isinstance(n, bytes) else n).lower() for n in names)


def restart_server(room: Room) -> None:
    """Start ``room``'s server again from its file (it died while the room ran): the same
    port and users, the scripts loaded again. RoomError in one line when it cannot."""
    if room.server is not None:
        room.server.proc.poll()  # reap the one that died
    room.server = _start_server(room)
    try:
        _configure(room, new=False)
    except redis.RedisError as exc:
        raise RoomError(f"the server came back but could not be set up: {exc}") from None


def _start_gateway(room: Room) -> Gateway:
    from echomq_lab.classroom.gateway import Gateway, Limits, Seats

    seats = Seats(room.name, {n: room.passwords[n] for n in room.learners},
                  {n: room.server_passwords[n] for n in room.learners}, GATEWAY,
                  room.server_passwords[GATEWAY])
    try:
        return Gateway(room.server_port, seats, room.listen, room.port, room.ws_port,
                       origins=(None, *room.origins), limits=room.limits or Limits(),
                       commands=_commands(room)).start()
    except OSError as exc:
        raise RoomError(f"the gateway could not listen on {room.listen}:{room.port} and "
                        f"{room.ws_port}: {exc}") from None


def open_room(name: str, learners: int, *, host: str = "127.0.0.1", port: int | None = None,
              advertise: str | None = None, lease_ms: int = DEFAULT_LEASE_MS,
              out: str | Path | None = None, ws_port: int | None = None,
              origins: tuple[str, ...] = LOCAL_ORIGINS, limits: Any = None,
              server_port: int | None = None) -> Room:
    """Start a room of ``learners`` learners: a new Valkey on loopback and its gateway on
    ``host`` at ``port`` (TCP) and ``ws_port`` (WebSocket), free ones when None; the caller
    stops it. ``advertise`` is the address written into the links (``host`` by default);
    ``out`` the room's folder (a temporary one when None, removed at stop); ``limits`` the
    gateway's :class:`~echomq_lab.classroom.gateway.Limits`; ``server_port`` the server's
    port on loopback (a free one when None)."""
    keyspace.check_queue(name)
    if not isinstance(learners, int) or not 1 <= learners <= MAX_LEARNERS:
        raise ValueError(f"learners must be a whole number from 1 to {MAX_LEARNERS}")
    if advertise is None and host in ("0.0.0.0", "::"):
        raise RoomError("listening on every address: say which one learners reach with "
                        "--advertise ADDRESS")
    for wanted in (port, ws_port, server_port):
        if wanted is not None and not servers.port_free(wanted):
            raise RoomError(f"port {wanted} is in use")
    passwords = {INSTRUCTOR: secrets.token_urlsafe(18)}
    passwords |= {learner_name(n): secrets.token_urlsafe(12) for n in range(1, learners + 1)}
    hidden = {n: secrets.token_urlsafe(18) for n in [*passwords, GATEWAY] if n != INSTRUCTOR}
    folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="echomq-room-"))
    folder.mkdir(parents=True, exist_ok=True)
    room = Room(name, advertise or host, host, passwords, hidden,
                server_port if server_port is not None else servers.free_port(),
                port if port is not None else 0, ws_port if ws_port is not None else 0,
                folder, lease_ms, origins, owned=out is None, limits=limits)
    room.server = _start_server(room)
    if room.owned:  # a room of a test or a benchmark ends with its process
        atexit.register(room.stop)
    try:
        _configure(room, new=True)
        room.gateway = _start_gateway(room)
        room.port, room.ws_port = room.gateway.port, room.gateway.ws_port
        if out is not None:
            room.write()
    except BaseException:
        room.stop()
        raise
    return room


def resume(folder: str | Path) -> Room:
    """The room whose folder is ``folder``, back on the same ports with the same learners,
    links and jobs: its server as it runs (it outlives the process that started it), or
    started again from its append-only file; then its gateway."""
    room = read_state(folder)
    pid = int(room_pid(folder))
    if pid and pid != os.getpid() and _is_room_process(pid):
        raise RoomError(f"room {room.name!r} is already running (process {pid}): nothing was "
                        "changed")
    if not _server_alive(room):
        room.server = _start_server(room)
        _configure(room, new=False)
    try:
        room.gateway = _start_gateway(room)
        room.write()
    except BaseException:
        room.detach()
        raise
    return room


def read_state(folder: str | Path) -> Room:
    """The room ``folder``'s ``room-state.json`` describes, checked before anything obeys it:
    RoomError in one line for a missing file or anything the room would not have written
    (an empty or short password, a learner the room does not name, a port out of range...)."""
    path = Path(folder) / STATE
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RoomError(f"no room to resume in {folder}: {exc}") from None
    try:
        return _checked(state, Path(folder))
    except (ValueError, KeyError, TypeError) as exc:
        what = f"{exc.args[0]} is missing" if isinstance(exc, KeyError) else str(exc)
        raise RoomError(f"{path} is damaged, so it is not obeyed: {what}") from None


def _checked(state: dict[str, Any], folder: Path) -> Room:
    """A :class:`Room` from ``state`` once every field is one the room would have written."""
    if not isinstance(state, dict):
        raise ValueError("it does not hold an object")
    keyspace.check_queue(state["room"])
    for name in ("host", "listen"):
        if not isinstance(state[name], str) or not state[name]:
            raise ValueError(f"{name} is not an address")
    passwords, hidden = state["passwords"], state["server_passwords"]
    if not isinstance(passwords, dict) or not isinstance(hidden, dict):
        raise ValueError("the passwords are not a table")
    learners = [n for n in passwords if n != INSTRUCTOR]
    if INSTRUCTOR not in passwords or not 1 <= len(learners) <= MAX_LEARNERS or any(
            not re.fullmatch(r"learner-[1-9][0-9]{0,3}", str(n)) for n in learners):
        raise ValueError(f"the room has the instructor and 1 to {MAX_LEARNERS} learners "
                         "named learner-N")
    if sorted(hidden) != sorted([*learners, GATEWAY]):
        raise ValueError("the server's passwords do not match the learners")
    for user, password in [*passwords.items(), *hidden.items()]:
        if not isinstance(password, str) or not PASSWORD.fullmatch(password):
            raise ValueError(f"{user}'s password is not one the room makes (16 or more "
                             "letters, digits, - or _)")
    ports = [state[n] for n in ("server_port", "port", "ws_port")]
    if not all(isinstance(p, int) and 1 <= p <= 65535 for p in ports):
        raise ValueError("a port is not a number from 1 to 65535")
    lease = state["lease_ms"]
    if not isinstance(lease, int) or isinstance(lease, bool) or lease < 1:
        raise ValueError("lease_ms is not a whole number of ms")
    origins = state["origins"]
    if not isinstance(origins, list) or not all(isinstance(o, str) for o in origins):
        raise ValueError("origins is not a list of page origins")
    if not isinstance(state.get("pid", 0), int):
        raise ValueError("pid is not a process id")
    return Room(state["room"], state["host"], state["listen"], dict(passwords), dict(hidden),
                ports[0], ports[1], ports[2], folder, lease, tuple(origins), owned=False)


def room_pid(folder: str | Path) -> int:
    """The process that last ran the room of ``folder`` (0 when unknown)."""
    try:
        pid = json.loads((Path(folder) / STATE).read_text(encoding="utf-8")).get("pid", 0)
    except (OSError, ValueError, AttributeError):
        return 0
    return pid if isinstance(pid, int) and pid > 0 else 0


def stop_room(folder: str | Path, *, discard: bool = False) -> str:
    """End the room whose folder is ``folder`` for good: the process running it (asked to
    stop: it ends the room itself), else its server, its append-only file, ``room.json`` and
    the passwords. A server that does not answer keeps its file unless ``discard``. What it
    did, in one line."""
    room = read_state(folder)
    pid = room_pid(folder)
    if pid and pid != os.getpid() and _is_room_process(pid):
        os.kill(pid, signal.SIGTERM)
        if not servers.wait_until(lambda: not _running(pid), 30):
            raise RoomError(f"room {room.name!r}: its process {pid} did not stop")
        if not (Path(folder) / STATE).exists():
            return f"room {room.name!r} stopped: its server, its file and its passwords are gone"
    said = room.stop(discard=discard)
    if (Path(folder) / STATE).exists():
        raise RoomError(said)
    return f"room {room.name!r} stopped: its server, its file and its passwords are gone"


def _running(pid: int) -> bool:
    """True while process ``pid`` runs (one that ended and waits to be reaped does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _is_room_process(pid: int) -> bool:
    """True when ``pid`` runs and is a room (``python -m echomq_lab.classroom``)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _running(pid) and not Path("/proc").is_dir()
    return b"echomq_lab.classroom" in argv


def _configure(room: Room, *, new: bool) -> None:
    """As the instructor, load the protocol's scripts (they are not in the append-only file)
    and write the room's settings when it is new (the users came from the ACL file)."""
    with room.admin() as admin:
        for name in (*SCRIPTS, *VIEWS):
            scripts.load(name).load_into(admin)
        if new:
            now_s, now_us = admin.time()
            admin.hset(ctl_key(room.name), mapping={
                "lease_ms": room.lease_ms, "reaper": "on",
                "t0_ms": int(now_s) * 1000 + int(now_us) // 1000})
        admin.execute_command("ACL", "LOG", "RESET")
