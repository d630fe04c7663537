"""echomq_lab: the EchoMQ record-hash protocol, run for real, for the course's notebooks.
``connect()`` gives a client (embedded fakeredis with Lua by default), :mod:`jobs` one handle
per transition, :mod:`snapshot` a view of a queue, and :func:`check` walks a queue for drift.

The folders are the layers, each importing only those before it:

- this top level, ``scripts/`` and ``browser/``: the protocol core; it may import nothing else
  of the package and loads no ipywidgets, IPython or matplotlib;
- ``lessons/``: what the course's pages tell (stories, the fence, the fields, self-checks);
- the labs: ``sim/`` (the fence under load), ``measure/`` (one round trip), ``cluster/`` (one
  queue, one slot);
- ``widgets/``: the panels, which may use all of the above.
"""

from echomq_lab import branded, errors, jobs, keyspace, queues, scripts, snapshot
from echomq_lab.connection import connect
from echomq_lab.snapshot import Drift, Snapshot, check

__all__ = [
    "Drift", "Snapshot", "branded", "check", "connect", "errors", "jobs", "keyspace", "queues",
    "scripts", "snapshot",
]
