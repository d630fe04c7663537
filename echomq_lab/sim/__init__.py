"""The fence under load: many workers, stalls past the lease, failures, a reaper and a promoter,
with a ledger of every call, audited at the end.

The package by concept:

* :mod:`.run` -- :class:`Settings` (how a run behaves, faults included), the actors (workers,
  reaper, promoter, sampler, and the faults), :class:`Simulation` and :func:`simulate`, and
  :class:`Result`, the figures of a run;
* :mod:`.ledger` -- :class:`Call` and :class:`Ledger`, every answer the server gave;
* :mod:`.audit` -- :func:`audit`, the verdicts on a ledger, and the proof that a turned-away
  settle deserved it;
* :mod:`.follow` -- each lease rebuilt from the ledger, and one worker or job to follow;
* :mod:`.charts` -- the pictures (imports matplotlib: import it only to draw);
* ``python -m echomq_lab.sim`` -- the command (:mod:`.__main__`).

Importing this package loads no matplotlib, IPython or ipywidgets.
"""

from echomq_lab.sim.audit import (
    V_CLEAN,
    V_DRIFT,
    V_FINAL,
    V_LEASE,
    V_ONCE,
    V_ORPHANS,
    V_RUN,
    V_STALE,
    V_TOKENS,
    VERDICTS,
    Audit,
    Sample,
    audit,
)
from echomq_lab.sim.follow import Lease, lease_story, leases, ran_twice, work_lost
from echomq_lab.sim.ledger import Call, Ledger, Outcome
from echomq_lab.sim.run import Result, Settings, Simulation, lab_url, simulate

__all__ = [
    "VERDICTS",
    "V_CLEAN",
    "V_DRIFT",
    "V_FINAL",
    "V_LEASE",
    "V_ONCE",
    "V_ORPHANS",
    "V_RUN",
    "V_STALE",
    "V_TOKENS",
    "Audit",
    "Call",
    "Lease",
    "Ledger",
    "Outcome",
    "Result",
    "Sample",
    "Settings",
    "Simulation",
    "audit",
    "lab_url",
    "lease_story",
    "leases",
    "ran_twice",
    "simulate",
    "work_lost",
]
