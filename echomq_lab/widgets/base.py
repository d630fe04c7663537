"""The base every panel shares: a root widget, a plain-text rendering, one-line messages.

A panel's button callbacks go through :meth:`Panel._safely`, so a refusal or a bad input is
shown as one line on the panel's message line and never becomes a traceback. Every callback is
also registered through :meth:`Panel._on` (or wrapped by :meth:`Panel._guarded`): whatever it
raises (a server error such as ``READONLY``, ``OOM`` or ``WRONGTYPE``, a server that went away
while the panel redraws, odd data another client wrote) becomes one line on that panel's
message line, because ipywidgets would only log it and the click would seem to do nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W  # type: ignore[import-untyped]
import redis

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

    #: The error the last :meth:`_safely` action raised (None when it succeeded).
    last_error: BaseException | None = None

    def _say(self, line: W.HTML, text: str, ok: bool) -> None:
        """Show ``text`` on the panel's message line (green when ok, red when refused), as one
        line whatever it holds."""
        text = " ".join(text.split())
        self.last_message, self.last_ok = text, ok
        line.value = style.message_html(text, ok)

    @property
    def server_lost(self) -> bool:
        """True when the last action could not reach the server (or got no answer): a redraw
        would only wait again, so the panels keep their last drawing and say what happened."""
        return isinstance(self.last_error, errors.ServerUnavailable)

    def _message_line(self) -> W.HTML | None:
        line = getattr(self, "message", None)
        return line if isinstance(line, W.HTML) else None

    def _guarded(self, callback: Callable[..., object]) -> Callable[..., None]:
        """``callback`` wrapped so that nothing it raises escapes into ipywidgets: the error is
        said in one line on the panel's message line instead."""

        def run(*args: object) -> None:
            try:
                callback(*args)
            except Exception as exc:  # noqa: BLE001 - a widget callback must never raise
                self.last_error = exc
                line = self._message_line()
                if line is not None:
                    self._say(line, style.one_line(exc), ok=False)
                else:
                    self.last_message, self.last_ok = style.one_line(exc), False

        return run

    def _on(self, button: W.Button, action: Callable[[], object]) -> None:
        """Run ``action`` when ``button`` is clicked, guarded (see :meth:`_guarded`)."""
        button.on_click(self._guarded(lambda _button: action()))

    def _safely(self, line: W.HTML, action: Callable[[], str]) -> bool:
        """Run a button's ``action``; show its account, or the refusal as one line.

        A protocol refusal or a bad input never becomes a traceback: the server was not changed
        (the library refuses before writing), and the message says why.
        """
        self.last_error = None
        try:
            text = action()
        except (errors.EchoMQError, redis.RedisError, ValueError, TypeError, RuntimeError,
                TimeoutError, ArithmeticError) as exc:
            self.last_error = exc
            self._say(line, style.one_line(exc), ok=False)
            return False
        self._say(line, text, ok=True)
        return True

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_(**kwargs))
        bundle["text/plain"] = self.text()
        return bundle
