"""axe-core run in a page open in headless Chromium: its WCAG 2 A/AA violations of a blocking
impact (serious or critical).

axe-core is the npm package pinned in tools/axe/package.json, installed into
tools/axe/node_modules by ``npm ci --prefix tools/axe``. Importing this module starts nothing
and imports no browser driver; the page is given by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.backends import backends_required

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
#: The pages axe holds to the rules, by slug: the module's hub, its three dives, the first lab.
PAGES = ("the-record-hash", "the-hash-and-its-fields", "the-state-and-attempts", "the-payload",
         "lab-two-workers-one-job")
#: The impacts that fail a test.
BLOCKING = ("serious", "critical")
#: axe on ``within`` (a CSS selector, every element it matches) or, given null, the document;
#: a node matching the selector paired with its rule in ``ignore`` is not counted for that rule.
RUN_AXE = """async ([within, ignore]) => {
    const result = await axe.run(within === null ? document : within,
                                 {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']},
                                  elementRef: true});
    const ignored = (id, node) => ignore.some(([rule, sel]) => rule === id
                                              && node.element && node.element.matches(sel));
    return result.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.filter(n => !ignored(v.id, n))
                      .map(n => n.target.join(' ') + ' ' + n.html.slice(0, 120))}))
        .filter(v => v.nodes.length > 0);
}"""


def missing() -> str | None:
    """Why axe-core cannot run here (not installed), or None when it can."""
    if AXE.exists():
        return None
    return f"axe-core is not installed in {AXE.parent.parent}: run npm ci --prefix tools/axe"


def require() -> None:
    """Skip the calling test, saying why, when axe-core cannot run here; fail it instead where
    every backend is required (ECHOMQ_REQUIRE_BACKENDS=1, as in CI)."""
    why = missing()
    if why is not None:
        if backends_required():
            pytest.fail(why, pytrace=False)
        pytest.skip(why)


def violations(
    page: Page, within: str | None = None, ignore: Sequence[tuple[str, str]] = ()
) -> list[dict[str, Any]]:
    """axe's WCAG 2 A/AA violations of a blocking impact on ``page``: on the whole document, or
    only inside the elements matched by the CSS selector ``within``; an element matching the
    selector of an ``ignore`` pair (rule id, CSS selector) is not counted for that rule only.
    Each is a dict with the rule's ``id``, ``impact``, ``help`` and ``nodes`` (each its selector
    and a head of its HTML); a rule left with no node is not listed."""
    if page.evaluate("() => typeof window.axe === 'undefined'"):
        page.add_script_tag(content=AXE.read_text())
    found: list[dict[str, Any]] = page.evaluate(RUN_AXE, [within, [list(p) for p in ignore]])
    return [v for v in found if v["impact"] in BLOCKING]


def said(found: list[dict[str, Any]]) -> str:
    """``found`` as lines to read in a failure: each rule, its impact, count and first nodes."""
    return "\n".join(f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['help']}\n    "
                     + "\n    ".join(v["nodes"][:5]) for v in found)


# -- after a press: the focus, the verdict's live region, the focus ring -----------------------

#: The control a reader presses first on a page: a self-check's first choice where the page asks
#: one, else the first open button of a panel (never a toggle: it only picks).
FIRST_PRESS = (".emq-selfcheck button.widget-button:not([disabled])",
               ".emq-panel button.widget-button:not([disabled])")
#: What the press left, read in the page: whether the focus is on a button of the pressed
#: panel, the panel's last verdict line and whether it sits in a live region, and the focus
#: ring drawn round the focused button (its width, and its contrast against the background
#: it is drawn on: the first opaque one from the button's parent up).
AFTER_PRESS = """(panel) => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 1;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const rgba = (css) => {
        ctx.clearRect(0, 0, 1, 1); ctx.fillStyle = '#000'; ctx.fillStyle = css;
        ctx.fillRect(0, 0, 1, 1);
        const d = ctx.getImageData(0, 0, 1, 1).data;
        return [d[0], d[1], d[2], d[3] / 255];
    };
    const lum = (c) => {
        const [r, g, b] = c.slice(0, 3).map(v => v / 255).map(
            v => v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const focused = document.activeElement;
    const onPanel = !!focused && focused.tagName === 'BUTTON' && panel.contains(focused);
    const lines = [...panel.querySelectorAll('.emq-message')].filter(
        m => m.textContent.trim() && !m.classList.contains('emq-running'));
    const verdict = lines.length ? lines[lines.length - 1] : null;
    const live = verdict ? verdict.closest('[aria-live], [role=status], [role=alert]') : null;
    let ring = null;
    if (onPanel) {
        const style = getComputedStyle(focused);
        let bg = [255, 255, 255, 1];
        for (let node = focused.parentElement; node; node = node.parentElement) {
            const c = rgba(getComputedStyle(node).backgroundColor);
            if (c[3] >= 1) { bg = c; break; }
        }
        const fg = rgba(style.outlineColor);
        const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
        ring = {width: parseFloat(style.outlineWidth), style: style.outlineStyle,
                colour: style.outlineColor, ratio: (hi + 0.05) / (lo + 0.05)};
    }
    return {focused: onPanel ? focused.textContent.trim() : (focused ? focused.tagName : null),
            on_panel: onPanel, verdict: verdict ? verdict.textContent.trim() : '',
            live: live ? (live.getAttribute('aria-live') || live.getAttribute('role')) : null,
            ring: ring};
}"""


def press_first(page: Page, timeout_ms: int = 60_000) -> dict[str, Any]:
    """Press the page's first control (:data:`FIRST_PRESS`) from the keyboard (focused, then
    Enter), wait until its panel shows a verdict, and read what the press left
    (:data:`AFTER_PRESS`)."""
    button = None
    for selector in FIRST_PRESS:
        found = page.locator(selector)
        if found.count():
            button = found.first
            break
    assert button is not None, "no panel button to press on the page"
    panel = button.locator("xpath=ancestor::*[contains(concat(' ', @class, ' '), ' emq-panel ')]"
                           ).first
    button.scroll_into_view_if_needed()
    button.focus()
    # The press is over once the panel has been busy (the kernel took it) and is not any more.
    panel.evaluate("""(panel) => {
        panel.dataset.emqSeenBusy = '';
        new MutationObserver((records) => {
            if (panel.classList.contains('emq-busy')
                || records.some(r => (r.oldValue || '').includes('emq-busy'))) {
                panel.dataset.emqSeenBusy = 'yes';
            }
        }).observe(panel, {attributes: true, attributeFilter: ['class'],
                           attributeOldValue: true});
    }""")
    page.keyboard.press("Enter")
    page.wait_for_function(
        """(panel) => panel.dataset.emqSeenBusy === 'yes'
           && !panel.classList.contains('emq-busy')
           && [...panel.querySelectorAll('.emq-message')].some(
               m => m.textContent.trim() && !m.classList.contains('emq-running'))""",
        arg=panel.element_handle(), timeout=timeout_ms)
    read: dict[str, Any] = panel.evaluate(AFTER_PRESS)
    read["pressed"] = button.text_content() or ""
    return read


#: The least a focus ring must give: a width in CSS px, and a contrast against the page.
RING_WIDTH, RING_CONTRAST = 2.0, 3.0


def press_problems(read: dict[str, Any]) -> list[str]:
    """What is wrong with what a press left (empty: focus kept on the panel, the verdict in a
    live region, a focus ring of :data:`RING_WIDTH` px and :data:`RING_CONTRAST`:1 or more)."""
    found = []
    if not read["on_panel"]:
        found.append(f"the focus left the panel after the press (now on {read['focused']})")
    if not read["verdict"]:
        found.append("no verdict shown")
    elif not read["live"]:
        found.append(f"the verdict is in no live region: {read['verdict'][:80]}")
    ring = read.get("ring")
    if ring and (ring["style"] == "none" or ring["width"] < RING_WIDTH
                 or ring["ratio"] < RING_CONTRAST):
        found.append(f"focus ring {ring['width']}px {ring['style']} {ring['colour']}, "
                     f"{ring['ratio']:.2f}:1")
    return found
