"""A benchmark run read back: its file checked, its figures as rows, its tables as text.

``python -m benchmarks.run`` writes its measurements to ``benchmarks/results.json``
(:data:`REPOSITORY_FILE`): every figure as the values of several repeats, the ratios, the wire
cost of one job, the deep-queue points of :mod:`benchmarks.scale`, and the machine it ran on.
:func:`load` reads such a file, with one clear :class:`ResultsInvalid` line for each hole;
:func:`read` turns it into a :class:`Report` of plain rows; the ``*_text`` functions give the
tables as fixed-width text. The goals are judged in :mod:`benchmarks.targets`, the charts drawn
in :mod:`benchmarks.charts`.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

from echomq_lab.widgets import look as theme

#: Where the repository keeps the results ``python -m benchmarks.run`` writes, from its root.
REPOSITORY_FILE = Path("benchmarks") / "results.json"


class ResultsMissing(FileNotFoundError):
    """There is no results file where one was looked for."""


class ResultsInvalid(ValueError):
    """The results file is not JSON, or lacks something a report needs."""


def publish(out: Path, figures: Any, table: str) -> None:
    """Write ``figures`` to ``out`` as JSON (its folder made if need be), print ``table``, and
    say on stderr where the figures went: the end of every benchmark that keeps one file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=1) + "\n")
    print(table)
    print(f"written to {out}", file=sys.stderr)


def load(path: str | Path) -> dict[str, Any]:
    """The raw results at ``path``: ResultsMissing if there is no file, ResultsInvalid if it
    is not a JSON object."""
    where = Path(path)
    if not where.is_file():
        raise ResultsMissing(
            f"no benchmark results at {where}: run `python -m benchmarks.run` in the "
            "repository to measure them"
        )
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsInvalid(f"{where} is not a JSON results file: {exc}") from None
    if not isinstance(data, dict):
        raise ResultsInvalid(f"{where} holds a JSON {type(data).__name__}, not an object")
    return data


