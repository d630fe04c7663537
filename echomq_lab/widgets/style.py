"""Shared look of every panel: state badges, quoted values and one-line refusals.

The colours and the status line come from :mod:`echomq_lab.theme` (plain data, shared with the
charts) and are re-exported here for the panels.
"""

from __future__ import annotations

import html

from echomq_lab import errors
from echomq_lab.theme import CHANGED_BG as CHANGED_BG
from echomq_lab.theme import MUTED as MUTED
from echomq_lab.theme import SET_COLOURS as SET_COLOURS
from echomq_lab.theme import STATE_COLOURS as STATE_COLOURS
from echomq_lab.theme import message_html as message_html


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

    Typed protocol refusals keep their wire class; bad arguments name their Python class.
    """
    if isinstance(exc, errors.EchoMQError):
        return str(exc)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"

