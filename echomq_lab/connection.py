"""Connections: an embedded fakeredis server with Lua by default, a real server by URL.

``connect()`` with no URL and no ``ECHOMQ_REDIS_URL`` gives a client on the one embedded server
the process shares; ``connect(fresh=True)`` one on a new server of its own. Replies stay bytes.
Every client ``connect()`` makes writes through the lab's own connections, which hand each
request to the taps this thread opened (:func:`tapped`): redis-py itself is never patched.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# isort: off
from echomq_lab.browser import lua as browser_lua

# First of all, before fakeredis is imported: in the browser (Pyodide, where lupa does not
# build), fakeredis is to run its Lua on fengari.
if sys.platform == "emscripten":
    browser_lua.install()
import fakeredis  # noqa: E402
# isort: on
import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.connection import AbstractConnection
from redis.exceptions import ClusterError, RedisClusterException, SlotNotCoveredError
from redis.retry import Retry

from echomq_lab import errors

ENV_URL = "ECHOMQ_REDIS_URL"
EMBEDDED = "embedded fakeredis (in this process)"
#: The one policy under which the server never drops a job's row; the embedded server's too.
NO_EVICTION = "noeviction"

_lock = threading.Lock()
_shared: fakeredis.FakeServer | None = None
#: The seed URL (password hidden) of each cluster client :func:`connect` made.
_SEEDS: weakref.WeakKeyDictionary[RedisCluster, str] = weakref.WeakKeyDictionary()
#: What a lost server looks like to a client: single-node errors, and a cluster's own.
LOST = (redis.ConnectionError, redis.TimeoutError, ClusterError, SlotNotCoveredError)


def _shared_server() -> fakeredis.FakeServer:
    global _shared
    with _lock:
        if _shared is None:
            _shared = fakeredis.FakeServer()
        return _shared


def redact(url: str) -> str:
    """``url`` with every password (``user:pw@`` or ``?password=``) replaced by ``***``; the
    host part kept exactly as written (IPv6 brackets, even a malformed port)."""
    parts = urlsplit(url)
    netloc, query = parts.netloc, parts.query
    auth, at, host = netloc.rpartition("@")
    if at and ":" in auth:
        netloc = f"{auth.split(':', 1)[0]}:***@{host}"
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        hidden = [(k, "***" if k.lower() == "password" else v) for k, v in pairs]
        query = urlencode(hidden, safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


class _Taps(threading.local):
    """This thread's open taps, innermost last."""

    def __init__(self) -> None:
        self.open: list[Callable[[bytes], None]] = []


_TAPS = _Taps()


@contextmanager
def tapped(seen: Callable[[bytes], None]) -> Iterator[None]:
    """Inside the block, hand ``seen`` the bytes of every request this thread writes on a lab
    client's connection (one write: a command, or a whole pipeline), before it is sent. A new
    connection's handshake is not a request. Taps nest; other threads and clients that
    :func:`connect` did not make are never seen."""
    _TAPS.open.append(seen)
    try:
        yield
    finally:
        _TAPS.open.pop()  # blocks end in the reverse order they began


def _joined(command: Any) -> bytes:
    """What one write sends, as bytes (redis-py passes bytes, a str, or a list of chunks)."""
    chunks = [command] if isinstance(command, bytes | str | memoryview) else command
    return b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)


class _Tapped(AbstractConnection):
    """The lab's side of a connection (mixed in before redis-py's or fakeredis's class): each
    request it writes goes to the open taps first; what it writes to set itself up does not."""

    _setting_up = False

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if _TAPS.open and not self._setting_up:
            packed = _joined(command)
            for seen in _TAPS.open:
                seen(packed)
        send: Callable[[Any, bool], None] = super().send_packed_command  # redis-py's, untyped
        was, self._setting_up = self._setting_up, True  # a (re)connect inside is set-up
        try:
            send(command, check_health)
        finally:
            self._setting_up = was

    def on_connect_check_health(self, check_health: bool = True) -> None:
        was, self._setting_up = self._setting_up, True
        try:
            super().on_connect_check_health(check_health)
        finally:
            self._setting_up = was


_TAPPED_CLASSES: dict[type[AbstractConnection], type[AbstractConnection]] = {}


def _tapped_class(base: type[AbstractConnection]) -> type[AbstractConnection]:
    """``base`` (plain, TLS, unix socket or fakeredis) with the lab's taps in front; one class
    for each base."""
    if issubclass(base, _Tapped):
        return base
    with _lock:
        return _TAPPED_CLASSES.setdefault(
            base, type(base.__name__, (_Tapped, base), {"__module__": __name__}))


