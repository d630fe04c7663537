"""The app mode, as a reader meets it: pages click-only, their widgets live.

``make app APP_ARGS="--port=N --no-browser"`` is started from the repository (the make target
itself, with Jupyter's folders in a temporary place) and must answer. The pages the app runs
live (:mod:`tests.support.front_ends`: the two-workers lab; the others run on the site or in
JupyterLab) are rendered by the same command, ``python -m echomq_lab.widgets.app``, run from the
session's Binder-like install (:mod:`tests.support.binder`) on the session's real Valkey.
Headless Chromium opens each page at ``/voila/render/<name>.ipynb`` once (the module fixture
``rendered``): Voilà runs the page once, and every test below reads and clicks that one tab. The
tests run in file order, so those that need a page as it was rendered come before those that
press it:

- each page renders with no code editor or input area, no widget failing to render, no
  traceback, and as many live widgets as the stored notebook has widget outputs, with every
  request to another origin refused and none made (the icons come from the app itself);
- no serious or critical accessibility violation that axe-core finds (WCAG 2 A and AA rules;
  axe-core is the npm package pinned in tools/axe/package.json, installed into
  tools/axe/node_modules by ``npm ci --prefix tools/axe``); a first check runs axe on a page
  with a known fault, so the test is seen to catch one;
- the two-worker story is played by keyboard alone (Tab to each step's button or answer, Enter
  to press it, with the live clock's pause and resume between) and clicked from its start
  until worker A's stale completion is refused with ``EMQSTALE``; then A's lease runs out on
  screen with no further click, B's claim waits for a prediction, and the fence switch restarts
  the story with the unfenced demonstration named on screen;
- last, the page's links to other pages stay inside the app, each naming the address the app
  renders that page at, and a click on one goes there; the list of pages asks nothing of
  another origin; a reader follows the pages' own links 00 → 01 → 02 → 03 → 00, each page
  rendered live (03's checks answer a press) and the hub then counting what was answered
  (these renders are what is tested, not new runs of the notebooks, and are not counted as
  such); and the pages' EVALSHA calls reached the Valkey.

The browser is the module fixture ``browser`` of tests/conftest.py. Without a Chromium, Valkey
or axe-core the tests skip, saying why; with ``ECHOMQ_REQUIRE_BACKENDS=1`` they fail.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from playwright.sync_api import Browser, Locator, Page, expect

from echomq_lab.measure import commandstats
from echomq_lab.servers import free_port
from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tests.support import axe, binder, front_ends
from tests.support.story import play
from tools.browser import (
    VIEWPORT,
    find_button,
    jupyter_env,
    only_from,
    serving,
    stored_widgets,
)
from tools.course import file_of

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
#: The pages the app runs live (:mod:`tests.support.front_ends`): the two-workers lab.
NOTEBOOKS = front_ends.files("app")
STORY = file_of("lab-two-workers-one-job")
#: The app's pages axe holds to the rules (the others are held on the site).
AXE_PAGES = [f for f in NOTEBOOKS if f in {file_of(slug) for slug in axe.PAGES}]
#: A page may take this long to render: Voilà runs the whole notebook first.
RENDER_MS = 180_000
UPDATE_MS = 30_000
#: Anything that would show code: an editor, or a code cell's input (markdown is rendered in one).
CODE = ".cm-editor, .CodeMirror, .jp-InputArea-editor, .jp-CodeCell .jp-InputArea"
LIVE_WIDGET = ".jupyter-widgets:not(:has(.jupyter-widgets-error-widget))"
TOP_WIDGET = f"{LIVE_WIDGET}:not(.jupyter-widgets .jupyter-widgets)"


def test_make_app_starts_and_answers(tmp_path: Path) -> None:
    """``make app APP_ARGS="--port=N --no-browser"``, run from the repository, answers on its
    port (the pages it renders are rendered below by the same command from the Binder-like
    install)."""
    env = jupyter_env(tmp_path)
    port = free_port()
    argv = ["make", "--no-print-directory", "app", f"APP_ARGS=--port={port} --no-browser"]
    with serving(argv, ROOT, env, port, tmp_path / "make-app.log") as url:
        with urllib.request.urlopen(url + "/", timeout=30) as answer:
            assert answer.status == 200


@pytest.fixture(scope="module")
def app(binder_install: binder.Install, valkey_url: str,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of the app (``make app``'s command, ``python -m echomq_lab.widgets.app``)
    run from the Binder-like install on the session's Valkey, from ``notebooks/`` (so the
    repository's package is not on the path: the install's is used)."""
    redis.Redis.from_url(valkey_url).config_resetstat()
    port = free_port()
    argv = [binder_install.python, "-m", "echomq_lab.widgets.app", f"--port={port}",
            "--no-browser", "."]
    env = {**binder_install.env, "ECHOMQ_REDIS_URL": valkey_url}
    log = tmp_path_factory.mktemp("app") / "app.log"
    with serving(argv, NOTEBOOKS_DIR, env, port, log) as url:
        yield url


