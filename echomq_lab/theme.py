"""The lab's look as plain data: a colour per state and per set, and the marks of a verdict.

Panels (:mod:`echomq_lab.widgets.style`), charts (:mod:`benchmarks.charts`,
:mod:`echomq_lab.plots`) and text reports all read their colours and verdict words here, so a
state is drawn in one colour everywhere. This module imports no widget or plotting library.

Two kinds of colour live here. The hex colours (states, sets, verdicts) are fills: white text
on each of them reads at WCAG AA (4.5:1 or more), whatever the theme. Everything drawn straight
on the page (text, the diagram's lines, the changed-field highlight) is a CSS value built from
JupyterLab's theme variables (``var(--jp-...)``), so it follows Light and Dark alike: coloured
text is its hue mixed toward the theme's own text colour (:func:`on_page`). Each variable has a
light fallback for pages shown outside JupyterLab.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

#: Accepted, refused: the colours of a verdict (and of the states that end that way).
OK_COLOUR = "#237a4b"
REFUSED_COLOUR = "#c0392b"
#: Neither: not measured, not known, or beside the point.
MUTED = "#737373"
#: Dark lines drawn over colour (whiskers on a bar chart).
INK = "#333333"

#: One colour per state, used by every panel (record view, sets view, diagram, pickers).
STATE_COLOURS: dict[str, str] = {
    "pending": "#2f6fdf",
    "active": "#a86400",
    "scheduled": "#7b4fc9",
    "dead": REFUSED_COLOUR,
    "completed": OK_COLOUR,
}
#: The set that holds a job in each state (completed jobs are in none: their row is deleted).
SET_COLOURS: dict[str, str] = {
    "pending": STATE_COLOURS["pending"],
    "active": STATE_COLOURS["active"],
    "schedule": STATE_COLOURS["scheduled"],
    "dead": STATE_COLOURS["dead"],
}


#: The theme's strongest text colour (black in Light, white in Dark) and its page background.
INK_ON_PAGE = "var(--jp-content-font-color0, #000)"
PAGE = "var(--jp-layout-color0, #fff)"
#: Secondary text and the diagram's resting lines: the theme's text colour, 60 % of the way from
#: the page (5.7:1 on Light's white, 7.2:1 on Dark's near-black, 4.7:1 or more on the changed
#: highlight in either).
SOFT_ON_PAGE = f"color-mix(in srgb, {INK_ON_PAGE} 60%, {PAGE})"
#: The background of a field that just changed: a little amber over the page, so the theme's
#: text stays readable on it (the theme's text 12:1 or more, soft text 4.7:1 or more).
CHANGED_BG = f"color-mix(in srgb, #f5b800 20%, {PAGE})"


def on_page(hue: str) -> str:
    """CSS for text in ``hue`` on the page: the hue mixed 65 % with the theme's text colour.

    Darker in Light, lighter in Dark: every colour of this module reaches 5.4:1 or more against
    either theme's background, where the bare hue would miss 4.5:1 in one of them.
    """
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
    """A one-line status message: green ✓ when accepted, red ✗ when refused, grey – if neither.

    ``text`` is escaped; the line is a ``div`` of classes ``emq-message emq-<verdict>``.
    """
    look = VERDICTS[ok]
    return (
        f'<div class="emq-message emq-{look.css}" '
        f'style="color:{on_page(look.colour)};font-family:monospace">'
        f"{look.mark} {html.escape(text)}</div>"
    )
