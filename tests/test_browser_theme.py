"""The centre page in JupyterLab's Light and Dark themes: readable, and usable from the keyboard.

For each theme a JupyterLab starts with that theme as the user's setting (a
``themes.jupyterlab-settings`` file under ``JUPYTERLAB_SETTINGS_DIR``), headless Chromium opens
page 02 and runs it, and then:

- the transition panel's Run button is reached with Tab from the transition picker and pressed
  with Enter (no mouse), which enqueues a job: the diagram lights the ``enqueue`` edge; a claim
  and a retry follow (by mouse): the diagram lights ``retry``, rings the row's new state, and the
  record view highlights the field the retry changed;
- the WCAG contrast of what the page then shows is computed from ``getComputedStyle`` colours
  against the background each sits on (every translucent layer composited, down to the first
  opaque one): the lit edge label, the resting labels, the message line, a highlighted row's
  text and a state's name on its badge at 4.5:1 or more (text), the current-state ring and the
  lines at 3:1 or more (graphics, WCAG 1.4.11);
- a screenshot of the whole page goes to ``artifacts/screenshots/02-theme-<light|dark>.png``.

One browser (the module fixture ``browser`` of tests/conftest.py) serves both themes. Without a
Chromium the tests skip, saying why; with ``ECHOMQ_REQUIRE_BACKENDS=1`` they fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tools.browser import (
    VIEWPORT,
    cell_count,
    find_button,
    hide_sidebar,
    jupyter_lab,
    notebook_screenshot,
    run_all,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
CENTRE = "02-the-state-and-attempts.ipynb"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
UPDATE_MS = 30_000
#: WCAG 2.1 AA: text (1.4.3) and graphical objects such as lines and rings (1.4.11).
TEXT_AA, GRAPHIC_AA = 4.5, 3.0

#: In the page: ``contrast(element, property)`` gives the colour ``property`` of ``element``
#: composited over the background it sits on, that background, and their WCAG ratio. Colours are
#: read through a canvas, so any CSS colour syntax the browser computes (rgb(), color(srgb ...))
#: becomes sRGB bytes.
CONTRAST_JS = """
([el, prop]) => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 1;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const rgba = (css) => {
        ctx.fillStyle = '#010203';
        ctx.fillStyle = css;
        if (ctx.fillStyle === '#010203' && css.replace(/\\s/g, '') !== 'rgb(1,2,3)') {
            throw new Error('cannot read the colour ' + css);
        }
        ctx.clearRect(0, 0, 1, 1);
        ctx.fillRect(0, 0, 1, 1);
        const d = ctx.getImageData(0, 0, 1, 1).data;
        return [d[0], d[1], d[2], d[3] / 255];
    };
    const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3]));
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
        const bg = rgba(getComputedStyle(node).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] >= 1) break;
    }
    let bg = [255, 255, 255];
    for (const layer of layers.reverse()) bg = over(layer, bg);
    const fgCss = getComputedStyle(el)[prop];
    const fg = over(rgba(fgCss), bg);
    const lum = (c) => {
        const [r, g, b] = c.map(v => v / 255).map(
            v => v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    return {fg: fg.map(Math.round), bg: bg.map(Math.round), css: fgCss,
            ratio: (hi + 0.05) / (lo + 0.05)};
}
"""


@pytest.fixture(scope="module", params=list(THEMES))
def themed(
    request: pytest.FixtureRequest, browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Page]]:
    """(theme key, the tab where page 02 ran) in a JupyterLab whose user setting is that theme."""
    key = str(request.param)
    theme = {("apputils-extension", "themes"): json.dumps({"theme": THEMES[key]})}
    with jupyter_lab(NOTEBOOKS_DIR, tmp_path_factory.mktemp(f"lab-{key}"), theme) as lab:
        page = browser.new_page(viewport=VIEWPORT)
        try:
            page.goto(lab.notebook_url(CENTRE, workspace=f"theme-{key}"))
            run_all(page, cell_count(NOTEBOOKS_DIR / CENTRE))
            hide_sidebar(page)
            yield key, page
        finally:
            page.close()


def contrast(target: Locator, prop: str) -> dict[str, object]:
    """The WCAG contrast of ``target``'s colour ``prop`` against its effective background."""
    expect(target.first, f"{target} is on the page").to_be_attached(timeout=UPDATE_MS)
    found: dict[str, object] = target.first.evaluate(
        f"(el, prop) => ({CONTRAST_JS})([el, prop])", prop
    )
    return found


def tab_to(page: Page, target: Locator, most: int = 25) -> None:
    """Press Tab until ``target`` has the keyboard focus (at most ``most`` presses)."""
    for _ in range(most):
        if target.evaluate("el => el === document.activeElement"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{most} presses of Tab never reached {target}")


def test_the_centre_page_reads_well_and_works_from_the_keyboard(
    themed: tuple[str, Page], screenshots: Path
) -> None:
    key, page = themed
    assert page.evaluate("document.body.dataset.jpThemeName") == THEMES[key]

    panel = page.locator(".emq-transition-panel")
    expect(panel).to_have_count(1)
    picker = find_button(panel, "enqueue")
    picker.click()  # pick the transition, then go on from the keyboard alone
    run = find_button(panel, "Run")
    tab_to(page, run)
    page.keyboard.press("Enter")
    message = panel.locator(".emq-message").first
    expect(message).to_contain_text("enqueue wrote state=pending, attempts=0", timeout=UPDATE_MS)

    diagram = panel.locator(".emq-state-diagram")
    expect(diagram.locator("path.emq-edge-lit")).to_have_attribute("data-transition", "enqueue")
    expect(diagram.locator("text.emq-edge-label-lit")).to_have_text("enqueue")
    # By mouse: claim a job (the oldest pending one: the panel then follows it), and retry it,
    # which changes the row's state, so the record view lights that field.
    for name in ("claim", "retry"):
        find_button(panel, name).click()
        run.click()
        said = re.compile(rf"^\W*{name} (with token \d+ )?wrote state=")
        expect(message).to_contain_text(said, timeout=UPDATE_MS)
        expect(diagram.locator("text.emq-edge-label-lit")).to_have_text(name)
    expect(diagram.locator("rect.emq-current")).to_have_count(1)
    changed = panel.locator(".emq-record-view tr.emq-changed")
    expect(changed.first).to_be_visible(timeout=UPDATE_MS)

    checks: list[tuple[str, Locator, str, float]] = [
        ("the lit edge label", diagram.locator("text.emq-edge-label-lit"), "fill", TEXT_AA),
        ("the current-state ring", diagram.locator("rect.emq-current"), "stroke", GRAPHIC_AA),
        ("a highlighted row's text", changed.locator("td").first, "color", TEXT_AA),
        ("a resting edge label", diagram.locator("text.emq-edge-label:not(.emq-edge-label-lit)"),
         "fill", TEXT_AA),
        ("a resting edge", diagram.locator("path.emq-edge:not(.emq-edge-lit)"), "stroke",
         GRAPHIC_AA),
        ("the lit edge", diagram.locator("path.emq-edge-lit"), "stroke", GRAPHIC_AA),
        ("the message line", message, "color", TEXT_AA),
        ("a state badge's name", panel.locator(".emq-state"), "color", TEXT_AA),
    ]
    shot = notebook_screenshot(page, screenshots / f"02-theme-{key}.png")
    print(f"\n{THEMES[key]}: screenshot {shot}")
    failed = []
    for what, target, prop, floor in checks:
        found = contrast(target, prop)
        ratio = float(str(found["ratio"]))
        print(f"  {what}: {ratio:.2f}:1 ({prop} {found['css']} over rgb{tuple(found['bg'])})")
        if ratio < floor:
            failed.append(f"{what}: {ratio:.2f}:1 < {floor}:1 ({found})")
    assert not failed, f"{THEMES[key]}: " + "; ".join(failed)