#: Requests to another origin, refused, by the page that made them.
OUTSIDE: dict[str, list[str]] = {}


def render(browser: Browser, app: str, name: str) -> Page:
    """A new tab on the app's page for ``name``, once Voilà has run it and the widgets are up;
    every request to another origin is refused and noted in :data:`OUTSIDE`."""
    page = browser.new_page(viewport=VIEWPORT)
    only_from(page, app, OUTSIDE.setdefault(name, []))
    page.goto(f"{app}/voila/render/{name}", timeout=RENDER_MS)
    widgets_up(page, name)
    page.wait_for_load_state("networkidle", timeout=RENDER_MS)
    return page


def widgets_up(page: Page, name: str) -> None:
    """Wait until ``page`` draws as many live widgets as page ``name`` has widget outputs."""
    want = stored_widgets(NOTEBOOKS_DIR / name)
    if want:
        page.wait_for_function(
            f"document.querySelectorAll('{TOP_WIDGET}').length >= {want}", timeout=RENDER_MS
        )


def click_only(page: Page, name: str) -> None:
    """No code on show, no widget drawn as an error, no traceback, nothing asked of another
    origin."""
    assert OUTSIDE.get(name, []) == [], f"{name} asked other origins: {OUTSIDE[name][:3]}"
    code = page.locator(CODE)
    visible = sum(code.nth(i).is_visible() for i in range(code.count()))
    assert visible == 0, f"{name}: {visible} code editors or input areas visible"
    assert page.get_by_text("Error displaying widget").count() == 0, name
    assert page.locator(".jupyter-widgets-error-widget").count() == 0, name
    assert page.locator(".jp-OutputArea-output[data-mime-type*='stderr']").count() == 0, name
    assert page.get_by_text("Traceback (most recent call last)").count() == 0, name


@pytest.fixture(scope="module")
def rendered(app: str, browser: Browser) -> Iterator[Callable[[str], Page]]:
    """``rendered(name)``: the one tab where the app rendered page ``name`` (opened on first
    use; later calls get the same tab, as the earlier tests left it). A render that failed fails
    every later call for that page too."""
    pages: dict[str, Page] = {}
    failed: dict[str, str] = {}

    def open_once(name: str) -> Page:
        if name in failed:
            pytest.fail(f"{name} did not render in the app: {failed[name]}", pytrace=False)
        if name not in pages:
            front_ends.ran_once(name)
            try:
                pages[name] = render(browser, app, name)
            except Exception as exc:
                failed[name] = type(exc).__name__
                raise
        return pages[name]

    yield open_once
    for page in pages.values():
        page.close()


def story_from_the_start(page: Page) -> Locator:
    """The page's one two-worker story, brought back to its first step."""
    story = page.locator(".emq-two-workers")
    expect(story).to_have_count(1)
    from_the_start(story)
    return story


