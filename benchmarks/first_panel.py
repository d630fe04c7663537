"""Time from opening the URL to the first live panel, three ways in; what the tab spent on it;
how soon the site comes back; and the site's size.

``python -m benchmarks.first_panel [--repeats N] [--busy] [--out PATH]`` measures, on this
machine, in headless Chromium, in one run:

* **site**: ``site/`` (``make site``) served from loopback, page 02 opened in JupyterLite with
  nothing pressed, in a fresh browser context (nothing cached): the page starts Python in the
  tab and runs itself;
* **app**: ``make app``'s Voila, already started: ``/voila/render/02-...`` opened, Voila runs
  the page;
* **lab**: ``make lab``'s JupyterLab, already started: page 02 opened, then Run All (the one
  way in that needs a press).

The clock runs from ``goto`` until the first panel is live: the two-workers story's "A claims"
is pressed as soon as it can be, and the clock stops when the panel answers ("A holds token 1").
For the site it also reads when each stage of the start was reached (``window.emqLab.times``,
set by tools/site/autorun.js; ``words_shown``: the page's stored words on screen, from
tools/site/reader.html).

**Processor time** (:mod:`benchmarks.processor`): for every open, the seconds the browser's
processes spent until the answer, by part (the page's thread, the Python worker, compiling in
the background, the rest); for the app also its server's (Voila and the page's kernel). **Return
visits**: after each first open of the site, in the same context, the page reloaded, the next
page of the module opened (live when its own run has drawn its panels), and the page reloaded
with the network off; each against the first open. ``--busy`` keeps one core busy with another
program for the whole run, as a classroom laptop is.

It sizes ``site/`` by what takes the room. The figures go to ``results/first-panel.json`` (or
``results/first-panel-busy.json``), with the earlier runs' figures and loads, the quietest and
the most loaded named, and are printed. Goals: the site's first live panel within 1.2 times the
app's in the same run (1.5 with a core kept busy); a return visit within 0.5 times the first
open; the tab's processor time at most the app's (browser and server); the site at most 50 MB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.processor import CHROMIUM_THREADS, spent, tree_seconds
from benchmarks.results import publish
from echomq_lab.servers import free_port
from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tools.browser import (
    VIEWPORT,
    chromium_path,
    find_button,
    jupyter_env,
    jupyter_lab,
    launch_chromium,
    menu,
    serve_folder,
    serving,
    wait_until_kept,
)

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
PAGE = "02-the-state-and-attempts.ipynb"
DEFAULT_OUT = ROOT / "results" / "first-panel.json"
BUSY_OUT = ROOT / "results" / "first-panel-busy.json"
#: The panel pressed, and what it says once the press reached the page's Python and came back.
STORY = ".emq-two-workers"
ANSWER = "A holds token 1"
#: The bar's link to the next page of the module (tools/site/reader.html).
NEXT_LINK = "#emq-bar a[aria-label^='Next page']"
WAIT_MS = 300_000
#: site / app, quiet and with a core kept busy; a return visit / the first open; site / 50 MB.
GOAL_RATIO, GOAL_BUSY_RATIO, GOAL_RETURN, GOAL_MB = 1.2, 1.5, 0.5, 50.0
#: The processor's parts (benchmarks.processor) that are the browser's, not a server's.
BROWSER_PARTS = (*CHROMIUM_THREADS.values(), "browser, the rest")
#: The Playwright driver, which is neither the tab nor the server.
DRIVER = "node"


@contextmanager
def served_app(tmp: Path) -> Iterator[str]:
    """``make app`` on a free port (started and answering before this yields)."""
    port = free_port()
    argv = ["make", "--no-print-directory", "app", f"APP_ARGS=--port={port} --no-browser"]
    with serving(argv, ROOT, jupyter_env(tmp), port, tmp / "app.log", timeout_s=300) as url:
        yield url


@contextmanager
def kept_busy(busy: bool) -> Iterator[frozenset[int]]:
    """With ``busy``, another program keeps one core busy until the block ends (its process
    id yielded, to leave out of the processor readings)."""
    if not busy:
        yield frozenset()
        return
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(3)  # the load average starts to show it
        yield frozenset({loop.pid})
    finally:
        loop.kill()
        loop.wait()


class Clock:
    """One open's seconds and processor time: :meth:`start` before ``goto``, :meth:`stop` once
    the answer shows (before the context closes, so the tab's threads are still there)."""

    def __init__(self, leave_out: frozenset[int]) -> None:
        self.leave_out = leave_out
        self.began = 0.0
        self.before: dict[tuple[int, str], tuple[str, float]] = {}

    def start(self) -> None:
        self.before = tree_seconds(os.getpid(), self.leave_out)
        self.began = time.monotonic()

    def stop(self) -> dict[str, Any]:
        took = time.monotonic() - self.began
        parts = spent(self.before, tree_seconds(os.getpid(), self.leave_out))
        tab = sum(v for k, v in parts.items() if k in BROWSER_PARTS)
        server = sum(v for k, v in parts.items() if k not in BROWSER_PARTS and k != DRIVER)
        return {"s": round(took, 2), "tab_cpu_s": round(tab, 2), "server_cpu_s": round(server, 2),
                "cpu_parts_s": parts}


def _answered(page: Any) -> None:
    """Press "A claims" as soon as it can be pressed, and wait for the panel's answer."""
    story = page.locator(STORY).first
    claim = find_button(story, BUTTON_LABELS["a_claims"])
    claim.and_(page.locator(":enabled")).wait_for(timeout=WAIT_MS)
    claim.click(timeout=WAIT_MS)
    story.get_by_text(ANSWER).first.wait_for(timeout=WAIT_MS)


def _site_live(page: Any) -> None:
    """Wait until the site's page has drawn its panels from its own run."""
    page.wait_for_function("() => window.emqLab && window.emqLab.times.live_shown",
                           timeout=WAIT_MS)


def _stages(page: Any) -> dict[str, float]:
    return page.evaluate(  # type: ignore[no-any-return]
        "() => window.emqLab ? {...window.emqLab.times, words_shown: window.emqWordsShown}"
        " : {}")


def _timed(browser: Any, url: str, after_open: Callable[[Any], None],
           leave_out: frozenset[int]) -> dict[str, Any]:
    """The first open of ``url`` in a fresh context: seconds and processor time until the
    first panel is live (``after_open`` first does what the way in needs pressed)."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    clock = Clock(leave_out)
    try:
        clock.start()
        page.goto(url, timeout=WAIT_MS)
        after_open(page)
        _answered(page)
        return {**clock.stop(), "stages": _stages(page)}
    finally:
        context.close()


def _site_visits(browser: Any, url: str, leave_out: frozenset[int]) -> dict[str, Any]:
    """The site's page opened in a fresh context (as :func:`_timed`), then, in that context:
    reloaded; the next page followed by the bar's link (live once its own run drew its
    panels); back on the page, reloaded with the network off. Each with its figures."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    clock = Clock(leave_out)
    visits: dict[str, Any] = {}
    try:
        clock.start()
        page.goto(url, timeout=WAIT_MS)
        _answered(page)
        visits["first"] = {**clock.stop(), "stages": _stages(page)}
        wait_until_kept(page, WAIT_MS / 1000)  # kept for offline reading
        clock.start()
        page.reload(timeout=WAIT_MS)
        _answered(page)
        visits["reload"] = {**clock.stop(), "stages": _stages(page)}
        clock.start()
        page.locator(NEXT_LINK).click(timeout=WAIT_MS)
        page.wait_for_url(lambda u: PAGE not in u, timeout=WAIT_MS)
        _site_live(page)
        visits["next_page"] = {**clock.stop(), "stages": _stages(page)}
        page.goto(url, timeout=WAIT_MS)
        _answered(page)
        context.set_offline(True)
        clock.start()
        page.reload(timeout=WAIT_MS)
        _answered(page)
        visits["offline_reload"] = {**clock.stop(), "stages": _stages(page)}
        return visits
    finally:
        context.set_offline(False)
        context.close()


