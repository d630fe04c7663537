"""The protocol's Lua scripts, one file each, and the EVALSHA dispatch that runs them.

A :class:`Script` knows its own SHA1 (computed here, the way the server computes it), so a call
is one EVALSHA. Only when the server answers NOSCRIPT (first use, or after SCRIPT FLUSH) is the
body sent with SCRIPT LOAD and the EVALSHA tried once more.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.exceptions import NoScriptError, ResponseError

from echomq_lab import errors
from echomq_lab.connection import reaching, unreachable

Arg = str | bytes | int

#: The read-only scripts the lab's views run; every other script is a transition's, named in
#: :data:`echomq_lab.transitions.TRANSITIONS`.
VIEWS: tuple[str, ...] = ("view",)
_NAME = re.compile(r"[a-z_]{1,40}")


@dataclass(frozen=True)
class Script:
    """One protocol script: its name, its Lua body and the SHA1 the server will know it by."""

    name: str
    source: str
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())

    @property
    def header(self) -> str:
        """The leading comment block: what the script takes (KEYS, ARGV) and replies."""
        lines = []
        for line in self.source.splitlines():
            if not line.startswith("--"):
                break
            lines.append(line)
        return "\n".join(lines)

    def __call__(self, conn: redis.Redis, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """Run the script with EVALSHA; load it on NOSCRIPT; map refusals to typed errors.

        The hot path is one ``execute_command`` (what ``conn.evalsha`` calls, two frames
        less) inside a plain ``try``; only a NOSCRIPT reply takes the slower path.
        """
        try:
            return conn.execute_command(  # type: ignore[no-untyped-call]
                "EVALSHA", self.sha, len(keys), *keys, *args
            )
        except NoScriptError:
            with reaching(conn):
                self.load_into(conn)
                try:
                    return conn.evalsha(self.sha, len(keys), *keys, *args)
                except ResponseError as exc:
                    raise self.refusal(exc) from None
        except ResponseError as exc:
            raise self.refusal(exc) from None
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise unreachable(conn, exc) from None

    def load_into(self, conn: redis.Redis) -> None:
        """SCRIPT LOAD the body; RuntimeError if the server knows it by another SHA1."""
        loaded = conn.script_load(self.source)
        if loaded != self.sha:
            raise RuntimeError(f"server hashed {self.name}.lua as {loaded!r}")

    @staticmethod
    def refusal(exc: ResponseError) -> Exception:
        """The typed refusal an error reply stands for, or the reply itself if it is none."""
        refused = errors.from_reply(str(exc))
        return exc if refused is None else refused


@cache
def load(name: str) -> Script:
    """The script ``name`` read from this package's ``<name>.lua``."""
    path = resources.files(__package__).joinpath(f"{name}.lua")
    if not _NAME.fullmatch(name) or not path.is_file():
        raise KeyError(f"no script named {name!r}")
    source = path.read_text(encoding="utf-8")
    return Script(name, source)


def names() -> tuple[str, ...]:
    """Every script the lab ships: each transition's (registry order), then the views."""
    from echomq_lab.transitions import SCRIPTS  # late: transitions -> jobs -> this package

    return SCRIPTS + VIEWS
