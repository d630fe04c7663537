"""The static site (``make site``) in headless Chromium, with every other origin refused.

``site/`` is served from loopback; page 02 is opened in JupyterLite and run top to bottom in
the tab's own Python (Pyodide), the protocol's scripts on fengari. Then: no widget error, no
traceback, no request to any other origin; a cell typed at the end (enqueue, claim with a short
lease, reap, claim again, complete with the old token, then the new) prints ``EMQSTALE`` for
the old token and accepts token 2; and the two-workers story, clicked step by step, ends at
``EMQSTALE``. The site must have been built first (``make site``; ``make test`` does).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.backends import backends_required
from tests.support.story import play
from tools.browser import VIEWPORT, cell_count, find_button, run_all

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
PAGE = "02-the-state-and-attempts.ipynb"
#: Pyodide's start, the wheels, then every cell: well under this on 2 busy cores.
RUN_MS = 300_000
UPDATE_MS = 60_000

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
def page02(browser: Browser, site_url: str, refused: list[str]) -> Iterator[Page]:
    """Page 02 opened in the site and run top to bottom, other origins refused."""
    context = browser.new_context(viewport=VIEWPORT)

    def only_ours(route: object) -> None:
        from playwright.sync_api import Route

        assert isinstance(route, Route)
        url = route.request.url
        if url.startswith((site_url + "/", "data:", "blob:")):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    context.route("**/*", only_ours)
    page = context.new_page()
    page.goto(f"{site_url}/lab/index.html?path={PAGE}")
    run_all(page, cell_count(ROOT / "notebooks" / PAGE), timeout_ms=RUN_MS)
    try:
        yield page
    finally:
        context.close()


def test_page_02_runs_with_no_error_and_no_other_origin(page02: Page, refused: list[str]) -> None:
    assert page02.get_by_text("Error displaying widget").count() == 0
    assert page02.locator(".jupyter-widgets-error-widget").count() == 0
    assert page02.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']") \
        .filter(has_text="Traceback").count() == 0
    assert page02.locator(".jp-OutputArea-output").filter(has_text="Traceback").count() == 0
    assert page02.locator(".emq-two-workers").count() == 1, "the story panel is drawn live"
    assert refused == [], f"requests to other origins: {refused[:5]}"


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
    find_button(story, "start again").click()
    play(story, until="a_completes", timeout_ms=UPDATE_MS)
    refusal = story.locator(".emq-message.emq-refused").first
    refusal.wait_for(timeout=UPDATE_MS)
    assert "EMQSTALE" in refusal.inner_text()
