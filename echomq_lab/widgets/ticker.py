"""Ticker: a clock that ticks in the browser (an ipywidgets ``Play``: each tick reaches the
kernel as a change of ``value``), so a panel redraws while time passes with no kernel thread.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W  # type: ignore[import-untyped]


class Ticker:
    """Calls ``on_tick`` every 250 ms while it plays; ``on_tick`` returns False to stop it.
    ``widget`` shows the clock (the reader may pause it); ``play`` is its ``Play``."""

    def __init__(self, on_tick: Callable[[], bool]) -> None:
        self.on_tick = on_tick
        self.ticks = 0
        self.play = W.Play(value=0, min=0, max=2**31 - 1, step=1, interval=250,
                           show_repeat=False, description="live clock",
                           tooltip="the live clock: pause it to freeze the drawing",
                           layout=W.Layout(width="auto"))
        self.play.observe(lambda _change: self.tick(), names="value")
        self.widget = W.HBox([W.HTML("live clock"), self.play],
                             layout=W.Layout(align_items="center", margin="0 0 0 8px"))
        self.widget.add_class("emq-ticker")

    @property
    def running(self) -> bool:
        """True while the front end is asked to tick."""
        return bool(self.play.playing)

    def start(self) -> None:
        """Ask the front end to tick (again). It starts its timer only when ``playing`` turns
        from false to true in a view, so both values are sent."""
        self.play.playing = False
        self.play.playing = True

    def tick(self) -> bool:
        """One tick (the front end's, or one by hand); stops when ``on_tick`` returns False."""
        self.ticks += 1
        keep = self.on_tick()
        if not keep:
            self.play.playing = False
        return keep
