"""The whole-queue drift check, walked from the host in short steps.

:func:`check` finds every drift of a queue (a row whose state disagrees with its set, an id in
two sets, a member whose row is gone, a row in no set) and every odd thing another client wrote
(a key of the wrong type, a member that is not a JOB id, an infinite score, an ``attempts``
that is not a whole number, a state no transition writes; the kinds are
:mod:`echomq_lab.drift_kinds`') without ever holding the server for long:

1. the size of each set is read (one ``MULTI`` of ``ZCARD``); a set key the server refuses
   that for (``WRONGTYPE``) is read by ``TYPE`` only, is a ``wrong-type`` drift and is never
   walked;
2. each sorted set is walked with ``ZSCAN`` (:data:`STEP` members a call), scores included;
3. the queue's row keys are found with ``SCAN MATCH emq:{Q}:job:*`` from the host
   (:data:`SCAN_STEP` keys examined a call; on a cluster, on the node owning the queue's
   slot, where every key of the queue lives), so a row that is in no set is found too;
4. each key found is read with one ``HMGET state attempts``, :data:`BATCH` to a pipeline; a
   key the server refuses that for is not a hash: it is read by ``TYPE`` only (so its content
   is never read) and is a ``wrong-type`` drift;
5. every suspect is read again atomically (``MULTI``: its four scores, whether its row key
   exists, its state and attempts; :data:`CONFIRM` suspects to a transaction), and only a drift
   that holds in that one moment is reported (a wrong-type set key: as the final sizes read it;
   the name of a wrong type is the ``TYPE`` read just after).

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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast, overload

import redis

from echomq_lab import keyspace
from echomq_lab.connection import node_client, reaching
from echomq_lab.drift_kinds import Drift, drift_of, wrong_type
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import decoded

#: Members asked of one ZSCAN call (a hint the server keeps close to).
STEP = 200
#: Keys examined by one SCAN call.
SCAN_STEP = 1000
#: Commands sent in one pipeline of row reads (one HMGET a key).
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


#: The TYPE replies of a key the protocol may hold a sorted set at (``none``: not there yet).
_SET_TYPES = ("zset", "none")


def _refused(reply: object) -> bool:
    """True when a pipelined reply is the server's WRONGTYPE (the key holds another type)."""
    return isinstance(reply, redis.ResponseError) and str(reply).startswith("WRONGTYPE")


def _kinds(conn: redis.Redis, keys: Sequence[bytes | str]) -> list[str]:
    """The TYPE of each key as text (one pipeline; only keys a command was refused for)."""
    if not keys:
        return []
    pipe = conn.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    replies: list[Any] = pipe.execute(raise_on_error=False)
    return [r.decode("ascii", "replace") if isinstance(r, bytes) else str(r) for r in replies]


def _census(conn: redis.Redis, queue: str) -> tuple[dict[SetName, int], dict[SetName, str]]:
    """Each set's size, atomically, and the TYPE of each set key that is not a sorted set (its
    size counts 0), by set name in :data:`SET_NAMES` order."""
    keys = {name: keyspace.queue_key(queue, name) for name in SET_NAMES}
    pipe = conn.pipeline(transaction=True)
    for name in SET_NAMES:
        pipe.zcard(keys[name])
    replies: list[Any] = pipe.execute(raise_on_error=False)
    sizes: dict[SetName, int] = {}
    odd: list[SetName] = []
    for name, reply in zip(SET_NAMES, replies, strict=True):
        if _refused(reply):
            odd.append(name)
        elif isinstance(reply, Exception):
            raise reply
        sizes[name] = 0 if _refused(reply) else int(reply)
    kinds = dict(zip(odd, _kinds(conn, [keys[name] for name in odd]), strict=True))
    return sizes, {name: kind for name, kind in kinds.items() if kind not in _SET_TYPES}


