"""How pages are stored and checked: storing an unchanged page changes nothing, and a page that
shows something else than it stores is found, named, with the command that stores it again.

``tools/store.py`` (``make notebooks``) names every widget model by its place and keeps the
stored text of whatever a fresh run repeats under ``notebooks/sanitize.cfg``; its ``--check``
(``make check``) runs a page and compares. ``tools/course.py changed`` picks the pages to run:
every page when a file they read (the package) differs. Placeholders ``make page`` writes fail
``tools/page.py --placeholders``. nbval's own failures read stored -> fresh
(``tests/support/stored_pages.py``). The page runs happen in a copy of the repository.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.authoring import copy_tree
from tests.support.stored_pages import store_command, stored_to_fresh
from tools import store
from tools.course import changed

ROOT = Path(__file__).resolve().parents[1]
PAGE = "notebooks/02-the-state-and-attempts.ipynb"
VIEW = "application/vnd.jupyter.widget-view+json"


def _run(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A tool of the copy, with the copy's package imported (kernels inherit PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(clone), "ECHOMQ_BACKENDS": "fakeredis"}
    env.pop("ECHOMQ_REDIS_URL", None)
    return subprocess.run([sys.executable, *args], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=900)


def test_the_rules_are_the_ones_nbval_reads() -> None:
    from nbval.plugin import get_sanitize_patterns

    text = (ROOT / store.SANITIZE).read_text(encoding="utf-8")
    assert [(r.pattern, s) for r, s in store.rules(ROOT)] == get_sanitize_patterns(text)


def _notebook(ids: tuple[str, str], printed: str, label: str) -> dict[str, Any]:
    """A stored page: one cell printing ``printed``, one showing a box whose button reads
    ``label`` (its models named ``ids``, as a run names them)."""
    box, button = ids
    return {
        "cells": [
            {"cell_type": "code", "id": "p01", "execution_count": 1, "metadata": {},
             "source": "print(job)",
             "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]},
            {"cell_type": "code", "id": "p02", "execution_count": 2, "metadata": {},
             "source": "box", "outputs": [{"output_type": "execute_result", "execution_count": 2,
                                           "metadata": {}, "data": {
                                               VIEW: {"model_id": box, "version_major": 2,
                                                      "version_minor": 0},
                                               "text/plain": f"a box: {printed}"}}]},
        ],
        "metadata": {"widgets": {store.STATE: {"state": {
            box: {"model_name": "VBoxModel", "state": {"children": [f"IPY_MODEL_{button}"]}},
            button: {"model_name": "ButtonModel", "state": {"description": label}},
        }, "version_major": 2, "version_minor": 0}}},
        "nbformat": 4, "nbformat_minor": 5,
    }


def _named(nb: dict[str, Any]) -> dict[str, Any]:
    return store.renamed(nb, store.model_names(nb, "a-page"))  # type: ignore[no-any-return]


def test_models_are_named_by_their_place_not_by_the_run() -> None:
    one = _named(_notebook(("a" * 32, "b" * 32), "JOB0ScPRAZ7n9M\n", "claim"))
    two = _named(_notebook(("c" * 32, "d" * 32), "JOB0ScPRAZ7n9M\n", "claim"))
    assert one == two
    state = one["metadata"]["widgets"][store.STATE]["state"]
    box = one["cells"][1]["outputs"][0]["data"][VIEW]["model_id"]
    (child,) = state[box]["state"]["children"]
    assert child.removeprefix("IPY_MODEL_") in state and len(state) == 2


def test_a_run_that_repeats_the_stored_page_keeps_its_text_and_shows_what_changed() -> None:
    found = store.rules(ROOT)
    old = _named(_notebook(("a" * 32, "b" * 32), "JOB0ScPRAZ7n9M\n", "claim"))
    fresh = _named(_notebook(("c" * 32, "d" * 32), "JOB0Se4VXsQnfU\n", "claim"))
    assert store.settled(copy.deepcopy(fresh), old, found) == old, "an unchanged page: as stored"
    relabelled = _named(_notebook(("e" * 32, "f" * 32), "JOB0Se4VXsQnfU\n", "lease"))
    relabelled["cells"][1]["outputs"][0]["data"]["text/plain"] = "a new box: JOB0Se4VXsQnfU\n"
    got = store.settled(relabelled, old, found)
    assert got["cells"][0] == old["cells"][0], "the print the run repeats is kept"
    shown = got["cells"][1]["outputs"][0]["data"]["text/plain"]
    assert shown == "a new box: JOB0ScPRAZ7n9M\n", "the stored job's id put back in the new text"
    labels = [m["state"].get("description") for m in
              got["metadata"]["widgets"][store.STATE]["state"].values()]
    assert "lease" in labels, "a renamed label is stored: the page's diff shows it"


def test_prints_split_by_timing_are_stored_as_one() -> None:
    parts = [{"output_type": "stream", "name": "stdout", "text": "a\n"},
             {"output_type": "stream", "name": "stdout", "text": "b\n"},
             {"output_type": "stream", "name": "stderr", "text": "c\n"}]
    assert store.coalesced(parts) == [{"output_type": "stream", "name": "stdout", "text": "a\nb\n"},
                                      parts[2]]


def test_storing_an_unchanged_page_writes_the_same_bytes(tmp_path: Path) -> None:
    clone = copy_tree(ROOT, tmp_path)
    page = clone / "notebooks" / "03-the-payload.ipynb"
    before = page.read_bytes()
    done = _run(clone, "tools/store.py", str(page.relative_to(clone)))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "stored, unchanged" in done.stdout
    assert page.read_bytes() == before


def test_a_changed_docstring_of_a_printed_handle_fails_the_check(tmp_path: Path) -> None:
    clone = copy_tree(ROOT, tmp_path)
    jobs = clone / "echomq_lab" / "jobs.py"
    text = jobs.read_text(encoding="utf-8")
    said = '"""Lease the oldest pending job for ``lease_ms``'
    assert said in text, "page 02 prints claim's docstring, which begins so"
    jobs.write_text(text.replace(said, '"""Lease the oldest waiting job for ``lease_ms``'),
                    encoding="utf-8")
    done = _run(clone, "tools/store.py", "--check", PAGE)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    out = done.stderr
    assert f"{PAGE}: the page shows something else than it stores" in out, out[-3000:]
    assert re.search(r"^-.*Lease the oldest pending job", out, re.M), "'-': what it stores"
    assert re.search(r"^\+.*Lease the oldest waiting job", out, re.M), "'+': a fresh run"
    assert out.rstrip().endswith("make notebooks PAGE=the-state-and-attempts"), out[-500:]
    assert (clone / PAGE).read_bytes() == (ROOT / PAGE).read_bytes(), "a check stores nothing"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid",
                    *args], check=True, capture_output=True)


