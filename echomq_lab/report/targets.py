"""The goals set for a benchmark run, each judged here from the numbers it recorded.

A ratio's goal is judged by the ratio's median; the one-EVALSHA goal by the per-transition
counts (:func:`transition_rows`); the click and notebook goals by their own figures. A goal the
run did not measure is reported with ``met`` None, never as met.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from echomq_lab.report.schema import number, section, value


@dataclass(frozen=True)
class TargetRow:
    """One goal next to what was measured; ``met`` is None when not measured."""

    name: str
    goal: str
    got: str
    met: bool | None


@dataclass(frozen=True)
class TransitionRow:
    """One transition measured on Valkey: its EVALSHAs, round trips, and commands inside."""

    name: str
    evalsha: int
    round_trips: int
    top_level: dict[str, int]
    nested: dict[str, int]


@dataclass(frozen=True)
class RatioGoal:
    """A goal on a ratio's median: at least ``at_least``, shown with ``fmt``."""

    name: str
    key: str
    at_least: float
    fmt: str = "{:.2f}"


#: The goals on ratios, in the order the targets table lists them.
RATIO_GOALS: tuple[RatioGoal, ...] = (
    RatioGoal("cycle vs limit / 3", "cycle_vs_limit_over_3", 0.90),
    RatioGoal("cycle vs bare evalsha", "cycle_vs_bare_by_job", 0.97, "{:.3f}"),
    RatioGoal("pipelined enqueue vs its limit", "pipelined_enqueue_vs_limit", 0.85),
    RatioGoal("cycle vs python-rq", "cycle_vs_rq", 10.0, "{:.1f}x"),
    RatioGoal("embedded cycle vs Valkey", "embedded_vs_valkey", 0.60),
)
#: Widget responsiveness goal (p95, ms) and the notebook suite's wall-time goal (s).
CLICK_P95_MS = 50.0
NBVAL_WALL_S = 60.0


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
        for k in ("cycle_vs_limit_over_3", "cycle_vs_bare_by_job", "pipelined_enqueue_vs_limit")
    ]
    if "cycle_vs_rq" in value(results, "ratios", dict, ""):
        out.append(_ratio_target(results, ratio_goals["cycle_vs_rq"]))
    out.append(_one_evalsha_target(transition_rows(results)))
    out.append(_ratio_target(results, ratio_goals["embedded_vs_valkey"]))
    out.append(_click_target(results))
    out.append(_nbval_target(results))
    if "scale" in results:  # the deep-queue goals (benchmarks/scale.py)
        from echomq_lab.report.scale import scale_targets

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
