"""Drift: where a queue's keys disagree with the protocol, its kinds, and the whole-queue check.

The kinds, each defined once in :func:`drift_of`: ``in-two-sets``, ``member-without-row``,
``row-in-no-set``, ``state-mismatch``, ``unknown-state`` (a state no transition writes),
``bad-attempts``, ``malformed-member`` (not a JOB id), ``score-not-finite`` and ``wrong-type``
(a queue key of another type). :func:`check` walks the queue in short steps, then re-reads
every suspect atomically: it may miss a drift made during the walk but never invents one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar, cast

import redis

from echomq_lab import branded, keyspace
from echomq_lab.connection import node_client, reaching
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import decoded

#: Which set holds a job in each state (the states in :data:`keyspace.SET_NAMES`' order).
SET_OF_STATE: dict[str, SetName] = dict(zip(("pending", "active", "scheduled", "dead"),
                                            SET_NAMES, strict=True))

#: What an infinite score (which another client may write) is read as: larger than any time.
INFINITE = 2**63


@dataclass(frozen=True)
class Drift:
    """One disagreement between rows and sets."""

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
    """The drift of a queue key holding a ``kind`` (``string``...) instead of a zset or hash."""
    return Drift("wrong-type", key, f"holds a {kind}, not what the protocol keeps there")


def drift_of(job_id: str, scores: Mapping[SetName, float], has_row: bool, state: str | None,
             attempts: bytes | None = None) -> list[Drift]:
    """The drifts of one id from its scores, whether its row exists and the row's fields
    (None: absent or not read); odd data first, an unknown state not compared."""
    holders = [name for name in SET_NAMES if name in scores]
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


#: Members a ZSCAN call asks for, keys a SCAN call examines, HMGETs a pipeline sends, and
#: suspects one MULTI re-reads (six O(1) commands each).
STEP, SCAN_STEP, BATCH, CONFIRM = 200, 1000, 500, 32


@dataclass(frozen=True, eq=False)
class Report(list[Drift]):
    """What :func:`check` found: a list of the drifts, the ids (``members``) and row keys
    (``rows``) walked, round trips (``calls``) and suspects settled when re-read (``dismissed``)."""

    queue: str
    drifts: tuple[Drift, ...]
    members: int
    rows: int
    calls: int
    sizes_before: dict[SetName, int] = field(default_factory=dict)
    sizes_after: dict[SetName, int] = field(default_factory=dict)
    dismissed: int = 0

    def __post_init__(self) -> None:
        self.extend(self.drifts)

    @property
    def consistent(self) -> bool:
        """True when every set kept its size and every suspect held."""
        return self.sizes_before == self.sizes_after and self.dismissed == 0

    def summary(self) -> str:
        found = "no drift" if not self.drifts else f"{len(self.drifts)} drift(s)"
        held = ("the queue did not change during the walk" if self.consistent
                else f"the queue changed during the walk ({self.dismissed} suspect(s) settled)")
        return f"walked {self.members:,} members and {self.rows:,} rows: {found}; {held}"


K = TypeVar("K")


def _refused(reply: object) -> bool:
    """True when a pipelined reply is the server's WRONGTYPE (the key holds another type)."""
    return isinstance(reply, redis.ResponseError) and str(reply).startswith("WRONGTYPE")


def _refused_among(keys: Sequence[K], replies: list[Any]) -> list[K]:
    """The keys whose pipelined reply was WRONGTYPE; any other error is raised."""
    for reply in replies:
        if isinstance(reply, Exception) and not _refused(reply):
            raise reply
    return [key for key, reply in zip(keys, replies, strict=True) if _refused(reply)]


def _kinds(conn: redis.Redis, keys: Sequence[bytes | str]) -> list[str]:
    """The TYPE of each key as text (one pipeline, none for no keys)."""
    pipe = conn.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    replies: list[Any] = pipe.execute(raise_on_error=False)
    return [r.decode("ascii", "replace") if isinstance(r, bytes) else str(r) for r in replies]


def _census(conn: redis.Redis, queue: str) -> tuple[dict[SetName, int], dict[SetName, str]]:
    """Each set's size, atomically, and the TYPE of each set key that is not a sorted set."""
    keys = {name: keyspace.queue_key(queue, name) for name in SET_NAMES}
    pipe = conn.pipeline(transaction=True)
    for name in SET_NAMES:
        pipe.zcard(keys[name])
    replies: list[Any] = pipe.execute(raise_on_error=False)
    odd = _refused_among(SET_NAMES, replies)
    sizes = {n: 0 if n in odd else int(r) for n, r in zip(SET_NAMES, replies, strict=True)}
    kinds = dict(zip(odd, _kinds(conn, [keys[name] for name in odd]), strict=True))
    return sizes, {name: kind for name, kind in kinds.items() if kind not in ("zset", "none")}


