"""echomq_lab: the EchoMQ record-hash protocol, run for real, for the course's notebooks.
``connect()`` gives a client (embedded fakeredis with Lua by default), :mod:`jobs` one handle
per transition, :mod:`snapshot` a view of a queue, and :func:`check` walks a queue for drift.
"""

from echomq_lab import branded, errors, jobs, keyspace, scripts, snapshot
from echomq_lab.connection import connect
from echomq_lab.snapshot import Drift, Snapshot, check

__all__ = [
    "Drift", "Snapshot", "branded", "check", "connect", "errors", "jobs", "keyspace", "scripts",
    "snapshot",
]
