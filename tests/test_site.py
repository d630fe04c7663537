"""The static site (``make site``): its landing page, and one page's life in a tab, in
headless Chromium.

The pages themselves are run on the site by tests/test_jupyterlab.py (each opened and left to
run by itself, once: :mod:`tests.support.front_ends`). Here, ``index.html`` lists every page
the site carries, each with its title, each link opening the page in the mode that runs it;
and page 00, opened in the reader's view at 1200 x 800, shows its words before Python answers,
folds its code and hides the menus, runs again by itself at each reload (twice) with its
self-check's answer and the reader's place kept (both cleared by "Start over"), and, offline,
runs again in a reload while another page runs in a new tab; and, as the hub, shows in its
table of pages which of its checks are answered (forgotten by "Start over"). Last, a reader
follows the pages' own links, 00 → 01 → 02 → 03 → 00 (and 02 → 03 twice: from the words, before
Python is up, and from the live page), each page opening to run by itself, its checks answering
a press, and the hub then showing what was answered. Those reloads and walks run pages again:
they are what is tested, not new runs of the notebooks, and are not counted as such.
The site must have been built first (``make site``; ``make test`` does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect

from tests.support import site
from tests.support.site import READER_VIEWPORT, ROOT, SITE
from tools.browser import VIEWPORT, stored_widgets, wait_until_kept
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


#: The live page's cell at the top of its view (the place the page keeps), how far its top
#: sits below the view's top (px), and the view's scroll.
LIVE_PLACE = """() => {
  const scroller = document.querySelector('.jp-Notebook.jp-WindowedPanel-outer')
    || document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
  const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')];
  const top = scroller.getBoundingClientRect().top;
  const index = cells.findIndex((c) => c.getBoundingClientRect().bottom > top + 1);
  return {index, offset: Math.round(cells[index].getBoundingClientRect().top - top),
          scrollTop: scroller.scrollTop};
}"""
#: The hub's own row in its table of pages, on the live page.
HUB_ROW = ".jp-NotebookPanel tr:has-text('(this page)')"
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
    modified), the check shows its verdict again and the view is where the reader left it, to
    a few pixels (the same cell at the top, as far below the view's top); the hub's own row
    counts the answer. "Start over" clears both: no verdict, the page at its top, no answer
    counted."""
    _, page = reading
    site.wait_until_live(page)
    expect(page.locator(HUB_ROW)).to_contain_text(re.compile(r"opened; 0 of \d+ checks"))
    check = page.locator(CHECK).first
    check.locator("button").first.click()
    # the verdict, not the "running…" cue that comes before it: ✓ or ✗ opens it
    expect(_verdict(page)).to_contain_text(re.compile("[✓✗]"), timeout=30_000)
    said = _verdict(page).inner_text()[:12]  # its opening words (the rest may name a job id)
    expect(page.locator(HUB_ROW)).to_contain_text(re.compile(r"1 of \d+ checks answered"))
    _scroll_to_cell(page, PLACE_CELL)
    left = page.evaluate(LIVE_PLACE)
    assert left["index"] >= PLACE_CELL, f"scrolled to cell {left}"
    for _ in range(2):
        page.reload()
        site.wait_until_live(page)
        page.wait_for_function("() => window.emqLab.times.answers_replayed", timeout=60_000)
        assert page.locator(".jp-OutputArea-output .jupyter-widgets").count() > 0
        assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0
        expect(_verdict(page)).to_contain_text(said, timeout=30_000)
        page.wait_for_timeout(2_500)  # the last verdicts drawn
        back = page.evaluate(LIVE_PLACE)
        assert back["index"] == left["index"] and abs(back["offset"] - left["offset"]) <= 4, (
            f"after a reload the view is at {back}, not {left}")
    page.locator("#emq-start-over").click()
    site.wait_until_live(page)
    page.wait_for_function("() => window.emqLab.times.answers_replayed", timeout=60_000)
    expect(_verdict(page)).to_have_text("")
    top = page.evaluate(LIVE_PLACE)
    assert (top["index"], top["scrollTop"]) == (0, 0), f"after Start over the view is at {top}"
    expect(page.locator(HUB_ROW)).to_contain_text(re.compile(r"opened; 0 of \d+ checks"))


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
    wait_until_kept(page)
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





# -- following the links: 00 → 01 → 02 → 03 → 00, each page live by itself --------------------