class LabPool(redis.ConnectionPool):
    """The pool of every client :func:`connect` makes for a server (each node's, on a
    cluster): it makes the connection class it is given, with the lab's taps in front
    (:func:`tapped`). The embedded server's pool gets the same class."""

    def __init__(self, connection_class: type[AbstractConnection] = redis.Connection,
                 **kwargs: Any) -> None:
        super().__init__(connection_class=_tapped_class(connection_class), **kwargs)


def connect(url: str | None = None, *, fresh: bool = False, ping: bool = True) -> redis.Redis:
    """A client for the lab: embedded by default, or the real server at ``url``.

    ``url`` falls back to ``ECHOMQ_REDIS_URL``. A real server is pinged once (not with
    ``ping=False``, so panels can be built while it is down): unreachable, it raises
    :class:`errors.ServerUnavailable` naming the URL, password hidden. ``fresh=True`` asks for
    a new embedded server; a URL with ``?cluster=1`` gives a cluster client (:func:`cluster_url`).
    """
    if url is None and not fresh:
        url = os.environ.get(ENV_URL) or None
    if url is None:
        server = fakeredis.FakeServer() if fresh else _shared_server()
        embedded = fakeredis.FakeRedis(server=server, decode_responses=False)
        pool = embedded.connection_pool  # made before any connection: give it the lab's class
        pool.connection_class = _tapped_class(pool.connection_class)
        return embedded
    if fresh:
        raise ValueError("fresh=True makes an embedded server; it cannot be combined with a URL")
    seed = cluster_url(url)
    conn = _connect_cluster(url, seed) if seed is not None else _connect_single(url, ping=ping)
    if ping:
        _warn_if_evicting(conn)
    return conn


def eviction_policy(conn: redis.Redis) -> str | None:
    """The server's ``maxmemory-policy``, or None when ``CONFIG GET`` is refused (managed
    services, ACLs). On a cluster, the policy of the node ``conn`` asks first."""
    if isinstance(conn, fakeredis.FakeRedis):
        return NO_EVICTION
    node = conn
    if isinstance(conn, RedisCluster):
        node = cast(redis.Redis, conn.get_redis_connection(conn.get_default_node()))
    try:
        reply = cast(dict[bytes | str, bytes | str], node.config_get("maxmemory-policy"))
    except redis.ResponseError:
        return None
    except LOST as exc:
        raise unreachable(conn, exc) from None
    for value in reply.values():
        return value.decode() if isinstance(value, bytes) else value
    return None


def eviction_note(policy: str | None) -> str:
    """A few words on what ``policy`` means for the fence, for a panel's server line."""
    if policy == NO_EVICTION:
        return "evicts nothing (noeviction)"
    if policy is None:
        return "eviction policy unknown (the server refused CONFIG GET)"
    return f"may evict job rows ({policy}): a lost row loses its fence"


def _warn_if_evicting(conn: redis.Redis) -> None:
    policy = eviction_policy(conn)
    if policy is not None and policy != NO_EVICTION:
        warnings.warn(
            f"{describe(conn)} runs maxmemory-policy {policy}: it may evict a job's row, and "
            "the fencing token lives in that row (a re-sent enqueue could then mint a token "
            "twice); run queue servers with maxmemory-policy noeviction",
            errors.EvictionRisk,
            stacklevel=3,
        )


#: No silent resends: a script whose reply was lost may have run, so a lost connection surfaces
#: at once and running it again is the caller's decision.
_CLIENT_OPTIONS: dict[str, Any] = {
    "decode_responses": False,
    "socket_connect_timeout": 3,
    "socket_timeout": 10,
}


def client_options() -> dict[str, Any]:
    """What every client of the lab's on a real server is made with: no retry, its timeouts."""
    return {"retry": Retry(NoBackoff(), 0), **_CLIENT_OPTIONS}


def _connect_single(url: str, shown: str | None = None, *, ping: bool = True) -> redis.Redis:
    """A single-server client, pinged if ``ping``; errors name ``shown`` (default ``url``)."""
    shown = redact(url if shown is None else shown)
    try:
        pool = LabPool.from_url(url, **client_options())
    except ValueError as exc:
        raise ValueError(f"bad server URL {shown!r}: {exc}") from None
    conn = redis.Redis(connection_pool=pool)
    conn.auto_close_connection_pool = True  # closing the client closes its pool, as from_url's
    if not ping:
        return conn
    try:
        conn.ping()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        conn.close()
        raise unreachable(conn, exc, shown) from None
    return conn


