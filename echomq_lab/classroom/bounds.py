"""What a room lets a learner's script call ask, beyond the argument rule every script keeps
(:mod:`echomq_lab.scripts.arguments`): which scripts, with which keys and arguments (each script's
layout, :mod:`echomq_lab.scripts.layout`), and numbers bounded by the room's own lease.

- a lease (claim, extend) from a quarter of the room's lease to :data:`LEASE_TIMES` times it:
  no lease that holds a job for ages or stretches the board's timeline, none that only churns
  attempts;
- a retry's delay at most :data:`LEASE_TIMES` times the room's lease, its cap on attempts at
  most :data:`MAX_ATTEMPTS`;
- a view's window at most :data:`VIEW_WINDOW` members of each set (never ``all``), and at
  most :data:`VIEW_FOLLOW` rows followed.

A refusal is one line that starts ``EMQARG`` and names the argument, as a script's would.
"""

from __future__ import annotations

from collections.abc import Sequence

from echomq_lab import transitions
from echomq_lab.scripts import layout

#: The lease a room starts with (ms), and the one the gateway takes a room without one to have.
DEFAULT_LEASE_MS = 3000
#: How many times the room's lease a learner's lease (or a retry's delay) may be at most; a
#: lease is at least the room's divided by it.
LEASE_TIMES = 4
#: The highest cap on attempts a learner's retry may give.
MAX_ATTEMPTS = 100
#: The widest window a learner's view may ask for.
VIEW_WINDOW = 100
#: The most rows a learner's view may follow.
VIEW_FOLLOW = 32


def learner_scripts() -> tuple[str, ...]:
    """The scripts a learner's desk runs, as the registry stands now: claim, every fenced
    transition's (a learner settles or extends the job they claimed; one ``make transition``
    adds is among them at once) and the view."""
    fenced = tuple(t.script for t in transitions.TRANSITIONS if t.fenced)
    return ("claim", *fenced, "view")


def held(room: str, script: str, keys: Sequence[bytes], args: Sequence[bytes]) -> layout.Call:
    """A learner's raw call of ``script`` held to its layout and the argument rule: the
    :class:`layout.Call`, or ValueError in one line (:class:`errors.BadArgument` for an
    argument, the line a script would give; :class:`layout.LayoutError` for keys)."""
    texts = [k.decode("utf-8", "replace") for k in keys]
    return layout.of(script).check(room, texts, args)


def refusal(call: layout.Call, room_lease_ms: int) -> str:
    """Why ``call`` asks more than the room allows (one line, after ``EMQARG``), or ""."""
    n, most = call.numbers, LEASE_TIMES * room_lease_ms
    least = max(1, room_lease_ms // LEASE_TIMES)
    if "lease" in n and not least <= n["lease"] <= most:
        return (f"lease must be from {least} to {most} ms in this room (its lease is "
                f"{room_lease_ms} ms)")
    if "delay" in n and n["delay"] > most:
        return f"delay must be at most {most} ms in this room (its lease is {room_lease_ms} ms)"
    if "max" in n and n["max"] > MAX_ATTEMPTS:
        return f"max must be at most {MAX_ATTEMPTS} attempts in this room"
    if "window" in layout.of(call.script).arg_names and n.get("window", VIEW_WINDOW + 1) > (
            VIEW_WINDOW):
        return f"window must be from 0 to {VIEW_WINDOW} in this room"
    if len(call.follow) > VIEW_FOLLOW:
        return f"ids must be at most {VIEW_FOLLOW} in this room"
    return ""


def needs_lease(call: layout.Call) -> bool:
    """True when the room's lease bounds ``call`` (it carries a lease or a delay)."""
    return "lease" in call.numbers or "delay" in call.numbers

