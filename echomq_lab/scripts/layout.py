"""Each script's KEYS and ARGV, read from the one place they are written: the script's header.

A header line ``-- KEYS[2] active  emq:{Q}:active`` names a key by what it is (one of the
queue's four sets, or ``row``: the row of the job the call names); ``-- ARGV[2] lease ...``
names an argument, whose name says its form (:data:`FORMS`). ``KEYS[5..]`` and ``ARGV[3..]``
stand for as many as the caller follows (the view's rows and their ids). From that,
:meth:`Layout.keys` builds a call's keys for a queue, and :meth:`Layout.check` holds a raw call
(a learner's, at a room's gateway) to the layout and the argument rule
(:mod:`echomq_lab.scripts.arguments`): the gateway, the tests and a transition ``make transition``
adds read the layout from here; tests/test_layout.py holds :mod:`echomq_lab.jobs` to it.

Part of the protocol core: may import only the core's top level.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from echomq_lab import branded, errors, keyspace, scripts
from echomq_lab.scripts import arguments
from echomq_lab.scripts.arguments import Number

#: What each ARGV name holds: a number (its rule), or one of the other forms: ``prefix`` (the
#: queue's row-key prefix), ``id`` (the job's branded id), ``ids`` (the followed ids), ``mode``
#: (``at`` or ``in``), ``text`` (bytes kept verbatim: a payload, an error).
FORMS: dict[str, Number | str] = {
    "prefix": "prefix", "id": "id", "ids": "ids", "mode": "mode",
    "payload": "text", "error": "text",
    "lease": arguments.LEASE, "token": arguments.TOKEN, "delay": arguments.DELAY,
    "max": arguments.MAX_ATTEMPTS, "batch": arguments.BATCH, "window": arguments.WINDOW,
    "ms": arguments.DELAY_IN,
}  # fmt: skip
#: What a KEYS name stands for besides the four sets: the row of the job the call names.
ROW = "row"

_LINE = re.compile(r"^-- (KEYS|ARGV)\[(\d+)(\.\.)?\]\s+(\w+)", re.M)


class LayoutError(ValueError):
    """A header that does not say a layout: a gap in its numbering, or a name with no form."""


@dataclass(frozen=True)
class Layout:
    """One script's KEYS (set names and ``row``) and ARGV names, in order; ``more_keys`` and
    ``more_args`` name the repeated tail (``row`` and ``ids`` for the view), else ""."""

    script: str
    key_names: tuple[str, ...]
    arg_names: tuple[str, ...]
    more_keys: str = ""
    more_args: str = ""

    def keys(self, queue: str, job_id: str = "", follow: Sequence[str] = ()) -> list[str]:
        """The KEYS of a call on ``queue`` about ``job_id`` (for ``row``), with the rows of
        ``follow`` after them when the layout repeats rows."""
        k = keyspace.keys(queue)
        out = [k.row(job_id) if n == ROW else getattr(k, n) for n in self.key_names]
        return out + [k.row(i) for i in follow] if self.more_keys else out

    def form(self, position: int) -> Number | str:
        """The form of ARGV[``position``] (from 0)."""
        if position < len(self.arg_names):
            return FORMS[self.arg_names[position]]
        return FORMS[self.more_args]

    def check(self, queue: str, keys: Sequence[str], args: Sequence[bytes]) -> Call:
        """What a raw call on ``queue`` asks, if its keys are the layout's and each argument
        has its form: :class:`errors.BadArgument` naming the first that has not (the line
        the script itself would answer), or a :class:`LayoutError` for keys or a count of
        arguments not the layout's."""
        fixed = len(self.arg_names)
        if len(args) < fixed or (len(args) > fixed and not self.more_args):
            raise LayoutError(f"{self.script} takes {fixed} arguments")
        values: dict[str, int] = {}
        job, follow = "", []
        for n, raw in enumerate(args):
            form, name = self.form(n), (self.arg_names[n] if n < fixed else self.more_args)
            if name == "ms" and b"at" in args[:n]:  # schedule's run-at, not its delay
                form = arguments.RUN_AT
            if isinstance(form, Number):
                if not (name == "window" and raw == b"all"):
                    values[form.name] = form.read(raw)
            elif form in ("id", "ids"):
                text = _branded(raw)
                job = text if form == "id" else job
                follow += [text] if form == "ids" else []
            elif form == "prefix" and raw != keyspace.job_prefix(queue).encode():
                raise errors.BadArgument("prefix must be the row-key prefix of the same queue "
                                         "as the keys")
            elif form == "mode" and raw not in (b"at", b"in"):
                raise errors.BadArgument("mode must be at or in")
        if list(keys) != self.keys(queue, job, follow):
            raise LayoutError(f"{self.script} takes its queue's own keys")
        return Call(self.script, job, values, tuple(follow))


def _branded(raw: bytes) -> str:
    """``raw`` as a branded id, or the refusal the scripts give (include/argument.lua)."""
    try:
        return branded.check(raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        raise errors.BadArgument("id must be a branded id: 3 capitals, then 11 base62 "
                                 "digits") from None


@dataclass(frozen=True)
class Call:
    """A raw call held to its layout: the script, the job it names ("" when none), its
    numbers by their wire names (``lease``, ``token``, ``delay``, ``max``, ``window``...) and
    the ids it follows (the view's)."""

    script: str
    job: str
    numbers: dict[str, int]
    follow: tuple[str, ...] = ()


def parse(script: str, header: str) -> Layout:
    """The layout ``header`` (a script's leading comments) says; LayoutError when it says none."""
    found: dict[str, list[tuple[int, str, bool]]] = {"KEYS": [], "ARGV": []}
    for kind, number, more, name in _LINE.findall(header):
        found[kind].append((int(number), name, bool(more)))
    layout: dict[str, tuple[tuple[str, ...], str]] = {}
    for kind, lines in found.items():
        if [n for n, _, _ in lines] != list(range(1, len(lines) + 1)):
            raise LayoutError(f"{script}.lua numbers its {kind} with a gap")
        if any(more for _, _, more in lines[:-1]):
            raise LayoutError(f"{script}.lua repeats a {kind} line that is not its last")
        fixed = tuple(name for _, name, more in lines if not more)
        tail = lines[-1][1] if lines and lines[-1][2] else ""
        layout[kind] = fixed, tail
    for name in (*layout["KEYS"][0], layout["KEYS"][1]):
        if name and name != ROW and name not in keyspace.SET_NAMES:
            raise LayoutError(f"{script}.lua names a key {name!r}: use a set's name or row")
    for name in (*layout["ARGV"][0], layout["ARGV"][1]):
        if name and name not in FORMS:
            raise LayoutError(f"{script}.lua names an argument {name!r}: use one of "
                              f"{', '.join(FORMS)}")
    return Layout(script, layout["KEYS"][0], layout["ARGV"][0], layout["KEYS"][1],
                  layout["ARGV"][1])


@cache
def _of(script: str, header: str) -> Layout:
    return parse(script, header)


def of(script: str) -> Layout:
    """The layout of the script ``script`` (:func:`echomq_lab.scripts.load`), from its header."""
    return _of(script, scripts.load(script).header)
