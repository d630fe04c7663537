"""The registry of the protocol's transitions, as data, each defined once: everything that lists
transitions, calls one for a demonstration, draws one on the state diagram or shows its reply
reads :data:`TRANSITIONS`. A transition is its script (``scripts/<script>.lua``), its handle in
:mod:`echomq_lab.jobs` and its entry here, and nothing else: ``make transition NAME=...`` writes
all three (docs/authoring.md, "Adding a transition"; the protocol's facts are in docs/protocol.md).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from dataclasses import dataclass

#: Where a job is before it exists, and after it is retired (its row deleted).
START, RETIRED = "start", "completed"


@dataclass(frozen=True)
class Edge:
    """One arrow on the lifecycle diagram: from ``source`` to ``target``, drawn as ``label``.

    ``path`` (an SVG path) and ``label_at`` (the point the label is centred on) place it by
    hand; left None, the diagram computes both (:mod:`echomq_lab.widgets.diagram`)."""

    source: str
    target: str
    label: str
    path: str | None = None
    label_at: tuple[int, int] | None = None


#: The kinds of value a demonstration call passes after the client and the queue
#: (:attr:`Call.takes`), each with what the lab gives for it.
ARGUMENTS: dict[str, str] = {
    "job": "the followed job's id (a newly minted one for a transition that starts a job)",
    "payload": "the job's payload",
    "token": "the token the job's last claim handed out",
    "lease": "a lease, in ms",
    "delay": "a delay, in ms",
    "max_attempts": "the cap on attempts",
    "error": "what went wrong, in words",
}


@dataclass(frozen=True)
class Call:
    """How the lab demonstrates a transition: the :mod:`jobs` ``handle`` it calls, and what that
    handle takes after the client and the queue, in order (kinds of :data:`ARGUMENTS`)."""

    handle: str
    takes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [k for k in self.takes if k not in ARGUMENTS]
        if unknown:
            choices = ", ".join(ARGUMENTS)
            raise ValueError(f"{self.handle} takes {unknown[0]!r}: pick from {choices}")


@dataclass(frozen=True)
class Transition:
    """One transition: ``handles`` name the :mod:`jobs` functions that run ``script``; ``writes``
    the ``state`` values it can leave (empty: none; :data:`RETIRED`: it deletes the row); a
    ``fenced`` caller presents the lease's token; ``dropping`` names the handle's variant that
    also returns the members dropped for want of a job (claim, promote, reap), else None.
    ``call`` is how the lab demonstrates it, ``label`` what it does in a few words (a button's
    tooltip), ``reply`` how a reply reads (a format string; ``{}`` is the reply)."""

    name: str
    script: str
    handles: tuple[str, ...]
    writes: tuple[str, ...]
    edges: tuple[Edge, ...]
    fenced: bool
    call: Call
    label: str
    reply: str = "{}"
    dropping: str | None = None

    @property
    def retires(self) -> bool:
        """True when it can end a row (it deletes the job's hash: :data:`RETIRED` in ``writes``)."""
        return RETIRED in self.writes

    @property
    def starts(self) -> bool:
        """True when it makes a new job (an edge leaves :data:`START`)."""
        return any(e.source == START for e in self.edges)

    @property
    def picks(self) -> bool:
        """True when it takes no job: its script picks the jobs (claim the oldest pending,
        promote and reap whichever are due)."""
        return "job" not in self.call.takes

    def arguments(self, values: Mapping[str, object]) -> tuple[object, ...]:
        """The values its demonstration call passes after the client and the queue, in order,
        picked from ``values`` by kind; ValueError naming the first one missing (None)."""
        missing = [k for k in self.call.takes if values.get(k) is None]
        if missing:
            raise ValueError(f"{self.name} needs {ARGUMENTS[missing[0]]}")
        return tuple(values[k] for k in self.call.takes)

    def reads(self, reply: object) -> str:
        """A reply in words (``reply`` filled in); None reads ``nothing``."""
        return "nothing" if reply is None else self.reply.format(reply)


_LEASED = ("job", "token")

TRANSITIONS: tuple[Transition, ...] = (
    Transition("enqueue", "enqueue", ("enqueue",), ("pending",),
               (Edge(START, "pending", "enqueue"),), fenced=False,
               call=Call("enqueue", ("job", "payload")),
               label="write a new job's row and queue it in pending"),
    Transition("claim", "claim", ("claim",), ("active",),
               (Edge("pending", "active", "claim"),), fenced=False,
               call=Call("claim", ("lease",)), reply="token {0.token}",
               label="lease the oldest pending job; its new attempts is the token",
               dropping="claim_dropping"),
    Transition("schedule", "schedule", ("enqueue_at", "enqueue_in"), ("scheduled",),
               (Edge(START, "scheduled", "enqueue_in / enqueue_at"),), fenced=False,
               call=Call("enqueue_in", ("job", "payload", "delay")),
               label="write a new job's row, due after a delay (or at a time)"),
    Transition("retry", "retry", ("retry",), ("scheduled", "dead"),
               (Edge("active", "scheduled", "retry"),
                Edge("active", "dead", "retry (at the cap)")), fenced=True,
               call=Call("retry", (*_LEASED, "delay", "max_attempts", "error")),
               label="give the lease back after a failure; the job is scheduled again"),
    Transition("promote", "promote", ("promote",), ("pending",),
               (Edge("scheduled", "pending", "promote"),), fenced=False,
               call=Call("promote"), reply="{} moved",
               label="move the scheduled jobs that are due to pending",
               dropping="promote_dropping"),
    Transition("reap", "reap", ("reap",), ("pending",),
               (Edge("active", "pending", "reap"),), fenced=False,
               call=Call("reap"), reply="{} returned",
               label="return the jobs whose lease ran out to pending",
               dropping="reap_dropping"),
    Transition("reprocess", "reprocess", ("reprocess",), ("pending",),
               (Edge("dead", "pending", "reprocess"),), fenced=False,
               call=Call("reprocess", ("job",)),
               label="send a dead job back to pending"),
    Transition("complete", "complete", ("complete",), (RETIRED,),
               (Edge("active", RETIRED, "complete"),), fenced=True,
               call=Call("complete", _LEASED),
               label="retire the job (delete its row and lease) if the token is the row's attempts "
                     "(the lab also asks that its lease still be held)"),
    Transition("extend", "extend", ("extend",), (),
               (Edge("active", "active", "extend"),), fenced=True,
               call=Call("extend", (*_LEASED, "lease")), reply="lease pushed back",
               label="push the lease's deadline later, if the token is the row's attempts (the lab "
                     "also asks that the lease still be held)"),
)

#: The transition names, in the order the panels offer them.
NAMES: tuple[str, ...] = tuple(t.name for t in TRANSITIONS)
#: The transitions of one job cycle, in order (the page lab-one-round-trip measures it): the
#: job is written, leased and retired by its worker. Named, not searched for: another way to
#: retirement (a withdrawal, say) is no cycle.
CYCLE: tuple[str, ...] = ("enqueue", "claim", "complete")
#: Every handle of every transition (``jobs`` functions), in registry order.
HANDLES: tuple[str, ...] = tuple(h for t in TRANSITIONS for h in t.handles)
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


def by_handle(handle: str) -> Transition:
    """The transition whose handles (or dropping variant) include ``handle``."""
    for t in TRANSITIONS:
        if handle in (*t.handles, t.dropping):
            return t
    raise ValueError(f"no transition has the handle {handle!r}")


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
