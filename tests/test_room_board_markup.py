"""Nothing a learner (or the server) wrote runs as markup on the instructor's board: markup is
written everywhere a learner can reach, through the gateway and behind it, and into the record
itself, then the board's every view is opened in headless Chromium: no handler runs, and the
markup shows as text. On a real Valkey."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import redis

from echomq_lab import keyspace, scripts
from echomq_lab.classroom import Room, open_room
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.resp import command

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.browser

ROOM = "markup"
MARKUP = '"><img src=x onerror=window.__ran=1>'


@pytest.fixture(scope="module")
def room(valkey_tools: tuple[str, str]) -> Iterator[Room]:
    with open_room(ROOM, 2, lease_ms=60_000) as opened:
        yield opened


def _write_markup_everywhere(room: Room, admin: redis.Redis) -> None:
    k = keyspace.keys(ROOM)
    with redis.Redis.from_url(room.url("learner-1"), socket_timeout=5) as learner:
        for attempt in ((MARKUP,), ("HGET", MARKUP, "x"), ("ZCARD", MARKUP),
                        ("EVALSHA", scripts.load("complete").sha, "2", k.active,
                         k.rows + MARKUP, MARKUP, "1")):
            with pytest.raises(redis.exceptions.ResponseError):
                learner.execute_command(*attempt)
    with socket.create_connection(("127.0.0.1", room.port), timeout=5) as sock:
        sock.sendall(command("AUTH", MARKUP, MARKUP))  # a failed login under that name
        assert sock.recv(200).startswith(b"-WRONGPASS")
    from websockets.sync.client import connect

    with connect(room.gateway_url, open_timeout=5) as ws:
        ws.send(json.dumps({"user": MARKUP, "password": MARKUP}))
        assert json.loads(ws.recv())["ok"] is False
    with redis.Redis(host="127.0.0.1", port=room.server_port, username="learner-2",
                     password=room.server_passwords["learner-2"], socket_timeout=5) as behind:
        with pytest.raises(redis.exceptions.NoPermissionError):  # into the server's ACL LOG
            behind.zcard(MARKUP)
    # what only the server's side can write, written as if it had gone wrong there
    log = f"{keyspace.base(ROOM)}log:{MARKUP}"
    t0 = int(admin.hget(f"{keyspace.base(ROOM)}ctl", "t0_ms") or 0)
    for verb, began in (("claim", t0 + 100), ("complete", t0 + 900)):
        admin.xadd(log, {"verb": verb, "job": MARKUP, "token": 1, "outcome": "accepted",
                         "reply": MARKUP, "lease_ms": 500, "stalled": 0, "detail": MARKUP,
                         "began_ms": began, "ended_ms": began + 5, "held_by": MARKUP})
    admin.zadd(k.pending, {MARKUP: 0})  # a member with no row: the drift check names it


def test_markup_written_everywhere_a_learner_reaches_runs_nowhere_on_the_board(
        room: Room, browser: Browser) -> None:
    from echomq_lab.widgets.classroom import BoardPanel

    with room.admin() as admin:
        _write_markup_everywhere(room, admin)
        board = Board(admin, ROOM)
        panel = BoardPanel(board)
        panel.redraw(timeline=True)
        views = [panel.message, panel.summary, panel.drift, panel.picture, panel.table,
                 panel.acl]
        shown = "".join(f"<section>{v.value}</section>" for v in views)
    assert MARKUP not in shown and "data-job=\"&quot;&gt;&lt;img" in shown
    page = browser.new_page()
    try:
        page.set_content(f"<!doctype html><html><body>{shown}</body></html>")
        page.wait_for_timeout(500)  # an <img src=x> would have failed to load by now
        assert page.evaluate("window.__ran") is None
        assert page.locator("img").count() == 0
        text = page.inner_text("body")
        assert "onerror=window.__ran=1" in text  # shown as text, in the refusals at least
        jobs = page.eval_on_selector_all("rect.emq-lease", "rs => rs.map(r => r.dataset.job)")
        assert MARKUP in jobs  # the attribute holds the text, whole
    finally:
        page.close()
