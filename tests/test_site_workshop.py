"""A learner on the static site (``make site``) joins a workshop room through its WebSocket
gateway and claims a job.

A room of two on a real Valkey, behind its gateway on loopback (the site's own origin is one
it trusts: pages served from this machine); ``site/`` served from loopback;
page 08 (the learner's page) opened in headless Chromium, every other HTTP origin refused, so
the tab's only way to the room is the gateway (every WebSocket the page opens is noted). The
page runs itself in practice mode, then: learner-1's link with a wrong password is refused in
one line on the page and changes nothing in the room; learner-1's own link joins, **claim**
leases a job, and the server, read as the instructor, shows learner-1 holding it (the job
active with token 1, the gateway's log line naming learner-1, the connection logged in as
learner-1).
The figures (page live, join, claim) are printed. The site must have been built first.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from echomq_lab import keyspace
from echomq_lab.classroom import Room, calls, open_room, tally
from echomq_lab.classroom.board import Board
from echomq_lab.classroom.record import log_key
from echomq_lab.classroom.room import join_link
from tests.support import front_ends, site
from tools.browser import find_button, stored_widgets
from tools.course import file_of

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

pytestmark = pytest.mark.browser

ROOM = "siteroom"
PAGE = file_of("lab-the-workshop")
#: The learner's panel: the one with the join link's field.
PANEL = ".emq-panel:has(input[placeholder^='echomq://'])"
ANSWER_MS = 60_000


@dataclass
class Workshop:
    room: Room
    gateway: str
    admin: redis.Redis


@pytest.fixture(scope="module")
def workshop(valkey_tools: tuple[str, str]) -> Iterator[Workshop]:
    """A room of two on its own Valkey (a long lease: nothing expires during the test), its
    gateway on loopback, two jobs pending (without valkey-server the conftest's
    ``valkey_tools`` skips, printing why, or fails where backends are required)."""
    with open_room(ROOM, 2, lease_ms=600_000) as room, room.admin() as admin:
        Board(admin, ROOM).enqueue(2)
        yield Workshop(room, room.gateway_url, admin)


@dataclass
class Tab:
    page: Page
    panel: Locator
    refused: list[str]
    sockets: list[str]
    live_s: float
    errors: list[str]


@pytest.fixture(scope="module")
def tab(browser: Browser, site_url: str) -> Iterator[Tab]:
    """Page 08 on the site, run by itself to its live panel (practice mode): the page's one
    live run (:mod:`tests.support.front_ends`)."""
    assert front_ends.front_end(PAGE) == "room", "page 08 runs live here only"
    front_ends.ran_once(PAGE)
    seen = site.Opened()
    sockets: list[str] = []
    began = time.monotonic()
    page = site.open_page(browser, site_url, PAGE, seen)
    page.on("websocket", lambda ws: sockets.append(ws.url))
    try:
        site.wait_until_live(page)
        live_s = time.monotonic() - began
        print(f"\nsite workshop: page 08 live after {live_s:.1f} s")
        panel = page.locator(PANEL)
        assert "practice room" in panel.inner_text()
        yield Tab(page, panel, seen.refused, sockets, live_s, seen.errors)
    finally:
        page.context.close()


def test_the_page_runs_by_itself_with_every_widget_live(tab: Tab) -> None:
    assert tab.page.get_by_text("Error displaying widget").count() == 0
    assert tab.page.locator(".jupyter-widgets-error-widget").count() == 0
    assert tab.page.locator(".jp-OutputArea-output").filter(has_text="Traceback").count() == 0
    live = tab.page.locator(".jp-OutputArea-output > .jupyter-widgets").count()
    assert live == stored_widgets(site.ROOT / "notebooks" / PAGE)
    assert not [e for e in tab.errors if e.startswith("uncaught")], tab.errors
    assert tab.page.evaluate("window.jupyterapp.shell.leftCollapsed"), "the file browser folded"


def _join(tab: Tab, link: str) -> float:
    """Paste ``link`` into the panel and press join; seconds until the panel's line changed
    to what the join came to (past the "running…" cue the press shows at once)."""
    message = tab.panel.locator(".emq-message").first
    before = message.inner_text() if message.count() else ""
    tab.panel.locator("input[placeholder^='echomq://']").fill(link)
    began = time.monotonic()
    find_button(tab.panel, "join the room").click()
    tab.page.wait_for_function(
        "([sel, before]) => { const m = document.querySelector(sel + ' .emq-message');"
        " return m && !m.classList.contains('emq-running') && m.innerText.trim()"
        " && m.innerText !== before; }",
        arg=[PANEL, before], timeout=ANSWER_MS)
    return time.monotonic() - began


def _state(w: Workshop) -> tuple[object, ...]:
    """What a join could change in the room: the sets, the tally, learner-1's log."""
    k = keyspace.keys(ROOM)
    return (tuple(w.admin.zrange(s, 0, -1) for s in k.sets), tally(w.admin, ROOM),
            w.admin.xlen(log_key(ROOM, "learner-1")))


