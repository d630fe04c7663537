"""Nothing a learner (or the server) wrote runs as markup on the instructor's board: markup is
written everywhere a learner can reach, through the gateway and behind it, and into the record
itself, then the board's every view is opened in headless Chromium: no handler runs, and the
markup shows as text. Then the board as the README starts it, from the repository's root
(``ECHOMQ_ROOM_JSON=<relative path> voila notebooks/board-the-workshop.ipynb``), under the
Content-Security-Policy of ``voila.json``: the board renders, no script of the page is refused,
and an inline handler put into the page runs nowhere. On a real Valkey."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from echomq_lab import keyspace, scripts, servers
from echomq_lab.classroom import Room, open_room
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.resp import command
from tools.browser import serving

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.browser

ROOM = "markup"
MARKUP = '"><img src=x onerror=window.__ran=1>'


ROOT = Path(__file__).resolve().parents[1]
FOLDER = Path("build") / f"markup-room-{os.getpid()}"  # relative to the repository's root


@pytest.fixture(scope="module")
def room(valkey_tools: tuple[str, str]) -> Iterator[Room]:
    try:
        with open_room(ROOM, 2, lease_ms=60_000, out=ROOT / FOLDER) as opened:
            yield opened
    finally:
        shutil.rmtree(ROOT / FOLDER, ignore_errors=True)


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


@pytest.fixture(scope="module")
def voila(room: Room, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The board, started as the README says, from the repository's root."""
    port = servers.free_port()
    env = {**os.environ, "ECHOMQ_ROOM_JSON": str(FOLDER / "room.json"), "PWD": str(ROOT)}
    argv = [sys.executable, "-m", "voila", "notebooks/board-the-workshop.ipynb", "--no-browser",
            f"--port={port}"]
    with serving(argv, ROOT, env, port, tmp_path_factory.mktemp("voila") / "voila.log",
                 timeout_s=120) as url:
        yield url + "/"


def test_the_board_as_the_readme_starts_it_runs_under_a_strict_policy(
        room: Room, voila: str, browser: Browser) -> None:
    import urllib.request

    with room.admin() as admin:
        _write_markup_everywhere(room, admin)
    with urllib.request.urlopen(voila, timeout=60) as answer:
        policy = answer.headers["Content-Security-Policy"] or ""
    assert "script-src 'self' 'sha256-" in policy
    assert "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";", 1)[0]
    page = browser.new_page()
    said: list[str] = []
    page.on("console", lambda m: said.append(m.text))
    try:
        page.goto(voila, timeout=120_000)
        page.get_by_text("drift check").first.wait_for(timeout=120_000)
        page.get_by_text("completed a job").first.wait_for(timeout=30_000)
        assert page.evaluate("window.__ran") is None and page.locator("img").count() == 0
        refused = [m for m in said if "Content Security Policy" in m and "script" in m]
        assert refused == [], refused[:3]
        page.evaluate("document.body.insertAdjacentHTML('beforeend', "
                      "'<img src=x onerror=\"window.__ran2=1\">')")
        page.wait_for_timeout(500)
        assert page.evaluate("window.__ran2") is None  # the policy is a second wall
    finally:
        page.close()


def test_the_policy_is_the_boards_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """``make app`` (a Voila of its own, run from the same root) serves every page: the board's
    hashes would refuse their scripts, so voila.json leaves it without the policy."""
    from voila.app import Voila

    from echomq_lab.widgets.app import App

    monkeypatch.chdir(ROOT)
    settings = {}
    for cls in (Voila, App):
        app = cls()
        app.load_config_file("voila", path=app.config_file_paths)
        settings[cls.__name__] = app.tornado_settings
    assert "Content-Security-Policy" in settings["Voila"]["headers"]
    assert settings["App"] == {}
