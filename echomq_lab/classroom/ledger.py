"""The room read back: every actor's log as one ledger (the calls :mod:`echomq_lab.sim`'s audit
and lease charts take), the per-learner :func:`tally`, and the ACL refusals by user name.

Where each figure comes from: a learner's claims, completes and stale refusals from the
learner's log, which only the room's gateway writes (the learner's ACL user may not); what the
gateway refused, per learner, and failed logins, per address, from the gateway's record
(:func:`acl_refusals`); what the server's own ACLs refused from its ACL LOG.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any, cast

import redis

from echomq_lab import transitions
from echomq_lab.classroom.record import (
    PAGE,
    PIPED,
    RECORD_LEN,
    ctl_key,
    log_key,
    record_key,
    refusals_key,
)
from echomq_lab.classroom.room import ACL_LOG_LEN
from echomq_lab.keyspace import base
from echomq_lab.sim.audit import STALE, Call, Outcome

#: The counts :func:`tally` gives every learner, even one who did nothing.
TALLY_KEYS: tuple[str, ...] = ("claims", "completes", "stale", "retries", "extends", "gone")
_LOG_PART = "log:"


def actors(conn: redis.Redis, room: str) -> list[str]:
    """The actors with a log in ``room`` (found with SCAN: the instructor's side only)."""
    prefix = (base(room) + _LOG_PART).encode()
    found = {bytes(k)[len(prefix):].decode() for k in conn.scan_iter(match=prefix + b"*")}
    return sorted(found, key=order)


def order(name: str) -> tuple[int, str]:
    number = name.rsplit("-", 1)[-1]
    return (int(number) if name.startswith("learner-") and number.isdigit() else 1 << 30, name)


def t0_ms(conn: redis.Redis, room: str) -> int:
    """The server time the room opened, in ms (0 when unknown)."""
    raw = conn.hget(ctl_key(room), "t0_ms")
    return int(raw) if raw else 0


def _call(actor: str, fields: dict[bytes, bytes], t0: int) -> Call | None:
    """One log line as a :class:`Call`; None for a line that is not one (a learner may write
    anything to their own log: it must not stop the board)."""
    try:
        text = {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}
        outcome = text["outcome"]
        if outcome not in ("accepted", "refused", "gone", "lost-reply"):
            return None
        began, ended = float(text["began_ms"]), float(text["ended_ms"])
        if not (math.isfinite(began) and math.isfinite(ended) and began <= ended):
            return None
        return Call(0, actor, text["verb"], text["job"], int(text["token"]),
                    cast(Outcome, outcome), text["reply"], text.get("detail", ""),
                    started=(began - t0) / 1000, ended=(ended - t0) / 1000,
                    lease_ms=int(text.get("lease_ms", 0)), stalled=text.get("stalled") == "1")
    except (KeyError, ValueError, UnicodeDecodeError):
        return None


class Follow:
    """The room's logs (of ``names`` only, when given), read as they grow: each :meth:`calls`
    reads only the lines written since the last. Lines that are not calls are skipped and
    counted per actor in :attr:`unreadable`."""

    def __init__(self, conn: redis.Redis, room: str, names: list[str] | None = None) -> None:
        self.conn, self.room, self.names = conn, room, names
        self.t0 = t0_ms(conn, room)
        self.unreadable: Counter[str] = Counter()
        #: Settles accepted from a learner who did not hold the lease: (who, verb, job, holder).
        self.crossed: list[tuple[str, str, str, str]] = []
        self._last: dict[str, bytes] = {}
        self._calls: list[Call] = []

    def calls(self) -> list[Call]:
        """Every call logged so far, in the order they ended, numbered; times in seconds since
        the room opened, on the server's clock."""
        new: list[Call] = []
        for actor, entries in self._new_lines():
            for _, fields in entries:
                call = _call(actor, fields, self.t0)
                if call is None:
                    self.unreadable[actor] += 1
                    continue
                new.append(call)
                holder = fields.get(b"held_by")
                if holder:
                    self.crossed.append((actor, call.verb, call.job_id, holder.decode()))
        if new:
            merged = sorted(self._calls + new, key=lambda c: (c.ended, c.started))
            self._calls = [Call(n, *_rest(c)) for n, c in enumerate(merged)]
        return self._calls


    def _new_lines(self) -> list[tuple[str, list[tuple[bytes, dict[bytes, bytes]]]]]:
        """Each actor's lines written since the last read, in pages of :data:`PAGE`, one pipeline
        for every :data:`PIPED` actors still behind (a storm's 250 logs in one pipeline passed
        the server's output buffer limit for a client, which closed the board's connection)."""
        behind = actors(self.conn, self.room) if self.names is None else list(self.names)
        got: dict[str, list[tuple[bytes, dict[bytes, bytes]]]] = defaultdict(list)
        while behind:
            still: list[str] = []
            for start in range(0, len(behind), PIPED):
                batch = behind[start:start + PIPED]
                pipe = self.conn.pipeline(transaction=False)
                for actor in batch:
                    last = self._last.get(actor)
                    pipe.xrange(log_key(self.room, actor), min=b"(" + last if last else "-",
                                count=PAGE)
                pages = cast(list[list[tuple[bytes, dict[bytes, bytes]]]], pipe.execute())
                for actor, page in zip(batch, pages, strict=True):
                    if page:
                        self._last[actor] = page[-1][0]
                        got[actor] += page
                    if len(page) == PAGE:
                        still.append(actor)
            behind = still
        return list(got.items())


def calls(conn: redis.Redis, room: str, names: list[str] | None = None) -> list[Call]:
    """Every logged call of the room (of ``names``' logs only, when given): see
    :meth:`Follow.calls`."""
    return Follow(conn, room, names).calls()


def _rest(c: Call) -> tuple[Any, ...]:
    return (c.actor, c.verb, c.job_id, c.token, c.outcome, c.reply, c.detail, c.started,
            c.ended, c.lease_ms, c.stalled, c.after_lost_reply)


def _plural(verb: str) -> str:
    """The count's name for ``verb``: claims, completes, retries, extends."""
    return verb[:-1] + "ies" if verb.endswith("y") else verb + "s"


def tally_of(ledger: list[Call], learners: list[str]) -> dict[str, dict[str, int]]:
    """Per learner: ``claims`` (accepted), ``completes`` (accepted), ``stale`` (refused
    EMQSTALE), ``retries`` and ``extends`` (accepted), ``gone`` (found the row gone)."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for c in ledger:
        if c.outcome == "accepted" and (c.verb == "claim" or c.verb in transitions.FENCED):
            out[c.actor][_plural(c.verb)] += 1
        elif c.outcome == "refused" and c.reply == STALE:
            out[c.actor]["stale"] += 1
        elif c.outcome == "gone":
            out[c.actor]["gone"] += 1
    return {name: {k: out[name][k] for k in TALLY_KEYS} for name in learners}


def tally(conn: redis.Redis, room: str) -> dict[str, dict[str, int]]:
    """Per learner of ``room`` (every learner the server has a user for, and any with a log):
    claims, completes, stale refusals (and retries, extends, rows found gone), from the
    learners' logs, which only the room's gateway writes. A learner who did nothing counts 0."""
    logged = [a for a in actors(conn, room) if a.startswith("learner-")]
    try:
        users = [str(u.decode() if isinstance(u, bytes) else u) for u in conn.acl_users()]
    except redis.ResponseError:  # a server without ACLs (the embedded one)
        users = []
    names = sorted({*logged, *(u for u in users if u.startswith("learner-"))}, key=order)
    return tally_of(calls(conn, room, logged), names)


def acl_refusals(conn: redis.Redis, room: str | None = None) -> dict[str, Counter[str]]:
    """What was refused, per name: ``{user: {"command flushall": 2, ...}}``. With ``room``, the
    gateway's record first (each learner's refused requests under their name; failed logins
    under ``from ADDRESS``, never under the name they tried); then the server's ACL LOG (the
    second wall), without its failed logins (a name typed there proves nothing)."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    if room is not None:
        _gateway_refusals(conn, room, out)
    try:
        log = cast(list[dict[str, Any]], conn.acl_log(count=ACL_LOG_LEN))
    except redis.ResponseError:  # a server without ACLs (the embedded one)
        log = []
    for entry in log:
        if entry.get("reason") == "auth":
            continue
        what = f"{entry.get('reason', '?')} {entry.get('object', '?')}"
        out[str(entry.get("username", "?"))][what] += int(entry.get("count", 1))
    return dict(out)


def _gateway_refusals(conn: redis.Redis, room: str, out: dict[str, Counter[str]]) -> None:
    entries = cast(list[tuple[bytes, dict[bytes, bytes]]],
                   conn.xrevrange(record_key(room, "logins"), count=RECORD_LEN))
    for _, fields in entries:
        text = {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}
        more = int(text.get("more", "0") or 0)
        out[f"from {text.get('from', '?')}"]["a failed login"] += 1 + more
    prefix = refusals_key(room, "").encode()
    for key in sorted(bytes(k) for k in conn.scan_iter(match=prefix + b"*")):
        counts = cast(dict[bytes, bytes], conn.hgetall(key))
        name = key[len(prefix):].decode("utf-8", "replace")
        for what, n in counts.items():
            out[name][f"command {what.decode('utf-8', 'replace')}"] += int(n)