def test_the_check_runs_every_page_when_a_file_the_pages_read_changed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for name in ("echomq_lab/jobs.py", "docs/authoring.md", "notebooks/00-a.ipynb",
                 "notebooks/01-b.ipynb"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("{}\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    assert changed("main", repo) == []
    (repo / "docs/authoring.md").write_text("more\n")
    assert changed("main", repo) == [], "no page reads the docs"
    (repo / "notebooks/01-b.ipynb").write_text('{"cells": []}\n')
    assert changed("main", repo) == ["notebooks/01-b.ipynb"]
    (repo / "echomq_lab/jobs.py").write_text("# claim's docstring changed\n")
    why: list[str] = []
    assert changed("main", repo, why) == ["notebooks/00-a.ipynb", "notebooks/01-b.ipynb"]
    assert why == ["echomq_lab/jobs.py differs from main, and pages read them: every page"]


def test_a_placeholder_left_on_a_page_is_named_with_its_line(tmp_path: Path) -> None:
    assert _run(ROOT, "tools/page.py", "--placeholders").returncode == 0, "none is left"
    clone = copy_tree(ROOT, tmp_path)
    page = clone / "notebooks" / "03-the-payload.ipynb"
    nb = json.loads(page.read_text(encoding="utf-8"))
    index = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown")
    nb["cells"][index]["source"] = ["# The payload\n", "\n",
                                    "*(Two or three sentences: where this page sits.)*\n"]
    page.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    done = _run(clone, "tools/page.py", "--placeholders")
    assert done.returncode == 1
    line = next(n for n, text in enumerate(page.read_text().splitlines(), 1)
                if "*(Two or three" in text)
    assert done.stderr.startswith(
        f"notebooks/03-the-payload.ipynb:{line}: cell {index}, line 3: placeholder left: "
        "*(Two or three sentences"), done.stderr


def test_nbvals_mismatch_reads_stored_to_fresh_with_the_command() -> None:
    lines = stored_to_fresh("text/plain", "kept\nold line\n", "kept\nnew line\n", "02-x.ipynb")
    assert lines[0] == (" mismatch 'text/plain': '-' what 02-x.ipynb stores, '+' what a fresh "
                        "run shows")
    assert "  -old line" in lines and "  +new line" in lines
    assert store_command("notebooks/02-the-state-and-attempts.ipynb") == \
        "make notebooks PAGE=the-state-and-attempts"
