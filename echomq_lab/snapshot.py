"""Looking at a queue: one atomic snapshot of its four sets and rows, and the drift check.

:func:`snapshot` reads everything in one script run (one round trip, one atomic moment), so the
views never show a half-applied transition. :func:`check` lists every place where a row's
``state`` and the sets disagree; after any sequence of transitions the list is empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import redis

from echomq_lab import keyspace
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import Row
from echomq_lab.scripts import load

#: Which set holds a job in each state.
SET_OF_STATE: dict[str, SetName] = {
    "pending": "pending",
    "active": "active",
    "scheduled": "schedule",
    "dead": "dead",
}

@dataclass(frozen=True)
class Snapshot:
    """One queue at one instant on the server clock.

    ``sets`` maps each set name to its (id, score) pairs in score order; ``rows`` maps each id
    that has a row to that row (a :class:`echomq_lab.row.Row`).
    """

    queue: str
    now_ms: int
    sets: dict[SetName, list[tuple[str, int]]]
    rows: dict[str, Row]

    def members(self, name: SetName) -> list[str]:
        """The ids in set ``name``, lowest score first."""
        return [job_id for job_id, _ in self.sets[name]]

    @cached_property
    def _scores(self) -> dict[SetName, dict[str, int]]:
        """Each set as {id: score}, built once so look-ups stay O(1) on large queues."""
        return {name: dict(pairs) for name, pairs in self.sets.items()}

    def score(self, name: SetName, job_id: str) -> int | None:
        """The score of ``job_id`` in set ``name``, or None if it is not a member."""
        return self._scores[name].get(job_id)

    def holders(self, job_id: str) -> list[SetName]:
        """The names of the sets that hold ``job_id``."""
        return [name for name in SET_NAMES if self.score(name, job_id) is not None]

    def ids(self) -> list[str]:
        """Every id seen in a set or as a row, sorted (that is, in mint order)."""
        seen = set(self.rows)
        for name in SET_NAMES:
            seen.update(self.members(name))
        return sorted(seen)


@dataclass(frozen=True)
class Drift:
    """One disagreement between rows and sets."""

    kind: str  # state-mismatch | in-two-sets | row-in-no-set | member-without-row
    job_id: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.job_id} {self.detail}"


def _pairs(flat: list[Any]) -> list[tuple[str, int]]:
    return [
        (flat[i].decode("ascii"), int(float(flat[i + 1]))) for i in range(0, len(flat), 2)
    ]


def snapshot(conn: redis.Redis, queue: str) -> Snapshot:
    """Read the queue's four sets, all its rows and the server time in one atomic script run."""
    keys = [keyspace.queue_key(queue, name) for name in SET_NAMES]
    prefix = keyspace.job_prefix(queue)
    now, *flats, rows_flat = load("snapshot")(conn, keys, [prefix + "*"])
    sets: dict[SetName, list[tuple[str, int]]] = {
        name: _pairs(flat) for name, flat in zip(SET_NAMES, flats, strict=True)
    }
    rows: dict[str, Row] = {}
    for i in range(0, len(rows_flat), 2):
        job_id = rows_flat[i].decode("ascii")[len(prefix):]
        fields = rows_flat[i + 1]
        rows[job_id] = Row({fields[j]: fields[j + 1] for j in range(0, len(fields), 2)})
    return Snapshot(queue, int(now), sets, rows)


def drifts(snap: Snapshot) -> list[Drift]:
    """Every disagreement in ``snap``; empty when each row's state names the one set holding it."""
    found: list[Drift] = []
    for job_id in snap.ids():
        holders = snap.holders(job_id)
        row = snap.rows.get(job_id)
        if len(holders) > 1:
            found.append(Drift("in-two-sets", job_id, f"is in {' and '.join(holders)}"))
        if row is None:
            found.append(Drift("member-without-row", job_id, f"is in {holders[0]} but has no row"))
            continue
        state = Row(row).state or ""  # plain mappings too (a ledger audit builds its own)
        if not holders:
            found.append(Drift("row-in-no-set", job_id, f"has state {state!r} but is in no set"))
            continue
        want = SET_OF_STATE.get(state)
        if want not in holders:
            found.append(
                Drift("state-mismatch", job_id, f"has state {state!r} but is in {holders[0]}")
            )
    return found


def check(conn: redis.Redis, queue: str) -> list[Drift]:
    """Every drift in ``queue`` right now (one atomic snapshot); empty means consistent."""
    return drifts(snapshot(conn, queue))
