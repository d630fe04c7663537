"""The lab at scale, on a real Valkey: a deep queue in a busy keyspace.

The queue holds :data:`DEPTH` jobs (filled with pipelined runs of the real enqueue script) and
the server :data:`OTHER` unrelated keys (``DEBUG POPULATE``). The tests assert behaviour, never
time: the view never walks the keyspace and its reply does not grow with the queue; check()
finds drifts planted deep in the queue, and every command it sends handles a bounded number of
elements; a server that goes away mid-check gives one line, and the check runs again after.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from echomq_lab import branded, connect, drift, errors, keyspace
from echomq_lab.measure import commandstats, counting
from echomq_lab.scripts import load
from echomq_lab.servers import RunningServer
from echomq_lab.snapshot import WINDOW, drifts, view
from tests.support.backends import kill_server, restart_server

Q = "deep"
DEPTH = 20_000
OTHER = 100_000
FILL_BATCH = 1_000


def fill(conn: redis.Redis, queue: str, n: int) -> list[str]:
    """Enqueue ``n`` jobs with the enqueue script, pipelined; return their ids in mint order."""
    script = load("enqueue")
    conn.script_load(script.source)
    made = [branded.mint() for _ in range(n)]
    sets = [keyspace.queue_key(queue, name) for name in keyspace.SET_NAMES]
    for start in range(0, n, FILL_BATCH):
        pipe = conn.pipeline(transaction=False)
        for job in made[start : start + FILL_BATCH]:
            pipe.evalsha(script.sha, 5, keyspace.job_key(queue, job), *sets, job, b"x")
        assert pipe.execute() == [1] * len(made[start : start + FILL_BATCH])
    return made


#: DEBUG POPULATE fills the keyspace; the command is off unless the server is told.
DEBUG = ["--enable-debug-command", "yes"]


@pytest.fixture(scope="module")
def deep(own_server_of: Callable[..., RunningServer]) -> Iterator[tuple[redis.Redis, list[str]]]:
    """A Valkey of our own holding a DEPTH-job queue and OTHER unrelated keys."""
    with own_server_of("valkey", DEBUG) as server:
        conn = connect(server.url)
        try:
            conn.execute_command("DEBUG", "POPULATE", OTHER, "other")
            made = fill(conn, Q, DEPTH)
            yield conn, made
        finally:
            conn.close()


def _elements(reply: Any) -> int:
    """How many scalar elements a (nested) reply holds."""
    if isinstance(reply, (list, tuple)):
        return sum(_elements(r) for r in reply)
    return 1


def test_the_view_never_walks_the_keyspace(deep: tuple[redis.Redis, list[str]]) -> None:
    conn, made = deep
    assert conn.dbsize() >= OTHER + DEPTH
    conn.script_load(load("view").source)  # so no call below meets NOSCRIPT
    conn.config_resetstat()
    for i in range(20):
        snap = view(conn, Q, [made[-1 - i], made[DEPTH // 2]])
        assert snap.sizes["pending"] == DEPTH
        assert snap.showing("pending") == f"showing {WINDOW} of {DEPTH:,}"
    calls = {name: stat.calls for name, stat in commandstats(conn).items()}
    assert "keys" not in calls and "scan" not in calls, calls
    assert calls["evalsha"] == 20
    assert calls["zrange"] == 20 * 4  # one window per set per view
    assert calls["hgetall"] == 20 * 2  # the followed rows, and no others


def test_the_view_reply_does_not_grow_with_the_queue(deep: tuple[redis.Redis, list[str]]) -> None:
    conn, made = deep
    shallow = "shallow"
    few = fill(conn, shallow, 2 * WINDOW)  # just deeper than the window
    script = load("view")

    def reply_size(queue: str, follow: str) -> int:
        keys = [keyspace.queue_key(queue, n) for n in keyspace.SET_NAMES]
        keys.append(keyspace.job_key(queue, follow))
        args = [keyspace.job_prefix(queue), str(WINDOW), follow]
        return _elements(script(conn, keys, args))

    assert reply_size(Q, made[-1]) == reply_size(shallow, few[-1])
    assert len(view(conn, Q, [made[-1]]).ids()) == WINDOW + 1


def test_check_finds_drifts_planted_deep(deep: tuple[redis.Redis, list[str]]) -> None:
    conn, made = deep
    row = lambda i: keyspace.job_key(Q, made[i])  # noqa: E731
    mismatch, orphan_row, twice, no_row = made[15_000], made[17_000], made[18_000], made[19_000]
    conn.hset(row(15_000), "state", "dead")
    conn.zrem(keyspace.queue_key(Q, "pending"), orphan_row)
    conn.zadd(keyspace.queue_key(Q, "schedule"), {twice: 5})
    conn.delete(row(19_000))
    try:
        # the view sees only what is in its windows: the schedule set's one member, which is
        # in pending too; the other three lie far beyond pending's window
        assert [(d.kind, d.job_id) for d in drifts(view(conn, Q))] == [("in-two-sets", twice)]
        report = drift.check(conn, Q)
        assert {(d.kind, d.job_id) for d in report} == {
            ("state-mismatch", mismatch),
            ("row-in-no-set", orphan_row),
            ("in-two-sets", twice),
            ("member-without-row", no_row),
        }
        assert report.members == DEPTH - 1 and report.rows == DEPTH - 1
        assert report.consistent and report.dismissed == 0
        assert "walked 19,999 members and 19,999 rows: 4 drift(s)" in report.summary()
    finally:  # put the queue back for the other tests
        conn.hset(row(15_000), "state", "pending")
        conn.zadd(keyspace.queue_key(Q, "pending"), {orphan_row: 0})
        conn.zrem(keyspace.queue_key(Q, "schedule"), twice)
        conn.hset(row(19_000), mapping={"state": "pending", "attempts": "0", "payload": "x"})
    assert drift.check(conn, Q) == []


def _reply_sizes(conn: redis.Redis) -> list[tuple[str, int]]:
    """From now on, the name and reply size of every command ``conn`` sends alone."""
    sizes: list[tuple[str, int]] = []
    original = conn.execute_command

    def execute(*args: Any, **kwargs: Any) -> Any:
        reply = original(*args, **kwargs)
        sizes.append((str(args[0]).upper(), _elements(reply)))
        return reply

    conn.execute_command = execute  # type: ignore[method-assign]
    return sizes


def test_every_command_of_check_is_bounded(deep: tuple[redis.Redis, list[str]]) -> None:
    conn, _ = deep
    client = connect(_url(conn))
    sizes = _reply_sizes(client)
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 100_000)
    client.slowlog_reset()
    try:
        with counting() as requests:
            report = drift.check(client, Q)
        logged = client.slowlog_get(100_000)
    finally:
        client.config_set("slowlog-log-slower-than", 10_000)
    assert report == [] and report.members == DEPTH
    walkers = [(name, size) for name, size in sizes if name in ("ZSCAN", "SCAN")]
    assert {n for n, _ in walkers} == {"ZSCAN", "SCAN"}
    # a reply is [cursor, items]: items are members and scores (ZSCAN) or keys (SCAN)
    for name, size in walkers:
        bound = 2 * 4 * drift.STEP if name == "ZSCAN" else 4 * drift.SCAN_STEP
        assert size <= bound + 1, (name, size)
    batches = [int(n) for n in re.findall(r"^(?:PIPELINE|MULTI)\[(\d+)\]$", "\n".join(requests),
                                          re.MULTILINE)]  # fmt: skip
    assert batches and max(batches) <= max(drift.BATCH, 6 * drift.CONFIRM)
    # what the server ran: no command that walks the keyspace in one go
    ran = [bytes(entry["command"]).decode().split() for entry in logged]
    names = {words[0].upper() for words in ran}
    assert names <= {"ZCARD", "ZSCAN", "SCAN", "HMGET", "MULTI", "EXEC", "SLOWLOG"}, names
    # one row read per row: HMGET of state and attempts (check() lists a bad attempts too)
    assert sum(words[0].upper() == "HMGET" for words in ran) == DEPTH
    counts = [int(w[w.index("COUNT") + 1]) for w in ran if w[0].upper() in ("SCAN", "ZSCAN")]
    assert counts and max(counts) <= drift.SCAN_STEP
    client.close()


def _url(conn: redis.Redis) -> str:
    kw = conn.connection_pool.connection_kwargs
    return f"redis://{kw['host']}:{kw['port']}/0"


def test_a_server_gone_mid_check_is_one_line_and_check_runs_again(
    own_server_of: Callable[..., RunningServer],
) -> None:
    server = own_server_of("valkey", DEBUG)
    conn = connect(server.url)
    try:
        fill(conn, Q, 3_000)
        conn.execute_command("DEBUG", "POPULATE", 20_000, "other")
        scan, calls = conn.scan, []

        def scan_then_die(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 3:  # the walk is part way through the keyspace
                kill_server(server)
            return scan(*args, **kwargs)

        conn.scan = scan_then_die  # type: ignore[method-assign]
        with pytest.raises(errors.ServerUnavailable) as info:
            drift.check(conn, Q)
        text = str(info.value)
        assert "\n" not in text and text.startswith(f"cannot reach {server.url}: ")
        assert len(calls) == 3
        del conn.scan
        restart_server(server)  # empty: the server kept nothing
        fill(conn, Q, 5)
        report = drift.check(conn, Q)  # the same client, the same call
        assert report == [] and report.members == 5 and report.rows == 5
    finally:
        conn.close()
        server.stop()
