"""Cost as the work grows, read back: the ``"scale"`` part of a benchmark results file.

``python -m benchmarks.scale`` measures, at each queue depth in an empty server and in one
holding a million other keys, the job cycle, one panel click and the longest server command
during the clicks, plus one whole-queue drift check. :func:`points` reads those rows back,
:func:`table_text` prints them and :func:`chart` draws them on log-log axes (matplotlib is
imported only there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from echomq_lab.report.targets import TargetRow

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: The deep-queue goals: click-to-render p95 (ms) and the longest server command (µs).
DEEP_CLICK_P95_MS = 50.0
LONGEST_COMMAND_US = 5000


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


def _scale(results: Mapping[str, Any]) -> Mapping[str, Any]:
    found = results.get("scale")
    if not isinstance(found, Mapping):
        raise ValueError("the results hold no 'scale' section: run `python -m benchmarks.scale`")
    return found


def points(results: Mapping[str, Any]) -> list[ScalePoint]:
    """Every measured point, in the order measured; ValueError naming a missing field."""
    out = []
    for i, raw in enumerate(_scale(results).get("points", [])):
        try:
            out.append(ScalePoint(**{f.name: _KINDS.get(f.name, float)(raw[f.name])
                                     for f in fields(ScalePoint)}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"scale.points[{i}] is incomplete: {exc}") from None
    return out


def table_text(results: Mapping[str, Any]) -> str:
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
    lines += [check_line(results), parser_line(results)]
    return "\n".join(line for line in lines if line)


def longest_text(us: int) -> str:
    """A longest-command figure as shown: ``"<1,000"`` when SLOWLOG kept none (all under 1 ms)."""
    return f"{us:,}" if us else "<1,000"


def _longest_ms(us: int) -> str:
    """A longest-command figure in a target row: ``"2.8 ms"``, or ``"under 1 ms"`` for none."""
    return f"{us / 1000:.1f} ms" if us else "under 1 ms"


def check_line(results: Mapping[str, Any]) -> str:
    """One line on the whole-queue drift check of the deepest queue, or empty."""
    c = _scale(results).get("check")
    if not isinstance(c, Mapping):
        return ""
    planted = "found both planted drifts" if c.get("found_all_planted") else "MISSED a drift"
    slow = int(c["commands_over_1ms"])
    longest = f"the longest {int(c['longest_command_us']):,} µs" if slow else "none"
    resent = _resent_us(c)
    if slow and resent is not None:
        longest += f"; sent again, the same commands took at most {resent:,} µs"
    return (
        f"check() on {int(c['depth']):,} jobs: {planted}, walking {int(c['members']):,} members "
        f"and {int(c['rows']):,} rows with {int(c['commands']):,} server commands in "
        f"{int(c['calls']):,} round trips ({float(c['wall_s']):.1f} s); commands of 1 ms or more: "
        f"{slow:,} ({longest}); the server waited {float(c['server_waited_ms']):,.0f} ms for a CPU"
    )


def _resent_us(c: Mapping[str, Any]) -> int | None:
    """The longest own time of the check's slow commands, sent again; None if not measured."""
    value = c.get("longest_command_resent_us")
    return int(value) if isinstance(value, int | float) and c.get("commands_resent") else None


def parser_line(results: Mapping[str, Any]) -> str:
    """One line on the cycle with and without hiredis, or empty."""
    p = _scale(results).get("parsers")
    if not isinstance(p, Mapping):
        return ""
    ratio = p["library_vs_bare"]
    return (
        f"hiredis: the cycle runs x{float(p['hiredis_gain']):.2f} faster with redis-py's C parser;"
        f" cycle / bare evalsha {float(ratio['hiredis']):.3f} with it, "
        f"{float(ratio['python']):.3f} without"
    )


#: The lines of the chart: the field, its label, and how to turn it into microseconds.
SERIES: tuple[tuple[str, str, str], ...] = (
    ("cycle_jobs_s", "job cycle (per job)", "-"),
    ("click_p95_ms", "panel click, p95", "--"),
    ("command_p99_us", "script runs in the clicks, p99", "-."),
    ("longest_command_us", "longest server command in the clicks (when 1 ms or more)", ":"),
)
_COLOURS = ("#3b6ea8", "#c2553a")


def _micros(p: ScalePoint, key: str) -> float:
    if key == "cycle_jobs_s":
        return 1e6 / p.cycle_jobs_s
    if key == "click_p95_ms":
        return p.click_p95_ms * 1000
    if key == "command_p99_us":
        return float(max(p.command_p99_us, 1))
    return float(p.longest_command_us) if p.longest_command_us else float("nan")


def chart(results: Mapping[str, Any], ax: Axes) -> None:
    """Each figure against the depth on log-log axes, one colour per keyspace: flat is good."""
    pts = points(results)
    spaces = list(dict.fromkeys(p.keyspace for p in pts))
    for key, label, style in SERIES:
        for colour, space in zip(_COLOURS, spaces, strict=False):
            mine = [p for p in pts if p.keyspace == space]
            ax.plot(
                [p.depth for p in mine], [_micros(p, key) for p in mine], style, marker="o",
                color=colour, label=f"{label}, {space}",
            )  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("jobs in the queue")
    ax.set_ylabel("microseconds")
    ax.set_title("Cost as the queue grows (log-log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def scale_targets(results: Mapping[str, Any]) -> list[TargetRow]:
    """The deep-queue goals, judged at the deepest queue of the crowded server."""
    pts = points(results)
    if not pts:
        return []
    deep = max(pts, key=lambda p: (p.keyspace != "empty", p.depth))
    where = f"{deep.depth:,} jobs, {deep.keyspace}"
    c = _scale(results).get("check")
    out = [
        TargetRow(f"click p95 ({where})", f"< {DEEP_CLICK_P95_MS:.0f} ms",
                  f"{deep.click_p95_ms:.1f} ms", deep.click_p95_ms < DEEP_CLICK_P95_MS),
        TargetRow("longest command in those clicks", f"< {LONGEST_COMMAND_US / 1000:.0f} ms",
                  f"{_longest_ms(deep.longest_command_us)} (the server waited "
                  f"{deep.server_waited_ms:.0f} ms for a CPU)",
                  deep.longest_command_us < LONGEST_COMMAND_US),
    ]  # fmt: skip
    if isinstance(c, Mapping):
        longest = int(c["longest_command_us"]) if int(c["commands_over_1ms"]) else 0
        found = bool(c.get("found_all_planted"))
        out.append(TargetRow(
            f"check() finds the drifts planted deep in {int(c['depth']):,} jobs", "both found",
            "both found" if found else "missed", found,
        ))  # fmt: skip
        # Judged on the commands' own time when they were sent again (SLOWLOG counts a pause of
        # the server mid-command as the command's time); as logged, beside it.
        resent = _resent_us(c)
        judged = longest if resent is None else resent
        got = _longest_ms(longest)
        if resent is not None:
            got = f"{resent:,} µs sent again ({got} as logged)"
        out.append(TargetRow(
            "longest command of check()", f"< {LONGEST_COMMAND_US / 1000:.0f} ms",
            got, judged < LONGEST_COMMAND_US,
        ))  # fmt: skip
    return out
