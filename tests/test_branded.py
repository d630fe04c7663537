"""Branded ids (docs/protocol.md, Ids): encoding, order, overflow, minting, parsing."""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from echomq_lab import branded
from echomq_lab.branded import EPOCH_MS, MAX_SNOWFLAKE, Minter

SNOWFLAKES = st.integers(min_value=0, max_value=MAX_SNOWFLAKE)
NAMESPACES = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=3, max_size=3)


def reference_encode(ns: str, n: int) -> str:
    """An independent base62 encoder (alphabet 0-9A-Za-z, 11 digits, left-padded)."""
    alphabet = (
        "".join(chr(c) for c in range(ord("0"), ord("9") + 1))
        + "".join(chr(c) for c in range(ord("A"), ord("Z") + 1))
        + "".join(chr(c) for c in range(ord("a"), ord("z") + 1))
    )
    out = []
    while n:
        n, r = divmod(n, 62)
        out.append(alphabet[r])
    return ns + "".join(reversed(out)).rjust(11, "0")


def test_vector() -> None:
    assert branded.encode("USR", 274557032793636864) == "USR0KHTOWnGLuC"
    parsed = branded.parse("USR0KHTOWnGLuC")
    assert parsed.namespace == "USR" and parsed.snowflake == 274557032793636864


def test_alphabet_is_ascii_ordered() -> None:
    assert list(branded.ALPHABET) == sorted(branded.ALPHABET)
    assert len(set(branded.ALPHABET)) == 62


def test_edges() -> None:
    assert branded.encode("JOB", 0) == "JOB00000000000"
    assert branded.encode("JOB", 61) == "JOB0000000000z"
    assert branded.encode("JOB", 62) == "JOB00000000010"
    top = branded.encode("JOB", MAX_SNOWFLAKE)
    assert len(top) == 14 and branded.parse(top).snowflake == MAX_SNOWFLAKE
    assert top == reference_encode("JOB", MAX_SNOWFLAKE)


@given(NAMESPACES, SNOWFLAKES)
def test_round_trip(ns: str, n: int) -> None:
    job_id = branded.encode(ns, n)
    assert job_id == reference_encode(ns, n)
    assert len(job_id) == 14 and branded.valid(job_id)
    assert branded.check(job_id) == job_id
    parsed = branded.parse(job_id)
    assert (parsed.namespace, parsed.snowflake) == (ns, n)
    assert parsed.minted_ms == (n >> 22) + EPOCH_MS
    assert parsed.node == (n >> 12) & 0x3FF
    assert parsed.seq == n & 0xFFF


@given(SNOWFLAKES, SNOWFLAKES)
def test_text_order_is_numeric_order(a: int, b: int) -> None:
    ea, eb = branded.encode("JOB", a), branded.encode("JOB", b)
    assert (ea < eb) == (a < b)
    assert (ea == eb) == (a == b)
    assert (ea.encode() < eb.encode()) == (a < b)  # byte order too (what ZSETs sort by)


@pytest.mark.parametrize("n", [MAX_SNOWFLAKE + 1, 2**64, -1])
def test_encode_refuses_out_of_range(n: int) -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.2\^63-1"):
        branded.encode("JOB", n)


@pytest.mark.parametrize("n", [True, 1.0, "1", None])
def test_encode_refuses_non_int(n: object) -> None:
    with pytest.raises(TypeError, match="snowflake must be an int"):
        branded.encode("JOB", n)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ns", "exc"),
    [("job", ValueError), ("JO", ValueError), ("JOBS", ValueError), ("J0B", ValueError),
     ("\u00c9OB", ValueError), (b"JOB", TypeError), (None, TypeError)],
)  # fmt: skip
def test_bad_namespace_refused(ns: object, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="namespace"):
        branded.encode(ns, 1)  # type: ignore[arg-type]
    with pytest.raises(exc, match="namespace"):
        Minter(node=1).mint(ns)  # type: ignore[arg-type]
    with pytest.raises(exc, match="namespace"):
        branded.mint(ns)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text", ["JOBzzzzzzzzzzz", "JOBAzL8n0Y58m8", reference_encode("JOB", MAX_SNOWFLAKE + 1)]
)
def test_decoding_overflow_is_refused_not_wrapped(text: str) -> None:
    assert not branded.valid(text)
    with pytest.raises(ValueError, match=r"above 2\^63-1"):
        branded.parse(text)
    with pytest.raises(ValueError, match=r"above 2\^63-1"):
        branded.check(text)


def test_largest_valid_id() -> None:
    assert branded.encode("JOB", MAX_SNOWFLAKE) == "JOBAzL8n0Y58m7"
    assert branded.valid("JOBAzL8n0Y58m7")


#: Look-alikes that str methods count as letters, digits or upper case (Latin-1, title case,
#: a Roman numeral, an Arabic-Indic digit, a superscript, dotted and dotless i), and
#: punctuation: each may stand where an id's letters or digits should be.
LOOK_ALIKES = "\u00c4\u00e9\u01c5\u216b\u0663\u00b2\u0130\u0131_-:\u0000"
#: The rule in the protocol's own terms, written independently of the library's check.
REFERENCE = re.compile(r"[A-Z]{3}[0-9A-Za-z]{11}")


