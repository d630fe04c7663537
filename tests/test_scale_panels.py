"""The panels on a queue deeper than their window, on every backend.

A panel reads one bounded view per click: it says how much of each set it shows ("showing 10
of 31"), keeps the job it follows in view wherever that job sits in the queue, judges only what
it read, and offers the whole-queue check as an explicit button that finds a drift planted
beyond the window.
"""

from __future__ import annotations

import html

import redis

from echomq_lab import branded, jobs, keyspace
from echomq_lab.snapshot import WINDOW
from echomq_lab.widgets import SetsView, TransitionPanel

Q = "deep-panel"
DEPTH = 3 * WINDOW


def _fill(conn: redis.Redis, n: int) -> list[str]:
    made = [branded.mint() for _ in range(n)]
    for job in made:
        jobs.enqueue(conn, Q, job, b"x")
    return made


def test_a_deep_set_says_how_much_it_shows(conn: redis.Redis) -> None:
    _fill(conn, DEPTH)
    view = SetsView(conn, Q)
    assert f"showing {WINDOW} of {DEPTH}" in view.columns["pending"].value
    assert "(0)" in view.columns["active"].value  # a set within the window shows its size
    lines = view.text().splitlines()
    assert lines[0].endswith(f"(showing {WINDOW} of {DEPTH})")
    assert lines[0].count("JOB") == WINDOW
    assert lines[-1].startswith("drift check of the jobs shown: no drift")
    assert view.full_check in view.widget.children


def test_a_small_queue_reads_as_before(conn: redis.Redis) -> None:
    made = _fill(conn, 3)
    view = SetsView(conn, Q)
    assert "(3)" in view.columns["pending"].value and "showing" not in view.text()
    assert view.text().endswith("drift check: no drift")
    assert view.full_check not in view.widget.children
    assert view.text().splitlines()[0] == "pending:  " + ", ".join(made)


def test_the_full_check_finds_what_the_window_cannot(conn: redis.Redis) -> None:
    made = _fill(conn, DEPTH)
    deep = made[-2]
    conn.hset(keyspace.job_key(Q, deep), "state", "dead")
    view = SetsView(conn, Q)
    shown_only = "drift check of the jobs shown: no drift · the full check reads them all"
    assert view.text().endswith(shown_only)  # the drift lies beyond the window
    view.full_check.click()
    assert view.report is not None and [(d.kind, d.job_id) for d in view.report] == [
        ("state-mismatch", deep)
    ]
    line = html.unescape(view.check_line.value)
    assert f"walked {DEPTH} members and {DEPTH} rows: 1 drift(s)" in line
    assert f"state-mismatch: {deep} has state 'dead' but is in pending" in line
    assert "emq-ok" not in line


def test_the_transition_panel_follows_its_job_beyond_the_window(conn: redis.Redis) -> None:
    _fill(conn, DEPTH)
    panel = TransitionPanel(conn, Q, lease_ms=60_000)
    assert panel.press("enqueue").startswith("enqueue wrote state=pending")
    job_id = panel.runner.job_id
    shown = panel.sets.snap
    assert job_id is not None and shown is not None and job_id not in shown.members("pending")
    assert panel.record.row is not None and panel.record.row[b"state"] == b"pending"
    assert panel.record.state == "pending" and panel.diagram.current == "pending"
    text = panel.text()
    assert f"(showing {WINDOW} of {DEPTH + 1})" in text
    assert "drift check of the jobs shown: no drift" in text
