"""The centre page's story in the app (``make app``, Voilà), as a reader plays it.

After **A claims**, A's lease drains on screen and runs out with no further click: the front-end
clock (an ipywidgets ``Play``, no kernel thread) redraws the lanes and takes the stall once the
server's clock has passed A's deadline. B's claim stays off the page until the reader picks a
token; the fence switch restarts the story with the unfenced demonstration named on screen.

The app is started by the ``app`` fixture of tests/test_browser_app.py (``make app`` from the
repository); the browser is the module fixture ``browser`` of tests/conftest.py. Without a
Chromium the tests skip, saying why; with ``ECHOMQ_REQUIRE_BACKENDS=1`` they fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tests.test_browser_app import CENTRE, app, render  # noqa: F401 - ``app`` is a fixture
from tools.browser import find_button

pytestmark = pytest.mark.browser

#: A's lease on the page is 4 s; the clock ticks every 250 ms.
LEASE_OUT_MS = 30_000


def test_in_the_app_as_lease_runs_out_with_no_further_click(
    app: str, browser: Browser, screenshots: Path  # noqa: F811 - the fixture imported above
) -> None:
    page = render(browser, app, CENTRE)
    try:
        story = page.locator(".emq-two-workers")
        expect(story).to_have_count(1)
        expect(find_button(story, BUTTON_LABELS["reaper_returns"])).to_have_count(0)
        find_button(story, BUTTON_LABELS["a_claims"]).click()
        expect(story.locator(".emq-lease-bar")).to_have_count(1, timeout=LEASE_OUT_MS)
        expect(story).to_contain_text("left", timeout=LEASE_OUT_MS)
        expect(story).to_contain_text("lease ran out", timeout=LEASE_OUT_MS)
        expect(story).to_contain_text("a lease that ran out", timeout=LEASE_OUT_MS)
        reaper = find_button(story, BUTTON_LABELS["reaper_returns"])
        expect(reaper).to_be_enabled(timeout=LEASE_OUT_MS)
        page.screenshot(path=str(screenshots / "app-02-lease-ran-out.png"))
        reaper.click()
        expect(story).to_contain_text("Which token does B get?", timeout=LEASE_OUT_MS)
        expect(find_button(story, BUTTON_LABELS["b_claims"])).to_have_count(0)
        find_button(story, "2").click()
        expect(find_button(story, BUTTON_LABELS["b_claims"])).to_be_enabled(timeout=LEASE_OUT_MS)
        find_button(story, "fence off (demonstration)").click()
        expect(story).to_contain_text("unfenced complete (a demonstration, not the protocol)",
                                      timeout=LEASE_OUT_MS)
        expect(find_button(story, BUTTON_LABELS["a_claims"])).to_be_enabled(timeout=LEASE_OUT_MS)
    finally:
        page.close()
