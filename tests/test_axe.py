"""Pages 00-04 in the app (``make app``, Voilà) hold no serious or critical accessibility
violation that axe-core finds (WCAG 2 A and AA rules).

axe-core is the npm package pinned in tools/axe/package.json (installed into
tools/axe/node_modules by ``npm ci --prefix tools/axe``). Each page is rendered the way
tests/test_browser_app.py renders it (``make app`` from the repository, headless Chromium),
axe is injected into the page once its widgets are drawn, and the violations of impact
``serious`` or ``critical`` are listed by rule and element. A first check runs axe on a page with
a known fault, so the test is seen to catch one. Without axe-core or a Chromium the tests skip,
saying why; with ``ECHOMQ_REQUIRE_BACKENDS=1`` they fail.

On the same app, the centre page's two-workers story is played by keyboard alone: Tab moves to
each step's button or answer (the page's own tab order), Enter presses it, through A's refused
late complete, with the live clock's pause and resume between.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.test_browser_app import app, render  # noqa: F401 - the app fixture, for these tests
from tools.browser import find_button
from tools.course import load as course_pages

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
#: The pages the app serves that this test holds to the rules: the module's hub and its dives,
#: and the first lab.
PAGES = [p.file for p in course_pages() if int(p.file[:2]) <= 4]
#: The impacts that fail the test.
BLOCKING = ("serious", "critical")
RUN_AXE = """async () => {
    const result = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}});
    return result.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => n.target.join(' ') + ' ' + n.html.slice(0, 120))}));
}"""


def axe_source() -> str:
    """The axe-core script, or a skip (a failure under ECHOMQ_REQUIRE_BACKENDS=1) saying why."""
    if not AXE.exists():
        why = f"axe-core is not installed in {AXE.parent.parent}: run npm ci --prefix tools/axe"
        if os.environ.get("ECHOMQ_REQUIRE_BACKENDS") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return AXE.read_text()


def violations(page: Page) -> list[dict[str, Any]]:
    """axe's WCAG 2 A/AA violations on ``page`` of a blocking impact."""
    page.add_script_tag(content=axe_source())
    found: list[dict[str, Any]] = page.evaluate(RUN_AXE)
    return [v for v in found if v["impact"] in BLOCKING]


def said(found: list[dict[str, Any]]) -> str:
    return "\n".join(f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['help']}\n    "
                     + "\n    ".join(v["nodes"][:5]) for v in found)


def test_axe_catches_a_button_with_no_name(browser: Browser) -> None:
    page = browser.new_page()
    try:
        page.set_content('<html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
                         '<button><i class="icon"></i></button></main></body></html>')
        assert [v["id"] for v in violations(page)] == ["button-name"]
    finally:
        page.close()


@pytest.mark.parametrize("name", PAGES)
def test_no_serious_or_critical_violation_in_the_app(
    name: str, app: str, browser: Browser,  # noqa: F811 - the imported fixture
) -> None:
    page = render(browser, app, name)
    try:
        found = violations(page)
        assert not found, f"{name}:\n{said(found)}"
    finally:
        page.close()


#: The most Tab presses from one control to the next the keyboard test allows.
TABS = 250
UPDATE_MS = 30_000
ACTIVE_TEXT = "() => (document.activeElement && document.activeElement.textContent || '').trim()"


def tab_to(page: Page, label: str, key: str = "Tab") -> None:
    """Press ``key`` (Tab, or Shift+Tab to go back) until the focused control reads ``label``,
    waiting first for the story's control of that name to be enabled."""
    expect(find_button(page.locator(".emq-two-workers"), label)).to_be_enabled(timeout=UPDATE_MS)
    for _ in range(TABS):
        page.keyboard.press(key)
        if page.evaluate(ACTIVE_TEXT) == label:
            return
    pytest.fail(f"{TABS} presses of {key} never reached {label!r}")


def test_the_story_plays_by_keyboard_alone(
    app: str, browser: Browser,  # noqa: F811 - the imported fixture
) -> None:
    page = render(browser, app, "02-the-state-and-attempts.ipynb")
    try:
        story = page.locator(".emq-two-workers")
        tab_to(page, "A claims")
        page.keyboard.press("Enter")
        tab_to(page, "pause the clock", "Shift+Tab")  # the clock sits above the steps
        page.keyboard.press("Enter")
        expect(story.locator(".emq-ticker")).to_contain_text("live clock: paused",
                                                             timeout=UPDATE_MS)
        page.keyboard.press("Enter")  # the same button now resumes the clock
        expect(story.locator(".emq-ticker")).to_contain_text("live clock: running",
                                                             timeout=UPDATE_MS)
        for label in ("run the reaper", "2", "B claims", "refused EMQSTALE", "A completes"):
            tab_to(page, label)
            page.keyboard.press("Enter")
        expect(story.locator(".emq-message.emq-refused").first).to_contain_text(
            "EMQSTALE: token 1 is stale", timeout=UPDATE_MS)
        expect(story.locator("svg.emq-fence")).to_have_count(1)
    finally:
        page.close()
