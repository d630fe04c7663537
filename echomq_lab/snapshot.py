"""Looking at a queue: one atomic snapshot of its four sets and rows, and the drift check.

:func:`snapshot` reads everything in one script run (one round trip, one atomic moment), so the
views never show a half-applied transition. :func:`check` lists every place where a row's
``state`` and the sets disagree; after any sequence of transitions the list is empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import redis

from echomq_lab import branded, keyspace
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import Row, decoded
from echomq_lab.scripts import load

#: Which set holds a job in each state.
SET_OF_STATE: dict[str, SetName] = {
    "pending": "pending",
    "active": "active",
    "scheduled": "schedule",
    "dead": "dead",
}
#: What an infinite score (``+inf``/``-inf``, which another client may write) is read as: no
#: finite time is this large, so the views can say "not a time" instead of failing.
INFINITE = 2**63

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
    #: Keys of the queue that hold another type than the protocol's (key text -> type), e.g.
    #: a string at a row key; their content is never read.
    others: dict[str, str] = field(default_factory=dict)

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

    kind: str  # state-mismatch | in-two-sets | row-in-no-set | member-without-row |
    #            unknown-state | bad-attempts | malformed-member | score-not-finite | wrong-type
    job_id: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.job_id} {self.detail}"


def _score(raw: bytes | float) -> int:
    """A score as an int; ``inf`` and ``-inf`` become ±:data:`INFINITE`."""
    value = float(raw)
    if math.isinf(value):
        return INFINITE if value > 0 else -INFINITE
    return int(value)


def _pairs(flat: list[Any]) -> list[tuple[str, int]]:
    """A flat {member, score, ...} reply as (member text, int score) pairs; a member that is
    not UTF-8 is shown as its bytes repr (it is reported as malformed, never decoded as an id)."""
    return [(decoded(flat[i]), _score(flat[i + 1])) for i in range(0, len(flat), 2)]


def snapshot(conn: redis.Redis, queue: str) -> Snapshot:
    """Read the queue's four sets, all its rows and the server time in one atomic script run."""
    keys = [keyspace.queue_key(queue, name) for name in SET_NAMES]
    prefix = keyspace.job_prefix(queue)
    now, *flats, rows_flat, others_flat = load("snapshot")(conn, keys, [prefix + "*"])
    sets: dict[SetName, list[tuple[str, int]]] = {
        name: _pairs(flat) for name, flat in zip(SET_NAMES, flats, strict=True)
    }
    rows: dict[str, Row] = {}
    cut = len(prefix.encode())
    for i in range(0, len(rows_flat), 2):
        job_id = decoded(rows_flat[i][cut:])
        fields = rows_flat[i + 1]
        rows[job_id] = Row({fields[j]: fields[j + 1] for j in range(0, len(fields), 2)})
    others = {decoded(others_flat[i]): decoded(others_flat[i + 1])
              for i in range(0, len(others_flat), 2)}  # fmt: skip
    return Snapshot(queue, int(now), sets, rows, others)


def _odd(snap: Snapshot) -> list[Drift]:
    """What another client can write that no transition would: keys of the wrong type, set
    members that are not JOB ids, infinite scores, rows whose attempts is not a whole number."""
    found = [Drift("wrong-type", key, f"holds a {kind}, not what the protocol keeps there")
             for key, kind in snap.others.items()]  # fmt: skip
    for name in SET_NAMES:
        for member, score in snap.sets[name]:
            if not (member.startswith("JOB") and branded.valid(member)):
                found.append(Drift("malformed-member", member, f"is in {name} but is not a JOB id"))
            if abs(score) >= INFINITE:
                sign = "+" if score > 0 else "-"
                found.append(Drift("score-not-finite", member, f"has score {sign}inf in {name}"))
    for job_id, row in snap.rows.items():
        if row.get(b"attempts") is not None and not _whole(row[b"attempts"]):
            found.append(Drift("bad-attempts", job_id,
                               f"has attempts {decoded(row[b'attempts'])!r}, not a whole number"))
    return found


def _whole(value: bytes) -> bool:
    """True for a plain non-negative integer: digits only, no sign, no leading zero."""
    return value.isdigit() and len(value) <= 18 and (value == b"0" or not value.startswith(b"0"))


def drifts(snap: Snapshot) -> list[Drift]:
    """Every disagreement in ``snap``; empty when each row's state names the one set holding it.

    Odd data another client wrote (see the ``Drift.kind`` list) is listed too."""
    found: list[Drift] = _odd(snap)
    for job_id in snap.ids():
        holders = snap.holders(job_id)
        row = snap.rows.get(job_id)
        if len(holders) > 1:
            found.append(Drift("in-two-sets", job_id, f"is in {' and '.join(holders)}"))
        if row is None:
            found.append(Drift("member-without-row", job_id, f"is in {holders[0]} but has no row"))
            continue
        state = Row(row).state or ""  # plain mappings too (a ledger audit builds its own)
        if state not in SET_OF_STATE:
            found.append(Drift("unknown-state", job_id,
                               f"has state {state!r}, which no transition writes"))
            continue
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
