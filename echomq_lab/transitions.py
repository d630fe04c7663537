"""The registry of the protocol's transitions, as data, each defined once: everything that lists
transitions reads :data:`TRANSITIONS`; a new one is an entry here plus its ``.lua`` file.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

#: Where a job is before it exists, and after it is retired (its row deleted).
START, RETIRED = "start", "completed"


@dataclass(frozen=True)
class Edge:
    """One arrow on the lifecycle diagram: from ``source`` to ``target``, drawn as ``label``."""

    source: str
    target: str
    label: str


@dataclass(frozen=True)
class Transition:
    """One transition: ``handles`` name the :mod:`jobs` functions that run ``script``; ``writes``
    the ``state`` values it can leave (empty: none; :data:`RETIRED`: it deletes the row); a
    ``fenced`` caller presents the lease's token; ``dropping`` names the handle's variant that
    also returns the members dropped for want of a job (claim, promote, reap), else None."""

    name: str
    script: str
    handles: tuple[str, ...]
    writes: tuple[str, ...]
    edges: tuple[Edge, ...]
    fenced: bool
    dropping: str | None = None

    @property
    def handle_names(self) -> tuple[str, ...]:
        """The handles' names as ``jobs`` spells them, e.g. ``("enqueue_at", "enqueue_in")``."""
        return self.handles


TRANSITIONS: tuple[Transition, ...] = (
    Transition("enqueue", "enqueue", ("enqueue",), ("pending",),
               (Edge(START, "pending", "enqueue"),), False),
    Transition("claim", "claim", ("claim",), ("active",),
               (Edge("pending", "active", "claim"),), False, "claim_dropping"),
    Transition("schedule", "schedule", ("enqueue_at", "enqueue_in"), ("scheduled",),
               (Edge(START, "scheduled", "enqueue_in / enqueue_at"),), False),
    Transition("retry", "retry", ("retry",), ("scheduled", "dead"),
               (Edge("active", "scheduled", "retry"),
                Edge("active", "dead", "retry (at the cap)")), True),
    Transition("promote", "promote", ("promote",), ("pending",),
               (Edge("scheduled", "pending", "promote"),), False, "promote_dropping"),
    Transition("reap", "reap", ("reap",), ("pending",),
               (Edge("active", "pending", "reap"),), False, "reap_dropping"),
    Transition("reprocess", "reprocess", ("reprocess",), ("pending",),
               (Edge("dead", "pending", "reprocess"),), False),
    Transition("complete", "complete", ("complete",), (RETIRED,),
               (Edge("active", RETIRED, "complete"),), True),
    Transition("extend", "extend", ("extend",), (),
               (Edge("active", "active", "extend"),), True),
)

#: The transition names, in the order the panels offer them.
NAMES: tuple[str, ...] = tuple(t.name for t in TRANSITIONS)
#: The names of the transitions that present the job's token.
FENCED: tuple[str, ...] = tuple(t.name for t in TRANSITIONS if t.fenced)
#: The script file of each transition (``<script>.lua`` in :mod:`echomq_lab.scripts`).
SCRIPTS: tuple[str, ...] = tuple(t.script for t in TRANSITIONS)
#: Every edge the diagram draws, in registry order.
EDGES: tuple[tuple[str, Edge], ...] = tuple((t.name, e) for t in TRANSITIONS for e in t.edges)

_BY_NAME = {t.name: t for t in TRANSITIONS}


def get(name: str) -> Transition:
    """The transition called ``name``; ValueError naming the choices when there is none."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown transition {name!r}: pick one of {', '.join(NAMES)}") from None


def by_script(script: str) -> Transition:
    """The transition whose script file is ``script``."""
    for t in TRANSITIONS:
        if t.script == script:
            return t
    raise ValueError(f"no transition runs the script {script!r}")


def path(source: str, target: str) -> tuple[str, ...]:
    """The transitions along the shortest way from ``source`` to ``target`` on the diagram
    (:data:`EDGES`, in registry order); ValueError if there is none."""
    way: dict[str, tuple[str, ...]] = {source: ()}
    todo = collections.deque([source])
    while todo:
        at = todo.popleft()
        if at == target:
            return way[at]
        for name, edge in EDGES:
            if edge.source == at and edge.target not in way:
                way[edge.target] = (*way[at], name)
                todo.append(edge.target)
    raise ValueError(f"the diagram has no way from {source} to {target}")
