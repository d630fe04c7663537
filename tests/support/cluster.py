"""The fourth backend: a local 3-primary Valkey Cluster, started like the other real servers.

Its client comes from ``connect(url)`` with ``?cluster=1`` (a :class:`redis.RedisCluster`), so
every test on the ``conn`` fixture runs through the cluster's routing: each queue's scripts go to
the primary that owns its slot. A test that needs a single-node command skips on it, saying so.
"""

from __future__ import annotations

from echomq_lab.cluster import Cluster, ClusterError, start_cluster
from echomq_lab.servers import ServerStartError

#: The backend's name in the registry, the fixtures' ids and the summary.
NAME = "cluster"


def start_test_cluster() -> Cluster:
    """Three primaries, no replicas, on free loopback ports; ServerStartError when it cannot."""
    try:
        return start_cluster(replicas=0)
    except ClusterError as exc:
        raise ServerStartError(f"cluster backend unavailable: {exc}") from None


def skip_reason(backend: str, needs: str) -> str | None:
    """Why a test that ``needs`` something a cluster lacks cannot run on ``backend``, or None."""
    if backend != NAME:
        return None
    return f"not on a cluster: this test needs {needs}"
