"""Branded ids: a 3-letter namespace and 11 base62 characters of a 63-bit snowflake.

The snowflake is ``ms_since_2024-01-01 << 22 | node << 12 | seq``. The base62 alphabet is in
ASCII order and the width is fixed, so sorting ids as text sorts them by mint time.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from typing import NamedTuple, cast

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
EPOCH_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
WIDTH = 11
LENGTH = 3 + WIDTH
MAX_SNOWFLAKE = (1 << 63) - 1
NODE_BITS, SEQ_BITS = 10, 12

_DIGIT = {c: i for i, c in enumerate(ALPHABET)}


class Parsed(NamedTuple):
    """The parts of a branded id."""

    namespace: str
    snowflake: int
    minted_ms: int  # Unix time in ms
    node: int
    seq: int

    @property
    def minted_at(self) -> dt.datetime:
        """The mint time as an aware UTC datetime."""
        return dt.datetime.fromtimestamp(self.minted_ms / 1000, tz=dt.UTC)


def _check_namespace(ns: object) -> str:
    if not isinstance(ns, str):
        raise TypeError(f"namespace must be a str, not {type(ns).__name__}")
    if len(ns) != 3 or not ns.isascii() or not ns.isupper() or not ns.isalpha():
        raise ValueError(f"bad namespace {ns!r}: expected 3 upper-case letters A-Z")
    return ns


def encode(ns: str, snowflake: int) -> str:
    """The branded id of ``snowflake`` (0 .. 2^63-1) in namespace ``ns``."""
    _check_namespace(ns)
    if not isinstance(snowflake, int) or isinstance(snowflake, bool):
        raise TypeError("snowflake must be an int")
    if not 0 <= snowflake <= MAX_SNOWFLAKE:
        raise ValueError(f"snowflake {snowflake} is outside 0..2^63-1")
    digits = ""
    for _ in range(WIDTH):
        snowflake, r = divmod(snowflake, 62)
        digits = ALPHABET[r] + digits
    return ns + digits


def _problem(job_id: object) -> str | None:
    """Why ``job_id`` is not a well-formed branded id, or None if it is: each rule in turn."""
    if not isinstance(job_id, str):
        return f"an id must be a str, not {type(job_id).__name__}"
    if len(job_id) != LENGTH:
        return f"bad id {job_id!r}: expected {LENGTH} characters, got {len(job_id)}"
    ns, body = job_id[:3], job_id[3:]
    if not (ns.isascii() and ns.isalpha() and ns.isupper()):
        return f"bad id {job_id!r}: the namespace {ns!r} must be 3 upper-case letters"
    if not (body.isascii() and body.isalnum()):
        bad = next(c for c in body if c not in _DIGIT)
        return f"bad id {job_id!r}: {bad!r} is not a base62 character"
    if body > _MAX_BODY:  # one width, an ASCII-ordered alphabet: text order is number order
        return f"bad id {job_id!r}: its value is above 2^63-1"
    return None


def _decode(body: str) -> int:
    n = 0
    for c in body:
        n = n * 62 + _DIGIT[c]
    return n


_MAX_BODY = encode("JOB", MAX_SNOWFLAKE)[3:]


def valid(job_id: object) -> bool:
    """True if ``job_id`` is a well-formed branded id of any namespace."""
    return _problem(job_id) is None


def check(job_id: object) -> str:
    """Return ``job_id`` if well-formed; raise TypeError or ValueError saying which rule fails
    (a str of 14 characters, a namespace of 3 upper-case letters, 11 base62 digits, a value
    at most 2^63-1)."""
    problem = _problem(job_id)
    if problem is None:
        return cast(str, job_id)
    raise (ValueError if isinstance(job_id, str) else TypeError)(problem)


def parse(job_id: str) -> Parsed:
    """Split a well-formed id into namespace, snowflake, mint time (Unix ms), node and seq."""
    check(job_id)
    sf = _decode(job_id[3:])
    return Parsed(
        namespace=job_id[:3],
        snowflake=sf,
        minted_ms=(sf >> (NODE_BITS + SEQ_BITS)) + EPOCH_MS,
        node=(sf >> SEQ_BITS) & ((1 << NODE_BITS) - 1),
        seq=sf & ((1 << SEQ_BITS) - 1),
    )


class Minter:
    """Mints strictly increasing snowflakes for one node; safe to share between threads."""

    def __init__(self, node: int | None = None) -> None:
        node = os.getpid() % (1 << NODE_BITS) if node is None else node
        if not 0 <= node < (1 << NODE_BITS):
            raise ValueError(f"node must be in 0..{(1 << NODE_BITS) - 1}")
        self.node = node
        self._last = -1
        self._lock = threading.Lock()

    def next_snowflake(self, now_ms: int | None = None) -> int:
        """A snowflake above every earlier one: the clock's, or the last one plus one."""
        ms = int(time.time() * 1000) if now_ms is None else now_ms
        candidate = ((ms - EPOCH_MS) << (NODE_BITS + SEQ_BITS)) | (self.node << SEQ_BITS)
        with self._lock:
            self._last = candidate if candidate > self._last else self._last + 1
            return self._last

    def mint(self, ns: str = "JOB", now_ms: int | None = None) -> str:
        """A fresh branded id in namespace ``ns``."""
        _check_namespace(ns)
        return encode(ns, self.next_snowflake(now_ms))


_default = Minter()


def mint(ns: str = "JOB") -> str:
    """A fresh branded id from this process's minter: later calls sort after earlier ones."""
    return _default.mint(ns)
