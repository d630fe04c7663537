"""Bad input gets a typed error and changes nothing (docs/protocol.md, Bad input).

Host-side refusals (malformed ids and queue names, bad leases, tokens, payloads and numbers)
must raise before any command is sent: each case checks the exception class, that the message
names what was wrong, that the keyspace is identical before and after, that the client sent no
command at all, and on the real servers that ``INFO commandstats`` moved by nothing but the
INFO call itself. The host-side cases are marked ``host`` (tests.support.placement): each runs
once, on the embedded server, and one test per backend walks them all on that backend's server
(``test_host_refusals_send_nothing_to_the_server``). Server-side refusals (stale tokens, gone
jobs, EMQKIND, EMQSTATE) send exactly one EVALSHA and also leave the keyspace identical.

Each case targets a live job, so a call that slipped through would visibly change something:
for instance ``complete(..., token=True)`` would retire the active job if ``True`` were sent
as ``1``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from echomq_lab import branded, connect, errors, jobs, keyspace, snapshot
from echomq_lab.branded import ALPHABET, MAX_SNOWFLAKE, WIDTH
from echomq_lab.cluster import failover
from echomq_lab.connection import node_client
from echomq_lab.jobs import MAX_MS, MAX_RUN_AT_MS
from echomq_lab.measure import commandstats, counting
from echomq_lab.scripts import load, names
from echomq_lab.servers import ServerStartError, free_port, start_server
from tests.support.state import dump

Q = "bad-input"
LONG = 60_000


@dataclass(frozen=True)
class World:
    """A queue with a job in every state, so any stray write would show."""

    pending: str
    active: str
    token: int
    due: str  # scheduled, already due: a stray promote would move it
    retried: str  # scheduled after one failure, attempts 1
    dead: str
    fresh: str  # a well-formed id with no row


@pytest.fixture
def world(conn: redis.Redis) -> World:
    dead = branded.mint()
    jobs.enqueue(conn, Q, dead, b"dead")
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and jobs.retry(conn, Q, dead, got.token, 0, 1, "fatal") == "dead"
    retried = branded.mint()
    jobs.enqueue(conn, Q, retried, b"retried")
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and jobs.retry(conn, Q, retried, got.token, LONG, 5, "e") == "scheduled"
    due = branded.mint()
    jobs.enqueue_at(conn, Q, due, b"due", 1_000)
    active = branded.mint()
    jobs.enqueue(conn, Q, active, b"active")
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and got.id == active
    pending = branded.mint()
    jobs.enqueue(conn, Q, pending, b"pending")
    for name in names():  # steady state: a call that reaches the server is one EVALSHA
        conn.script_load(load(name).source)
    return World(pending, active, got.token, due, retried, dead, branded.mint())


#: Commands a refusing script may run: all of them read-only.
READS_INSIDE_SCRIPTS = {"cmdstat_hget", "cmdstat_zscore", "cmdstat_exists"}


def _command_stats(conn: redis.Redis) -> dict[str, int]:
    node = node_client(conn, keyspace.base(Q))  # on a cluster: the primary that owns Q
    return {f"cmdstat_{name}": stat.calls for name, stat in commandstats(node).items()}


@contextmanager
def server_untouched(
    conn: redis.Redis, backend_name: str, expect_sent: list[str]
) -> Iterator[list[str]]:
    """Assert the keyspace is identical afterwards and exactly ``expect_sent`` was sent.

    Sent commands are counted by :func:`echomq_lab.measure.counting`, at the socket (works on
    every backend, fakeredis included). On real
    servers ``INFO commandstats`` must also show the sent commands plus the first INFO call
    itself, and nothing else but the read-only commands a refusing script runs (the server
    counts commands run inside scripts too).
    """
    before = dump(conn)
    real = backend_name != "fakeredis"
    stats_before = _command_stats(conn) if real else {}
    with counting() as sent:
        yield sent
    assert sent == expect_sent
    if real:
        delta = {
            name: calls - stats_before.get(name, 0)
            for name, calls in _command_stats(conn).items()
            if calls != stats_before.get(name, 0)
        }
        want = {"cmdstat_info": 1}
        for command in expect_sent:
            key = f"cmdstat_{command.lower()}"
            want[key] = want.get(key, 0) + 1
        inside = {k: v for k, v in delta.items() if k not in want}
        assert {k: delta.get(k, 0) for k in want} == want
        assert set(inside) <= READS_INSIDE_SCRIPTS, f"a refused call ran {inside}"
    assert dump(conn) == before


def refused_on_host(
    conn: redis.Redis,
    backend_name: str,
    call: Callable[[], object],
    exc_type: type[Exception],
    message: str,
) -> None:
    with server_untouched(conn, backend_name, expect_sent=[]):
        with pytest.raises(exc_type) as info:
            call()
    assert type(info.value) is exc_type, f"got {type(info.value).__name__}: {info.value}"
    assert re.search(message, str(info.value)), f"{str(info.value)!r} !~ {message!r}"


# ------------------------------------------------------------------------ bad ids ---


def _b62(n: int) -> str:
    digits = ""
    for _ in range(WIDTH):
        n, r = divmod(n, 62)
        digits = ALPHABET[r] + digits
    return digits


BAD_IDS: list[tuple[str, object, type[Exception], str]] = [
    ("short", "JOB123", ValueError, r"bad id 'JOB123': expected 14 characters, got 6"),
    ("long", "JOB" + "0" * 12, ValueError, r"expected 14 characters, got 15"),
    ("empty", "", ValueError, r"bad id '': expected 14 characters"),
    ("lowercase-namespace", "job0000000000A", ValueError, r"namespace 'job'"),
    ("mixed-namespace", "JoB0000000000A", ValueError, r"namespace 'JoB'"),
    ("digit-namespace", "J0B0000000000A", ValueError, r"namespace 'J0B'"),
    ("dash", "JOB0000000000-", ValueError, r"'-' is not a base62 character"),
    ("space", "JOB00000 00000", ValueError, r"' ' is not a base62 character"),
    ("non-ascii", "JOB000000000\u00e90", ValueError, r"'\u00e9' is not a base62 character"),
    ("overflow-zzz", "JOBzzzzzzzzzzz", ValueError, r"above 2\^63-1"),
    ("overflow-by-one", "JOB" + _b62(MAX_SNOWFLAKE + 1), ValueError, r"above 2\^63-1"),
    ("int", 12345, TypeError, r"id must be a str, not int"),
    ("bytes", b"JOB0000000000A", TypeError, r"id must be a str, not bytes"),
    ("none", None, TypeError, r"id must be a str, not NoneType"),
]

ID_HANDLES: dict[str, Callable[[redis.Redis, World, Any], object]] = {
    "enqueue": lambda c, w, i: jobs.enqueue(c, Q, i, b"x"),
    "enqueue_at": lambda c, w, i: jobs.enqueue_at(c, Q, i, b"x", 0),
    "enqueue_in": lambda c, w, i: jobs.enqueue_in(c, Q, i, b"x", 0),
    "complete": lambda c, w, i: jobs.complete(c, Q, i, w.token),
    "retry": lambda c, w, i: jobs.retry(c, Q, i, w.token, 0, 3, "e"),
    "extend": lambda c, w, i: jobs.extend(c, Q, i, w.token, LONG),
    "reprocess": lambda c, w, i: jobs.reprocess(c, Q, i),
    "record": lambda c, w, i: jobs.record(c, Q, i),
}


def test_max_id_is_accepted_and_one_more_is_not() -> None:
    top = "JOB" + _b62(MAX_SNOWFLAKE)
    assert branded.valid(top) and not branded.valid("JOB" + _b62(MAX_SNOWFLAKE + 1))


@pytest.mark.host
@pytest.mark.parametrize("handle", list(ID_HANDLES))
@pytest.mark.parametrize(
    ("bad", "exc", "message"), [c[1:] for c in BAD_IDS], ids=[c[0] for c in BAD_IDS]
)
def test_malformed_id_refused_before_the_wire(
    conn: redis.Redis,
    backend_name: str,
    world: World,
    handle: str,
    bad: object,
    exc: type[Exception],
    message: str,
) -> None:
    call = ID_HANDLES[handle]
    refused_on_host(conn, backend_name, lambda: call(conn, world, bad), exc, message)


# ---------------------------------------------------------------- bad queue names ---

BAD_QUEUES: list[tuple[str, object, type[Exception], str]] = [
    ("empty", "", ValueError, r"bad queue name ''"),
    ("65-chars", "q" * 65, ValueError, r"bad queue name 'q{65}'"),
    ("braces", "a{b}", ValueError, r"bad queue name 'a\{b\}'"),
    ("open-brace", "{q", ValueError, r"bad queue name '\{q'"),
    ("colon", "a:b", ValueError, r"bad queue name 'a:b'"),
    ("space", "a b", ValueError, r"bad queue name 'a b'"),
    ("nul", "a\x00b", ValueError, r"bad queue name 'a\\x00b'"),
    ("newline", "q\n", ValueError, r"bad queue name 'q\\n'"),
    ("glob-star", "q*", ValueError, r"bad queue name 'q\*'"),
    ("non-ascii", "q\u00e9", ValueError, r"bad queue name 'q\u00e9'"),
    ("int", 5, TypeError, r"queue name must be a str, not int"),
    ("bytes", b"q", TypeError, r"queue name must be a str, not bytes"),
    ("none", None, TypeError, r"queue name must be a str, not NoneType"),
]

QUEUE_HANDLES: dict[str, Callable[[redis.Redis, World, Any], object]] = {
    "enqueue": lambda c, w, q: jobs.enqueue(c, q, w.fresh, b"x"),
    "enqueue_at": lambda c, w, q: jobs.enqueue_at(c, q, w.fresh, b"x", 0),
    "enqueue_in": lambda c, w, q: jobs.enqueue_in(c, q, w.fresh, b"x", 0),
    "claim": lambda c, w, q: jobs.claim(c, q, LONG),
    "claim_dropping": lambda c, w, q: jobs.claim_dropping(c, q, LONG),
    "complete": lambda c, w, q: jobs.complete(c, q, w.active, w.token),
    "retry": lambda c, w, q: jobs.retry(c, q, w.active, w.token, 0, 3, "e"),
    "promote": lambda c, w, q: jobs.promote(c, q),
    "reap": lambda c, w, q: jobs.reap(c, q),
    "reprocess": lambda c, w, q: jobs.reprocess(c, q, w.dead),
    "extend": lambda c, w, q: jobs.extend(c, q, w.active, w.token, LONG),
    "browse": lambda c, w, q: jobs.browse(c, q, 10),
    "record": lambda c, w, q: jobs.record(c, q, w.pending),
    "snapshot": lambda c, w, q: snapshot.snapshot(c, q),
    "check": lambda c, w, q: snapshot.check(c, q),
}


@pytest.mark.host
@pytest.mark.parametrize("handle", list(QUEUE_HANDLES))
@pytest.mark.parametrize(
    ("bad", "exc", "message"), [c[1:] for c in BAD_QUEUES], ids=[c[0] for c in BAD_QUEUES]
)
def test_bad_queue_name_refused_before_the_wire(
    conn: redis.Redis,
    backend_name: str,
    world: World,
    handle: str,
    bad: object,
    exc: type[Exception],
    message: str,
) -> None:
    call = QUEUE_HANDLES[handle]
    refused_on_host(conn, backend_name, lambda: call(conn, world, bad), exc, message)


# ------------------------------------------------------- bad numbers and payloads ---

RANGE = "must be between"
NOT_INT = "must be an int, not"

# (case id, handle, bad value, exception, message)
BAD_ARGS: list[tuple[str, Callable[[redis.Redis, World, Any], object], object, type, str]] = []


def _cases(
    arg: str,
    handles: dict[str, Callable[[redis.Redis, World, Any], object]],
    values: list[tuple[str, object, type[Exception], str]],
) -> None:
    for hname, handle in handles.items():
        for vname, value, exc, message in values:
            BAD_ARGS.append((f"{arg}-{hname}-{vname}", handle, value, exc, message))


def _ints(arg: str, low: list[int], high: list[int], wrong: list[tuple[str, object]]) -> list:
    out: list[tuple[str, object, type[Exception], str]] = []
    out += [(f"low{v}", v, ValueError, rf"{arg} {RANGE} .* got {v}") for v in low]
    out += [(f"high{i}", v, ValueError, rf"{arg} {RANGE} .* got {v}") for i, v in enumerate(high)]
    out += [(n, v, TypeError, rf"{arg} {NOT_INT} {type(v).__name__}") for n, v in wrong]
    return out


NON_INTS: list[tuple[str, object]] = [
    ("bool", True),
    ("float", 1.0),
    ("str", "100"),
    ("none", None),
]

_cases(
    "lease",
    {
        "claim": lambda c, w, v: jobs.claim(c, Q, v),
        "claim_dropping": lambda c, w, v: jobs.claim_dropping(c, Q, v),
        "extend": lambda c, w, v: jobs.extend(c, Q, w.active, w.token, v),
    },
    _ints("lease_ms", [0, -1], [MAX_MS + 1, 10**30], NON_INTS),
)
# The cluster lab's durable claim checks its replica count and its wait like any argument.
_cases(
    "replicas",
    {"durable_claim": lambda c, w, v: failover.durable_claim(c, Q, LONG, replicas=v)},
    _ints("replicas", [-1], [65], [*NON_INTS, ("false", False), ("float-zero", 0.0)]),
)
_cases(
    "timeout",
    {"durable_claim": lambda c, w, v: failover.durable_claim(c, Q, LONG, replicas=0, timeout_ms=v)},
    _ints("timeout_ms", [0, -1], [MAX_MS + 1], [*NON_INTS, ("float-default", 1000.0)]),
)
_cases(
    "token",
    {
        "complete": lambda c, w, v: jobs.complete(c, Q, w.active, v),
        "retry": lambda c, w, v: jobs.retry(c, Q, w.active, v, 0, 3, "e"),
        "extend": lambda c, w, v: jobs.extend(c, Q, w.active, v, LONG),
    },
    _ints("token", [0, -1], [2**62 + 1], [*NON_INTS, ("false", False), ("bytes", b"1")]),
)
_cases(
    "delay",
    {
        "retry": lambda c, w, v: jobs.retry(c, Q, w.active, w.token, v, 3, "e"),
        "enqueue_in": lambda c, w, v: jobs.enqueue_in(c, Q, w.fresh, b"x", v),
    },
    _ints("delay_ms", [-1], [MAX_MS + 1], NON_INTS),
)
_cases(
    "max_attempts",
    {"retry": lambda c, w, v: jobs.retry(c, Q, w.active, w.token, 0, v, "e")},
    _ints("max_attempts", [0, -1], [2**62 + 1], NON_INTS),
)
_cases(
    "batch",
    {"promote": lambda c, w, v: jobs.promote(c, Q, v)},
    _ints("batch", [0, -1], [100_001], NON_INTS),
)
_cases(
    "run_at",
    {"enqueue_at": lambda c, w, v: jobs.enqueue_at(c, Q, w.fresh, b"x", v)},
    _ints("run_at_ms", [-1], [MAX_RUN_AT_MS + 1], [*NON_INTS, ("float-big", 1e12)]),
)
_cases(
    "browse",
    {"browse": lambda c, w, v: jobs.browse(c, Q, v)},
    _ints("n", [0, -1], [], [("bool", True), ("float", 2.0)]),
)
_cases(
    "payload",
    {
        "enqueue": lambda c, w, v: jobs.enqueue(c, Q, w.fresh, v),
        "enqueue_at": lambda c, w, v: jobs.enqueue_at(c, Q, w.fresh, v, 0),
        "enqueue_in": lambda c, w, v: jobs.enqueue_in(c, Q, w.fresh, v, 0),
    },
    [
        (name, value, TypeError, rf"payload must be bytes or str, not {type(value).__name__}")
        for name, value in [
            ("int", 123),
            ("none", None),
            ("float", 1.5),
            ("list", [b"a"]),
            ("dict", {"a": 1}),
        ]
    ],
)
_cases(
    "error",
    {"retry": lambda c, w, v: jobs.retry(c, Q, w.active, w.token, 0, 3, v)},
    [
        ("none", None, TypeError, r"error must be str or bytes, not NoneType"),
        ("int", 123, TypeError, r"error must be str or bytes, not int"),
    ],
)


@pytest.mark.host
@pytest.mark.parametrize(
    ("handle", "bad", "exc", "message"), [c[1:] for c in BAD_ARGS], ids=[c[0] for c in BAD_ARGS]
)
def test_bad_argument_refused_before_the_wire(
    conn: redis.Redis,
    backend_name: str,
    world: World,
    handle: Callable[[redis.Redis, World, Any], object],
    bad: object,
    exc: type[Exception],
    message: str,
) -> None:
    refused_on_host(conn, backend_name, lambda: handle(conn, world, bad), exc, message)


# (case id, handle, bad value, exception, message): every host-side case of the three tests above.
HOST_CASES: list[tuple[str, Callable[[redis.Redis, World, Any], object], object, type, str]] = [
    *((f"id-{h}-{c[0]}", ID_HANDLES[h], *c[1:]) for h in ID_HANDLES for c in BAD_IDS),
    *((f"queue-{h}-{c[0]}", QUEUE_HANDLES[h], *c[1:]) for h in QUEUE_HANDLES for c in BAD_QUEUES),
    *BAD_ARGS,
]


def test_host_refusals_send_nothing_to_the_server(
    conn: redis.Redis, backend_name: str, world: World
) -> None:
    """On every backend, each host-side case once more against that backend's server: the same
    exception and message, no command sent, the keyspace unchanged, and on a real server
    ``INFO commandstats`` moved by the INFO call alone. The cases above run once (``host``)."""
    assert len(HOST_CASES) > 400, "the host-side cases were not all gathered"
    for case, handle, bad, exc, message in HOST_CASES:
        try:
            refused_on_host(conn, backend_name, partial(handle, conn, world, bad), exc, message)
        except (Exception, pytest.fail.Exception) as failed:
            pytest.fail(f"{case}: {type(failed).__name__}: {failed}", pytrace=False)


@pytest.mark.parametrize("timeout_ms", [1000, 1, MAX_MS])
def test_a_durable_claim_of_no_replica_with_any_good_timeout_claims(
    conn: redis.Redis, timeout_ms: int
) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"p")
    got = failover.durable_claim(conn, Q, LONG, replicas=0, timeout_ms=timeout_ms)
    assert got == jobs.Claimed(job, b"p", 1)
    assert type(got.token) is int


def test_the_targets_were_live(conn: redis.Redis, world: World) -> None:
    """Sanity: the calls above, with good arguments, do change the server."""
    assert jobs.promote(conn, Q) == 1  # the due job moves
    assert jobs.complete(conn, Q, world.active, world.token) == "completed"
    assert jobs.enqueue(conn, Q, world.fresh, b"x") == "enqueued"
    assert jobs.reprocess(conn, Q, world.dead) == "pending"


# ------------------------------------------------------ refusals by the server ---

NEVER = "JOB00000000001"  # well-formed, never enqueued

# (case id, call, exception, message)
SERVER_REFUSALS: list[tuple[str, Callable[[redis.Redis, World], object], type, str]] = [
    (
        "complete-stale-token",
        lambda c, w: jobs.complete(c, Q, w.active, w.token + 1),
        errors.StaleToken,
        r"^EMQSTALE: token 2 is stale, the row's attempts is 1$",
    ),
    (
        "retry-stale-token",
        lambda c, w: jobs.retry(c, Q, w.active, w.token + 1, 0, 3, "e"),
        errors.StaleToken,
        r"^EMQSTALE: token 2 is stale",
    ),
    (
        "extend-stale-token",
        lambda c, w: jobs.extend(c, Q, w.active, w.token + 1, LONG),
        errors.StaleToken,
        r"^EMQSTALE: token 2 is stale",
    ),
    (
        "complete-pending-job",
        lambda c, w: jobs.complete(c, Q, w.pending, 1),
        errors.StaleToken,
        r"^EMQSTALE: token 1 is stale, the row's attempts is 0$",
    ),
    (
        "complete-dead-job-own-token",
        lambda c, w: jobs.complete(c, Q, w.dead, 1),
        errors.StaleToken,
        r"^EMQSTALE: token 1 holds no lease",
    ),
    (
        "retry-scheduled-job-own-token",
        lambda c, w: jobs.retry(c, Q, w.retried, 1, 0, 3, "e"),
        errors.StaleToken,
        r"^EMQSTALE: token 1 holds no lease",
    ),
    (
        "extend-dead-job-own-token",
        lambda c, w: jobs.extend(c, Q, w.dead, 1, LONG),
        errors.StaleToken,
        r"^EMQSTALE: token 1 holds no lease",
    ),
    (
        "retry-never-enqueued",
        lambda c, w: jobs.retry(c, Q, NEVER, 1, 0, 3, "e"),
        errors.StaleToken,
        r"^EMQSTALE: token 1 is stale: the job is gone$",
    ),
    (
        "complete-never-enqueued",
        lambda c, w: jobs.complete(c, Q, NEVER, 1),
        errors.JobGone,
        rf"^job {NEVER} has no row in queue '{Q}'$",
    ),
    (
        "extend-never-enqueued",
        lambda c, w: jobs.extend(c, Q, NEVER, 1, LONG),
        errors.JobGone,
        rf"^job {NEVER} has no row in queue '{Q}'$",
    ),
    (
        "reprocess-never-enqueued",
        lambda c, w: jobs.reprocess(c, Q, NEVER),
        errors.JobGone,
        rf"^job {NEVER} has no row in queue '{Q}'$",
    ),
    (
        "enqueue-ord-id",
        lambda c, w: jobs.enqueue(c, Q, "ORD" + w.fresh[3:], b"x"),
        errors.KindRefused,
        r"^EMQKIND: ORD\w{11} is not a JOB id$",
    ),
    (
        "enqueue-at-ord-id",
        lambda c, w: jobs.enqueue_at(c, Q, "ORD" + w.fresh[3:], b"x", 0),
        errors.KindRefused,
        r"^EMQKIND: ORD",
    ),
    (
        "enqueue-in-ord-id",
        lambda c, w: jobs.enqueue_in(c, Q, "ORD" + w.fresh[3:], b"x", 0),
        errors.KindRefused,
        r"^EMQKIND: ORD",
    ),
    (
        "reprocess-pending-job",
        lambda c, w: jobs.reprocess(c, Q, w.pending),
        errors.WrongState,
        r"^EMQSTATE: the job is pending, not dead$",
    ),
    (
        "reprocess-active-job",
        lambda c, w: jobs.reprocess(c, Q, w.active),
        errors.WrongState,
        r"^EMQSTATE: the job is active, not dead$",
    ),
    (
        "reprocess-scheduled-job",
        lambda c, w: jobs.reprocess(c, Q, w.retried),
        errors.WrongState,
        r"^EMQSTATE: the job is scheduled, not dead$",
    ),
]


@pytest.mark.parametrize(
    ("call", "exc", "message"),
    [c[1:] for c in SERVER_REFUSALS],
    ids=[c[0] for c in SERVER_REFUSALS],
)
def test_server_refusal_changes_nothing(
    conn: redis.Redis,
    backend_name: str,
    world: World,
    call: Callable[[redis.Redis, World], object],
    exc: type[errors.EchoMQError],
    message: str,
) -> None:
    with server_untouched(conn, backend_name, expect_sent=["EVALSHA"]):
        with pytest.raises(exc) as info:
            call(conn, world)
    assert type(info.value) is exc
    assert isinstance(info.value, errors.EchoMQError)
    assert re.search(message, str(info.value)), str(info.value)


# ------------------------------------------------------------- unreachable server ---


def test_connect_to_nothing_names_the_url_without_the_password() -> None:
    for url, shown in (
        ("redis://:secret@127.0.0.1:1", "redis://:***@127.0.0.1:1"),
        ("redis://alice:secret@127.0.0.1:1/0", "redis://alice:***@127.0.0.1:1/0"),
    ):
        with pytest.raises(errors.ServerUnavailable) as info:
            connect(url)
        text = str(info.value)
        assert text.startswith(f"cannot reach {shown}: "), text
        assert "secret" not in text
        assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.parametrize(
    ("url", "shown", "exc"),
    [
        # redis-py honours ?password= too, so it must be hidden like the userinfo one.
        (
            "redis://127.0.0.1:1/0?password=secret",
            "redis://127.0.0.1:1/0?password=***",
            errors.ServerUnavailable,
        ),
        # IPv6 hosts keep their brackets, or the shown URL is not the URL that was given.
        ("redis://:secret@[::1]:1/0", "redis://:***@[::1]:1/0", errors.ServerUnavailable),
        # A malformed port is a bad URL, reported as such (with the password hidden).
        ("redis://:secret@127.0.0.1:notaport", "redis://:***@127.0.0.1:notaport", ValueError),
    ],
    ids=["query-password", "ipv6", "bad-port"],
)
def test_connect_hides_every_form_of_password(url: str, shown: str, exc: type) -> None:
    with pytest.raises(exc) as info:
        connect(url)
    text = str(info.value)
    assert "secret" not in text
    assert shown in text, text
    if exc is ValueError:
        assert text.startswith("bad server URL "), text


def test_job_call_on_a_client_at_a_closed_port_is_server_unavailable() -> None:
    port = free_port()  # nothing listens there
    # No retries: one refused connection is enough to report.
    client = redis.Redis(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 0))
    for call in (
        lambda: jobs.claim(client, Q, LONG),
        lambda: jobs.enqueue(client, Q, branded.mint(), b"x"),
        lambda: jobs.record(client, Q, branded.mint()),
        lambda: jobs.browse(client, Q, 5),
        lambda: snapshot.check(client, Q),
    ):
        with pytest.raises(errors.ServerUnavailable) as info:
            call()
        assert str(info.value).startswith(f"cannot reach redis://127.0.0.1:{port}/0: ")


@pytest.fixture
def own_server() -> Iterator[Any]:
    """A server this test starts and stops itself (never the session's shared ones)."""
    reasons = []
    for kind in ("valkey", "redis"):
        try:
            server = start_server(kind)
        except ServerStartError as exc:
            reasons.append(str(exc).splitlines()[0])
            continue
        try:
            yield server
        finally:
            server.stop()
        return
    pytest.skip("no server binary to start and stop: " + "; ".join(reasons))


def test_job_call_after_the_server_stopped_is_server_unavailable(own_server: Any) -> None:
    client = connect(own_server.url)
    job = branded.mint()
    assert jobs.enqueue(client, Q, job, b"x") == "enqueued"
    own_server.stop()
    for call in (lambda: jobs.claim(client, Q, LONG), lambda: jobs.record(client, Q, job)):
        with pytest.raises(errors.ServerUnavailable) as info:
            call()
        assert str(info.value).startswith(f"cannot reach {own_server.url}: ")
        assert not isinstance(info.value, errors.Refusal)
        assert errors.kind_of(info.value) == "server unreachable"
