"""The kinds of drift, and the one rule that names the drifts of one id or one key.

A drift is a place where the queue's keys disagree with the protocol. Every reader of a queue
(:func:`snapshot.drifts` over a view or a whole read, :func:`drift.check` over the whole queue
walked from the host) gathers the same facts about each id it saw (the sets holding it and its
score in each, whether its row exists, the row's ``state`` and ``attempts``) and asks
:func:`drift_of`, so the kinds are defined once:

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from echomq_lab import branded
from echomq_lab.keyspace import SET_NAMES, SetName
from echomq_lab.row import decoded

__all__ = ["INFINITE", "SET_OF_STATE", "Drift", "drift_of", "score_of", "whole", "wrong_type"]

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


def _odd(job_id: str, scores: Mapping[SetName, float], attempts: bytes | None) -> list[Drift]:
    """What no transition writes: a member that is not a JOB id, an infinite score, a bad
    ``attempts``."""
    found: list[Drift] = []
    holders = [name for name in SET_NAMES if name in scores]
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
    found = _odd(job_id, scores, attempts)
    holders = [name for name in SET_NAMES if name in scores]
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
