"""The browser backend (Pyodide + fengari, as the static site runs it): same scripts, same answers.

* The differential test of ``test_differential.py`` with the browser backend in the place of
  the in-process fakeredis: random sequences of transitions, replies and state compared with
  Valkey after every step.
* Where fengari's Lua 5.3 differs from Valkey's Lua 5.1: the differences that remain are
  pinned (so a fengari upgrade that changes them is noticed), the ones the stand-in evens out
  are checked, and the protocol's scripts are checked to use none of 5.3's own syntax.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pytest
import redis
from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from echomq_lab import connect
from echomq_lab.testing import BackendUnavailable, ServerPool, backends_required

# pytest imports test modules by their file name (tests/ is on sys.path): the same module object.
from test_differential import EXAMPLES, SEED, STEPS, Differential, _report  # isort: skip

SCRIPTS = Path(__file__).resolve().parents[1] / "echomq_lab" / "scripts"
#: The browser runs Lua in JavaScript: a quarter of the examples keeps this test within minutes.
BROWSER_EXAMPLES = max(1, EXAMPLES // 4)


@pytest.fixture(scope="module")
def browser(server_pool: ServerPool) -> redis.Redis:
    """A client on the session's browser backend (started on first use); a skip saying why
    when it cannot start (a failure when backends are required, as in CI)."""
    try:
        server = server_pool.server("browser")
    except BackendUnavailable as exc:
        if backends_required():
            pytest.fail(f"browser backend unavailable: {exc}", pytrace=False)
        pytest.skip(f"browser backend unavailable: {exc}")
    server_pool.used("browser")
    return connect(server.url)


class BrowserDifferential(Differential):
    """Differential, with the browser backend where the in-process fakeredis was."""

    browser: ClassVar[redis.Redis]

    def __init__(self) -> None:
        super().__init__()
        self.fake.close()
        self.browser.flushall()
        self.fake = self.browser
        self.sides["fake"] = self.browser
        self.before = self._snap_all()


@pytest.mark.slow
def test_browser_and_valkey_agree(browser: redis.Redis, valkey_url: str) -> None:
    """Random sequences of transitions give the same replies and state in the browser's server
    (the protocol's scripts on fengari) as on Valkey."""
    valkey = connect(valkey_url.rsplit("/", 1)[0] + "/6")
    BrowserDifferential.browser = browser
    BrowserDifferential.valkey = valkey
    BrowserDifferential.stats = Counter()
    started = time.monotonic()
    try:
        run_state_machine_as_test(
            seed(SEED)(BrowserDifferential),
            settings=settings(
                max_examples=BROWSER_EXAMPLES,
                stateful_step_count=STEPS,
                deadline=None,
                print_blob=True,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
    finally:
        report = _report(BrowserDifferential.stats, time.monotonic() - started,
                         "Valkey (db 6)", BROWSER_EXAMPLES)
        print("\n" + report.replace("fakeredis vs", "the browser backend vs", 1))
        valkey.flushdb()
        valkey.close()
    assert BrowserDifferential.stats["examples"] >= BROWSER_EXAMPLES


# ------------------------------------------------------------- fengari is Lua 5.3 ---

#: What fengari still does its own way (README, "No install": the Lua 5.3 differences).
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
