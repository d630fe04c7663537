"""The pages as a reader meets them, in a real JupyterLab with headless Chromium.

One JupyterLab (a temporary copy of ``notebooks/``) and one browser serve the module (the
fixtures ``lab``, ``browser`` and ``ran`` of tests/conftest.py); each
notebook is opened in its own tab, its outputs cleared, and Run All runs it live. Then:

- 02 and 04: the two-worker story waits at step 1 (only *A claims* is on the page); after it,
  A's lease runs out on screen with no further click, and B's claim waits for a prediction;
- 02: a click on a self-check's answer shows the server's verdict, right or wrong;
- every notebook: its widgets are live and have buttons, and clicking every visible, enabled
  button in turn (waiting for the kernel after each) draws no widget error, puts no traceback
  in a cell, and logs none in the notebook's log console, where JupyterLab sends what a widget
  callback raises.

Without a Chromium the tests skip, saying why; with ``ECHOMQ_REQUIRE_BACKENDS=1`` they fail.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Error, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from echomq_lab.lessons.two_workers import STEPS
from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tools.browser import STDERR_OUTPUT, find_button, menu
from tools.course import load as course_pages

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
NOTEBOOKS = [p.file for p in course_pages()]
CENTRE = "02-the-state-and-attempts.ipynb"
STORIES = [CENTRE, "04-lab-two-workers-one-job.ipynb"]
#: How long one click may keep the kernel busy (a stall waits out a lease; a run takes seconds).
BUSY_MS = 120_000
SHOWN_MS = 30_000
ON_SHOW = ".jp-NotebookPanel:not(.lm-mod-hidden)"
BUTTONS = f"{ON_SHOW} .jp-OutputArea-output :is(.widget-button, .widget-toggle-button)"
BROKEN_WIDGET = f"{ON_SHOW} .jupyter-widgets-error-widget"


@pytest.fixture(scope="module")
def after_run_all() -> Callable[[Page], None]:
    """Once a notebook has run (``ran``, tests/conftest.py), wait for its first live button."""
    return lambda page: page.locator(BUTTONS).first.wait_for(timeout=SHOWN_MS)


def settle(page: Page) -> None:
    """Wait until the kernel has handled what the last click sent it."""
    try:
        page.get_by_text("| Busy").first.wait_for(timeout=500)
    except Error:
        pass  # it may have been quicker than the look
    page.get_by_text("| Idle").first.wait_for(timeout=BUSY_MS)


def log_console_text(page: Page) -> str:
    """The text of the notebook's log console (opened from the View menu)."""
    menu(page, "View", "logconsole:open")
    panel = page.locator(".jp-LogConsolePanel")
    panel.first.wait_for(timeout=SHOWN_MS)
    return panel.first.inner_text()


@pytest.mark.parametrize("name", STORIES)
def test_the_story_waits_at_step_one_after_run_all(name: str, ran: Callable[[str], Page]) -> None:
    page = ran(name)
    story = page.locator(f"{ON_SHOW} .emq-two-workers")
    expect(story).to_have_count(1)
    first, _title = STEPS[0]
    expect(find_button(story, BUTTON_LABELS[first]), f"{first} can be pressed").to_be_enabled()
    for step, _ in STEPS[1:]:  # later steps are not on the page yet
        expect(find_button(story, BUTTON_LABELS[step]), f"{step} is hidden").to_have_count(0)
    expect(story).to_contain_text("state pending, attempts 0, no lease")


@pytest.mark.parametrize("name", STORIES)
def test_after_a_claims_the_lease_runs_out_with_no_further_click(
    name: str, ran: Callable[[str], Page]
) -> None:
    page = ran(name)
    story = page.locator(f"{ON_SHOW} .emq-two-workers")
    find_button(story, BUTTON_LABELS["a_claims"]).click()
    expect(story.locator(".emq-lease-bar")).to_have_count(1, timeout=SHOWN_MS)
    expect(story).to_contain_text("left", timeout=SHOWN_MS)  # the bar drains...
    # ...and the front-end clock, not a click, takes the stall once A's deadline has passed
    expect(story).to_contain_text("lease ran out", timeout=SHOWN_MS)
    expect(find_button(story, BUTTON_LABELS["reaper_returns"])).to_be_enabled(timeout=SHOWN_MS)
    find_button(story, BUTTON_LABELS["reaper_returns"]).click()
    # B's claim stays hidden until the reader commits to a token
    expect(story).to_contain_text("Which token does B get?", timeout=SHOWN_MS)
    expect(find_button(story, BUTTON_LABELS["b_claims"])).to_have_count(0)
    find_button(story, "2").click()
    expect(find_button(story, BUTTON_LABELS["b_claims"])).to_be_enabled(timeout=SHOWN_MS)
    find_button(story, "start again").click()
    expect(find_button(story, BUTTON_LABELS["a_claims"])).to_be_enabled(timeout=SHOWN_MS)


def test_a_self_check_answer_shows_the_servers_verdict(ran: Callable[[str], Page]) -> None:
    page = ran(CENTRE)
    check = page.locator(f"{ON_SHOW} .emq-selfcheck").filter(has_text="reprocessed")
    expect(check).to_have_count(1)
    message = check.locator(".widget-html").last
    assert "The server" not in check.inner_text(), "the question was shown answered"
    find_button(check, "(a) 1").click()
    expect(check).to_contain_text("Not this one", timeout=SHOWN_MS)
    expect(check).to_contain_text("The server:")
    find_button(check, "(c) 4").click()
    expect(message).to_contain_text("Right.", timeout=SHOWN_MS)
    expect(check).to_contain_text("attempts=4")  # what the server's row held after the claim


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_visible_button_clicks_cleanly(name: str, ran: Callable[[str], Page]) -> None:
    page = ran(name)
    buttons = page.locator(BUTTONS)
    count = buttons.count()
    assert count > 0, f"{name}: no live widget button after Run All"
    stderr_before = page.locator(STDERR_OUTPUT).count()
    clicked = []
    for i in range(count):
        it = buttons.nth(i)
        if not it.is_visible() or not it.is_enabled():
            continue
        label = it.inner_text().strip()
        it.scroll_into_view_if_needed()
        try:
            it.click(timeout=10_000)
        except PlaywrightTimeout:
            # A button may disable itself between the look and the click (a Stop button
            # whose run just ended): that is the widget working, not a broken click.
            if it.is_enabled():
                raise
            continue
        clicked.append(label)
        settle(page)
    assert clicked, f"{name}: {count} buttons, none visible and enabled"
    assert page.get_by_text("Error displaying widget").count() == 0, name
    assert page.locator(BROKEN_WIDGET).count() == 0, f"{name}: a widget drawn as an error"
    assert page.locator(STDERR_OUTPUT).count() == stderr_before, (
        f"{name}: a click put output on stderr:\n{page.locator(STDERR_OUTPUT).last.inner_text()}")
    logged = log_console_text(page)
    assert "Traceback" not in logged and "Error" not in logged, (
        f"{name}: after clicking {len(clicked)} buttons the log console holds:\n{logged[-3000:]}")
    print(f"\n{name}: clicked {len(clicked)} of {count} buttons, no error")
