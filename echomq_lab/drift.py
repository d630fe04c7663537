"""Drift: where a queue's keys disagree with the protocol, its kinds, and the whole-queue check.

Every reader of a queue (:func:`snapshot.drifts` over a view or a whole read, :func:`check` here
over the whole queue) gathers the same facts about each id it saw (the sets holding it and its
score in each, whether its row exists, the row's ``state`` and ``attempts``) and asks
:func:`drift_of`, so each kind is defined once:

- ``in-two-sets``: the id is a member of more than one set;
- ``member-without-row``: the id is in a set but its row is gone (or is not a hash);
- ``row-in-no-set``: the row exists but no set holds the id;
- ``state-mismatch``: the row's state names another set than the one holding it;
- ``unknown-state``: the row's state is one no transition writes (``paused``, or none at all);
- ``bad-attempts``: the row's ``attempts`` is not a plain whole number (``one``);
- ``malformed-member``: a set member that is not a well-formed JOB id (``AAA``, non-UTF-8);
- ``score-not-finite``: a member whose score is ``+inf`` or ``-inf``;
- ``wrong-type``: a key of the queue holding another type than the protocol keeps there (a
  string at a set key, or at a row key such as ``emq:{Q}:job:lock``); see :func:`wrong_type`.

:func:`check` finds all of them in the whole queue without ever holding the server for long:

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

What each reader sees: :func:`check` sees every member and every row of the queue, but not in
one atomic moment. It never reports a drift that was not there (each is re-read atomically), yet
a drift made while the walk runs may be missed, and a job that moves may be seen twice or not at
all; its :class:`Report` says whether the queue changed under the walk. :func:`snapshot.view`
(a panel's click) and :func:`snapshot.snapshot` (a small queue read whole) read in one atomic
moment, but the view sees only the first members of each set and the jobs it follows, and
neither sees a row that is in no set unless it follows it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast, overload

import redis

from echomq_lab import branded, keyspace
from echomq_lab.connection import node_client, reaching
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import decoded

__all__ = [
    "BATCH", "CONFIRM", "INFINITE", "SCAN_STEP", "SET_OF_STATE", "STEP", "Drift", "Report",
    "check", "drift_of", "score_of", "whole", "wrong_type",
]

#: Which set holds a job in each state (the states in :data:`keyspace.SET_NAMES`' order).
SET_OF_STATE: dict[str, SetName] = dict(
    zip(("pending", "active", "scheduled", "dead"), SET_NAMES, strict=True)
)

#: What an infinite score (``+inf``/``-inf``, which another client may write) is read as: no
#: finite time is this large, so the views can say "not a time" instead of failing.
INFINITE = 2**63


@dataclass(frozen=True)
class Drift:
    """One disagreement between rows and sets (``kind`` is one of the module's list)."""

    kind: str
    job_id: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.job_id} {self.detail}"


def score_of(raw: bytes | str | float) -> int:
    """A score as an int; ``inf`` and ``-inf`` become ±:data:`INFINITE`."""
    value = float(raw)
    if math.isinf(value):
        return INFINITE if value > 0 else -INFINITE
    return int(value)


def whole(value: bytes) -> bool:
    """True for a plain non-negative integer: digits only, no sign, no leading zero."""
    return value.isdigit() and len(value) <= 18 and (value == b"0" or not value.startswith(b"0"))


def wrong_type(key: str, kind: str) -> Drift:
    """The drift of a queue key that holds a ``kind`` (``string``, ``list``...) instead of the
    sorted set or hash the protocol keeps there; its content is never read."""
    return Drift("wrong-type", key, f"holds a {kind}, not what the protocol keeps there")


def _odd(
    job_id: str, holders: list[SetName], scores: Mapping[SetName, float], attempts: bytes | None
) -> list[Drift]:
    """What no transition writes: a member that is not a JOB id, an infinite score, a bad
    ``attempts``."""
    found: list[Drift] = []
    if holders and not (job_id.startswith("JOB") and branded.valid(job_id)):
        found.append(Drift("malformed-member", job_id, f"is in {holders[0]} but is not a JOB id"))
    for name in holders:
        score = scores[name]
        if math.isinf(score) or abs(score) >= INFINITE:
            sign = "+" if score > 0 else "-"
            found.append(Drift("score-not-finite", job_id, f"has score {sign}inf in {name}"))
    if attempts is not None and not whole(attempts):
        found.append(Drift("bad-attempts", job_id,
                           f"has attempts {decoded(attempts)!r}, not a whole number"))  # fmt: skip
    return found