def cluster_url(url: str) -> str | None:
    """For a URL whose query says ``cluster=1``, the same URL without that word; else None.
    A cluster has only db 0: a cluster URL naming another (``/3``, ``?db=3``) raises ValueError."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    flags = [v for k, v in pairs if k.lower() == "cluster"]
    if not flags or flags[-1].lower() not in ("1", "true", "yes"):
        return None
    dbs = [v for k, v in pairs if k.lower() == "db"] + [parts.path.strip("/") or "0"]
    bad = [d for d in dbs if d != "0"]
    if bad:
        raise ValueError(f"{redact(url)}: a cluster has only db 0, this URL names db {bad[0]!r}")
    kept = [(k, v) for k, v in pairs if k.lower() not in ("cluster", "db")]
    return urlunsplit(parts._replace(path="/0", query=urlencode(kept)))


def _connect_cluster(url: str, seed: str) -> redis.Redis:
    """A RedisCluster seeded from ``seed``'s node, once that node is in cluster mode; typed as
    the single-server client, whose methods it answers."""
    probe = _connect_single(seed, url)
    try:
        enabled = probe.info("cluster").get("cluster_enabled")
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise unreachable(probe, exc, redact(url)) from None
    finally:
        probe.close()
    if str(enabled) != "1":
        raise ValueError(
            f"{redact(url)}: that server is not in cluster mode; drop ?cluster=1 to use it alone"
        )
    try:
        conn = RedisCluster.from_url(seed, connection_pool_class=LabPool, **client_options())
    except RedisClusterException as exc:
        raise errors.ServerUnavailable(f"cannot reach {redact(url)}: {exc}") from None
    _SEEDS[conn] = redact(seed + ("&" if "?" in seed else "?") + "cluster=1")
    return cast(redis.Redis, conn)


def describe(conn: redis.Redis) -> str:
    """Where ``conn`` points, for messages: the URL with its password hidden, or 'embedded'."""
    if isinstance(conn, fakeredis.FakeRedis):
        return EMBEDDED
    if isinstance(conn, RedisCluster):
        return _SEEDS.get(conn, "a cluster")
    kw = conn.connection_pool.connection_kwargs
    if "gateway" in kw:  # a page in the browser, through a room's WebSocket gateway
        return redact(kw["gateway"])
    if "path" in kw:
        return f"unix://{kw['path']}"
    tls = issubclass(conn.connection_pool.connection_class, redis.SSLConnection)
    scheme = "rediss" if tls else "redis"
    auth = ":***@" if kw.get("password") else ""
    host, port, db = kw.get("host", "localhost"), kw.get("port", 6379), kw.get("db", 0)
    return f"{scheme}://{auth}{host}:{port}/{db}"


@contextmanager
def reaching(conn: redis.Redis) -> Iterator[None]:
    """Turn a lost connection inside the block into :class:`errors.ServerUnavailable`."""
    try:
        yield
    except LOST as exc:
        raise unreachable(conn, exc) from None


def unreachable(
    conn: redis.Redis, exc: BaseException, where: str | None = None
) -> errors.ServerUnavailable:
    """The one-line error for a lost call to ``conn`` (at ``where``, default its URL): password
    refused (:class:`errors.AuthFailed`), no answer in time (:class:`errors.NoAnswer`: the call
    may have run), or server out of reach (:class:`errors.ServerUnavailable`)."""
    where = where or describe(conn)
    if isinstance(exc, redis.AuthenticationError):
        return errors.AuthFailed(f"authentication failed at {where}: {exc}")
    if isinstance(exc, redis.TimeoutError):
        wait = conn.connection_pool.connection_kwargs.get("socket_timeout")
        within = f" within {wait:g} s" if isinstance(wait, (int, float)) else ""
        return errors.NoAnswer(f"{where} did not answer{within}; the call may or may not have run")
    return errors.ServerUnavailable(f"cannot reach {where}: {exc}")


def node_client(conn: redis.Redis, key: str) -> redis.Redis:
    """The client of the node holding ``key`` (``conn`` itself on a single server), for the
    commands a cluster cannot route by their arguments (SCAN, WAIT)."""
    if not isinstance(conn, RedisCluster):
        return conn
    with reaching(conn):
        node = conn.get_node_from_key(key)
        return cast(redis.Redis, conn.get_redis_connection(node))
