"""``python -m echomq_lab.classroom start --room NAME --learners N [--host H] [--port P]
--out DIR``: start a room, write ``DIR/room.json``, run until Ctrl-C or SIGTERM, then stop the
server and remove what it started (``room.json`` included: its passwords die with the room)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from echomq_lab.classroom.board import Reaper
from echomq_lab.classroom.room import DEFAULT_LEASE_MS, MAX_LEARNERS, RoomError, open_room

if TYPE_CHECKING:
    from echomq_lab.classroom.gateway import Gateway

NETWORK_WARNING = (
    "WARNING: the room's server listens on {host}, not only on this machine: anyone on that "
    "network who has a learner's link can use that learner's rights. Run it on a network you "
    "trust, and stop it when the workshop ends.")


def _start(args: argparse.Namespace) -> int:
    room = open_room(args.room, args.learners, host=args.host, port=args.port,
                     advertise=args.advertise, lease_ms=args.lease_ms,
                     may_load=not args.locked_scripts)
    stop = threading.Event()

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    reaper = Reaper(room.admin, room.name).start()
    gateway: Gateway | None = None
    try:
        if args.gateway_port >= 0:
            try:  # the gateway needs the websockets package; the room runs without it
                from echomq_lab.classroom.gateway import Gateway
            except ImportError as exc:
                raise RoomError(f"no WebSocket gateway ({exc}): install websockets, or pass "
                                "--gateway-port -1") from None
            gateway = Gateway(room.port, args.host, args.gateway_port).start()
            room.gateway = f"ws://{room.host}:{gateway.port}"
        path = room.write(args.out)
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(NETWORK_WARNING.format(host=args.host), file=sys.stderr)
        print(f"room {room.name!r}: {room.server.label} on {room.host}:{room.port}, "
              f"{len(room.learners)} learners; seats and links in {path}")
        if gateway is not None:
            print(f"pages in the browser join through {room.gateway}")
        print("Ctrl-C ends the room.", flush=True)
        stop.wait()
    finally:
        if gateway is not None:
            gateway.stop()
        reaper.stop()
        room.stop()
        Path(args.out, "room.json").unlink(missing_ok=True)
        print(f"room {room.name!r} closed: server stopped, room.json removed")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m echomq_lab.classroom",
                                     description="Run a workshop: one Valkey for a class.")
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a room and run it until Ctrl-C")
    start.add_argument("--room", required=True, help="the room's name (also its queue)")
    start.add_argument("--learners", type=int, required=True,
                       help=f"how many learners (1-{MAX_LEARNERS})")
    start.add_argument("--host", default="127.0.0.1",
                       help="where the server listens (default 127.0.0.1, this machine only); "
                       "a room's network address opens it to that network")
    start.add_argument("--advertise", default=None,
                       help="the address learners reach (default: --host)")
    start.add_argument("--port", type=int, default=None, help="the server's port (default: free)")
    start.add_argument("--lease-ms", type=int, default=DEFAULT_LEASE_MS,
                       help="the lease length learners start with")
    start.add_argument("--gateway-port", type=int, default=0,
                       help="the WebSocket gateway's port for pages in the browser (default: "
                       "free; -1: no gateway)")
    start.add_argument("--locked-scripts", action="store_true",
                       help="learners may run only the protocol's scripts (loaded at start), "
                       "not load Lua of their own")
    start.add_argument("--out", required=True, help="folder for room.json")
    args = parser.parse_args(argv)
    try:
        return _start(args)
    except (RoomError, ValueError, TypeError) as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
