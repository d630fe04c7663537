"""Runs inside Pyodide (under Node): one fakeredis server, fed the bytes of each TCP client.

``tools/site/pyodide_server.mjs`` owns the sockets; for every chunk a client sends it calls
:func:`feed` and writes back what it returns. Nothing here raises into JavaScript: an error
becomes an error reply and the connection goes on, as on a real server.
"""

from __future__ import annotations

import sys
from itertools import count
from typing import Any

from echomq_lab.browser import lua as browser_lua  # puts the fengari stand-in in place as `lupa`

browser_lua.install()

import fakeredis  # noqa: E402
from fakeredis._clients._sync import FakeRedisConnection  # noqa: E402
from fakeredis._clients._tcp_server import encode_reply  # noqa: E402
from fakeredis._typing import RaiseErrorTypes  # noqa: E402

SERVER = fakeredis.FakeServer(server_type="valkey")
_clients: dict[int, FakeRedisConnection] = {}
_ids = count(1)


def open_client() -> int:
    """A new connection on the one server; its id for :func:`feed` and :func:`close`."""
    client_id = next(_ids)
    _clients[client_id] = FakeRedisConnection(
        server=SERVER, client_info={"laddr": ("127.0.0.1", 0), "addr": ("127.0.0.1", client_id),
                                    "fd": client_id}, protocol=2
    )
    return client_id


def feed(client_id: int, data: Any) -> Any:
    """The replies (RESP bytes, as a JS Uint8Array) to the commands completed by ``data``."""
    from pyodide.ffi import to_js  # type: ignore[import-not-found]

    conn = _clients[client_id]
    out = bytearray()
    try:
        conn.get_socket().sendall(bytes(data.to_bytes()))
        while conn.can_read():
            try:
                reply = conn.read_response()
            except RaiseErrorTypes as exc:
                reply = exc
            protocol = conn.get_socket()._client_info.protocol_version
            out += encode_reply(reply, protocol)
    except BaseException as exc:  # noqa: BLE001 - nothing may cross into JavaScript
        out += f"-ERR {type(exc).__name__}: {exc}\r\n".encode()
    return to_js(bytes(out))


def close(client_id: int) -> None:
    """Forget a client whose socket closed."""
    conn = _clients.pop(client_id, None)
    if conn is not None:
        try:
            conn.disconnect()
        except Exception:  # noqa: BLE001
            pass


print(f"python {sys.version.split()[0]}, fakeredis {fakeredis.__version__}", flush=True)
