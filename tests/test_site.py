"""The static site (``make site``): its landing page, in headless Chromium.

The pages themselves are run on the site by tests/test_jupyterlab.py (each opened and left to
run by itself, once: :mod:`tests.support.front_ends`). Here, ``index.html`` lists every page
the site carries, each with its title, each link opening the page in the mode that runs it.
The site must have been built first (``make site``; ``make test`` does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.support.site import SITE
from tools.browser import VIEWPORT
from tools.course import load

if TYPE_CHECKING:
    from playwright.sync_api import Browser

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
