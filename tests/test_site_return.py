"""Coming back to the site: a reload does not compile Python's runtime again.

The browser keeps the machine code it compiled from ``pyodide.asm.wasm`` beside the copy the
site's service worker answered from its cache (tools/site/offline.js; on a first visit the
service worker is put in place before the kernel's worker starts, tools/site/autorun.js). What
the browser did is read from its own trace: ``v8.wasm.compiledModule`` (naming the file) and
``v8.wasm.cachedModule`` when it kept code it compiled, ``v8.wasm.moduleCacheHit`` when it
took kept code instead of compiling the module. The first open, in a fresh context, must
compile and keep (so the trace can tell the two apart); the reload in the same tab must take
the kept code; both run the page to its live panels, asking nothing of any other origin.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from tests.support import site
from tools.browser import VIEWPORT, only_from

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

PAGE = "02-the-state-and-attempts.ipynb"
RUNTIME = "pyodide.asm.wasm"
#: How a panel's error line begins (echomq_lab.widgets.look).
FAILED = "something went wrong in the lab"
#: The trace's categories that carry the browser's WebAssembly compile and cache events.
CATEGORIES = "devtools.timeline,disabled-by-default-devtools.timeline,v8.wasm"


@contextmanager
def traced(page: Page) -> Iterator[list[dict[str, Any]]]:
    """The browser's trace events while the block runs (the list is filled when it ends)."""
    cdp = page.context.new_cdp_session(page)
    events: list[dict[str, Any]] = []
    done: list[bool] = []
    cdp.on("Tracing.dataCollected", lambda params: events.extend(params["value"]))
    cdp.on("Tracing.tracingComplete", lambda params: done.append(True))
    cdp.send("Tracing.start", {"categories": CATEGORIES, "transferMode": "ReportEvents"})
    try:
        yield events
    finally:
        cdp.send("Tracing.end")
        end = time.monotonic() + 60
        while not done and time.monotonic() < end:
            page.wait_for_timeout(100)
        cdp.detach()


def runtime_events(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The events called ``name`` that concern Python's runtime (their ``url`` argument)."""
    return [e for e in events if e.get("name") == name
            and str(e.get("args", {}).get("url", "")).endswith(RUNTIME)]


def _open(page: Page, act: Callable[[], Any]) -> list[dict[str, Any]]:
    """The trace of ``act`` (an open or a reload) until the page is live; every panel then
    drawn without an error line."""
    with traced(page) as events:
        act()
        site.wait_until_live(page)
    failed = page.get_by_text(FAILED).all_inner_texts()
    assert not failed, f"a panel failed on the site: {failed}"
    return events


def test_a_reload_takes_the_compiled_runtime_and_compiles_nothing(
    site_url: str, browser: Browser
) -> None:
    refused: list[str] = []
    context = browser.new_context(viewport=VIEWPORT)
    only_from(context, site_url, refused)
    page = context.new_page()
    try:
        url = f"{site_url}/lab/index.html?path={PAGE}"
        first = _open(page, lambda: page.goto(url))
        assert not runtime_events(first, "v8.wasm.moduleCacheHit"), (
            "a first open in a fresh context found compiled code: the trace cannot tell")
        assert runtime_events(first, "v8.wasm.compiledModule") and [
            e for e in first if e.get("name") == "v8.wasm.cachedModule"], (
            "the first open kept none of the runtime's compiled code")
        again = _open(page, page.reload)
        assert runtime_events(again, "v8.wasm.moduleCacheHit"), (
            "the reload compiled Python's runtime again instead of taking the kept code")
        assert not runtime_events(again, "v8.wasm.moduleCacheInvalid"), (
            "the kept code was refused as stale")
        assert not refused, f"asked of other origins: {refused}"
    finally:
        context.close()
