"""The worked example in two beats: a Python handle's source, then its Lua script's body.

API (for pages)::

    two_beats(jobs.claim, "claim")                         # both beats, each redis.call glossed
    two_beats(jobs.claim, "claim", mark=("HINCRBY",))      # and the page's lines marked ◀
    primer()                                               # the short Lua primer (page 00)

Both beats are read from the library itself (``inspect.getsource`` and the ``.lua`` file),
never retyped, so the notebook shows exactly what runs; the glosses (``-- HGET: ...``) are
added for display only (:mod:`echomq_lab.lua_notes`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from IPython.display import Markdown

from echomq_lab import lua_notes
from echomq_lab.scripts import load


def handle_source(handle: Callable[..., Any]) -> str:
    """The Python source of a library handle, e.g. ``jobs.claim``."""
    return inspect.getsource(handle)


def script_source(name: str) -> str:
    """The Lua body of the protocol script ``name``, header comment included."""
    return load(name).source


def annotated_script(name: str, mark: Sequence[str] = ()) -> str:
    """Script ``name`` with a gloss beside each ``redis.call`` and the ``mark`` lines flagged."""
    return lua_notes.annotate(script_source(name), mark)


def two_beats(handle: Callable[..., Any], script: str, mark: Sequence[str] = ()) -> Markdown:
    """Markdown that shows beat one (the handle) and beat two (the script body, glossed).

    ``mark`` names what the page is about (a command such as ``"HINCRBY"`` or any text of a
    line); those lines end in ◀, and a sentence under the script lists them. ValueError when
    a mark matches no line of the script.
    """
    body = annotated_script(script, mark)
    lines = lua_notes.marked_lines(script_source(script), mark)
    note = ""
    if lines:
        shown = "; ".join(f"`{line}`" for line in lines)
        note = f"\nThe lines marked {lua_notes.MARK} are the ones this page is about: {shown}\n"
    return Markdown(
        f"**Beat one: the handle** `{handle.__module__}.{handle.__name__}`\n\n"
        f"```python\n{handle_source(handle)}```\n\n"
        f"**Beat two: the script** `echomq_lab/scripts/{script}.lua` "
        f"(the `-- NAME: ...` notes beside each `redis.call` are ours, not in the file)\n\n"
        f"```lua\n{body}```\n{note}"
    )


def primer() -> Markdown:
    """The short Lua primer: what a reader needs to read the scripts."""
    return Markdown(lua_notes.PRIMER)