def drift_of(
    job_id: str,
    scores: Mapping[SetName, float],
    has_row: bool,
    state: str | None,
    attempts: bytes | None = None,
) -> list[Drift]:
    """The drifts of one id: ``scores`` holds its score in each set that holds it, ``has_row``
    says its row (a hash) exists, ``state`` and ``attempts`` are that row's fields as read (None:
    absent, or not read). Odd data comes first, then how the row and the sets disagree; a row
    whose state no transition writes is ``unknown-state`` and is not compared with the sets."""
    holders = [name for name in SET_NAMES if name in scores]
    found = _odd(job_id, holders, scores, attempts)
    if len(holders) > 1:
        found.append(Drift("in-two-sets", job_id, f"is in {' and '.join(holders)}"))
    if not has_row:
        if holders:
            found.append(Drift("member-without-row", job_id, f"is in {holders[0]} but has no row"))
        return found
    shown = state if state is not None else ""
    if shown not in SET_OF_STATE:
        detail = f"has state {shown!r}, which no transition writes"
        found.append(Drift("unknown-state", job_id, detail))
    elif not holders:
        found.append(Drift("row-in-no-set", job_id, f"has state {shown!r} but is in no set"))
    elif SET_OF_STATE[shown] not in holders:
        found.append(Drift("state-mismatch", job_id, f"has state {shown!r} but is in {holders[0]}"))
    return found


# The whole-queue check, walked from the host in short steps.

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
        held = ("the queue did not change during the walk" if self.consistent
                else f"the queue changed during the walk ({self.dismissed} suspect(s) settled)")
        return f"walked {self.members:,} members and {self.rows:,} rows: {found}; {held}"


K = TypeVar("K")

#: The TYPE replies of a key the protocol may hold a sorted set at (``none``: not there yet).
_SET_TYPES = ("zset", "none")


def _refused(reply: object) -> bool:
    """True when a pipelined reply is the server's WRONGTYPE (the key holds another type)."""
    return isinstance(reply, redis.ResponseError) and str(reply).startswith("WRONGTYPE")


def _refused_among(keys: Sequence[K], replies: list[Any]) -> list[K]:
    """The keys whose pipelined reply was WRONGTYPE; any other error reply is raised."""
    for reply in replies:
        if isinstance(reply, Exception) and not _refused(reply):
            raise reply
    return [key for key, reply in zip(keys, replies, strict=True) if _refused(reply)]


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
    odd = _refused_among(SET_NAMES, replies)
    sizes = {n: 0 if n in odd else int(r) for n, r in zip(SET_NAMES, replies, strict=True)}
    kinds = dict(zip(odd, _kinds(conn, [keys[name] for name in odd]), strict=True))
    return sizes, {name: kind for name, kind in kinds.items() if kind not in _SET_TYPES}


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
        """The drifts these facts show (see :func:`drift_of`), and a row key of
        the wrong type."""
        has_row = self.kind == "hash"
        state = None if self.state is None else decoded(self.state)
        found = drift_of(decoded(raw), self.scores, has_row, state, self.attempts)
        if self.kind not in ("hash", "none"):
            found.append(wrong_type(decoded(prefix + raw), self.kind))
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
                    if not _refused(exc):
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
            reply = node.scan(cursor, match=prefix + b"*", count=SCAN_STEP)
            cursor, keys = cast(tuple[int, list[bytes]], reply)
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
        odd = _refused_among(chunk, replies)
        for key, reply in zip(chunk, replies, strict=True):
            if key in odd:
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
                # (a ZSCORE that is not a float: no member, or the set key is not a zset)
                facts.scores = {n: s for n, s in zip(SET_NAMES, scores, strict=True)
                                if isinstance(s, float)}  # fmt: skip
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
    return Report(queue, tuple(odd_sets + found), members=walk.members, rows=walk.rows,
                  calls=walk.calls + 1, sizes_before=before, sizes_after=after, dismissed=settled)
