"""The lab's look: the palette (:mod:`echomq_lab.palette`: a colour per state, the theme's ink,
the marks of a verdict), a colour per set, and how a panel shows a state, a value or a
refusal."""

from __future__ import annotations

import html

import redis

from echomq_lab import errors
from echomq_lab.drift import SET_OF_STATE
from echomq_lab.palette import INK as INK
from echomq_lab.palette import INK_ON_PAGE as INK_ON_PAGE
from echomq_lab.palette import MUTED as MUTED
from echomq_lab.palette import OK_COLOUR as OK_COLOUR
from echomq_lab.palette import PAGE as PAGE
from echomq_lab.palette import REFUSED_COLOUR as REFUSED_COLOUR
from echomq_lab.palette import SOFT as SOFT
from echomq_lab.palette import STATE_COLOURS as STATE_COLOURS
from echomq_lab.palette import VERDICTS as VERDICTS
from echomq_lab.palette import Verdict as Verdict
from echomq_lab.palette import message_html as message_html
from echomq_lab.palette import on_page as on_page

#: Each set in the colour of the state its jobs hold.
SET_COLOURS: dict[str, str] = {name: STATE_COLOURS[state] for state, name in SET_OF_STATE.items()}
#: Toggle buttons: the selected one in the theme's text colour (ipywidgets draws it only a
#: shade off the others), the others grey.
TOGGLE_OFF_BG = "var(--jp-layout-color2, #eee)"
TOGGLE_ON_BG = f"color-mix(in srgb, {INK_ON_PAGE} 75%, {PAGE})"
TOGGLE_ON_TEXT = PAGE
#: The background of a field that just changed: a little amber over the page.
CHANGED_BG = f"color-mix(in srgb, #f5b800 20%, {PAGE})"
#: The padding and alignment of a cell in a panel's table, and the style of a code cell.
CELL = "padding:2px 8px;vertical-align:top;text-align:left"
MONO = "font-family:monospace"


#: The words of a verdict drawn on the page: accepted (✓) and refused (✗).
OK_TEXT = on_page(OK_COLOUR)
REFUSED_TEXT = on_page(REFUSED_COLOUR)

#: The ring round the control that has the keyboard's focus: the theme's text colour, drawn
#: 2 px off the control, so it stands on the page background (21:1 in Light, 18.9:1 in Dark).
FOCUS_RING = INK_ON_PAGE
FOCUS_RING_WIDTH = "3px"
#: The class of every panel's root, and the stylesheet it carries to draw its toggles and the
#: focus ring.
PANEL_CLASS = "emq-panel"
_TOGGLE = f".{PANEL_CLASS} .widget-toggle-buttons .widget-toggle-button"
STYLESHEET = (
    f"<style>{_TOGGLE} {{background-color: {TOGGLE_OFF_BG}}}\n"
    f"{_TOGGLE}.mod-active {{background-color: {TOGGLE_ON_BG}; color: {TOGGLE_ON_TEXT}}}\n"
    f".{PANEL_CLASS}.emq-busy button {{pointer-events: none; cursor: progress}}\n"
    f".{PANEL_CLASS} button:focus-visible, .{PANEL_CLASS} button:focus {{outline: "
    f"{FOCUS_RING_WIDTH} solid {FOCUS_RING} !important; outline-offset: 2px !important}}"
    "</style>"
)
#: The class a panel's root carries while a press runs (its buttons then take no click).
BUSY_CLASS = "emq-busy"
#: What a panel says at once when a press is taken, until the server's answer replaces it.
RUNNING = "running…"


def running_html() -> str:
    """The short cue a press shows at once: a polite status saying the press was taken."""
    return (f'<div class="emq-message emq-running" role="status" aria-live="polite" '
            f'style="color:{on_page(MUTED)};font-family:monospace">⏳ {RUNNING}</div>')


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, the noun's last word made plural unless ``n`` is 1: "1 due job",
    "2 expired leases"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def td(content: str, *styles: str) -> str:
    """A table cell holding ``content`` (HTML), in :data:`CELL`'s padding plus ``styles``."""
    return f'<td style="{";".join((CELL, *styles))}">{content}</td>'


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


#: The first word of an error reply that redis-py keeps only as the exception's class.
_SERVER_WORDS: dict[str, type[redis.ResponseError]] = {
    "READONLY": redis.exceptions.ReadOnlyError,
    "OOM": redis.exceptions.OutOfMemoryError,
    "NOPERM": redis.exceptions.NoPermissionError,
}


#: Errors the lab raises for input it refuses before anything is sent: said as their words.
_REFUSALS: tuple[type[BaseException], ...] = (ValueError, TypeError, LookupError)


def one_line(exc: BaseException) -> str:
    """An error as one line in words, never a Python class name: a protocol refusal keeps its
    wire class (``EMQSTALE: ...``), a server's error reply reads ``the server answered an
    error: …`` (its first word kept, a script's ``script: <sha>, …`` tail dropped), input the
    lab refuses (a ValueError, TypeError or LookupError) is its message alone, and anything
    else reads ``something went wrong in the lab: …``."""
    if isinstance(exc, errors.EchoMQError):
        return " ".join(str(exc).split())
    if isinstance(exc, redis.ResponseError):
        reply = " ".join(str(exc).split()).split(" script: ", 1)[0]
        word = next((w for w, cls in _SERVER_WORDS.items() if isinstance(exc, cls)), "")
        reply = reply if reply.startswith(word) else f"{word} {reply}"
        return f"the server answered an error: {reply}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, redis.RedisError):
        return f"the server connection failed: {text}"
    if isinstance(exc, KeyError) and exc.args:  # str() of a KeyError is its quoted key
        text = str(exc.args[0])
    if isinstance(exc, _REFUSALS) and text:
        return text
    return f"something went wrong in the lab: {text or 'no details'}"