@dataclass
class _Facts:
    """What was read of one id: its scores, its row key's TYPE, state and attempts."""

    scores: dict[SetName, float] = field(default_factory=dict)
    kind: str = "none"
    state: bytes | None = None
    attempts: bytes | None = None

    def read_row(self, reply: object) -> None:
        state, attempts = reply if isinstance(reply, list) and len(reply) == 2 else (None, None)
        self.kind = "hash"
        self.state = state if isinstance(state, bytes) else None
        self.attempts = attempts if isinstance(attempts, bytes) else None

    def drifts(self, raw: bytes, prefix: bytes) -> list[Drift]:
        state = None if self.state is None else decoded(self.state)
        found = drift_of(decoded(raw), self.scores, self.kind == "hash", state, self.attempts)
        if self.kind not in ("hash", "none"):
            found.append(wrong_type(decoded(prefix + raw), self.kind))
        return found


@dataclass
class _Walk:
    """One walk: what it saw so far and the round trips it took."""

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

    def _typed(self, ids: list[bytes]) -> dict[bytes, str]:
        """The TYPE of each id's row key (one round trip when there are any)."""
        self.calls += bool(ids)
        return dict(zip(ids, _kinds(self.conn, [self.prefix + i for i in ids]), strict=True))

    def _pages(self, scan: Callable[[int], Any]) -> Iterator[list[Any]]:
        """The items of each page of a cursor walk, one round trip a page."""
        cursor = 0
        while True:
            self.calls += 1
            cursor, items = cast(tuple[int, list[Any]], scan(cursor))
            yield items
            if cursor == 0:
                return

    def sets(self, odd: dict[SetName, str]) -> None:
        """Each member and score of every set not in ``odd`` (ZSCAN)."""
        for name in (name for name in SET_NAMES if name not in odd):
            zscan = partial(self.conn.zscan, keyspace.queue_key(self.queue, name), count=STEP)
            try:
                for pairs in self._pages(zscan):
                    for member, score in pairs:
                        held = self._of(member)
                        self.members += not held.scores
                        held.scores[name] = float(score)
            except redis.ResponseError as exc:
                if not _refused(exc):
                    raise

    def keys(self) -> None:
        """Every row key of the queue (SCAN on its node), then each row's fields."""
        prefix = self.prefix
        node = node_client(self.conn, prefix.decode())
        scan = partial(node.scan, match=prefix + b"*", count=SCAN_STEP)
        found: list[bytes] = [key[len(prefix) :] for page in self._pages(scan) for key in page]
        for start in range(0, len(found), BATCH):
            chunk = found[start : start + BATCH]
            pipe = self.conn.pipeline(transaction=False)
            for raw in chunk:
                pipe.hmget(prefix + raw, "state", "attempts")
            replies: list[Any] = pipe.execute(raise_on_error=False)
            self.calls += 1
            odd = _refused_among(chunk, replies)
            for raw, reply in zip(chunk, replies, strict=True):
                if raw not in odd:  # (a key gone since SCAN: a suspect the re-read settles)
                    self._of(raw).read_row(reply)
                    self.rows += 1
            for raw, kind in self._typed(odd).items():
                self._of(raw).kind = kind

    def suspects(self) -> list[bytes]:
        return [raw for raw in sorted(self.facts) if self.facts[raw].drifts(raw, self.prefix)]

    def confirm(self, suspects: list[bytes]) -> tuple[list[Drift], int]:
        """Re-read the suspects, :data:`CONFIRM` to a MULTI: the drifts that hold, and how
        many settled."""
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
            read = {raw: _Facts() for raw in chunk}
            odd: list[bytes] = []
            for i, (raw, facts) in enumerate(read.items()):
                *scores, exists, fields = replies[6 * i : 6 * i + 6]
                # (a ZSCORE that is not a float: no member, or the set key is not a zset)
                facts.scores = {n: s for n, s in zip(SET_NAMES, scores, strict=True)
                                if isinstance(s, float)}  # fmt: skip
                if _refused(fields):
                    odd.append(raw)
                elif exists == 1:
                    facts.read_row(fields)
            kinds = self._typed(odd)
            for raw, facts in read.items():
                facts.kind = kinds.get(raw, facts.kind)
                # a key that turned back into a row (or went) since it was refused: settled
                flipped = raw in kinds and facts.kind in ("hash", "none")
                now = [] if flipped else facts.drifts(raw, prefix)
                held += now
                settled += not now
        return held, settled


def check(conn: redis.Redis, queue: str) -> Report:
    """Every drift in ``queue``, walked in short commands. Odd data is drift, never raised; a
    server that goes away raises :class:`errors.ServerUnavailable`."""
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
