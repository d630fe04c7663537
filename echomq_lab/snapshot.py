"""Looking at a queue: a bounded view for the panels, a whole read for small queues, drift facts.

Both reads are one run of ``view.lua`` (one round trip, one atomic moment on the server), so a
panel never shows a half-applied transition:

- :func:`view` is what a panel reads on every click. Its cost does not grow with the queue or
  the keyspace: each set's size, the first ``window`` members of each set, the state of each of
  those members, and the whole rows of the few jobs the caller follows (their keys declared by
  the host). A set deeper than the window is *windowed*: ``snap.showing("pending")`` reads
  "showing 10 of 100,000".
- :func:`snapshot` reads the four sets whole with every member's row: the lab's small queues,
  the tests and the simulation use it. Its cost grows with the queue.

Neither can see a row that sits in no set unless the caller follows it (no script lists keys by
pattern); :func:`check` walks the whole queue from the host, in bounded steps, and finds those
too. :func:`drifts` lists the disagreements among the ids a snapshot read.

Both tolerate what another client may write: the script checks the TYPE of every key before
reading it (a key of another type is named in ``Snapshot.others``, never read), members that
are not UTF-8 are shown by :func:`row.decoded`, and ``+inf``/``-inf`` scores read as
±:data:`INFINITE`; :func:`drifts` lists each of these among the drifts (the kinds are
:mod:`echomq_lab.drift`'s).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import redis

from echomq_lab import drift, keyspace
from echomq_lab.drift import INFINITE, SET_OF_STATE, Drift, Report, drift_of, score_of, wrong_type
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import Row, decoded
from echomq_lab.scripts import Arg, load

__all__ = [
    "INFINITE", "MAX_FOLLOW", "SET_OF_STATE", "WINDOW", "Drift", "Row", "Snapshot", "check",
    "decoded", "drift_of", "drifts", "snapshot", "view",
]

#: How many members of each set a panel's view shows.
WINDOW = 10
#: The most jobs one view may follow (each costs one row read and four score look-ups).
MAX_FOLLOW = 64
#: The widest window a view accepts.
MAX_WINDOW = 1000


@dataclass(frozen=True)
class Snapshot:
    """One queue at one instant on the server clock.

    ``sets`` maps each set name to the (id, score) pairs read, lowest score first: the whole set
    for :func:`snapshot`, its first members for :func:`view`. ``rows`` maps each id whose whole
    row was read to that :class:`Row`. ``sizes`` is each set's true size (ZCARD) and
    ``states`` the ``state`` field of every id looked at (None: a row without one), present
    exactly when the row exists. ``scores`` holds, for each id looked at, its score in every set
    that holds it, even beyond the window. ``followed`` names the jobs whose rows were asked
    for; ``whole`` says the sets were read whole with every member's row. ``others`` maps each
    key read that holds another type than the protocol keeps there (key text -> its TYPE, e.g.
    a string at a row key) to that type; its content was never read. A member that is not
    UTF-8 is its bytes repr (:func:`row.decoded`); an infinite score is ±:data:`INFINITE`.
    """

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
        # A snapshot built by hand (tests, an empty placeholder) holds whole sets and rows.
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
        """Each set as {id: score} from the windows and the look-ups, built once."""
        out: dict[SetName, dict[str, int]] = {name: dict(self.sets[name]) for name in SET_NAMES}
        for job_id, held in self.scores.items():
            for name, score in held.items():
                out[name][job_id] = score
        return out

    def score(self, name: SetName, job_id: str) -> int | None:
        """The score of ``job_id`` in set ``name``, or None if it is not a member.

        On a windowed view this is exact for every id in :meth:`ids`; for any other id None
        means only "not read".
        """
        return self._scores[name].get(job_id)

    def holders(self, job_id: str) -> list[SetName]:
        """The names of the sets that hold ``job_id`` (exact for the ids in :meth:`ids`)."""
        return [name for name in SET_NAMES if self.score(name, job_id) is not None]

    def ids(self) -> list[str]:
        """Every id this snapshot read (a member, a followed job, a row), sorted (mint order)."""
        seen = set(self.rows) | set(self.states) | set(self.scores)
        for name in SET_NAMES:
            seen.update(self.members(name))
        return sorted(seen)

    def has_row(self, job_id: str) -> bool:
        """True if ``job_id``'s row existed when read (only ids in :meth:`ids` are known)."""
        return job_id in self.states

    def knows_row(self, job_id: str) -> bool:
        """True if this snapshot read ``job_id``'s whole row (or found it has none), so
        ``rows.get(job_id)`` is the answer: a followed job, or any member of a whole read."""
        if job_id in self.rows or job_id in self.followed:
            return True
        return self.whole and any(self.score(name, job_id) is not None for name in SET_NAMES)

    def windowed(self, name: SetName) -> bool:
        """True when set ``name`` holds more members than this snapshot read."""
        return self.sizes[name] > len(self.sets[name])

    def showing(self, name: SetName) -> str:
        """How much of set ``name`` was read, in words: ``showing 10 of 100,000`` or ``all 3``."""
        shown, size = len(self.sets[name]), self.sizes[name]
        if self.windowed(name):
            return f"showing {shown:,} of {size:,}"
        return f"all {size:,}"


