"""The lab's look: a colour per state and per set, the marks of a verdict, and how a panel
shows a state, a value or a refusal.

Panels (:mod:`echomq_lab.widgets`), charts and text reports all read their colours and verdict
words here, so a state is drawn in one colour everywhere. This module imports no widget or
plotting library.

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

import redis

from echomq_lab import errors
from echomq_lab.drift import SET_OF_STATE

#: Accepted, refused: the colours of a verdict (and of the states that end that way).
OK_COLOUR = "#237a4b"
REFUSED_COLOUR = "#c0392b"
#: Neither: not measured, not known, or beside the point (a fill, and the charts' grey; text
#: drawn on the page is :data:`SOFT`).
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
#: Each set in the colour of the state its jobs hold (completed jobs are in none: their row is
#: deleted).
SET_COLOURS: dict[str, str] = {name: STATE_COLOURS[state] for state, name in SET_OF_STATE.items()}


#: The theme's strongest text colour (black in Light, white in Dark) and its page background.
INK_ON_PAGE = "var(--jp-content-font-color0, #000)"
PAGE = "var(--jp-layout-color0, #fff)"
#: Secondary text drawn on the page (notes, empty sets, the diagram's resting lines): the theme's
#: text colour, 60 % of the way from the page (5.7:1 on Light's white, 7.2:1 on Dark's
#: near-black, 4.7:1 or more on the changed highlight in either).
SOFT = f"color-mix(in srgb, {INK_ON_PAGE} 60%, {PAGE})"
#: Toggle buttons. ipywidgets draws the selected one only a shade off the others (about 1.5:1 in
#: Light and Dark); the panels' :data:`STYLESHEET` draws it in the theme's text colour, with the
#: page's colour as its text, beside the unselected ones' grey (5.7:1 or more in either theme).
TOGGLE_OFF_BG = "var(--jp-layout-color2, #eee)"
TOGGLE_ON_BG = f"color-mix(in srgb, {INK_ON_PAGE} 75%, {PAGE})"
TOGGLE_ON_TEXT = PAGE
#: The background of a field that just changed: a little amber over the page, so the theme's
#: text stays readable on it (the theme's text 12:1 or more, soft text 4.7:1 or more).
CHANGED_BG = f"color-mix(in srgb, #f5b800 20%, {PAGE})"


def on_page(hue: str) -> str:
    """CSS for text in ``hue`` on the page: the hue mixed 65 % with the theme's text colour.

    Darker in Light, lighter in Dark: every colour of this module reaches 5.4:1 or more against
    either theme's background, where the bare hue would miss 4.5:1 in one of them.
    """
    return f"color-mix(in srgb, {hue} 65%, {INK_ON_PAGE})"


#: The words of a verdict drawn on the page: accepted (✓) and refused (✗).
OK_TEXT = on_page(OK_COLOUR)
REFUSED_TEXT = on_page(REFUSED_COLOUR)


#: The class of every panel's root, and the stylesheet the root carries (see
#: :mod:`echomq_lab.widgets.base`): it draws the toggles inside a panel.
PANEL_CLASS = "emq-panel"
_TOGGLE = f".{PANEL_CLASS} .widget-toggle-buttons .widget-toggle-button"
STYLESHEET = (
    f"<style>{_TOGGLE} {{background-color: {TOGGLE_OFF_BG}}}\n"
    f"{_TOGGLE}.mod-active {{background-color: {TOGGLE_ON_BG}; color: {TOGGLE_ON_TEXT}}}</style>"
)


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


def quoted(value: bytes, limit: int | None = None) -> str:
    """``value`` as a quoted string when it is UTF-8, or as a bytes literal when it is not;
    cut at ``limit`` characters (with "…") when a limit is given."""
    try:
        shown = repr(value.decode("utf-8"))
    except UnicodeDecodeError:
        shown = repr(value)
    return shown if limit is None or len(shown) <= limit else shown[:limit] + "…"


def state_badge(state: str) -> str:
    """An HTML pill naming ``state`` in its colour."""
    colour = STATE_COLOURS.get(state, MUTED)
    return (
        f'<span class="emq-state emq-state-{html.escape(state)}" style="background:{colour};'
        'color:white;border-radius:8px;padding:1px 8px;font-family:monospace">'
        f"{html.escape(state)}</span>"
    )


def one_line(exc: BaseException) -> str:
    """A refusal or bad argument as one line of text, e.g. ``EMQSTALE: token 1 is stale, ...``.

    Typed protocol refusals keep their wire class; the host's conditions are the lab's words; an
    error the server answered that is not a refusal (``READONLY``, ``OOM``, ``WRONGTYPE``...)
    reads ``the server answered an error: …``; bad arguments name their Python class.
    """
    if isinstance(exc, errors.EchoMQError):
        return " ".join(str(exc).split())
    text = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, redis.ResponseError):
        return f"the server answered an error: {server_error(exc)}"
    if isinstance(exc, redis.RedisError):
        return f"the server connection failed: {text}"
    return f"{type(exc).__name__}: {text}"


def server_error(exc: redis.ResponseError) -> str:
    """The server's error reply as it sent it: its first word (``READONLY``, ``OOM``: redis-py
    keeps that word only as the exception's class) and its text, without a script's
    ``script: <sha>, on @user_script:N.`` tail."""
    text = " ".join(str(exc).split()).split(" script: ", 1)[0]
    for word, cls in _SERVER_WORDS.items():
        if isinstance(exc, cls) and not text.startswith(word):
            return f"{word} {text}"
    return text


_SERVER_WORDS: dict[str, type[redis.ResponseError]] = {
    "READONLY": redis.exceptions.ReadOnlyError,
    "OOM": redis.exceptions.OutOfMemoryError,
    "NOPERM": redis.exceptions.NoPermissionError,
}
