"""The job row type (echomq_lab.row.Row): the fields as the views read them, the raw bytes kept."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
import redis

from echomq_lab import branded, jobs
from echomq_lab.row import FIELD_NAMES, Row, decoded, in_order
from echomq_lab.snapshot import snapshot

Q = "row"
SAMPLE = {b"payload": b'{"a": 1}', b"last_error": b"boom", b"state": b"dead", b"attempts": b"3"}


def test_the_fields_are_read_from_the_raw_bytes() -> None:
    row = Row(SAMPLE)
    assert row.state == "dead" and row.attempts == 3 and row.payload == b'{"a": 1}'
    assert row.raw == SAMPLE and row.raw is not SAMPLE  # a copy: the caller's dict stays its own
    assert row[b"state"] == b"dead" and len(row) == 4 and set(row) == set(SAMPLE)
    assert isinstance(row, Mapping)


def test_missing_or_odd_fields_read_as_none() -> None:
    row = Row({b"attempts": b"two", b"payload": b""})
    assert row.state is None and row.attempts is None and row.payload == b""
    assert Row({}).payload is None and Row({}).attempts is None


def test_one_display_rule_for_every_value() -> None:
    assert decoded("Grüße".encode()) == "Grüße"
    assert decoded(b"\xff\x00") == "b'\\xff\\x00'"
    row = Row({b"state": b"\xffactive", b"payload": b"\x00\x80"})
    assert row.state == "b'\\xffactive'"
    assert row.shown(b"payload") == "b'\\x00\\x80'"
    assert row.shown(b"attempts") == "" and row.shown(b"attempts", "?") == "?"


def test_field_order_puts_the_protocol_fields_first_then_the_rest_sorted() -> None:
    assert Row(SAMPLE).field_order() == [b"state", b"attempts", b"payload", b"last_error"]
    assert Row({b"zeta": b"", b"alpha": b"", b"payload": b""}).field_order() == [
        b"payload", b"alpha", b"zeta",
    ]
    assert in_order([b"x", b"attempts", b"state", b"attempts"]) == [b"state", b"attempts", b"x"]
    assert FIELD_NAMES == ("state", "attempts", "payload")


def test_equality_with_rows_and_plain_mappings() -> None:
    assert Row(SAMPLE) == Row(dict(SAMPLE)) and Row(SAMPLE) == SAMPLE
    assert Row(SAMPLE) != Row({b"state": b"dead"}) and Row(SAMPLE) != "dead"
    assert Row.from_record(None) is None and Row.from_record(SAMPLE) == SAMPLE
    with pytest.raises(TypeError):
        hash(Row(SAMPLE))
    assert repr(Row({b"state": b"pending"})) == "Row({b'state': b'pending'})"


def test_a_snapshot_holds_rows_with_the_servers_bytes(conn: redis.Redis) -> None:
    job = branded.mint()
    jobs.enqueue(conn, Q, job, b"\x00cargo\xff")
    row = snapshot(conn, Q).rows[job]
    assert isinstance(row, Row)
    assert row == jobs.record(conn, Q, job)
    assert (row.state, row.attempts, row.payload) == ("pending", 0, b"\x00cargo\xff")
    claimed = jobs.claim(conn, Q, 60_000)
    assert claimed is not None
    assert snapshot(conn, Q).rows[job].attempts == claimed.token == 1
