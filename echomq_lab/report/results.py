"""Read a benchmark run (``python -m benchmarks.run``) back as tables, verdicts and bars.

The benchmark writes its measurements to ``benchmarks/results.json`` in the repository
(:data:`REPOSITORY_FILE`): every figure as the values of several repeats, the ratios the goals
are set on, the wire cost of one job, and the machine it ran on. :func:`read` turns such a file
into a :class:`Report` of plain rows (no pandas): figures and ratios with their median, min and
max, the targets with a verdict recomputed from the numbers (:mod:`.targets`), and the bars
:mod:`.charts` draws. The ``*_text`` functions give the tables as fixed-width text.

This module loads no widget or plotting library; the caller names the file it reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from echomq_lab import theme
from echomq_lab.report.schema import REPOSITORY_FILE as REPOSITORY_FILE
from echomq_lab.report.schema import ResultsInvalid as ResultsInvalid
from echomq_lab.report.schema import ResultsMissing as ResultsMissing
from echomq_lab.report.schema import load, number, section, value
from echomq_lab.report.targets import (
    TargetRow,
    TransitionRow,
    stored_targets,
    targets,
    transition_rows,
)

#: Readable names for the figures and ratios ``benchmarks/run.py`` records (others keep theirs).
FIGURE_LABELS: dict[str, str] = {
    "noop_evalsha": "no-op EVALSHA (the limit)",
    "cycle_valkey": "job cycle, jobs.* on Valkey",
    "cycle_bare_evalsha": "job cycle, bare EVALSHA",
    "noop_evalsha_pipelined": "no-op EVALSHA, pipelined",
    "enqueue_pipelined": "enqueue, pipelined",
    "cycle_embedded": "job cycle, embedded",
    "rq_cycle": "python-rq job cycle",
}
RATIO_LABELS: dict[str, str] = {
    "cycle_vs_limit_over_3": "cycle / (limit / 3)",
    "pipelined_enqueue_vs_limit": "pipelined enqueue / its limit",
    "bare_vs_limit_over_3": "bare cycle / (limit / 3)",
    "cycle_vs_bare": "cycle / bare cycle",
    "cycle_vs_bare_by_job": "cycle / bare cycle, job by job",
    "embedded_vs_valkey": "embedded cycle / Valkey cycle",
    "cycle_vs_rq": "cycle / python-rq",
}
#: Bar colours: the server's limit grey, our library green, the bare scripts blue, the
#: embedded server purple, python-rq orange.
BAR_COLOURS: dict[str, str] = {
    "limit": theme.MUTED,
    "ours": theme.STATE_COLOURS["completed"],
    "bare": theme.STATE_COLOURS["pending"],
    "embedded": theme.STATE_COLOURS["scheduled"],
    "rq": theme.STATE_COLOURS["active"],
}


# ------------------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class FigureRow:
    """One measured rate, repeated: its median, min and max over the repeats."""

    key: str
    label: str
    unit: str
    median: float
    min: float
    max: float
    repeats: int
    note: str


@dataclass(frozen=True)
class RatioRow:
    """One ratio (taken per repeat, then summarised), with its CPU-time estimate if any."""

    key: str
    label: str
    median: float
    min: float
    max: float
    cpu_estimate: float | None
    note: str


class WireRow(NamedTuple):
    """What one job costs on the wire: round trips from the client, commands on the server."""

    who: str
    round_trips: float
    commands: float


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: its height (a median) and the min..max whisker around it."""

    label: str
    median: float
    low: float
    high: float
    colour: str


@dataclass(frozen=True)
class Report:
    """A results file, read: every table the notebook shows and the bars it draws."""

    date: str
    quick: bool
    machine: str
    busy: str
    figures: list[FigureRow]
    ratios: list[RatioRow]
    targets: list[TargetRow]
    stored_targets: list[TargetRow]
    wire: list[WireRow]
    transitions: list[TransitionRow]
    bars: list[Bar]
    rq_commands: list[tuple[str, float]] = field(default_factory=list)
    server_time: str = ""

    @property
    def verdicts_agree(self) -> bool:
        """True when the verdicts recomputed here equal the ones the benchmark stored."""
        return [(t.name, t.met) for t in self.targets] == [
            (t.name, t.met) for t in self.stored_targets
        ]


# ---------------------------------------------------------------------------------- reading


def read(path: str | Path) -> Report:
    """The results at ``path`` as a :class:`Report` (ResultsMissing / ResultsInvalid if not)."""
    return report(load(path))


