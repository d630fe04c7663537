"""The static site (``make site``) in headless Chromium: a page opened in it (the site served
from loopback by ``tools.browser.serve_folder``) with every other origin refused, and left to
run by itself until the cue says it is live.

Importing this module starts nothing; the browser is given by the caller.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tools.browser import VIEWPORT, menu, only_from

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "site"
#: Pyodide's start, the wheels, then every cell: well under this on 2 busy cores.
RUN_MS = 300_000
#: The window the reader's view is held to: "A claims" on 02 in the first screen.
READER_VIEWPORT: ViewportSize = {"width": 1200, "height": 800}
#: The cue the page shows until its panels are live (tools/site/cue.html).
CUE = "#emq-cue"
#: The page whose Run All is pressed as soon as the menu shows, before the page's own run ends:
#: that press must be the page's one run (tests/test_jupyterlab.py checks its prompts).
PRESSED_EARLY = "01-the-hash-and-its-fields.ipynb"


#: Set by ``make test``, which builds the site beside the tests: the path its build's stamp
#: gets, plus ``.ok`` once built, ``.failed`` if the build failed.
BUILD_ENV = "ECHOMQ_SITE_BUILD"
#: How long a test needing the site waits for that build (a fresh build: minutes).
BUILD_WAIT_S = 1800


def built() -> bool:
    """Whether ``site/`` has been built."""
    return (SITE / "lab" / "index.html").is_file()


def wait_for_build() -> str | None:
    """Once the site can be served, None; else why not. When ``make test`` builds the site
    beside the tests (:data:`BUILD_ENV`), first wait for that build to end."""
    stem = os.environ.get(BUILD_ENV)
    if stem:
        ok, failed = Path(stem + ".ok"), Path(stem + ".failed")
        deadline = time.monotonic() + BUILD_WAIT_S
        while not (ok.exists() or failed.exists()):
            if time.monotonic() > deadline:
                return f"the site's build beside the tests did not end in {BUILD_WAIT_S} s"
            time.sleep(1)
        if failed.exists():
            return "the site's build beside the tests failed (make site: see make test's output)"
    if not built():
        return "no site/ to serve: build it with `make site`"
    return None


@dataclass
class Opened:
    """What a site tab met: requests to other origins (refused), console errors and uncaught
    page errors, and (for :data:`PRESSED_EARLY`) the cue's state when Run All was pressed."""

    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pressed_while: str = ""


def open_page(browser: Browser, site_url: str, name: str, seen: Opened,
              viewport: ViewportSize = VIEWPORT) -> Page:
    """A fresh tab on page ``name`` of the site, every other origin refused (noted in
    ``seen``), its console errors and uncaught page errors noted in ``seen``."""
    context = browser.new_context(viewport=viewport)
    only_from(context, site_url, seen.refused)
    page = context.new_page()
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: seen.errors.append(f"uncaught: {exc}"))
    page.goto(f"{site_url}/lab/index.html?path={name}")
    return page


def wait_until_live(page: Page) -> None:
    """Wait, pressing nothing, until the cue says the panels are live (fail on an error)."""
    page.wait_for_selector(f"{CUE}:is([data-state='ready'], [data-state='error'])",
                           state="attached", timeout=RUN_MS)
    state = page.locator(CUE).get_attribute("data-state")
    assert state == "ready", f"the page's run stopped: {page.locator(CUE).inner_text()}"


def run_by_itself(browser: Browser, site_url: str, name: str, seen: Opened) -> Page:
    """Page ``name`` opened on the site and run by itself to its live panels; for
    :data:`PRESSED_EARLY`, Run ▸ Run All is pressed as soon as the menu shows."""
    page = open_page(browser, site_url, name, seen)
    page.locator(CUE).wait_for(state="visible", timeout=10_000)  # from the first paint
    if name == PRESSED_EARLY:
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=RUN_MS)
        seen.pressed_while = page.locator(CUE).get_attribute("data-state") or ""
        menu(page, "Run", "runmenu:run-all")
    wait_until_live(page)
    return page
