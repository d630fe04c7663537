"""The browser backend (Pyodide + fengari, as the static site runs it): its Lua.

(The conformance list and the differential test run on it too, in their own modules.)

* Where fengari's Lua 5.3 differs from Valkey's Lua 5.1: the differences that remain are
  pinned (so a fengari upgrade that changes them is noticed), the ones the stand-in evens out
  are checked, and the protocol's scripts are checked to use none of 5.3's own syntax.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from echomq_lab import connect
from tests.support.in_pyodide import output_of, run_each_in_pyodide

SCRIPTS = Path(__file__).resolve().parents[1] / "echomq_lab" / "scripts"


@pytest.fixture(scope="module")
def browser(browser_url: str) -> redis.Redis:
    """A client on the session's browser backend (started on first use)."""
    return connect(browser_url)


# ------------------------------------------------------------- fengari is Lua 5.3 ---

#: What fengari still does its own way (docs/site.md: the Lua 5.3 differences).
STILL_DIFFERENT = [
    ("return 'job:' .. (4 / 2)", b"job:2.0"),  # Lua 5.1: job:2
    ("return 7 // 2", 3),  # Lua 5.1: a syntax error
    ("return 6 & 3", 2),  # Lua 5.1: a syntax error
    ("return math.type(1)", b"integer"),  # Lua 5.1: math.type is nil
]

#: What the stand-in makes behave as Lua 5.1 does.
EVENED_OUT = [
    # fengari's integers are 32-bit and wrap; numbers read by tonumber are doubles, as in 5.1
    ("return string.format('%d', tonumber('1764643200') * 1000 + 123)", b"1764643200123"),
    ("return tostring(tonumber('5'))", b"5"),
    ("return tostring(tonumber('1764643200123'))", b"1764643200123"),
    ("return (unpack({1, 2}))", 1),
    ("collectgarbage() return 1", 1),
]


@pytest.mark.parametrize(("source", "answer"), STILL_DIFFERENT)
def test_lua_53_differences_remain_in_the_browser(
    browser: redis.Redis, source: str, answer: object
) -> None:
    assert browser.eval(source, 0) == answer


@pytest.mark.parametrize(("source", "answer"), EVENED_OUT)
def test_the_stand_in_answers_as_lua_51(browser: redis.Redis, source: str, answer: object) -> None:
    assert browser.eval(source, 0) == answer


def test_valkey_answers_the_same_as_the_stand_in(valkey_url: str) -> None:
    """The evened-out cases answer the same on Valkey (so they are 5.1's answers)."""
    valkey = connect(valkey_url)
    try:
        assert [valkey.eval(source, 0) for source, _ in EVENED_OUT] == [a for _, a in EVENED_OUT]
        assert valkey.eval(STILL_DIFFERENT[0][0], 0) == b"job:2"
        for source, _ in STILL_DIFFERENT[1:3]:
            with pytest.raises(redis.ResponseError):
                valkey.eval(source, 0)
    finally:
        valkey.close()


def _code(path: Path) -> str:
    """A script with its comments and string literals blanked out."""
    text = path.read_text()
    text = re.sub(r"--[^\n]*", "", text)
    return re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "''", text)


@pytest.mark.parametrize("path", sorted(SCRIPTS.rglob("*.lua")), ids=lambda p: p.name)
def test_scripts_use_no_lua_53_syntax(path: Path) -> None:
    """No ``//``, no bitwise operator, no ``goto``, no ``math.type``: 5.1 would refuse them and
    fengari would run them, so the two could differ."""
    code = _code(path)
    found = re.findall(r"//|&|\||<<|>>|~(?!=)|\bgoto\b|math\.type|\butf8\.", code)
    assert not found, f"{path.name} uses {sorted(set(found))}"


# ------------------------------------------------------------- a script cannot break the server ---

#: Scripts whose reply or error value runs a metamethod that raises (fengari used to panic on
#: them, and every later EVAL failed until the tab was reloaded).
HOSTILE = [
    "return setmetatable({}, {__index = function() error('boom') end})",
    "return setmetatable({1, 2}, {__index = function() error('boom') end, "
    "__len = function() error('boom') end})",
    "error(setmetatable({}, {__tostring = function() error('boom') end}))",
]


def _answer(client: redis.Redis, source: str) -> object:
    """The reply to ``EVAL source 0``, or the kind of error it raised."""
    try:
        return client.eval(source, 0)
    except redis.ResponseError:
        return redis.ResponseError


@pytest.mark.parametrize("source", HOSTILE)
def test_a_hostile_reply_is_answered_as_valkey_does_and_the_server_goes_on(
    browser: redis.Redis, valkey_url: str, source: str
) -> None:
    valkey = connect(valkey_url)
    try:
        assert _answer(browser, source) == _answer(valkey, source)
    finally:
        valkey.close()
    assert browser.eval("return redis.call('SET', KEYS[1], ARGV[1])", 1, "after", "x") == b"OK"
    assert browser.eval("return tostring(2 + 3)", 0) == b"5"


