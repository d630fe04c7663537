"""Which backends a run may use: all of them, or those ``ECHOMQ_BACKENDS`` names
(``ECHOMQ_BACKENDS=fakeredis``, as ``make check`` runs, is the embedded server alone).
Standard library only, so every support module may import it."""

from __future__ import annotations

import os
from collections.abc import Collection

#: Names the backends a run uses, comma-separated; unset or empty, every backend.
ONLY_ENV = "ECHOMQ_BACKENDS"
#: Every backend's name (tests/support/backends.py's registry holds each one).
KNOWN = ("fakeredis", "valkey", "redis", "cluster", "browser")


def named(known: Collection[str] = KNOWN) -> list[str]:
    """The backends :data:`ONLY_ENV` names (empty: every one); ValueError for a name not in
    ``known``."""
    chosen = [n.strip() for n in os.environ.get(ONLY_ENV, "").split(",") if n.strip()]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise ValueError(f"{ONLY_ENV}={unknown[0]!r}: pick from {', '.join(known)}")
    return chosen


def not_asked(name: str) -> str:
    """Why this run leaves the backend ``name`` alone, in one line."""
    return f"{name}: this run asked for {ONLY_ENV}={','.join(named())}"


def asked(name: str) -> bool:
    """True when this run may use the backend ``name``: :data:`ONLY_ENV` is unset or names it."""
    chosen = named()
    return not chosen or name in chosen
