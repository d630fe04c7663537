"""The worked example in two beats: a Python handle's source, then its Lua script's body.

Both are read from the library itself (``inspect.getsource`` and the ``.lua`` file), never
retyped, so the notebook shows exactly what runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from IPython.display import Markdown

from echomq_lab.scripts import load


def handle_source(handle: Callable[..., Any]) -> str:
    """The Python source of a library handle, e.g. ``jobs.claim``."""
    return inspect.getsource(handle)


def script_source(name: str) -> str:
    """The Lua body of the protocol script ``name``, header comment included."""
    return load(name).source


def two_beats(handle: Callable[..., Any], script: str) -> Markdown:
    """Markdown that shows beat one (the handle) and beat two (the script body)."""
    return Markdown(
        f"**Beat one: the handle** `{handle.__module__}.{handle.__name__}`\n\n"
        f"```python\n{handle_source(handle)}```\n\n"
        f"**Beat two: the script** `echomq_lab/scripts/{script}.lua`\n\n"
        f"```lua\n{script_source(script)}```\n"
    )
