"""The fields of a job row, as data: what each holds, how it starts, its role, and which
transitions write or read it. The field picker renders this table; :func:`mentions` scans the
scripts' own source so tests can hold the table to them. Also the payload's round trip through
a real enqueue and claim (:func:`round_trip`) and the samples the notebooks send through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import redis

from echomq_lab import branded, jobs, keyspace, queues, transitions
from echomq_lab.connection import reaching
from echomq_lab.row import FIELD_NAMES as FIELD_NAMES
from echomq_lab.scripts import load

#: The scripts of the transitions that can end a row (their entry says they write
#: :data:`~echomq_lab.transitions.RETIRED`): each deletes the whole hash, every field with it.
RETIRED_BY: tuple[str, ...] = tuple(t.script for t in transitions.TRANSITIONS if t.retires)

#: Redis commands that change a hash field (any other command that names one only reads it).
WRITE_COMMANDS = frozenset({"HSET", "HINCRBY", "HDEL"})


@dataclass(frozen=True)
class Use:
    """One command by which a transition's ``script`` writes or reads a field: ``how`` it uses
    the field, the ``value`` a write leaves when fixed (None when it depends on the call, and
    for a read), and ``when``, the condition if any."""

    script: str
    command: str
    how: str
    value: bytes | None = None
    when: str = ""

    @property
    def handles(self) -> tuple[str, ...]:
        """The :mod:`jobs` handles that run the script, as the registry names them."""
        return transitions.by_script(self.script).handles

    @property
    def what(self) -> str:
        """The use in words, led by a fixed value written: ``'pending': for each due job``."""
        if self.value is None:
            return self.how
        return f"{self.value.decode('utf-8', 'replace')!r}: {self.how}"


@dataclass(frozen=True)
class Field:
    """Everything the course says about one field of the row (``initial`` None: the caller's
    bytes, which ``initial_text`` puts in words)."""

    name: str
    holds: str
    initial: bytes | None
    initial_text: str
    role: str
    writes: tuple[Use, ...]
    reads: tuple[Use, ...] = ()

    @property
    def writers(self) -> tuple[str, ...]:
        """The scripts that write this field, in protocol order, each once."""
        return tuple(s for s in transitions.SCRIPTS if any(w.script == s for w in self.writes))

    @property
    def untouched_by(self) -> tuple[str, ...]:
        """Transitions that never write this field (those that delete the row aside:
        :data:`RETIRED_BY`)."""
        return tuple(t for t in transitions.SCRIPTS
                     if t not in self.writers and t not in RETIRED_BY)


_STATE = Field(
    "state",
    holds="where the job is in its lifecycle: pending, scheduled, active or dead",
    initial=b"pending",
    initial_text="pending ('scheduled' when enqueued for later)",
    role="the lifecycle position; each transition that moves the id between sets rewrites it in "
    "the same script (extend moves nothing and leaves it; complete deletes the row), so it "
    "always names the set that holds the job",
    writes=(
        Use("enqueue", "HSET", "in the one HSET that writes all three fields", b"pending"),
        Use("schedule", "HSET", "in the same three-field HSET, for a job enqueued for later",
            b"scheduled"),
        Use("claim", "HSET", "as it leases the job", b"active"),
        Use("retry", "HSET", "for another try later", b"scheduled", "attempts below the cap"),
        Use("retry", "HSET", "into the morgue (the dead set)", b"dead", "attempts at the cap"),
        Use("promote", "HSET", "for each due job", b"pending"),
        Use("reap", "HSET", "for each expired lease", b"pending"),
        Use("reprocess", "HSET", "for a dead job sent back", b"pending"),
    ),
    reads=(Use("reprocess", "HGET", "names the state in its EMQSTATE refusal"),),
)
_ATTEMPTS = Field(
    "attempts",
    holds="the number of claims so far, which is also the current lease's token",
    initial=b"0",
    initial_text="0",
    role="two roles, one number: it counts the tries, and it fences them. Enqueue sets 0; only "
    "claim changes it, adding one and giving the worker the result as its token, which "
    "complete, retry and extend then check (the second dive, The state and attempts)",
    writes=(
        Use("enqueue", "HSET", "in the three-field HSET", b"0"),
        Use("schedule", "HSET", "in the three-field HSET", b"0"),
        Use("claim", "HINCRBY", "+1; the new value is the worker's token"),
    ),
    reads=(
        Use("claim", "HMGET", "the lab's claim checks it is a whole number before any write "
                           "(EMQROW, the lab's own refusal, if not)"),
        Use("complete", "HGET", "checks it against the token the worker presents"),
        Use("retry", "HGET", "checks it against the token, then against the attempts cap"),
        Use("extend", "HGET", "checks it against the token the worker presents"),
    ),
)
_PAYLOAD = Field(
    "payload",
    holds="the caller's bytes: the job's cargo",
    initial=None,
    initial_text="the caller's bytes",
    role="the job's cargo: what the caller gave enqueue, and what claim hands the worker; what "
    "happens to it in between is the third dive's subject (The payload)",
    writes=(
        Use("enqueue", "HSET", "the caller's bytes"),
        Use("schedule", "HSET", "the caller's bytes"),
    ),
    reads=(Use("claim", "HMGET", "hands it to the worker"),),
)
FIELDS: dict[str, Field] = {f.name: f for f in (_STATE, _ATTEMPTS, _PAYLOAD)}


def newborn_row(payload: bytes) -> dict[bytes, bytes]:
    """The row enqueue writes for ``payload``: exactly the three fields, at their initial values
    (the payload's is the caller's bytes)."""
    return {n.encode(): FIELDS[n].initial or payload for n in FIELD_NAMES}


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
        """``write`` or ``read``: the command alone decides (:data:`WRITE_COMMANDS`)."""
        return "write" if self.command in WRITE_COMMANDS else "read"

    def __str__(self) -> str:
        return f"{self.script}.lua:{self.line_no}  {self.command:<7} {self.line}"


_CALL = re.compile(r"redis\.call\('([A-Za-z]+)'")


def mentions(name: str) -> list[Mention]:
    """Every code line (not comments) of the transitions' scripts (not views such as ``view.lua``)
    that holds ``'name'`` as a quoted Lua string inside a ``redis.call``."""
    found: list[Mention] = []
    for script in transitions.SCRIPTS:
        for no, line in enumerate(load(script).source.splitlines(), start=1):
            code = line.strip()
            call = _CALL.search(code)
            if call and f"'{name}'" in code and not code.startswith("--"):
                found.append(Mention(script, no, call.group(1).upper(), code))
    return found


def scripts_that(name: str, access: str) -> tuple[str, ...]:
    """The scripts whose source writes (``access="write"``) or reads field ``name``."""
    if access not in ("write", "read"):
        raise ValueError(f"access must be 'write' or 'read', not {access!r}")
    return tuple(dict.fromkeys(m.script for m in mentions(name) if m.access == access))


def disagreements(name: str) -> list[str]:
    """Every way the table's entry for field ``name`` and the scripts' source disagree, one
    line each, naming the script, the field and what to change ([] when they agree): a write is
    matched by script and command, a read by script."""
    entry, where = FIELDS[name], f'Field("{name}", ...) in echomq_lab/lessons/fields.py'
    said = []
    for access, uses in (("write", entry.writes), ("read", entry.reads)):
        width = 2 if access == "write" else 1  # a write by (script, command), a read by script
        listed = {(u.script, u.command)[:width]: u for u in uses}
        seen: dict[tuple[str, ...], Mention] = {}
        for m in mentions(name):
            if m.access == access:
                seen.setdefault((m.script, m.command)[:width], m)
        for k, m in seen.items():
            if k not in listed:
                said.append(f"scripts/{m.script}.lua:{m.line_no} {access}s the field {name!r} "
                            f"({m.command}), but {where} does not list it: add "
                            f'Use("{m.script}", "{m.command}", "<what it does with it>") to its '
                            f"{access}s")
        for k, u in listed.items():
            if k not in seen:
                said.append(f"{where} lists {u.script} ({u.command}) among its {access}s, but "
                            f"scripts/{u.script}.lua does not {access} {name!r} that way: "
                            "remove that Use, or mend the script")
    return said


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
    """Send ``payload`` (a ``str`` as UTF-8) through a real enqueue and claim, reading the row's
    payload in between, then complete the job so nothing of it remains. Needs a queue with
    nothing pending: else ValueError, and nothing is written."""
    keyspace.check_queue(queue)
    sent = jobs.check_payload(payload)
    with reaching(conn):
        waiting = int(conn.zcard(keyspace.queue_key(queue, "pending")))
    if waiting:
        raise ValueError(f"a round trip claims the job it enqueues, so it needs a queue with "
                         f"nothing pending; queue {queue!r} has {waiting} pending job(s)")
    job_id = branded.mint("JOB")
    jobs.enqueue(conn, queue, job_id, sent)
    stored = (jobs.record(conn, queue, job_id) or {}).get(b"payload")
    claimed = queues.claim_expected(conn, queue, job_id, lease_ms=60_000)
    jobs.complete(conn, queue, job_id, claimed.token)
    return RoundTrip(label, job_id, sent, stored, claimed.payload, claimed.token)


_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|[\\0nrt]|x|.|$)", re.DOTALL)
_SIMPLE = {"\\": b"\\", "0": b"\x00", "n": b"\n", "r": b"\r", "t": b"\t"}


def parse_escapes(text: str) -> bytes:
    r"""``text`` as UTF-8 bytes, with ``\xNN``, ``\0``, ``\n``, ``\r``, ``\t`` and ``\\`` decoded;
    any other backslash sequence is a ValueError, so a typo never sends bytes not meant."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    out, pos = bytearray(), 0
    for m in _ESCAPE.finditer(text):
        code, at = m.group(1), m.start()
        if code == "":
            raise ValueError(f"a lone backslash at position {at}: write \\\\ for a backslash")
        if code == "x":
            raise ValueError(f"bad escape {text[at : at + 4]} at position {at}: "
                             "\\x needs two hex digits")
        if len(code) == 1 and code not in _SIMPLE:
            raise ValueError(f"unknown escape \\{code} at position {at}: "
                             "use \\xNN, \\0, \\n, \\r, \\t or \\\\")
        out += text[pos:at].encode("utf-8")
        out += bytes([int(code[1:], 16)]) if len(code) == 3 else _SIMPLE[code]
        pos = m.end()
    return bytes(out + text[pos:].encode("utf-8"))
