"""What the page "Lab: one round trip" (:data:`PAGE`) shows of a benchmark run, written next
to the notebooks.

``make bench`` measures into ``benchmarks/results.json`` and then writes, for the page,
``notebooks/bench-results.json`` (a header and the tables as text, by name) and the charts as
PNG files beside it. The page reads them with :func:`echomq_lab.measure.read_bench`, so the
installed package needs nothing of the benchmarks to show them.

``python -m benchmarks.page [RESULTS] [--to FOLDER]`` writes them again from a results file
(default ``benchmarks/results.json`` into ``notebooks/``), without measuring anything.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import charts, results
from echomq_lab.measure import BENCH_FILE

ROOT = Path(__file__).resolve().parents[1]
PAGE_FOLDER = ROOT / "notebooks"
#: The page that shows the run, by its slug in ``tools/pages.toml`` (never by its number).
PAGE = "lab-one-round-trip"
#: The charts written beside the file, by the name the page shows them under.
CHART_FILES = {
    "throughput": "bench-throughput.png",
    "wire": "bench-wire.png",
    "scale": "bench-scale.png",
}
#: Longest line the page prints (wider prose wraps at a space).
WIDTH = 96


def header(rep: results.Report) -> str:
    """When, on what and how busy: the lines the page prints before any table."""
    return "\n".join([
        f"measured: {rep.date} ({'a quick smoke run' if rep.quick else 'a full run'})",
        f"machine: {rep.machine}",
        f"while it ran: {rep.busy}",
    ])  # fmt: skip


def tables(raw: Mapping[str, Any]) -> dict[str, str]:
    """Every table of the page as text, by name (``scale`` only when the run has one)."""
    rep = results.report(raw)
    busiest = [f"  {name:<16}{per_job:6.2f}" for name, per_job in rep.rq_commands[:8]]
    wire = [results.wire_text(rep), "", rep.server_time]
    if busiest:
        wire += ["", "python-rq's busiest commands, per job:", *busiest]
    out = {
        "figures": results.figures_text(rep),
        "wire": "\n".join(wire),
        "transitions": results.transitions_text(rep),
    }
    if "scale" in raw:
        out["scale"] = results.scale_text(raw)
    return out


def wrapped(text: str) -> str:
    """``text`` with long prose lines wrapped at a space; table rows (with two spaces) whole."""
    return "\n".join(
        textwrap.fill(line, WIDTH, subsequent_indent="  ", break_long_words=False,
                      break_on_hyphens=False) if len(line) > WIDTH and "  " not in line
        else line
        for line in text.splitlines()
    )  # fmt: skip


def write(raw: Mapping[str, Any], folder: Path = PAGE_FOLDER) -> Path:
    """Write the page's file and its charts into ``folder``; the file's path."""
    import matplotlib

    matplotlib.use("Agg")
    rep = results.report(raw)
    drawn = {
        "throughput": partial(charts.throughput_chart, rep),
        "wire": partial(charts.wire_chart, rep),
    }
    if "scale" in raw:
        drawn["scale"] = partial(charts.scale_chart, raw)
    for name, draw in drawn.items():
        charts.save(draw, folder / CHART_FILES[name])
    page = {
        "header": wrapped(header(rep)),
        "tables": {name: wrapped(text) for name, text in tables(raw).items()},
        "charts": {name: CHART_FILES[name] for name in drawn},
    }
    out = folder / BENCH_FILE
    out.write_text(json.dumps(page, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def announce(path: Path) -> str:
    """The line that says where the file for :data:`PAGE` was written."""
    return f"for the page {PAGE}: {path}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.page", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="?", type=Path,
                        default=ROOT / results.REPOSITORY_FILE)
    parser.add_argument("--to", type=Path, default=PAGE_FOLDER, help="the notebooks' folder")
    args = parser.parse_args(argv)
    print(announce(write(results.load(args.results), args.to)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
