"""The base every panel shares: a root widget, a plain-text rendering, one-line messages.
Every action goes through one guarded path, :meth:`Panel._attempt`: whatever it raises becomes
one line on the panel, never a traceback (ipywidgets would only log it)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import ipywidgets as W  # type: ignore[import-untyped]

from echomq_lab import errors
from echomq_lab.widgets.look import (
    BUSY_CLASS,
    PANEL_CLASS,
    STYLESHEET,
    message_html,
    one_line,
    running_html,
)


def _walk(widget: W.Widget) -> Iterator[W.Widget]:
    """``widget`` and every widget inside it, in the order they show."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


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
        """Run ``action`` when ``button`` is clicked, guarded (see :meth:`_guarded`), with the
        cue of :meth:`_pressing` on the panel's ``message`` line while it runs."""
        self._wire(button, action, None)

    def _wire(self, button: W.Button, action: Callable[[], object],
              line: W.HTML | None) -> None:
        """:meth:`_on`, the cue said on ``line`` (None: the panel's ``message``)."""
        run = self._guarded(lambda _button: action())

        def pressed(_button: W.Button) -> None:
            said = line if line is not None else getattr(self, "message", None)
            with self._pressing(button, said if isinstance(said, W.HTML) else None):
                run(button)

        button.on_click(pressed)

    #: True while a press runs (the cue of :meth:`_pressing` is on screen).
    busy: bool = False

    #: The control that holds the keyboard's focus after the last press (None before any).
    focused: W.Widget | None = None

    @contextlib.contextmanager
    def _pressing(self, button: W.Button, line: W.HTML | None) -> Iterator[None]:
        """The cue that a press was taken, sent before the work starts: the panel's buttons
        closed to clicks (:data:`BUSY_CLASS`), "running…" on ``line``. The pressed button is
        never disabled meanwhile (a browser drops the focus of a disabled button to the page):
        it keeps the focus, unless the press took it off the page or closed it, when the focus
        moves to the control :meth:`_focus_after` names. The line keeps what the work said
        (or what it said before, if the work said nothing)."""
        said, root = line.value if line is not None else "", self.widget
        cue = running_html()
        self.busy = True
        root.add_class(BUSY_CLASS)
        if line is not None:
            line.value = cue
        try:
            yield
        finally:
            self.busy = False
            root.remove_class(BUSY_CLASS)
            if line is not None and line.value == cue:
                line.value = said
            self._settle_controls()
            target = self._focus_after(button)
            self.focused = button if target is None else target
            if target is not None:
                target.focus()

    def _focus_after(self, pressed: W.Button) -> W.Widget | None:
        """The control to move the focus to after ``pressed`` ran, or None when ``pressed``
        keeps it. By default it keeps it while it is open; once the press closed it (a worker's
        claim closes its claim button), the focus moves to the next open button of the panel,
        in the order the panel shows them. A panel that swaps its controls overrides this."""
        if not pressed.disabled:
            return None
        buttons = [w for w in _walk(self.widget) if isinstance(w, W.Button)]
        at = buttons.index(pressed) if pressed in buttons else 0
        order = buttons[at + 1:] + buttons[:at]
        return next((b for b in order if not b.disabled and b.layout.display != "none"), None)

    def _settle_controls(self) -> None:
        """Set each control's enabled state as the panel's state asks, after a press (a panel
        that disables controls by its state overrides this)."""

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
