"""Reading one run a piece at a time: the answers so far, and one worker or one job to follow.

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

from collections import Counter
from collections.abc import Iterable, Sequence

from echomq_lab.sim.leases import STORY_WORDS, Lease, ran_twice
from echomq_lab.sim.ledger import Call, dead_lettered

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
                     f"ms: {how}; {STORY_WORDS[le.outcome]}")
    return lines or ["no lease in this window"]
