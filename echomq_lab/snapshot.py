"""Looking at a queue in one atomic read of ``view.lua``, so a panel never shows a half-applied
transition: :func:`view` reads a window of each set, :func:`snapshot` the sets whole; neither
sees a row in no set unless followed (:func:`check` walks the whole queue for those).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import redis

from echomq_lab import jobs, keyspace
from echomq_lab.drift import INFINITE, SET_OF_STATE, Drift, check, drift_of, score_of, wrong_type
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import Row, decoded
from echomq_lab.scripts import Arg, load
from echomq_lab.scripts.arguments import MAX_WINDOW

__all__ = [
    "INFINITE", "SET_OF_STATE", "WINDOW", "Drift", "Snapshot", "check", "drifts", "snapshot", "view"
]

#: The members of each set a view shows, and the most jobs it may follow (its widest window
#: is :data:`echomq_lab.scripts.arguments.MAX_WINDOW`).
WINDOW, MAX_FOLLOW = 10, 64


@dataclass(frozen=True)
class Snapshot:
    """One queue at one instant on the server clock: each set's (id, score) pairs read, lowest
    first; whole rows; true set sizes; the ``state`` of every id whose row exists; each id's
    score in every set holding it; the jobs followed; whether the sets were read whole; and
    key -> TYPE for keys of another type than the protocol keeps there (never read)."""

    queue: str
    now_ms: int
    sets: dict[SetName, list[tuple[str, int]]]
    rows: Mapping[str, Row]
    sizes: dict[SetName, int] = field(default_factory=dict)
    states: dict[str, str | None] = field(default_factory=dict)
    scores: dict[str, dict[SetName, int]] = field(default_factory=dict)
    followed: frozenset[str] = frozenset()
    whole: bool = True
    others: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rows = {k: v if isinstance(v, Row) else Row(v) for k, v in self.rows.items()}
        object.__setattr__(self, "rows", rows)
        sizes = {name: self.sizes.get(name, len(self.sets[name])) for name in SET_NAMES}
        object.__setattr__(self, "sizes", sizes)
        states = {k: r.state for k, r in rows.items()} | dict(self.states)
        object.__setattr__(self, "states", states)

    def members(self, name: SetName) -> list[str]:
        """The ids read from set ``name``, lowest score first."""
        return [job_id for job_id, _ in self.sets[name]]

    @cached_property
    def _scores(self) -> dict[SetName, dict[str, int]]:
        out: dict[SetName, dict[str, int]] = {name: dict(self.sets[name]) for name in SET_NAMES}
        for job_id, held in self.scores.items():
            for name, score in held.items():
                out[name][job_id] = score
        return out

    def score(self, name: SetName, job_id: str) -> int | None:
        """The score of ``job_id`` in set ``name``, or None if it is not a member."""
        return self._scores[name].get(job_id)

    def holders(self, job_id: str) -> list[SetName]:
        """The names of the sets that hold ``job_id``."""
        return [name for name in SET_NAMES if self.score(name, job_id) is not None]

    def ids(self) -> list[str]:
        """Every id this snapshot read (a member, a followed job, a row), sorted (mint order)."""
        seen = set(self.rows) | set(self.states) | set(self.scores)
        for name in SET_NAMES:
            seen.update(self.members(name))
        return sorted(seen)

    def has_row(self, job_id: str) -> bool:
        """True if ``job_id``'s row existed when read."""
        return job_id in self.states

    def knows_row(self, job_id: str) -> bool:
        """True if ``rows.get(job_id)`` is the answer: a followed job or a whole read's member."""
        return (job_id in self.rows or job_id in self.followed
                or (self.whole and bool(self.holders(job_id))))

    def windowed(self, name: SetName) -> bool:
        """True when set ``name`` holds more members than this snapshot read."""
        return self.sizes[name] > len(self.sets[name])

    def showing(self, name: SetName) -> str:
        """How much of set ``name`` was read: ``showing 10 of 100,000`` or ``all 3``."""
        if self.windowed(name):
            return f"showing {len(self.sets[name]):,} of {self.sizes[name]:,}"
        return f"all {self.sizes[name]:,}"


def _pairs(flat: list[Any]) -> list[tuple[str, int]]:
    return [(decoded(flat[i]), score_of(flat[i + 1])) for i in range(0, len(flat), 2)]


def _read(conn: redis.Redis, queue: str, follow: Iterable[str], window: str) -> Snapshot:
    ids = list(dict.fromkeys(follow))
    if len(ids) > MAX_FOLLOW:
        raise ValueError(f"a view follows at most {MAX_FOLLOW} jobs, got {len(ids)}")
    keys = [keyspace.queue_key(queue, name) for name in SET_NAMES]
    keys += [keyspace.job_key(queue, job_id) for job_id in ids]
    args: list[Arg] = [keyspace.job_prefix(queue), window, *ids]
    now, sizes, windows, seen, odd = load("view")(conn, keys, args)
    sets = {name: _pairs(flat) for name, flat in zip(SET_NAMES, windows, strict=True)}
    rows: dict[str, Row] = {}
    states: dict[str, str | None] = {}
    scores: dict[str, dict[SetName, int]] = {}
    for raw_id, *found, exists, state, row in seen:
        job_id = decoded(raw_id)
        held = {n: score_of(s) for n, s in zip(SET_NAMES, found, strict=True) if s is not None}
        if held:
            scores[job_id] = held
        if int(exists):
            states[job_id] = None if state is None else decoded(state)
        if row:
            rows[job_id] = Row({row[j]: row[j + 1] for j in range(0, len(row), 2)})
    size_of = {name: int(n) for name, n in zip(SET_NAMES, sizes, strict=True)}
    others = {decoded(k): decoded(v) for k, v in zip(odd[::2], odd[1::2], strict=True)}
    return Snapshot(queue, int(now), sets, rows, size_of, states, scores, frozenset(ids),
                    window == "all", others)


def view(conn: redis.Redis, queue: str, follow: Iterable[str] = (), *,
         window: int = WINDOW) -> Snapshot:
    """What a panel shows of ``queue`` in one script run, whatever its depth: each set's size
    and first ``window`` members with their states, and the rows of the jobs in ``follow``."""
    return _read(conn, queue, follow, str(jobs.check_int("window", window, 0, MAX_WINDOW)))


def snapshot(conn: redis.Redis, queue: str, follow: Iterable[str] = ()) -> Snapshot:
    """The queue's four sets whole, every member's row and the server time, in one read."""
    return _read(conn, queue, follow, "all")


def drifts(snap: Snapshot) -> list[Drift]:
    """Every disagreement among the ids ``snap`` read: keys of the wrong type, then each id's."""
    found = [wrong_type(key, kind) for key, kind in sorted(snap.others.items())]
    for job_id in snap.ids():
        scores = {name: s for name in SET_NAMES if (s := snap.score(name, job_id)) is not None}
        row = snap.rows.get(job_id)
        attempts = None if row is None else row.get(b"attempts")
        found += drift_of(job_id, scores, snap.has_row(job_id), snap.states.get(job_id), attempts)
    return found

