"""The names of a room's keys beside the queue's own: each actor's log (the record of who did
what, written by the room's gateway for learners), the gateway's record of refusals and failed
logins, and the room's settings hash. May import the protocol core only."""

from __future__ import annotations

from echomq_lab import keyspace

#: The room's settings hash (lease length, the reaper on or off), written by the instructor.
CTL = "ctl"
#: What each stream of the gateway's record keeps at most (trimmed as it grows).
RECORD_LEN = 1000


def log_key(room: str, actor: str) -> str:
    """The stream where ``actor`` (a learner, the instructor, the reaper) logs its calls."""
    return f"{keyspace.base(room)}log:{actor}"


def record_key(room: str, kind: str) -> str:
    """A stream of the gateway's record: ``logins`` (failed logins, by address) or
    ``refused:<learner>`` (what the gateway refused that learner)."""
    return f"{keyspace.base(room)}gate:{kind}"


def ctl_key(room: str) -> str:
    """The room's settings hash: ``lease_ms``, ``reaper`` (``on``/``off``), ``t0_ms``."""
    return keyspace.base(room) + CTL
