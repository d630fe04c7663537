"""Hostile data and a shared server, seen through the panels.

Another client writes markup, odd keys, odd scores and odd states under a queue; the server
refuses writes (``READONLY``, ``OOM``, ``WRONGTYPE``), goes down, or was down from the start.
Each panel's callbacks are called the way ipywidgets calls them, but without ipywidgets' habit
of logging and swallowing what they raise, so an exception escaping a callback fails the test.
What must hold: nothing escapes a callback; each problem is one line on the panel; no value the
server holds appears unescaped in any widget's HTML.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest
import redis

import echomq_lab
from echomq_lab import branded, jobs, keyspace
from echomq_lab.lessons.two_workers import PROGRAM_GUESSES
from echomq_lab.servers import RunningServer
from echomq_lab.widgets import (
    FencePanel,
    FieldPicker,
    LabPanel,
    PayloadRoundTrip,
    RecordView,
    SetsView,
    TransitionPanel,
    TwoWorkersStory,
)
from echomq_lab.widgets.base import Panel
from tests.support.backends import kill_server, restart_server

Q = "hostile-panels"
PENDING = keyspace.queue_key(Q, "pending")
ACTIVE = keyspace.queue_key(Q, "active")
SCHEDULE = keyspace.queue_key(Q, "schedule")
XSS = "<img src=x onerror=alert(1)>"
ROOT = Path(__file__).resolve().parents[1]


# -- calling callbacks as ipywidgets would --------------------------------------------------------


def children(widget: Any) -> Iterator[Any]:
    """``widget`` and every widget inside it."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from children(child)


def html_values(panel: Panel) -> list[str]:
    """Every markup string the panel hands the browser (HTML widgets set innerHTML)."""
    return [str(w.value) for w in children(panel.widget) if isinstance(w, (W.HTML, W.HTMLMath))]


def fire(button: W.Button) -> None:
    """Call the button's click handlers the way a click does, letting any exception through."""
    for callback in button._click_handlers.callbacks:
        callback(button)


def act(story: TwoWorkersStory, step: str) -> None:
    """Take a story step as a reader would: a step that asks is taken by its pick, else pressed."""
    ask = story.story.waiting_for
    if ask is not None and ask.step == step:  # the pick takes the step
        guess = PROGRAM_GUESSES[step]
        fire(next(b for b in story.choices[step] if b.description == guess))
    else:
        fire(story.buttons[step])


def press_everything(panel: Panel, rounds: int = 2) -> list[str]:
    """Every button of the panel, enabled or not, ``rounds`` times over; what the panel said
    after each press (its message line and every HTML value), each message a single line."""
    buttons = [w for w in children(panel.widget) if isinstance(w, W.Button)]
    assert buttons, f"{type(panel).__name__} has no buttons"
    said: list[str] = []
    for _ in range(rounds):
        for button in buttons:
            fire(button)
            said.append(one_line(panel))
            said.extend(html_values(panel))
    return said


def one_line(panel: Panel) -> str:
    """The panel's last message, asserted to be a single line."""
    assert "\n" not in panel.last_message, panel.last_message
    return panel.last_message


Build = Callable[[redis.Redis, str], Panel]
PANELS: dict[str, Build] = {
    "transitions": lambda c, q: TransitionPanel(c, q, lease_ms=50),
    "fence": lambda c, q: FencePanel(c, q, lease_ms=50),
    "two-workers": lambda c, q: TwoWorkersStory(c, q, lease_ms=50),
    "lab": lambda c, q: LabPanel(c, q),
    "sets": lambda c, q: SetsView(c, q),
    "record": lambda c, q: RecordView(c, q, branded.mint()),
    "field-picker": lambda c, q: FieldPicker(c, q, sample=True),
    "payload": lambda c, q: PayloadRoundTrip(c, q),
}
WITH_BUTTONS = [name for name in PANELS if name not in ("sets", "record")]


# -- 2. no value from the server is markup -------------------------------------------------------


def write_markup(conn: redis.Redis) -> str:
    """As a second client: markup as a pending member, as fields, a payload and a state."""
    conn.zadd(PENDING, {XSS: 0})
    job = branded.mint()
    jobs.enqueue(conn, Q, job, XSS)
    row = keyspace.job_key(Q, job)
    conn.hset(row, mapping={"last_error": XSS, XSS: XSS})
    odd = branded.mint()
    conn.hset(keyspace.job_key(Q, odd), mapping={"state": XSS, "attempts": "0", "payload": XSS})
    conn.zadd(ACTIVE, {odd: 2**40})
    return job


