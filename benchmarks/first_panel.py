"""Time from opening the URL to the first live panel, three ways in; and the site's size.

``python -m benchmarks.first_panel [--repeats N] [--out PATH]`` measures, on this machine, in
headless Chromium (a fresh browser context each time: nothing cached), in one run:

* **site**: ``site/`` (``make site``) served from loopback, page 02 opened in JupyterLite with
  nothing pressed: the page starts Python in the tab and runs itself;
* **app**: ``make app``'s Voilà, already started: ``/voila/render/02-...`` opened, Voilà runs
  the page;
* **lab**: ``make lab``'s JupyterLab, already started: page 02 opened, then Run All (the one
  way in that needs a press).

The clock runs from ``goto`` until the first panel is live: the two-workers story's "A claims"
is pressed as soon as it can be, and the clock stops when the panel answers ("A holds token 1").
For the site it also reads when each stage of the start was reached (``window.emqLab.times``,
set by tools/site/autorun.js; ``words_shown``: the page's stored words on screen, from
tools/site/reader.html). It sizes ``site/`` by what takes the room. The figures go to
``results/first-panel.json`` (with the earlier runs' figures and loads, the quietest and the
most loaded named) and are printed. Goals: the site's first live panel within 1.5
times the app's, in the same run; the site at most 50 MB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
)

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
PAGE = "02-the-state-and-attempts.ipynb"
DEFAULT_OUT = ROOT / "results" / "first-panel.json"
#: The panel pressed, and what it says once the press reached the page's Python and came back.
STORY = ".emq-two-workers"
ANSWER = "A holds token 1"
WAIT_MS = 300_000
GOAL_RATIO, GOAL_MB = 1.5, 50.0


@contextmanager
def served_app(tmp: Path) -> Iterator[str]:
    """``make app`` on a free port (started and answering before this yields)."""
    port = free_port()
    argv = ["make", "--no-print-directory", "app", f"APP_ARGS=--port={port} --no-browser"]
    with serving(argv, ROOT, jupyter_env(tmp), port, tmp / "app.log", timeout_s=300) as url:
        yield url


def _timed(browser: Any, url: str, after_open: Callable[[Any], None]) -> tuple[float, Any]:
    """Seconds from ``goto(url)`` until the first panel is live (``after_open`` first does what
    the way in needs pressed), in a fresh context; and the site's stage times, if any."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    try:
        started = time.monotonic()
        page.goto(url, timeout=WAIT_MS)
        after_open(page)
        story = page.locator(STORY).first
        claim = find_button(story, BUTTON_LABELS["a_claims"])
        claim.and_(page.locator(":enabled")).wait_for(timeout=WAIT_MS)
        claim.click(timeout=WAIT_MS)
        story.get_by_text(ANSWER).first.wait_for(timeout=WAIT_MS)
        took = time.monotonic() - started
        return took, page.evaluate(
            "() => window.emqLab ? {...window.emqLab.times, words_shown: window.emqWordsShown}"
            " : null")
    finally:
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


def measure(repeats: int) -> dict[str, Any]:
    path, why = chromium_path()
    if path is None:
        raise SystemExit(f"no Chromium: {why}")
    if not (SITE / "lab" / "index.html").is_file():
        raise SystemExit("no site/: build it first with `make site`")
    times: dict[str, list[float]] = {"site": [], "app": [], "lab": []}
    stages: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp, launch_chromium(path) as browser:
        with serve_folder(SITE) as site, served_app(Path(tmp)) as app:
            for _ in range(repeats):  # the two ways in, turn about, so both meet the same load
                took, marks = _timed(browser, f"{site}/lab/index.html?path={PAGE}", _nothing)
                times["site"].append(took)
                stages.append(marks or {})
                times["app"].append(_timed(browser, f"{app}/voila/render/{PAGE}", _nothing)[0])
        with jupyter_lab(ROOT / "notebooks", Path(tmp) / "lab") as lab:
            times["lab"] = [
                _timed(browser, lab.notebook_url(PAGE, workspace=f"bench-{i}"), _run_all)[0]
                for i in range(repeats)
            ]
    size = site_size()
    first = {k: round(statistics.median(v), 1) for k, v in times.items()}
    paired = zip(times["site"], times["app"], strict=True)
    ratio = round(statistics.median(s / a for s, a in paired), 2)
    names = sorted({name for marks in stages for name in marks}, key=lambda n: statistics.median(
        m[n] for m in stages if n in m))
    return {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "page": PAGE,
        "first_live_panel_s": first,
        "site_to_app": ratio,
        "runs_s": {k: [round(t, 1) for t in v] for k, v in times.items()},
        "site_stages_s": {n: round(statistics.median(m[n] for m in stages if n in m), 1)
                          for n in names},
        "site": size,
        "goals": {
            f"site first live panel <= {GOAL_RATIO:g} x make app's": ratio <= GOAL_RATIO,
            f"site <= {GOAL_MB:g} MB": size["total_mb"] <= GOAL_MB,
        },
    }


def report(result: dict[str, Any]) -> str:
    first, size, runs = result["first_live_panel_s"], result["site"], result["runs_s"]
    lines = [
        f"first live panel on {result['page']} ({result['machine']}; median of "
        f"{len(runs['site'])} fresh opens; 'A claims' pressed and answered):",
        f"  site, nothing pressed (Pyodide in the tab) {first['site']:6.1f} s  runs {runs['site']}",
        f"  make app (Voila, started)                  {first['app']:6.1f} s  runs {runs['app']}",
        f"  make lab (JupyterLab, started; Run All)    {first['lab']:6.1f} s  runs {runs['lab']}",
        f"  site / make app: {result['site_to_app']} (median of the paired runs)",
        "  the site's start (median s from opening): " + ", ".join(
            f"{k} {v}" for k, v in result["site_stages_s"].items()),
        f"site size: {size['total_mb']} MB in {size['files']} files: "
        + ", ".join(f"{k} {v}" for k, v in size["parts_mb"].items()),
        "  largest: " + ", ".join(f"{k} {v}" for k, v in list(size["largest_mb"].items())[:5]),
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
               "site_to_app": result["site_to_app"]}
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
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    result = with_history(measure(args.repeats), args.out)
    publish(args.out, result, report(result))


if __name__ == "__main__":
    main()
