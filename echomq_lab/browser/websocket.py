"""A redis-py connection whose socket is a WebSocket to a workshop room's gateway
(:mod:`echomq_lab.classroom.gateway`), for the browser, where a tab opens no TCP socket.

:class:`GatewayConnection` opens ``ws://HOST:PORT``, sends its user's name and password as the
first message and waits for the gateway's verdict. Accepted, redis-py writes and reads the
server's protocol (RESP) through binary messages as it would through a socket, so the
lab's calls run unchanged (the gateway passes on only those, as the page's own learner).
Refused, it raises :class:`redis.AuthenticationError` carrying the server's reason in one line (what
:func:`echomq_lab.connection.unreachable` turns into :class:`echomq_lab.errors.AuthFailed`).

In the tab (Pyodide) the WebSocket is the browser's, and a read waits for the next message
with ``pyodide.ffi.run_sync``: Python blocks while the browser goes on. That works only where
Python was entered as a promise (a cell, an asyncio task); a widget's click is not, so a click
that may talk to a room runs through :func:`in_turn`. Elsewhere any :data:`Opener` can stand
in for the browser's WebSocket (the tests use the ``websockets`` package).

May import redis and nothing of the package.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any, Protocol

import redis
from redis._parsers import _RESP2Parser
from redis.connection import AbstractConnection

#: True in the browser's Python (Pyodide).
IN_BROWSER = sys.platform == "emscripten"


class Transport(Protocol):
    """One open WebSocket."""

    def send(self, data: str | bytes) -> None:
        """Send one message: text for a ``str``, binary for ``bytes``."""

    def receive(self, timeout: float | None) -> str | bytes | None:
        """The next message (never an empty binary one); ``b""`` once the socket is closed;
        None when nothing came within ``timeout`` seconds (0: do not wait; None: no limit)."""

    def close(self) -> None:
        """Close the socket; idempotent."""


#: Opens a WebSocket to a URL within a timeout (seconds, None for none), or raises OSError.
Opener = Callable[[str, float | None], Transport]

#: The browser's side: a WebSocket whose messages queue up until Python takes them.
_JS_SOCKET = """
(url) => {
  const ws = new WebSocket(url);
  ws.binaryType = "arraybuffer";
  const queue = [];
  let wake = null;
  const arrive = (item) => {
    queue.push(item);
    if (wake) { const w = wake; wake = null; w(); }
  };
  ws.onopen = () => arrive(["open", null]);
  ws.onmessage = (e) => arrive(typeof e.data === "string" ? ["text", e.data]
                                                         : ["data", new Uint8Array(e.data)]);
  ws.onclose = (e) => arrive(["closed", e.code]);
  return {
    take() { return queue.length ? queue.shift() : undefined; },  // undefined: None
    wait(ms) {
      if (queue.length) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = ms == null ? null : setTimeout(() => { wake = null; resolve(); }, ms);
        wake = () => { if (timer !== null) clearTimeout(timer); resolve(); };
      });
    },
    send(data) { ws.send(data); },
    close() { ws.close(); },
  };
}
"""


class BrowserWebSocket:
    """A :class:`Transport` over the browser's own WebSocket (Pyodide only)."""

    def __init__(self, url: str, timeout: float | None) -> None:
        from pyodide.code import run_js  # type: ignore[import-not-found]
        from pyodide.ffi import run_sync, to_js  # type: ignore[import-not-found]

        self._run_sync, self._to_js = run_sync, to_js
        try:
            self._js: Any = run_js(_JS_SOCKET)(url)
        except Exception as exc:  # the browser refused the URL itself (a JsException)
            raise ConnectionRefusedError(" ".join(str(exc).split())) from None
        self._closed = False
        first = self._next(timeout)
        if first is None or str(first[0]) != "open":
            self.close()
            if first is None:
                raise TimeoutError(f"nothing answered within {timeout} s")
            raise ConnectionRefusedError("the connection was refused")

    def _next(self, timeout: float | None) -> Any:
        item = self._js.take()
        if item is None and timeout != 0:
            self._run_sync(self._js.wait(None if timeout is None else timeout * 1000))
            item = self._js.take()
        return item

    def send(self, data: str | bytes) -> None:
        self._js.send(self._to_js(data) if isinstance(data, bytes) else data)

    def receive(self, timeout: float | None) -> str | bytes | None:
        while not self._closed:
            item = self._next(timeout)
            if item is None:
                return None
            kind = str(item[0])
            if kind == "closed":
                self._closed = True
            elif kind == "text":
                return str(item[1])
            elif kind == "data" and item[1].length:
                return bytes(item[1].to_bytes())
        return b""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._js.close()


