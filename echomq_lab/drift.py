"""The whole-queue drift check, walked from the host in short steps.

:func:`check` finds every drift of a queue (a row whose state disagrees with its set, an id in
two sets, a member whose row is gone, a row in no set) without ever holding the server for long:

1. each set is walked with ``ZSCAN`` (:data:`STEP` members a call);
2. the queue's row keys are found with ``SCAN MATCH emq:{Q}:job:*`` from the host
   (:data:`SCAN_STEP` keys examined a call), so a row that is in no set is found too;
3. the ``state`` of each row is read with ``HGET``, :data:`BATCH` commands to a pipeline;
4. every suspect is read again atomically (``MULTI``: its four scores, whether its row exists
   and its state; :data:`CONFIRM` suspects to a transaction), and only a drift that holds in
   that one moment is reported.

What each mode sees and cannot see:

- :func:`check` sees every member and every row of the queue, wherever it is, but not in one
  atomic moment: it never reports a drift that was not there (each is re-read atomically), yet a
  drift made while the walk runs may be missed, and a job that moves while the walk runs may be
  seen twice or not at all. The :class:`Report` says whether the queue changed under the walk
  and how many members and rows it saw.
- :func:`snapshot.view` (a panel's click) sees the first members of each set and the jobs it
  follows, atomically; it cannot see anything beyond its window.
- :func:`snapshot.snapshot` sees the four sets whole and their members' rows, atomically, in one
  script run that grows with the queue; it cannot see a row in no set unless it follows it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast, overload

import redis

from echomq_lab import keyspace
from echomq_lab.connection import reaching
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import decoded
from echomq_lab.snapshot import Drift, drift_of, well_formed_member, whole_number

#: Members asked of one ZSCAN call (a hint the server keeps close to).
STEP = 200
#: Keys examined by one SCAN call.
SCAN_STEP = 1000
#: Commands sent in one pipeline of row reads.
BATCH = 500
#: Suspects re-read in one MULTI/EXEC (six O(1) commands each).
CONFIRM = 32


@dataclass(frozen=True, eq=False)
class Report(Sequence[Drift]):
    """What :func:`check` found: a sequence of the drifts, and how far the walk saw.

    ``members`` counts the distinct ids seen in the four sets, ``rows`` the row keys found,
    ``calls`` the round trips made. ``consistent`` is True when nothing was seen to change under
    the walk: each set held as many members at the end as at the start, and every suspect held
    when re-read. It cannot prove that nothing moved (a claim and an enqueue leave the sizes as
    they were). ``dismissed`` counts suspects that had settled when re-read.
    """

    queue: str
    drifts: tuple[Drift, ...]
    members: int
    rows: int
    calls: int
    sizes_before: dict[SetName, int] = field(default_factory=dict)
    sizes_after: dict[SetName, int] = field(default_factory=dict)
    dismissed: int = 0

    @property
    def consistent(self) -> bool:
        """True when no change was seen under the walk (see the class docstring)."""
        return self.sizes_before == self.sizes_after and self.dismissed == 0

    def __len__(self) -> int:
        return len(self.drifts)

    @overload
    def __getitem__(self, index: int) -> Drift: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Drift]: ...
    def __getitem__(self, index: int | slice) -> Drift | Sequence[Drift]:
        return self.drifts[index]

    def __iter__(self) -> Iterator[Drift]:
        return iter(self.drifts)

    def __eq__(self, other: object) -> bool:
        """Equal to a list or tuple of the same drifts (so ``check(...) == []`` reads plainly)."""
        if isinstance(other, Report):
            return self.drifts == other.drifts and self.queue == other.queue
        if isinstance(other, (list, tuple)):
            return list(self.drifts) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def summary(self) -> str:
        """One line: what was walked, how many drifts, and whether the queue held still."""
        found = "no drift" if not self.drifts else f"{len(self.drifts)} drift(s)"
        held = (
            "the queue did not change during the walk"
            if self.consistent
            else f"the queue changed during the walk ({self.dismissed} suspect(s) settled)"
        )
        return f"walked {self.members:,} members and {self.rows:,} rows: {found}; {held}"


def _sizes(conn: redis.Redis, queue: str) -> dict[SetName, int]:
    pipe = conn.pipeline(transaction=True)
    for name in SET_NAMES:
        pipe.zcard(keyspace.queue_key(queue, name))
    replies = pipe.execute(raise_on_error=False)  # a key of another type: its error, size 0
    return {name: n if isinstance(n, int) else 0 for name, n in zip(SET_NAMES, replies,
                                                                    strict=True)}


@dataclass
class _Walk:
    """The state of one walk: what was seen so far, and how many round trips it took."""

    conn: redis.Redis
    queue: str
    holders: dict[bytes, list[SetName]] = field(default_factory=dict)
    states: dict[bytes, bytes | None] = field(default_factory=dict)
    calls: int = 0
    #: What another client wrote that no transition would (found while walking; see
    #: :func:`snapshot.odd_drifts`).
    odd: list[Drift] = field(default_factory=list)

    def _wrong_type(self, key: str) -> bool:
        """True (and a ``wrong-type`` drift noted) when ``key`` is neither a sorted set nor
        absent: another client's key, which ZSCAN would fail on."""
        kind = decoded(cast(bytes, self.conn.type(key)))
        self.calls += 1
        if kind in ("zset", "none"):
            return False
        self.odd.append(Drift("wrong-type", key, f"holds a {kind}, not a sorted set"))
        return True

    def sets(self) -> None:
        """Every member of each set, a ZSCAN step at a time."""
        for name in SET_NAMES:
            key, cursor = keyspace.queue_key(self.queue, name), 0
            if self._wrong_type(key):
                continue
            while True:
                cursor, pairs = cast(
                    tuple[int, list[tuple[bytes, float]]],
                    self.conn.zscan(key, cursor, count=STEP),
                )
                self.calls += 1
                for member, score in pairs:
                    self._odd_member(name, member, score)
                    held = self.holders.setdefault(member, [])
                    if name not in held:
                        held.append(name)
                if cursor == 0:
                    break

    def _odd_member(self, name: SetName, member: bytes, score: float) -> None:
        text = decoded(member)
        if not well_formed_member(text):
            self.odd.append(Drift("malformed-member", text, f"is in {name} but is not a JOB id"))
        if math.isinf(score):
            sign = "+" if score > 0 else "-"
            self.odd.append(Drift("score-not-finite", text, f"has score {sign}inf in {name}"))

    def rows(self) -> None:
        """Every row key of the queue (SCAN MATCH from the host), then each row's state."""
        prefix = keyspace.job_prefix(self.queue).encode()
        found: list[bytes] = []
        cursor = 0
        while True:
            cursor, keys = cast(
                tuple[int, list[bytes]],
                self.conn.scan(cursor, match=prefix + b"*", count=SCAN_STEP),
            )
            self.calls += 1
            found += keys
            if cursor == 0:
                break
        for start in range(0, len(found), BATCH):
            chunk = found[start : start + BATCH]
            pipe = self.conn.pipeline(transaction=False)
            for key in chunk:
                pipe.hmget(key, "state", "attempts")
            replies = pipe.execute(raise_on_error=False)
            self.calls += 1
            for key, got in zip(chunk, replies, strict=True):
                if not isinstance(got, list):  # WRONGTYPE: another client's key, not a row
                    self.odd.append(Drift("wrong-type", decoded(key),
                                          "holds another type, not what the protocol keeps there"))
                    continue
                state, attempts = got
                raw = key[len(prefix):]
                self.states[raw] = state if isinstance(state, bytes) else None
                if isinstance(attempts, bytes) and not whole_number(attempts):
                    shown = f"has attempts {decoded(attempts)!r}, not a whole number"
                    self.odd.append(Drift("bad-attempts", decoded(raw), shown))

    def suspects(self) -> list[bytes]:
        """The ids whose walk-time facts show a drift."""
        out = []
        for raw in sorted(set(self.holders) | set(self.states)):
            state = self.states.get(raw)
            has_row = raw in self.states
            if drift_of(_text(raw), self.holders.get(raw, []), has_row, _shown(state)):
                out.append(raw)
        return out

    def confirm(self, suspects: list[bytes]) -> tuple[list[Drift], int]:
        """Re-read each suspect atomically; the drifts that hold, and how many settled."""
        prefix = keyspace.job_prefix(self.queue).encode()
        set_keys = [keyspace.queue_key(self.queue, name) for name in SET_NAMES]
        held: list[Drift] = []
        settled = 0
        for start in range(0, len(suspects), CONFIRM):
            chunk = suspects[start : start + CONFIRM]
            pipe = self.conn.pipeline(transaction=True)
            for raw in chunk:
                for key in set_keys:
                    pipe.zscore(key, raw)
                pipe.exists(prefix + raw)
                pipe.hget(prefix + raw, "state")
            replies: list[Any] = pipe.execute(raise_on_error=False)
            self.calls += 1
            for i, raw in enumerate(chunk):
                *scores, exists, state = replies[6 * i : 6 * i + 6]
                names = [n for n, s in zip(SET_NAMES, scores, strict=True) if s is not None]
                state = state if isinstance(state, bytes) else None
                now = drift_of(_text(raw), names, bool(exists), _shown(state))
                held += now
                settled += not now
        return held, settled


def _text(raw: bytes) -> str:
    return raw.decode("ascii", "backslashreplace")


def _shown(state: bytes | None) -> str | None:
    return None if state is None else decoded(state)


def check(conn: redis.Redis, queue: str) -> Report:
    """Every drift in ``queue``, walked in short server commands; a :class:`Report`.

    Each server command handles a bounded number of elements (:data:`STEP` members,
    :data:`SCAN_STEP` keys examined, one row field, or one transaction of :data:`CONFIRM`
    suspects), so the server serves other clients between them. A malformed queue name is
    refused before the wire; a server that goes away mid-walk raises
    :class:`errors.ServerUnavailable`, and the check can simply be run again.
    """
    keyspace.check_queue(queue)
    with reaching(conn):
        before = _sizes(conn, queue)
        walk = _Walk(conn, queue, calls=1)
        walk.sets()
        walk.rows()
        found, settled = walk.confirm(walk.suspects())
        after = _sizes(conn, queue)
    return Report(
        queue,
        tuple(walk.odd + found),
        members=len(walk.holders),
        rows=len(walk.states),
        calls=walk.calls + 1,
        sizes_before=before,
        sizes_after=after,
        dismissed=settled,
    )