def from_the_start(story: Locator) -> None:
    """Bring the two-worker story back to its first step ("start again" if it has moved on)."""
    first = find_button(story, BUTTON_LABELS["a_claims"])
    if first.count() == 0 or not first.is_enabled():
        find_button(story, "start again").click()
    expect(first, "the story is at its first step").to_be_enabled(timeout=UPDATE_MS)


# -- every page, as rendered -------------------------------------------------------------------


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_page_renders_click_only(
    name: str, rendered: Callable[[str], Page], screenshots: Path
) -> None:
    page = rendered(name)
    click_only(page, name)
    live, stored = page.locator(TOP_WIDGET).count(), stored_widgets(NOTEBOOKS_DIR / name)
    assert live == stored, f"{name}: {stored} widget outputs stored, {live} drawn live"
    page.screenshot(path=str(screenshots / f"app-{Path(name).stem}.png"), full_page=True)


def test_the_icons_come_from_the_app(rendered: Callable[[str], Page]) -> None:
    """The buttons' icon font (Font Awesome, in Voilà's bundle) loads from the app itself."""
    page = rendered(STORY)
    icons = page.locator(".widget-button i.fa")
    expect(icons.first).to_be_attached()
    loaded = page.evaluate(
        "async () => (await document.fonts.load('900 16px \"Font Awesome 5 Free\"')).length"
    )
    assert loaded >= 1, "the icon font did not load"
    click_only(page, STORY)


# -- accessibility: axe-core on pages 00-04, as rendered ---------------------------------------

