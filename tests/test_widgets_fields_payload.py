"""The field table (echomq_lab.lessons.fields), the field picker and the payload round-trip panel.

The table is checked against the scripts' own source (who writes and reads each field) and
against rows reached by real transitions on every backend (what value each write leaves).
The panels are built on a fresh embedded server, driven through their widgets, and checked
by what they show (``text()`` and their HTML) and by what the server holds afterwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import redis

from echomq_lab import branded, clock, connect, jobs, keyspace, queues, transitions
from echomq_lab.lessons import fields
from echomq_lab.widgets import look as style
from echomq_lab.widgets.field_picker import FieldPicker
from echomq_lab.widgets.payload import PayloadRoundTrip, as_text, hex_text

Q = "fields-test"


# -- the table against the scripts' source --------------------------------------------------


@pytest.mark.parametrize("name", list(fields.FIELDS))
def test_table_writers_and_readers_match_the_scripts(name: str) -> None:
    entry = fields.FIELDS[name]
    assert fields.disagreements(name) == [], "\n".join(fields.disagreements(name))
    assert fields.scripts_that(name, "write") == entry.writers
    assert set(fields.scripts_that(name, "read")) == {r.script for r in entry.reads}


def test_a_disagreement_names_the_script_the_field_and_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    state = fields.FIELDS["state"]
    kept = tuple(u for u in state.reads if u.script != "reprocess")
    monkeypatch.setitem(fields.FIELDS, "state", dataclasses.replace(state, reads=kept))
    (said,) = fields.disagreements("state")
    assert said.startswith("scripts/reprocess.lua:") and "reads the field 'state' (HGET)" in said
    assert 'add Use("reprocess", "HGET", ' in said and "echomq_lab/lessons/fields.py" in said
    extra = fields.Use("claim", "HGET", "a read no script makes")
    monkeypatch.setitem(fields.FIELDS, "state", dataclasses.replace(state, reads=(
        *state.reads, extra)))
    (said,) = fields.disagreements("state")
    assert "lists claim (HGET) among its reads" in said and "remove that Use" in said


@pytest.mark.parametrize("name", list(fields.FIELDS))
def test_each_write_names_the_command_the_script_uses(name: str) -> None:
    entry = fields.FIELDS[name]
    in_source = {(m.script, m.command) for m in fields.mentions(name) if m.access == "write"}
    assert {(w.script, w.command) for w in entry.writes} == in_source


def test_a_use_is_a_write_or_a_read_by_its_command_alone() -> None:
    for entry in fields.FIELDS.values():
        assert {u.command for u in entry.writes} <= fields.WRITE_COMMANDS
        assert not {u.command for u in entry.reads} & fields.WRITE_COMMANDS
        assert all(u.value is None for u in entry.reads)


def test_only_enqueue_writes_the_payload_and_only_claim_reads_it() -> None:
    found = fields.mentions("payload")
    assert {m.script for m in found} == {"enqueue", "schedule", "claim"}
    assert {m.script for m in found if m.access == "read"} == {"claim"}
    # the transitions that decide anything read state or attempts, never the payload
    control = {m.script for m in fields.mentions("attempts") + fields.mentions("state")}
    for deciding in ("complete", "retry", "extend", "reprocess"):
        assert deciding not in {m.script for m in found}
        assert deciding in control


def test_mentions_skip_comments() -> None:
    # claim's header comment says "{id, payload, token}"; only its code line is a mention
    claim_lines = [m for m in fields.mentions("payload") if m.script == "claim"]
    assert len(claim_lines) == 1
    assert "= redis.call('HMGET'" in claim_lines[0].line
    assert not any(m.line.startswith("--") for n in fields.FIELD_NAMES for m in fields.mentions(n))


def test_extra_field_writers_and_bad_access() -> None:
    assert fields.scripts_that("last_error", "write") == ("retry", "reprocess")
    assert fields.scripts_that("last_error", "read") == ()
    with pytest.raises(ValueError, match="access must be"):
        fields.scripts_that("state", "delete")


def test_untouched_by_leaves_out_writers_and_those_that_delete_the_row() -> None:
    assert fields.RETIRED_BY == tuple(t.script for t in transitions.TRANSITIONS if t.retires)
    assert "complete" in fields.RETIRED_BY
    # state: every transition that moves the job writes it; those whose entry writes no
    # state (extend) leave it alone.
    assert fields.FIELDS["state"].untouched_by == tuple(
        t.script for t in transitions.TRANSITIONS if not t.writes)
    assert "claim" not in fields.FIELDS["attempts"].untouched_by
    assert not set(fields.RETIRED_BY) & set(fields.FIELDS["payload"].untouched_by)
    assert set(fields.FIELDS["payload"].untouched_by) == set(transitions.SCRIPTS) - {
        "enqueue",
        "schedule",
        *fields.RETIRED_BY,
    }


# -- the table against real transitions, on every backend -----------------------------------


def _fresh(conn: redis.Redis) -> str:
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, Q, job_id, b"cargo")
    return job_id


def _claimed(conn: redis.Redis, lease_ms: int = 60_000) -> tuple[str, int]:
    job_id = _fresh(conn)
    got = jobs.claim(conn, Q, lease_ms)
    assert got is not None and got.id == job_id
    return job_id, got.token


def _after_enqueue(conn: redis.Redis) -> str:
    return _fresh(conn)


def _after_schedule(conn: redis.Redis) -> str:
    job_id = branded.mint("JOB")
    assert jobs.enqueue_in(conn, Q, job_id, b"cargo", 60_000) == "scheduled"
    return job_id


def _after_claim(conn: redis.Redis) -> str:
    return _claimed(conn)[0]


def _after_retry_below_cap(conn: redis.Redis) -> str:
    job_id, token = _claimed(conn)
    assert jobs.retry(conn, Q, job_id, token, 60_000, 5, "boom") == "scheduled"
    return job_id


def _after_retry_at_cap(conn: redis.Redis) -> str:
    job_id, token = _claimed(conn)
    assert jobs.retry(conn, Q, job_id, token, 0, 1, "boom") == "dead"
    return job_id


def _after_promote(conn: redis.Redis) -> str:
    job_id = branded.mint("JOB")
    jobs.enqueue_at(conn, Q, job_id, b"cargo", 0)
    assert jobs.promote(conn, Q) == 1
    return job_id


def _after_reap(conn: redis.Redis) -> str:
    job_id, _ = _claimed(conn, lease_ms=1)
    clock.wait_out_lease(conn, Q, job_id)
    assert jobs.reap(conn, Q) == 1
    return job_id


def _after_reprocess(conn: redis.Redis) -> str:
    job_id = _after_retry_at_cap(conn)
    assert jobs.reprocess(conn, Q, job_id) == "pending"
    return job_id


#: (script, when) of each write in the table → a walk that ends right after that write.
WALKS: dict[tuple[str, str], Callable[[redis.Redis], str]] = {
    ("enqueue", ""): _after_enqueue,
    ("schedule", ""): _after_schedule,
    ("claim", ""): _after_claim,
    ("retry", "attempts below the cap"): _after_retry_below_cap,
    ("retry", "attempts at the cap"): _after_retry_at_cap,
    ("promote", ""): _after_promote,
    ("reap", ""): _after_reap,
    ("reprocess", ""): _after_reprocess,
}


def test_every_fixed_write_has_a_walk() -> None:
    fixed = {(w.script, w.when) for f in fields.FIELDS.values() for w in f.writes if w.value}
    assert fixed <= set(WALKS)


def test_written_values_match_the_table(conn: redis.Redis) -> None:
    for f in fields.FIELDS.values():
        for w in f.writes:
            if w.value is None:
                continue
            queues.reset(conn, Q)
            job_id = WALKS[(w.script, w.when)](conn)
            row = jobs.record(conn, Q, job_id)
            assert row is not None
            assert row[f.name.encode()] == w.value, (f.name, w.script, w.when)


def test_newborn_row_is_exactly_the_three_fields(conn: redis.Redis) -> None:
    payload = b"\x00raw\xff"
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, Q, job_id, payload)
    assert jobs.record(conn, Q, job_id) == fields.newborn_row(payload)
    assert set(fields.newborn_row(b"")) == {n.encode() for n in fields.FIELD_NAMES}


def test_claim_adds_one_to_attempts_and_hands_it_over(conn: redis.Redis) -> None:
    job_id, token = _claimed(conn, lease_ms=1)
    assert token == 1
    clock.wait_out_lease(conn, Q, job_id)
    jobs.reap(conn, Q)
    again = jobs.claim(conn, Q, 60_000)
    assert again is not None and again.token == 2
    assert jobs.record(conn, Q, job_id)[b"attempts"] == b"2"  # type: ignore[index]


def test_attempts_untouched_by_the_transitions_the_table_says(conn: redis.Redis) -> None:
    assert set(fields.FIELDS["attempts"].untouched_by) == set(transitions.SCRIPTS) - {
        "enqueue", "schedule", "claim", *fields.RETIRED_BY,
    }
    job_id, token = _claimed(conn)
    jobs.extend(conn, Q, job_id, token, 90_000)
    jobs.retry(conn, Q, job_id, token, 0, 1, "boom")
    jobs.reprocess(conn, Q, job_id)
    assert jobs.record(conn, Q, job_id)[b"attempts"] == b"1"  # type: ignore[index]


# -- round trips and escapes ----------------------------------------------------------------


def test_samples_round_trip_byte_for_byte(conn: redis.Redis) -> None:
    for label, payload in fields.SAMPLE_PAYLOADS:
        trip = fields.round_trip(conn, Q, payload, label)
        assert trip.sent == trip.stored == trip.returned == payload
        assert trip.equal and trip.token == 1 and trip.label == label
        assert jobs.record(conn, Q, trip.job_id) is None
    assert conn.dbsize() == 0  # every job was completed: nothing remains


def test_round_trip_sends_a_str_as_utf8() -> None:
    conn = connect(fresh=True)
    trip = fields.round_trip(conn, Q, "naïve")
    assert trip.sent == trip.returned == "naïve".encode()


def test_round_trip_refuses_a_queue_with_pending_jobs_and_writes_nothing() -> None:
    conn = connect(fresh=True)
    waiting = _fresh(conn)
    before = set(conn.keys())
    with pytest.raises(ValueError, match="1 pending job"):
        fields.round_trip(conn, Q, b"x")
    assert set(conn.keys()) == before
    assert jobs.browse(conn, Q, 10) == [waiting]


@pytest.mark.parametrize(
    ("payload", "queue", "exc"),
    [(42, Q, TypeError), (None, Q, TypeError), (b"x", "bad queue", ValueError)],
)
def test_round_trip_bad_arguments_change_nothing(payload: object, queue: str, exc: type) -> None:
    conn = connect(fresh=True)
    with pytest.raises(exc):
        fields.round_trip(conn, queue, payload)  # type: ignore[arg-type]
    assert conn.dbsize() == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", b"plain"),
        (r"\x00\xff\xFE", b"\x00\xff\xfe"),
        (r"a\0b\n\r\t\\", b"a\x00b\n\r\t\\"),
        ("ü", "ü".encode()),
        ("", b""),
    ],
)
def test_parse_escapes(text: str, expected: bytes) -> None:
    assert fields.parse_escapes(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (r"a\q", r"unknown escape \q at position 1"),
        (r"\x4", r"bad escape \x4 at position 0: \x needs two hex digits"),
        (r"\xZZ", r"bad escape \xZZ at position 0"),
        ("tail\\", "a lone backslash at position 4"),
    ],
)
def test_parse_escapes_refuses_unknown_sequences(text: str, problem: str) -> None:
    with pytest.raises(ValueError) as info:
        fields.parse_escapes(text)
    assert str(info.value).startswith(problem)
    assert "\n" not in str(info.value)


def test_hex_and_text_helpers() -> None:
    assert hex_text(b"") == "(no bytes)"
    assert hex_text(b"\x00\xff") == "00 ff"
    assert hex_text(bytes(30), limit=4) == "00 00 00 00 … (+26 bytes)"
    assert as_text(b"abc") == "'abc'"
    assert as_text(b"\xff") == "b'\\xff'"


# -- the field picker -----------------------------------------------------------------------


def test_picker_renders_each_field_from_the_table() -> None:
    panel = FieldPicker()
    assert panel.picker.options == ("state", "attempts", "payload")
    for name in fields.FIELD_NAMES:
        panel.picker.value = name
        entry = fields.FIELDS[name]
        text = panel.text()
        assert text.startswith(f"field: {name}\n")
        assert entry.initial_text in text and entry.role in text
        for w in entry.writes:
            assert w.how in text
        for r in entry.reads:
            assert r.how in text
        assert f"emq-field-{name}" in panel.card.value
        assert "sample row" not in text
    assert panel.sample is None and panel.conn is None


def test_picker_colours_state_values_with_the_shared_palette() -> None:
    panel = FieldPicker()
    panel.picker.value = "state"
    for state in ("pending", "active", "scheduled", "dead"):
        assert style.STATE_COLOURS[state] in panel.card.value
    panel.picker.value = "attempts"
    assert "HINCRBY" in panel.card.value and "emq-state" not in panel.card.value


def test_picker_escapes_what_it_renders() -> None:
    panel = FieldPicker()
    panel.picker.value = "payload"
    assert "caller&#x27;s bytes" in panel.card.value


def test_picker_sample_needs_a_connection() -> None:
    with pytest.raises(ValueError, match="sample=True needs"):
        FieldPicker(sample=True)


def test_picker_sample_row_is_live() -> None:
    conn = connect(fresh=True)
    panel = FieldPicker(conn, Q, sample=True)
    assert panel.sample is not None and panel.error is None
    job_id = panel.sample.job_id
    row = jobs.record(conn, Q, job_id)
    assert row is not None and row[b"state"] == b"active" and row[b"attempts"] == b"2"
    assert f"sample row {job_id}: enqueue → claim (token 1)" in panel.text()
    assert panel.text().endswith("  state = 'active'")
    assert "emq-state-active" in panel.sample_line.value
    panel.picker.value = "attempts"
    assert panel.text().endswith("  attempts = '2'")
    panel.picker.value = "payload"
    assert panel.text().endswith("""  payload = '{"report": "march"}'""")

    jobs.complete(conn, Q, job_id, panel.sample.token)
    panel.reread.click()
    assert panel.row is None
    assert panel.text().endswith("the row is gone (completed: nothing of the job remains)")
    assert "emq-gone" in panel.sample_line.value


def test_picker_sample_refusal_is_one_line() -> None:
    conn = connect(fresh=True)
    panel = FieldPicker(conn, "no spaces allowed", sample=True)
    assert panel.sample is None
    assert panel.error is not None and panel.error.startswith("bad queue name")
    assert "\n" not in panel.error and "Traceback" not in panel.text()
    assert "emq-refused" in panel.message.value
    assert conn.dbsize() == 0


def test_picker_displays_its_text_and_its_widget() -> None:
    panel = FieldPicker()
    bundle = panel._repr_mimebundle_()
    assert bundle["text/plain"] == panel.text()
    assert "application/vnd.jupyter.widget-view+json" in bundle


# -- the payload round-trip panel -----------------------------------------------------------


def test_round_trip_panel_samples() -> None:
    conn = connect(fresh=True)
    panel = PayloadRoundTrip(conn, Q)
    assert panel.text().endswith("nothing sent yet")
    panel.samples.click()
    n = len(fields.SAMPLE_PAYLOADS)
    assert f"✓ {n} of {n} came back byte for byte" in panel.text()
    assert panel.table.value.count("emq-equal") == n
    assert "emq-differs" not in panel.table.value
    assert "00 ff fe 45 4d 51 00 80 c3 28" in panel.text()
    assert "b'\\x00\\xff\\xfeEMQ\\x00\\x80\\xc3('" in panel.text()
    assert conn.dbsize() == 0
    panel.samples.click()  # again: the panel shows one run, not two
    assert panel.table.value.count("emq-equal") == n


def test_round_trip_panel_custom_payload_with_escapes() -> None:
    conn = connect(fresh=True)
    panel = PayloadRoundTrip(conn, Q)
    panel.custom.value = r"id\x00\xc3"
    panel.escapes.value = True
    panel.send.click()
    assert panel.results[-1].sent == b"id\x00\xc3"
    assert panel.results[-1].equal
    assert "69 64 00 c3" in panel.text()
    panel.escapes.value = False
    panel.send.click()
    assert panel.results[-1].sent == rb"id\x00\xc3"


def test_round_trip_panel_escapes_html() -> None:
    conn = connect(fresh=True)
    panel = PayloadRoundTrip(conn, Q)
    panel.custom.value = "<b>bold</b>"
    panel.send.click()
    assert "&lt;b&gt;bold&lt;/b&gt;" in panel.table.value
    assert "<b>bold</b>" not in panel.table.value


def test_round_trip_panel_bad_escape_is_one_line_and_sends_nothing() -> None:
    conn = connect(fresh=True)
    panel = PayloadRoundTrip(conn, Q)
    panel.custom.value = r"oops\q"
    panel.escapes.value = True
    panel.send.click()
    assert panel.results == []
    assert panel.text().splitlines()[1].startswith("✗ unknown escape")
    assert "emq-refused" in panel.message.value
    assert conn.dbsize() == 0


def test_round_trip_panel_refuses_a_busy_queue() -> None:
    conn = connect(fresh=True)
    waiting = _fresh(conn)
    panel = PayloadRoundTrip(conn, Q)
    panel.samples.click()
    assert panel.results == []
    assert "✗ a round trip claims the job it enqueues" in panel.text()
    assert jobs.browse(conn, Q, 10) == [waiting]
    assert conn.hlen(keyspace.job_key(Q, waiting)) == 3


def test_round_trip_panel_reports_a_server_that_went_away() -> None:
    import fakeredis

    server = fakeredis.FakeServer()
    conn = fakeredis.FakeRedis(server=server)
    panel = PayloadRoundTrip(conn, Q)
    server.connected = False  # fakeredis: the server stops answering
    panel.send.click()
    assert panel.results == []
    assert panel.error is not None
    assert panel.error.startswith("cannot reach embedded fakeredis (in this process): ")
    assert "\n" not in panel.error
    assert "emq-refused" in panel.message.value
