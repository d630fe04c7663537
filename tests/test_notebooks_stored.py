"""The course notebooks are stored executed, with widget state, titles and working links.

nbval compares only cells that were stored executed: a notebook saved with its outputs
stripped would pass strict mode while checking nothing. These tests read the stored files
(no kernel) and fail on any code cell stored unexecuted, any stored error, a missing title,
missing previous/next links, a link to a notebook that does not exist, or a notebook saved
without its widget state.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tools.course import load as course_pages

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PAGES = course_pages()
PATHS = [NOTEBOOKS / p.file for p in PAGES]
#: Each notebook's test id: its page's slug (the number is only its place in the list).
SLUGS = [p.slug for p in PAGES]
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: A markdown link to a notebook: [text](NN-name.ipynb), optionally with a #fragment.
LINK = re.compile(r"\]\((?P<target>[^)\s#]+\.ipynb)(?:#[^)\s]*)?\)")
#: Lab notebooks that later work adds; a link to one that is not there yet is skipped, not failed.
LATER_LABS = re.compile(r"\d\d-lab-[a-z0-9-]+\.ipynb")


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _markdown(nb: dict[str, Any]) -> list[str]:
    return [_source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]


def _nav_links(nb: dict[str, Any], word: str) -> list[str]:
    """Targets of the links on markdown lines that name ``word`` (previous / next)."""
    found = []
    for text in _markdown(nb):
        for line in text.splitlines():
            if re.search(rf"\b{word}\b", line, re.IGNORECASE):
                found += [m.group("target") for m in LINK.finditer(line)]
    return found


def _all_links() -> list[tuple[str, str]]:
    pairs = []
    for path in PATHS:
        targets = {m.group("target") for t in _markdown(_load(path)) for m in LINK.finditer(t)}
        pairs += [(path.name, target) for target in sorted(targets)]
    return pairs


def test_there_are_notebooks() -> None:
    assert PATHS and all(p.is_file() for p in PATHS), [p.name for p in PATHS if not p.is_file()]


@pytest.mark.parametrize("path", PATHS, ids=SLUGS)
def test_every_code_cell_is_stored_executed_without_errors(path: Path) -> None:
    nb = _load(path)
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and _source(c).strip()]
    assert code, f"{path.name} has no code cells"
    unexecuted = [_source(c).splitlines()[0] for c in code if c.get("execution_count") is None]
    assert not unexecuted, f"{path.name}: code cells stored unexecuted: {unexecuted}"
    counts = [c["execution_count"] for c in code]
    assert counts == sorted(counts), f"{path.name}: cells were not run top to bottom: {counts}"
    errors = [
        f"{o.get('ename')}: {o.get('evalue')}"
        for c in code
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors, f"{path.name}: stored error outputs: {errors}"
    stderr_tracebacks = [
        o.get("text", "")
        for c in code
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream" and "Traceback" in "".join(o.get("text", ""))
    ]
    assert not stderr_tracebacks, f"{path.name}: a traceback was printed"


@pytest.mark.parametrize("path", PATHS, ids=SLUGS)
def test_title_comes_first(path: Path) -> None:
    cells = _load(path)["cells"]
    assert cells and cells[0]["cell_type"] == "markdown"
    first = _source(cells[0]).lstrip().splitlines()[0]
    assert re.fullmatch(r"# \S.*", first), f"{path.name} does not open with a title: {first!r}"


@pytest.mark.parametrize("path", PATHS, ids=SLUGS)
def test_previous_and_next_links(path: Path) -> None:
    nb = _load(path)
    nexts = _nav_links(nb, "next")
    assert nexts, f"{path.name} has no link to the next notebook"
    if path != PATHS[0]:
        assert _nav_links(nb, "previous"), f"{path.name} has no link to the previous notebook"


@pytest.mark.parametrize(("notebook", "target"), _all_links())
def test_links_point_to_notebooks_that_exist(notebook: str, target: str) -> None:
    if (NOTEBOOKS / target).is_file():
        return
    if LATER_LABS.fullmatch(target):
        reason = f"{notebook} links to {target}, a lab notebook that is not written yet"
        print(reason)
        pytest.skip(reason)
    pytest.fail(f"{notebook} links to {target}, which does not exist in notebooks/")


@pytest.mark.parametrize("path", PATHS, ids=SLUGS)
def test_widget_state_is_saved(path: Path) -> None:
    nb = _load(path)
    views = [
        o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    assert state, f"{path.name} was saved without widget state (store_widget_state=True)"
    missing = [v for v in views if v not in state]
    assert not missing, f"{path.name}: displayed widgets missing from the saved state: {missing}"
