"""The lab's palette: a colour per state, the theme's ink, and the marks of a verdict, which
the panels (:mod:`echomq_lab.widgets.look`) and the labs' charts (:mod:`echomq_lab.sim.charts`)
both draw with. The hex colours are fills that white text reads on at WCAG AA; text on the page
is CSS from JupyterLab's theme variables, so it reads in Light and Dark.

Its own layer: imports nothing of the package; the labs and the widgets may import it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

#: Accepted, refused, neither (not measured or beside the point), and dark lines over colour.
OK_COLOUR = "#237a4b"
REFUSED_COLOUR = "#c0392b"
MUTED = "#737373"
INK = "#333333"

#: One colour per state, used by every panel and chart.
STATE_COLOURS: dict[str, str] = {
    "pending": "#2f6fdf",
    "active": "#a86400",
    "scheduled": "#7b4fc9",
    "dead": REFUSED_COLOUR,
    "completed": OK_COLOUR,
}

#: The theme's strongest text colour (black in Light, white in Dark) and its page background.
INK_ON_PAGE = "var(--jp-content-font-color0, #000)"
PAGE = "var(--jp-layout-color0, #fff)"
#: Secondary text on the page: the theme's text colour, 60 % of the way from the page.
SOFT = f"color-mix(in srgb, {INK_ON_PAGE} 60%, {PAGE})"


def on_page(hue: str) -> str:
    """CSS for text in ``hue`` on the page: the hue mixed 65 % with the theme's text colour
    (5.4:1 or more on either theme's background, where the bare hue may miss 4.5:1)."""
    return f"color-mix(in srgb, {hue} 65%, {INK_ON_PAGE})"


@dataclass(frozen=True)
class Verdict:
    """How one verdict looks: its CSS class suffix, colour, mark and table word."""

    css: str
    colour: str
    mark: str
    word: str


#: A verdict's look: True accepted or met, False refused or missed, None not measured.
VERDICTS: dict[bool | None, Verdict] = {
    True: Verdict("ok", OK_COLOUR, "✓", "yes"),
    False: Verdict("refused", REFUSED_COLOUR, "✗", "NO"),
    None: Verdict("unmeasured", MUTED, "–", "-"),
}


def message_html(text: str, ok: bool | None) -> str:
    """A one-line status (``text`` escaped): green ✓ when accepted, red ✗ when refused, grey –
    if neither; a ``div`` of classes ``emq-message emq-<verdict>``, a polite live region (a
    screen reader says it once the press that caused it is answered)."""
    look = VERDICTS[ok]
    return (
        f'<div class="emq-message emq-{look.css}" role="status" aria-live="polite" '
        f'style="color:{on_page(look.colour)};font-family:monospace">'
        f"{look.mark} {html.escape(text)}</div>"
    )
