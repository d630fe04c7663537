"""A script's numeric argument as the scripts read it: the one rule, on the host's side.

A number crosses the wire as text, and the scripts take only one spelling of it: ASCII decimal
digits, no sign, no leading zero ("0" itself is fine), no ``_``, no exponent, no other script's
digits, its value within the argument's bounds. ``include/argument.lua`` is the same rule in Lua
(tests/test_argument_rule.py holds the two equal over arbitrary strings and bytes). A handle
checks the Python int it is given (:meth:`Number.check`, TypeError/ValueError before anything
is sent); a room's gateway reads a learner's raw argument (:meth:`Number.read`) and refuses it
with the very line the script would answer (:class:`errors.BadArgument`, ``EMQARG``).

Part of the protocol core: may import only the core's top level (errors).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from echomq_lab import errors

#: The longest lease or delay the lab accepts: one year, in ms.
MAX_MS = 365 * 24 * 3600 * 1000
#: The latest run-at the lab accepts (ms since the Unix epoch): far beyond any real clock,
#: and small enough that every score stays an exact integer on every server.
MAX_RUN_AT_MS = 2**52
#: The largest token (or attempts cap) the lab passes on (far beyond any real count of claims).
MAX_TOKEN = 2**62
#: The most due members one promote reads.
MAX_BATCH = 100_000
#: The widest window a view returns of each set (``all`` aside).
MAX_WINDOW = 1000

_DIGITS = re.compile(rb"0|[1-9][0-9]*")


def decimal(raw: str | bytes, low: int, high: int) -> int | None:
    """The value of ``raw`` when it is a number the scripts take within ``low..high``, else
    None: ASCII digits only, no sign, no leading zero (a str is read as its UTF-8 bytes)."""
    data = raw.encode("utf-8", "replace") if isinstance(raw, str) else raw
    if len(data) > len(str(high)) or not _DIGITS.fullmatch(data):
        return None
    value = int(data)
    return value if low <= value <= high else None


@dataclass(frozen=True)
class Number:
    """One numeric argument: its name on the wire (the script's ARGV name) and its bounds."""

    name: str
    low: int
    high: int

    @property
    def refusal(self) -> str:
        """What a script answers for a malformed one, after ``EMQARG``: one line naming it."""
        return f"{self.name} must be decimal digits from {self.low} to {self.high}"

    def read(self, raw: str | bytes) -> int:
        """``raw`` as a number, or :class:`errors.BadArgument` saying what the script would."""
        value = decimal(raw, self.low, self.high)
        if value is None:
            raise errors.BadArgument(self.refusal)
        return value

    def check(self, value: object, name: str = "") -> int:
        """``value`` if it is a plain int (not a bool) within the bounds; TypeError or
        ValueError naming ``name`` (the handle's parameter; this argument's by default)."""
        said = name or self.name
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{said} must be an int, not {type(value).__name__}")
        if not self.low <= value <= self.high:
            raise ValueError(f"{said} must be between {self.low} and {self.high}, got {value}")
        return value


#: The numeric arguments of the protocol's scripts, by their ARGV name.
LEASE = Number("lease", 1, MAX_MS)
TOKEN = Number("token", 1, MAX_TOKEN)
DELAY = Number("delay", 0, MAX_MS)
MAX_ATTEMPTS = Number("max", 1, MAX_TOKEN)
BATCH = Number("batch", 1, MAX_BATCH)
RUN_AT = Number("ms", 0, MAX_RUN_AT_MS)
DELAY_IN = Number("ms", 0, MAX_MS)
WINDOW = Number("window", 0, MAX_WINDOW)
NUMBERS: tuple[Number, ...] = (LEASE, TOKEN, DELAY, MAX_ATTEMPTS, BATCH, RUN_AT, DELAY_IN,
                               WINDOW)
