"""The request counter (echomq_lab.measure.counting) counts on the lab's own connections only.

Every client ``connect()`` makes writes through the lab's connection class; counting opens a tap
on it for this thread. redis-py's classes are left as they are, so a second client that the lab
did not make, in the same process and the same thread, goes unseen. On every backend, the
cluster included.
"""

from __future__ import annotations

from typing import cast

import fakeredis
import redis
from redis.cluster import RedisCluster
from redis.connection import AbstractConnection

from echomq_lab import branded, jobs
from echomq_lab.connection import LabPool
from echomq_lab.measure import counting

#: redis-py's own methods, as imported: counting must leave them in place.
ORIGINALS = {name: AbstractConnection.__dict__[name]
             for name in ("send_packed_command", "on_connect_check_health")}


def plain_twin(conn: redis.Redis) -> redis.Redis:
    """A client on the same server (or cluster) that the lab did not make: redis-py's or
    fakeredis's own connections."""
    if isinstance(conn, RedisCluster):
        node = conn.get_default_node()
        return cast(redis.Redis, RedisCluster(host=node.host, port=node.port))
    kwargs = conn.connection_pool.connection_kwargs
    if isinstance(conn, fakeredis.FakeRedis):
        return fakeredis.FakeRedis(server=kwargs["server"])
    return redis.Redis(host=kwargs["host"], port=kwargs["port"])


def test_a_second_client_is_not_counted_and_nothing_is_patched(conn: redis.Redis) -> None:
    other = plain_twin(conn)
    try:
        other.set("count-other", b"1")  # connected before the block: no handshake inside
        with counting() as calls:
            for name, original in ORIGINALS.items():
                assert AbstractConnection.__dict__[name] is original, name
            jobs.enqueue(conn, "count-twin", branded.mint(), b"x")
            assert other.get("count-other") == b"1"
            other.set("count-other", b"2")
            conn.get("count-mine")
        assert calls[-2:] == ["EVALSHA", "GET"]  # an EVALSHA, after a SCRIPT LOAD if cold
        assert set(calls[:-2]) <= {"EVALSHA", "SCRIPT LOAD"}
        assert other.get("count-other") == b"2"  # its two requests ran, uncounted
    finally:
        other.close()


def test_the_lab_makes_its_clients_with_its_own_connections(conn: redis.Redis) -> None:
    pools = ([n.redis_connection.connection_pool for n in conn.get_nodes()
              if n.redis_connection is not None]
             if isinstance(conn, RedisCluster) else [conn.connection_pool])
    assert pools
    for pool in pools:  # the lab's connection class is the server kind's, with the tap in front
        assert isinstance(pool, LabPool) or isinstance(conn, fakeredis.FakeRedis)
        assert issubclass(pool.connection_class, redis.Connection)
        assert pool.connection_class.__module__ == "echomq_lab.connection"
