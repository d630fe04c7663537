"""The registry of the protocol's transitions: each one defined once, here.

A :class:`Transition` is data: the names of its handle(s) in :mod:`echomq_lab.jobs` (look one
up with ``getattr(jobs, name)``), its script file, the
states it writes to the row, the edges it draws on the lifecycle diagram, and whether it is
fenced (the caller presents the token claim minted). The scripts loader, the field facts, the
stories, the diagram, the panels and the benchmarks all read :data:`TRANSITIONS`; a new
transition is one entry here plus its ``.lua`` file.
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
    """One transition of the protocol.

    ``handles`` name the :mod:`jobs` functions that run ``script``; ``writes`` the ``state``
    values the script can leave in the row (empty: it leaves ``state`` alone; :data:`RETIRED`:
    it deletes the row); ``fenced`` means the caller must present the lease's token.
    ``dropping`` names the variant of the handle that also returns the members the script dropped
    because no job stood behind them (orphans, malformed ids), for the transitions that read
    ids from a set (claim, promote, reap); None for the others.
    """

    name: str
    script: str
    handles: tuple[str, ...]
    writes: tuple[str, ...]
    edges: tuple[Edge, ...]
    fenced: bool
    summary: str
    dropping: str | None = None

    @property
    def handle_names(self) -> tuple[str, ...]:
        """The handles' names as ``jobs`` spells them, e.g. ``("enqueue_at", "enqueue_in")``."""
        return self.handles


TRANSITIONS: tuple[Transition, ...] = (
    Transition("enqueue", "enqueue", ("enqueue",), ("pending",),
               (Edge(START, "pending", "enqueue"),), False,
               "writes a new row and adds its id to pending"),
    Transition("claim", "claim", ("claim",), ("active",),
               (Edge("pending", "active", "claim"),), False,
               "leases the oldest pending job and mints its token", "claim_dropping"),
    Transition("schedule", "schedule", ("enqueue_at", "enqueue_in"), ("scheduled",),
               (Edge(START, "scheduled", "enqueue_in / enqueue_at"),), False,
               "writes a new row that runs later, in the schedule set"),
    Transition("retry", "retry", ("retry",), ("scheduled", "dead"),
               (Edge("active", "scheduled", "retry"),
                Edge("active", "dead", "retry (at the cap)")), True,
               "gives the lease back after a failure: another try later, or dead at the cap"),
    Transition("promote", "promote", ("promote",), ("pending",),
               (Edge("scheduled", "pending", "promote"),), False,
               "moves scheduled jobs that are due into pending", "promote_dropping"),
    Transition("reap", "reap", ("reap",), ("pending",),
               (Edge("active", "pending", "reap"),), False,
               "returns jobs whose lease ran out to pending", "reap_dropping"),
    Transition("reprocess", "reprocess", ("reprocess",), ("pending",),
               (Edge("dead", "pending", "reprocess"),), False,
               "sends a dead job back to pending"),
    Transition("complete", "complete", ("complete",), (RETIRED,),
               (Edge("active", RETIRED, "complete"),), True,
               "retires the job: its row and its lease are deleted"),
    Transition("extend", "extend", ("extend",), (),
               (Edge("active", "active", "extend"),), True,
               "pushes the lease's deadline later; the row is not written"),
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
