"""The argument rule, once on each side: :mod:`echomq_lab.scripts.arguments` (what the handles and a
room's gateway apply) and ``include/argument.lua`` (what every script applies before its first
write) take and refuse exactly the same numbers and ids (docs/protocol.md, Arguments).

Host-side: the Lua side runs on the in-process server (its Lua is the include's text itself,
not a script of the registry), once, not per backend; tests/test_argument_refusals.py calls
every script with odd arguments on every backend.
"""

from __future__ import annotations

import re

import pytest
import redis
from hypothesis import example, given, settings
from hypothesis import strategies as st

from echomq_lab import branded, errors
from echomq_lab.connection import connect
from echomq_lab.scripts import arguments, expand, load, names
from echomq_lab.scripts.arguments import NUMBERS, Number, decimal

#: What broke claim.lua before the rule (docs/protocol.md), and their kin.
ODD: tuple[bytes, ...] = (
    b"1_000", "١٠٠٠".encode(), b"nan", b"inf", b"-inf", b"1e308", b"1e3", b"-0", b"-5", b"",
    b" 1", b"1 ", b"+1", b"0x10", b"1.0", b"01", b"00", b"\x00", b"1\x00", b"\xff\xfe",
    b"9" * 20, b"7" * 60 * 1024,
)
#: The include's two checks, behind a harness that answers 1 for an argument they take.
HARNESS = expand(
    "--@include argument\n"
    "local bad\n"
    "if ARGV[1] == 'number' then\n"
    "  bad = decimal('n', ARGV[2], ARGV[3], ARGV[4])\n"
    "else\n"
    "  bad = branded('id', ARGV[2])\n"
    "end\n"
    "if bad then\n  return bad\nend\nreturn 1\n",
    "harness.lua",
)


@pytest.fixture(scope="module")
def lua() -> redis.Redis:
    return connect(fresh=True)


def lua_takes_number(conn: redis.Redis, raw: bytes, low: int, high: int) -> bool:
    try:
        return conn.eval(HARNESS, 0, "number", raw, str(low), str(high)) == 1
    except redis.ResponseError as exc:
        assert str(exc).startswith(f"EMQARG n must be decimal digits from {low} to {high}")
        return False


def lua_takes_id(conn: redis.Redis, raw: bytes) -> bool:
    try:
        return conn.eval(HARNESS, 0, "id", raw) == 1
    except redis.ResponseError as exc:
        assert str(exc).startswith("EMQARG id must be a branded id")
        return False


def python_takes_id(raw: bytes) -> bool:
    try:
        branded.check(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return True


@pytest.mark.parametrize("number", NUMBERS, ids=[f"{n.name}-{n.high}" for n in NUMBERS])
def test_the_odd_numbers_are_refused_alike_and_the_bounds_taken_alike(
    lua: redis.Redis, number: Number
) -> None:
    edges = [number.low, number.high, number.low + 1, number.high - 1]
    for raw in (*ODD, *(str(n).encode() for n in (number.low - 1, number.high + 1))):
        assert decimal(raw, number.low, number.high) is None, raw
        assert not lua_takes_number(lua, raw, number.low, number.high), raw
    for value in edges:
        raw = str(value).encode()
        assert decimal(raw, number.low, number.high) == value
        assert lua_takes_number(lua, raw, number.low, number.high)


@settings(deadline=None, max_examples=150)
@given(raw=st.one_of(st.binary(max_size=24), st.text(max_size=24).map(str.encode),
                     st.integers(-10, 10**20).map(lambda n: str(n).encode()),
                     st.from_regex(rb"\A[0-9]{1,20}\Z")),
       number=st.sampled_from(NUMBERS))
@example(raw=b"1_000", number=arguments.LEASE)
@example(raw="١٠٠٠".encode(), number=arguments.LEASE)
def test_python_and_lua_agree_on_any_number(lua: redis.Redis, raw: bytes, number: Number) -> None:
    value = decimal(raw, number.low, number.high)
    assert (value is not None) == lua_takes_number(lua, raw, number.low, number.high)
    if value is not None:
        assert str(value).encode() == raw  # one spelling per number: what the scripts take


@settings(deadline=None, max_examples=150)
@given(raw=st.one_of(st.binary(max_size=16),
                     st.builds(lambda ns, body: (ns + body).encode(),
                               st.text("ABCXYZabc0", min_size=3, max_size=3),
                               st.text(branded.ALPHABET + "_-é", min_size=10, max_size=12)),
                     st.integers(0, branded.MAX_SNOWFLAKE + 2**20).map(
                         lambda n: branded.encode("JOB", min(n, branded.MAX_SNOWFLAKE)).encode())))
@example(raw=b"JOB" + branded.ALPHABET[62 - 1].encode() * 11)
@example(raw=branded.encode("USR", branded.MAX_SNOWFLAKE).encode())
def test_python_and_lua_agree_on_any_id(lua: redis.Redis, raw: bytes) -> None:
    assert python_takes_id(raw) == lua_takes_id(lua, raw)


def test_a_refusal_reads_as_the_scripts_in_one_line() -> None:
    with pytest.raises(errors.BadArgument) as refused:
        arguments.LEASE.read(b"1_000")
    assert str(refused.value) == "EMQARG: lease must be decimal digits from 1 to 31536000000"
    assert isinstance(refused.value, ValueError)  # bad input, as the handles' own checks
    wire = errors.from_reply("EMQARG lease must be decimal digits from 1 to 31536000000"
                             " script: abc")
    assert type(wire) is errors.BadArgument and wire.detail == refused.value.detail


def test_the_handles_check_python_ints_with_the_same_bounds() -> None:
    assert arguments.LEASE.check(1) == 1
    for bad, kind in ((0, ValueError), (arguments.MAX_MS + 1, ValueError), (True, TypeError),
                      ("1000", TypeError), (1.0, TypeError)):
        with pytest.raises(kind, match="lease_ms"):
            arguments.LEASE.check(bad, "lease_ms")


_CHECK = re.compile(r"decimal\('(\w+)', ARGV\[(\d+)\], '(\d+)', '(\d+)'\)")
_ARGV = re.compile(r"^-- ARGV\[(\d+)\]\s+(\w+)", re.M)


@pytest.mark.parametrize("name", names())
def test_each_scripts_bounds_are_the_hosts(name: str) -> None:
    """Every number a script checks is one of :data:`arguments.NUMBERS`, by its name and
    bounds, at the ARGV position its header gives that name."""
    script = load(name)
    header = dict(_ARGV.findall(script.header))
    known = {(n.name, n.low, n.high) for n in NUMBERS}
    for arg, position, low, high in _CHECK.findall(script.source):
        assert (arg, int(low), int(high)) in known, (name, arg)
        assert header[position] == arg, (name, arg, position)