@pytest.mark.parametrize("name", list(PANELS))
def test_no_server_value_reaches_a_widget_as_markup(conn: redis.Redis, name: str) -> None:
    panel = PANELS[name](conn, Q)
    write_markup(conn)
    if isinstance(panel, PayloadRoundTrip):
        panel.custom.value = XSS
    if isinstance(panel, (SetsView, RecordView)):
        panel.refresh()
    else:
        press_everything(panel)
    for value in html_values(panel):
        assert XSS not in value and "<img" not in value, value
    one_line(panel)


def test_the_followed_job_is_drawn_escaped(conn: redis.Redis) -> None:
    panel = TransitionPanel(conn, Q)
    panel.press("enqueue")
    job = panel.runner.job_id
    assert job is not None
    conn.hset(keyspace.job_key(Q, job), mapping={"state": XSS, "payload": XSS, XSS: "x"})
    panel.press("extend")  # refused (no token yet): the views are redrawn all the same
    markup = "".join(html_values(panel))
    assert XSS not in markup
    assert "&lt;img src=x onerror=alert(1)&gt;" in markup  # shown, as text


# -- 3. odd data is drift, drawn without raising --------------------------------------------------


def write_odd_data(conn: redis.Redis) -> None:
    """A string at a row key, a non-ASCII member, infinite scores, an unknown state, 'one'."""
    conn.set(keyspace.job_prefix(Q) + "lock", b"held by someone")
    conn.zadd(ACTIVE, {"JOB\u00e9t\u00e9\u00e9t\u00e9\u00e9".encode(): 5})
    inf_job, paused, one = branded.mint(), branded.mint(), branded.mint()
    for job, state, attempts in ((inf_job, "scheduled", "0"), (paused, "paused", "0"),
                                 (one, "pending", "one")):  # fmt: skip
        conn.hset(keyspace.job_key(Q, job),
                  mapping={"state": state, "attempts": attempts, "payload": b"p"})
    conn.zadd(SCHEDULE, {inf_job: float("inf")})
    conn.zadd(PENDING, {paused: 0, one: 0})
    conn.zadd(keyspace.queue_key(Q, "dead"), {b"\xff\xfe": float("-inf")})


@pytest.mark.parametrize("name", list(PANELS))
def test_odd_data_is_drawn_and_no_callback_raises(conn: redis.Redis, name: str) -> None:
    write_odd_data(conn)
    panel = PANELS[name](conn, Q)  # the panel can be built on that queue
    write_odd_data(conn)  # (some panels empty their queue when built: write it again)
    if isinstance(panel, (SetsView, RecordView)):
        panel.refresh()
    else:
        press_everything(panel)
    one_line(panel)
    if isinstance(panel, SetsView):
        assert "no drift" not in panel.text()


# -- 6. every server error is one line ------------------------------------------------------------


def _refusing_writes(kind: str, server_conn: redis.Redis) -> str:
    """Make the server refuse writes: ``wrongtype`` (a string where pending should be), a
    read-only replica, or a full memory. Returns the word the server's error starts with."""
    if kind == "wrongtype":
        server_conn.delete(PENDING)
        server_conn.set(PENDING, b"not a sorted set")
        return "WRONGTYPE"
    if kind == "readonly":
        server_conn.replicaof("127.0.0.1", "1")
        return "READONLY"
    server_conn.config_set("maxmemory-policy", "noeviction")
    server_conn.config_set("maxmemory", "1")
    return "OOM"


@pytest.mark.parametrize("name", WITH_BUTTONS)
def test_wrongtype_under_a_panel_is_one_line(conn: redis.Redis, name: str) -> None:
    panel = PANELS[name](conn, Q)
    word = _refusing_writes("wrongtype", conn)
    said = press_everything(panel)
    if name == "fence":  # each press builds a fresh sample row on an emptied queue: the odd
        # key goes with the emptying, and the panel works on (one line, the sample row built)
        assert one_line(panel), "the message line stayed empty"
        assert conn.type(PENDING) in (b"zset", b"none"), "the fence panel left the odd key"
        return
    if name != "field-picker":  # (its buttons only re-read its sample row, which is intact)
        assert one_line(panel), "the message line stayed empty"
        # the server's WRONGTYPE as one line, or check()'s drift naming the wrong-type key
        assert any(word in text or "wrong-type" in text for text in said), said[:3]


