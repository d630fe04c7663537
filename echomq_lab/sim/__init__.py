"""The fence under load: many workers, stalls past the lease, failures, a reaper and a promoter,
with a ledger of every call, audited at the end.

The package by concept:

* :mod:`.settings` -- :class:`Settings`, how a run behaves (faults included: ``evictions``);
* :mod:`.runner` -- :class:`Simulation` (and :func:`simulate`), which runs the actors of
  :mod:`.actors` (workers, reaper, promoter, sampler) sharing one :mod:`.state`;
* :mod:`.ledger` -- :class:`Call` and :class:`Ledger`, every answer the server gave;
* :mod:`.audit` -- :func:`audit`, the verdicts on a ledger (with :mod:`.proof` for staleness);
* :mod:`.leases` -- each lease rebuilt from the ledger, for the timeline and the stories;
* :mod:`.result` -- :class:`Result`, the figures of a run;
* :mod:`.charts` -- the pictures (imports matplotlib: import it only to draw);
* ``python -m echomq_lab.sim`` -- the command (:mod:`.__main__`).

Importing this package loads no matplotlib, IPython or ipywidgets.
"""

from echomq_lab.sim.audit import (
    V_CLEAN,
    V_DRIFT,
    V_FINAL,
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
from echomq_lab.sim.leases import Lease, lease_story, leases, ran_twice
from echomq_lab.sim.ledger import Call, Ledger, Outcome
from echomq_lab.sim.result import Result
from echomq_lab.sim.runner import Simulation, lab_url, simulate
from echomq_lab.sim.settings import Settings

__all__ = [
    "VERDICTS",
    "V_CLEAN",
    "V_DRIFT",
    "V_FINAL",
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
]
