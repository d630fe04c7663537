"""Write (or, with --check, compare) every notebook's navigation cells and README's table.

    python tools/nav.py            rewrite what differs from tools/pages.toml
    python tools/nav.py --check    change nothing; exit 1 naming every file that differs

Only the navigation cell of each notebook (tagged ``navigation``, last), its note on how the
page comes alive in JupyterLab (tagged ``how-to-run``, second), its kernel's name, and
README's text between the reading-order markers are written; every other byte of those files
stays as it is.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from course import ROOT, CourseError, written


def _diff(old: str, new: str, name: str, limit: int = 12) -> str:
    """The first ``limit`` lines of a unified diff from ``old`` to ``new``."""
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"{name} (stored)",
                                      f"{name} (make nav)", n=0, lineterm=""))
    return "\n".join(lines[:limit] + (["  …"] if len(lines) > limit else []))


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (0 clean, 1 differs or bad list)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; write nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: ours)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        wanted = written(root)
    except CourseError as exc:
        print(f"nav: {exc}", file=sys.stderr)
        return 1
    stale = [p for p, text in wanted.items() if p.read_text(encoding="utf-8") != text]
    for path in stale:
        name = path.relative_to(root).as_posix()
        if args.check:
            print(f"nav: {name} differs from what `make nav` writes", file=sys.stderr)
            print(_diff(path.read_text(encoding="utf-8"), wanted[path], name), file=sys.stderr)
        else:
            path.write_text(wanted[path], encoding="utf-8")
            print(f"nav: wrote {name}")
    if args.check and stale:
        print("nav: run `make nav` to rewrite them from tools/pages.toml", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
