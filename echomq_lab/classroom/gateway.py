"""The room's one way in for learners: a gateway on the room's port (plain TCP, the server's own
protocol, for a Python kernel and redis-py) and on a WebSocket port (for a page in the browser),
in front of a Valkey that listens on loopback only.

A learner logs in to the gateway with the name and password of their join link (``AUTH`` over
TCP; over WebSocket a first message ``{"user": …, "password": …}``, answered ``{"ok": true,
"user": …}`` or ``{"ok": false, "error": …}``). The gateway then opens a connection to the
server as that learner's ACL user, with a password only the gateway knows (so a link does not
work on the server's port), and passes on only the lab's calls (:func:`check`): EVALSHA of the
scripts a desk runs, with the room's own keys, and the reads the pages make. Anything else is
answered ``-NOPERM …`` in one line and never reaches the server.

The gateway writes the room's record (:mod:`.ledger` reads it): each call of a learner's, in the
learner's log stream, as the server answered it; each refusal, under the learner's name; each
failed login, under the address it came from (a few per address per window, so a flood cannot
push real refusals out). The limits are :class:`Limits`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aredis
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from echomq_lab import errors, keyspace, scripts
from echomq_lab.classroom import bounds
from echomq_lab.classroom.memory import Budget
from echomq_lab.classroom.pace import Bucket, PacedConnection
from echomq_lab.classroom.record import (
    LOG_LEN,
    RECORD_LEN,
    ctl_key,
    log_key,
    record_key,
    refusals_key,
)
from echomq_lab.classroom.resp import Err, Malformed, Replies, Requests, TooLarge, command, error
from echomq_lab.scripts import arguments, layout

LOG = logging.getLogger("echomq_lab.classroom.gateway")
#: The reads the pages make, each with where its keys are (None: every argument).
READS: dict[bytes, slice | None] = {
    b"HGET": slice(1, 2), b"HMGET": slice(1, 2), b"HGETALL": slice(1, 2), b"EXISTS": None,
    b"TYPE": slice(1, 2), b"ZRANGE": slice(1, 2), b"ZSCORE": slice(1, 2),
    b"ZCARD": slice(1, 2), b"XRANGE": slice(1, 2), b"XLEN": slice(1, 2),
}  # fmt: skip
FREE: frozenset[bytes] = frozenset({b"PING", b"TIME"})
#: How long the gateway trusts its last reading of the room's lease (s).
LEASE_READ_S = 1.0

WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
#: Connections the system may hold for the gateway before it accepts them (a class joining at
#: once: with the default 100, the rest would wait for their SYN to be sent again, seconds).
BACKLOG = 2048
#: The kind a refusal of a command the server does not know is counted under (a learner who
#: invents names cannot grow the record, nor push a real command's count out of sight).
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Limits:
    """What the gateway allows: connections per learner, requests queued on one connection,
    bytes per request, sockets per address (and in all) that have not logged in, and seconds
    to log in; failed logins recorded per address in each ``window_s`` (the rest counted in
    the next); each learner's pace, WebSocket frames (pings included) and TCP requests a
    second, and at once (:mod:`.pace`)."""

    connections: int = 4
    in_flight: int = 16
    request_bytes: int = 64 * 1024
    waiting_per_address: int = 1024
    waiting: int = 4096
    login_s: float = 5.0
    per_s: float = 200.0
    burst: int = 400
    records_per_window: int = 5
    window_s: float = 10.0


@dataclass(frozen=True)
class Seats:
    """What the gateway knows of a room: each learner's link password (what they log in with)
    and server password (what the gateway logs in to the server with, as that learner), and
    the gateway's own user on the server (it writes the record)."""

    room: str
    links: dict[str, str]
    server: dict[str, str]
    user: str
    password: str


class Refused(Exception):
    """A request the gateway does not pass on; ``str()`` is the one-line reply."""


def _text(word: bytes) -> str:
    return word.decode("utf-8", "replace")


def _shown(word: bytes) -> str:
    """A word for a refusal's line: printable, at most 40 characters."""
    return re.sub(r"[^\x21-\x7e]", "?", _text(word))[:40]


@dataclass(frozen=True)
class Call:
    """A script call the gateway passed on: which script, the job it names, the token, the
    lease, and every number it carries (by its name in the script's header)."""

    script: str
    job: str
    token: int
    lease_ms: int
    asked: layout.Call | None = None


