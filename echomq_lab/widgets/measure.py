"""MeasurePanel: measure now, on the lab's own server. One transition, one round trip.

API (for pages)::

    m = MeasurePanel(conn)                  # the lab's connection; nothing runs yet
    m.jobs.value = 300                      # how many job cycles (and rq jobs: a third)
    m.run(wait=True)                        # the "measure now" button, waiting for the end
    m.buttons["measure"].click()            # the button: measures in a background thread
    m.cycle, m.rq, m.walk                   # measure.Cycle, measure.RqCost | None,
                                            # measure.Traced per transition
    m.text()                                # the counts (stable) and the rates (they vary)
    m.counts_text()                         # only what does not vary: requests per transition

The panel runs a few hundred job cycles (``jobs.enqueue``, ``jobs.claim``, ``jobs.complete``)
on a queue of its own, counting each call's requests with the lab's one request counter
(:func:`echomq_lab.measure.counting`, which counts only the requests of the panel's own thread),
walks one job through every transition, and, when python-rq is installed, runs python-rq's
enqueue and worker on the same server.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import measure
from echomq_lab import theme as style
from echomq_lab.connection import describe
from echomq_lab.measure import Traced, calls_text, transition_calls
from echomq_lab.theme import message_html
from echomq_lab.widgets.base import Panel

#: python-rq runs this share of the job cycles: it is many times slower per job.
RQ_SHARE = 3
#: A long line of the result wraps at a space: JupyterLab's output area would break it
#: anywhere, even inside a word ("python-r" / "q").
WRAP = "white-space:pre-wrap;word-break:normal;overflow-wrap:normal"


class MeasurePanel(Panel):
    """A jobs slider, a "measure now" button with a progress bar, and what was measured."""

    def __init__(self, conn: redis.Redis, queue: str = "lab-06-measure", *, jobs: int = 300,
                 with_rq: bool = True) -> None:
        self.conn, self.queue, self.with_rq = conn, queue, with_rq
        self.cycle: measure.Cycle | None = None
        self.rq: measure.RqCost | None = None
        self.walk: list[Traced] = []
        self.error = ""
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
        self.status = W.HTML()
        self.result = W.HTML()
        self.widget = W.VBox([
            W.HTML(f"<b>Measure now</b> on {html.escape(describe(conn))}"),
            W.HBox([self.jobs, button, self.progress]), self.status, self.result,
        ])  # fmt: skip
        self.widget.add_class("emq-measure")
        self._show_status("not measured yet")

    @property
    def running(self) -> bool:
        """True while a measurement is going."""
        return self._thread is not None and self._thread.is_alive()

    def run(self, wait: bool = True) -> measure.Cycle | None:
        """Measure; with ``wait``, block until done and return the cycle's figures."""
        if self.running:
            self._show_status("a measurement is already going: wait for it", ok=False)
            return None
        self.cycle, self.rq, self.walk, self.error = None, None, [], ""
        self.progress.value, self.result.value = 0.0, ""
        self.buttons["measure"].disabled = True
        self._show_status(f"measuring {self.jobs.value} job cycles…")
        self._thread = threading.Thread(target=self._body, args=(int(self.jobs.value),),
                                        daemon=True)
        self._thread.start()
        if wait:
            self._thread.join()
        return self.cycle if wait else None

    def _stage(self, low: float, high: float, total: int) -> Callable[[int], None]:
        """A progress callback that fills the bar from ``low`` to ``high`` over ``total``."""
        def moved(done: int) -> None:
            self.progress.value = low + (high - low) * min(done, total) / total
        return moved

    def _body(self, n: int) -> None:
        rq_share = 0.3 if self.with_rq and measure.rq_version() else 0.0
        try:
            self.cycle = measure.job_cycles(self.conn, self.queue, n,
                                            self._stage(0.0, 0.6 - rq_share / 2, n))
            self.walk = transition_calls(self.conn, self.queue)
            self.progress.value = 1.0 - rq_share
            if rq_share:
                k = max(10, n // RQ_SHARE)
                self.rq = measure.rq_cycles(self.conn, k, self._stage(1.0 - rq_share, 1.0, k))
        except Exception as exc:  # noqa: BLE001 - shown on the status line, never a traceback
            self.error = style.one_line(exc)
        self.progress.value = 1.0
        self.buttons["measure"].disabled = False
        if self.cycle is None or self.error:
            self._show_status(f"the measurement stopped: {self.error}", ok=False)
        else:
            self._show_status(self.rate_line(), ok=True)
        self.result.value = f"<pre style='{WRAP}'>" + html.escape(
            self.counts_text() + "\n\n" + self.rq_text()) + "</pre>"

    def rate_line(self) -> str:
        """How fast the job cycles ran, in words (it varies from run to run)."""
        if self.cycle is None:
            return "not measured yet"
        c = self.cycle
        return (f"{c.jobs} job cycles in {c.seconds:.2f} s: {c.jobs_per_s:,.0f} jobs per second "
                f"on one connection")

    def counts_text(self) -> str:
        """The requests each transition sent: what does not vary from run to run."""
        if self.cycle is None:
            return ""
        c = self.cycle
        lines = [f"{name + ':':<12}{calls_text(c.per_transition[name])}" for name in measure.CYCLE]
        lines.append(f"{'per job:':<12}{c.requests_per_job:g} requests, "
                     f"{'every one an EVALSHA' if self._all_evalsha() else 'not all EVALSHA'}")
        if self.walk:
            lines += ["", "every transition, once:"]
            lines += [f"  {t.name + ':':<22}{calls_text(t.calls)}" for t in self.walk]
        return "\n".join(lines)

    def _all_evalsha(self) -> bool:
        per = self.cycle.per_transition if self.cycle else {}
        return all(calls == ("EVALSHA",) for calls in per.values())

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

    def _show_status(self, text: str, ok: bool | None = None) -> None:
        self.last_message, self.last_ok = text, ok is not False
        self.status.value = message_html(text, ok)

    def text(self) -> str:
        """The status line, the requests per transition, and python-rq's cost per job."""
        parts = [self.last_message]
        if self.cycle is not None:
            parts += [self.counts_text(), self.rq_text()]
        return "\n".join(parts)
