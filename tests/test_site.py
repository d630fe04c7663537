"""The static site (``make site``): its landing page, and one page's life in a tab, in
headless Chromium.

The pages themselves are run on the site by tests/test_jupyterlab.py (each opened and left to
run by itself, once: :mod:`tests.support.front_ends`). Here, ``index.html`` lists every page
the site carries, each with its title, each link opening the page in the mode that runs it;
and page 00, opened in the reader's view at 1200 x 800, shows its words before Python answers,
folds its code and hides the menus, runs again by itself at each reload (twice) with its
self-check's answer and the reader's place kept (both cleared by "Start over"), and, offline,
runs again in a reload while another page runs in a new tab. Those reloads run page 00 again
in the same tab: they are what is tested, not new runs of the notebook, and are not counted as
such.
The site must have been built first (``make site``; ``make test`` does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect

from tests.support import site
from tests.support.site import READER_VIEWPORT, ROOT, SITE
from tools.browser import VIEWPORT, stored_widgets
from tools.course import file_of, load

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Locator, Page

pytestmark = pytest.mark.browser



def test_the_landing_page_lists_the_pages_each_opening_to_run(
    site_url: str, browser: Browser
) -> None:
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(f"{site_url}/index.html")
        links = page.locator("li a")
        hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
        served = sorted(p.name for p in (SITE / "files").glob("*.ipynb"))
        assert sorted(h.split("path=", 1)[1] for h in hrefs if h) == served
        assert all(h and h.startswith("lab/index.html?path=") for h in hrefs), hrefs
        titles = {p.file: p.title for p in load()}
        assert links.all_inner_texts() == [titles[h.split("path=", 1)[1]] for h in hrefs if h]
    finally:
        page.close()


# -- a page read, reloaded, answered, read offline: one tab's life on page 00 -------------------

#: The page read here: a page of the site with self-checks (its own tab; pages 01-03 and 02's
#: story are run by tests/test_jupyterlab.py).
READ = file_of("the-record-hash")
#: Another page of the site, opened offline in a new tab.
OTHER = file_of("the-payload")
WORDS = "#emq-words .cell"
CHECK = ".emq-selfcheck"


@pytest.fixture(scope="module")
def reading(site_url: str, browser: Browser) -> Iterator[tuple[BrowserContext, Page]]:
    """One context at 1200 x 800 (the site's service worker and storage shared by its tabs),
    page :data:`READ` opened in it, nothing pressed."""
    seen = site.Opened()
    page = site.open_page(browser, site_url, READ, seen, viewport=READER_VIEWPORT)
    try:
        yield page.context, page
    finally:
        page.context.close()


def test_the_words_show_before_python_answers(reading: tuple[BrowserContext, Page]) -> None:
    """The page's words (its headings and prose, as stored) are on screen while Python has not
    answered yet; each panel stands as a note that it wakes up, not as its stored text."""
    _, page = reading
    page.locator(WORDS).first.wait_for(state="visible", timeout=30_000)
    answered = page.evaluate("() => (window.emqLab && window.emqLab.times.python_answers) || 0")
    assert answered == 0, f"Python answered at {answered} s, before the words showed"
    stored = ROOT / "notebooks" / READ
    title = json.loads(stored.read_text())["cells"][0]["source"][0]
    expect(page.locator("#emq-words h1").first).to_have_text(
        title.lstrip("# ").strip(), use_inner_text=True)
    assert page.locator("#emq-words .emq-asleep").count() == stored_widgets(stored)
    site.wait_until_live(page)
    expect(page.locator("#emq-reader")).to_have_count(0)


def test_the_page_runs_on_the_one_kernel_started_with_the_tab(
    reading: tuple[BrowserContext, Page]
) -> None:
    """The page's session is started as the app opens, on the worker Python was started in at
    once, and the page connects to it: one session, the page's, and one kernel run."""
    _, page = reading
    site.wait_until_live(page)
    running = page.evaluate("""() => {
        const services = window.jupyterapp.serviceManager;
        return {sessions: [...services.sessions.running()].map((s) => s.path),
                kernels: [...services.kernels.running()].length,
                handed: "kernel_handed" in window.emqLab.times};
    }""")
    assert running == {"sessions": [READ], "kernels": 1, "handed": True}


def test_the_reader_s_view_folds_the_code_and_hides_the_menus(
    reading: tuple[BrowserContext, Page]
) -> None:
    """Live, in the reader's view: no menu bar, no file browser, every code cell folded;
    "Show the code" shows them and is remembered over a reload; "Full JupyterLab" gives the
    menus back."""
    _, page = reading
    site.wait_until_live(page)
    menus = page.locator(".lm-MenuBar").first
    expect(menus).to_be_hidden()
    expect(page.locator("#jp-left-stack")).to_be_hidden()
    inputs = page.locator(".jp-CodeCell .jp-Cell-inputWrapper")
    assert inputs.count() > 0
    expect(inputs.first).to_be_hidden()
    page.locator("#emq-show-code").click()
    expect(inputs.first).to_be_visible()
    page.reload()
    site.wait_until_live(page)
    expect(page.locator("#emq-show-code")).to_have_attribute("aria-pressed", "true")
    expect(inputs.first).to_be_visible()
    page.locator("#emq-show-code").click()
    expect(inputs.first).to_be_hidden()
    page.locator("#emq-full-lab").click()
    expect(menus).to_be_visible()
    page.locator("#emq-full-lab").click()
    expect(menus).to_be_hidden()


def _verdict(page: Page) -> Locator:
    """The first self-check's verdict line (its last text, under its choices)."""
    return page.locator(CHECK).first.locator(".widget-html").last


#: The live page's cell at the top of its view (the place the page keeps), and its scroll.
LIVE_PLACE = """() => {
  const scroller = document.querySelector('.jp-Notebook.jp-WindowedPanel-outer')
    || document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
  const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')];
  const top = scroller.getBoundingClientRect().top;
  return {index: cells.findIndex((c) => c.getBoundingClientRect().bottom > top + 1),
          scrollTop: scroller.scrollTop};
}"""
#: The cell scrolled to the top before the reloads.
PLACE_CELL = 6


def _scroll_to_cell(page: Page, index: int) -> None:
    """Scroll the live page as a reader would until cell ``index`` is at the top of the view."""
    page.locator(".jp-NotebookPanel .jp-Cell").nth(index).hover()
    for _ in range(40):
        if page.evaluate(LIVE_PLACE)["index"] >= index:
            break
        page.mouse.wheel(0, 120)
        page.wait_for_timeout(50)
    page.wait_for_timeout(800)  # the place is noted a moment after the scrolling stops


def test_a_reload_runs_the_page_again_and_keeps_the_answer_and_the_place(
    reading: tuple[BrowserContext, Page]
) -> None:
    """A self-check answered and the page scrolled down, then two reloads: each time the page
    runs again by itself (the cue ends live, the panels are live again, the tab not marked
    modified), the check shows its verdict again and the view is where the reader left it;
    "Start over" clears both: no verdict, the page at its top."""
    _, page = reading
    site.wait_until_live(page)
    check = page.locator(CHECK).first
    check.locator("button").first.click()
    # the verdict, not the "running…" cue that comes before it: ✓ or ✗ opens it
    expect(_verdict(page)).to_contain_text(re.compile("[✓✗]"), timeout=30_000)
    said = _verdict(page).inner_text()[:12]  # its opening words (the rest may name a job id)
    _scroll_to_cell(page, PLACE_CELL)
    left = page.evaluate(LIVE_PLACE)["index"]
    assert left >= PLACE_CELL, f"scrolled to cell {left}"
    for _ in range(2):
        page.reload()
        site.wait_until_live(page)
        page.wait_for_function("() => window.emqLab.times.answers_replayed", timeout=60_000)
        assert page.locator(".jp-OutputArea-output .jupyter-widgets").count() > 0
        assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0
        expect(_verdict(page)).to_contain_text(said, timeout=30_000)
        back = page.evaluate(LIVE_PLACE)["index"]
        assert abs(back - left) <= 1, f"after a reload the view is at cell {back}, not {left}"
    page.locator("#emq-start-over").click()
    site.wait_until_live(page)
    page.wait_for_function("() => window.emqLab.times.answers_replayed", timeout=60_000)
    expect(_verdict(page)).to_have_text("")
    assert page.evaluate(LIVE_PLACE) == {"index": 0, "scrollTop": 0}


def test_back_and_forward_run_the_page_again(reading: tuple[BrowserContext, Page]) -> None:
    """From the list of pages to page 00, Back returns to the list in one step (JupyterLab's
    own addresses take no step of their own), and Forward runs the page again by itself."""
    _, page = reading
    page.goto(page.url.split("/lab/", 1)[0] + "/index.html")
    page.locator(f"li a[href$='{READ}']").click()
    site.wait_until_live(page)
    page.go_back()
    assert page.url.endswith("/index.html"), page.url
    page.go_forward()
    site.wait_until_live(page)
    assert page.locator(".jp-OutputArea-output .jupyter-widgets").count() > 0


def test_offline_a_reload_and_a_new_tab_run_their_pages(
    reading: tuple[BrowserContext, Page]
) -> None:
    """Once a page has been opened (and the site kept by its service worker), with the network
    off: a reload runs the page again, and a new tab runs another page of the site."""
    context, page = reading
    site.wait_until_live(page)
    page.wait_for_function(KEPT, timeout=120_000)
    context.set_offline(True)
    try:
        page.reload()
        site.wait_until_live(page)
        other = context.new_page()
        other.goto(page.url.split("?", 1)[0] + f"?path={OTHER}")
        site.wait_until_live(other)
        assert other.locator(".jp-OutputArea-output .jupyter-widgets").count() > 0
    finally:
        context.set_offline(False)


#: The site is kept: every file the service worker lists is in its cache.
KEPT = """async () => {
    const key = (await caches.keys()).find((k) => k.startsWith('emq-site-'));
    if (!key) return false;
    const kept = (await (await caches.open(key)).keys()).length;
    const listed = await (await fetch('../service-worker.js')).text();
    const files = JSON.parse(listed.match(/const EMQ_FILES = (\\[.*?\\]);/s)[1]);
    return kept >= files.length;
}"""