def test_a_wrong_password_is_refused_in_one_line_and_changes_nothing(
        workshop: Workshop, tab: Tab) -> None:
    before = _state(workshop)
    link = join_link(workshop.room.url("learner-1"), ROOM, workshop.gateway)
    wrong = link.replace(workshop.room.passwords["learner-1"], "not-the-password")
    _join(tab, wrong)
    said = tab.panel.locator(".emq-message").first.inner_text()
    assert "authentication failed" in said and "WRONGPASS" in said, said
    assert "\n" not in said.strip() and "Traceback" not in tab.panel.inner_text()
    assert "practice room" in tab.panel.inner_text()  # the page stays where it was
    assert _state(workshop) == before


def test_learner_1_joins_through_the_gateway_and_claims_a_job(
        workshop: Workshop, tab: Tab) -> None:
    link = join_link(workshop.room.url("learner-1"), ROOM, workshop.gateway)
    join_s = _join(tab, link)
    said = tab.panel.locator(".emq-message").first.inner_text()
    assert f"joined room {ROOM} as learner-1" in said, said
    began = time.monotonic()
    find_button(tab.panel, "claim").click()
    claimed = tab.panel.locator(".emq-message").filter(has_text=re.compile(r"claimed JOB\w+"))
    claimed.first.wait_for(timeout=ANSWER_MS)
    claim_s = time.monotonic() - began
    print(f"site workshop: joined in {join_s:.2f} s, claimed in {claim_s:.2f} s "
          f"(page live after {tab.live_s:.1f} s)")
    job_id = re.search(r"claimed (JOB\w+) with token (\d+)", claimed.first.inner_text())
    assert job_id is not None and job_id[2] == "1"
    job = job_id[1]
    # On the server, as the instructor: learner-1 holds that job.
    admin = workshop.admin
    assert admin.zscore(keyspace.keys(ROOM).active, job) is not None
    assert int(admin.hget(keyspace.job_key(ROOM, job), "attempts") or 0) == 1
    mine = [(c.actor, c.verb, c.outcome, c.token)
            for c in calls(admin, ROOM, ["learner-1"]) if c.job_id == job]
    assert mine == [("learner-1", "claim", "accepted", 1)]
    assert any(c.get("user") == "learner-1" for c in admin.client_list())
    # The tab reached the room by the gateway only, and asked no other origin for anything.
    assert tab.sockets and {s.rstrip("/") for s in tab.sockets} == {workshop.gateway}
    assert tab.refused == [], tab.refused[:5]


def _press(tab: Tab, label: str, shows: str) -> str:
    """Click ``label`` in the panel and wait until its line shows ``shows`` (a pattern)."""
    find_button(tab.panel, label).click()
    line = tab.panel.locator(".emq-message").filter(has_text=re.compile(shows))
    line.first.wait_for(timeout=ANSWER_MS)
    return line.first.inner_text()


def test_learner_1_works_on_the_job_and_completes_it(
        workshop: Workshop, tab: Tab, screenshots: Path) -> None:
    """After the claim: **work** (a pause in the tab, the lease read back from the room), then
    **complete** with the claim's token; the row is gone and the log says who did it."""
    held = re.search(r"you hold (JOB\w+) with token 1", tab.panel.inner_text())
    assert held is not None, tab.panel.inner_text()
    job = held[1]
    _press(tab, "work", rf"you worked on {job} for")
    _press(tab, "complete", rf"completed {job} with token 1")
    assert not workshop.admin.exists(keyspace.job_key(ROOM, job))
    mine = [(c.verb, c.outcome) for c in calls(workshop.admin, ROOM, ["learner-1"])
            if c.job_id == job]
    assert mine == [("claim", "accepted"), ("complete", "accepted")]
    assert "claims 1 · completes 1" in tab.panel.inner_text()
    cell = tab.page.locator(".jp-CodeCell", has=tab.panel)
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(screenshots / "site-08-completed.png"))
