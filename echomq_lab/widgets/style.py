"""Shared look of every panel: state badges, quoted values and one-line refusals.

The colours and the status line come from :mod:`echomq_lab.theme` (plain data, shared with the
charts) and are re-exported here for the panels. Panels draw on the page, so their greys are the
theme-following CSS values: :data:`MUTED` here is ``theme.SOFT_ON_PAGE`` (not the charts' hex
grey), and coloured text goes through :func:`on_page`.
"""

from __future__ import annotations

import html

import redis

from echomq_lab import errors, theme
from echomq_lab.theme import CHANGED_BG as CHANGED_BG
from echomq_lab.theme import INK_ON_PAGE as INK_ON_PAGE
from echomq_lab.theme import SET_COLOURS as SET_COLOURS
from echomq_lab.theme import STATE_COLOURS as STATE_COLOURS
from echomq_lab.theme import message_html as message_html
from echomq_lab.theme import on_page as on_page

#: Secondary text, empty-set notes, the diagram's resting lines (follows the theme).
MUTED = theme.SOFT_ON_PAGE
#: The words of a verdict drawn on the page: accepted (✓) and refused (✗).
OK_TEXT = on_page(theme.OK_COLOUR)
REFUSED_TEXT = on_page(theme.REFUSED_COLOUR)


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
    colour = STATE_COLOURS.get(state, theme.MUTED)
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
