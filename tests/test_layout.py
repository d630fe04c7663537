"""The key layout is written once, in each script's header: :mod:`echomq_lab.scripts.layout` reads
it, the room's gateway and tests/test_argument_refusals.py build their calls from it, and here
the handles of :mod:`echomq_lab.jobs` are held to it (each passes the keys, and the arguments
by name, that the header says) and the header of a script ``make transition`` writes is read as
the handle it writes passes it. Host-side: runs once, on the in-process server.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import redis

from echomq_lab import branded, jobs, scripts, transitions
from echomq_lab.connection import connect
from echomq_lab.measure import bring
from echomq_lab.scripts import Script, layout
from tools import transition as make_transition

Q = "layout"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, list[str], list[Any]]]]:
    """Every script call a handle makes: its script, its KEYS and its ARGV."""
    seen: list[tuple[str, list[str], list[Any]]] = []
    run = Script.__call__

    def recording(self: Script, conn: redis.Redis, keys: Sequence[str],
                  args: Sequence[Any]) -> Any:
        seen.append((self.name, list(keys), list(args)))
        return run(self, conn, keys, args)

    monkeypatch.setattr(Script, "__call__", recording)
    yield seen


@pytest.mark.parametrize("name", transitions.NAMES)
def test_each_handle_passes_the_keys_its_scripts_header_names(
    calls: list[tuple[str, list[str], list[Any]]], name: str
) -> None:
    conn = connect(fresh=True)
    t = transitions.get(name)
    source = next(e.source for e in t.edges)
    values = bring(conn, Q, t, source)
    calls.clear()
    getattr(jobs, t.call.handle)(conn, Q, *t.arguments(values))
    script, keys, args = calls[-1]
    shape = layout.of(script)
    job = str(values.get("job") or "")
    assert keys == shape.keys(Q, job if layout.ROW in shape.key_names else "")
    assert len(args) == len(shape.arg_names)
    held = shape.check(Q, keys, [a if isinstance(a, bytes) else str(a).encode() for a in args])
    assert held.job == (job if "id" in shape.arg_names else "")


def test_the_view_follows_rows_after_its_sets() -> None:
    shape = layout.of("view")
    ids = [branded.mint(), branded.mint()]
    keys = shape.keys(Q, follow=ids)
    assert keys[4:] == [f"emq:{{{Q}}}:job:{i}" for i in ids]
    held = shape.check(Q, keys, [f"emq:{{{Q}}}:job:".encode(), b"10", *(i.encode() for i in ids)])
    assert held.numbers == {"window": 10}


def test_every_script_of_the_registry_has_a_layout() -> None:
    for name in (*transitions.SCRIPTS, *scripts.VIEWS):
        shape = layout.of(name)
        assert shape.key_names and shape.arg_names, name


@pytest.mark.parametrize("takes", [("job",), ("job", "token"), ("job", "token", "lease"),
                                   ("lease",), ("job", "payload", "delay")])
def test_a_header_make_transition_writes_is_the_layout_of_the_handle_it_writes(
    takes: tuple[str, ...]
) -> None:
    shape = layout.parse("made", make_transition.lua("made", "a test", takes))
    handle = make_transition.handle("made", "a test", takes)
    assert shape.key_names == ((layout.ROW,) if "job" in takes else ()) + (
        "pending", "active", "schedule", "dead")
    assert ("k.row(job_id)" in handle) == ("job" in takes)
    assert len(shape.arg_names) == len(takes) + ("job" not in takes)


@pytest.mark.parametrize("header, word", [
    ("-- KEYS[1] pending  x\n-- KEYS[3] active  y", "gap"),
    ("-- KEYS[1] lock  x", "'lock'"),
    ("-- KEYS[1] pending  x\n-- ARGV[1] colour  blue", "'colour'"),
    ("-- KEYS[1..] row  x\n-- KEYS[2] pending  y", "not its last"),
])
def test_a_header_that_says_no_layout_is_refused_naming_why(header: str, word: str) -> None:
    with pytest.raises(layout.LayoutError, match=word):
        layout.parse("odd", header)


def test_a_call_off_the_layout_is_refused() -> None:
    shape = layout.of("claim")
    good = shape.keys(Q)
    prefix = f"emq:{{{Q}}}:job:".encode()
    assert shape.check(Q, good, [prefix, b"1000"]).numbers == {"lease": 1000}
    with pytest.raises(layout.LayoutError):
        shape.check(Q, ["emq:{other}:pending", "emq:{other}:active"], [prefix, b"1000"])
    with pytest.raises(layout.LayoutError):
        shape.check(Q, good, [prefix])
    for odd in (b"1_000", "١٠٠٠".encode(), b"-5", b"0", b"9000000000000000"):
        with pytest.raises(ValueError, match="^EMQARG: lease must be decimal digits"):
            shape.check(Q, good, [prefix, odd])
