"""Connections: an embedded fakeredis server with Lua by default, a real server by URL.

``connect()`` with no URL and no ``ECHOMQ_REDIS_URL`` returns a client on one embedded server
shared by the whole process, so two ``connect()`` calls act as two workers on one server.
``connect(fresh=True)`` gives a client on a brand-new, isolated embedded server. Replies stay
bytes: payloads are binary-safe.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import fakeredis
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from echomq_lab import errors

ENV_URL = "ECHOMQ_REDIS_URL"
EMBEDDED = "embedded fakeredis (in this process)"

_lock = threading.Lock()
_shared: fakeredis.FakeServer | None = None


def _shared_server() -> fakeredis.FakeServer:
    global _shared
    with _lock:
        if _shared is None:
            _shared = fakeredis.FakeServer()
        return _shared


def redact(url: str) -> str:
    """``url`` with every password (``user:pw@`` or ``?password=``) replaced by ``***``.

    The host part is kept exactly as written (IPv6 brackets, even a malformed port).
    """
    parts = urlsplit(url)
    netloc = parts.netloc
    auth, at, host = netloc.rpartition("@")
    if at and ":" in auth:
        netloc = f"{auth.split(':', 1)[0]}:***@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        hidden = [(k, "***" if k.lower() == "password" else v) for k, v in pairs]
        query = urlencode(hidden, safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def connect(url: str | None = None, *, fresh: bool = False) -> redis.Redis:
    """A client for the lab: embedded by default, or the real server at ``url``.

    ``url`` falls back to the ``ECHOMQ_REDIS_URL`` environment variable. A real server is
    pinged once; if it cannot be reached, :class:`errors.ServerUnavailable` names the URL
    (password hidden). ``fresh=True`` asks for a new isolated embedded server.
    """
    if url is None and not fresh:
        url = os.environ.get(ENV_URL) or None
    if url is None:
        server = fakeredis.FakeServer() if fresh else _shared_server()
        return fakeredis.FakeRedis(server=server, decode_responses=False)
    if fresh:
        raise ValueError("fresh=True makes an embedded server; it cannot be combined with a URL")
    try:
        # No silent resends: a script whose reply was lost may have run, and running it again
        # (say, a second claim) is the caller's decision, so a lost connection surfaces at once.
        conn = redis.Redis.from_url(
            url,
            decode_responses=False,
            socket_connect_timeout=3,
            socket_timeout=10,
            retry=Retry(NoBackoff(), 0),
        )
    except ValueError as exc:
        raise ValueError(f"bad server URL {redact(url)!r}: {exc}") from None
    try:
        conn.ping()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        conn.close()
        raise errors.ServerUnavailable(f"cannot reach {redact(url)}: {exc}") from None
    return conn


def describe(conn: redis.Redis) -> str:
    """Where ``conn`` points, for messages: the URL with its password hidden, or 'embedded'."""
    if isinstance(conn, fakeredis.FakeRedis):
        return EMBEDDED
    kw = conn.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    scheme = "rediss" if conn.connection_pool.connection_class is redis.SSLConnection else "redis"
    auth = ":***@" if kw.get("password") else ""
    host, port, db = kw.get("host", "localhost"), kw.get("port", 6379), kw.get("db", 0)
    return f"{scheme}://{auth}{host}:{port}/{db}"


class reaching:  # noqa: N801 - used like a function: ``with reaching(conn): ...``
    """Turn a lost connection inside the block into :class:`errors.ServerUnavailable`.

    A small class rather than a generator context manager: every transition passes through
    it, and this costs a few microseconds less per call.
    """

    __slots__ = ("conn",)

    def __init__(self, conn: redis.Redis) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None and isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
            raise unreachable(self.conn, exc) from None


def unreachable(conn: redis.Redis, exc: BaseException) -> errors.ServerUnavailable:
    """The one-line :class:`errors.ServerUnavailable` for a lost connection to ``conn``."""
    return errors.ServerUnavailable(f"cannot reach {describe(conn)}: {exc}")
