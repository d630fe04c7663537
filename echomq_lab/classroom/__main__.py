"""``python -m echomq_lab.classroom start --room NAME --learners N [--port P] --out DIR``: start
a room (its server, its gateway on port P), write ``DIR/room.json``, run until Ctrl-C or SIGTERM,
then end the room and remove what it wrote (its passwords with it).

``resume DIR`` brings back the room of ``DIR`` after its process died (same ports, learners,
links and jobs) and runs it the same way; ``stop DIR`` ends it for good from another shell."""

from __future__ import annotations

import argparse
import logging
import resource
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from echomq_lab.classroom.board import Reaper
from echomq_lab.classroom.room import (
    DEFAULT_LEASE_MS,
    LOCAL_ORIGINS,
    MAX_LEARNERS,
    Room,
    RoomError,
    open_room,
    resume,
    stop_room,
)
from echomq_lab.classroom.watch import Watchdog

NETWORK_WARNING = (
    "WARNING: the room's gateway listens on {host}, not only on this machine: anyone on that "
    "network who has a learner's link can act as that learner. Run it on a network you "
    "trust, and stop it when the workshop ends.")


def _run(opened: Callable[[], Room]) -> int:
    """Run the room ``opened`` gives until Ctrl-C or SIGTERM, then end it."""
    stop = threading.Event()

    def on_signal(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    room = opened()
    reaper = Reaper(room.admin, room.name).start()
    watch = Watchdog(room, lambda line: print(line, file=sys.stderr, flush=True)).start()
    try:
        if room.listen not in ("127.0.0.1", "localhost", "::1"):
            print(NETWORK_WARNING.format(host=room.listen), file=sys.stderr)
        print(f"room {room.name!r}: {room.label} on loopback port {room.server_port}; "
              f"learners reach its gateway at {room.host}:{room.port} (Python) and "
              f"{room.gateway_url} (pages in the browser); {len(room.learners)} learners; "
              f"seats and links in {room.folder / 'room.json'}")
        print("Ctrl-C ends the room (`resume` brings back a room whose process died).",
              flush=True)
        stop.wait()
    finally:
        watch.stop()
        reaper.stop()
        print(room.stop(), flush=True)
    return 0


def _more_files() -> None:
    """Let this process hold as many sockets as the system allows it (a learner's socket and
    its connection to the server are two files each)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1 << 16), hard))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m echomq_lab.classroom",
                                     description="Run a workshop: one Valkey for a class.")
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a room and run it until Ctrl-C")
    start.add_argument("--room", required=True, help="the room's name (also its queue)")
    start.add_argument("--learners", type=int, required=True,
                       help=f"how many learners (1-{MAX_LEARNERS})")
    start.add_argument("--host", default="127.0.0.1",
                       help="where the gateway listens (default 127.0.0.1, this machine only); "
                       "a room's network address opens it to that network")
    start.add_argument("--advertise", default=None,
                       help="the address learners reach (default: --host)")
    start.add_argument("--port", type=int, default=None,
                       help="the gateway's port for Python (default: free)")
    start.add_argument("--gateway-port", type=int, default=None,
                       help="the gateway's WebSocket port for pages in the browser (default: "
                       "free)")
    start.add_argument("--server-port", type=int, default=None,
                       help="the server's port, on loopback only (default: free)")
    start.add_argument("--origin", action="append", default=None,
                       help="a page origin the gateway trusts (repeatable; default: pages "
                       f"served from this machine, {', '.join(LOCAL_ORIGINS)})")
    start.add_argument("--lease-ms", type=int, default=DEFAULT_LEASE_MS,
                       help="the lease length learners start with")
    start.add_argument("--out", required=True, help="the room's folder (room.json, its file)")
    again = sub.add_parser("resume", help="bring back the room of DIR and run it until Ctrl-C")
    again.add_argument("folder", metavar="DIR")
    end = sub.add_parser("stop", help="end the room of DIR for good")
    end.add_argument("folder", metavar="DIR")
    end.add_argument("--discard", action="store_true",
                     help="remove the room's file even when its server is not answering "
                     "(its jobs are lost)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    _more_files()
    try:
        if args.command == "stop":
            print(stop_room(args.folder, discard=args.discard))
            return 0
        if args.command == "resume":
            return _run(lambda: resume(args.folder))
        return _run(lambda: open_room(
            args.room, args.learners, host=args.host, port=args.port, advertise=args.advertise,
            lease_ms=args.lease_ms, out=args.out, ws_port=args.gateway_port,
            server_port=args.server_port,
            origins=tuple(args.origin) if args.origin else LOCAL_ORIGINS))
    except (RoomError, ValueError, TypeError) as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
