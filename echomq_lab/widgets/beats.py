"""The worked example in two beats: a Python handle's source, then its Lua script's body,
both read from the library itself (never retyped) and glossed for display only.
"""

from __future__ import annotations

import html
import inspect
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

from IPython.display import Markdown

from echomq_lab import scripts
from echomq_lab.lessons import lua_notes
from echomq_lab.scripts import include_text, leading_comments, load


def script_source(name: str) -> str:
    """The Lua body of the protocol script ``name``, header comment included."""
    return load(name).source


def file_text(name: str) -> str:
    """The script file ``<name>.lua`` as stored: its ``--@include`` lines not expanded."""
    if name not in scripts.names():
        raise ValueError(f"no script named {name!r}")
    return resources.files(scripts.__name__).joinpath(f"{name}.lua").read_text(encoding="utf-8")


def lesson_body(name: str) -> str:
    """The file ``<name>.lua`` without its header comment, each ``--@include`` line kept."""
    text = file_text(name)
    return text[len(leading_comments(text)):].lstrip("\n")


def includes(name: str) -> list[str]:
    """The includes the file ``<name>.lua`` puts in, with those they name in turn, in the order
    :func:`scripts.expand` puts them in (each once)."""
    found: list[str] = []

    def read(inc: str) -> str:
        found.append(inc)
        return include_text(inc)

    scripts.expand(file_text(name), f"{name}.lua", read)
    return found


def folded(name: str) -> str:
    """Markdown: a collapsed block holding the script's header (what it takes and replies)
    and the text of each include it names."""
    parts = [f"<details><summary>The rest of <code>{name}.lua</code>: its header"
             + (" and the hardening it includes" if includes(name) else "")
             + "</summary>\n", f"```lua\n{load(name).header}\n```\n"]
    for inc in includes(name):
        parts.append(f"`scripts/include/{inc}.lua`, put in at `--@include {inc}`:\n")
        parts.append(f"```lua\n{lua_notes.annotate(include_text(inc))}```\n")
    parts.append("</details>\n")
    return "\n".join(parts)


def annotated_script(name: str, mark: Sequence[str] = ()) -> str:
    """Script ``name`` with a gloss beside each ``redis.call`` and the ``mark`` lines flagged."""
    return lua_notes.annotate(script_source(name), mark)


def two_beats(
    handle: Callable[..., Any], script: str, mark: Sequence[str] = (), *, fold: bool = False
) -> Markdown:
    """Markdown that shows beat one (the handle) and beat two (the script body, glossed).

    ``mark`` names what the page is about (a command such as ``"HINCRBY"`` or any text of a
    line); those lines end in ◀, and a sentence under the script lists them. ValueError when
    a mark matches no line of the script. ``fold=True`` shows the file as stored without its
    header and puts the header and the includes in a collapsed block under it.
    """
    source = lesson_body(script) if fold else script_source(script)
    body = lua_notes.annotate(source, mark)
    lines = lua_notes.marked_lines(source, mark)
    note = ""
    if lines:
        shown = "; ".join(f"`{line}`" for line in lines)
        note = f"\nThe lines marked {lua_notes.MARK} are the ones this page is about: {shown}\n"
    return Markdown(
        f"**Beat one: the handle** `{handle.__module__}.{handle.__name__}`\n\n"
        f"```python\n{inspect.getsource(handle)}```\n\n"
        f"**Beat two: the script** `echomq_lab/scripts/{script}.lua` "
        f"(the `-- NAME: ...` notes beside each `redis.call` are ours, not in the file)\n\n"
        f"```lua\n{body}```\n{note}"
        + (f"\n{folded(script)}" if fold else "")
    )


def primer() -> Markdown:
    """The short Lua primer: what a reader needs to read the scripts."""
    return Markdown(lua_notes.PRIMER)


def in_fold(shown: Markdown, summary: str) -> Markdown:
    """``shown`` inside a collapsed block whose closed label is ``summary`` (plain words)."""
    return Markdown(f"<details><summary>{html.escape(summary)}</summary>\n\n{shown.data}\n"
                    "</details>\n")


def folded_text(text: str, summary: str) -> Markdown:
    """Plain ``text`` (a log, say) as a block inside a collapsed block labelled ``summary``."""
    return in_fold(Markdown(f"```text\n{text.rstrip()}\n```"), summary)
