"""Ticker: a clock that runs in the browser and redraws a panel while time passes.

The beat comes from an ipywidgets ``Play`` widget: its timer runs in the front end and each
tick changes ``value``, which reaches the kernel as an ordinary widget message. No thread is
started in the kernel, so it also runs in Voilà and in kernels that have none. What a tick
shows is always read from the server (its ``TIME``), never from the browser's clock.

API (for panels)::

    ticker = Ticker(on_tick)     # on_tick() -> bool: True to keep ticking, False to stop
    ticker.widget                # "live clock" and the Play control (the reader may pause it)
    ticker.play                  # the Play widget itself
    ticker.start()               # start (again) after an action that put a lease on screen
    ticker.tick()                # one tick by hand (tests, and kernels with no front end)

The front end only starts its timer when ``playing`` turns from false to true in a view that
already exists, so :meth:`start` always sends that change.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W  # type: ignore[import-untyped]

#: How often the front end ticks, in ms.
INTERVAL_MS = 250
#: The Play widget's last value; at 250 ms a tick it lasts about seventeen years.
_MAX = 2**31 - 1


class Ticker:
    """A front-end timer that calls ``on_tick`` on each tick while it plays."""

    def __init__(self, on_tick: Callable[[], bool], *, interval_ms: int = INTERVAL_MS) -> None:
        self.on_tick = on_tick
        self.ticks = 0
        self.play = W.Play(value=0, min=0, max=_MAX, step=1, interval=interval_ms,
                           show_repeat=False, description="live clock",
                           tooltip="the live clock: pause it to freeze the drawing",
                           layout=W.Layout(width="auto"))
        self.play.observe(self._on_value, names="value")
        self.widget = W.HBox([W.HTML("live clock"), self.play],
                             layout=W.Layout(align_items="center", margin="0 0 0 8px"))
        self.widget.add_class("emq-ticker")

    @property
    def running(self) -> bool:
        """True while the front end is asked to tick."""
        return bool(self.play.playing)

    def start(self) -> None:
        """Ask the front end to tick (again): ``playing`` is sent as false, then true."""
        self.play.playing = False
        self.play.playing = True

    def stop(self) -> None:
        """Stop ticking until the next :meth:`start`."""
        self.play.playing = False

    def tick(self) -> bool:
        """Run one tick; stop when ``on_tick`` says there is nothing left to watch."""
        self.ticks += 1
        keep = self.on_tick()
        if not keep and self.running:
            self.stop()
        return keep

    def _on_value(self, _change: object) -> None:
        self.tick()
