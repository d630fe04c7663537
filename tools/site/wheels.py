"""Fetch the pure-Python wheels the browser needs, at the versions this venv runs.

    python tools/site/wheels.py DEST [--kernel LOCK]

Always: fakeredis, redis and sortedcontainers (the embedded server), at the versions installed
here, so the browser runs what the tests run. With ``--kernel LOCK`` (a pyodide-lock.json) also
every wheel of that lock the Pyodide kernel loads at start-up, at the lock's versions, and, at
this venv's versions, the widgets' Python side (ipywidgets, comm, jupyterlab_widgets) and
IPython (with the lexers it needs). Only ``pip download`` from the
package index is used; wheels already in DEST are kept.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

#: The browser's Python (Pyodide 314): what the wheels must install on.
PYTHON = "3.14"
#: The embedded server, at this venv's versions.
SERVER = ("fakeredis", "redis", "sortedcontainers")
#: The widgets' Python side, at this venv's versions.
WIDGETS = ("ipywidgets", "comm", "jupyterlab_widgets")
#: IPython, at this venv's version rather than the lock's 9.12: from 9.18 importing its shell
#: imports neither jedi (completion imports it when first asked) nor prompt_toolkit, which
#: takes seconds off the kernel's start in the tab.
SHELL = ("ipython", "ipython-pygments-lexers")
#: What the Pyodide kernel imports at start-up (micropip, then ipykernel's needs), by lock name.
KERNEL = (
    "micropip", "jedi", "parso", "asttokens", "decorator", "executing",
    "matplotlib-inline", "prompt-toolkit", "pure-eval", "pygments", "six", "stack-data",
    "traitlets", "wcwidth", "packaging",
)


def pins(lock: Path | None) -> list[str]:
    """``name==version`` for every wheel to fetch."""
    wanted = [f"{n}=={importlib.metadata.version(n)}" for n in SERVER]
    if lock is not None:
        wanted += [f"{n}=={importlib.metadata.version(n)}" for n in (*WIDGETS, *SHELL)]
        packages = json.loads(lock.read_text())["packages"]
        wanted += [f"{n}=={packages[n]['version']}" for n in KERNEL]
    return wanted


def _dist(name: str) -> str:
    """A distribution's name as wheel files spell it (``-``, ``_`` and ``.`` alike, lower case)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def fetch(dest: Path, lock: Path | None = None) -> list[Path]:
    """Download the wheels into ``dest`` (no dependencies: the list is complete). A wheel left
    in ``dest`` of a listed package at another version is removed first (it would be served)."""
    dest.mkdir(parents=True, exist_ok=True)
    listed = pins(lock)
    wanted = {_dist(pin.split("==")[0]): pin.split("==")[1] for pin in listed}
    for wheel in dest.glob("*.whl"):
        name, version = wheel.name.split("-")[:2]
        if _dist(name) in wanted and version != wanted[_dist(name)]:
            wheel.unlink()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--python-version", PYTHON,
         "--dest", str(dest), *listed],
        check=True,
    )
    return sorted(dest.glob("*.whl"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--kernel", type=Path, default=None, help="a pyodide-lock.json")
    args = parser.parse_args()
    for wheel in fetch(args.dest, args.kernel):
        print(wheel.name)


if __name__ == "__main__":
    main()
