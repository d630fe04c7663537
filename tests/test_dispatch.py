"""Dispatch: every transition is ONE EVALSHA; NOSCRIPT loads and retries; refusals map by word.

How "one command" is measured:

* every backend (fakeredis included, which has no INFO at all): the package's request counter
  (the lab's own connections, ``echomq_lab.connection.tapped``) records each command sent;
* real servers, from the server's side: ``INFO stats commandstats`` before and after. The
  EVALSHA count moves by exactly 1, EVAL/SCRIPT/FCALL by 0, and ``total_net_input_bytes``
  moves by exactly the bytes of the first INFO plus one packed EVALSHA (so nothing else reached
  the server). ``total_commands_processed`` is not "+1": servers count the commands a script
  runs too, so it must equal 1 (the first INFO) + 1 (EVALSHA) + the commands counted inside.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis
from redis.cluster import RedisCluster

from echomq_lab import branded, errors, jobs, snapshot
from echomq_lab.scripts import Script, load, names
from tests.support.state import dump
from tests.support.traffic import INFO_ARGS, assert_one_evalsha, packed_size, preload, traffic

Q = "dispatch"
LONG = 60_000


@pytest.fixture
def real(backend_name: str) -> bool:
    return backend_name != "fakeredis"


# ------------------------------------------------------------- one EVALSHA each ---

#: name -> (script it runs, setup returning the call to measure)
Setup = Callable[[redis.Redis], Callable[[], object]]


def _pending(conn: redis.Redis) -> str:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"p")
    return job


def _active(conn: redis.Redis) -> tuple[str, int]:
    job = _pending(conn)
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and got.id == job
    return job, got.token


def _dead(conn: redis.Redis) -> str:
    job, token = _active(conn)
    assert jobs.retry(conn, Q, job, token, 0, 1, "x") == "dead"
    return job


def _setup_complete(conn: redis.Redis) -> Callable[[], object]:
    job, token = _active(conn)
    return lambda: jobs.complete(conn, Q, job, token)


def _setup_retry(conn: redis.Redis) -> Callable[[], object]:
    job, token = _active(conn)
    return lambda: jobs.retry(conn, Q, job, token, 0, 3, "e")


def _setup_extend(conn: redis.Redis) -> Callable[[], object]:
    job, token = _active(conn)
    return lambda: jobs.extend(conn, Q, job, token, LONG)


def _setup_promote(conn: redis.Redis) -> Callable[[], object]:
    jobs.enqueue_at(conn, Q, branded.mint(), b"due", 1_000)
    return lambda: jobs.promote(conn, Q)


def _setup_reprocess(conn: redis.Redis) -> Callable[[], object]:
    job = _dead(conn)
    return lambda: jobs.reprocess(conn, Q, job)


ANY = object()  # the reply is checked elsewhere (conformance); here only the traffic counts

TRANSITIONS: dict[str, tuple[str, Setup, object]] = {
    "enqueue": ("enqueue", lambda c: lambda: jobs.enqueue(c, Q, branded.mint(), b"x"), "enqueued"),
    "enqueue_at": (
        "schedule",
        lambda c: lambda: jobs.enqueue_at(c, Q, branded.mint(), b"x", 5),
        "scheduled",
    ),
    "enqueue_in": (
        "schedule",
        lambda c: lambda: jobs.enqueue_in(c, Q, branded.mint(), b"x", 5),
        "scheduled",
    ),
    "claim": ("claim", lambda c: (_pending(c), lambda: jobs.claim(c, Q, LONG))[1], ANY),
    "claim-empty": ("claim", lambda c: lambda: jobs.claim(c, Q, LONG), None),
    "complete": ("complete", _setup_complete, "completed"),
    "retry": ("retry", _setup_retry, "scheduled"),
    "promote": ("promote", _setup_promote, 1),
    "reap": ("reap", lambda c: lambda: jobs.reap(c, Q), 0),
    "reprocess": ("reprocess", _setup_reprocess, "pending"),
    "extend": ("extend", _setup_extend, ANY),
    "snapshot": ("view", lambda c: lambda: snapshot.snapshot(c, Q), ANY),
    "view": ("view", lambda c: lambda: snapshot.view(c, Q), ANY),
}


@pytest.mark.parametrize("name", list(TRANSITIONS))
def test_each_call_is_one_evalsha(conn: redis.Redis, real: bool, name: str) -> None:
    script, setup, expected = TRANSITIONS[name]
    call = setup(conn)
    preload(conn)
    with traffic(conn, real) as t:
        reply = call()
    assert_one_evalsha(t, real, load(script).sha)
    if expected is not ANY:
        assert reply == expected
    assert snapshot.check(conn, Q) == []


def test_a_refusal_is_one_evalsha_too(conn: redis.Redis, real: bool) -> None:
    job, token = _active(conn)
    preload(conn)
    with traffic(conn, real) as t:
        with pytest.raises(errors.StaleToken):
            jobs.complete(conn, Q, job, token + 1)
    assert_one_evalsha(t, real, load("complete").sha)


@pytest.mark.parametrize(
    ("name", "call", "command"),
    [
        ("browse", lambda c: jobs.browse(c, Q, 5), "ZRANGE"),
        ("record", lambda c: jobs.record(c, Q, "JOB00000000001"), "HGETALL"),
    ],
)
def test_reads_are_one_plain_command(
    conn: redis.Redis, real: bool, name: str, call: Callable[[redis.Redis], object], command: str
) -> None:
    _pending(conn)
    with traffic(conn, real) as t:
        call(conn)
    assert t.names() == [command]
    if real:
        assert t.calls == {"cmdstat_info": 1, f"cmdstat_{command.lower()}": 1}
        assert t.input_bytes == packed_size(*INFO_ARGS) + packed_size(*t.sent[0])


# ------------------------------------------------------------------ NOSCRIPT path ---


def test_sha_is_the_servers_sha(conn: redis.Redis) -> None:
    for name in names():
        script = load(name)
        assert script.name == name
        assert conn.script_load(script.source) == script.sha
        assert script.header.startswith(f"-- {name}:")
        assert all(line.startswith("--") for line in script.header.splitlines())


def test_after_script_flush_the_next_call_loads_and_retries(conn: redis.Redis, real: bool) -> None:
    job = _pending(conn)
    preload(conn)
    conn.script_flush()
    sha = load("claim").sha
    assert conn.script_exists(sha) == [False]
    with traffic(conn, real) as t:
        got = jobs.claim(conn, Q, LONG)
    assert got == jobs.Claimed(job, b"p", 1)
    # the script is loaded on every primary (one on a single server), each a request of its own
    primaries = len(conn.get_primaries()) if isinstance(conn, RedisCluster) else 1
    assert t.names() == ["EVALSHA", *["SCRIPT LOAD"] * primaries, "EVALSHA"]
    assert t.sent[0][1] == sha.encode() and t.sent[-1][1] == sha.encode()
    assert set(t.sent[1:-1]) == {(b"SCRIPT", b"LOAD", load("claim").source.encode())}
    assert conn.script_exists(sha) == [True]
    if real:
        assert t.calls["cmdstat_evalsha"] == 2
        assert t.calls["cmdstat_script|load"] == 1
        assert "cmdstat_eval" not in t.calls
    # Loaded once: the next call is one EVALSHA again.
    jobs.enqueue(conn, Q, branded.mint(), b"q")
    with traffic(conn, real) as t2:
        assert jobs.claim(conn, Q, LONG) is not None
    assert_one_evalsha(t2, real, sha)


def test_flush_between_refusals_still_maps_the_refusal(conn: redis.Redis) -> None:
    job, token = _active(conn)
    conn.script_flush()
    before = dump(conn)
    with pytest.raises(errors.StaleToken):
        jobs.complete(conn, Q, job, token + 5)
    assert dump(conn) == before


# -------------------------------------------------------------- reply mapping ---

SUFFIX = " script: 4a5e3b2c1d0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d, on @user_script:13."


@pytest.mark.parametrize(
    ("reply", "cls", "detail"),
    [
        ("EMQSTALE token 1 is stale, the row's attempts is 2", errors.StaleToken,
         "token 1 is stale, the row's attempts is 2"),
        ("EMQSTALE token 1 is stale, the row's attempts is 2" + SUFFIX, errors.StaleToken,
         "token 1 is stale, the row's attempts is 2"),
        ("EMQKIND ORD0KHTOWnGLuC is not a JOB id" + SUFFIX, errors.KindRefused,
         "ORD0KHTOWnGLuC is not a JOB id"),
        ("EMQSTATE the job is active, not dead" + SUFFIX, errors.WrongState,
         "the job is active, not dead"),
        ("EMQSTATE the job is active, not dead", errors.WrongState, "the job is active, not dead"),
    ],
)  # fmt: skip
def test_from_reply_maps_by_first_word(
    reply: str, cls: type[errors.EchoMQError], detail: str
) -> None:
    mapped = errors.from_reply(reply)
    assert type(mapped) is cls
    assert mapped.detail == detail
    assert mapped.wire_class == reply.split(" ", 1)[0]
    assert str(mapped) == f"{mapped.wire_class}: {detail}"
    assert "script:" not in str(mapped) and "\n" not in str(mapped)


@pytest.mark.parametrize(
    "reply",
    [
        "ERR something went wrong",
        "WRONGTYPE Operation against a key holding the wrong kind of value" + SUFFIX,
        "user_script:1: EMQSTALE raised with error()" + SUFFIX,
        "EMQSTALEX not a wire class",
        "emqstale lower case is not the wire class",
        "EMQGONE is host-side only",
        "EMQDOWN is host-side only",
        "",
    ],
)
def test_from_reply_leaves_unknown_words_alone(reply: str) -> None:
    assert errors.from_reply(reply) is None


def test_error_hierarchy() -> None:
    for cls, word in (
        (errors.StaleToken, "EMQSTALE"),
        (errors.KindRefused, "EMQKIND"),
        (errors.WrongState, "EMQSTATE"),
        (errors.BadRow, "EMQROW"),
        (errors.BadArgument, "EMQARG"),
    ):
        assert issubclass(cls, errors.Refusal) and cls.wire_class == word
        assert not issubclass(cls, errors.HostCondition)
        exc = cls("the detail")
        assert str(exc) == f"{word}: the detail" and errors.kind_of(exc) == word
    for host, label in ((errors.JobGone, "job gone"),
                        (errors.ServerUnavailable, "server unreachable"),
                        (errors.NoAnswer, "no answer"),
                        (errors.AuthFailed, "authentication failed")):
        # the host's own conditions: no wire class, and their text is the detail alone
        assert issubclass(host, errors.HostCondition) and issubclass(host, errors.EchoMQError)
        assert not issubclass(host, errors.Refusal) and not hasattr(host, "wire_class")
        exc = host("the detail")
        assert str(exc) == "the detail" and errors.kind_of(exc) == label == host.label
    # The lab's own refusal, for its authors: a script still the stub of `make transition`.
    stub = errors.from_reply("EMQTODO cancel is not written yet")
    assert isinstance(stub, errors.NotWritten) and isinstance(stub, errors.Refusal)
    assert str(stub) == "cancel is not written yet" and errors.kind_of(stub) == "EMQTODO"
    assert set(errors.WIRE_CLASSES) == {"EMQSTALE", "EMQKIND", "EMQSTATE", "EMQROW", "EMQARG",
                                        "EMQTODO"}


def test_suffixed_refusal_from_a_live_server_is_typed(conn: redis.Redis) -> None:
    """A script whose error reply carries a server-style suffix still maps by its first word."""
    probe = Script("probe", "return redis.error_reply('EMQSTATE the job is odd" + SUFFIX + "')")
    with pytest.raises(errors.WrongState) as info:
        probe(conn, [], [])
    assert info.value.detail == "the job is odd"
    assert str(info.value) == "EMQSTATE: the job is odd"


def test_non_protocol_error_passes_through_as_response_error(conn: redis.Redis) -> None:
    """A row key of the wrong type is not a refusal: the server's WRONGTYPE comes through."""
    job = branded.mint()
    conn.set(f"emq:{{{Q}}}:job:{job}", "not a hash")
    before = dump(conn)
    with pytest.raises(redis.ResponseError) as info:
        jobs.complete(conn, Q, job, 1)
    assert not isinstance(info.value, errors.EchoMQError)
    assert "WRONGTYPE" in str(info.value)
    assert dump(conn) == before


def test_live_refusal_text_is_one_line_without_suffix(conn: redis.Redis) -> None:
    job, token = _active(conn)
    with pytest.raises(errors.StaleToken) as info:
        jobs.extend(conn, Q, job, token + 1, LONG)
    assert str(info.value) == "EMQSTALE: token 2 is stale, the row's attempts is 1"
    assert info.value.wire_class == "EMQSTALE"
