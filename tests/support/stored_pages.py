"""nbval's failures, read the author's way round: what a page stores against what it shows now.

nbval hands pytest's ``==`` report the stored output on the left and the fresh run's on the
right, and pytest's diff marks the right side ``-``: a line the page now prints reads as a line
taken away. Here a mismatch is a unified diff from the stored output (``-``) to the fresh run
(``+``), each side named, and every failing cell of a page ends with the command that stores the
page again. Loaded for every pytest run from the repository's ``conftest.py`` (the notebooks lie
outside ``tests/``); without nbval it does nothing.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pytest


def store_command(path: str | Path) -> str:
    """The command that stores the page at ``path`` again (``make notebooks PAGE=<slug>``)."""
    return f"make notebooks PAGE={re.sub(r'^[0-9][0-9]-', '', Path(path).stem)}"


def stored_to_fresh(key: str, stored: Any, fresh: Any, page: str) -> list[str]:
    """The lines that report one mismatched output: stored (``-``) to the fresh run (``+``)."""
    old = stored if isinstance(stored, str) else repr(stored)
    new = fresh if isinstance(fresh, str) else repr(fresh)
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), f"stored in {page}",
                                "a fresh run", n=2, lineterm="")
    return [f" mismatch {key!r}: '-' what {page} stores, '+' what a fresh run shows",
            *(f"  {line}" for line in diff)]


def _format_output_compare(self: Any, key: str, left: Any, right: Any) -> None:
    """nbval's hook for one mismatch: ``left`` is the stored output, ``right`` the fresh run's."""
    self.comparison_traceback.extend(stored_to_fresh(key, left, right, Path(self.path).name))


def pytest_configure(config: pytest.Config) -> None:
    """Route nbval's mismatches through :func:`stored_to_fresh` and end its cell failures with
    the command that stores the page again."""
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:
        return
    if getattr(IPyNbCell, "_echomq_stored_pages", False):
        return
    failure = IPyNbCell.repr_failure

    def repr_failure(self: Any, excinfo: Any, *args: Any, **kwargs: Any) -> Any:
        said = failure(self, excinfo, *args, **kwargs)
        if isinstance(said, str) and "Cell outputs differ" in said:
            said += (f"\nIf the fresh run is what the page should show, store the page again: "
                     f"{store_command(self.path)}")
        return said

    IPyNbCell.format_output_compare = _format_output_compare
    IPyNbCell.repr_failure = repr_failure
    IPyNbCell._echomq_stored_pages = True
