"""The base every panel shares: a root widget, a plain-text rendering, one-line messages.

Every action a panel runs for a click (a button's callback registered with :meth:`Panel._on`,
an observer wrapped by :meth:`Panel._guarded`, a step run by :meth:`Panel._safely`) goes through
one guarded path, :meth:`Panel._attempt`: whatever it raises (a refusal, a bad input, a server
error such as ``READONLY``, ``OOM`` or ``WRONGTYPE``, a server that went away, odd data another
client wrote) becomes one line on the panel's message line, never a traceback (ipywidgets would
only log it, and the click would seem to do nothing). The message is written whole, once, by
:meth:`Panel._say`; a refused action wrote nothing to the server (the library refuses before
the wire).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W  # type: ignore[import-untyped]

from echomq_lab import errors
from echomq_lab.theme import PANEL_CLASS, STYLESHEET, message_html, one_line


class Panel:
    """What every panel shares: a root ``widget``, a text rendering, and display by delegation.

    ``display(panel)`` (or a panel as a cell's last expression) shows ``panel.widget``; the
    plain-text part of the bundle is :meth:`text`, so a frontend without the widget manager
    (and nbval) sees what the panel shows, not a widget repr.
    """

    _root: W.Box
    #: The one-line status the panel shows last (empty before any action), and whether it was ok.
    last_message: str = ""
    last_ok: bool = True
    #: The error the last guarded action raised (None when it succeeded).
    last_error: BaseException | None = None

    def text(self) -> str:  # pragma: no cover - every panel overrides it
        raise NotImplementedError

    @property
    def widget(self) -> W.Box:
        """The panel's root: a box of the class :data:`theme.PANEL_CLASS` whose first child is
        the lab's stylesheet (hidden), so its toggles are drawn the lab's way wherever it shows."""
        return self._root

    @widget.setter
    def widget(self, box: W.Box) -> None:
        box.add_class(PANEL_CLASS)
        look = W.HTML(STYLESHEET, layout=W.Layout(display="none"))
        box.children = (look, *box.children)
        self._root = box

    @property
    def server_lost(self) -> bool:
        """True when the last action could not reach the server (or got no answer): a redraw
        would only wait again, so the panels keep their last drawing and say what happened."""
        return isinstance(self.last_error, errors.ServerUnavailable)

    def _say(self, line: W.HTML | None, text: str, ok: bool) -> None:
        """Show ``text`` as one line (whatever it holds) on the message ``line`` (green when ok,
        red when refused); a panel without one keeps it in :attr:`last_message` only."""
        text = " ".join(text.split())
        self.last_message, self.last_ok = text, ok
        if line is not None:
            line.value = message_html(text, ok)

    def _attempt(self, line: W.HTML | None, action: Callable[[], object]) -> tuple[bool, object]:
        """The one guarded path: run ``action``; ``(True, what it returned)``, or, when it
        raised, ``(False, None)`` with the error kept in :attr:`last_error` and said in one line
        on ``line``."""
        try:
            return True, action()
        except Exception as exc:  # noqa: BLE001 - a widget callback must never raise
            self.last_error = exc
            self._say(line, one_line(exc), ok=False)
            return False, None

    def _guarded(self, callback: Callable[..., object]) -> Callable[..., None]:
        """``callback`` wrapped for ipywidgets (a click or an observer): run through
        :meth:`_attempt`, so nothing it raises escapes; on success it says nothing itself."""

        def run(*args: object) -> None:
            line = getattr(self, "message", None)
            self._attempt(line if isinstance(line, W.HTML) else None, lambda: callback(*args))

        return run

    def _on(self, button: W.Button, action: Callable[[], object]) -> None:
        """Run ``action`` when ``button`` is clicked, guarded (see :meth:`_guarded`)."""
        button.on_click(self._guarded(lambda _button: action()))

    def _safely(self, line: W.HTML, action: Callable[[], str]) -> bool:
        """Run a step's ``action`` guarded; say the account it returns, or why it was refused.
        True when it ran (and then :attr:`last_error` is None)."""
        self.last_error = None
        ran, text = self._attempt(line, action)
        if ran:
            self._say(line, str(text), ok=True)
        return ran

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_(**kwargs))
        bundle["text/plain"] = self.text()
        return bundle