@st.composite
def candidate_ids(draw: st.DrawFn) -> str:
    """An id, mostly of a value in range and now and then of one up to 62^11 - 1 (past
    2^63-1), with up to two characters swapped for a look-alike, a lower-case letter or a
    digit; now and then a text of any characters."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(min_size=13, max_size=15))
    above = st.integers(MAX_SNOWFLAKE - 2, 62**11 - 1)
    value = draw(st.one_of(SNOWFLAKES, SNOWFLAKES, SNOWFLAKES, above))
    text = list(reference_encode(draw(NAMESPACES), value))
    for _ in range(draw(st.integers(0, 2))):
        text[draw(st.integers(0, 13))] = draw(st.sampled_from(LOOK_ALIKES + "az09"))
    return "".join(text)


@settings(max_examples=1000)
@given(candidate_ids())
def test_check_accepts_exactly_the_protocols_ids(text: str) -> None:
    well_formed = bool(REFERENCE.fullmatch(text)) and text[3:] <= "AzL8n0Y58m7"
    assert branded.valid(text) is well_formed
    if well_formed:
        assert branded.check(text) == text
    else:
        with pytest.raises(ValueError):
            branded.check(text)


@pytest.mark.parametrize(
    ("text", "exc", "message"),
    [
        ("JOB123", ValueError, "expected 14 characters"),
        ("jOB00000000000", ValueError, "namespace"),
        ("JOB0000000000_", ValueError, "base62"),
        (42, TypeError, "must be a str"),
        (b"JOB00000000000", TypeError, "must be a str"),
    ],
)
def test_check_and_parse_refuse_malformed(text: object, exc: type[Exception], message: str) -> None:
    assert not branded.valid(text)
    with pytest.raises(exc, match=message):
        branded.check(text)
    with pytest.raises(exc, match=message):
        branded.parse(text)  # type: ignore[arg-type]


def test_mint_is_strictly_monotonic_over_many_calls() -> None:
    minted = [branded.mint() for _ in range(20_000)]
    assert all(a < b for a, b in pairwise(minted))
    flakes = [branded.parse(m).snowflake for m in minted]
    assert all(a < b for a, b in pairwise(flakes))
    assert {m[:3] for m in minted} == {"JOB"}


def test_mint_is_strictly_monotonic_across_threads() -> None:
    minter = Minter(node=9)
    per_thread: list[list[int]] = [[] for _ in range(8)]
    start = threading.Barrier(len(per_thread))

    def work(out: list[int]) -> None:
        start.wait()
        for _ in range(3_000):
            out.append(minter.next_snowflake())

    threads = [threading.Thread(target=work, args=(out,)) for out in per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [n for out in per_thread for n in out]
    assert len(set(every)) == len(every) == 8 * 3_000
    for out in per_thread:
        assert all(a < b for a, b in pairwise(out))


def test_same_millisecond_counts_seq_up() -> None:
    minter = Minter(node=5)
    ms = EPOCH_MS + 1_000_000
    first = minter.next_snowflake(now_ms=ms)
    assert first == (1_000_000 << 22) | (5 << 12)
    second = minter.next_snowflake(now_ms=ms)
    assert second == first + 1
    parsed = branded.parse(branded.encode("JOB", second))
    assert (parsed.minted_ms, parsed.node, parsed.seq) == (ms, 5, 1)


def test_seq_exhausted_keeps_counting() -> None:
    minter = Minter(node=5)
    ms = EPOCH_MS + 2_000_000
    flakes = [minter.next_snowflake(now_ms=ms) for _ in range(5_000)]  # > 4096 in one ms
    assert flakes == list(range(flakes[0], flakes[0] + 5_000))
    nxt = minter.next_snowflake(now_ms=ms + 1)  # the clock moved on: back to seq 0
    assert nxt > flakes[-1]
    parsed = branded.parse(branded.encode("JOB", nxt))
    assert (parsed.minted_ms, parsed.node, parsed.seq) == (ms + 1, 5, 0)


def test_clock_going_back_keeps_counting_from_the_last_value() -> None:
    minter = Minter(node=3)
    ms = EPOCH_MS + 3_000_000
    last = minter.next_snowflake(now_ms=ms)
    for back in (1, 10, 60_000):
        got = minter.next_snowflake(now_ms=ms - back)
        assert got == last + 1
        last = got
    assert minter.mint("JOB", now_ms=ms - 5) == branded.encode("JOB", last + 1)


def test_minter_node_range() -> None:
    assert Minter(node=0).node == 0 and Minter(node=1023).node == 1023
    for node in (-1, 1024):
        with pytest.raises(ValueError, match="node"):
            Minter(node=node)


def test_parse_gives_the_mint_time() -> None:
    minter = Minter(node=7)
    at = dt.datetime(2025, 3, 14, 15, 9, 26, 535000, tzinfo=dt.UTC)
    ms = int(at.timestamp() * 1000)
    parsed = branded.parse(minter.mint("ORD", now_ms=ms))
    assert parsed.namespace == "ORD"
    assert (parsed.minted_ms, parsed.node, parsed.seq) == (ms, 7, 0)
    assert parsed.minted_at == at


def test_parse_of_a_real_mint_is_within_the_calls_clock_reads() -> None:
    minter = Minter()  # a fresh minter: no earlier mint can push it ahead of the clock
    before = int(time.time() * 1000)
    job_id = minter.mint()
    after = int(time.time() * 1000)
    assert before <= branded.parse(job_id).minted_ms <= after


def test_epoch() -> None:
    assert EPOCH_MS == int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    assert branded.parse("JOB00000000000").minted_at == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