def _float(reply: object) -> float | None:
    """A ZSCORE reply as a float; None for no member (or an error: the key is not a zset)."""
    return reply if isinstance(reply, float) else None


def _fields(reply: object) -> tuple[bytes | None, bytes | None]:
    """An HMGET state attempts reply; (None, None) when it failed (the key is not a hash)."""
    if isinstance(reply, list) and len(reply) == 2:
        state, attempts = reply
        return (state if isinstance(state, bytes) else None,
                attempts if isinstance(attempts, bytes) else None)  # fmt: skip
    return None, None


@dataclass
class _Facts:
    """What was read of one id: its score in each set holding it, whether its row key holds a
    hash (``kind``: ``hash``, ``none``, or the other type it holds), and its row's state and
    attempts (None: absent, or not a hash)."""

    scores: dict[SetName, float] = field(default_factory=dict)
    kind: str = "none"
    state: bytes | None = None
    attempts: bytes | None = None

    def drifts(self, raw: bytes, prefix: bytes) -> list[Drift]:
        """The drifts these facts show (see :func:`drift_kinds.drift_of`), and a row key of
        the wrong type."""
        has_row = self.kind == "hash"
        found = drift_of(_text(raw), self.scores, has_row, _shown(self.state), self.attempts)
        if self.kind not in ("hash", "none"):
            found.append(wrong_type(_text(prefix + raw), self.kind))
        return found


@dataclass
class _Walk:
    """The state of one walk: what was seen so far, and how many round trips it took."""

    conn: redis.Redis
    queue: str
    facts: dict[bytes, _Facts] = field(default_factory=dict)
    members: int = 0
    rows: int = 0
    calls: int = 0

    @property
    def prefix(self) -> bytes:
        return keyspace.job_prefix(self.queue).encode()

    def _of(self, raw: bytes) -> _Facts:
        return self.facts.setdefault(raw, _Facts())

    def sets(self, odd: dict[SetName, str]) -> None:
        """Every member of each sorted set with its score, a ZSCAN step at a time; the set keys
        in ``odd`` (another type) are skipped, and one that turns into another type mid-walk
        is left there."""
        for name in SET_NAMES:
            if name in odd:
                continue
            key, cursor = keyspace.queue_key(self.queue, name), 0
            while True:
                try:
                    cursor, pairs = cast(
                        tuple[int, list[tuple[bytes, float]]],
                        self.conn.zscan(key, cursor, count=STEP),
                    )
                except redis.ResponseError as exc:
                    if not str(exc).startswith("WRONGTYPE"):
                        raise
                    break  # another client replaced the set: the final census says so
                finally:
                    self.calls += 1
                for member, score in pairs:
                    held = self._of(member)
                    self.members += not held.scores
                    held.scores[name] = float(score)
                if cursor == 0:
                    break

    def keys(self) -> None:
        """Every key under the queue's row prefix (SCAN MATCH from the host), then each row's
        state and attempts; a key that is not a hash is read by TYPE only."""
        prefix = self.prefix
        node = node_client(self.conn, prefix.decode())  # on a cluster: the queue's one node
        found: list[bytes] = []
        cursor = 0
        while True:
            cursor, keys = cast(
                tuple[int, list[bytes]],
                node.scan(cursor, match=prefix + b"*", count=SCAN_STEP),
            )
            self.calls += 1
            found += keys
            if cursor == 0:
                break
        for start in range(0, len(found), BATCH):
            self._read_rows(found[start : start + BATCH])

    def _read_rows(self, chunk: list[bytes]) -> None:
        """One pipeline of ``HMGET key state attempts``; the keys it was refused for are read
        by TYPE only."""
        prefix = self.prefix
        pipe = self.conn.pipeline(transaction=False)
        for key in chunk:
            pipe.hmget(key, "state", "attempts")
        replies: list[Any] = pipe.execute(raise_on_error=False)
        self.calls += 1
        odd = [key for key, reply in zip(chunk, replies, strict=True) if _refused(reply)]
        for key, reply in zip(chunk, replies, strict=True):
            if isinstance(reply, Exception) and not _refused(reply):
                raise reply
            if _refused(reply):
                continue
            # (a key gone since the SCAN saw it reads as a row of neither field: a suspect,
            # which the atomic re-read settles)
            state, attempts = _fields(reply)
            facts = self._of(key[len(prefix) :])
            facts.kind, facts.state, facts.attempts = "hash", state, attempts
            self.rows += 1
        self.calls += bool(odd)
        for key, kind in zip(odd, _kinds(self.conn, odd), strict=True):
            self._of(key[len(prefix) :]).kind = kind

    def suspects(self) -> list[bytes]:
        """The ids (and odd row keys' suffixes) whose walk-time facts show a drift."""
        prefix = self.prefix
        return [raw for raw in sorted(self.facts) if self.facts[raw].drifts(raw, prefix)]

    def confirm(self, suspects: list[bytes]) -> tuple[list[Drift], int]:
        """Re-read each suspect atomically; the drifts that hold, and how many settled."""
        prefix = self.prefix
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
                pipe.hmget(prefix + raw, "state", "attempts")
            replies: list[Any] = pipe.execute(raise_on_error=False)
            self.calls += 1
            read = [_Facts() for _ in chunk]
            odd: list[bytes] = []
            for facts, raw, i in zip(read, chunk, range(0, 6 * len(chunk), 6), strict=True):
                *scores, exists, fields = replies[i : i + 6]
                facts.scores = {
                    n: f for n, s in zip(SET_NAMES, scores, strict=True)
                    if (f := _float(s)) is not None
                }  # fmt: skip
                if _refused(fields):
                    odd.append(raw)
                elif exists == 1:
                    facts.kind = "hash"
                    facts.state, facts.attempts = _fields(fields)
            self.calls += bool(odd)
            kinds = dict(zip(odd, _kinds(self.conn, [prefix + raw for raw in odd]), strict=True))
            for facts, raw in zip(read, chunk, strict=True):
                facts.kind = kinds.get(raw, facts.kind)
                # a key that turned back into a row (or went) since it was refused: settled
                flipped = raw in kinds and facts.kind in ("hash", "none")
                now = [] if flipped else facts.drifts(raw, prefix)
                held += now
                settled += not now
        return held, settled


