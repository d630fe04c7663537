"""The names of a room's keys beside the queue's own: each actor's log (the record of who did
what, written by the room's gateway for learners), the gateway's record of refusals and failed
logins, and the room's settings hash. May import the protocol core only."""

from __future__ import annotations

from echomq_lab import keyspace

#: The room's settings hash (lease length, the reaper on or off), written by the instructor.
CTL = "ctl"
#: What each stream of the gateway's record keeps at most (trimmed as it grows).
RECORD_LEN = 1000
#: What each learner's log keeps at most (``XADD MAXLEN ~``, written by the gateway): about
#: 2.5 hours of a learner at a class's pace (a line every 2 s or so), ~0.6 MB, within the 2 MB
#: of server memory the room gives each learner. The board counts every line it saw while
#: open; :func:`tally` read afresh counts the lines still kept. The instructor's side (the
#: enqueues, the reaper, storms) is not capped: the audit needs every enqueue.
LOG_LEN = 5000
#: The board reads a log in pages of this many lines (``XRANGE ... COUNT``), never all at once.
PAGE = 500
#: How many logs one pipeline reads a page of: a reply of at most 10,000 lines (about 2 MB),
#: well inside the server's output buffer limit for one client (8 MB for 10 s, 16 MB).
PIPED = 20


def log_key(room: str, actor: str) -> str:
    """The stream where ``actor`` (a learner, the instructor, the reaper) logs its calls."""
    return f"{keyspace.base(room)}log:{actor}"


def record_key(room: str, kind: str) -> str:
    """A stream of the gateway's record: ``logins`` (failed logins, by address)."""
    return f"{keyspace.base(room)}gate:{kind}"


def refusals_key(room: str, learner: str) -> str:
    """The hash counting what the gateway refused ``learner``, by kind (``HINCRBY``): a count
    per kind, so no amount of one kind can hide another."""
    return f"{keyspace.base(room)}gate:refusals:{learner}"


def ctl_key(room: str) -> str:
    """The room's settings hash: ``lease_ms``, ``reaper`` (``on``/``off``), ``t0_ms``."""
    return keyspace.base(room) + CTL
