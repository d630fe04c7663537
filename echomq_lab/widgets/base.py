"""The base every panel shares: a root widget, a plain-text rendering, one-line messages.

A panel's button callbacks go through :meth:`Panel._safely`, so a refusal or a bad input is
shown as one line on the panel's message line and never becomes a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W  # type: ignore[import-untyped]

from echomq_lab import errors
from echomq_lab.widgets import style


class Panel:
    """What every panel shares: a root ``widget``, a text rendering, and display by delegation.

    ``display(panel)`` (or a panel as a cell's last expression) shows ``panel.widget``; the
    plain-text part of the bundle is :meth:`text`, so a frontend without the widget manager
    (and nbval) sees what the panel shows, not a widget repr.
    """

    widget: W.Box
    #: The one-line status the panel shows last (empty before any action), and whether it was ok.
    last_message: str = ""
    last_ok: bool = True

    def text(self) -> str:  # pragma: no cover - every panel overrides it
        raise NotImplementedError

    def _say(self, line: W.HTML, text: str, ok: bool) -> None:
        """Show ``text`` on the panel's message line (green when ok, red when refused)."""
        self.last_message, self.last_ok = text, ok
        line.value = style.message_html(text, ok)

    def _safely(self, line: W.HTML, action: Callable[[], str]) -> bool:
        """Run a button's ``action``; show its account, or the refusal as one line.

        A protocol refusal or a bad input never becomes a traceback: the server was not changed
        (the library refuses before writing), and the message says why.
        """
        try:
            text = action()
        except (errors.EchoMQError, ValueError, TypeError, RuntimeError, TimeoutError) as exc:
            self._say(line, style.one_line(exc), ok=False)
            return False
        self._say(line, text, ok=True)
        return True

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_(**kwargs))
        bundle["text/plain"] = self.text()
        return bundle
