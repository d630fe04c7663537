"""The three fields of a job row, as data: what each holds, how it starts, what it is for, and
which transitions write it (and how) or read it.

The table here is what the field picker renders; it is kept honest two ways. :func:`mentions`
scans the library's own Lua scripts for every command that names a field, so a test can check
that the scripts which write or read a field are exactly the ones the table lists; and the
values the table says a transition writes are checked against rows reached by real runs.

The module also carries the payload's round trip (:func:`round_trip`: a payload through a real
enqueue and claim, compared byte for byte) and the samples the notebooks send through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import redis

from echomq_lab import branded, jobs, keyspace, transitions
from echomq_lab.connection import reaching
from echomq_lab.row import FIELD_NAMES as FIELD_NAMES
from echomq_lab.row import FieldName as FieldName
from echomq_lab.scripts import load

#: The scripts that are transitions of the protocol (``snapshot`` is the lab's read-only view).
TRANSITION_SCRIPTS: tuple[str, ...] = transitions.SCRIPTS

#: The one transition that ends a row: it deletes the whole hash, every field with it.
RETIRED_BY: str = next(t.script for t in transitions.TRANSITIONS if transitions.RETIRED in t.writes)

#: Redis commands that change a hash field (any other command that names one only reads it).
WRITE_COMMANDS = frozenset({"HSET", "HINCRBY", "HDEL"})


def _in_protocol_order(scripts: set[str]) -> tuple[str, ...]:
    """``scripts`` in the registry's order (the order every list of transitions follows)."""
    return tuple(s for s in TRANSITION_SCRIPTS if s in scripts)


@dataclass(frozen=True)
class Use:
    """One command by which a transition's script writes or reads a field, and what it does.

    ``script`` is the Lua file; ``command`` the Redis command, which alone decides whether the
    use is a write or a read (:data:`WRITE_COMMANDS`, the rule :class:`Mention` follows for the
    scripts' own lines); ``how`` what the script does with the field there; ``value`` the bytes
    a write leaves when they are fixed (None when they depend on the call, such as the
    caller's payload or attempts + 1, and for a read); ``when`` the condition, if any.
    """

    script: str
    command: str
    how: str
    value: bytes | None = None
    when: str = ""

    @property
    def access(self) -> str:
        """``write`` or ``read``, from the command."""
        return "write" if self.command in WRITE_COMMANDS else "read"

    @property
    def handles(self) -> tuple[str, ...]:
        """The :mod:`jobs` handles that run the script, as the registry names them."""
        return transitions.by_script(self.script).handle_names

    @property
    def what(self) -> str:
        """The use in words: the value written (when fixed) and how, e.g.
        ``'pending': for each due job``."""
        if self.value is None:
            return self.how
        return f"{self.value.decode('utf-8', 'replace')!r}: {self.how}"


@dataclass(frozen=True)
class Field:
    """Everything the course says about one field of the row."""

    name: str
    holds: str
    initial: bytes | None  # None: the caller's bytes
    initial_text: str
    role: str
    writes: tuple[Use, ...]
    reads: tuple[Use, ...]

    @property
    def writers(self) -> tuple[str, ...]:
        """The scripts that write this field, in protocol order, each once."""
        return _in_protocol_order({w.script for w in self.writes})

    @property
    def readers(self) -> tuple[str, ...]:
        """The scripts that read this field, in protocol order, each once."""
        return _in_protocol_order({r.script for r in self.reads})

    @property
    def untouched_by(self) -> tuple[str, ...]:
        """Transitions that never write this field (``complete`` aside: it deletes the row)."""
        return tuple(t for t in TRANSITION_SCRIPTS if t not in self.writers and t != RETIRED_BY)


def _field(*, name: str, holds: str, initial: bytes | None, role: str,
           writes: tuple[Use, ...], reads: tuple[Use, ...] = (),
           initial_text: str | None = None) -> Field:
    """One entry of the tables below; ``initial_text`` defaults to the initial value itself
    (a field whose initial value is the caller's bytes must say so in words). ValueError when
    a use is filed under writes or reads against what its command does, or a read has a value."""
    for group, uses in (("write", writes), ("read", reads)):
        for use in uses:
            if use.access != group or (group == "read" and use.value is not None):
                raise ValueError(f"field {name}: {use.script}'s {use.command} is a "
                                 f"{use.access}, filed under the {group}s")
    if initial_text is None:
        if initial is None:
            raise ValueError(f"field {name}: the caller's bytes need an initial_text")
        initial_text = initial.decode()
    return Field(name, holds, initial, initial_text, role, writes, reads)


