"""Read a benchmark run (``make bench``) back as tables, verdicts and bar charts.

``benchmarks/run.py`` writes its measurements to ``benchmarks/results.json``: every figure as
the values of several repeats, the ratios the issue sets goals for, the wire cost of one job,
and the machine it ran on. :func:`read` turns that file into a :class:`Report` of plain rows
(no pandas): figures and ratios with their median, min and max, the targets with a verdict
recomputed here from the numbers, and the bars of :func:`throughput_chart` and
:func:`wire_chart`.

:func:`counting` and :func:`transition_calls` need no benchmark file: they count, live, the
requests the client sends for each transition, on whichever server the lab is using.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from echomq_lab import branded, clock, jobs, queues, scripts
from echomq_lab.widgets.style import MUTED, STATE_COLOURS, message_html

#: The repository's committed results, found from the package (not from the working directory).
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "results.json"

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


class ResultsMissing(FileNotFoundError):
    """There is no results file where one was looked for."""


class ResultsInvalid(ValueError):
    """The results file is not JSON, or lacks something a report needs."""


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


@dataclass(frozen=True)
class TargetRow:
    """One goal of the issue next to what was measured; ``met`` is None when not measured."""

    name: str
    goal: str
    got: str
    met: bool | None


@dataclass(frozen=True)
class WireRow:
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


def load(path: str | Path | None = None) -> dict[str, Any]:
    """The raw results at ``path`` (default: the repository's ``benchmarks/results.json``)."""
    where = Path(path) if path is not None else DEFAULT_PATH
    if not where.is_file():
        raise ResultsMissing(
            f"no benchmark results at {where}: run `make bench` in the repository to measure them"
        )
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsInvalid(f"{where} is not a JSON results file: {exc}") from None
    if not isinstance(data, dict):
        raise ResultsInvalid(f"{where} holds a JSON {type(data).__name__}, not an object")
    return data


def read(path: str | Path | None = None) -> Report:
    """:func:`load` then :func:`report`: the results at ``path`` as a :class:`Report`."""
    return report(load(path))


def _get(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(data, Mapping) or key not in data:
        raise ResultsInvalid(f"the results lack {where}{key}")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ResultsInvalid(f"{where}{key} should be {_kind_name(kind)}, not {value!r}")
    return value


def _section(results: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``results[key]`` when it is an object, ``{}`` when absent; ResultsInvalid otherwise."""
    value = results.get(key, {})
    if not isinstance(value, Mapping):
        raise ResultsInvalid(f"{key} should be an object, not {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _number(data: Mapping[str, Any], key: str, where: str) -> float:
    value = float(_get(data, key, (int, float), where))
    if not math.isfinite(value):
        raise ResultsInvalid(f"{where}{key} should be a finite number, not {value!r}")
    return value


def figure_rows(results: Mapping[str, Any]) -> list[FigureRow]:
    """Every figure in file order: its median, min and max over the repeats."""
    rows = []
    for key, fig in _get(results, "figures", dict, "").items():
        where = f"figures.{key}."
        rows.append(
            FigureRow(
                key=key,
                label=FIGURE_LABELS.get(key, key),
                unit=str(_get(fig, "unit", str, where)),
                median=_number(fig, "median", where),
                min=_number(fig, "min", where),
                max=_number(fig, "max", where),
                repeats=len(fig.get("values", [])),
                note=str(fig.get("note", "")),
            )
        )
    return rows


def ratio_rows(results: Mapping[str, Any]) -> list[RatioRow]:
    """Every ratio in file order, with its CPU-time estimate when the run recorded one."""
    estimates = _section(results, "cpu_estimates")
    rows = []
    for key, ratio in _get(results, "ratios", dict, "").items():
        where = f"ratios.{key}."
        est = estimates.get(key)
        rows.append(
            RatioRow(
                key=key,
                label=RATIO_LABELS.get(key, key),
                median=_number(ratio, "median", where),
                min=_number(ratio, "min", where),
                max=_number(ratio, "max", where),
                cpu_estimate=float(est) if isinstance(est, int | float) else None,
                note=str(ratio.get("note", "")),
            )
        )
    return rows


# ---------------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class RatioGoal:
    """A goal on a ratio's median: at least ``at_least``, shown with ``fmt``."""

    name: str
    key: str
    at_least: float
    fmt: str = "{:.2f}"


#: The issue's goals on ratios, in the order the targets table lists them.
RATIO_GOALS: tuple[RatioGoal, ...] = (
    RatioGoal("cycle vs limit / 3", "cycle_vs_limit_over_3", 0.90),
    RatioGoal("pipelined enqueue vs its limit", "pipelined_enqueue_vs_limit", 0.85),
    RatioGoal("cycle vs python-rq", "cycle_vs_rq", 10.0, "{:.1f}x"),
    RatioGoal("embedded cycle vs Valkey", "embedded_vs_valkey", 0.60),
)
#: Widget responsiveness goal (p95, ms) and the notebook suite's wall-time goal (s).
CLICK_P95_MS = 50.0
NBVAL_WALL_S = 60.0


def _ratio_target(results: Mapping[str, Any], goal: RatioGoal) -> TargetRow:
    shown = ">= " + goal.fmt.format(goal.at_least)
    ratios = _get(results, "ratios", dict, "")
    if goal.key not in ratios:
        return TargetRow(goal.name, shown, "not measured", None)
    median = _number(ratios[goal.key], "median", f"ratios.{goal.key}.")
    got = goal.fmt.format(median)
    est = _section(results, "cpu_estimates").get(goal.key)
    if isinstance(est, int | float):
        got += f" (CPU est. {goal.fmt.format(est)})"
    return TargetRow(goal.name, shown, got, median >= goal.at_least)


def _one_evalsha_target(rows: Sequence[TransitionRow]) -> TargetRow:
    warm = [r for r in rows if "cold" not in r.name]
    if not warm:
        return TargetRow("EVALSHA per transition", "exactly 1", "not measured", None)
    bad = sorted(
        r.name
        for r in warm
        if r.evalsha != 1 or r.round_trips != 1 or r.top_level != {"evalsha": 1}
    )
    got = f"1 for all {len(warm)}" if not bad else f"not 1 for {', '.join(bad)}"
    return TargetRow("EVALSHA per transition", "exactly 1", got, not bad)


def _click_target(results: Mapping[str, Any]) -> TargetRow:
    goal = f"< {CLICK_P95_MS:.0f} ms"
    w = results.get("widgets")
    if not isinstance(w, Mapping) or not isinstance(w.get("p95_ms"), int | float):
        return TargetRow("click-to-render p95", goal, "not measured", None)
    p95 = float(w["p95_ms"])
    return TargetRow("click-to-render p95", goal, f"{p95:.1f} ms", p95 < CLICK_P95_MS)


def _nbval_target(results: Mapping[str, Any]) -> TargetRow:
    goal = f"< {NBVAL_WALL_S:.0f} s, passing"
    nb = results.get("notebooks")
    if not isinstance(nb, Mapping):
        return TargetRow("nbval suite", goal, "not run (--with-notebooks)", None)
    wall = _number(nb, "wall_s", "notebooks.")
    code = int(_number(nb, "exit_code", "notebooks."))
    return TargetRow(
        "nbval suite", goal, f"{wall:.1f} s (exit {code})", code == 0 and wall < NBVAL_WALL_S
    )


def targets(results: Mapping[str, Any]) -> list[TargetRow]:
    """The issue's goals, each judged here from the numbers (a ratio by its median)."""
    ratio_goals = {g.key: g for g in RATIO_GOALS}
    out = [
        _ratio_target(results, ratio_goals[k])
        for k in ("cycle_vs_limit_over_3", "pipelined_enqueue_vs_limit")
    ]
    if "cycle_vs_rq" in _get(results, "ratios", dict, ""):
        out.append(_ratio_target(results, ratio_goals["cycle_vs_rq"]))
    out.append(_one_evalsha_target(transition_rows(results)))
    out.append(_ratio_target(results, ratio_goals["embedded_vs_valkey"]))
    out.append(_click_target(results))
    out.append(_nbval_target(results))
    return out


def stored_targets(results: Mapping[str, Any]) -> list[TargetRow]:
    """The verdicts the benchmark itself wrote into the file (empty if it wrote none)."""
    rows = []
    for i, t in enumerate(results.get("targets", [])):
        where = f"targets[{i}]."
        met = t.get("met") if isinstance(t, Mapping) else None
        rows.append(
            TargetRow(
                name=str(_get(t, "name", str, where)),
                goal=str(_get(t, "goal", str, where)),
                got=str(_get(t, "got", str, where)),
                met=met if isinstance(met, bool) else None,
            )
        )
    return rows


# ------------------------------------------------------------------------------- wire costs


def transition_rows(results: Mapping[str, Any]) -> list[TransitionRow]:
    """Per transition, as measured on Valkey: EVALSHAs, round trips, commands inside."""
    rows = []
    for name, c in _section(results, "commands_per_transition").items():
        where = f"commands_per_transition.{name}."
        rows.append(
            TransitionRow(
                name=name,
                evalsha=int(_number(c, "evalsha", where)),
                round_trips=int(_number(c, "round_trips", where)),
                top_level={str(k): int(v) for k, v in _get(c, "top_level", dict, where).items()},
                nested={str(k): int(v) for k, v in _get(c, "nested", dict, where).items()},
            )
        )
    return rows


def wire_rows(results: Mapping[str, Any]) -> list[WireRow]:
    """One job's wire cost: ours (enqueue + claim + complete), then python-rq's if measured."""
    wire = _get(results, "wire", dict, "")
    ours = _get(wire, "echomq", dict, "wire.")
    rows = [
        WireRow(
            "echomq cycle",
            _number(ours, "round_trips_per_job", "wire.echomq."),
            _number(ours, "commands_per_job", "wire.echomq."),
        )
    ]
    theirs = wire.get("rq")
    if isinstance(theirs, Mapping):
        rows.append(
            WireRow(
                "python-rq",
                _number(theirs, "round_trips_per_job", "wire.rq."),
                _number(theirs, "commands_per_job", "wire.rq."),
            )
        )
    return rows


def server_time_line(results: Mapping[str, Any]) -> str:
    """The server's own time per job inside the scripts, beside three no-op scripts' time."""
    ours = _section(_section(results, "wire"), "echomq")
    spent, noop = ours.get("server_us_per_job"), ours.get("server_us_per_3_noops")
    if not isinstance(spent, int | float) or not isinstance(noop, int | float):
        return "server time inside the scripts: not recorded"
    return (
        f"server time inside the scripts, per job: {spent:.1f} us for enqueue + claim + "
        f"complete, {noop:.1f} us for three no-op scripts"
    )


def rq_commands_per_job(results: Mapping[str, Any]) -> list[tuple[str, float]]:
    """python-rq's server commands per job (its last repeat), most frequent first."""
    rq = _section(results, "wire").get("rq")
    if not isinstance(rq, Mapping):
        return []
    jobs_run = _number(rq, "jobs_per_repeat", "wire.rq.")
    delta = _section(rq, "last_commandstats_delta")
    per_job = [(str(k), int(v) / jobs_run) for k, v in delta.items()]
    return sorted(per_job, key=lambda kv: (-kv[1], kv[0]))


# ----------------------------------------------------------------------------- the machine


def machine_line(results: Mapping[str, Any]) -> str:
    """Where the run happened: hardware, Python and every server/client version, one line."""
    m = _get(results, "machine", dict, "")
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


# ------------------------------------------------------------------------------------- bars

#: Bar colours: the server's limit grey, our library green, the bare scripts blue, the
#: embedded server purple, python-rq orange.
BAR_COLOURS: dict[str, str] = {
    "limit": MUTED,
    "ours": STATE_COLOURS["completed"],
    "bare": STATE_COLOURS["pending"],
    "embedded": STATE_COLOURS["scheduled"],
    "rq": STATE_COLOURS["active"],
}


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


def _new_axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    return ax if ax is not None else Figure(figsize=size, layout="constrained").add_subplot()


def throughput_chart(rep: Report, ax: Axes | None = None) -> Axes:
    """Bars of jobs per second (median), whiskers from min to max, each value written on top."""
    ax = _new_axes(ax, (9, 4))
    bars = rep.bars
    xs = list(range(len(bars)))
    heights = [b.median for b in bars]
    below = [b.median - b.low for b in bars]
    above = [b.high - b.median for b in bars]
    ax.bar(
        xs,
        heights,
        color=[b.colour for b in bars],
        yerr=[below, above],
        capsize=4,
        ecolor="#333333",
    )
    for x, b in zip(xs, bars, strict=True):
        ax.annotate(
            f"{b.median:,.0f}", (x, b.median), xytext=(6, 3), textcoords="offset points", fontsize=9
        )
    ax.set_xticks(xs, [b.label for b in bars])
    ax.set_ylabel("jobs/s (median; whiskers min..max)")
    ax.set_title(f"One connection, full job cycle — measured {rep.date[:10]}")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return ax


def wire_chart(rep: Report, ax: Axes | None = None) -> Axes:
    """Per job, ours beside python-rq's: round trips from the client, commands on the server."""
    ax = _new_axes(ax, (6, 3.5))
    measures = ("round trips", "commands")
    width = 0.38
    colours = {"echomq cycle": BAR_COLOURS["ours"], "python-rq": BAR_COLOURS["rq"]}
    for i, row in enumerate(rep.wire):
        xs = [m + (i - (len(rep.wire) - 1) / 2) * width for m in range(len(measures))]
        values = [row.round_trips, row.commands]
        ax.bar(xs, values, width, label=row.who, color=colours.get(row.who, MUTED))
        for x, v in zip(xs, values, strict=True):
            ax.annotate(
                f"{v:.0f}",
                (x, v),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=9,
            )
    ax.set_xticks(range(len(measures)), [f"{m} per job" for m in measures])
    ax.set_ylabel("per job")
    ax.legend()
    ax.set_title("What one job costs on the wire")
    return ax


# ----------------------------------------------------------------------------------- report


def report(results: Mapping[str, Any]) -> Report:
    """Every table and bar of ``results`` (the parsed JSON of a benchmark run)."""
    if not isinstance(results, Mapping):
        raise ResultsInvalid(f"results should be a JSON object, not {type(results).__name__}")
    return Report(
        date=str(_get(results, "date", str, "")),
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
        met = {True: "yes", False: "NO", None: "-"}[t.met]
        lines.append(f"{t.name:<32}{t.goal:<18}{t.got:<26}{met}")
    return "\n".join(lines)


def targets_html(rows: Sequence[TargetRow]) -> str:
    """The targets as coloured one-line messages (green met, red missed, grey not measured)."""
    out = []
    for t in rows:
        text = f"{t.name}: goal {t.goal}, got {t.got}"
        if t.met is None:
            out.append(
                '<div class="emq-message emq-unmeasured" '
                f'style="color:{MUTED};font-family:monospace">– {html.escape(text)}</div>'
            )
        else:
            out.append(message_html(text, t.met))
    return "".join(out)


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


# ----------------------------------------------------------------------- counting, live


@contextmanager
def counting(conn: redis.Redis) -> Iterator[list[str]]:
    """Record the name of every command ``conn`` sends inside the block, in order.

    Each ``execute_command`` call of a client that is not pipelining is one request and one
    reply: one round trip. The client is restored when the block ends, even on an error.
    """
    calls: list[str] = []
    original: Callable[..., Any] = conn.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        calls.append(str(args[0]).upper())
        return original(*args, **options)

    conn.__dict__["execute_command"] = counted
    try:
        yield calls
    finally:
        conn.__dict__.pop("execute_command", None)


def calls_text(calls: Sequence[str]) -> str:
    """``["EVALSHA"]`` → ``"1 EVALSHA"``; several → ``"3 requests: EVALSHA, SCRIPT LOAD, ..."``."""
    if not calls:
        return "no request"
    if len(calls) == 1:
        return f"1 {calls[0]}"
    return f"{len(calls)} requests: {', '.join(calls)}"


@dataclass(frozen=True)
class Traced:
    """One transition called live: what it answered and the requests the client sent."""

    name: str
    reply: str
    calls: tuple[str, ...]

    def line(self) -> str:
        return f"{self.name + ':':<24}{calls_text(self.calls):<16}-> {self.reply}"


def warm_up(conn: redis.Redis) -> None:
    """Load every protocol script on the server (idempotent), so no call meets NOSCRIPT."""
    for name in scripts.names():
        conn.script_load(scripts.load(name).source)


#: 2100-01-01 in Unix ms: a run-at time that is never due while the walk runs.
FAR_FUTURE_MS = 4_102_444_800_000


def transition_calls(conn: redis.Redis, queue: str) -> list[Traced]:
    """Walk one job through every transition on ``queue`` and count each call's requests.

    The queue is emptied first and last; the script cache is warmed first. Waiting for a lease
    to run out (before ``reap``) reads the server's clock, outside the counted calls.
    """
    queues.reset(conn, queue)
    warm_up(conn)
    out: list[Traced] = []

    def traced(name: str, call: Callable[[], object], show: Callable[[Any], str] = str) -> Any:
        with counting(conn) as calls:
            reply = call()
        out.append(Traced(name, show(reply), tuple(calls)))
        return reply

    def token(c: jobs.Claimed | None) -> str:
        return "nothing pending" if c is None else f"token {c.token}"

    def claim(lease_ms: int) -> jobs.Claimed:
        got: jobs.Claimed | None = traced("claim", lambda: jobs.claim(conn, queue, lease_ms), token)
        if got is None:
            raise RuntimeError(f"claim on {queue!r} found nothing pending")
        return got

    first, later, fixed = branded.mint(), branded.mint(), branded.mint()
    try:
        traced("enqueue", lambda: jobs.enqueue(conn, queue, first, b'{"n": 1}'))
        c = claim(60_000)
        traced(
            "extend",
            lambda: jobs.extend(conn, queue, first, c.token, 60_000),
            lambda _: "lease pushed back",
        )
        traced("retry", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "boom"))
        traced("promote", lambda: jobs.promote(conn, queue), lambda n: f"{n} moved")
        c = claim(1)
        clock.wait_out_lease(conn, queue, first)
        traced("reap", lambda: jobs.reap(conn, queue), lambda n: f"{n} returned")
        c = claim(60_000)
        traced("retry (at the cap)", lambda: jobs.retry(conn, queue, first, c.token, 0, 3, "x"))
        traced("reprocess", lambda: jobs.reprocess(conn, queue, first))
        c = claim(60_000)
        traced("complete", lambda: jobs.complete(conn, queue, first, c.token))
        traced("enqueue_in", lambda: jobs.enqueue_in(conn, queue, later, b"{}", 60_000))
        traced("enqueue_at", lambda: jobs.enqueue_at(conn, queue, fixed, b"{}", FAR_FUTURE_MS))
    finally:
        queues.reset(conn, queue)
    return out
