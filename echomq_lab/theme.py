"""The lab's look as plain data: a colour per state and per set, and the marks of a verdict.

Panels (:mod:`echomq_lab.widgets.style`), charts (:mod:`echomq_lab.report.charts`,
:mod:`echomq_lab.plots`) and text reports all read their colours and verdict words here, so a
state is drawn in one colour everywhere. This module imports no widget or plotting library.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

#: Accepted, refused: the colours of a verdict (and of the states that end that way).
OK_COLOUR = "#2e8b57"
REFUSED_COLOUR = "#c0392b"
#: Neither: not measured, not known, or beside the point.
MUTED = "#888888"
#: The background of a field that just changed.
CHANGED_BG = "#fff3b0"
#: Dark lines drawn over colour (whiskers on a bar chart).
INK = "#333333"

#: One colour per state, used by every panel (record view, sets view, diagram, pickers).
STATE_COLOURS: dict[str, str] = {
    "pending": "#2f6fdf",
    "active": "#e08a00",
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
        f'style="color:{look.colour};font-family:monospace">{look.mark} {html.escape(text)}</div>'
    )