def value(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``data[key]`` when it is of ``kind`` (a bool never counts as a number); ResultsInvalid
    naming ``where + key`` otherwise."""
    if not isinstance(data, Mapping) or key not in data:
        raise ResultsInvalid(f"the results lack {where}{key}")
    found = data[key]
    if not isinstance(found, kind) or isinstance(found, bool) and kind is not bool:
        raise ResultsInvalid(f"{where}{key} should be {_kind_name(kind)}, not {found!r}")
    return found


def section(results: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``results[key]`` when it is an object, ``{}`` when absent; ResultsInvalid otherwise."""
    found = results.get(key, {})
    if not isinstance(found, Mapping):
        raise ResultsInvalid(f"{key} should be an object, not {found!r}")
    return found


def number(data: Mapping[str, Any], key: str, where: str) -> float:
    """``data[key]`` as a finite float; ResultsInvalid naming ``where + key`` otherwise."""
    found = float(value(data, key, (int, float), where))
    if not math.isfinite(found):
        raise ResultsInvalid(f"{where}{key} should be a finite number, not {found!r}")
    return found


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


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
class TransitionRow:
    """One transition measured on Valkey: its EVALSHAs, round trips, and commands inside."""

    name: str
    evalsha: int
    round_trips: int
    top_level: dict[str, int]
    nested: dict[str, int]


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
    """A results file, read: every table page 06 shows and the bars it draws."""

    date: str
    quick: bool
    machine: str
    busy: str
    figures: list[FigureRow]
    ratios: list[RatioRow]
    wire: list[WireRow]
    transitions: list[TransitionRow]
    bars: list[Bar]
    rq_commands: list[tuple[str, float]] = field(default_factory=list)
    server_time: str = ""



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


def transition_rows(results: Mapping[str, Any]) -> list[TransitionRow]:
    """Per transition, as measured on Valkey: EVALSHAs, round trips, commands inside."""
    rows = []
    for name, c in section(results, "commands_per_transition").items():
        where = f"commands_per_transition.{name}."
        rows.append(
            TransitionRow(
                name=name,
                evalsha=int(number(c, "evalsha", where)),
                round_trips=int(number(c, "round_trips", where)),
                top_level={str(k): int(v) for k, v in value(c, "top_level", dict, where).items()},
                nested={str(k): int(v) for k, v in value(c, "nested", dict, where).items()},
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


# ------------------------------------------------------------------- the deep-queue points


@dataclass(frozen=True)
class ScalePoint:
    """One depth in one keyspace, as ``benchmarks/scale.py`` measures and records it."""

    keyspace: str
    depth: int
    cycle_jobs_s: float
    view_ms: float
    click_median_ms: float
    click_p95_ms: float
    click_max_ms: float
    longest_command_us: int
    longest_command: str
    fill_s: float
    command_median_us: int
    command_p99_us: int
    commands_over_1ms: int
    server_waited_ms: float


#: The fields that are not floats, and what they are.
_KINDS: dict[str, type] = {
    "keyspace": str, "longest_command": str, "depth": int, "longest_command_us": int,
    "command_median_us": int, "command_p99_us": int, "commands_over_1ms": int,
}  # fmt: skip


def scale_section(results: Mapping[str, Any]) -> Mapping[str, Any]:
    found = results.get("scale")
    if not isinstance(found, Mapping):
        raise ResultsInvalid("the results hold no 'scale' section: run python -m benchmarks.scale")
    return found


def points(results: Mapping[str, Any]) -> list[ScalePoint]:
    """Every measured point, in the order measured; ValueError naming a missing field."""
    out = []
    for i, raw in enumerate(scale_section(results).get("points", [])):
        try:
            out.append(ScalePoint(**{f.name: _KINDS.get(f.name, float)(raw[f.name])
                                     for f in fields(ScalePoint)}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"scale.points[{i}] is incomplete: {exc}") from None
    return out


def scale_text(results: Mapping[str, Any]) -> str:
    """The points as a plain-text table, then the check and the parser lines."""
    head = (
        f"{'the server holds':<22}{'jobs':>10}{'cycle/s':>9}{'view ms':>9}{'click ms':>10}"
        f"{'p95':>6}{'script µs':>10}{'p99':>7}{'longest':>9}{'waited ms':>11}"
    )
    lines = [head, "-" * len(head)]
    for p in points(results):
        lines.append(
            f"{p.keyspace:<22}{p.depth:>10,}{p.cycle_jobs_s:>9,.0f}{p.view_ms:>9.2f}"
            f"{p.click_median_ms:>10.1f}{p.click_p95_ms:>6.1f}{p.command_median_us:>10,}"
            f"{p.command_p99_us:>7,}{longest_text(p.longest_command_us):>9}"
            f"{p.server_waited_ms:>11.0f}"
        )
    lines += [
        "click = one TransitionPanel press to the redrawn panel (ms); longest = the longest server",
        "command in those clicks (µs), SLOWLOG keeping only commands of 1 ms or more, so logging",
        "cost them nothing (<1,000: none); script µs, p99 = median and 99th percentile of the",
        "script runs in a second round of the same clicks, SLOWLOG logging every command; waited",
        "ms = how long the server process waited for a CPU meanwhile (a busy machine pauses it,",
        "and SLOWLOG counts a pause inside a command as that command's time)",
    ]
    lines.append(check_line(results))
    return "\n".join(line for line in lines if line)


def longest_text(us: int) -> str:
    """A longest-command figure as shown: ``"<1,000"`` when SLOWLOG kept none (all under 1 ms)."""
    return f"{us:,}" if us else "<1,000"


def check_line(results: Mapping[str, Any]) -> str:
    """One line on the whole-queue drift check of the deepest queue, or empty."""
    c = scale_section(results).get("check")
    if not isinstance(c, Mapping):
        return ""
    planted = "found both planted drifts" if c.get("found_all_planted") else "MISSED a drift"
    slow = int(c["commands_over_1ms"])
    longest = f"the longest {int(c['longest_command_us']):,} µs" if slow else "none"
    resent = resent_us(c)
    if slow and resent is not None:
        longest += f"; sent again, the same commands took at most {resent:,} µs"
    return (
        f"check() on {int(c['depth']):,} jobs: {planted}, walking {int(c['members']):,} members "
        f"and {int(c['rows']):,} rows with {int(c['commands']):,} server commands in "
        f"{int(c['calls']):,} round trips ({float(c['wall_s']):.1f} s); commands of 1 ms or more: "
        f"{slow:,} ({longest}); the server waited {float(c['server_waited_ms']):,.0f} ms for a CPU"
    )


def resent_us(c: Mapping[str, Any]) -> int | None:
    """The longest own time of the check's slow commands, sent again; None if not measured."""
    value = c.get("longest_command_resent_us")
    return int(value) if isinstance(value, int | float) and c.get("commands_resent") else None