def report(results: Mapping[str, Any]) -> Report:
    """Every table and bar of ``results`` (the parsed JSON of a benchmark run)."""
    if not isinstance(results, Mapping):
        raise ResultsInvalid(f"results should be a JSON object, not {type(results).__name__}")
    return Report(
        date=str(value(results, "date", str, "")),
        quick=bool(results.get("quick", False)),
        machine=machine_line(results),
        busy=busy_line(results),
        figures=figure_rows(results),
        ratios=ratio_rows(results),
        targets=targets(results),
        stored_targets=stored_targets(results),
        wire=wire_rows(results),
        transitions=transition_rows(results),
        bars=throughput_bars(results),
        rq_commands=rq_commands_per_job(results),
        server_time=server_time_line(results),
    )


def figure_rows(results: Mapping[str, Any]) -> list[FigureRow]:
    """Every figure in file order: its median, min and max over the repeats."""
    rows = []
    for key, fig in value(results, "figures", dict, "").items():
        where = f"figures.{key}."
        rows.append(
            FigureRow(
                key=key,
                label=FIGURE_LABELS.get(key, key),
                unit=str(value(fig, "unit", str, where)),
                median=number(fig, "median", where),
                min=number(fig, "min", where),
                max=number(fig, "max", where),
                repeats=len(fig.get("values", [])),
                note=str(fig.get("note", "")),
            )
        )
    return rows


def ratio_rows(results: Mapping[str, Any]) -> list[RatioRow]:
    """Every ratio in file order, with its CPU-time estimate when the run recorded one."""
    estimates = section(results, "cpu_estimates")
    rows = []
    for key, ratio in value(results, "ratios", dict, "").items():
        where = f"ratios.{key}."
        est = estimates.get(key)
        rows.append(
            RatioRow(
                key=key,
                label=RATIO_LABELS.get(key, key),
                median=number(ratio, "median", where),
                min=number(ratio, "min", where),
                max=number(ratio, "max", where),
                cpu_estimate=float(est) if isinstance(est, int | float) else None,
                note=str(ratio.get("note", "")),
            )
        )
    return rows


def wire_rows(results: Mapping[str, Any]) -> list[WireRow]:
    """One job's wire cost: ours (enqueue + claim + complete), then python-rq's if measured."""
    wire = value(results, "wire", dict, "")
    rows = [_wire_row("echomq cycle", value(wire, "echomq", dict, "wire."), "wire.echomq.")]
    theirs = wire.get("rq")
    if isinstance(theirs, Mapping):
        rows.append(_wire_row("python-rq", theirs, "wire.rq."))
    return rows


def _wire_row(who: str, cost: Mapping[str, Any], where: str) -> WireRow:
    return WireRow(
        who, number(cost, "round_trips_per_job", where), number(cost, "commands_per_job", where)
    )


def server_time_line(results: Mapping[str, Any]) -> str:
    """The server's own time per job inside the scripts, beside three no-op scripts' time."""
    ours = section(section(results, "wire"), "echomq")
    spent, noop = ours.get("server_us_per_job"), ours.get("server_us_per_3_noops")
    if not isinstance(spent, int | float) or not isinstance(noop, int | float):
        return "server time inside the scripts: not recorded"
    return (
        f"server time inside the scripts, per job: {spent:.1f} us for enqueue + claim + "
        f"complete, {noop:.1f} us for three no-op scripts"
    )


def rq_commands_per_job(results: Mapping[str, Any]) -> list[tuple[str, float]]:
    """python-rq's server commands per job (its last repeat), most frequent first."""
    rq = section(results, "wire").get("rq")
    if not isinstance(rq, Mapping):
        return []
    jobs_run = number(rq, "jobs_per_repeat", "wire.rq.")
    delta = section(rq, "last_commandstats_delta")
    per_job = [(str(k), int(v) / jobs_run) for k, v in delta.items()]
    return sorted(per_job, key=lambda kv: (-kv[1], kv[0]))


def machine_line(results: Mapping[str, Any]) -> str:
    """Where the run happened: hardware, Python and every server/client version, one line."""
    m = value(results, "machine", dict, "")
    parser = m.get("redis_py_parser")
    redis_py = f"redis-py {m.get('redis_py', '?')}" + (f" ({parser} parser)" if parser else "")
    return (
        f"{m.get('uname_m', '?')} {m.get('cpu_model', '?')}, {m.get('cores', '?')} cores; "
        f"Python {m.get('python', '?')}; {redis_py}; Valkey {m.get('valkey', '?')}; "
        f"python-rq {m.get('rq', '?')}; fakeredis {m.get('fakeredis', '?')}"
    )