def _run_all(page: Any) -> None:
    """Wait for the notebook and an idle kernel, then Run ▸ Run All Cells."""
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=WAIT_MS)
    page.get_by_text("| Idle").first.wait_for(timeout=WAIT_MS)
    menu(page, "Run", "runmenu:run-all")


def _nothing(page: Any) -> None:
    """The way in runs the page by itself: nothing to press."""


def site_size() -> dict[str, Any]:
    """The site's bytes: in all, by part, and its ten largest files."""
    files = [p for p in SITE.rglob("*") if p.is_file()]
    parts: dict[str, int] = {}
    for path in files:
        rel = path.relative_to(SITE)
        if rel.parts[:2] == ("static", "pyodide"):
            part = "Pyodide wheels" if path.suffix == ".whl" else "Pyodide runtime"
        else:
            part = rel.parts[0] if len(rel.parts) > 1 else "top-level files"
        parts[part] = parts.get(part, 0) + path.stat().st_size
    largest = sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:10]
    return {
        "total_mb": round(sum(parts.values()) / 1e6, 1),
        "files": len(files),
        "parts_mb": {k: round(v / 1e6, 1) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])},
        "largest_mb": {str(p.relative_to(SITE)): round(p.stat().st_size / 1e6, 2) for p in largest},
    }


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def _median_parts(runs: list[dict[str, Any]]) -> dict[str, float]:
    names = {name for run in runs for name in run["cpu_parts_s"]}
    medians = {n: _median([run["cpu_parts_s"].get(n, 0.0) for run in runs]) for n in names}
    return dict(sorted(medians.items(), key=lambda kv: -kv[1]))


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure of a way in's runs."""
    return {"s": _median([r["s"] for r in runs]),
            "tab_cpu_s": _median([r["tab_cpu_s"] for r in runs]),
            "server_cpu_s": _median([r["server_cpu_s"] for r in runs]),
            "cpu_parts_s": _median_parts(runs)}


