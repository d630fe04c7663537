"""The goals set for a benchmark run, each judged here from the numbers it recorded.

A ratio's goal is judged by the ratio's median; the one-EVALSHA goal by the per-transition
counts (:func:`benchmarks.results.transition_rows`); the click, notebook and deep-queue goals
by their own figures. A goal the run did not measure is reported with ``met`` None, never as
met.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.results import (
    TransitionRow,
    number,
    points,
    resent_us,
    scale_section,
    section,
    transition_rows,
    value,
)
from echomq_lab.widgets import look as theme


@dataclass(frozen=True)
class TargetRow:
    """One goal next to what was measured; ``met`` is None when not measured."""

    name: str
    goal: str
    got: str
    met: bool | None


@dataclass(frozen=True)
class RatioGoal:
    """A goal on a ratio's median: at least ``at_least``, shown with ``fmt``."""

    name: str
    key: str
    at_least: float
    fmt: str = "{:.2f}"


#: The goals on ratios, in the order the targets table lists them.
RATIO_GOALS: tuple[RatioGoal, ...] = (
    RatioGoal("cycle vs limit / 3", "cycle_vs_limit_over_3", 0.80),
    RatioGoal("pipelined enqueue vs its limit", "pipelined_enqueue_vs_limit", 0.85),
    RatioGoal("cycle vs python-rq", "cycle_vs_rq", 10.0, "{:.1f}x"),
    RatioGoal("embedded cycle vs Valkey", "embedded_vs_valkey", 0.60),
)
#: Widget responsiveness goal (p95, ms) and the notebook suite's wall-time goal (s).
CLICK_P95_MS = 50.0
NBVAL_WALL_S = 60.0
#: The deep-queue goals: click-to-render p95 (ms) and the longest server command (µs).
DEEP_CLICK_P95_MS = 50.0
LONGEST_COMMAND_US = 5000


def _ratio_target(results: Mapping[str, Any], goal: RatioGoal) -> TargetRow:
    shown = ">= " + goal.fmt.format(goal.at_least)
    ratios = value(results, "ratios", dict, "")
    if goal.key not in ratios:
        return TargetRow(goal.name, shown, "not measured", None)
    median = number(ratios[goal.key], "median", f"ratios.{goal.key}.")
    got = goal.fmt.format(median)
    est = section(results, "cpu_estimates").get(goal.key)
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
    wall = number(nb, "wall_s", "notebooks.")
    code = int(number(nb, "exit_code", "notebooks."))
    return TargetRow(
        "nbval suite", goal, f"{wall:.1f} s (exit {code})", code == 0 and wall < NBVAL_WALL_S
    )


def targets(results: Mapping[str, Any]) -> list[TargetRow]:
    """Every goal, each judged here from the numbers (a ratio by its median).

    The python-rq goal is listed only when the run measured python-rq.
    """
    ratio_goals = {g.key: g for g in RATIO_GOALS}
    out = [
        _ratio_target(results, ratio_goals[k])
        for k in ("cycle_vs_limit_over_3", "pipelined_enqueue_vs_limit")
    ]
    if "cycle_vs_rq" in value(results, "ratios", dict, ""):
        out.append(_ratio_target(results, ratio_goals["cycle_vs_rq"]))
    out.append(_one_evalsha_target(transition_rows(results)))
    out.append(_ratio_target(results, ratio_goals["embedded_vs_valkey"]))
    out.append(_click_target(results))
    out.append(_nbval_target(results))
    if "scale" in results:  # the deep-queue goals (benchmarks/scale.py)
        out += scale_targets(results)
    return out


def stored_targets(results: Mapping[str, Any]) -> list[TargetRow]:
    """The verdicts the benchmark itself wrote into the file (empty if it wrote none)."""
    rows = []
    for i, t in enumerate(results.get("targets", [])):
        where = f"targets[{i}]."
        met = t.get("met") if isinstance(t, Mapping) else None
        rows.append(
            TargetRow(
                name=str(value(t, "name", str, where)),
                goal=str(value(t, "goal", str, where)),
                got=str(value(t, "got", str, where)),
                met=met if isinstance(met, bool) else None,
            )
        )
    return rows


def _longest_ms(us: int) -> str:
    """A longest-command figure in a target row: ``"2.8 ms"``, or ``"under 1 ms"`` for none."""
    return f"{us / 1000:.1f} ms" if us else "under 1 ms"


def scale_targets(results: Mapping[str, Any]) -> list[TargetRow]:
    """The deep-queue goals, judged at the deepest queue of the crowded server."""
    pts = points(results)
    if not pts:
        return []
    deep = max(pts, key=lambda p: (p.keyspace != "empty", p.depth))
    where = f"{deep.depth:,} jobs, {deep.keyspace}"
    c = scale_section(results).get("check")
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
        resent = resent_us(c)
        judged = longest if resent is None else resent
        got = _longest_ms(longest)
        if resent is not None:
            got = f"{resent:,} µs sent again ({got} as logged)"
        out.append(TargetRow(
            "longest command of check()", f"< {LONGEST_COMMAND_US / 1000:.0f} ms",
            got, judged < LONGEST_COMMAND_US,
        ))  # fmt: skip
    return out


def verdicts_agree(results: Mapping[str, Any]) -> bool:
    """True when the verdicts judged here equal the ones the benchmark stored in the file."""
    return [(t.name, t.met) for t in targets(results)] == [
        (t.name, t.met) for t in stored_targets(results)
    ]


def targets_text(rows: Sequence[TargetRow]) -> str:
    """The targets as a fixed-width table: goal, what was measured, met or not."""
    wide = [max([len(h), *(len(getattr(t, h)) for t in rows)]) + 2 for h in ("name", "goal", "got")]
    head = f"{'target':<{wide[0]}}{'goal':<{wide[1]}}{'got':<{wide[2]}}met?"
    lines = [head, "-" * len(head)]
    for t in rows:
        lines.append(
            f"{t.name:<{wide[0]}}{t.goal:<{wide[1]}}{t.got:<{wide[2]}}{theme.VERDICTS[t.met].word}"
        )
    return "\n".join(lines)
