"""The app's memory over many page opens, and after its idle kernels are culled.

``python -m benchmarks.app_memory [--opens N] [--cull S] [--out PATH]`` starts ``make app``
(Voilà on ``notebooks/``, the app's own command) with a short cull, given as the app's options
are (``--MappingKernelManager.cull_idle_timeout=S``, ``cull_interval``), and opens N pages one
after another in headless Chromium, as a reader moving through the module does: each page
(pages 00-05 in turn) opened in a fresh tab, waited for until its panels are live, then the tab
closed. After each open it reads the app's memory: the resident memory of the app's server
and of every process under it (its kernels), from ``/proc``, and how many kernels are
running. Once the last tab is closed it waits for the cull (the idle time, one interval and a
margin) and reads them again.

The figures go to ``results/app-memory.json`` and are printed. The bound: after the cull, no
kernel left and the app within :data:`BOUND_MB` MB (its server, which grows a little as it
serves pages: about 120 MB started, 170 MB after 40 opens); the run records whether it held.
Each kernel holds about 90 MB while it lives: without the cull, 40 opens leave 40 kernels.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.processor import command_line, descendants
from benchmarks.results import publish
from echomq_lab.servers import free_port
from tools.browser import (
    VIEWPORT,
    chromium_path,
    jupyter_env,
    launch_chromium,
    serving,
    stored_widgets,
)
from tools.course import load as course_pages

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "results" / "app-memory.json"
#: The pages opened in turn: those the app renders on its embedded server alone (06 reads
#: benchmark figures, 07 needs a cluster, 08 a workshop's room).
PAGES = [p.file for p in course_pages() if p.number <= 5]
#: The most the app may hold once its idle kernels are culled (MB, resident).
BOUND_MB = 250
#: A page's render: Voilà runs the whole notebook first.
RENDER_MS = 180_000
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def _rss_mb(pid: int) -> float:
    try:
        pages = int((Path("/proc") / str(pid) / "statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * PAGE_SIZE / 1e6


def app_server(port: int) -> int:
    """The pid of the app's server (the Python running ``echomq_lab.widgets.app`` on ``port``)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            line = command_line(int(entry.name))
            if "echomq_lab.widgets.app" in line and f"--port={port}" in line:
                return int(entry.name)
    raise RuntimeError(f"no app server on port {port}")


def memory(server: int) -> dict[str, Any]:
    """The app's resident memory (MB): its server and every process under it; its kernels."""
    below = descendants(server)[1:]
    kernels = [p for p in below if "ipykernel" in command_line(p)]
    return {"server_mb": round(_rss_mb(server), 1),
            "total_mb": round(_rss_mb(server) + sum(map(_rss_mb, below)), 1),
            "kernels": len(kernels)}


def measure(opens: int, cull_s: int, every_s: int) -> dict[str, Any]:
    """Open ``opens`` pages in the app (cull after ``cull_s`` idle seconds, looked for every
    ``every_s``), reading the memory after each; then again once the cull has run."""
    executable, why = chromium_path()
    if executable is None:
        raise SystemExit(f"no Chromium: {why}")
    port = free_port()
    args = (f"--port={port} --no-browser --MappingKernelManager.cull_idle_timeout={cull_s} "
            f"--MappingKernelManager.cull_interval={every_s}")
    argv = ["make", "--no-print-directory", "app", f"APP_ARGS={args}"]
    with tempfile.TemporaryDirectory() as tmp, \
            serving(argv, ROOT, jupyter_env(Path(tmp)), port, Path(tmp) / "app.log") as url, \
            launch_chromium(executable) as browser:
        server = app_server(port)
        started = memory(server)
        after_each: list[dict[str, Any]] = []
        begun = time.monotonic()
        for n in range(opens):
            name = PAGES[n % len(PAGES)]
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(f"{url}/voila/render/{name}", timeout=RENDER_MS)
            want = stored_widgets(ROOT / "notebooks" / name)
            page.wait_for_function(
                f"document.querySelectorAll('.jupyter-widgets').length >= {want}",
                timeout=RENDER_MS)
            page.close()
            after_each.append({"page": name, **memory(server),
                               "s": round(time.monotonic() - begun, 1)})
            print(f"open {n + 1:2d}/{opens} {name}: {after_each[-1]}", file=sys.stderr)
        wait_s = cull_s + 2 * every_s + 5 if cull_s else 10  # 0: no cull (the app before)
        time.sleep(wait_s)
        culled = memory(server)
    peak = max(after_each, key=lambda m: m["total_mb"])
    return {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "opens": opens, "pages": PAGES,
        "cull_idle_s": cull_s, "cull_interval_s": every_s, "waited_after_s": wait_s,
        "started": started, "peak": peak, "after_cull": culled,
        "bound_mb": BOUND_MB,
        "held": culled["kernels"] == 0 and culled["total_mb"] <= BOUND_MB,
        "after_each": after_each,
    }


def report(result: dict[str, Any]) -> str:
    """The run in a few lines."""
    s, p, c = result["started"], result["peak"], result["after_cull"]
    return "\n".join([
        f"app memory, {result['opens']} opens (cull after {result['cull_idle_s']} s idle, "
        f"looked for every {result['cull_interval_s']} s), {result['machine']}",
        f"  started:    {s['total_mb']:7.1f} MB, {s['kernels']} kernels",
        f"  peak:       {p['total_mb']:7.1f} MB, {p['kernels']} kernels "
        f"(after opening {p['page']})",
        f"  after cull: {c['total_mb']:7.1f} MB, {c['kernels']} kernels "
        f"(server {c['server_mb']} MB)",
        f"  bound: no kernel and at most {result['bound_mb']} MB after the cull: "
        + ("held" if result["held"] else "NOT held"),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opens", type=int, default=40)
    parser.add_argument("--cull", type=int, default=20,
                        help="idle seconds before a cull (0: none, as the app was before)")
    parser.add_argument("--every", type=int, default=5, help="seconds between looks")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    result = measure(args.opens, args.cull, args.every)
    publish(args.out, result, report(result))


if __name__ == "__main__":
    main()
