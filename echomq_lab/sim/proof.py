"""Proving a turned-away settle deserved it: the lease could have expired, a reap ran after
that, and the job had moved on to a later lease.

:func:`unproven` gives None when the ledger proves the call's token was stale, or the reason
it cannot. Times on the ledger are the client's; the server's TIME is rounded to the ms, so
every comparison with a lease deadline allows :data:`CLOCK_SLACK_S`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

from echomq_lab.sim.ledger import Call

#: Slack, in seconds, when comparing the client's clock with the server's ms-rounded TIME.
CLOCK_SLACK_S = 0.003

#: The wire class the fence answers a stale token with.
STALE = "EMQSTALE"

_ATTEMPTS_IS = re.compile(r"attempts is (\d+)")


class Reaps:
    """The reaps of a run that returned at least one job, ordered by when they ended."""

    def __init__(self, calls: Iterable[Call]) -> None:
        self.calls = sorted(calls, key=lambda c: c.ended)
        self._ends = [c.ended for c in self.calls]

    def between(self, low: float, high: float) -> bool:
        """True when some reap that returned jobs ran after ``low`` and before ``high``."""
        i = bisect.bisect_left(self._ends, low)
        return i < len(self.calls) and self.calls[i].started <= high


def unproven(
    c: Call, claims: Sequence[Call], finishing: Sequence[Call], reaps: Reaps, lost_claims: int
) -> str | None:
    """None when the ledger proves turned-away call ``c`` was for a stale token; else why not.

    ``claims`` are the job's accepted claims, ``finishing`` the calls that retired it, and
    ``lost_claims`` how many claims of the run lost their reply (a token they minted is unseen).
    """
    if c.outcome != "gone" and c.reply != STALE:
        return f"a refusal of that class is not the fence's (only {STALE} or a gone row are)"
    lease = next((k for k in claims if k.token == c.token and k.actor == c.actor), None)
    if lease is None:
        return f"no claim ever handed token {c.token} to {c.actor}"
    why = _lease_not_over(c, lease, reaps)
    if why is not None:
        return why
    if c.outcome == "gone" or "gone" in c.detail:
        return _not_retired_later(c, finishing)
    return _no_later_token(c, claims, lost_claims)


def _lease_not_over(c: Call, lease: Call, reaps: Reaps) -> str | None:
    """Why ``lease`` may still have held when ``c`` was turned away, or None if it was over."""
    expiry = lease.started + lease.lease_ms / 1000
    if c.ended + CLOCK_SLACK_S < expiry:
        return f"its lease of {lease.lease_ms} ms could not have expired yet"
    if not reaps.between(expiry - CLOCK_SLACK_S, c.ended):
        return "no reap returned any job between the lease's expiry and the refusal"
    return None


def _not_retired_later(c: Call, finishing: Sequence[Call]) -> str | None:
    """None when a lease with a later token had retired the job before ``c`` ended."""
    done = any(f.token > c.token and f.started <= c.ended for f in finishing)
    return None if done else "no later lease had retired the job"


def _no_later_token(c: Call, claims: Sequence[Call], lost_claims: int) -> str | None:
    """When the server named the row's attempts, why that is not a token minted after ``c``'s."""
    match = _ATTEMPTS_IS.search(c.detail)
    if not match:
        return None
    minted = int(match.group(1))
    if minted <= c.token:
        return f"the server said attempts is {minted}, not above the token"
    seen = any(k.token == minted and k.started <= c.ended for k in claims)
    if not seen and lost_claims == 0:
        return f"no claim before the refusal had minted token {minted}"
    return None