# (``own_server``, a real server of the test's own, comes from tests/conftest.py)


@pytest.mark.parametrize("kind", ["readonly", "oom"])
@pytest.mark.parametrize("name", WITH_BUTTONS)
def test_a_server_refusing_writes_is_one_line_on_each_panel(
    own_server: RunningServer, kind: str, name: str
) -> None:
    conn = echomq_lab.connect(own_server.url)
    panel = PANELS[name](conn, Q)
    word = _refusing_writes(kind, conn)
    said = press_everything(panel)
    if name != "field-picker":  # (its buttons only re-read the sample row: nothing is written)
        assert any(text.startswith(f"the server answered an error: {word}") for text in said), said


# -- 7. panels built while the server is down recover on the next press ---------------------------


@pytest.mark.parametrize("name", WITH_BUTTONS)
def test_a_panel_built_while_the_server_is_down_works_once_it_is_up(
    own_server: RunningServer, name: str
) -> None:
    kill_server(own_server, signal.SIGTERM)  # its port and folder stay, to restart
    conn = echomq_lab.connect(own_server.url, ping=False)
    panel = PANELS[name](conn, Q)  # no traceback
    said = press_everything(panel, rounds=1)
    assert any("cannot reach redis://" in text for text in said), said[:4]
    restart_server(own_server)
    said = press_everything(panel, rounds=1)
    assert not any("cannot reach" in text for text in said), said[:4]


def _first_cells(notebook: str, count: int) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return [c for c in code if c.strip() and not c.lstrip().startswith("%")][:count]


