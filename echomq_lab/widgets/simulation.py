"""SimulationPanel: set up a run of the fence under load, press Run, read it as it comes in:
finished jobs, a tally of the server's answers, then the verdicts, and a timeline of the leases
of the worker or job ``follow`` names, inside the window ``window`` (its start) and ``length``
set. ``run(wait=True)`` is the Run button waiting for the end.

Where the run's actors take turns in one loop (the embedded server, or no threads at all, as in
the browser) Run works through the run before it returns, the bar and the tally moving as it
goes; with a real server it runs in a thread beside the page and Stop can end it early. The
timeline is SVG: nothing to install.
"""

from __future__ import annotations

import html
import threading
import time
from typing import Any

import ipywidgets as W  # type: ignore[import-untyped]

from echomq_lab.sim import Lease, Result, Settings, Simulation, charts
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.look import one_line

#: How often (s) the panel reads the run's progress while it goes.
POLL_S = 0.1
#: Why Stop is greyed, said beside it: while nothing runs, and while a run takes its turns here.
STOP_IDLE = "Stop works while a run goes on a real server."
STOP_IN_TURN = ("Stop is greyed: on the embedded server the run takes its turns inside this "
                "page and ends on its own in a moment.")
#: The window (s) a worker's timeline opens with: a few leases, not the whole run.
WORKER_WINDOW_S = 0.5


def _slider(kind: Any, value: Any, low: Any, high: Any, step: Any, label: str, tip: str) -> Any:
    return kind(value=value, min=low, max=high, step=step, description=label,
                tooltip=tip, continuous_update=False,
                style={"description_width": "110px"}, layout=W.Layout(width="420px"))