def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe's blocking violations on ``page``'s whole document, or a skip (a failure under
    ECHOMQ_REQUIRE_BACKENDS=1) saying why axe-core cannot run."""
    axe.require()
    return axe.violations(page)


def test_axe_catches_a_button_with_no_name(browser: Browser) -> None:
    page = browser.new_page()
    try:
        page.set_content('<html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
                         '<button><i class="icon"></i></button></main></body></html>')
        assert [v["id"] for v in axe_violations(page)] == ["button-name"]
    finally:
        page.close()


@pytest.mark.parametrize("name", AXE_PAGES)
def test_no_serious_or_critical_violation_in_the_app(
    name: str, rendered: Callable[[str], Page]
) -> None:
    page = rendered(name)
    found = axe_violations(page)
    assert not found, f"{name}:\n{axe.said(found)}"


# -- the two-workers lab's story, as a reader plays it ---------------------------------------------
# After A claims, A's lease drains on screen and runs out with no further click: the front-end
# clock (an ipywidgets Play, no kernel thread) redraws the lanes and takes the stall once the
# server's clock has passed A's deadline. B's claim stays off the page until the reader picks a
# token; the fence switch restarts the story with the unfenced demonstration named on screen.

#: A's lease on the page is 4 s; the clock ticks every 250 ms.
LEASE_OUT_MS = 30_000


#: The most Tab presses from one control to the next the keyboard test allows.
TABS = 250
ACTIVE_TEXT = "() => (document.activeElement && document.activeElement.textContent || '').trim()"


def tab_to(page: Page, label: str, key: str = "Tab") -> None:
    """Press ``key`` (Tab, or Shift+Tab to go back) until the focused control reads ``label``,
    waiting first for the story's control of that name to be enabled; no press when the focus
    is on it already (a press moves the focus to the control that comes next)."""
    expect(find_button(page.locator(".emq-two-workers"), label)).to_be_enabled(timeout=UPDATE_MS)
    if page.evaluate(ACTIVE_TEXT) == label:
        return
    for _ in range(TABS):
        page.keyboard.press(key)
        if page.evaluate(ACTIVE_TEXT) == label:
            return
    pytest.fail(f"{TABS} presses of {key} never reached {label!r}")


@pytest.mark.parametrize("name", AXE_PAGES)
def test_after_a_press_the_focus_stays_and_the_verdict_is_announced(
    name: str, rendered: Callable[[str], Page]
) -> None:
    """The page's first panel button pressed from the keyboard keeps the focus on its panel,
    its verdict shows in a live region, the focus ring reads at 3:1, and axe-core then finds
    no serious or critical violation."""
    page = rendered(name)
    read = axe.press_first(page)
    print(f"\n{name}: pressed {read['pressed']!r}; focus on {read['focused']!r}; verdict "
          f"({read['live']}): {read['verdict'][:80]!r}; ring {read['ring']}")
    assert not axe.press_problems(read), f"{name}: {axe.press_problems(read)}"
    found = axe_violations(page)
    assert not found, f"{name} after a press:\n{axe.said(found)}"


def test_the_story_plays_by_keyboard_alone(rendered: Callable[[str], Page]) -> None:
    page = rendered(STORY)
    story = page.locator(".emq-two-workers")
    first = find_button(story, BUTTON_LABELS["a_claims"])
    expect(first, "the story waits at its first step, as rendered").to_be_enabled()
    tab_to(page, "A claims")
    page.keyboard.press("Enter")
    tab_to(page, "pause the clock", "Shift+Tab")  # the clock sits above the steps
    page.keyboard.press("Enter")
    expect(story.locator(".emq-ticker")).to_contain_text("live clock: paused",
                                                         timeout=UPDATE_MS)
    page.keyboard.press("Enter")  # the same button now resumes the clock
    expect(story.locator(".emq-ticker")).to_contain_text("live clock: running",
                                                         timeout=UPDATE_MS)
    for label in ("run the reaper", "2", "refused with EMQSTALE"):  # a pick takes the step
        tab_to(page, label)
        page.keyboard.press("Enter")
    expect(story.locator(".emq-message.emq-ok").first).to_contain_text(
        "EMQSTALE: token 1 is stale", timeout=UPDATE_MS)
    expect(story.locator("svg.emq-fence")).to_have_count(1)


def test_the_two_worker_story_clicks_through_to_the_refusal(
    rendered: Callable[[str], Page], screenshots: Path
) -> None:
    page = rendered(STORY)
    story = story_from_the_start(page)
    play(story, until="a_completes", timeout_ms=UPDATE_MS)
    refused = story.locator(".emq-message.emq-ok").first  # the right pick, said beside it
    expect(refused).to_contain_text("EMQSTALE: token 1 is stale", timeout=UPDATE_MS)
    click_only(page, STORY)
    page.screenshot(path=str(screenshots / "app-04-story-refused.png"), full_page=True)


def test_in_the_app_as_lease_runs_out_with_no_further_click(
    rendered: Callable[[str], Page], screenshots: Path
) -> None:
    page = rendered(STORY)
    story = story_from_the_start(page)
    expect(find_button(story, BUTTON_LABELS["reaper_returns"])).to_have_count(0)
    find_button(story, BUTTON_LABELS["a_claims"]).click()
    expect(story.locator(".emq-lease-bar")).to_have_count(1, timeout=LEASE_OUT_MS)
    expect(story).to_contain_text("left", timeout=LEASE_OUT_MS)
    expect(story).to_contain_text("lease ran out", timeout=LEASE_OUT_MS)
    expect(story).to_contain_text("a lease that ran out", timeout=LEASE_OUT_MS)
    reaper = find_button(story, BUTTON_LABELS["reaper_returns"])
    expect(reaper).to_be_enabled(timeout=LEASE_OUT_MS)
    page.screenshot(path=str(screenshots / "app-04-lease-ran-out.png"))
    reaper.click()
    expect(story).to_contain_text("Which token does B get?", timeout=LEASE_OUT_MS)
    expect(find_button(story, BUTTON_LABELS["b_claims"])).to_have_count(0)
    find_button(story, "2").click()  # the pick takes B's claim
    expect(story).to_contain_text("Right: B holds token 2", timeout=LEASE_OUT_MS)
    find_button(story, "fence off (demonstration)").click()
    expect(story).to_contain_text("unfenced complete (a demonstration, not the protocol)",
                                  timeout=LEASE_OUT_MS)
    expect(find_button(story, BUTTON_LABELS["a_claims"])).to_be_enabled(timeout=LEASE_OUT_MS)


# -- the reader's place and "Start over" (reloads of the story's page) -------------------------

#: How the app's page script (echomq_lab/widgets/app_page.js) finds the reader's place.
PLACE_JS = """() => {
  const scroller = document.querySelector('#rendered_cells');
  const cells = [...scroller.querySelectorAll('.jp-Cell')];
  const top = scroller.getBoundingClientRect().top;
  const index = cells.findIndex((c) => c.getBoundingClientRect().bottom > top + 1);
  return {scrollTop: scroller.scrollTop, index, cells: cells.length};
}"""


def _ready(page: Page) -> None:
    """The page's panels are up and its script has given back what was kept (it waits for
    the page to hold still for two seconds first)."""
    widgets_up(page, STORY)
    page.wait_for_timeout(4_000)


def test_a_reload_keeps_the_place_and_start_over_forgets_it(app: str, browser: Browser) -> None:
    """The reader scrolls the story's page down and reloads it: it opens where they were. An
    answer kept for the page and that place are both forgotten by "Start over" (a button,
    reached by Tab), which opens the page again at its top. (The reloads are what is tested
    here, not new runs of the notebook, and are not counted as such.)"""
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(f"{app}/voila/render/{STORY}", timeout=RENDER_MS)
        _ready(page)
        path = page.evaluate("location.pathname")
        page.evaluate("""() => {
          const scroller = document.querySelector('#rendered_cells');
          const cell = scroller.querySelectorAll('.jp-Cell')[8];
          scroller.scrollTop += cell.getBoundingClientRect().top
            - scroller.getBoundingClientRect().top;
          scroller.dispatchEvent(new Event('scroll'));
        }""")
        page.wait_for_timeout(1_000)
        before = page.evaluate(PLACE_JS)
        assert before["index"] == 8 and before["scrollTop"] > 0, before
        kept = page.evaluate(f"localStorage.getItem('emq-place:{path}')")
        assert kept and json.loads(kept)["index"] == 8, kept

        page.reload(timeout=RENDER_MS)
        _ready(page)
        after = page.evaluate(PLACE_JS)
        assert after["index"] == 8, f"after a reload the view is at cell {after}, not 8"

        page.evaluate(f"localStorage.setItem('emq-answers:{path}', '{{\"q\": \"a\"}}')")
        start_over = page.get_by_role("button", name="Start over", exact=True)
        expect(start_over).to_have_count(1)
        assert start_over.evaluate("b => b.tagName") == "BUTTON"
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.locator("#rendered_cells").evaluate("s => { s.scrollTop = 0; }")
        for _ in range(6):  # past the bar's links to the pages
            page.keyboard.press("Tab")
            if start_over.evaluate("b => b === document.activeElement"):
                break
        expect(start_over).to_be_focused()
        with page.expect_navigation(timeout=RENDER_MS):
            page.keyboard.press("Enter")
        _ready(page)
        assert page.evaluate(f"localStorage.getItem('emq-answers:{path}')") is None
        again = page.evaluate(PLACE_JS)
        assert again["scrollTop"] == 0 and again["index"] == 0, again
    finally:
        page.close()


# -- last: the page's links, followed from its tab -------------------------------------


def test_links_between_pages_stay_in_the_app(app: str, rendered: Callable[[str], Page]) -> None:
    """Every link names the address the app renders its page at; a click on one goes there.
    (The page clicked to is answered by a stand-in here: it is not run a second time.)"""
    page = rendered(STORY)
    links = page.locator("a[href$='.ipynb']")
    hrefs = [links.nth(i).evaluate("a => a.href") for i in range(links.count())]
    assert hrefs, f"{STORY} links to no other page"
    for href in hrefs:
        target = href.rsplit("/", 1)[-1]
        assert href == f"{app}/voila/render/{target}", href
        assert (NOTEBOOKS_DIR / target).exists(), f"{href} names no notebook"
    following = hrefs[0]
    page.route(following, lambda route: route.fulfill(
        status=200, content_type="text/html", body="<title>next</title>"))
    links.first.click()
    page.wait_for_url(following, timeout=UPDATE_MS)


def test_the_list_of_pages_asks_nothing_of_another_origin(app: str, browser: Browser) -> None:
    """The app's list of pages (``/``) loads with every other origin refused, asks none, and
    links every page of the module."""
    refused: list[str] = []
    page = browser.new_page(viewport=VIEWPORT)
    try:
        only_from(page, app, refused)
        page.goto(f"{app}/", timeout=RENDER_MS)
        page.wait_for_load_state("networkidle", timeout=RENDER_MS)
        assert refused == [], refused[:3]
        assert "cdn." not in page.content()
        listed = page.locator("a[href*='.ipynb']").evaluate_all(
            "links => links.map((a) => new URL(a.href).pathname.split('/').pop())")
        assert set(front_ends.files("site", "app", "room", "lab")) <= set(listed), listed
    finally:
        page.close()


#: The pages followed by their links, in the app.
WALK = [file_of(slug) for slug in
        ("the-record-hash", "the-hash-and-its-fields", "the-state-and-attempts", "the-payload")]


def _next_link(page: Page) -> Locator:
    """The link on the page's navigation line "Next:"."""
    return page.locator("#rendered_cells li", has=page.locator("strong:text-is('Next:')")) \
        .locator("a")