FIELDS: dict[str, Field] = {
    "state": _field(
        name="state",
        holds="where the job is in its lifecycle: pending, scheduled, active or dead",
        initial=b"pending",
        initial_text="pending ('scheduled' when enqueued for later)",
        role=(
            "the lifecycle position; each transition that moves the id between sets rewrites "
            "it in the same script (extend moves nothing and leaves it; complete deletes the "
            "row), so it always names the set that holds the job"
        ),
        writes=(
            Use("enqueue", "HSET",
                "in the one HSET that writes all three fields", value=b"pending"),
            Use("schedule", "HSET",
                "in the same three-field HSET, for a job enqueued for later", value=b"scheduled"),
            Use("claim", "HSET", "as it leases the job", value=b"active"),
            Use("retry", "HSET",
                "for another try later", value=b"scheduled", when="attempts below the cap"),
            Use("retry", "HSET",
                "into the morgue (the dead set)", value=b"dead", when="attempts at the cap"),
            Use("promote", "HSET", "for each due job", value=b"pending"),
            Use("reap", "HSET", "for each expired lease", value=b"pending"),
            Use("reprocess", "HSET", "for a dead job sent back", value=b"pending"),
        ),
        reads=(
            Use("reprocess", "HGET", "names the state in its EMQSTATE refusal"),
        ),
    ),
    "attempts": _field(
        name="attempts",
        holds="the number of claims so far, which is also the current lease's token",
        initial=b"0",
        role=(
            "two roles, one number: it counts the tries, and it fences them. Enqueue sets 0; "
            "only claim changes it, adding one and giving the worker the result as its token; "
            "complete, retry and extend refuse any other token (EMQSTALE)"
        ),
        writes=(
            Use("enqueue", "HSET", "in the three-field HSET", value=b"0"),
            Use("schedule", "HSET", "in the three-field HSET", value=b"0"),
            Use("claim", "HINCRBY", "+1; the new value is the worker's token"),
        ),
        reads=(
            Use("claim", "HMGET", "checks it is a whole number before any write: EMQROW if not"),
            Use("complete", "HGET", "compares it with the token: a mismatch is EMQSTALE"),
            Use("retry", "HGET", "compares it with the token, then with the attempts cap"),
            Use("extend", "HGET", "compares it with the token: a mismatch is EMQSTALE"),
        ),
    ),
    "payload": _field(
        name="payload",
        holds="the caller's bytes: the job's cargo",
        initial=None,
        initial_text="the caller's bytes, verbatim",
        role=(
            "opaque cargo: stored verbatim by enqueue, handed back verbatim by claim, and "
            "never looked at by any script; binary-safe"
        ),
        writes=(
            Use("enqueue", "HSET", "the caller's bytes, verbatim"),
            Use("schedule", "HSET", "the caller's bytes, verbatim"),
        ),
        reads=(
            Use("claim", "HMGET", "hands it to the worker untouched, never inspects it"),
        ),
    ),
}

#: A field that is not part of a newborn row: it appears only when a transition needs it.
EXTRA_FIELDS: dict[str, Field] = {
    "last_error": _field(
        name="last_error",
        holds="the error text of the last failed try",
        initial=None,
        initial_text="(absent: a new row has only the three fields)",
        role="a note for people; no script reads it",
        writes=(
            Use("retry", "HSET", "the caller's error text"),
            Use("reprocess", "HDEL", "removed: the job starts over"),
        ),
    ),
}


def field(name: str) -> Field:
    """The entry of field ``name`` (one of the three, or an extra field such as last_error)."""
    if name in FIELDS:
        return FIELDS[name]
    if name in EXTRA_FIELDS:
        return EXTRA_FIELDS[name]
    known = ", ".join([*FIELDS, *EXTRA_FIELDS])
    raise KeyError(f"no field named {name!r}: the row's fields are {known}")


def newborn_row(payload: bytes) -> dict[bytes, bytes]:
    """The row enqueue writes for ``payload``: exactly the three fields, at their initial values."""
    return {
        b"state": FIELDS["state"].initial or b"",
        b"attempts": FIELDS["attempts"].initial or b"",
        b"payload": payload,
    }


# -- what the scripts actually say ----------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    """One line of a protocol script that names a field in a Redis command."""

    script: str
    line_no: int
    command: str
    line: str

    @property
    def access(self) -> str:
        """``write`` or ``read``, from the command."""
        return "write" if self.command in WRITE_COMMANDS else "read"

    def __str__(self) -> str:
        return f"{self.script}.lua:{self.line_no}  {self.command:<7} {self.line}"


_CALL = re.compile(r"redis\.call\('([A-Za-z]+)'")


def mentions(name: str, scripts: tuple[str, ...] | None = None) -> list[Mention]:
    """Every code line (comments skipped) of the transitions' scripts that names field ``name``
    (the read-only views, such as ``view.lua``, are not transitions and are left out).

    A line counts when it holds ``'name'`` as a quoted Lua string inside a ``redis.call``.
    """
    quoted = f"'{name}'"
    found: list[Mention] = []
    for script in transitions.SCRIPTS if scripts is None else scripts:
        for no, line in enumerate(load(script).source.splitlines(), start=1):
            code = line.strip()
            if code.startswith("--") or quoted not in code:
                continue
            call = _CALL.search(code)
            if call is None:
                continue
            found.append(Mention(script, no, call.group(1).upper(), code))
    return found