class SimulationPanel(Panel):
    """Inputs for a run, a Run button with a progress bar, the verdicts, a lease timeline."""

    def __init__(self, url: str | None = None, *, jobs: int = 40, workers: int = 4,
                 stall: float = 0.25, fail: float = 0.1, lease_ms: tuple[int, int] = (40, 80),
                 seed: int = 5, fence: bool = True, runner: str = "auto") -> None:
        self.url, self.seed, self.runner = url, seed, runner
        self.result: Result | None = None
        self._leases: list[Lease] = []
        self._quiet, self.error = False, ""  # _quiet: no redraw while the window is set
        self._sim: Simulation | None = None
        self._thread: threading.Thread | None = None
        self._ticked = 0.0
        self.jobs = _slider(W.IntSlider, jobs, 1, 500, 1, "jobs", "How many jobs to enqueue")
        self.workers = _slider(W.IntSlider, workers, 1, 16, 1, "workers",
                               "How many workers claim and settle jobs at once")
        self.stall = _slider(W.FloatSlider, stall, 0.0, 1.0, 0.05, "stall chance",
                             "The chance a worker stalls past its lease on a job")
        self.fail = _slider(W.FloatSlider, fail, 0.0, 1.0, 0.05, "failure chance",
                            "The chance the work fails and the worker retries the job")
        self.lease = _slider(W.IntRangeSlider, lease_ms, 5, 1000, 5, "lease (ms)",
                             "Each claim takes a lease between these lengths, in ms")
        self.fence = W.Checkbox(value=fence, indent=False,
                                description="the fence (unticked: a complete without it, "
                                            "shown only as a demonstration)",
                                layout=W.Layout(width="auto"),
                                tooltip="On: every complete is checked against the token and "
                                        "the lease. Off: the workers complete through a copy "
                                        "of complete without those checks")
        run = W.Button(description="Run", icon="play", button_style="primary",
                       tooltip="Start a run with these settings on a fresh queue")
        stop = W.Button(description="Stop", icon="stop", disabled=True,
                        tooltip="Stop the run early; the audit then reports what was left")
        run.on_click(lambda _b: self.run(wait=False))
        stop.on_click(lambda _b: self.stop())
        self.buttons = {"run": run, "stop": stop}
        self.progress = W.IntProgress(value=0, min=0, max=jobs, description="finished",
                                      tooltip="Jobs completed or dead so far")
        #: Why Stop is greyed, in words (a greyed button says nothing by itself).
        self.stop_note = W.HTML(STOP_IDLE)
        self.status, self.tally, self.verdicts, self.story = W.HTML(), W.HTML(), W.HTML(), W.HTML()
        self.follow = W.Dropdown(options=[("(run first)", "")], value="", description="follow",
                                 tooltip="A job or a worker whose leases the timeline draws",
                                 layout=W.Layout(width="420px"))
        self.window = W.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.01, readout_format=".2f",
                                    description="from (s)", continuous_update=False,
                                    tooltip="Where the window starts, in seconds of the run")
        self.length = W.BoundedFloatText(value=0.5, min=0.01, max=600.0, step=0.1,
                                         description="for (s)", layout=W.Layout(width="180px"),
                                         tooltip="How many seconds the window shows")
        for box in (self.window, self.length):
            box.observe(lambda _c: self.draw(), names="value")
        self.follow.observe(lambda _c: self._followed(), names="value")
        self.picture = W.HTML(layout=W.Layout(max_width="100%"))  # the timeline, as SVG
        self.widget = W.VBox([
            W.HTML("<b>The fence under load</b>: set the run, press Run."),
            self.jobs, self.workers, self.stall, self.fail, self.lease, self.fence,
            W.HBox([run, stop, self.progress, self.stop_note],
                   layout=W.Layout(flex_flow="row wrap", align_items="center")),
            self.status, self.tally, self.verdicts,
            W.HBox([self.follow, self.window, self.length]), self.picture, self.story,
        ])  # fmt: skip
        self.widget.add_class("emq-simulation")
        self._say(self.status, "not run yet", None)

    def settings(self) -> Settings:
        """The run the inputs describe (checked: out of range raises ValueError)."""
        low, high = self.lease.value
        made = Settings(jobs=int(self.jobs.value), workers=int(self.workers.value),
                        stall=float(self.stall.value), fail=float(self.fail.value),
                        lease_ms=(int(low), int(high)), seed=self.seed,
                        fence=bool(self.fence.value), runner=self.runner)
        made.check()
        return made

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self, wait: bool = True) -> Result | None:
        """Start a run with the inputs' settings; with ``wait``, block until it ends and return
        its result. A second run while one goes is refused on the status line."""
        if self.running:
            self._say(self.status, "a run is already going: wait for it, or press Stop", False)
            return None
        _, sim = self._attempt(self.status, lambda: Simulation(self.settings(), url=self.url))
        if not isinstance(sim, Simulation):
            return None
        self._sim, self.result, self.error, self._leases = sim, None, "", []
        self.progress.max, self.progress.value = sim.settings.jobs, 0
        self.verdicts.value = self.story.value = ""
        self.picture.value = ""
        self.follow.options = [("(running)", "")]
        self.buttons["run"].disabled, self.buttons["stop"].disabled = True, False
        self._say(self.status, f"running {sim.settings.jobs} jobs on {sim.backend}", None)
        if not sim.threaded:  # taken in turn here: the bar moves at each look at the progress
            self.buttons["stop"].disabled = True
            self.stop_note.value = STOP_IN_TURN
            sim.on_turn = self._throttled_tick
            self._body(sim)
            self._watch()
            return self.result
        self.stop_note.value = ""
        self._thread = threading.Thread(target=self._body, args=(sim,), daemon=True)
        self._thread.start()
        if not wait:
            threading.Thread(target=self._watch, daemon=True).start()
            return None
        self._watch()
        return self.result

    def _throttled_tick(self) -> None:
        """:meth:`_tick`, at most once per :data:`POLL_S` of the host's clock."""
        now = time.monotonic()
        if now - self._ticked >= POLL_S:
            self._ticked = now
            self._tick()

    def _body(self, sim: Simulation) -> None:
        try:
            self.result = sim.run()
        except Exception as exc:  # noqa: BLE001 - shown on the status line, never a traceback
            self.error = one_line(exc)

    def _watch(self) -> None:
        """Update the progress and the tally until the run ends, then show what it found."""
        while self.running:
            self._tick()
            time.sleep(POLL_S)
        if self._thread is not None:
            self._thread.join()
        self.buttons["run"].disabled, self.buttons["stop"].disabled = False, True
        self.stop_note.value = STOP_IDLE
        self._attempt(self.status, self._finish)

    def _tick(self) -> None:
        if self._sim is not None:
            self.progress.value = min(self._sim.finished, self.progress.max)
            counts = charts.tally(list(self._sim.ledger.calls))
            self.tally.value = html.escape(charts.tally_text(counts))

    def stop(self) -> None:
        if self._sim is not None and self.running:
            self._sim.stop()

    def _finish(self) -> None:
        self._tick()
        r = self.result
        if r is None:
            self._say(self.status, f"the run did not finish: {self.error or 'stopped'}", False)
            return
        held = all(r.verdicts.values())
        sent = charts.tally(list(self._sim.ledger.calls)).get("dead", 0) if self._sim else 0
        said = (f"done: {r.completed} completed, {r.dead} still dead at the end, {r.refusals} "
                f"settles turned away, in {r.elapsed_s:.2f} s; "
                f"{'every verdict holds' if held else 'a verdict failed'}")
        if sent > r.dead:  # the tally counts retries that answered dead
            said += (f"; {sent - r.dead} of the {sent} sent to dead were deleted afterwards by "
                     "a late complete")
        if not r.settings.fence:
            said += (f"; without the fence, {r.stale_completes_accepted} stale completes were "
                     f"accepted and {r.settled_after_lease_lost} jobs were settled by a worker "
                     "that had lost its lease")
        self._say(self.status, said, held)
        self.verdicts.value = charts.verdicts_html(r.verdicts)
        self._leases = r.leases()
        options = charts.followable(self._leases)
        self.follow.options = options or [("(no lease)", "")]
        self.follow.value = options[0][1] if options else ""

    def leases(self) -> list[Lease]:
        """Every lease of the last run (empty before one ends)."""
        return list(self._leases)

    def _followed(self) -> None:
        key = self.follow.value
        if not key or self.result is None:
            return
        start, end = charts.window_of(self.leases(), key, WORKER_WINDOW_S)
        self._quiet = True
        try:
            self.window.max = max(charts.span(self.leases())[1], 0.01)
            self.window.value = min(start, self.window.max)
            self.length.value = round(end - start, 3)
        finally:
            self._quiet = False
        self.draw()

    def current_window(self) -> charts.Window:
        return (self.window.value, self.window.value + self.length.value)

    def draw(self) -> None:
        """Draw the followed worker's or job's leases in the window, and tell them in words."""
        if self.follow.value and self.result is not None and not self._quiet:
            self._attempt(self.status, self._draw)

    def _draw(self) -> None:
        key, window = self.follow.value, self.current_window()
        self.picture.value = charts.lease_timeline_svg(
            charts.pick(self.leases(), key, window), window,
            title=f"{key.replace(':', ' ')}: its leases in the window")
        lines = charts.describe(self.leases(), key, window)
        self.story.value = "<pre>" + html.escape("\n".join(lines)) + "</pre>"

    def text(self) -> str:
        """The settings, the status, the verdicts and what the timeline follows, as text."""
        low, high = self.lease.value
        lines = [f"jobs {self.jobs.value}, workers {self.workers.value}, stall chance "
                 f"{self.stall.value:.2f}, failure chance {self.fail.value:.2f}, lease "
                 f"{low}-{high} ms, fence {'on' if self.fence.value else 'off'}"]
        r = self.result
        if r is None:
            return "\n".join([*lines, self.last_message])
        lines.append(f"finished {r.completed + r.dead} of {r.jobs} jobs")
        lines += [f"{'ok' if ok else 'NO'}  {name}" for name, ok in r.verdicts.items()]
        if self.follow.value:
            lines.append(f"following {self.follow.value.replace(':', ' ')}")
        return "\n".join(lines)