def check(room: str, shas: dict[str, str], words: list[bytes]) -> Call | None:
    """None for a read the pages make (or PING/TIME), a :class:`Call` for an EVALSHA of a
    learner's script with this room's keys; :class:`Refused` for anything else."""
    name = words[0].upper()
    if name in FREE:
        return None
    base = keyspace.base(room).encode()
    if name in READS:
        keys = words[READS[name] or slice(1, None)]
        if not keys or not all(k.startswith(base) for k in keys):
            raise Refused(f"NOPERM {_shown(words[0])} reads only this room's keys")
        return None
    if name != b"EVALSHA":
        raise Refused(f"NOPERM this room runs only the lab's calls, and {_shown(words[0])!r} is "
                      "not one of them")
    return _script_call(room, shas, words)


def _script_call(room: str, shas: dict[str, str], words: list[bytes]) -> Call:
    """The call, held to its script's layout and the argument rule (:mod:`.bounds`)."""
    if len(words) < 3:
        raise Refused("NOPERM EVALSHA needs a script and its keys")
    script = shas.get(_text(words[1]).lower())
    if script is None:
        raise Refused("NOPERM that script is not one the room runs for learners")
    numkeys = arguments.decimal(words[2], 0, len(words) - 3)
    if numkeys is None:
        raise Refused("NOPERM the number of keys is not a number")
    try:
        asked = bounds.held(room, script, words[3:3 + numkeys], words[3 + numkeys:])
    except errors.BadArgument as exc:
        raise Refused(f"{exc.wire_class} {exc.detail}") from None
    except ValueError:
        raise Refused(f"NOPERM {script} takes this room's own keys and arguments") from None
    n = asked.numbers
    return Call(script, asked.job, n.get("token", 0), n.get("lease", 0), asked)


def _outcome(call: Call, value: object) -> tuple[str, str, str, int] | None:
    """(outcome, reply, job, token) the record keeps for ``call``'s reply; None for a claim
    that found nothing (nothing happened) or a view."""
    if call.script == "view":
        return None
    if isinstance(value, Err):
        return ("refused", value.kind, call.job, call.token)
    if call.script == "claim":
        if not isinstance(value, list) or len(value) not in (3, 5):
            return None
        return ("accepted", "claimed", _text(value[0]), int(value[2]))
    if call.script == "complete":
        return ("gone", "JobGone", call.job, call.token) if value == 0 else (
            "accepted", "completed", call.job, call.token)
    if call.script == "extend":
        return ("gone", "JobGone", call.job, call.token) if value == -1 else (
            "accepted", "extended", call.job, call.token)
    return ("accepted", _text(value) if isinstance(value, bytes) else str(value), call.job,
            call.token)


class _Window:
    """At most ``most`` events per key in each ``every_s``; the rest counted."""

    def __init__(self, most: int, every_s: float) -> None:
        self.most, self.every_s = most, every_s
        self._seen: dict[str, list[float]] = defaultdict(list)
        self.skipped: Counter[str] = Counter()

    def allow(self, key: str) -> bool:
        now = time.monotonic()
        recent = [t for t in self._seen[key] if now - t < self.every_s]
        if len(recent) >= self.most:
            self._seen[key] = recent
            self.skipped[key] += 1
            return False
        self._seen[key] = [*recent, now]
        return True


