"""The fence under load: many workers, stalls past the lease, failures, a reaper, a promoter and
a ledger of every call, audited at the end. :mod:`.run` runs it (its actors as threads, or
taken in turn by :mod:`.loop` with no thread), :mod:`.audit` judges the ledger, :mod:`.charts`
(also ``follow``) reads a run back and draws it as SVG. Importing it loads no matplotlib or
ipywidgets.

Lab 05's layer: may import the protocol core, :mod:`echomq_lab.lessons` and the look
(:mod:`echomq_lab.widgets.look`, which loads no ipywidgets); never a panel."""

from echomq_lab.sim import charts as follow
from echomq_lab.sim.audit import (
    V_CLEAN,
    V_DRIFT,
    V_FINAL,
    V_LEASE,
    V_ONCE,
    V_ORPHANS,
    V_STALE,
    V_TOKENS,
    VERDICTS,
    Call,
    Ledger,
    Sample,
    audit,
)
from echomq_lab.sim.charts import lease_story, ran_twice, work_lost
from echomq_lab.sim.leases import Lease
from echomq_lab.sim.run import Result, Settings, Simulation, lab_url, simulate

__all__ = [
    "VERDICTS", "V_CLEAN", "V_DRIFT", "V_FINAL", "V_LEASE", "V_ONCE", "V_ORPHANS", "V_STALE",
    "V_TOKENS", "Call", "Lease", "Ledger", "Result", "Sample", "Settings", "Simulation",
    "audit", "follow", "lab_url", "lease_story", "ran_twice", "simulate", "work_lost",
]  # fmt: skip