def test_an_error_table_with_a_raising_metatable_is_answered_and_the_server_goes_on(
    browser: redis.Redis,
) -> None:
    """Valkey 8.1 itself panics and exits on this one (so it is not compared): the tab's server
    answers the error the table holds and goes on."""
    source = "return setmetatable({err = 'own'}, {__index = function() error('boom') end})"
    with pytest.raises(redis.ResponseError, match="own"):
        browser.eval(source, 0)
    assert browser.eval("return tostring(2 + 3)", 0) == b"5"


# ------------------------------------------------------- fengari under Pyodide itself ---
# Three checks of echomq_lab.browser.lua run inside Pyodide under Node, in one Pyodide started
# once for the three (each start takes seconds), each in a namespace of its own; the one that
# installs the stand-in and makes fengari panic runs last.

TABLE_KEYS = '''
from echomq_lab.browser import lua

rt = lua.LuaRuntime(encoding=None)
g = rt.globals()
slow = [key for key, _ in g.items(values=False)]
print("globals same:", g.keys() == slow, len(slow) > 10)
odd = rt.eval("{['a:b'] = 1, ['1:x'] = 2, ['z\\\\0z'] = 3, [''] = 4}")
print("odd same:", sorted(odd.keys()) == sorted([b"a:b", b"1:x", b"z\\0z", b""]),
      odd.keys() == [key for key, _ in odd.items(values=False)])
mixed = rt.eval("{10, 20, x = 1, [true] = 2}")
print("mixed:", mixed.keys()[:2], sorted(map(repr, mixed.keys()[2:])))
print("empty:", rt.eval("{}").keys())
'''

RUN_AGAIN = '''
from echomq_lab.browser import lua

rt = lua.LuaRuntime(encoding=None)
code = b"local n = 0; n = n + (...); return n"
print("afresh:", rt.execute(code, 5), rt.execute(code, 7))
for _ in range(2):
    try:
        rt.execute(b"return +")
    except lua.LuaError as exc:
        print("refused:", "unexpected symbol" in str(exc))
for i in range(lua._CHUNKS_KEPT + 5):
    assert rt.execute(b"return %d" % i) == i
print("kept:", len(rt._chunks) == lua._CHUNKS_KEPT, code not in rt._chunks)
print("again:", rt.execute(code, 9), code in rt._chunks)
'''

LOST_STATE = '''
from echomq_lab.browser import lua
lua.install()
import fakeredis

server = fakeredis.FakeServer(server_type="valkey")
client = fakeredis.FakeStrictRedis(server=server)
assert client.eval("return 1", 0) == 1
lost = server._lua_runtime

@lua._guarded
def panic(runtime):
    runtime._push(runtime._L, b"boom")
    runtime._lua.lua_error(runtime._L)  # unprotected: fengari panics

try:
    panic(lost)
except lua.LuaError as exc:
    print("raised:", exc)
print("broken:", lost.broken)
print("next:", client.eval("return cjson.encode({redis.call('SET', KEYS[1], 'v')})", 1, "k"))
print("new state:", server._lua_runtime is not lost, server._lua_runtime.broken)
'''


@pytest.fixture(scope="module")
def pyodide_outputs() -> dict[str, str]:
    """What each of the three checks printed in Pyodide (run once, on first use)."""
    return run_each_in_pyodide({name: globals()[name]
                                for name in ("TABLE_KEYS", "RUN_AGAIN", "LOST_STATE")})


def test_a_lost_lua_state_is_rebuilt_for_the_next_script(
    pyodide_outputs: dict[str, str],
) -> None:
    """Should fengari panic all the same (an error raised outside any protected call), the call
    fails with a Lua error, the state is marked lost, and the server's next script runs on a new
    state with ``redis`` and ``cjson`` in place."""
    out = output_of(pyodide_outputs, "LOST_STATE")
    assert "raised: the Lua state was lost" in out, out
    assert "broken: True" in out, out
    assert 'next: b\'[{"ok":"OK"}]\'' in out, out
    assert "new state: True False" in out, out


def test_a_tables_keys_come_in_one_walk_as_the_slow_walk_gives_them(
    pyodide_outputs: dict[str, str],
) -> None:
    """``keys()`` (what fakeredis lists around every ``redis.call``): string keys in one packed
    crossing, the same list and order as the key-by-key walk, colons and zero bytes kept; a
    table with any other key (number, boolean) falls back to that walk, 1, 2, ... first."""
    out = output_of(pyodide_outputs, "TABLE_KEYS")
    assert "globals same: True True" in out, out
    assert "odd same: True True" in out, out
    assert "mixed: [1, 2] ['True', \"b'x'\"]" in out, out
    assert "empty: []" in out, out


def test_a_script_run_again_starts_afresh_and_old_texts_are_dropped(
    pyodide_outputs: dict[str, str],
) -> None:
    """A text run again runs its kept compiled chunk: its locals start afresh each time, its
    arguments are the new ones, a text that does not compile is refused each time, and past
    the texts kept the oldest is dropped and compiled again when it comes back."""
    out = output_of(pyodide_outputs, "RUN_AGAIN")
    assert "afresh: 5 7" in out, out
    assert out.count("refused: True") == 2, out
    assert "kept: True True" in out, out
    assert "again: 9 True" in out, out
