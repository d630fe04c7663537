"""The protocol's Lua scripts, one file each, and the EVALSHA dispatch that runs them.

A :class:`Script` knows its own SHA1 (computed here, the way the server computes it), so a call
is one EVALSHA. Only when the server answers NOSCRIPT (first use, or after SCRIPT FLUSH) is the
body sent with SCRIPT LOAD and the EVALSHA tried once more.

A script file may hold directive lines ``--@include <name>``: :func:`load` puts the text of
``include/<name>.lua`` in their place (an include may include another; each is put in once per
script), so what the server runs, what the SHA1 is taken over and what a page prints is one
whole script with no directive left in it.

Part of the protocol core: may import only the core's top level (errors, connection, transitions).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import redis
from redis.exceptions import NoScriptError, ResponseError

from echomq_lab import errors, transitions
from echomq_lab.connection import LOST, unreachable
from echomq_lab.transitions import SCRIPTS, Transition

Arg = str | bytes | int

#: The read-only scripts the lab's views run; every other script is a transition's, named in
#: :data:`echomq_lab.transitions.TRANSITIONS`.
VIEWS: tuple[str, ...] = ("view",)
#: Scripts shipped only to demonstrate a failure (never run by a handle of ``jobs``).
DEMOS: tuple[str, ...] = ("unfenced_complete", "unguarded_enqueue", "evict",
                          "token_only_complete", "course_claim")
_NAME = re.compile(r"[a-z_]{1,40}")
#: A line that asks for an include; group 1 is the include's name.
DIRECTIVE = re.compile(r"--@include ([a-z_]{1,40})\s*$")
#: Where the include files live, inside this package.
INCLUDES = "include"


class IncludeError(ValueError):
    """A script's include directive names no include file, is malformed, or closes a cycle."""


def include_text(name: str) -> str:
    """The text of ``include/<name>.lua``; IncludeError when there is no such include."""
    path = resources.files(__package__).joinpath(INCLUDES, f"{name}.lua")
    if not _NAME.fullmatch(name) or not path.is_file():
        raise IncludeError(f"no include named {name!r} (looked for {INCLUDES}/{name}.lua)")
    return path.read_text(encoding="utf-8")


def expand(text: str, where: str, read: Callable[[str], str] = include_text) -> str:
    """``text`` with each directive line replaced by the include's own text, expanded in turn.

    An include already put in earlier in the same script leaves its later directives empty.
    IncludeError for a malformed directive, an unknown name, or a cycle; its message starts
    with the chain of ``file:line`` that led there. ``read`` gives an include's text by name.
    """
    done: set[str] = set()

    def walk(text: str, where: str, chain: tuple[str, ...]) -> list[str]:
        out: list[str] = []
        for no, line in enumerate(text.splitlines(), start=1):
            if not line.lstrip().startswith("--@"):
                out.append(line)
                continue
            found = DIRECTIVE.match(line)
            if found is None:
                raise IncludeError(f"{where}:{no}: malformed directive {line!r}")
            name = found.group(1)
            if name in chain:
                raise IncludeError(f"{where}:{no}: include cycle {' -> '.join((*chain, name))}")
            if name in done:
                continue
            try:
                out += walk(read(name), f"{INCLUDES}/{name}.lua", (*chain, name))
            except IncludeError as exc:
                raise IncludeError(f"{where}:{no}: {exc}") from None
            done.add(name)
        return out

    return "\n".join(walk(text, where, ())) + ("\n" if text.endswith("\n") else "")


@dataclass(frozen=True)
class Script:
    """One protocol script: its name, its Lua body and the SHA1 the server will know it by."""

    name: str
    source: str
    #: The file's leading comments (KEYS, ARGV, replies), before any code or include.
    header: str = ""
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())
        if not self.header:
            object.__setattr__(self, "header", leading_comments(self.source))

    def __call__(self, conn: redis.Redis, keys: Sequence[str], args: Sequence[Arg]) -> Any:
        """Run the script with one EVALSHA and return its reply.

        NOSCRIPT (first use, or after SCRIPT FLUSH): the body is loaded and the EVALSHA sent
        once more. An error reply raises its typed refusal (:func:`errors.from_reply`); a lost
        server raises the one-line :class:`errors.ServerUnavailable`.
        """
        try:
            try:
                return conn.evalsha(self.sha, len(keys), *keys, *args)
            except NoScriptError:
                self.load_into(conn)
                return conn.evalsha(self.sha, len(keys), *keys, *args)
        except ResponseError as exc:  # NOSCRIPT is one too, but is caught above
            raise self.refusal(exc) from None
        except LOST as exc:
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


def leading_comments(text: str) -> str:
    """The comment lines ``text`` opens with, up to its first code line or directive."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("--") or DIRECTIVE.match(line):
            break
        lines.append(line)
    return "\n".join(lines)


@cache
def load(name: str) -> Script:
    """The script ``name`` read from this package's ``<name>.lua``, its includes expanded.

    KeyError when there is no such script; :class:`IncludeError` when a directive names no
    include file, is malformed, or the includes form a cycle.
    """
    path = resources.files(__package__).joinpath(f"{name}.lua")
    if not _NAME.fullmatch(name) or not path.is_file():
        raise KeyError(f"no script named {name!r}")
    text = path.read_text(encoding="utf-8")
    return Script(name, expand(text, f"{name}.lua"), leading_comments(text))


#: The wire class of the stub ``make transition`` writes (:class:`errors.NotWritten`).
STUB = errors.NotWritten.wire_class


def is_stub(name: str) -> bool:
    """True while the script ``name`` is still the stub ``make transition`` wrote: its one
    line refuses every call (:class:`errors.NotWritten`)."""
    return f"'{STUB} " in load(name).source


def written() -> tuple[Transition, ...]:
    """The registry's transitions whose script is written (not :func:`is_stub`), in order."""
    return tuple(t for t in transitions.TRANSITIONS if not is_stub(t.script))


def names() -> tuple[str, ...]:
    """Every script the lab ships: each transition's (registry order), the views, the demos."""
    return SCRIPTS + VIEWS + DEMOS


def includes() -> tuple[str, ...]:
    """The names of the include files the package ships (``include/<name>.lua``), sorted."""
    folder = resources.files(__package__).joinpath(INCLUDES)
    stems = (p.name[: -len(".lua")] for p in folder.iterdir() if p.name.endswith(".lua"))
    return tuple(sorted(stems))
