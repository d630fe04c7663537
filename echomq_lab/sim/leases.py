"""Leases read back from a ledger: each claim, how long it was held, and how it ended.

:func:`leases` rebuilds every lease (one per accepted claim) for the timeline; :func:`ran_twice`
finds the plainest at-least-once story, and :func:`lease_story` tells one job's leases in words.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from echomq_lab.sim.ledger import TURNED_AWAY, Call, accepted

SettleKey = tuple[str, str, int]  # (worker, job id, token)

#: How each way a lease can end reads in :func:`lease_story`.
STORY_WORDS: dict[str, str] = {
    "completed": "its complete was accepted: the job is retired",
    "retried": "its work failed; its retry was accepted",
    "dead": "its work failed at the attempts cap; its retry dead-lettered the job",
    "refused": "its settle was refused: the token was stale",
    "lost": "it never settled (reply lost, or the run stopped)",
}


@dataclass(frozen=True)
class Lease:
    """One lease as the timeline draws it: from the claim to its settle (or its abandonment)."""

    worker: str
    job_id: str
    token: int
    start: float
    end: float
    lease_ms: int
    outcome: str  # completed | retried | dead | refused | lost
    stalled: bool
    ran_again: bool  # the job had run before under a lease that was cut off


def _settles(calls: Iterable[Call]) -> dict[SettleKey, Call]:
    """Each lease's last answered settle (complete or retry), by worker, job and token."""
    return {
        (c.actor, c.job_id, c.token): c
        for c in calls if c.verb in ("complete", "retry") and c.outcome != "lost-reply"
    }  # fmt: skip


def _first_cut(settles: dict[SettleKey, Call]) -> dict[str, int]:
    """For each job, the lowest token whose settle was turned away."""
    cut: dict[str, int] = {}
    for (_, job_id, token), settle in settles.items():
        if settle.outcome in TURNED_AWAY:
            cut[job_id] = min(token, cut.get(job_id, token))
    return cut


def _ending(settle: Call) -> str:
    """How a lease ended, from its settle: turned away, completed, retried or dead."""
    if settle.outcome in TURNED_AWAY:
        return "refused"
    if settle.verb == "complete":
        return "completed"
    return "dead" if settle.reply == "dead" else "retried"


def _lease(claim: Call, settle: Call | None, cut: dict[str, int]) -> Lease:
    """The lease ``claim`` opened; one never settled is drawn to its deadline."""
    if settle is None:
        outcome, end, stalled = "lost", claim.ended + claim.lease_ms / 1000, False
    else:
        outcome, end, stalled = _ending(settle), settle.ended, settle.stalled
    ran_again = claim.job_id in cut and claim.token > cut[claim.job_id]
    return Lease(claim.actor, claim.job_id, claim.token, claim.started, end, claim.lease_ms,
                 outcome, stalled, ran_again)


def leases(calls: Iterable[Call]) -> list[Lease]:
    """Every accepted claim of ``calls`` as a :class:`Lease`, in claim order."""
    calls = list(calls)
    settles = _settles(calls)
    cut = _first_cut(settles)
    claims = sorted((c for c in calls if accepted(c, "claim")), key=lambda c: c.started)
    return [_lease(k, settles.get((k.actor, k.job_id, k.token)), cut) for k in claims]


def ran_twice(all_leases: Sequence[Lease]) -> list[str]:
    """Ids of the jobs that ran exactly twice: a first lease that stalled and was refused, then
    a second that completed. The plainest picture of at-least-once under the fence."""
    by_job: dict[str, list[Lease]] = defaultdict(list)
    for lease in all_leases:
        by_job[lease.job_id].append(lease)
    found = []
    for job_id, mine in by_job.items():
        mine.sort(key=lambda le: le.token)
        if [(le.outcome, le.stalled) for le in mine] == [("refused", True), ("completed", False)]:
            found.append(job_id)
    return found


def lease_story(all_leases: Sequence[Lease], job_id: str) -> list[str]:
    """One line per lease of ``job_id``, in token order, in words (no times, no worker names)."""
    lines = []
    for lease in sorted((le for le in all_leases if le.job_id == job_id), key=lambda le: le.token):
        how = "stalled past its lease" if lease.stalled else "worked within its lease"
        lines.append(f"token {lease.token}: claimed; {how}; {STORY_WORDS[lease.outcome]}")
    return lines