def scripts_that(name: str, access: str) -> tuple[str, ...]:
    """The scripts whose source writes (``access="write"``) or reads field ``name``."""
    if access not in ("write", "read"):
        raise ValueError(f"access must be 'write' or 'read', not {access!r}")
    return tuple(dict.fromkeys(m.script for m in mentions(name) if m.access == access))


def _pending_count(conn: redis.Redis, queue: str) -> int:
    with reaching(conn):
        return int(conn.zcard(keyspace.queue_key(queue, "pending")))


def _require_no_pending(conn: redis.Redis, queue: str, what: str) -> None:
    waiting = _pending_count(conn, queue)
    if waiting:
        raise ValueError(
            f"{what} claims the job it enqueues, so it needs a queue with nothing pending; "
            f"queue {queue!r} has {waiting} pending job(s)"
        )


# -- the payload round trip -----------------------------------------------------------------

#: A few payloads to send through the protocol: (label, bytes).
SAMPLE_PAYLOADS: tuple[tuple[str, bytes], ...] = (
    ("JSON", b'{"to": "ada@example.com", "tries": [1, 2], "ok": true}'),
    ("plain text", "Grüße aus Köln ☕".encode()),
    ("a number", b"0042.50"),
    ("binary: NUL and invalid UTF-8", b"\x00\xff\xfeEMQ\x00\x80\xc3("),
    ("looks like a row", b"state=dead attempts=99"),
    ("looks like Lua", b"redis.call('FLUSHALL')"),
    ("empty", b""),
)
ROUND_TRIP_LEASE_MS = 60_000


@dataclass(frozen=True)
class RoundTrip:
    """One payload through the protocol: what was sent, what the row held, what claim returned."""

    label: str
    job_id: str
    sent: bytes
    stored: bytes | None
    returned: bytes
    token: int

    @property
    def equal(self) -> bool:
        """True when the row held, and claim returned, exactly the bytes that were sent."""
        return self.sent == self.stored == self.returned


def round_trip(
    conn: redis.Redis, queue: str, payload: bytes | str, label: str = "payload"
) -> RoundTrip:
    """Send ``payload`` through a real enqueue and claim, then complete the job.

    Records the bytes sent, the bytes the row held (read with HGET before the claim) and the
    bytes claim returned. The job is completed at the end, so nothing of it remains. Needs a
    queue with nothing pending; otherwise ValueError and nothing is written. A ``str`` is sent
    as its UTF-8 bytes.
    """
    keyspace.check_queue(queue)
    if isinstance(payload, str):
        sent = payload.encode("utf-8")
    elif isinstance(payload, bytes):
        sent = payload
    else:
        raise TypeError(f"payload must be bytes or str, not {type(payload).__name__}")
    _require_no_pending(conn, queue, "a round trip")
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, queue, job_id, sent)
    with reaching(conn):
        stored: bytes | None = conn.hget(keyspace.job_key(queue, job_id), "payload")  # type: ignore[assignment]
    claimed = jobs.claim(conn, queue, ROUND_TRIP_LEASE_MS)
    if claimed is None or claimed.id != job_id:
        got = "nothing" if claimed is None else claimed.id
        raise RuntimeError(f"expected to claim {job_id} from {queue!r}, got {got}")
    jobs.complete(conn, queue, job_id, claimed.token)
    return RoundTrip(label, job_id, sent, stored, claimed.payload, claimed.token)


_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|[\\0nrt])|\\(.?)", re.DOTALL)
_SIMPLE = {"\\": b"\\", "0": b"\x00", "n": b"\n", "r": b"\r", "t": b"\t"}


def parse_escapes(text: str) -> bytes:
    r"""``text`` as UTF-8 bytes, with ``\xNN``, ``\0``, ``\n``, ``\r``, ``\t`` and ``\\`` decoded.

    Any other backslash sequence is refused with ValueError, so a typo never sends bytes the
    reader did not mean.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(text):
        out += text[pos : m.start()].encode("utf-8")
        if m.group(1) is None:
            raise ValueError(_escape_problem(text, m.start(), m.group(2)))
        code = m.group(1)
        out += bytes([int(code[1:], 16)]) if code.startswith("x") else _SIMPLE[code]
        pos = m.end()
    out += text[pos:].encode("utf-8")
    return bytes(out)


def _escape_problem(text: str, at: int, after: str) -> str:
    """One line saying what is wrong with the backslash at position ``at``."""
    if after == "":
        return f"a lone backslash at position {at}: write \\\\ for a backslash"
    if after == "x":
        return f"bad escape {text[at : at + 4]} at position {at}: \\x needs two hex digits"
    return (
        f"unknown escape \\{after} at position {at}: use \\xNN, \\0, \\n, \\r, \\t "
        "or \\\\"
    )
