"""Every script of the registry refuses a malformed argument before its first write, on every
backend (docs/protocol.md, Arguments).

Each script is called with raw EVALSHA, its keys and arguments those of a good call (from its
layout: :mod:`echomq_lab.scripts.layout`) on a queue with a job in every state, with one
argument at a time replaced by an odd value (:data:`ODD`: what broke claim.lua before, and
their kin). Every such call must be refused with ``EMQARG`` naming that argument, in one line,
and leave the keyspace byte-identical: the same keys, each with the same ``DUMP``. Then a small
hypothesis budget tries other bytes the host's rule refuses. Finally the good call itself is
accepted and changes something (so the refusals were of calls that would have written).

A payload or an error text is bytes kept verbatim: any value is good there, so those positions
take no odd value. The demonstration scripts (:data:`echomq_lab.scripts.DEMOS`) show failures
on purpose and are not held to the rule.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from echomq_lab import branded, jobs, keyspace, scripts
from echomq_lab.scripts import VIEWS, arguments, layout
from echomq_lab.scripts.arguments import Number
from echomq_lab.transitions import SCRIPTS
from tests.support.backends import backend_names

Q = "odd-args"
LONG = 60_000
#: The odd values of issue 43, and their kin: each malformed for every checked argument.
ODD: tuple[bytes, ...] = (
    b"1_000", "١٠٠٠".encode(), b"nan", b"inf", b"1e308", b"-0", b"-5", b"", b"0x1F", b" 7",
    b"7.0", b"07", b"9" * 20, b"\x00\xff\xfe", b"abc", b"7" * 60 * 1024,
)
#: Every script the registry runs, and the view.
REGISTRY: tuple[str, ...] = (*SCRIPTS, *VIEWS)


@pytest.fixture(params=[*backend_names(), "browser"], ids=[*backend_names(), "browser"])
def backend_name(request: pytest.FixtureRequest) -> str:
    """Every backend, and the browser's (Pyodide + fengari, as the static site runs it)."""
    return str(request.param)


def keyspace_bytes(conn: redis.Redis) -> dict[bytes, bytes]:
    """Every key with its DUMP."""
    keys = sorted(cast(list[bytes], conn.keys("*")))
    pipe = conn.pipeline(transaction=False)
    for key in keys:
        pipe.dump(key)
    return dict(zip(keys, cast(list[bytes], pipe.execute()), strict=True))


def world(conn: redis.Redis) -> dict[str, Any]:
    """A job in every state (pending, active, expired, due in schedule, dead), and good values
    of every argument form, aimed at the jobs a stray write would move."""
    dead, active, expired, pending, due = (branded.mint() for _ in range(5))
    jobs.enqueue(conn, Q, dead, b"dead")
    got = jobs.claim(conn, Q, LONG)
    assert got is not None and jobs.retry(conn, Q, dead, got.token, 0, 1, "fatal") == "dead"
    jobs.enqueue(conn, Q, active, b"active")
    held = jobs.claim(conn, Q, LONG)
    assert held is not None and held.id == active
    jobs.enqueue(conn, Q, expired, b"expired")
    assert jobs.claim(conn, Q, 1) is not None  # runs out at once: reap has one to return
    jobs.enqueue(conn, Q, pending, b"pending")
    jobs.enqueue_in(conn, Q, due, b"due", 0)
    time.sleep(0.01)
    return {"active": active, "token": held.token, "dead": dead, "fresh": branded.mint()}


def good_call(name: str, w: dict[str, Any]) -> tuple[list[str], list[bytes]]:
    """The keys and arguments of a call of ``name`` the script takes and acts on."""
    shape = layout.of(name)
    job = {"enqueue": w["fresh"], "schedule": w["fresh"], "reprocess": w["dead"]}.get(
        name, w["active"])
    values: dict[str, bytes] = {
        "prefix": keyspace.job_prefix(Q).encode(), "id": job.encode(), "payload": b"p",
        "error": b"e", "mode": b"in", "ms": b"0", "lease": b"60000",
        "token": str(w["token"]).encode(), "delay": b"0", "max": b"5", "batch": b"100",
        "window": b"10", "ids": w["active"].encode()}
    follow = [w["active"]] if shape.more_args else []
    args = [values[n] for n in shape.arg_names]
    args += [values[shape.more_args] for _ in follow]
    return shape.keys(Q, job if "row" in shape.key_names else "", follow), args


