"""A run's leases, rebuilt from its ledger: each accepted claim, to the settle that ended it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from echomq_lab.sim.audit import SETTLES, TURNED_AWAY, Call, accepted


@dataclass(frozen=True)
class Lease:
    """One lease, from its claim to its settle (or its abandonment)."""

    worker: str
    job_id: str
    token: int
    start: float
    end: float
    lease_ms: int
    outcome: str  # completed | retried | dead | refused | lost
    stalled: bool
    ran_again: bool  # the job had run before under a lease that was cut off
    gone: bool = False  # turned away because the row was gone, not refused by the fence


def _lease(claim: Call, settle: Call | None, cut: dict[str, int]) -> Lease:
    """The lease ``claim`` opened; one never settled is drawn to its deadline."""
    outcome, end, stalled = "lost", claim.ended + claim.lease_ms / 1000, False
    if settle is not None:
        end, stalled = settle.ended, settle.stalled
        if settle.outcome in TURNED_AWAY:
            outcome = "refused"
        elif settle.verb == "complete":
            outcome = "completed"
        else:
            outcome = "dead" if settle.reply == "dead" else "retried"
    ran_again = claim.job_id in cut and claim.token > cut[claim.job_id]
    gone = settle is not None and settle.outcome == "gone"
    return Lease(claim.actor, claim.job_id, claim.token, claim.started, end, claim.lease_ms,
                 outcome, stalled, ran_again, gone)


def leases(calls: Iterable[Call]) -> list[Lease]:
    """Every accepted claim of ``calls`` as a :class:`Lease` (ended by its last answered
    settle), in claim order; a job runs again under any token above its first cut-off one."""
    calls = list(calls)
    settles = {(c.actor, c.job_id, c.token): c for c in calls
               if c.verb in SETTLES and c.outcome != "lost-reply"}
    cut: dict[str, int] = {}
    for (_, job_id, token), settle in settles.items():
        if settle.outcome in TURNED_AWAY:
            cut[job_id] = min(token, cut.get(job_id, token))
    claims = sorted((c for c in calls if accepted(c, "claim")), key=lambda c: c.started)
    return [_lease(k, settles.get((k.actor, k.job_id, k.token)), cut) for k in claims]
