"""The app mode, as a reader meets it: ``make app`` serves every page click-only.

``make app APP_ARGS="--port=N --no-browser"`` is started from the repository (the make target
itself, with Jupyter's folders in a temporary place), and headless Chromium opens the pages at
``/voila/render/<name>.ipynb``:

- every notebook renders with no code editor or input area, no widget failing to render, no
  traceback, and as many live widgets as the stored notebook has widget outputs, with every
  request to another origin refused and none made (the icons come from the app itself);
- on the centre page the two-worker story is clicked forward from wherever it stands (every
  enabled step button in turn, "start again" first if the story is over) until worker A's stale
  completion is refused with ``EMQSTALE``;
- the centre page's links to other pages stay inside the app, and following one renders it.

The browser is the module fixture ``browser`` of tests/conftest.py. Without a Chromium the tests
skip, saying why; with ``ECHOMQ_REQUIRE_BACKENDS=1`` they fail.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from echomq_lab.cluster.servers import free_port
from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tests.support.story import play
from tools.browser import VIEWPORT, find_button, stored_widgets
from tools.course import load as course_pages

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
NOTEBOOKS = [p.file for p in course_pages()]
CENTRE = "02-the-state-and-attempts.ipynb"
#: A page may take this long to render: Voilà runs the whole notebook first.
RENDER_MS = 180_000
UPDATE_MS = 30_000
#: Anything that would show code: an editor, or a code cell's input (markdown is rendered in one).
CODE = ".cm-editor, .CodeMirror, .jp-InputArea-editor, .jp-CodeCell .jp-InputArea"
LIVE_WIDGET = ".jupyter-widgets:not(:has(.jupyter-widgets-error-widget))"
TOP_WIDGET = f"{LIVE_WIDGET}:not(.jupyter-widgets .jupyter-widgets)"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of ``make app APP_ARGS="--port=N --no-browser"`` run from the repository."""
    tmp = tmp_path_factory.mktemp("app")
    env = {k: v for k, v in os.environ.items() if k not in ("ECHOMQ_REDIS_URL", "PYTHONPATH")}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(tmp / name.lower())
    port = free_port()
    log = tmp / "app.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "app", f"APP_ARGS=--port={port} --no-browser"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://localhost:{port}"
    try:
        end = time.monotonic() + 600  # make may first install the lab
        while True:
            if proc.poll() is not None:
                pytest.fail(f"make app exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/", timeout=2):
                    break
            except OSError:
                if time.monotonic() > end:
                    pytest.fail(f"make app did not answer on {url}:\n{log.read_text()[-3000:]}")
                time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


#: Requests to another origin, refused, by the page that made them.
OUTSIDE: dict[str, list[str]] = {}


def render(browser: Browser, app: str, name: str) -> Page:
    """A new tab on the app's page for ``name``, once Voilà has run it and the widgets are up;
    every request to another origin is refused and noted in :data:`OUTSIDE`."""
    page = browser.new_page(viewport=VIEWPORT)
    outside = OUTSIDE.setdefault(name, [])

    def only_the_app(route: Route) -> None:
        url = route.request.url
        if url.startswith((app + "/", "data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", only_the_app)
    page.goto(f"{app}/voila/render/{name}", timeout=RENDER_MS)
    want = stored_widgets(NOTEBOOKS_DIR / name)
    if want:
        page.wait_for_function(
            f"document.querySelectorAll('{TOP_WIDGET}').length >= {want}", timeout=RENDER_MS
        )
    page.wait_for_load_state("networkidle", timeout=RENDER_MS)
    return page


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


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_page_renders_click_only(
    name: str, app: str, browser: Browser, screenshots: Path
) -> None:
    page = render(browser, app, name)
    try:
        click_only(page, name)
        live, stored = page.locator(TOP_WIDGET).count(), stored_widgets(NOTEBOOKS_DIR / name)
        assert live == stored, f"{name}: {stored} widget outputs stored, {live} drawn live"
        page.screenshot(path=str(screenshots / f"app-{Path(name).stem}.png"), full_page=True)
    finally:
        page.close()


def test_the_two_worker_story_clicks_through_to_the_refusal(
    app: str, browser: Browser, screenshots: Path
) -> None:
    page = render(browser, app, CENTRE)
    try:
        story = page.locator(".emq-two-workers")
        expect(story).to_have_count(1)
        play(story, until="a_completes", timeout_ms=UPDATE_MS)
        refused = story.locator(".emq-message.emq-refused").first
        expect(refused).to_contain_text("EMQSTALE: token 1 is stale", timeout=UPDATE_MS)
        click_only(page, CENTRE)
        page.screenshot(path=str(screenshots / "app-02-story-refused.png"), full_page=True)
    finally:
        page.close()


def test_the_icons_come_from_the_app(app: str, browser: Browser) -> None:
    """The buttons' icon font (Font Awesome, in Voilà's bundle) loads from the app itself."""
    page = render(browser, app, CENTRE)
    try:
        icons = page.locator(".widget-button i.fa")
        expect(icons.first).to_be_attached()
        loaded = page.evaluate(
            "async () => (await document.fonts.load('900 16px \"Font Awesome 5 Free\"')).length"
        )
        assert loaded >= 1, "the icon font did not load"
        click_only(page, CENTRE)
    finally:
        page.close()


def test_links_between_pages_stay_in_the_app(app: str, browser: Browser) -> None:
    page = render(browser, app, CENTRE)
    try:
        links = page.locator("a[href$='.ipynb']")
        hrefs = [links.nth(i).evaluate("a => a.href") for i in range(links.count())]
        assert hrefs, "page 02 links to no other page"
        for href in hrefs:
            target = href.rsplit("/", 1)[-1]
            assert href == f"{app}/voila/render/{target}", href
            assert (NOTEBOOKS_DIR / target).exists(), f"{href} names no notebook"
        nxt = page.locator("a[href$='03-the-payload.ipynb']").first
        nxt.click()
        page.wait_for_url(f"{app}/voila/render/03-the-payload.ipynb", timeout=RENDER_MS)
        page.wait_for_function(
            f"document.querySelectorAll('{TOP_WIDGET}').length >= 1", timeout=RENDER_MS
        )
        click_only(page, "03-the-payload.ipynb")
    finally:
        page.close()


# -- the centre page's story, as a reader plays it ---------------------------------------------
# After A claims, A's lease drains on screen and runs out with no further click: the front-end
# clock (an ipywidgets Play, no kernel thread) redraws the lanes and takes the stall once the
# server's clock has passed A's deadline. B's claim stays off the page until the reader picks a
# token; the fence switch restarts the story with the unfenced demonstration named on screen.

#: A's lease on the page is 4 s; the clock ticks every 250 ms.
LEASE_OUT_MS = 30_000


def test_in_the_app_as_lease_runs_out_with_no_further_click(
    app: str, browser: Browser, screenshots: Path
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
