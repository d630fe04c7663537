"""echomq_lab: the EchoMQ record-hash protocol, run for real, for the course's notebooks.

``connect()`` gives a client (embedded fakeredis with Lua by default); :mod:`jobs` holds one
handle per transition; :mod:`snapshot` reads what a panel shows of a queue (a bounded view)
or a small queue whole, and :func:`check` walks a whole queue for drift in short steps.
"""

from echomq_lab import branded, errors, jobs, keyspace, scripts, snapshot
from echomq_lab.connection import connect
from echomq_lab.snapshot import Drift, Snapshot, check

__all__ = [
    "Drift", "Snapshot", "branded", "check", "connect", "errors", "jobs", "keyspace", "scripts",
    "snapshot",
]