WALK = [file_of(slug) for slug in
        ("the-record-hash", "the-hash-and-its-fields", "the-state-and-attempts", "the-payload")]
TITLES = {p.file: p.title for p in load()}
LIVE = ".jp-NotebookPanel"


def _arrived(page: Page, name: str) -> None:
    """The tab is at page ``name``'s own address (the site's way to open a page)."""
    page.wait_for_url(re.compile(rf"/lab/index\.html\?path={re.escape(name)}$"),
                      timeout=30_000)


def _nav_link(scope: Locator, label: str) -> Locator:
    """The link on the navigation cell's line "<label>:" in ``scope``."""
    return scope.locator("li", has=scope.page.locator(f"strong:text-is('{label}:')")).locator("a")


def _live(page: Page, seen: site.Opened) -> None:
    """:func:`site.wait_until_live`, the tab's console errors told if the run stopped."""
    try:
        site.wait_until_live(page)
    except AssertionError as exc:
        raise AssertionError(f"{page.url}: {exc}\nconsole errors: {seen.errors[-6:]}") from None


def _a_check_answers(page: Page) -> str:
    """Press the page's first self-check's first choice; its verdict shows (the page is live);
    the choice's words are returned."""
    check = page.locator(f"{LIVE} {CHECK}").first
    choice = check.locator("button").first
    words = choice.inner_text().strip()
    choice.click()
    expect(check.locator(".widget-html").last).to_contain_text(re.compile("[✓✗]"),
                                                                 timeout=60_000)
    return words


def test_following_the_links_leads_from_page_to_live_page(
    site_url: str, browser: Browser, screenshots: Path
) -> None:
    """A reader on the hub follows the pages' own links, in the reader's view, with nothing
    typed: each link opens its page at the site's address for it, and the page runs by itself
    (the cue ends live). 00 → 01 by the live page's "Next" link; 01 → 02 by the bar's next
    link; 02 → 03 by the "Next" link in the words, pressed before Python is up; on 03 a check
    answers a press; back to 02 by the bar, 02 → 03 again by the live page's link, a check
    answers again; 03 → the hub by the bar's hub link, where 03's row counts its answered
    check and the summary counts the pages opened, naming no choice."""
    seen = site.Opened()
    hub, first, centre, payload = WALK
    page = site.open_page(browser, site_url, hub, seen, viewport=READER_VIEWPORT)
    try:
        bar = page.locator("#emq-bar .emq-bar-pages")
        expect(bar.locator("a")).to_have_text(["hub", f"{TITLES[first]} →"])
        _live(page, seen)
        _nav_link(page.locator(LIVE), "Next").click()
        _arrived(page, first)
        expect(bar.locator("a")).to_have_text(
            [f"← {TITLES[hub]}", "hub", f"{TITLES[centre]} →"])
        _live(page, seen)
        bar.locator("a[aria-label^='Next page']").click()
        _arrived(page, centre)
        words = page.locator("#emq-words")
        _nav_link(words, "Next").wait_for(state="attached", timeout=30_000)
        assert page.evaluate("() => !(window.emqLab && window.emqLab.times.python_answers)"), (
            "Python answered before the words' link could be followed")
        _nav_link(words, "Next").evaluate("a => a.click()")  # below the fold: as Enter does
        _arrived(page, payload)
        _live(page, seen)
        picked = _a_check_answers(page)
        bar.locator("a[aria-label^='Previous page']").click()
        _arrived(page, centre)
        _live(page, seen)
        _nav_link(page.locator(LIVE), "Next").click()
        _arrived(page, payload)
        _live(page, seen)
        _a_check_answers(page)
        page.screenshot(path=str(screenshots / "site-walk-03.png"))
        bar.locator("a", has_text="hub").click()
        _arrived(page, hub)
        _live(page, seen)
        row = page.locator(f"{LIVE} tr", has=page.locator(f"a:text-is('{TITLES[payload]}')"))
        expect(row).to_contain_text(re.compile(r"1 of \d+ checks answered"))
        summary = page.locator(f"{LIVE} .emq-summary")
        expect(summary).to_contain_text("Pages opened: 4 of")
        assert picked not in summary.inner_text()
        summary.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "site-walk-hub-progress.png"))
        assert seen.refused == [], seen.refused[:3]
        assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0
    finally:
        page.context.close()