class Recorder:
    """Writes the record on the server in batches, as the gateway's own user: a log line
    (:meth:`write`, each log capped at :data:`LOG_LEN` lines, the rest of the record at
    :data:`RECORD_LEN`) or a count (:meth:`count`); each returns once it is on the server."""

    def __init__(self, port: int, user: str, password: str) -> None:
        self.conn = aredis.Redis(host="127.0.0.1", port=port, username=user, password=password,
                                 socket_timeout=10)
        self.queue: asyncio.Queue[tuple[str, dict[str, Any] | str, asyncio.Future[None]]] = (
            asyncio.Queue())

    async def write(self, key: str, fields: dict[str, Any] | str) -> None:
        """Append ``fields`` to the stream ``key`` (or, given one field's name, add 1 to it in
        the hash ``key``)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self.queue.put((key, fields, done))
        await done

    async def count(self, key: str, field: str) -> None:
        await self.write(key, field)

    async def run(self) -> None:
        while True:
            batch = [await self.queue.get()]
            while not self.queue.empty() and len(batch) < 500:
                batch.append(self.queue.get_nowait())
            pipe = self.conn.pipeline(transaction=False)
            for key, fields, _ in batch:
                if isinstance(fields, str):
                    pipe.hincrby(key, fields, 1)
                    continue
                maxlen = LOG_LEN if "log:" in key else RECORD_LEN
                pipe.xadd(key, fields, maxlen=maxlen, approximate=True)  # type: ignore[arg-type]
            try:
                await pipe.execute()
            except Exception as exc:  # the server is away: the calls were answered anyway
                LOG.warning("gateway: the record could not be written (%s)", exc)
            for _, _, done in batch:
                if not done.done():
                    done.set_result(None)


@dataclass
class _Held:
    learner: str
    token: int
    deadline_ms: float


class Session:
    """One socket: not logged in, then one learner's, with its own connection to the server."""

    def __init__(self, gateway: Gateway, address: str) -> None:
        self.gw, self.address = gateway, address
        self.user = ""
        self.upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.replies = Replies()
        self.closing = False
        #: True until the socket logs in (or closes): it counts against its address.
        self.waiting = True
        #: True on the TCP side (a page's frames are paced by its connection).
        self.tcp = False

    async def login(self, user: str, password: str) -> str:
        """"" when ``user`` logged in; else the one-line reason."""
        gw = self.gw
        if self.user:
            return "ERR already logged in"
        if not hmac.compare_digest(password.encode(), gw.seats.links.get(user, "\0").encode()):
            await gw.failed_login(self.address)
            return WRONGPASS
        if gw.connections[user] >= gw.limits.connections:
            await gw.refuse(user, "connections")
            return (f"ERR too many connections: {user} may hold {gw.limits.connections} at once "
                    "in this room")
        gw.connections[user] += 1
        self.user = user
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", gw.server_port)
            self.upstream = reader, writer
            answer = await self._ask(command("AUTH", user, gw.seats.server[user]))
        except OSError as exc:
            return f"ERR the room's server is away ({exc})"
        if isinstance(answer.value, Err):
            return f"ERR the room's server refused the gateway ({answer.value.line})"
        return ""

    async def _login_line(self, user: str, password: str) -> str:
        why = await self.login(user, password)
        self.closing = bool(why) and why != WRONGPASS
        return why

    async def hello(self, words: list[bytes]) -> bytes:
        """``HELLO [2|3] [AUTH user password]``: log in (when AUTH is given), then the server's
        own answer in that protocol. No SETNAME: the gateway knows who a learner is."""
        rest = [w.upper() for w in words[2::]]
        if b"SETNAME" in rest:
            if self.user:
                await self.gw.refuse(self.user, "hello setname")
            return error("NOPERM a learner's name is the one they logged in with")
        if len(words) not in (1, 2, 5) or (len(words) == 5 and rest[0] != b"AUTH"):
            return error("ERR HELLO takes a protocol version, and AUTH user password")
        if len(words) == 5:
            why = await self._login_line(_text(words[3]), _text(words[4]))
            if why:
                return error(why)
        if not self.user:
            return error("NOAUTH HELLO must be called with the client already authenticated, "
                         "otherwise the HELLO <proto> AUTH <user> <pass> option can be used")
        answer = await self._ask(command(*words[:2]))
        return bytes(answer.raw)

    async def _ask(self, request: bytes) -> Any:
        assert self.upstream is not None
        reader, writer = self.upstream
        writer.write(request)
        await writer.drain()
        while True:
            got = self.replies.feed(await reader.read(1 << 16) or b"")
            if got:
                return got[0]
            if reader.at_eof():
                raise ConnectionResetError("the room's server closed the connection")

    async def one(self, words: list[bytes]) -> bytes:
        """The reply to one request."""
        name = words[0].upper()
        if name == b"QUIT":
            self.closing = True
            return b"+OK\r\n"
        if name == b"HELLO":
            return await self.hello(words)
        if not self.user:
            if name != b"AUTH":
                return error("NOAUTH Authentication required.")
            if len(words) != 3:
                return error(WRONGPASS)
            why = await self._login_line(_text(words[1]), _text(words[2]))
            return error(why) if why else b"+OK\r\n"
        try:
            call = check(self.gw.seats.room, self.gw.shas, words)
        except Refused as exc:
            if not _greeting(words):
                kind = _shown(words[0]).lower()
                await self.gw.refuse(self.user, kind if kind in self.gw.commands else UNKNOWN)
            return error(str(exc))
        if call is not None and call.script != "view" and self.gw.budget.full:
            await self.gw.refuse(self.user, "room full")
            return error(self.gw.budget.line)
        began = time.time() * 1000
        try:
            beyond = "" if call is None else await self.gw.beyond_room(self, call)
            if beyond and call is not None:
                await self.gw.refuse(self.user, f"{call.script} bounds")
                return error(f"EMQARG {beyond}")
            answer = await self._ask(command(*words))
        except (OSError, Malformed) as exc:
            self.closing = True
            return error(f"ERR the room's server is away ({exc})")
        if call is not None:
            await self.gw.record(self.user, call, answer.value, began, time.time() * 1000)
        return bytes(answer.raw)

    async def serve(self, recv: Callable[[], Awaitable[bytes]],
                    send: Callable[[bytes], Awaitable[None]]) -> None:
        """Requests in, replies out, until the socket closes or breaks a limit."""
        loop = asyncio.get_running_loop()
        limits = self.gw.limits
        deadline = loop.time() + limits.login_s
        requests = Requests(limits.request_bytes)
        while not self.closing:
            wait = None if self.user else max(0.0, deadline - loop.time())
            try:
                data = await asyncio.wait_for(recv(), wait)
            except TimeoutError:
                await send(error(f"ERR no login within {limits.login_s:g} s: closed"))
                LOG.warning("gateway: %s sent no login within %g s: closed", self.address,
                            limits.login_s)
                return
            if not data:
                return
            try:
                batch = requests.feed(data)
            except (TooLarge, Malformed) as exc:
                await send(error(f"ERR {exc}"))
                LOG.warning("gateway: closed %s's socket: %s", self.user or self.address, exc)
                return
            if self.user and self.tcp:
                await asyncio.sleep(self.gw.bucket(self.user).take(len(batch)))
            out = []
            for n, words in enumerate(batch):
                if n >= limits.in_flight:
                    out.append(error(f"ERR busy: at most {limits.in_flight} requests at once "
                                     "on one connection"))
                    continue
                out.append(await self.one(words))
                if self.closing:
                    break
            await send(b"".join(out))

    def close(self) -> None:
        if self.user:
            self.gw.connections[self.user] -= 1
        if self.upstream is not None:
            self.upstream[1].close()


