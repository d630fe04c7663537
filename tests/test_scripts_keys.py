"""Every script touches only keys the host built: no KEYS, no SCAN, no key names made in Lua.

The rule (docs/protocol.md, Keys): a script's key arguments are ``KEYS[n]`` as the
host passed them, or, for ids the script read from a declared set, the row key
``ARGV[1] .. id`` where ``ARGV[1]`` is the row-key prefix ``emq:{Q}:job:`` the host built (the
pattern of claim, promote, reap and the view). This test reads each script the package ships as
the server gets it (its includes expanded) and each include file on its own, and checks the
first argument of every ``redis.call``/``redis.pcall`` against that rule; it also checks that
the checker itself catches each kind of offence.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

from echomq_lab.scripts import include_text, includes, is_stub, load, names

#: Commands that walk the keyspace (or pick a key the host did not name).
WALKERS = {"KEYS", "SCAN", "RANDOMKEY"}
#: Commands that take no key.
KEYLESS = {"TIME"}

_CALL = re.compile(r"redis\.p?call\(")
_DECLARED = re.compile(r"KEYS\[(\d+|[A-Za-z_]\w*)\]")
_ROW_KEY = re.compile(r"ARGV\[1\] \.\. [A-Za-z_]\w*")
_LOCAL = re.compile(r"local ([A-Za-z_]\w*) = (.+)")
_PREFIX_DOC = re.compile(r"^-- ARGV\[1\]\s+prefix\s.*emq:\{Q\}:job:", re.M)


def _strip_comments(source: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in source.splitlines())


def _args(body: str, start: int) -> list[str]:
    """The top-level arguments of the call whose '(' ends just before ``start``."""
    depth, quote, cur, out = 0, "", "", []
    for ch in body[start:]:
        if quote:
            cur += ch
            quote = "" if ch == quote else quote
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            if depth == 0:
                out.append(cur.strip())
                return out
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    raise AssertionError("unbalanced call")


def offences(source: str) -> list[str]:
    """Every way ``source`` breaks the declared-keys rule; empty when it keeps it."""
    body = _strip_comments(source)
    bound = {m.group(1): m.group(2).strip() for m in _LOCAL.finditer(body)}
    found: list[str] = []
    prefix_used = False
    for call in _CALL.finditer(body):
        args = _args(body, call.end())
        command = args[0].strip("'\"").upper()
        if not re.fullmatch(r"'[A-Za-z]+'|\"[A-Za-z]+\"", args[0]):
            found.append(f"command name is not a literal: {args[0]}")
            continue
        if command in WALKERS:
            found.append(f"calls {command}")
            continue
        if command in KEYLESS:
            continue
        key = args[1] if len(args) > 1 else ""
        key = bound.get(key, key) if re.fullmatch(r"[A-Za-z_]\w*", key) else key
        if _ROW_KEY.fullmatch(key):
            prefix_used = True
        elif not _DECLARED.fullmatch(key):
            found.append(f"{command} on a key the host did not declare: {key}")
    if prefix_used and not _PREFIX_DOC.search(source):
        found.append("builds prefix .. id but ARGV[1] is not documented as the row-key prefix")
    if re.search(r"emq:|:job:|\{emq\}", body):
        found.append("spells a key name of its own")
    return found


def test_the_package_ships_the_scripts_it_names() -> None:
    files = {
        p.name[: -len(".lua")]
        for p in resources.files("echomq_lab.scripts").iterdir()
        if p.name.endswith(".lua")
    }
    assert files == set(names())  # so the test below reads every script there is
    folder = resources.files("echomq_lab.scripts").joinpath("include")
    shipped = {p.name for p in folder.iterdir()}
    assert shipped == {f"{n}.lua" for n in includes()}  # and every include file
    assert includes(), "no include file found"


@pytest.mark.parametrize("name", names())
def test_script_touches_only_declared_keys(name: str) -> None:
    source = load(name).source
    assert "--@include" not in source, f"{name}: a directive is left in what the server gets"
    if is_stub(name):
        pytest.skip(f"{name} is not written yet: its script is the stub `make transition` wrote")
    assert _CALL.search(source), f"{name}.lua calls nothing?"
    assert offences(source) == [], name


@pytest.mark.parametrize("name", includes())
def test_include_touches_only_declared_keys(name: str) -> None:
    assert offences(include_text(name)) == [], name


GOOD_HEADER = "-- ARGV[1] prefix   the row-key prefix emq:{Q}:job:\n"


@pytest.mark.parametrize(
    ("source", "word"),
    [
        ("return redis.call('KEYS', ARGV[1])", "calls KEYS"),
        ("return redis.call('scan', 0, 'MATCH', ARGV[1])", "calls SCAN"),
        ("local c = 'KE' .. 'YS'\nreturn redis.call(c, '*')", "not a literal"),
        ("return redis.call('HGETALL', 'emq:{' .. ARGV[2] .. '}:job:' .. ARGV[3])", "declare"),
        ("return redis.call('HGETALL', ARGV[2])", "declare"),
        ("local k = ARGV[2] .. ARGV[3]\nreturn redis.call('DEL', k)", "declare"),
        ("local id = redis.call('ZPOPMIN', KEYS[1])[1]\nredis.call('HSET', ARGV[1] .. id, 'a', 1)",
         "not documented"),
        ("return redis.call('GET', KEYS[1] .. ':x')", "declare"),
        ("local x = 'emq:'\nreturn redis.call('GET', KEYS[1])", "own"),
    ],
)
def test_the_checker_catches_each_offence(source: str, word: str) -> None:
    found = offences(source)
    assert any(word in f for f in found), found


def test_the_checker_accepts_the_row_key_pattern() -> None:
    source = GOOD_HEADER + (
        "local id = redis.call('ZPOPMIN', KEYS[1])[1]\n"
        "local row = ARGV[1] .. id\n"
        "redis.call('HSET', row, 'state', 'active')\n"
        "return redis.call('HGET', ARGV[1] .. id, 'payload')"
    )
    assert offences(source) == []
