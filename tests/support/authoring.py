"""Support for testing the authors' tools: run a make target, copy the tree, read navigation.

``make`` runs with this interpreter's virtualenv (``VENV=``) and is told that the venv is up
to date (``-o <venv>/.installed``), so a test never reinstalls anything, even in a copy of the
repository. ``navigation_problems`` reads the notebooks on its own (not through ``tools/``)
and lists every way their links disagree with the reading order in ``tools/pages.toml`` (a
page's file is ``NN-<slug>.ipynb``, NN its place in that list).
Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

#: The venv running the tests (not resolved: its bin/python is a link to the base Python).
VENV = Path(sys.executable).parent.parent
LINK = re.compile(r"\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+\.ipynb)\)")
ROW = re.compile(r"^\|\s*(?P<number>\d+)\s*\|(?P<rest>.*)\|\s*$", re.MULTILINE)
README_START, README_END = "<!-- reading-order:start", "<!-- reading-order:end -->"


#: Why make-based tests cannot run here ('' when they can).
NO_MAKE = "" if shutil.which("make") else "no make on PATH: the Makefile's commands cannot run"


def make(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``make -C cwd ARGS`` with this venv, never reinstalling it; output captured as text."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    cmd = ["make", "-s", "-C", str(cwd), f"VENV={VENV}", "-o", str(VENV / ".installed"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def copy_tree(root: Path, dest: Path) -> Path:
    """Copy the working tree of ``root`` (tracked and new files, not ignored) into ``dest``.

    A copy of the working tree rather than a ``git clone``: a clone would test the last
    commit, not the files as they stand.
    """
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = root / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def source(cell: dict[str, Any]) -> str:
    """A cell's source as one string."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def load(path: Path) -> dict[str, Any]:
    """The notebook at ``path`` as plain JSON data."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def heading(nb: dict[str, Any]) -> str:
    """The notebook's first ``# `` heading."""
    for cell in nb["cells"]:
        for line in source(cell).splitlines() if cell["cell_type"] == "markdown" else []:
            if line.startswith("# "):
                return line[2:].strip()
    return ""


def nav_cells(nb: dict[str, Any]) -> list[str]:
    """The sources of the cells tagged ``navigation``."""
    return [source(c) for c in nb["cells"] if "navigation" in c["metadata"].get("tags", [])]


def _targets(text: str, label: str) -> list[str]:
    """Link targets on the ``- **Label:**`` line of a navigation cell."""
    lines = [ln for ln in text.splitlines() if ln.startswith(f"- **{label}:**")]
    return [m["target"] for ln in lines for m in LINK.finditer(ln)]


def _table_targets(text: str) -> list[str]:
    """Link targets in the rows of the first markdown table of ``text``, row by row."""
    return [m["target"] for row in ROW.finditer(text) for m in LINK.finditer(row["rest"])]


def navigation_problems(root: Path) -> list[str]:
    """Every disagreement between the notebooks' navigation, README and tools/pages.toml."""
    entries = tomllib.loads((root / "tools" / "pages.toml").read_text())["page"]
    files = [f"{number:02d}-{p['slug']}.ipynb" for number, p in enumerate(entries)]
    folder, hub, found = root / "notebooks", files[0], list[str]()
    on_disk = sorted(p.name for p in folder.glob("[0-9][0-9]-*.ipynb"))
    if sorted(files) != on_disk:
        found.append(f"pages.toml lists {files}, notebooks/ holds {on_disk}")
        return found
    titles = {f: heading(load(folder / f)) for f in files}
    for i, name in enumerate(files):
        cells = nav_cells(load(folder / name))
        if len(cells) != 1:
            found.append(f"{name}: {len(cells)} cells tagged navigation, not 1")
            continue
        text = cells[0]
        expected = {
            "Previous": files[i - 1 : i] if i else [],
            "Next": [files[i + 1]] if i + 1 < len(files) else [hub],
            "Up": [hub] if i else [],
        }
        for label, want in expected.items():
            if _targets(text, label) != want:
                found.append(f"{name}: {label} links {_targets(text, label)}, expected {want}")
        for m in LINK.finditer(text):
            if m["target"] not in titles:
                found.append(f"{name}: links {m['target']}, not a page")
            elif m["text"] != titles[m["target"]]:
                found.append(f"{name}: link text {m['text']!r} is not {m['target']}'s title")
        if i == 0 and _table_targets(text) != files[1:]:
            found.append(f"{name}: the hub's table links {_table_targets(text)}")
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = readme[readme.find(README_START) : readme.find(README_END)]
    if _table_targets(block) != [f"notebooks/{f}" for f in files]:
        found.append(f"README's reading-order table links {_table_targets(block)}")
    return found
