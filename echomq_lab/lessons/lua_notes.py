"""Reading the scripts: a gloss for every Redis command they call, and a short Lua primer.

No widget or display library here; :func:`echomq_lab.widgets.beats.primer` shows :data:`PRIMER`.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from importlib import resources

#: What each Redis command a script may call does, in one line (our words).
GLOSS: dict[str, str] = {
    "DEL": "delete the key (here: the whole row)",
    "EXISTS": "1 if the key is there, 0 if not",
    "HDEL": "remove one field from the hash",
    "HGET": "read one field of the hash (false when it is missing)",
    "HGETALL": "every field and value of the hash",
    "HMGET": "read several fields of the hash at once (false for each one missing)",
    "HINCRBY": "add to a field holding an integer; answer the new value",
    "HSET": "write one or more fields of the hash",
    "TIME": "the server's clock: {seconds, microseconds}",
    "TYPE": "what kind of value the key holds (hash, zset, string, …, or none)",
    "ZADD": "put a member in the sorted set with a score (XX: only if already there)",
    "ZCARD": "how many members the sorted set holds",
    "ZPOPMIN": "take out the member with the lowest score, and answer it with its score",
    "ZRANGE": "members in order: by rank, or BYSCORE between two scores",
    "ZREM": "take the member out of the sorted set",
    "ZSCORE": "the member's score, or false if it is not in the set",
}

#: A ``redis.call('NAME', ...)`` in a script; group 1 is the command.
CALL = re.compile(r"redis\.call\(\s*'([A-Za-z]+)'")
#: What a marked line carries at its end, so a mark never rests on colour alone.
MARK = "◀"


def _calls(line: str) -> list[str]:
    """The commands a code line calls with ``redis.call``, upper-cased (none on a comment)."""
    return [] if line.lstrip().startswith("--") else [n.upper() for n in CALL.findall(line)]


def commands(source: str) -> list[str]:
    """The Redis commands ``source`` calls with ``redis.call``, upper-cased, first use first."""
    return list(dict.fromkeys(name for line in source.splitlines() for name in _calls(line)))


def unglossed(source: str) -> list[str]:
    """The commands ``source`` calls that :data:`GLOSS` does not explain."""
    return [c for c in commands(source) if c not in GLOSS]


def _marked(line: str, mark: Sequence[str]) -> bool:
    """True when the code line contains one of the ``mark`` strings."""
    return not line.lstrip().startswith("--") and any(m in line for m in mark)


#: The widest a glossed line may be; a longer gloss wraps, at a word, onto comment lines below.
WIDTH = 100
#: The furthest right a gloss column starts; a longer code line has its gloss just past it.
MAX_COLUMN = 50


def annotate(source: str, mark: Sequence[str] = (), *, width: int = 0) -> str:
    """``source`` with a gloss comment after each line that calls Redis, every line kept.

    Lines containing a ``mark`` string end in ``◀`` before their gloss; ValueError when a mark
    matches no code line. Glosses start at column ``width`` (0: just past the longest glossed
    line of at most :data:`MAX_COLUMN` characters) and wrap at words within :data:`WIDTH`; a
    longer code line has its gloss on ``--`` lines just above it.
    """
    lines = source.rstrip("\n").splitlines()
    for m in mark:
        if not marked_lines(source, (m,)):
            raise ValueError(f"nothing in the script matches the mark {m!r}")
    notes: list[str] = []
    for line in lines:
        gloss = "; ".join(f"{n}: {GLOSS.get(n, 'not explained here')}" for n in _calls(line))
        flag = MARK if _marked(line, mark) else ""
        notes.append(" ".join(p for p in (flag, gloss) if p))
    column = width or max((len(line) for line, note in zip(lines, notes, strict=True)
                           if note and len(line) <= MAX_COLUMN), default=0)
    out = []
    for line, note in zip(lines, notes, strict=True):
        if not note:
            out.append(line)
        elif len(line) > column:  # too long to carry a gloss: the gloss goes on lines above
            indent = line[: len(line) - len(line.lstrip())]
            gloss = note.removeprefix(MARK).strip()
            out += [f"{indent}-- {part}" for part in _wrap(gloss, WIDTH - len(indent) - 3)]
            out.append(f"{line}  -- {MARK}" if note.startswith(MARK) else line)
        else:
            first, *rest = _wrap(note, WIDTH - column - 5)  # "  -- " is five characters
            out.append(f"{line.ljust(column)}  -- {first}")
            out += [f"{'':{column}}  -- {more}" for more in rest]
    return "\n".join(out) + "\n"


def _wrap(text: str, room: int) -> list[str]:
    """``text`` cut into lines of at most ``room`` characters, at word boundaries only."""
    return textwrap.wrap(text, max(30, room), break_long_words=False, break_on_hyphens=False)


def marked_lines(source: str, mark: Sequence[str]) -> list[str]:
    """The code lines of ``source`` that ``mark`` flags, stripped."""
    return [line.strip() for line in source.splitlines() if _marked(line, mark)]


#: Enough Lua to read the protocol's scripts (markdown; every example is from our scripts).
PRIMER = resources.files(__package__).joinpath("primer.md").read_text(encoding="utf-8")