def measure(repeats: int, busy: bool) -> dict[str, Any]:
    path, why = chromium_path()
    if path is None:
        raise SystemExit(f"no Chromium: {why}")
    if not (SITE / "lab" / "index.html").is_file():
        raise SystemExit("no site/: build it first with `make site`")
    runs: dict[str, list[dict[str, Any]]] = {"site": [], "app": [], "lab": []}
    returns: dict[str, list[dict[str, Any]]] = {"reload": [], "next_page": [],
                                                "offline_reload": []}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, launch_chromium(path) as browser, \
            kept_busy(busy) as leave_out:
        with serve_folder(SITE) as site, served_app(Path(tmp)) as app:
            for _ in range(repeats):  # the ways in, turn about, so that all meet the same load
                loads.append(os.getloadavg()[0])
                visits = _site_visits(browser, f"{site}/lab/index.html?path={PAGE}", leave_out)
                runs["site"].append(visits.pop("first"))
                for name, figures in visits.items():
                    returns[name].append(figures)
                runs["app"].append(_timed(browser, f"{app}/voila/render/{PAGE}", _nothing,
                                          leave_out))
        with jupyter_lab(ROOT / "notebooks", Path(tmp) / "lab") as lab:
            runs["lab"] = [_timed(browser, lab.notebook_url(PAGE, workspace=f"bench-{i}"),
                                  _run_all, leave_out) for i in range(repeats)]
    size = site_size()
    first = {k: _median([r["s"] for r in v]) for k, v in runs.items()}
    ratio = _median([s["s"] / a["s"] for s, a in zip(runs["site"], runs["app"], strict=True)])
    back = {name: _median([v["s"] / f["s"] for v, f in zip(visits, runs["site"], strict=True)])
            for name, visits in returns.items() if name != "next_page"}
    # the next page is live once its panels are drawn: held against the first open's same mark
    back["next_page"] = _median([v["stages"]["live_shown"] / f["stages"]["live_shown"]
                                 for v, f in zip(returns["next_page"], runs["site"], strict=True)])
    site_cpu = _median([r["tab_cpu_s"] for r in runs["site"]])
    app_cpu = _median([r["tab_cpu_s"] + r["server_cpu_s"] for r in runs["app"]])
    stages = [r["stages"] for r in runs["site"]]
    names = sorted({n for m in stages for n in m}, key=lambda n: statistics.median(
        m[n] for m in stages if n in m))
    goal_ratio = GOAL_BUSY_RATIO if busy else GOAL_RATIO
    return {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "one_core_kept_busy": busy,
        "loads_at_each_repeat": [round(x, 1) for x in loads],
        "page": PAGE,
        "first_live_panel_s": first,
        "site_to_app": ratio,
        "runs_s": {k: [r["s"] for r in v] for k, v in runs.items()},
        "processor_s": {k: _summary(v) for k, v in runs.items()},
        "site_tab_cpu_s": site_cpu,
        "app_browser_and_server_cpu_s": app_cpu,
        "return_to_first": back,
        "returns": {k: _summary(v) for k, v in returns.items()},
        "site_stages_s": {n: round(statistics.median(m[n] for m in stages if n in m), 2)
                          for n in names},
        "site": size,
        "goals": {
            f"site first live panel <= {goal_ratio:g} x make app's": ratio <= goal_ratio,
            f"a reload <= {GOAL_RETURN:g} x the first open": back["reload"] <= GOAL_RETURN,
            f"the next page <= {GOAL_RETURN:g} x the first open":
                back["next_page"] <= GOAL_RETURN,
            "the site's tab processor time <= the app's (browser and server)":
                site_cpu <= app_cpu,
            f"site <= {GOAL_MB:g} MB": size["total_mb"] <= GOAL_MB,
        },
    }


