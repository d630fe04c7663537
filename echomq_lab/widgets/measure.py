"""MeasurePanel: measure now, on the lab's own server. One transition, one round trip.

``run()`` (or the button, in a background thread) times job cycles (enqueue, claim, complete)
on a queue of its own, counting each call's requests (:func:`echomq_lab.measure.counting`), walks
one job through every transition, and runs python-rq on the same server when it is installed.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import measure
from echomq_lab.connection import describe
from echomq_lab.measure import Traced, calls_text, transition_calls
from echomq_lab.widgets.base import Panel

#: python-rq runs this share of the job cycles: it is many times slower per job.
RQ_SHARE = 3
#: Long lines wrap at a space (JupyterLab's output area would break them inside a word).
WRAP = "white-space:pre-wrap;word-break:normal;overflow-wrap:normal"


class MeasurePanel(Panel):
    """A jobs slider, a "measure now" button with a progress bar, and what was measured:
    ``cycle`` (measure.Cycle), ``rq`` (measure.RqCost or None), ``walk`` (one Traced each)."""

    def __init__(self, conn: redis.Redis, queue: str = "lab-06-measure", *, jobs: int = 300,
                 with_rq: bool = True) -> None:
        self.conn, self.queue, self.with_rq = conn, queue, with_rq
        self.cycle: measure.Cycle | None = None
        self.rq: measure.RqCost | None = None
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
        self.cycle, self.rq, self.walk = None, None, []
        self.progress.value, self.result.value = 0.0, ""
        self.buttons["measure"].disabled = True
        self._say(self.status, f"measuring {self.jobs.value} job cycles…", ok=None)
        self._thread = threading.Thread(target=self._body, args=(self.jobs.value,), daemon=True)
        self._thread.start()
        if wait:
            self._thread.join()
        return self.cycle if wait else None

    def _stage(self, low: float, high: float, total: int) -> Callable[[int], None]:
        """A progress callback that fills the bar from ``low`` to ``high`` over ``total``."""
        def moved(done: int) -> None:
            self.progress.value = low + (high - low) * min(done, total) / total
        return moved

    def _measure(self, n: int, rq_share: float) -> None:
        self.cycle = measure.job_cycles(self.conn, self.queue, n,
                                        self._stage(0.0, 0.6 - rq_share / 2, n))
        self.walk = transition_calls(self.conn, self.queue)
        self.progress.value = 1.0 - rq_share
        if rq_share:
            k = max(10, n // RQ_SHARE)
            self.rq = measure.rq_cycles(self.conn, k, self._stage(1.0 - rq_share, 1.0, k))

    def _body(self, n: int) -> None:
        rq_share = 0.3 if self.with_rq and measure.rq_version() else 0.0
        ran, _ = self._attempt(None, lambda: self._measure(n, rq_share))
        self.progress.value = 1.0
        self.buttons["measure"].disabled = False
        if not ran or (c := self.cycle) is None:
            self._say(self.status, f"the measurement stopped: {self.last_message}", ok=False)
        else:
            self._say(self.status, f"{c.jobs} job cycles in {c.seconds:.2f} s: "
                      f"{c.jobs_per_s:,.0f} jobs per second on one connection", ok=True)
        self.result.value = f"<pre style='{WRAP}'>" + html.escape(
            self.counts_text() + "\n\n" + self.rq_text()) + "</pre>"

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

    def rq_text(self) -> str:
        """What python-rq spent per job on the same server, or why it was not measured."""
        if not self.with_rq:
            return "python-rq: not measured (with_rq=False)"
        if self.rq is None:
            if measure.rq_version() is None:
                return "python-rq: not installed here (pip install rq to compare)"
            return "python-rq: not measured"
        r = self.rq
        top = ", ".join(f"{name} {per:.1f}" for name, per in r.busiest[:5])
        return (f"python-rq {r.version}: {r.jobs} no-op jobs, {r.requests_per_job:.1f} requests "
                f"per job ({r.jobs_per_s:,.0f} jobs per second)\n  most sent: {top}")

    def text(self) -> str:
        """The status line, the requests per transition, and python-rq's cost per job."""
        parts = [self.last_message]
        if self.cycle is not None:
            parts += [self.counts_text(), self.rq_text()]
        return "\n".join(parts)