def test_notebook_02_opens_on_a_stopped_server_with_one_line(
    own_server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    kill_server(own_server, signal.SIGTERM)  # its port and folder stay, to restart
    monkeypatch.setenv("ECHOMQ_REDIS_URL", own_server.url)
    monkeypatch.chdir(ROOT / "notebooks")
    first, panel_cell = _first_cells("02-the-state-and-attempts.ipynb", 2)
    names: dict[str, Any] = {}
    out = StringIO()
    with redirect_stdout(out):
        exec(first, names)  # noqa: S102 - the notebook's own cell, as the kernel runs it
    printed = out.getvalue().strip()
    assert printed.count("\n") == 0 and "cannot reach" in printed, printed
    exec(panel_cell, names)  # noqa: S102
    story = names["story"]  # the page opens on the two workers
    assert isinstance(story, TwoWorkersStory)
    restart_server(own_server)
    fire(story.buttons["restart"])  # its job could not be written while the server was down
    act(story, "a_claims")
    assert story.story.next_step != "a_claims", story.last_message


# -- 8. the story never mistakes a dead server for the fence --------------------------------------


@pytest.fixture
def durable_server(
    backend_name: str, own_server_of: Callable[..., RunningServer]
) -> Iterator[RunningServer]:
    """A real server that keeps every write across a restart (an fsynced append-only file)."""
    with own_server_of(
        backend_name,
        extra_args=["--appendonly", "yes", "--appendfsync", "always"],
        in_process="the embedded server runs in this process: it cannot be stopped and restarted",
    ) as server:
        yield server


def test_a_step_that_could_not_reach_the_server_is_not_taken(
    durable_server: RunningServer,
) -> None:
    conn = echomq_lab.connect(durable_server.url)
    story = TwoWorkersStory(conn, Q, lease_ms=50)
    for step in ("a_claims", "a_stalls", "reaper_returns", "b_claims"):
        act(story, step)
    assert story.story.next_step == "a_completes", story.last_message
    kill_server(durable_server, signal.SIGTERM)
    act(story, "a_completes")
    assert one_line(story).startswith("cannot reach redis://"), story.last_message
    assert story.story.next_step == "a_completes"  # not taken: it can be pressed again
    assert not any(b.disabled for b in story.choices["a_completes"])
    assert "refused" not in story.story.log_text().split("\n")[4]
    restart_server(durable_server)
    act(story, "a_completes")  # now the fence answers, not the network
    assert story.last_message.startswith("Right: A refused: EMQSTALE"), story.last_message
    act(story, "b_completes")
    assert story.story.next_step is None and story.last_ok, story.last_message


# -- 9. two stories on one queue ------------------------------------------------------------------


def test_two_stories_on_one_queue_each_keep_their_job(conn: redis.Redis) -> None:
    first = TwoWorkersStory(conn, Q, lease_ms=50)
    act(first, "a_claims")
    second = TwoWorkersStory(conn, Q, lease_ms=50)  # built on the same queue: first's job stays
    assert jobs.record(conn, Q, first.story.job_id) is not None
    for step in ("a_stalls", "reaper_returns", "b_claims", "a_completes", "b_completes"):
        act(first, step)
        assert "Claimed(" not in first.last_message and "RuntimeError" not in first.last_message
    assert first.story.next_step is None, first.last_message
    for step in ("a_claims", "a_stalls", "reaper_returns", "b_claims", "a_completes",
                 "b_completes"):  # fmt: skip
        act(second, step)
    assert second.story.next_step is None, second.last_message


def test_a_story_says_in_one_line_when_someone_else_took_its_job(conn: redis.Redis) -> None:
    story = TwoWorkersStory(conn, Q, lease_ms=50)
    taken = jobs.claim(conn, Q, 60_000)  # another client claims the story's job first
    assert taken is not None and taken.id == story.story.job_id
    act(story, "a_claims")
    line = one_line(story)
    assert story.story.job_id in line and "someone else" in line, line
    assert "Claimed(" not in line and "RuntimeError" not in line
    assert story.story.next_step == "a_claims"  # not taken
    # and when the claim hands out another job, the story says so too, and keeps its own
    other = branded.mint("JOB")
    conn.zadd(PENDING, {other: 0})
    conn.hset(keyspace.job_key(Q, other), mapping={"state": "pending", "attempts": "0",
                                                   "payload": b"theirs"})  # fmt: skip
    act(story, "a_claims")
    line = one_line(story)
    assert other in line and story.story.job_id in line, line
    assert story.story.next_step == "a_claims"


# -- 10. a frozen server is one bounded wait ------------------------------------------------------


@pytest.mark.parametrize("name", ["transitions", "lab", "two-workers", "fence"])
def test_a_frozen_server_is_one_wait_and_one_line(own_server: RunningServer, name: str) -> None:
    conn = echomq_lab.connect(own_server.url + "?socket_timeout=0.3")
    panel = PANELS[name](conn, Q)
    sent: list[str] = []
    real = conn.execute_command

    def counting(*args: Any, **kwargs: Any) -> Any:
        sent.append(str(args[0]))
        return real(*args, **kwargs)

    first = next(w for w in children(panel.widget) if isinstance(w, W.Button) and not w.disabled)
    if isinstance(panel, TwoWorkersStory):  # its first step, not its fence switch
        first = panel.buttons["a_claims"]
    os.kill(own_server.proc.pid, signal.SIGSTOP)
    try:
        conn.execute_command = counting  # type: ignore[method-assign]
        fire(first)
    finally:
        conn.execute_command = real  # type: ignore[method-assign]
        os.kill(own_server.proc.pid, signal.SIGCONT)
    assert len(sent) == 1, sent  # one command, one wait: no redraw waits on it again
    assert one_line(panel).endswith("did not answer within 0.3 s; the call may or may not have run")


# -- 4. a member that is not an id never becomes the followed job --------------------------------


def test_a_malformed_member_never_wedges_the_transition_panel(conn: redis.Redis) -> None:
    panel = TransitionPanel(conn, Q)
    conn.zadd(PENDING, {b"AAA": 0, XSS: 0})
    line = panel.press("claim")
    assert panel.runner.job_id is None  # never followed
    assert "2 × member that is not a JOB id" in line and "only the lab's scripts" in line, line
    assert line.startswith("claim found no pending job to hand out"), line
    assert conn.exists(keyspace.job_prefix(Q) + "AAA") == 0  # never given a row
    assert panel.press("enqueue").startswith("enqueue wrote"), panel.last_message
    assert panel.press("claim").startswith("claim wrote"), panel.last_message
    assert panel.runner.token == 1
    assert "no drift" in panel.sets.text()


# -- 1. a vanished row under the story: no false account of the fence ----------------------------


def test_the_story_does_not_claim_a_fence_over_a_row_that_vanished(conn: redis.Redis) -> None:
    story = TwoWorkersStory(conn, Q, lease_ms=50)
    for step in ("a_claims", "a_stalls"):
        act(story, step)
    conn.delete(keyspace.job_key(Q, story.story.job_id))  # another client's DEL, or eviction
    act(story, "reaper_returns")
    act(story, "b_claims")  # nothing to claim: the id was dropped as an orphan
    line = one_line(story)
    assert "someone else took this story's job" in line and "B holds token 1" not in line, line
    assert jobs.record(conn, Q, story.story.job_id) is None  # no partial row was written