def _browser_opener(url: str, timeout: float | None) -> Transport:
    return BrowserWebSocket(url, timeout)


class _Socket:
    """What redis-py's reader and writer use of a socket, over a :class:`Transport`."""

    def __init__(self, transport: Transport, timeout: float | None) -> None:
        self._transport, self._timeout = transport, timeout
        self._pending = bytearray()

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def gettimeout(self) -> float | None:
        return self._timeout

    def sendall(self, data: bytes | bytearray | memoryview) -> None:
        self._transport.send(bytes(data))

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes of what the server sent; ``b""`` once the gateway closed;
        :class:`socket.timeout` when nothing came within the timeout."""
        while not self._pending:
            got = self._transport.receive(self._timeout)
            if got is None:
                raise TimeoutError("timed out")  # what a socket raises (socket.timeout)
            if got == b"":
                return b""
            if isinstance(got, str):
                raise redis.ConnectionError(f"the gateway said: {' '.join(got.split())[:200]}")
            self._pending += got
        chunk = bytes(self._pending[:size])
        del self._pending[:size]
        return chunk

    def shutdown(self, _how: int) -> None:
        return None

    def close(self) -> None:
        self._transport.close()


def _verdict(answer: str | bytes | None, where: str, timeout: float | None) -> None:
    """Nothing when the gateway accepted the page; else the error that says why not."""
    if answer is None:
        raise redis.ConnectionError(f"the gateway at {where} did not answer within {timeout} s")
    try:
        said = json.loads(answer) if answer else {}
    except ValueError:
        said = {}
    if not isinstance(said, dict) or "ok" not in said:
        raise redis.ConnectionError(f"{where} is not a room's gateway")
    if said["ok"] is not True:
        raise redis.AuthenticationError(" ".join(str(said.get("error", "refused")).split()))


class GatewayConnection(AbstractConnection):
    """A connection to a room's server through its WebSocket ``gateway``, logged in there as
    ``username`` with ``password`` (no ``AUTH`` of its own: the gateway's login is the one).
    ``opener`` opens the WebSocket (the browser's by default)."""

    def __init__(self, gateway: str = "", username: str | None = None,
                 password: str | None = None, opener: Opener | None = None,
                 **kwargs: Any) -> None:
        self.gateway = gateway
        self._hello = json.dumps({"user": username or "", "password": password or ""})
        self._opener: Opener = opener or _browser_opener
        kwargs.setdefault("parser_class", _RESP2Parser)  # reads through recv(), never poll()
        super().__init__(**kwargs)

    def repr_pieces(self) -> list[tuple[str, Any]]:
        return [("gateway", self.gateway), ("db", self.db)]

    def _host_error(self) -> str:
        return self.gateway

    def _connect(self) -> _Socket:
        timeout = self.socket_connect_timeout
        try:
            transport = self._opener(self.gateway, timeout)
        except OSError as exc:
            raise redis.ConnectionError(f"no gateway answered at {self.gateway} ({exc})") from None
        try:
            transport.send(self._hello)
            _verdict(transport.receive(timeout), self.gateway, timeout)
        except BaseException:
            transport.close()
            raise
        return _Socket(transport, self.socket_timeout)


def client(gateway: str, username: str, password: str, *,
           pool_class: type[redis.ConnectionPool] = redis.ConnectionPool,
           opener: Opener | None = None, **options: Any) -> redis.Redis:
    """A client whose every connection goes through ``gateway`` as ``username``, its pool of
    ``pool_class`` (which makes :class:`GatewayConnection`); ``options`` go to each connection
    (timeouts, retry, ``decode_responses``)."""
    pool = pool_class(connection_class=GatewayConnection, gateway=gateway, username=username,
                      password=password, opener=opener, **options)
    conn = redis.Redis(connection_pool=pool)
    conn.auto_close_connection_pool = True
    return conn


_last_turn: asyncio.Future[None] | None = None


def in_turn(action: Callable[[], object]) -> None:
    """Run ``action`` now; in the browser, as an asyncio task that starts once the one handed
    over before it has ended. A widget's click is not a promise there, and only a task may wait
    on the network, so clicks run as tasks, one at a time, in the order they came."""
    global _last_turn
    if not IN_BROWSER:
        action()
        return
    before = _last_turn

    async def turn() -> None:
        if before is not None and not before.done():
            await asyncio.wait([before])
        action()

    _last_turn = asyncio.ensure_future(turn())