def test_following_the_links_leads_from_page_to_live_page(app: str, browser: Browser,
                                                          screenshots: Path) -> None:
    """From the hub, each page's "Next" link opens the next page in the app, rendered live:
    00 → 01 → 02 → 03; on 03 a check answers a press; the bar's hub link leads back to 00,
    whose row for 03 counts the answered check, and whose summary names no choice. Nothing is
    asked of another origin on the way."""
    refused: list[str] = []
    page = browser.new_page(viewport=VIEWPORT)
    try:
        only_from(page, app, refused)
        page.goto(f"{app}/voila/render/{WALK[0]}", timeout=RENDER_MS)
        for name in WALK[1:]:
            widgets_up(page, page.url.rsplit("/", 1)[-1])
            _next_link(page).click()
            page.wait_for_url(f"{app}/voila/render/{name}", timeout=RENDER_MS)
        widgets_up(page, WALK[-1])
        check = page.locator(".emq-selfcheck").first
        choice = check.locator("button").first
        picked = choice.inner_text().strip()
        choice.click()
        expect(check.locator(".widget-html").last).to_contain_text(re.compile("[✓✗]"),
                                                                     timeout=UPDATE_MS)
        page.wait_for_timeout(500)  # the verdict noted
        bar = page.locator(".emq-app-pages")
        expect(bar.locator("a")).to_have_count(3)
        bar.locator("a", has_text="hub").click()
        page.wait_for_url(f"{app}/voila/render/{WALK[0]}", timeout=RENDER_MS)
        widgets_up(page, WALK[0])
        row = page.locator("#rendered_cells tr", has=page.locator(f"a[href$='{WALK[-1]}']"))
        expect(row).to_contain_text(re.compile(r"1 of \d+ checks answered"), timeout=UPDATE_MS)
        summary = page.locator(".emq-summary")
        expect(summary).to_contain_text("Pages opened: 4 of")
        assert picked not in summary.inner_text()
        summary.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "app-walk-hub-progress.png"))
        assert refused == [], refused[:3]
    finally:
        page.close()


def test_the_apps_pages_ran_their_scripts_on_valkey(valkey_url: str) -> None:
    """The app's pages ran on the session's Valkey, through the install's package: the EVALSHA
    calls reached that server (its counters were reset when the app started)."""
    stats = commandstats(redis.Redis.from_url(valkey_url))
    calls = stats["evalsha"].calls if "evalsha" in stats else 0
    assert calls > 0, "no EVALSHA reached Valkey from the app's pages"