def _quiet(name: str) -> logging.Logger:
    """A logger that says one line per event, never a traceback."""
    logger = logging.getLogger(name)

    class _NoTrace(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.exc_info, record.exc_text, record.stack_info = None, None, None
            return True

    logger.addFilter(_NoTrace())
    return logger


@dataclass
class Gateway:
    """The gateway of a room whose server listens on loopback at ``server_port``: TCP on
    ``host``:``port`` and WebSocket on ``host``:``ws_port`` (free ones when 0), in a thread of
    its own; :meth:`stop` ends it. ``origins`` are the pages' origins it trusts over WebSocket
    (None: a client that sends none, as Python does)."""

    server_port: int
    seats: Seats
    host: str = "127.0.0.1"
    port: int = 0
    ws_port: int = 0
    origins: tuple[str | None, ...] = (None,)
    limits: Limits = field(default_factory=Limits)
    #: The server's command names (lower case): a refusal of any other is counted as unknown.
    commands: frozenset[str] = frozenset()
    connections: Counter[str] = field(default_factory=Counter)
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop, repr=False)
    _servers: list[Any] = field(default_factory=list, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.shas = {scripts.load(n).sha: n for n in bounds.learner_scripts()}
        self._lease: tuple[int, float] = (0, 0.0)
        self.waiting: Counter[str] = Counter()
        self.held: dict[str, _Held] = {}
        self._sockets: set[asyncio.StreamWriter] = set()
        self._logins = _Window(self.limits.records_per_window, self.limits.window_s)
        self.budget = Budget()
        self._buckets: dict[str, Bucket] = {}

    @property
    def url(self) -> str:
        """The WebSocket side, for pages in the browser."""
        return f"ws://{self.host}:{self.ws_port}"

    def start(self) -> Gateway:
        """Listen on both sides, and return once both accept connections."""
        ready = threading.Event()
        failed: list[BaseException] = []

        async def listen() -> None:
            try:
                self.recorder = Recorder(self.server_port, self.seats.user, self.seats.password)
                tcp = await asyncio.start_server(self._tcp, self.host, self.port,
                                                 backlog=BACKLOG)
                ws: Server = await serve(
                    self._page, self.host, self.ws_port,
                    origins=_origins(self.origins),  # type: ignore[arg-type]
                    create_connection=PacedConnection, backlog=BACKLOG,
                    max_size=self.limits.request_bytes, logger=_quiet("websockets.gateway"))
            except BaseException as exc:
                failed.append(exc)
                ready.set()
                return
            self._servers = [tcp, ws]
            self.port = int(tcp.sockets[0].getsockname()[1])
            self.ws_port = int(next(iter(ws.sockets)).getsockname()[1])
            recording = asyncio.create_task(self.recorder.run())
            watching = asyncio.create_task(self.budget.watch(self.recorder.conn))
            ready.set()
            await ws.wait_closed()
            recording.cancel()
            watching.cancel()
            await self.recorder.conn.aclose()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(listen())

        self._thread = threading.Thread(target=run, name="room-gateway", daemon=True)
        self._thread.start()
        if not ready.wait(10) or failed:
            why = failed[0] if failed else "timeout"
            raise OSError(f"the room's gateway did not start ({why})")
        return self

    def stop(self) -> None:
        """Close every socket and both listeners; idempotent."""
        if self._thread is not None and self._thread.is_alive():
            def close() -> None:
                for server in self._servers:
                    server.close()
                for writer in self._sockets:
                    writer.close()
            self._loop.call_soon_threadsafe(close)
            self._thread.join(timeout=10)

    async def beyond_room(self, session: Session, call: Call) -> str:
        """Why ``call`` asks more than this room allows (:func:`bounds.refusal`), or "". The
        room's lease is read through the learner's own connection, at most once a second, and
        again before a refusal (so a lease the instructor just raised is obeyed at once)."""
        if call.asked is None:
            return ""
        if not bounds.needs_lease(call.asked):
            return bounds.refusal(call.asked, 0)
        value, read_at = self._lease
        fresh = time.monotonic() - read_at < LEASE_READ_S
        why = bounds.refusal(call.asked, value) if fresh else "stale"
        if why:
            answer = await session._ask(command("HGET", ctl_key(self.seats.room), "lease_ms"))
            raw = answer.value if isinstance(answer.value, bytes) else b""
            value = arguments.decimal(raw, 1, arguments.MAX_MS) or bounds.DEFAULT_LEASE_MS
            self._lease = (value, time.monotonic())
            why = bounds.refusal(call.asked, value)
        return why

    # --- the record ----------------------------------------------------------------------

    async def failed_login(self, address: str) -> None:
        if self._logins.allow(address):
            more = self._logins.skipped.pop(address, 0)
            await self.recorder.write(record_key(self.seats.room, "logins"),
                                      {"from": address, "more": more})

    async def refuse(self, user: str, what: str) -> None:
        """Count a refusal of ``user``'s under its kind: every kind keeps its own count,
        however many of another came."""
        await self.recorder.count(refusals_key(self.seats.room, user), what)

    async def record(self, user: str, call: Call, value: object, began: float,
                     ended: float) -> None:
        """One line in ``user``'s log for a script call, as the server answered it."""
        seen = _outcome(call, value)
        if seen is None:
            return
        outcome, reply, job, token = seen
        fields: dict[str, Any] = {
            "verb": call.script, "job": job, "token": token, "outcome": outcome, "reply": reply,
            "lease_ms": call.lease_ms, "stalled": 0, "detail": "",
            "began_ms": f"{began:.3f}", "ended_ms": f"{ended:.3f}"}
        held = self.held.get(job)
        if call.script == "claim" and outcome == "accepted":
            self.held[job] = _Held(user, token, ended + call.lease_ms)
        elif held is not None and held.token == token and outcome == "accepted":
            fields["stalled"] = int(began > held.deadline_ms)
            if held.learner != user:
                fields["held_by"] = held.learner
            if call.script == "extend":
                held.deadline_ms = ended + call.lease_ms
            else:
                del self.held[job]
        await self.recorder.write(log_key(self.seats.room, user), fields)

    # --- the two sides -------------------------------------------------------------------

    def bucket(self, learner: str) -> Bucket:
        """``learner``'s pace, shared by their sockets."""
        if learner not in self._buckets:
            self._buckets[learner] = Bucket(self.limits.per_s, self.limits.burst)
        return self._buckets[learner]

    def _admit(self, address: str) -> bool:
        if self.waiting[address] >= self.limits.waiting_per_address:
            LOG.warning("gateway: %s has %d sockets waiting to log in: one more refused",
                        address, self.waiting[address])
            return False
        if self.waiting.total() >= self.limits.waiting:
            LOG.warning("gateway: %d sockets are waiting to log in: one more refused",
                        self.waiting.total())
            return False
        self.waiting[address] += 1
        return True

    async def _tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        address = str(writer.get_extra_info("peername", ("?",))[0])
        if not self._admit(address):
            writer.write(error("ERR too many sockets from your address are waiting to log in"))
            writer.close()
            return
        session = Session(self, address)
        session.tcp = True
        self._sockets.add(writer)

        async def send(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        async def recv() -> bytes:
            data = await reader.read(1 << 16)
            if session.user:
                self._left(session)
            return data

        try:
            await session.serve(recv, send)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._sockets.discard(writer)
            self._left(session)
            session.close()
            writer.close()

    def _left(self, session: Session) -> None:
        """``session`` no longer waits to log in."""
        if session.waiting:
            session.waiting = False
            self.waiting[session.address] -= 1
            if self.waiting[session.address] <= 0:
                del self.waiting[session.address]

    async def _page(self, ws: ServerConnection) -> None:
        """One page: its credentials first (JSON), then RESP in binary messages both ways."""
        address = str((ws.remote_address or ("?",))[0])
        if not self._admit(address):
            await ws.close(1013, "too many sockets from your address")
            return
        session = Session(self, address)
        try:
            try:
                hello = await asyncio.wait_for(ws.recv(), self.limits.login_s)
                user, password = _credentials(hello)
            except (ValueError, TimeoutError) as exc:
                await ws.send(json.dumps({"ok": False, "error": str(exc) or "no credentials"}))
                return
            why = await session.login(user, password)
            self._left(session)
            if not why and isinstance(ws, PacedConnection):
                ws.bucket = self.bucket(user)
            await ws.send(json.dumps({"ok": False, "error": why} if why else
                                     {"ok": True, "user": user}))
            if why:
                return

            async def recv() -> bytes:
                message = await ws.recv()
                return message if isinstance(message, bytes) else message.encode()

            async def send(data: bytes) -> None:
                await ws.send(data)

            await session.serve(recv, send)
        except ConnectionClosed as exc:
            if exc.rcvd is None or exc.rcvd.code not in (1000, 1001):
                LOG.warning("gateway: closed %s's page: %s", session.user or address, exc)
        finally:
            self._left(session)
            session.close()
            with contextlib.suppress(Exception):
                await ws.close()


def _greeting(words: list[bytes]) -> bool:
    """True for what redis-py sends on every new connection (refused, and not news)."""
    return [w.upper() for w in words[:2]] in ([b"CLIENT", b"SETINFO"],
                                              [b"CLIENT", b"MAINT_NOTIFICATIONS"])


def _origins(trusted: tuple[str | None, ...]) -> list[str | re.Pattern[str] | None]:
    """What websockets checks the Origin header against: each trusted origin as given, and one
    named without a port on any of its ports."""
    out: list[str | re.Pattern[str] | None] = []
    for origin in trusted:
        if origin is not None and re.fullmatch(r"[a-z]+://[^/:]+", origin):
            out.append(re.compile(re.escape(origin) + r"(:\d{1,5})?"))
        else:
            out.append(origin)
    return out


def _credentials(message: str | bytes) -> tuple[str, str]:
    """The (user, password) of a page's first message; ValueError in one line otherwise."""
    try:
        hello = json.loads(message)
        user, password = hello["user"], hello["password"]
    except (ValueError, TypeError, KeyError):
        raise ValueError('first send {"user": ..., "password": ...}') from None
    if not isinstance(user, str) or not isinstance(password, str) or not user:
        raise ValueError("user and password must be text")
    return user, password
