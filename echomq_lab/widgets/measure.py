"""MeasurePanel: measure now, on the lab's own server. One transition, one round trip.

``run()`` (or the button, in a background thread) times job cycles (enqueue, claim, complete) on
a queue of its own, counting each call's requests, then walks one job through every transition.
python-rq's figures are the benchmark's (the page lab-one-round-trip reads them), not measured
here.
"""

from __future__ import annotations

import html
import threading

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import measure
from echomq_lab.connection import describe
from echomq_lab.measure import Traced, calls_text, transition_calls
from echomq_lab.widgets.base import Panel

#: Long lines wrap at a space (JupyterLab's output area would break them inside a word).
WRAP = "white-space:pre-wrap;word-break:normal;overflow-wrap:normal"


class MeasurePanel(Panel):
    """A jobs slider, a "measure now" button with a progress bar, and what was measured:
    ``cycle`` (measure.Cycle) and ``walk`` (one Traced each)."""

    def __init__(self, conn: redis.Redis, queue: str = "lab-06-measure", *,
                 jobs: int = 300) -> None:
        self.conn, self.queue = conn, queue
        self.cycle: measure.Cycle | None = None
        self.walk: list[Traced] = []
        self._thread: threading.Thread | None = None
        self.jobs = W.IntSlider(value=jobs, min=30, max=3000, step=30, description="job cycles",
                                continuous_update=False,
                                tooltip="How many enqueue + claim + complete cycles to time")
        button = W.Button(description="measure now", icon="tachometer", button_style="primary",
                          tooltip="Time the job cycles on the lab's server and count every "
                                  "request each transition sends")
        button.on_click(lambda _b: self.run(wait=False))
        self.buttons = {"measure": button}
        self.progress = W.FloatProgress(value=0.0, min=0.0, max=1.0, description="done",
                                        tooltip="How much of the measurement has run")
        self.status, self.result = W.HTML(), W.HTML()
        self.widget = W.VBox([
            W.HTML(f"<b>Measure now</b> on {html.escape(describe(conn))}"),
            W.HBox([self.jobs, button, self.progress]), self.status, self.result,
        ])  # fmt: skip
        self.widget.add_class("emq-measure")
        self._say(self.status, "not measured yet", ok=None)

    @property
    def running(self) -> bool:
        """True while a measurement is going."""
        return self._thread is not None and self._thread.is_alive()

    def run(self, wait: bool = True) -> measure.Cycle | None:
        """Measure; with ``wait``, block until done and return the cycle's figures."""
        if self.running:
            self._say(self.status, "a measurement is already going: wait for it", ok=False)
            return None
        self.cycle, self.walk = None, []
        self.progress.value, self.result.value = 0.0, ""
        self.buttons["measure"].disabled = True
        self._say(self.status, f"measuring {self.jobs.value} job cycles…", ok=None)
        self._thread = threading.Thread(target=self._body, args=(self.jobs.value,), daemon=True)
        self._thread.start()
        if wait:
            self._thread.join()
        return self.cycle if wait else None

    def _measure(self, n: int) -> None:
        """The job cycles fill the bar to 0.9; the walk, the rest."""
        def moved(done: int) -> None:
            self.progress.value = 0.9 * min(done, n) / n

        self.cycle = measure.job_cycles(self.conn, self.queue, n, moved)
        self.walk = transition_calls(self.conn, self.queue)

    def _body(self, n: int) -> None:
        ran, _ = self._attempt(None, lambda: self._measure(n))
        self.progress.value = 1.0
        self.buttons["measure"].disabled = False
        if not ran or (c := self.cycle) is None:
            self._say(self.status, f"the measurement stopped: {self.last_message}", ok=False)
        else:
            self._say(self.status, f"{c.jobs} job cycles in {c.seconds:.2f} s: "
                      f"{c.jobs_per_s:,.0f} jobs per second on one connection", ok=True)
        self.result.value = f"<pre style='{WRAP}'>{html.escape(self.counts_text())}</pre>"

    def counts_text(self) -> str:
        """The requests each transition sent: what does not vary from run to run."""
        if self.cycle is None:
            return ""
        c = self.cycle
        evalsha = all(calls == ("EVALSHA",) for calls in c.per_transition.values())
        lines = [f"{name + ':':<12}{calls_text(c.per_transition[name])}" for name in measure.CYCLE]
        lines.append(f"{'per job:':<12}{c.requests_per_job:g} requests, "
                     f"{'every one an EVALSHA' if evalsha else 'not all EVALSHA'}")
        if self.walk:
            lines += ["", "every transition, once:"]
            lines += [f"  {t.name + ':':<22}{calls_text(t.calls)}" for t in self.walk]
        return "\n".join(lines)

    def text(self) -> str:
        """The status line and, once measured, the requests per transition."""
        if self.cycle is None:
            return self.last_message
        return f"{self.last_message}\n{self.counts_text()}"