def busy_line(results: Mapping[str, Any]) -> str:
    """How busy the machine was while the run measured, or a note that it was not recorded."""
    b = results.get("busy")
    if not isinstance(b, Mapping):
        return "how busy the machine was: not recorded"
    load_avg = b.get("load_avg_before", [None])[0]
    head = f"load average {load_avg:.2f} at the start; " if isinstance(load_avg, float) else ""
    return (
        f"{head}CPU {b.get('cpu_busy_pct_of_all_cores', '?')}% busy over "
        f"{b.get('cores', '?')} cores: {b.get('cpu_ours_pct_of_all_cores', '?')}% this run, "
        f"{b.get('cpu_others_pct_of_all_cores', '?')}% other processes"
    )


def throughput_bars(results: Mapping[str, Any]) -> list[Bar]:
    """Jobs per second, side by side: the limit / 3, ours, bare, embedded, python-rq.

    A job is three transitions, so a third of the no-op EVALSHA rate is the most one
    connection could ever complete. Figures the run did not record are left out.
    """
    figs = {row.key: row for row in figure_rows(results)}
    wanted: list[tuple[str, str, str, float]] = [
        ("noop_evalsha", "no-op limit ÷ 3", "limit", 1 / 3),
        ("cycle_valkey", "our cycle", "ours", 1.0),
        ("cycle_bare_evalsha", "bare EVALSHA", "bare", 1.0),
        ("cycle_embedded", "embedded", "embedded", 1.0),
        ("rq_cycle", "python-rq", "rq", 1.0),
    ]
    return [
        Bar(
            label,
            figs[key].median * scale,
            figs[key].min * scale,
            figs[key].max * scale,
            BAR_COLOURS[colour],
        )
        for key, label, colour, scale in wanted
        if key in figs
    ]


# ------------------------------------------------------------------------------------- text


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def figures_text(rep: Report) -> str:
    """The figures, then the ratios, as one fixed-width table."""
    head = f"{'figure':<32}{'median':>10}{'min':>10}{'max':>10}  unit"
    lines = [head, "-" * (len(head) + 12)]
    for f in rep.figures:
        lines.append(
            f"{f.label:<32}{_fmt(f.median):>10}{_fmt(f.min):>10}{_fmt(f.max):>10}  {f.unit}"
        )
    lines.append("")
    head = f"{'ratio':<32}{'median':>10}{'min':>10}{'max':>10}  CPU-time estimate"
    lines += [head, "-" * len(head)]
    for r in rep.ratios:
        est = f"{r.cpu_estimate:.2f}" if r.cpu_estimate is not None else "-"
        lines.append(f"{r.label:<32}{r.median:>10.2f}{r.min:>10.2f}{r.max:>10.2f}  {est}")
    return "\n".join(lines)


def targets_text(rows: Sequence[TargetRow]) -> str:
    """The targets as a fixed-width table: goal, what was measured, met or not."""
    head = f"{'target':<32}{'goal':<18}{'got':<26}met?"
    lines = [head, "-" * len(head)]
    for t in rows:
        lines.append(f"{t.name:<32}{t.goal:<18}{t.got:<26}{theme.VERDICTS[t.met].word}")
    return "\n".join(lines)


def targets_html(rows: Sequence[TargetRow]) -> str:
    """The targets as coloured one-line messages (green met, red missed, grey not measured)."""
    return "".join(theme.message_html(f"{t.name}: goal {t.goal}, got {t.got}", t.met) for t in rows)


def wire_text(rep: Report) -> str:
    """Per job, ours and python-rq's round trips and server commands."""
    head = f"{'per job':<16}{'round trips':>12}{'commands':>10}"
    lines = [head, "-" * len(head)]
    for w in rep.wire:
        lines.append(f"{w.who:<16}{w.round_trips:>12.2f}{w.commands:>10.2f}")
    return "\n".join(lines)


def transitions_text(rep: Report) -> str:
    """Per transition on Valkey: EVALSHAs, round trips, and the commands run inside the script."""
    head = f"{'transition':<22}{'EVALSHA':>8}{'trips':>6}  inside the script"
    lines = [head, "-" * (len(head) + 24)]
    for t in rep.transitions:
        inside = ", ".join(f"{k} {v}" for k, v in t.nested.items())
        extra = "" if t.top_level == {"evalsha": 1} else f"  (top level: {t.top_level})"
        lines.append(f"{t.name:<22}{t.evalsha:>8}{t.round_trips:>6}  {inside}{extra}")
    return "\n".join(lines)
