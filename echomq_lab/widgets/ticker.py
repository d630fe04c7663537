"""Ticker: a clock that ticks in the browser (an ipywidgets ``Play``: each tick reaches the
kernel as a change of ``value``), so a panel redraws while time passes with no kernel thread.
The ``Play`` itself is hidden (its icon-only buttons have no names a screen reader could say);
the reader pauses and resumes it with a button that says what it does, beside a status that
says in words whether the clock is running or paused.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W  # type: ignore[import-untyped]

#: The status beside the button, by state.
RUNNING, PAUSED, IDLE = "live clock: running", "live clock: paused", "live clock: idle"


class Ticker:
    """Calls ``on_tick`` every 250 ms while it plays; ``on_tick`` returns False to stop it.
    ``widget`` shows the clock's status and its pause/resume ``button``; ``play`` is the
    (hidden) ``Play`` whose front-end timer drives the ticks."""

    def __init__(self, on_tick: Callable[[], bool]) -> None:
        self.on_tick = on_tick
        self.ticks = 0
        self.play = W.Play(value=0, min=0, max=2**31 - 1, step=1, interval=250,
                           show_repeat=False, description="live clock",
                           tooltip="the live clock", layout=W.Layout(display="none"))
        self.play.observe(lambda _change: self.tick(), names="value")
        self.play.observe(lambda _change: self._show(), names="playing")
        self.status = W.HTML(IDLE)
        self.status.add_class("emq-clock-status")
        self.button = W.Button(description="pause the clock", disabled=True,
                               tooltip="pause or resume the live clock",
                               layout=W.Layout(width="auto"))
        self.button.on_click(lambda _button: self.toggle())
        self._stopped = True
        self.widget = W.HBox([self.status, self.button, self.play],
                             layout=W.Layout(align_items="center", margin="0 0 0 8px"))
        self.widget.add_class("emq-ticker")

    @property
    def running(self) -> bool:
        """True while the front end is asked to tick."""
        return bool(self.play.playing)

    @property
    def paused(self) -> bool:
        """True when the reader paused a clock that still has something to watch."""
        return not self.running and not self._stopped

    def start(self) -> None:
        """Ask the front end to tick (again). It starts its timer only when ``playing`` turns
        from false to true in a view, so both values are sent."""
        self._stopped = False
        self.play.playing = False
        self.play.playing = True

    def toggle(self) -> None:
        """Pause a running clock, or resume a paused one."""
        if self.running:
            self.play.playing = False
        elif not self._stopped:
            self.start()
        self._show()

    def tick(self) -> bool:
        """One tick (the front end's, or one by hand); stops when ``on_tick`` returns False."""
        self.ticks += 1
        keep = self.on_tick()
        if not keep:
            self._stopped = True
            self.play.playing = False
        self._show()
        return keep

    def _show(self) -> None:
        """Say the clock's state, and offer what the button would do now."""
        self.status.value = RUNNING if self.running else PAUSED if self.paused else IDLE
        self.button.description = "resume the clock" if self.paused else "pause the clock"
        self.button.disabled = self._stopped
