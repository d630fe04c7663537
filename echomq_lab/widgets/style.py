"""Shared look of every panel: one colour per state, and one-line messages for refusals."""

from __future__ import annotations

import html

from echomq_lab import errors

#: One colour per state, used by every panel (record view, sets view, diagram, pickers).
STATE_COLOURS: dict[str, str] = {
    "pending": "#2f6fdf",
    "active": "#e08a00",
    "scheduled": "#7b4fc9",
    "dead": "#c0392b",
    "completed": "#2e8b57",
}
#: The set that holds a job in each state (completed jobs are in none: their row is deleted).
SET_COLOURS: dict[str, str] = {
    "pending": STATE_COLOURS["pending"],
    "active": STATE_COLOURS["active"],
    "schedule": STATE_COLOURS["scheduled"],
    "dead": STATE_COLOURS["dead"],
}
MUTED = "#888888"
CHANGED_BG = "#fff3b0"


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


def message_html(text: str, ok: bool) -> str:
    """A one-line status message: green for an accepted call, red for a refusal."""
    colour = "#2e8b57" if ok else "#c0392b"
    mark = "✓" if ok else "✗"
    return (
        f'<div class="emq-message emq-{"ok" if ok else "refused"}" '
        f'style="color:{colour};font-family:monospace">{mark} {html.escape(text)}</div>'
    )
