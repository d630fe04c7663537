"""The fence under load: many workers, stalls past the lease, failures, a reaper and a promoter,
with a ledger of every call, audited at the end.

:mod:`.run` runs it (:class:`Settings`, :class:`Simulation`, :class:`Result`); :mod:`.audit`
holds the ledger and judges it; :mod:`.charts` reads a run back (also as ``follow``: the leases
of one worker or job) and draws it. ``python -m echomq_lab.sim`` is the command. Importing this
package loads no matplotlib, IPython or ipywidgets.
"""

from echomq_lab.sim import charts as follow
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
    Call,
    Ledger,
    Outcome,
    Sample,
    audit,
)
from echomq_lab.sim.charts import Lease, lease_story, leases, ran_twice, work_lost
from echomq_lab.sim.run import Result, Settings, Simulation, lab_url, simulate

__all__ = [
    "VERDICTS", "V_CLEAN", "V_DRIFT", "V_FINAL", "V_LEASE", "V_ONCE", "V_ORPHANS", "V_RUN",
    "V_STALE", "V_TOKENS", "Audit", "Call", "Lease", "Ledger", "Outcome", "Result", "Sample",
    "Settings", "Simulation", "audit", "follow", "lab_url", "lease_story", "leases", "ran_twice",
    "simulate", "work_lost",
]  # fmt: skip
