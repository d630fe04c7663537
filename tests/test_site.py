"""The static site (``make site``) in headless Chromium, with every other origin refused.

``site/`` is served from loopback; page 02 is opened in JupyterLite and, with nothing
pressed, runs top to bottom by itself in the tab's own Python (Pyodide), the protocol's scripts
on fengari, the cue saying what happens until the panels are live. Then: no widget error, no
traceback, no request to any other origin, the page not marked modified by its own run, the
table of contents listing the page's headings; a cell typed at the end (enqueue, claim with a
short lease, reap, claim again, complete with the old token, then the new) prints ``EMQSTALE``
for the old token and accepts token 2; and the two-workers story, clicked step by step, ends at
``EMQSTALE``. Pages 00-04, each run by itself the same way, hold no serious or critical
violation axe-core finds in the notebook (WCAG 2 A/AA). A Run All pressed while Python is still
starting is the page's one run, not lost and not doubled. Lab 05 (the simulation) also runs by
itself to its live panels and charts. The landing page lists the pages, each opening in that
mode. The site must have been built first (``make site``; ``make test`` does).
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import axe
from tests.support.backends import backends_required
from tests.support.story import play
from tools.browser import VIEWPORT, menu, only_from
from tools.course import file_of

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
PAGE = "02-the-state-and-attempts.ipynb"
LAB_05 = "05-lab-the-fence-under-load.ipynb"
#: Pyodide's start, the wheels, then every cell: well under this on 2 busy cores.
RUN_MS = 300_000
UPDATE_MS = 60_000
#: The cue the page shows until its panels are live (tools/site/cue.html), by what it says.
CUE = "#emq-cue"

TYPED = '''from echomq_lab import branded, connect, jobs
from echomq_lab.errors import StaleToken
import time
c = connect(); q = "typed"; job = branded.mint("JOB")
print(jobs.enqueue(c, q, job, b"typed by hand"))
first = jobs.claim(c, q, 50); time.sleep(0.2); print("reaped", jobs.reap(c, q))
second = jobs.claim(c, q, 60_000); print("tokens", first.token, second.token)
try:
    jobs.complete(c, q, job, first.token)
except StaleToken as exc:
    print("old token:", exc)
print("token", second.token, jobs.complete(c, q, job, second.token))
'''


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
        ".json": "application/json", ".whl": "application/zip",
    }

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    """``site/`` served on a free loopback port."""
    if not (SITE / "lab" / "index.html").is_file():
        why = "no site/ to serve: build it with `make site`"
        if backends_required():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    handler = functools.partial(_Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def refused() -> list[str]:
    """Every request to another origin, refused (filled by :func:`page02`)."""
    return []


@pytest.fixture(scope="module")
def console_errors() -> list[str]:
    """Every console error of the page opened by :func:`page02`."""
    return []


def open_page(
    browser: Browser, site_url: str, refused: list[str], errors: list[str], path: str = PAGE
) -> Page:
    """A fresh tab on page ``path`` (02 unless told) of the site, every other origin refused
    (and noted), its console errors and uncaught page errors noted in ``errors``."""
    context = browser.new_context(viewport=VIEWPORT)
    only_from(context, site_url, refused)
    page = context.new_page()
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.goto(f"{site_url}/lab/index.html?path={path}")
    return page


def wait_until_live(page: Page) -> None:
    """Wait, pressing nothing, until the cue says the panels are live (fail on an error)."""
    page.wait_for_selector(f"{CUE}:is([data-state='ready'], [data-state='error'])",
                           state="attached", timeout=RUN_MS)
    state = page.locator(CUE).get_attribute("data-state")
    assert state == "ready", f"the page's run stopped: {page.locator(CUE).inner_text()}"


@pytest.fixture(scope="module")
def page02(
    browser: Browser, site_url: str, refused: list[str], console_errors: list[str]
) -> Iterator[Page]:
    """Page 02 opened in the site, nothing pressed, until its panels are live."""
    page = open_page(browser, site_url, refused, console_errors)
    try:
        page.locator(CUE).wait_for(state="visible", timeout=10_000)  # from the first paint
        wait_until_live(page)
        yield page
    finally:
        page.context.close()


def test_page_02_runs_with_no_error_and_no_other_origin(page02: Page, refused: list[str]) -> None:
    assert page02.get_by_text("Error displaying widget").count() == 0
    assert page02.locator(".jupyter-widgets-error-widget").count() == 0
    assert page02.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']") \
        .filter(has_text="Traceback").count() == 0
    assert page02.locator(".jp-OutputArea-output").filter(has_text="Traceback").count() == 0
    assert page02.locator(".emq-two-workers").count() == 1, "the story panel is drawn live"
    assert refused == [], f"requests to other origins: {refused[:5]}"


def test_the_page_is_not_marked_modified_by_its_own_run(page02: Page) -> None:
    assert page02.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0
    assert page02.locator(".lm-TabBar-tab.jp-mod-current").count() >= 1


#: The pages axe holds to the rules (tests.support.axe.PAGES), as files.
AXE_PAGES = [file_of(slug) for slug in axe.PAGES]
#: What axe reads: the notebook, not JupyterLab's menus, sidebars and file browser around it.
NOTEBOOK = ".jp-NotebookPanel"
#: JupyterLab's own elements inside the notebook, each excused from one rule only.
JUPYTERLAB_OWN = (
    ("aria-input-field-name", ".jp-InputArea-editor .cm-content"),
    ("aria-required-children", ".jp-WindowedPanel-viewport"),
    ("button-name", ".jp-collapseHeadingButton"),
)


@pytest.mark.parametrize("path", AXE_PAGES)
def test_no_serious_or_critical_violation_on_the_site(
    path: str, request: pytest.FixtureRequest, browser: Browser, site_url: str
) -> None:
    """Pages 00-04 opened in the site, nothing pressed, run to their live panels: axe-core
    (WCAG 2 A and AA) finds no serious or critical violation in the notebook (page 02 is the
    module's :func:`page02`, not opened again).

    axe reads the notebook panel (``.jp-NotebookPanel``: the cells, their outputs, our widgets),
    not the document. On the whole document it also finds, outside the panel, one rule on
    JupyterLab's chrome: ``aria-allowed-attr`` (critical) on the file browser's toolbar buttons
    "Upload Files" and "Toggle File Filter" (``jp-button`` elements given ``aria-pressed``).
    Inside the panel, three rules on JupyterLab's own elements are excused there and only
    there (:data:`JUPYTERLAB_OWN`): ``aria-input-field-name`` (serious) on each code cell's
    editor (CodeMirror's ``.cm-content``, a ``role="textbox"`` with no name),
    ``aria-required-children`` (critical) on the cell list (``.jp-WindowedPanel-viewport``, a
    ``role="feed"`` whose cells are not ``article``s), and ``button-name`` (critical) on the
    collapse button beside a markdown heading (``.jp-collapseHeadingButton``, no text).
    Every other rule, and these rules on any other element, still fails the test.
    """
    why = axe.missing()
    if why is not None:
        if backends_required():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    if path == PAGE:
        page: Page = request.getfixturevalue("page02")
    else:
        page = open_page(browser, site_url, [], [], path=path)
    try:
        wait_until_live(page)
        found = axe.violations(page, within=NOTEBOOK, ignore=JUPYTERLAB_OWN)
        assert not found, f"{path}:\n{axe.said(found)}"
    finally:
        if path != PAGE:
            page.context.close()


def test_the_table_of_contents_lists_the_headings(page02: Page, console_errors: list[str]) -> None:
    page02.locator(".jp-SideBar .lm-TabBar-tab[data-id='table-of-contents']").click()
    toc = page02.locator(".jp-TableOfContents-content")
    toc.get_by_text("Two workers, one job").first.wait_for(timeout=UPDATE_MS)
    assert toc.get_by_text("The fencing check").count() >= 1
    assert not [e for e in console_errors if "table of contents" in e.lower()], console_errors


def test_a_typed_cell_meets_the_fence(page02: Page) -> None:
    """Enqueue, claim (short lease), reap, claim again, complete old then new token."""
    page02.locator(".jp-Notebook .jp-Cell").last.click()
    page02.keyboard.press("Escape")
    page02.keyboard.press("b")
    page02.keyboard.press("Enter")
    page02.keyboard.insert_text(TYPED)
    page02.keyboard.press("Shift+Enter")
    typed = page02.locator(".jp-CodeCell").filter(has_text="typed by hand").last
    output = typed.locator(".jp-OutputArea-output")
    output.filter(has_text="completed").first.wait_for(timeout=UPDATE_MS)
    text = output.all_inner_texts()
    joined = "\n".join(text)
    assert "reaped 1" in joined and "tokens 1 2" in joined, joined
    assert "old token: EMQSTALE: token 1 is stale" in joined, joined
    assert "token 2 completed" in joined, joined


def test_the_two_workers_story_clicks_to_emqstale(page02: Page) -> None:
    story = page02.locator(".emq-two-workers")
    story.scroll_into_view_if_needed()
    play(story, until="a_completes", timeout_ms=UPDATE_MS)
    refusal = story.locator(".emq-message.emq-refused").first
    refusal.wait_for(timeout=UPDATE_MS)
    assert "EMQSTALE" in refusal.inner_text()


def test_a_run_all_pressed_while_python_starts_is_the_pages_one_run(
    browser: Browser, site_url: str
) -> None:
    """Run ▸ Run All pressed as soon as the menu shows, long before Python answers: the page
    runs once, every cell numbered 1 to n in order (none dropped, none run twice)."""
    refused: list[str] = []
    page = open_page(browser, site_url, refused, [])
    try:
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=RUN_MS)
        if page.locator(CUE).get_attribute("data-state") not in ("loading", "starting"):
            pytest.skip("Python answered before the menu could be pressed")
        menu(page, "Run", "runmenu:run-all")
        wait_until_live(page)
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        numbers = [int(m[1]) for p in prompts if (m := re.search(r"\[(\d+)\]", p))]
        assert numbers == list(range(1, len(prompts) + 1)), prompts
        assert page.locator(".emq-two-workers").count() == 1
    finally:
        page.context.close()


def test_lab_05_runs_by_itself_and_draws_its_panels(browser: Browser, site_url: str) -> None:
    """Lab 05 (the simulation, its charts as SVG), opened and left alone: its run ends live,
    the simulation panel and the charts drawn, no widget error, no traceback, no uncaught page
    error, no request to any other origin."""
    refused: list[str] = []
    errors: list[str] = []
    page = open_page(browser, site_url, refused, errors, path=LAB_05)
    try:
        wait_until_live(page)
        assert page.get_by_text("Error displaying widget").count() == 0
        assert page.locator(".jupyter-widgets-error-widget").count() == 0
        assert page.locator(".jp-OutputArea-output").filter(has_text="Traceback").count() == 0
        assert page.locator(".emq-simulation").count() == 1, "the simulation panel is drawn"
        assert page.locator(".emq-timeline svg .emq-lease").count() >= 2, "the leases are drawn"
        assert page.locator(".emq-side-by-side").count() == 1, "fence on and off side by side"
        assert not [e for e in errors if e.startswith("uncaught")], errors
        assert refused == [], f"requests to other origins: {refused[:5]}"
    finally:
        page.context.close()


def test_the_landing_page_lists_the_pages_each_opening_to_run(
    site_url: str, browser: Browser
) -> None:
    """``index.html``: each page of the site with its title, opening in the mode that runs it."""
    from tools.course import load

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
