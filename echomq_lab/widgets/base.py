"""The base every panel shares: a root widget, a plain-text rendering, one-line messages.
Every action goes through one guarded path, :meth:`Panel._attempt`: whatever it raises becomes
one line on the panel, never a traceback (ipywidgets would only log it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W  # type: ignore[import-untyped]

from echomq_lab import errors
from echomq_lab.widgets.look import PANEL_CLASS, STYLESHEET, message_html, one_line


class Panel:
    """A root ``widget`` shown by ``display(panel)``, whose plain-text part is :meth:`text`
    (what a frontend without the widget manager shows, not a widget repr)."""

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
        """The panel's root: a box of class :data:`theme.PANEL_CLASS` whose first child is the
        lab's (hidden) stylesheet, so its toggles are drawn the lab's way wherever it shows."""
        return self._root

    @widget.setter
    def widget(self, box: W.Box) -> None:
        box.add_class(PANEL_CLASS)
        look = W.HTML(STYLESHEET, layout=W.Layout(display="none"))
        box.children = (look, *box.children)
        self._root = box

    @property
    def server_lost(self) -> bool:
        """True when the last action could not reach the server (or got no answer)."""
        return isinstance(self.last_error, errors.ServerUnavailable)

    def _say(self, line: W.HTML | None, text: str, ok: bool | None) -> None:
        """Show ``text`` as one line on ``line``: green when ok, red when refused, grey when
        None; a panel without a line keeps it in :attr:`last_message` only."""
        text = " ".join(text.split())
        self.last_message, self.last_ok = text, ok is not False
        if line is not None:
            line.value = message_html(text, ok)

    def _attempt(self, line: W.HTML | None, action: Callable[[], object]) -> tuple[bool, object]:
        """The one guarded path: ``(True, what action returned)``, or, when it raised,
        ``(False, None)`` with the error kept in :attr:`last_error` and said on ``line``."""
        try:
            return True, action()
        except Exception as exc:  # noqa: BLE001 - a widget callback must never raise
            self.last_error = exc
            self._say(line, one_line(exc), ok=False)
            return False, None

    def _guarded(self, callback: Callable[..., object]) -> Callable[..., None]:
        """``callback`` wrapped for ipywidgets (a click or an observer) by :meth:`_attempt`,
        refusals said on the panel's ``message`` line."""

        def run(*args: object) -> None:
            line = getattr(self, "message", None)
            self._attempt(line if isinstance(line, W.HTML) else None, lambda: callback(*args))

        return run

    def _on(self, button: W.Button, action: Callable[[], object]) -> None:
        """Run ``action`` when ``button`` is clicked, guarded (see :meth:`_guarded`)."""
        button.on_click(self._guarded(lambda _button: action()))

    def _safely(self, line: W.HTML, action: Callable[[], str]) -> bool:
        """Run a step's ``action`` guarded and say the account it returns (or why it was
        refused); True when it ran."""
        self.last_error = None
        ran, text = self._attempt(line, action)
        if ran:
            self._say(line, str(text), ok=True)
        return ran

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_(**kwargs))
        bundle["text/plain"] = self.text()
        return bundle
