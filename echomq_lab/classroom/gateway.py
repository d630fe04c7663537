"""A WebSocket gateway beside the room's Valkey, for pages that cannot open a TCP socket (the
static site, in the browser).

A page opens ``ws://HOST:PORT`` and sends, as its first message, its own credentials as JSON:
``{"user": "learner-3", "password": "…"}``. The gateway opens a connection to Valkey of its
own for that page and sends ``AUTH learner-3 …`` on it; Valkey's answer decides. Accepted, the
gateway answers ``{"ok": true, "user": …}`` and from then on passes bytes both ways untouched
(RESP in binary messages, each way); refused, it answers ``{"ok": false, "error": …}`` and
closes. The gateway holds no credentials of its own: every page acts as its own ACL user.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from dataclasses import dataclass, field

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

#: The longest a page may take to send its credentials, and the largest message it may send.
HELLO_TIMEOUT_S = 10.0
MAX_MESSAGE = 1 << 20
CHUNK = 1 << 16


def _resp(*words: str) -> bytes:
    """``words`` as one RESP command."""
    out = [f"*{len(words)}\r\n".encode()]
    for word in words:
        data = word.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def _credentials(message: str | bytes) -> tuple[str, str]:
    """The (user, password) of a first message; ValueError in one line otherwise."""
    try:
        hello = json.loads(message)
        user, password = hello["user"], hello["password"]
    except (ValueError, TypeError, KeyError):
        raise ValueError('first send {"user": ..., "password": ...}') from None
    if not isinstance(user, str) or not isinstance(password, str) or not user:
        raise ValueError("user and password must be text")
    return user, password


@dataclass
class Gateway:
    """WebSocket on ``host``:``port`` (a free one when 0) to the Valkey on loopback at
    ``server_port``, in a thread of its own; :meth:`stop` ends it."""

    server_port: int
    host: str = "127.0.0.1"
    port: int = 0
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop, repr=False)
    _server: Server | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def start(self) -> Gateway:
        """Listen, and return once the gateway accepts connections."""
        ready = threading.Event()

        async def listen() -> None:
            self._server = await serve(self._page, self.host, self.port, max_size=MAX_MESSAGE)
            self.port = int(next(iter(self._server.sockets)).getsockname()[1])
            ready.set()
            await self._server.wait_closed()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._loop.run_until_complete(listen())

        self._thread = threading.Thread(target=run, name="room-gateway", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the WebSocket gateway did not start")
        return self

    def stop(self) -> None:
        """Close every page's connection and the listener; idempotent."""
        if self._server is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._server.close)
            self._thread.join(timeout=10)

    async def _page(self, ws: ServerConnection) -> None:
        """One page: its credentials, Valkey's verdict, then bytes both ways."""
        try:
            user, password = _credentials(await asyncio.wait_for(ws.recv(), HELLO_TIMEOUT_S))
        except (ValueError, TimeoutError, ConnectionClosed) as exc:
            with contextlib.suppress(ConnectionClosed):
                await ws.send(json.dumps({"ok": False, "error": str(exc) or "no credentials"}))
            return
        reader, writer = await asyncio.open_connection("127.0.0.1", self.server_port)
        try:
            writer.write(_resp("AUTH", user, password))
            answer = await reader.readline()
            if not answer.startswith(b"+OK"):
                error = answer.decode(errors="replace").strip().lstrip("-")
                await ws.send(json.dumps({"ok": False, "error": error}))
                return
            await ws.send(json.dumps({"ok": True, "user": user}))
            await _pump(ws, reader, writer)
        except ConnectionClosed:
            pass
        finally:
            writer.close()


async def _pump(ws: ServerConnection, reader: asyncio.StreamReader,
                writer: asyncio.StreamWriter) -> None:
    """Bytes both ways until either side closes."""

    async def upstream() -> None:
        async for message in ws:
            writer.write(message if isinstance(message, bytes) else message.encode())
            await writer.drain()

    async def downstream() -> None:
        while data := await reader.read(CHUNK):
            await ws.send(data)

    tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
    _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await ws.close()