def _text(raw: bytes) -> str:
    """A member or key as text by the one display rule (:func:`row.decoded`)."""
    return decoded(raw)


def _shown(state: bytes | None) -> str | None:
    return None if state is None else decoded(state)


def check(conn: redis.Redis, queue: str) -> Report:
    """Every drift in ``queue``, walked in short server commands; a :class:`Report`.

    Each server command handles a bounded number of elements (:data:`STEP` members,
    :data:`SCAN_STEP` keys examined, one key's TYPE or two row fields, or one transaction of
    :data:`CONFIRM` suspects), so the server serves other clients between them. Odd data
    (keys of the wrong type, malformed members, infinite scores, bad attempts, unknown states)
    is listed as drift, never raised. A malformed queue name is refused before the wire; a
    server that goes away mid-walk raises :class:`errors.ServerUnavailable`, and the check can
    simply be run again.
    """
    keyspace.check_queue(queue)
    with reaching(conn):
        before, odd_before = _census(conn, queue)
        walk = _Walk(conn, queue, calls=1)
        walk.sets(odd_before)
        walk.keys()
        found, settled = walk.confirm(walk.suspects())
        after, odd = _census(conn, queue)
    odd_sets = [wrong_type(keyspace.queue_key(queue, name), kind) for name, kind in odd.items()]
    return Report(
        queue,
        tuple(odd_sets + found),
        members=walk.members,
        rows=walk.rows,
        calls=walk.calls + 1,
        sizes_before=before,
        sizes_after=after,
        dismissed=settled,
    )
