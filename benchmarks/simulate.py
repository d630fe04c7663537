"""``python -m benchmarks.simulate``: one long simulation of the fence under load, its figures
printed and written as JSON.

For example: ``python -m benchmarks.simulate --jobs 20000 --workers 8 --out results/sim.json``.
The exit status is 0 when every verdict held, 1 when the audit found a violation, and 2 when a
setting was refused (the one-line reason goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from echomq_lab import errors
from echomq_lab.sim import Result, Settings, Simulation
from echomq_lab.sim.run import RUNNERS

#: The figures printed and written, in this order.
FIGURES = (
    "jobs", "workers", "claims", "stalls", "failures", "refusals", "duplicates",
    "completed", "dead", "lost_jobs", "unfinished_jobs", "reaped", "promoted",
    "drift_samples", "connection_errors", "lost_replies", "restarts_seen", "evicted",
    "orphans_dropped", "resent", "resends_refused", "tokens_minted_twice",
    "stale_completes_accepted", "settled_after_lease_lost", "elapsed_s", "jobs_per_s",
)  # fmt: skip
#: The figures written but not printed.
MORE = ("refusals_by_class", "resolved_after_lost_reply", "timed_out")


def _values(result: Result, names: Sequence[str]) -> list[tuple[str, Any]]:
    """Each figure of ``names`` with its value; ``jobs_per_s``: jobs settled per second."""
    settled = result.completed + result.dead
    rate = round(settled / result.elapsed_s, 1) if result.elapsed_s > 0 else 0.0
    return [(name, rate if name == "jobs_per_s" else getattr(result, name)) for name in names]


def figures(result: Result) -> dict[str, Any]:
    """The figures as plain JSON-ready values (no ledger; at most 100 violations)."""
    out: dict[str, Any] = {"backend": result.backend, "server": result.server,
                           "queue": result.queue, "cpus": os.cpu_count()}
    out.update(_values(result, FIGURES + MORE))
    out["violation_count"] = len(result.violations)
    out["violations"] = result.violations[:100]
    out["verdicts"] = result.verdicts
    out["settings"] = asdict(result.settings)
    return out


def summary(result: Result) -> str:
    """The figures and verdicts as aligned text lines."""
    lines = [f"{'backend':>24}: {result.backend} ({result.server})"]
    for name, value in _values(result, FIGURES):
        lines.append(f"{name:>24}: {f'{value:.2f}' if isinstance(value, float) else value}")
    lines.append(f"{'violations':>24}: {len(result.violations)}")
    lines += [f"  {'ok ' if held else 'NO '} {name}" for name, held in result.verdicts.items()]
    lines += [f"  violation: {msg}" for msg in result.violations[:20]]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    """The command's options; each default is the :class:`Settings` default."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.simulate",
                                description="Run the fence under load, then audit it.")
    d = Settings()
    p.add_argument("--jobs", type=int, default=d.jobs)
    p.add_argument("--workers", type=int, default=d.workers)
    p.add_argument("--stall", type=float, default=d.stall, help="chance a lease stalls")
    p.add_argument("--fail", type=float, default=d.fail, help="chance the work fails")
    p.add_argument("--max-attempts", type=int, default=d.max_attempts)
    p.add_argument("--lease-ms", type=int, nargs=2, default=d.lease_ms, metavar=("LOW", "HIGH"))
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--evictions", type=int, default=d.evictions,
                   help="job rows to delete under live leases (the eviction fault)")
    p.add_argument("--resend", action="store_true",
                   help="re-send each evicted id at once (the re-send fault; needs --evictions)")
    p.add_argument("--no-resend-guard", dest="resend_guard", action="store_false",
                   help="re-send through the unguarded enqueue (a demonstration)")
    p.add_argument("--no-fence", dest="fence", action="store_false",
                   help="complete without the fence (a demonstration): the audit then reports "
                        "what the fence would have refused")
    p.add_argument("--timeout", type=float, default=d.timeout_s, help="seconds, overall")
    p.add_argument("--url", default=None, help="a real server (default: embedded fakeredis)")
    p.add_argument("--runner", choices=RUNNERS, default="threads",
                   help="threads (the default here: the host's clock, so the times are real), "
                        "loop (no thread; on the embedded server a clock of the run's own, so "
                        "elapsed_s is simulated time), or auto")
    p.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the figures, write them as JSON; the exit status as described above."""
    a = parser().parse_args(argv)
    try:
        settings = Settings(jobs=a.jobs, workers=a.workers, stall=a.stall, fail=a.fail,
                            max_attempts=a.max_attempts, lease_ms=tuple(a.lease_ms), seed=a.seed,
                            timeout_s=a.timeout, evictions=a.evictions, resend=a.resend,
                            resend_guard=a.resend_guard, fence=a.fence, runner=a.runner)
        result = Simulation(settings, url=a.url).run()
    except (ValueError, TypeError, RuntimeError, errors.EchoMQError) as exc:
        print(f"simulate: {exc}", file=sys.stderr)
        return 2
    print(summary(result))
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(figures(result), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {a.out}")
    return 1 if result.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
