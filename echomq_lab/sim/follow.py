"""Reading one run back: each lease rebuilt from the ledger, the answers so far, and one worker
or one job to follow.

:func:`leases` rebuilds every lease (one per accepted claim) for the timeline; :func:`ran_twice`
finds the plainest at-least-once story, :func:`work_lost` the jobs a lost lease retired under a
live one (only a run without the fence has any), and :func:`lease_story` tells one job's leases
in words.

API (for the simulation panel and pages)::

    from echomq_lab.sim import follow
    follow.tally(result.ledger)            # {"claims": 80, "completed": 57, "EMQSTALE": 9, ...}
    follow.tally_text(counts)              # "claims 80 · completed 57 · refused EMQSTALE 9 ..."
    keys = follow.followable(leases)       # [(label, key)]: jobs that ran twice, then workers
    follow.window_of(leases, key, 0.5)     # (start, end) in seconds: a short window to draw
    follow.pick(leases, key, window)       # the leases of that worker or job inside the window
    follow.describe(leases, key, window)   # the same, one line per lease, in words

A key is ``"worker:w0"`` or ``"job:JOB..."``. Nothing here draws; the timeline is
:func:`echomq_lab.sim.charts.lease_timeline`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from echomq_lab.sim.ledger import TURNED_AWAY, Call, accepted, dead_lettered

# ---- leases read back from a ledger --------------------------------------------------------

SettleKey = tuple[str, str, int]  # (worker, job id, token)

#: How each way a lease can end reads in :func:`lease_story`.
STORY_WORDS: dict[str, str] = {
    "completed": "its complete was accepted: the job is retired",
    "retried": "its work failed; its retry was accepted",
    "dead": "its work failed at the attempts cap; its retry dead-lettered the job",
    "refused": "its settle was refused: the token was stale",
    "gone": "its settle found the job gone: another lease had retired it",
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
    gone: bool = False  # turned away because the row was gone, not refused by the fence


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
    gone = settle is not None and settle.outcome == "gone"
    return Lease(claim.actor, claim.job_id, claim.token, claim.started, end, claim.lease_ms,
                 outcome, stalled, ran_again, gone)


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


def ending_words(lease: Lease) -> str:
    """How ``lease`` ended, in words (a settle turned away says who turned it away)."""
    return STORY_WORDS["gone" if lease.gone else lease.outcome]


def work_lost(all_leases: Sequence[Lease]) -> list[str]:
    """Ids of the jobs retired by one lease while a later lease of theirs was still at work:
    that later lease's settle then found the job gone, and its work was lost. The fence makes
    this impossible (a complete with an old token is refused), so only a run without it has any.
    """
    by_job: dict[str, list[Lease]] = defaultdict(list)
    for lease in all_leases:
        by_job[lease.job_id].append(lease)
    found: list[tuple[bool, str]] = []
    for job_id, mine in by_job.items():
        done = [le.token for le in mine if le.outcome == "completed"]
        lost = [le for le in mine if done and le.gone and le.token > min(done)]
        if lost:
            found.append((all(le.stalled for le in lost), job_id))
    # the plainest first: the lease whose work was lost had not stalled
    return [job_id for _, job_id in sorted(found, key=lambda f: f[0])]


def lease_story(all_leases: Sequence[Lease], job_id: str) -> list[str]:
    """One line per lease of ``job_id``, in token order, in words (no times, no worker names)."""
    lines = []
    for lease in sorted((le for le in all_leases if le.job_id == job_id), key=lambda le: le.token):
        how = "stalled past its lease" if lease.stalled else "worked within its lease"
        lines.append(f"token {lease.token}: claimed; {how}; {ending_words(lease)}")
    return lines


# ---- following a run a piece at a time -----------------------------------------------------

Window = tuple[float, float]
#: The most jobs offered to follow (the ones that ran more than once come first).
MOST_JOBS = 30


def tally(calls: Iterable[Call]) -> dict[str, int]:
    """What the server has answered so far: claims handed out, jobs completed and dead,
    settles turned away by who said no (a wire class, or ``job gone``)."""
    counts: Counter[str] = Counter()
    for call in calls:
        if call.verb == "claim" and call.outcome == "accepted" and call.job_id:
            counts["claims"] += 1
        elif call.verb == "complete" and call.outcome == "accepted":
            counts["completed"] += 1
        elif dead_lettered(call):
            counts["dead"] += 1
        elif call.verb == "retry" and call.outcome == "accepted":
            counts["retried"] += 1
        elif call.verb in ("complete", "retry") and call.outcome in ("refused", "gone"):
            counts[call.reply] += 1
        elif call.verb == "reap" and call.outcome == "accepted" and call.reply not in ("", "0"):
            counts["reaped"] += int(call.reply) if call.reply.isdigit() else 1
    return dict(counts)


#: The order and the words of :func:`tally_text`.
_TALLY = (("claims", "claims"), ("completed", "completed"), ("retried", "retried"),
          ("dead", "dead"), ("reaped", "leases reaped"), ("EMQSTALE", "refused EMQSTALE"),
          ("job gone", "turned away, job gone"))  # fmt: skip


def tally_text(counts: dict[str, int]) -> str:
    """The tally in words, e.g. ``claims 80 · completed 57 · refused EMQSTALE 9``."""
    known = dict(_TALLY)
    parts = [f"{words} {counts.get(name, 0)}" for name, words in _TALLY]
    parts += [f"{name} {n}" for name, n in sorted(counts.items()) if name not in known]
    return " · ".join(parts)


def _workers(leases: Sequence[Lease]) -> list[str]:
    def order(name: str) -> tuple[int, str]:
        digits = name.lstrip("w")
        return (int(digits), name) if digits.isdigit() else (1 << 30, name)

    return sorted({le.worker for le in leases}, key=order)


def followable(leases: Sequence[Lease]) -> list[tuple[str, str]]:
    """What the reader may follow, as (label, key): the jobs that ran twice (a stalled lease
    cut off, then a completed one), other jobs with more than one lease, then every worker."""
    twice = ran_twice(leases)
    counts = Counter(le.job_id for le in leases)
    again = [j for j, n in counts.items() if n > 1 and j not in twice]
    jobs = (twice + again)[:MOST_JOBS]
    out = [(f"job {j} ({counts[j]} leases{', ran twice' if j in twice else ''})", f"job:{j}")
           for j in jobs]  # fmt: skip
    out += [(f"worker {w}", f"worker:{w}") for w in _workers(leases)]
    return out


def _mine(leases: Sequence[Lease], key: str) -> list[Lease]:
    """The leases of the worker or job ``key`` names; ValueError for a key of neither kind."""
    kind, _, name = key.partition(":")
    if kind == "worker":
        return [le for le in leases if le.worker == name]
    if kind == "job":
        return sorted((le for le in leases if le.job_id == name), key=lambda le: le.token)
    raise ValueError(f"follow {key!r}? a key is 'worker:<name>' or 'job:<id>'")


def span(leases: Sequence[Lease]) -> Window:
    """From the first claim to the last settle, in seconds since the run began."""
    if not leases:
        return (0.0, 0.0)
    return (min(le.start for le in leases), max(le.end for le in leases))


def window_of(leases: Sequence[Lease], key: str, length_s: float) -> Window:
    """A short window to draw: a job's leases with a quarter of their span (at least 20 ms)
    either side, or ``length_s`` seconds from a worker's first claim."""
    if length_s <= 0:
        raise ValueError(f"the window must be longer than 0 s, got {length_s}")
    mine = _mine(leases, key)
    start, end = span(mine)
    if key.startswith("job:"):
        margin = max(0.02, (end - start) / 4)
        return (max(0.0, start - margin), end + margin)
    return (start, start + length_s)


def pick(leases: Sequence[Lease], key: str, window: Window) -> list[Lease]:
    """The leases of the worker or job ``key`` that overlap ``window``."""
    low, high = window
    return [le for le in _mine(leases, key) if le.end >= low and le.start <= high]


def describe(leases: Sequence[Lease], key: str, window: Window) -> list[str]:
    """One line per lease that :func:`pick` finds, in words, times in ms since the run began."""
    lines = []
    for le in pick(leases, key, window):
        who = f"job {le.job_id}" if key.startswith("worker:") else f"worker {le.worker}"
        how = "stalled past its lease" if le.stalled else "worked within its lease"
        lines.append(f"{le.start * 1000:7.0f} ms  token {le.token}, {who}, lease {le.lease_ms} "
                     f"ms: {how}; {ending_words(le)}")
    return lines or ["no lease in this window"]