def checked(name: str, args: list[bytes]) -> list[tuple[int, str]]:
    """The positions of ``name``'s arguments that have a form to check, with their names."""
    shape = layout.of(name)
    names = [*shape.arg_names, *[shape.more_args] * (len(args) - len(shape.arg_names))]
    return [(n, a) for n, a in enumerate(names) if layout.FORMS[a] != "text"]


def wire_name(arg: str) -> str:
    """The name a refusal gives the argument (a number's wire name, an id's ``id``)."""
    form = layout.FORMS[arg]
    return form.name if isinstance(form, Number) else {"ids": "id"}.get(arg, arg)


def evalsha(conn: redis.Redis, name: str, keys: list[str], args: list[bytes]) -> Any:
    script = scripts.load(name)
    try:
        return conn.evalsha(script.sha, len(keys), *keys, *args)
    except redis.exceptions.NoScriptError:
        script.load_into(conn)
        return conn.evalsha(script.sha, len(keys), *keys, *args)


def refused_alike(conn: redis.Redis, name: str, keys: list[str], args: list[bytes],
                  arg: str, before: dict[bytes, bytes]) -> None:
    with pytest.raises(redis.ResponseError) as refusal:
        evalsha(conn, name, keys, args)
    said = str(refusal.value)
    assert said.startswith(f"EMQARG {wire_name(arg)} must be "), (name, arg, said[:80])
    assert "\n" not in said and len(said) < 200
    assert keyspace_bytes(conn) == before, (name, arg)


@pytest.fixture
def loaded(conn: redis.Redis, name: str) -> Iterator[tuple[redis.Redis, dict[str, Any]]]:
    """The world, for a script that is written (a stub of ``make transition`` skips, saying so:
    it refuses every call until its body, argument checks first, is written)."""
    if scripts.is_stub(name):
        pytest.skip(f"{name}.lua is still the stub `make transition` wrote")
    yield conn, world(conn)


@pytest.mark.parametrize("name", REGISTRY)
def test_an_odd_argument_is_refused_and_changes_nothing(
    loaded: tuple[redis.Redis, dict[str, Any]], name: str
) -> None:
    conn, w = loaded
    keys, args = good_call(name, w)
    before = keyspace_bytes(conn)
    for position, arg in checked(name, args):
        for odd in ODD:
            bent = [*args[:position], odd, *args[position + 1:]]
            refused_alike(conn, name, keys, bent, arg, before)
    reply = evalsha(conn, name, keys, args)  # the good call is taken
    assert reply not in (0, -1, [], None), (name, reply)
    if name not in VIEWS:
        assert keyspace_bytes(conn) != before, name


@pytest.mark.parametrize("name", REGISTRY)
def test_any_bytes_the_rule_refuses_every_script_refuses(
    loaded: tuple[redis.Redis, dict[str, Any]], name: str
) -> None:
    conn, w = loaded
    keys, args = good_call(name, w)
    before = keyspace_bytes(conn)
    positions = checked(name, args)

    @settings(deadline=None, max_examples=12, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(at=st.sampled_from(positions),
           odd=st.one_of(st.binary(max_size=24), st.text(max_size=12).map(str.encode)))
    def one(at: tuple[int, str], odd: bytes) -> None:
        position, arg = at
        form = layout.FORMS[arg]
        if isinstance(form, Number):
            if arguments.decimal(odd, form.low, form.high) is not None or (
                    arg == "window" and odd == b"all"):
                return  # a good number: not this test's
        elif odd == args[position] or (arg == "mode" and odd in (b"at", b"in")):
            return
        bent = [*args[:position], odd, *args[position + 1:]]
        refused_alike(conn, name, keys, bent, arg, before)

    one()