def report(result: dict[str, Any]) -> str:
    first, size, runs = result["first_live_panel_s"], result["site"], result["runs_s"]
    cpu, back = result["processor_s"], result["return_to_first"]
    busy = ", one core kept busy" if result["one_core_kept_busy"] else ""
    lines = [
        f"first live panel on {result['page']} ({result['machine']}{busy}; loads "
        f"{result['loads_at_each_repeat']}; median of {len(runs['site'])} fresh opens; "
        "'A claims' pressed and answered):",
        f"  site, nothing pressed (Pyodide in the tab) {first['site']:6.1f} s  runs {runs['site']}",
        f"  make app (Voila, started)                  {first['app']:6.1f} s  runs {runs['app']}",
        f"  make lab (JupyterLab, started; Run All)    {first['lab']:6.1f} s  runs {runs['lab']}",
        f"  site / make app: {result['site_to_app']} (median of the paired runs)",
        "processor time to the answer (median s): "
        f"site tab {result['site_tab_cpu_s']}; app {result['app_browser_and_server_cpu_s']} "
        f"(browser {cpu['app']['tab_cpu_s']} + server {cpu['app']['server_cpu_s']})",
        "  site by part: " + ", ".join(f"{k} {v}" for k, v in cpu["site"]["cpu_parts_s"].items()
                                       if k in BROWSER_PARTS),
        "return visits (median s; ratio to the first open): " + ", ".join(
            f"{k.replace('_', ' ')} {result['returns'][k]['s']} s ({back[k]})" for k in back),
        "  the next page: live (its panels drawn) against the first open's panels drawn",
        "  the site's start (median s from opening): " + ", ".join(
            f"{k} {v}" for k, v in result["site_stages_s"].items()),
        f"site size: {size['total_mb']} MB in {size['files']} files: "
        + ", ".join(f"{k} {v}" for k, v in size["parts_mb"].items()),
        "goals: " + "; ".join(f"{k}: {'met' if ok else 'NOT met'}"
                              for k, ok in result["goals"].items()),
    ]
    return "\n".join(lines)


def with_history(result: dict[str, Any], out: Path) -> dict[str, Any]:
    """``result`` with the runs written to ``out`` before (each its time, load and figures,
    read from the file there) and this one, and the quietest and the most loaded among them:
    a figure means little without the machine's load beside it."""
    summary = {"when": result["when"], "load": float(result["machine"].rsplit(" ", 1)[1]),
               "first_live_panel_s": result["first_live_panel_s"],
               "site_to_app": result["site_to_app"],
               "return_to_first": result.get("return_to_first"),
               "site_tab_cpu_s": result.get("site_tab_cpu_s"),
               "app_browser_and_server_cpu_s": result.get("app_browser_and_server_cpu_s")}
    history: list[dict[str, Any]] = []
    if out.is_file():
        history = json.loads(out.read_text()).get("history", [])
    history = [*history, summary][-20:]
    return {**result, "history": history,
            "quietest": min(history, key=lambda run: run["load"]),
            "most_loaded": max(history, key=lambda run: run["load"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", action="store_true",
                        help="keep one core busy with another program for the whole run")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or (BUSY_OUT if args.busy else DEFAULT_OUT)
    result = with_history(measure(args.repeats, args.busy), out)
    publish(out, result, report(result))


if __name__ == "__main__":
    main()
