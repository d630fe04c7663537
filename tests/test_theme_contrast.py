"""The theme's colours reach WCAG AA in JupyterLab's Light and Dark themes, computed here.

The panels' CSS values (``color-mix`` of a hue with the theme's variables) are resolved with
each theme's values of those variables, read from the installed JupyterLab theme files, and the
contrast is computed as WCAG 2.1 defines it. The real-browser test (tests/test_jupyterlab.py)
checks the same on the page; this one covers every state colour and verdict without a browser.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from echomq_lab.widgets import look as theme

THEME_DIR = Path(sys.prefix) / "share" / "jupyter" / "lab" / "themes" / "@jupyterlab"
THEMES = {"light": "theme-light-extension", "dark": "theme-dark-extension"}
RGB = tuple[float, float, float]


def hex_rgb(text: str) -> RGB:
    text = text.lstrip("#")
    if len(text) == 3:
        text = "".join(c * 2 for c in text)
    return (int(text[0:2], 16) / 255, int(text[2:4], 16) / 255, int(text[4:6], 16) / 255)


def theme_var(name: str, which: str) -> RGB:
    """An opaque colour variable of an installed JupyterLab theme (``white``/``#hex``/var())."""
    css = (THEME_DIR / THEMES[which] / "index.css").read_text()
    found = re.search(rf"--jp-{name}:\s*([^;]+);", css)
    assert found, f"{THEMES[which]} defines no --jp-{name}"
    value = found.group(1).strip()
    fallback = re.fullmatch(r"var\(--[\w-]+,\s*(#[0-9a-fA-F]+)\)", value)
    value = fallback.group(1) if fallback else value
    return (1.0, 1.0, 1.0) if value == "white" else hex_rgb(value)


def luminance(c: RGB) -> float:
    lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ratio(a: RGB, b: RGB) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def mix(a: RGB, b: RGB, share_of_a: float) -> RGB:
    r, g, bl = (x * share_of_a + y * (1 - share_of_a) for x, y in zip(a, b, strict=True))
    return (r, g, bl)


def resolve(css: str, which: str) -> RGB:
    """One of this module's CSS values (a hex, a theme variable, or a color-mix of those)."""
    css = css.strip()
    if css.startswith("#"):
        return hex_rgb(css)
    var = re.fullmatch(r"var\(--jp-([\w-]+)(?:,[^)]*)?\)", css)
    if var:
        return theme_var(var.group(1), which)
    mixed = re.fullmatch(r"color-mix\(in srgb, (.+) (\d+)%, (.+)\)", css)
    assert mixed, f"cannot resolve {css!r}"
    return mix(resolve(mixed.group(1), which), resolve(mixed.group(3), which),
               int(mixed.group(2)) / 100)


HUES = sorted({*theme.STATE_COLOURS.values(), *(v.colour for v in theme.VERDICTS.values())})


@pytest.mark.parametrize("which", list(THEMES))
@pytest.mark.parametrize("hue", HUES)
def test_coloured_text_reads_on_the_page(which: str, hue: str) -> None:
    page = resolve(theme.PAGE, which)
    assert ratio(resolve(theme.on_page(hue), which), page) >= 4.5


@pytest.mark.parametrize("which", list(THEMES))
def test_soft_text_and_the_highlight_read(which: str) -> None:
    page, ink = resolve(theme.PAGE, which), resolve(theme.INK_ON_PAGE, which)
    soft, changed = resolve(theme.SOFT, which), resolve(theme.CHANGED_BG, which)
    assert ratio(soft, page) >= 4.5
    assert ratio(soft, changed) >= 4.5, "soft text on a changed (removed) row"
    assert ratio(ink, changed) >= 4.5
    assert ratio(ink, page) >= 4.5


@pytest.mark.parametrize("hue", sorted({*theme.STATE_COLOURS.values(), theme.MUTED}))
def test_white_reads_on_every_fill(hue: str) -> None:
    """Badges and diagram nodes write the state's name in white on its colour."""
    assert ratio((1.0, 1.0, 1.0), hex_rgb(hue)) >= 4.5


def test_the_old_dark_ink_would_fail_in_dark() -> None:
    """The check can fail: the near-black the diagram used to draw lit labels with vanishes."""
    assert ratio(hex_rgb("#111111"), resolve(theme.PAGE, "dark")) < 1.1


@pytest.mark.parametrize("which", list(THEMES))
def test_the_selected_toggle_stands_out(which: str) -> None:
    """A selected toggle is 3:1 or more against an unselected one, and its text 4.5:1 on it."""
    on, off = resolve(theme.TOGGLE_ON_BG, which), resolve(theme.TOGGLE_OFF_BG, which)
    assert ratio(on, off) >= 3
    assert ratio(resolve(theme.TOGGLE_ON_TEXT, which), on) >= 4.5


@pytest.mark.parametrize("which", list(THEMES))
def test_the_widgets_own_selected_toggle_would_fail(which: str) -> None:
    """The check can fail: ipywidgets' own selected shade (layout-color3) is under 2:1."""
    own = resolve("var(--jp-layout-color3)", which)
    assert ratio(own, resolve(theme.TOGGLE_OFF_BG, which)) < 2


def test_every_panel_carries_the_toggles_stylesheet() -> None:
    """The colours checked above are the ones a panel's stylesheet draws its toggles with."""
    import ipywidgets as W  # type: ignore[import-untyped]

    from echomq_lab.widgets.base import Panel

    class Toggles(Panel):
        def __init__(self) -> None:
            self.widget = W.VBox([W.ToggleButtons(options=["a", "b"])])

    root = Toggles().widget
    assert theme.PANEL_CLASS in root._dom_classes
    sheet = root.children[0]
    assert isinstance(sheet, W.HTML) and sheet.value == theme.STYLESHEET
    assert sheet.layout.display == "none" and isinstance(root.children[1], W.ToggleButtons)
    rule = f".mod-active {{background-color: {theme.TOGGLE_ON_BG}; color: {theme.TOGGLE_ON_TEXT}}}"
    assert rule in theme.STYLESHEET
    assert f"{{background-color: {theme.TOGGLE_OFF_BG}}}" in theme.STYLESHEET


@pytest.mark.parametrize("which", list(THEMES))
def test_the_focus_ring_stands_out_from_the_page(which: str) -> None:
    """The ring round a focused control (WCAG 2.4.7, 1.4.11): 3:1 or more against the page in
    both themes, 2 px or wider, and set with !important so JupyterLab's 1 px ring of its own
    does not win; it is in the stylesheet every panel carries."""
    page = resolve(theme.PAGE, which)
    assert ratio(resolve(theme.FOCUS_RING, which), page) >= 3.0
    assert float(theme.FOCUS_RING_WIDTH.removesuffix("px")) >= 2
    rule = re.search(r"button:focus[^{]*\{([^}]*)\}", theme.STYLESHEET)
    assert rule, theme.STYLESHEET
    assert f"{theme.FOCUS_RING_WIDTH} solid {theme.FOCUS_RING} !important" in rule.group(1)