def _pairs(flat: list[Any]) -> list[tuple[str, int]]:
    """A flat {member, score, ...} reply as (member text, int score) pairs: a member that is
    not UTF-8 is its bytes repr (see :func:`row.decoded`), an infinite score ±INFINITE."""
    return [(decoded(flat[i]), score_of(flat[i + 1])) for i in range(0, len(flat), 2)]


def _follow_keys(queue: str, follow: Iterable[str]) -> tuple[list[str], list[str]]:
    """The followed ids (deduplicated, in order) and their row keys; ValueError when too many."""
    ids = list(dict.fromkeys(follow))
    if len(ids) > MAX_FOLLOW:
        raise ValueError(f"a view follows at most {MAX_FOLLOW} jobs, got {len(ids)}")
    return ids, [keyspace.job_key(queue, job_id) for job_id in ids]


def _read(conn: redis.Redis, queue: str, follow: Iterable[str], window: str) -> Snapshot:
    """Run ``view.lua`` with ``window`` (a count or ``all``) and build the :class:`Snapshot`."""
    keys = [keyspace.queue_key(queue, name) for name in SET_NAMES]
    ids, row_keys = _follow_keys(queue, follow)
    args: list[Arg] = [keyspace.job_prefix(queue), window, *ids]
    now, sizes, windows, seen, others_flat = load("view")(conn, keys + row_keys, args)
    sets: dict[SetName, list[tuple[str, int]]] = {
        name: _pairs(flat) for name, flat in zip(SET_NAMES, windows, strict=True)
    }
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
    others = {decoded(others_flat[i]): decoded(others_flat[i + 1])
              for i in range(0, len(others_flat), 2)}  # fmt: skip
    return Snapshot(
        queue, int(now), sets, rows, size_of, states, scores, frozenset(ids), window == "all",
        others,
    )


def view(
    conn: redis.Redis, queue: str, follow: Iterable[str] = (), *, window: int = WINDOW
) -> Snapshot:
    """What a panel shows of ``queue``, in one script run whose cost is bounded.

    Reads each set's size and its first ``window`` members (pending and dead by id, active and
    schedule soonest first), each member's ``state`` and which sets hold it, and the whole rows
    of the jobs in ``follow`` (at most :data:`MAX_FOLLOW`, their keys declared), with the four
    sets' scores of each. The work is at most ``4 * window + len(follow)`` look-ups (each with
    one TYPE of its row key) whatever the depth of the queue or the size of the keyspace. A
    malformed queue name or followed id, too many follows, or a window outside
    0..:data:`MAX_WINDOW` is refused before the wire. Keys of another type, infinite scores
    and members that are not UTF-8 are read without failing (see the module docstring).
    """
    if not isinstance(window, int) or isinstance(window, bool):
        raise TypeError(f"window must be an int, not {type(window).__name__}")
    if not 0 <= window <= MAX_WINDOW:
        raise ValueError(f"window must be between 0 and {MAX_WINDOW}, got {window}")
    return _read(conn, queue, follow, str(window))


def snapshot(conn: redis.Redis, queue: str, follow: Iterable[str] = ()) -> Snapshot:
    """Read the queue's four sets whole, every member's row and the server time, atomically.

    One script run, for the lab's small queues, the tests and the simulation: its cost grows with
    the queue (a panel uses :func:`view`). A row that is in no set is read only when it is in
    ``follow``; :func:`check` finds every such row.
    """
    return _read(conn, queue, follow, "all")


def drifts(snap: Snapshot) -> list[Drift]:
    """Every disagreement among the ids ``snap`` read; empty when each row's state names the one
    set holding it. On a windowed view that is the ids shown and followed, nothing beyond.

    Odd data another client wrote among what was read is listed too (the kinds are
    :mod:`drift`'s): each key of the wrong type first, then per id a member that is not a
    JOB id, an infinite score, a read row whose ``attempts`` is not a whole number, a state no
    transition writes."""
    found = [wrong_type(key, kind) for key, kind in sorted(snap.others.items())]
    for job_id in snap.ids():
        scores = {name: s for name in SET_NAMES if (s := snap.score(name, job_id)) is not None}
        row = snap.rows.get(job_id)
        attempts = None if row is None else row.get(b"attempts")
        found += drift_of(job_id, scores, snap.has_row(job_id), snap.states.get(job_id), attempts)
    return found


def check(conn: redis.Redis, queue: str) -> Report:
    """Every drift in the whole ``queue``, walked in bounded steps: see :func:`drift.check`."""
    return drift.check(conn, queue)
