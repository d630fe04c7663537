"""The owned keyspace (docs/protocol.md, Keys): key grammar, cluster slots, reserve, gate."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from echomq_lab import branded, keyspace
from echomq_lab.keyspace import RESERVED_BASE, SET_NAMES

QUEUE_NAMES = st.from_regex(r"[A-Za-z0-9._-]{1,64}", fullmatch=True)
SNOWFLAKES = st.integers(min_value=0, max_value=branded.MAX_SNOWFLAKE)


def crc16_xmodem(data: bytes) -> int:
    """An independent CRC16-XMODEM (poly 0x1021, init 0): the cluster's key hash."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def reference_slot(key: bytes) -> int:
    """Slot by the cluster spec: hash the text inside the first non-empty {...}, else the key."""
    start = key.find(b"{")
    if start != -1:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1 : end]
    return crc16_xmodem(key) % 16384


def all_keys(queue: str, job_id: str) -> list[str]:
    return [*(keyspace.queue_key(queue, s) for s in SET_NAMES), keyspace.job_key(queue, job_id)]


# ------------------------------------------------------------------------ grammar ---


def test_key_grammar() -> None:
    job = "JOB0KHTOWnGLuC"
    assert SET_NAMES == ("pending", "active", "schedule", "dead")
    assert keyspace.queue_key("orders", "pending") == "emq:{orders}:pending"
    assert keyspace.queue_key("orders", "active") == "emq:{orders}:active"
    assert keyspace.queue_key("orders", "schedule") == "emq:{orders}:schedule"
    assert keyspace.queue_key("orders", "dead") == "emq:{orders}:dead"
    assert keyspace.job_prefix("orders") == "emq:{orders}:job:"
    assert keyspace.job_key("orders", job) == "emq:{orders}:job:JOB0KHTOWnGLuC"
    assert keyspace.base("orders") == "emq:{orders}:"


@pytest.mark.parametrize("kind", ["scheduled", "Pending", "", "job", "rows", "pending "])
def test_unknown_key_type_refused(kind: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"unknown key type {kind!r}")):
        keyspace.queue_key("orders", kind)


def test_job_key_refuses_malformed_ids() -> None:
    with pytest.raises(ValueError, match="expected 14 characters"):
        keyspace.job_key("orders", "JOB1")
    with pytest.raises(ValueError, match=r"above 2\^63-1"):
        keyspace.job_key("orders", "JOBzzzzzzzzzzz")
    with pytest.raises(TypeError, match="must be a str"):
        keyspace.job_key("orders", 7)  # type: ignore[arg-type]


def test_job_key_accepts_any_well_formed_namespace() -> None:
    # The host only checks the form; the enqueue script refuses non-JOB ids (EMQKIND).
    assert keyspace.job_key("q", "ORD0KHTOWnGLuC") == "emq:{q}:job:ORD0KHTOWnGLuC"


# -------------------------------------------------------------------------- slots ---


def test_slot_vector() -> None:
    assert keyspace.slot("123456789") == 12739
    assert keyspace.slot(b"123456789") == 12739
    assert keyspace.slot("emq:{123456789}:pending") == 12739
    assert crc16_xmodem(b"123456789") == 0x31C3  # the CRC16-XMODEM check value


@given(st.binary(max_size=80))
def test_slot_matches_the_cluster_spec(key: bytes) -> None:
    assert keyspace.slot(key) == reference_slot(key)


@given(QUEUE_NAMES, SNOWFLAKES)
def test_every_key_of_one_queue_is_in_one_slot(queue: str, n: int) -> None:
    keys = all_keys(queue, branded.encode("JOB", n))
    slots = {keyspace.slot(k) for k in keys}
    slots.add(keyspace.slot(keyspace.job_prefix(queue)))
    assert slots == {reference_slot(queue.encode())}


def test_different_queues_may_differ_in_slot() -> None:
    # So the single-slot test above is not vacuous: the slot follows the queue name.
    assert keyspace.slot(keyspace.queue_key("a", "pending")) != keyspace.slot(
        keyspace.queue_key("b", "pending")
    )


# ------------------------------------------------------------------------ reserve ---


def test_reserved_base() -> None:
    assert RESERVED_BASE == "{emq}:"
    assert keyspace.slot("{emq}:version") == reference_slot(b"emq")


@given(QUEUE_NAMES, SNOWFLAKES)
def test_reserve_never_collides_with_a_queue_key(queue: str, n: int) -> None:
    for key in all_keys(queue, branded.encode("JOB", n)):
        assert key.startswith("emq:{" + queue + "}:")
        assert not key.startswith(RESERVED_BASE)
        assert key != "{emq}:version"


def test_a_queue_named_emq_still_cannot_reach_the_reserve() -> None:
    keys = all_keys("emq", "JOB0KHTOWnGLuC")
    assert all(k.startswith("emq:{emq}:") for k in keys)
    assert not any(k.startswith(RESERVED_BASE) for k in keys)


# ---------------------------------------------------------------- queue-name gate ---


@pytest.mark.parametrize(
    "queue", ["q", "Q" * 64, "a.b_c-d", "0", "-", ".", "_", "orders.v2", "ABCxyz019._-"]
)
def test_queue_gate_accepts(queue: str) -> None:
    assert keyspace.check_queue(queue) == queue
    assert keyspace.queue_key(queue, "dead") == f"emq:{{{queue}}}:dead"


@pytest.mark.parametrize(
    "queue",
    ["", "q" * 65, "a{b", "a}b", "{q}", "a:b", "a b", "a\x00b", "q\n", "\nq", "a/b", "q*",
     "q?", "q[1]", "q\u00e9", "\u0661", "a\tb", "q\\"],
)  # fmt: skip
def test_queue_gate_refuses_with_value_error(queue: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"bad queue name {queue!r}")):
        keyspace.check_queue(queue)
    with pytest.raises(ValueError, match="bad queue name"):
        keyspace.queue_key(queue, "pending")
    with pytest.raises(ValueError, match="bad queue name"):
        keyspace.job_prefix(queue)
    with pytest.raises(ValueError, match="bad queue name"):
        keyspace.job_key(queue, "JOB0KHTOWnGLuC")


@pytest.mark.parametrize("queue", [None, 5, b"q", ["q"]])
def test_queue_gate_refuses_non_str_with_type_error(queue: object) -> None:
    with pytest.raises(TypeError, match=f"queue name must be a str, not {type(queue).__name__}"):
        keyspace.check_queue(queue)
    with pytest.raises(TypeError, match="queue name must be a str"):
        keyspace.queue_key(queue, "pending")  # type: ignore[arg-type]


@given(st.text(max_size=70))
def test_queue_gate_is_exactly_the_grammar(queue: str) -> None:
    ok = re.fullmatch(r"[A-Za-z0-9._-]{1,64}", queue, flags=re.ASCII) is not None
    if ok:
        assert keyspace.check_queue(queue) == queue
    else:
        with pytest.raises(ValueError, match="bad queue name"):
            keyspace.check_queue(queue)
