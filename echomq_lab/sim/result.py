"""The figures of one run, its ledger, samples and final state, with the audit's verdicts."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from echomq_lab.sim.audit import Audit, Sample
from echomq_lab.sim.leases import Lease, leases
from echomq_lab.sim.ledger import Call, accepted
from echomq_lab.sim.settings import Settings
from echomq_lab.sim.state import RunState
from echomq_lab.snapshot import Snapshot


@dataclass(frozen=True)
class Timing:
    """How a run went by the host's clock: seconds enqueuing, seconds working, timed out."""

    enqueue_s: float
    elapsed_s: float
    timed_out: bool


@dataclass
class Result:
    """The figures of one run (see :meth:`to_dict`), its ledger, samples and audit."""

    settings: Settings
    backend: str
    server: str
    queue: str
    jobs: int
    workers: int
    claims: int
    stalls: int
    failures: int
    refusals: int
    refusals_by_class: dict[str, int]
    duplicates: int
    completed: int
    dead: int
    lost_jobs: int
    unfinished_jobs: int
    violations: list[str]
    verdicts: dict[str, bool]
    elapsed_s: float
    enqueue_s: float
    jobs_per_s: float
    reaped: int
    promoted: int
    drift_samples: int
    connection_errors: int
    lost_replies: int
    resolved_after_lost_reply: int
    restarts_seen: int
    timed_out: bool
    evicted: int = 0
    orphans_dropped: int = 0
    tokens_minted_twice: int = 0
    stale_completes_accepted: int = 0
    ledger: list[Call] = field(repr=False, default_factory=list)
    samples: list[Sample] = field(repr=False, default_factory=list)
    final: Snapshot | None = field(repr=False, default=None)

    FIGURES = (
        "jobs", "workers", "claims", "stalls", "failures", "refusals", "duplicates",
        "completed", "dead", "lost_jobs", "unfinished_jobs", "reaped", "promoted",
        "drift_samples", "connection_errors", "lost_replies", "restarts_seen", "evicted",
        "orphans_dropped", "tokens_minted_twice", "stale_completes_accepted", "elapsed_s",
        "jobs_per_s",
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain JSON-ready values (no ledger)."""
        out: dict[str, Any] = {"backend": self.backend, "server": self.server,
                               "queue": self.queue, "cpus": os.cpu_count()}
        for name in self.FIGURES:
            out[name] = getattr(self, name)
        out["enqueue_s"] = self.enqueue_s
        out["refusals_by_class"] = self.refusals_by_class
        out["resolved_after_lost_reply"] = self.resolved_after_lost_reply
        out["timed_out"] = self.timed_out
        out["violation_count"] = len(self.violations)
        out["violations"] = self.violations[:100]
        out["verdicts"] = self.verdicts
        out["settings"] = asdict(self.settings)
        return out

    def leases(self) -> list[Lease]:
        """Every lease of the run, for the timeline."""
        return leases(self.ledger)

    def summary(self) -> str:
        """The figures and verdicts as aligned text lines."""
        lines = [f"{'backend':>24}: {self.backend} ({self.server})"]
        for name in self.FIGURES:
            value = getattr(self, name)
            shown = f"{value:.2f}" if isinstance(value, float) else str(value)
            lines.append(f"{name:>24}: {shown}")
        lines.append(f"{'violations':>24}: {len(self.violations)}")
        for verdict, held in self.verdicts.items():
            lines.append(f"  {'ok ' if held else 'NO '} {verdict}")
        for msg in self.violations[:20]:
            lines.append(f"  violation: {msg}")
        return "\n".join(lines)


def result_of(run: RunState, backend: str, verdict: Audit, timing: Timing,
              final: Snapshot | None) -> Result:
    """Gather a finished run's figures: its counters, its ledger, and the audit's verdicts."""
    s, c, calls = run.settings, run.counts, list(run.ledger.calls)
    settled = verdict.completed + verdict.dead
    elapsed = timing.elapsed_s
    return Result(
        settings=s, backend=backend, server=run.server, queue=run.queue,
        jobs=s.jobs, workers=s.workers,
        claims=sum(1 for k in calls if accepted(k, "claim")),
        stalls=c["stalls"], failures=c["failures"],
        refusals=verdict.refusals, refusals_by_class=verdict.refusals_by_class,
        duplicates=verdict.duplicates, completed=verdict.completed, dead=verdict.dead,
        lost_jobs=len(verdict.lost), unfinished_jobs=len(verdict.unfinished),
        violations=verdict.violations, verdicts=verdict.verdicts,
        elapsed_s=round(elapsed, 3), enqueue_s=round(timing.enqueue_s, 3),
        jobs_per_s=round(settled / elapsed, 1) if elapsed > 0 else 0.0,
        reaped=c["reaped"], promoted=c["promoted"], drift_samples=len(run.samples),
        connection_errors=c["connection_errors"],
        lost_replies=sum(1 for k in calls if k.outcome == "lost-reply"),
        resolved_after_lost_reply=verdict.resolved_after_lost_reply,
        restarts_seen=run.restarts, timed_out=timing.timed_out,
        evicted=verdict.evicted, orphans_dropped=verdict.orphans_dropped,
        tokens_minted_twice=verdict.tokens_minted_twice,
        stale_completes_accepted=verdict.stale_completes_accepted,
        ledger=calls, samples=list(run.samples), final=final,
    )  # fmt: skip
