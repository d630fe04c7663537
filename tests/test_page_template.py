"""``make page`` in a copy of the repository gives a page that passes everything a page must.

In a temporary copy of the working tree (this venv reused, nothing installed), ``make page``
writes a new lab with the course's spine, adds it to the reading order and relinks every page.
The new notebook is stored executed and then checked the way ``make test`` checks every page:
strict nbval against a fresh run, the stored-notebook rules, ruff on its cells, and navigation
that agrees with the list across all pages (README's table included). Bad names and numbers
are refused before anything is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.authoring import (
    NO_MAKE,
    copy_tree,
    heading,
    load,
    make,
    nav_cells,
    navigation_problems,
    source,
)

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(bool(NO_MAKE), reason=NO_MAKE)
SPINE = [
    "## What you will learn",
    "## Setup",
    "## The fact",
    "## Try it",
    "## The worked example, in two beats",
    "## The pattern",
    "## Check yourself",
    "## Recap",
    "## Questions to try",
    "## References",
]
TITLE = 'Lab: the "last" page'
SUMMARY = "a page made by the template | checked like every other"


def _pages(root: Path) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = tomllib.loads((root / "tools/pages.toml").read_text())["page"]
    return pages


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the copy, the new notebook) after one ``make page`` in a fresh copy of the tree."""
    clone = copy_tree(ROOT, tmp_path_factory.mktemp("clone"))
    before = _pages(clone)
    result = make(clone, "page", "NAME=lab-the-last-page", f"TITLE={TITLE}", f"SUMMARY={SUMMARY}")
    assert result.returncode == 0, result.stdout + result.stderr
    number = int(before[-1]["file"][:2]) + 1
    new = clone / "notebooks" / f"{number:02d}-lab-the-last-page.ipynb"
    assert new.is_file(), result.stdout
    yield clone, new


def test_the_page_has_the_course_spine(made: tuple[Path, Path]) -> None:
    _, new = made
    nb = load(new)
    assert heading(nb) == TITLE
    headings = [ln for c in nb["cells"] if c["cell_type"] == "markdown"
                for ln in source(c).splitlines() if ln.startswith("## ")]
    assert [h for h in headings if h in SPINE] == SPINE
    code = [source(c) for c in nb["cells"] if c["cell_type"] == "code"]
    setup = code[0]
    assert "conn = connect()" in setup and "reset(conn, QUEUE)" in setup
    assert "from echomq_lab.queues import reset" in setup
    assert any(c.startswith("two_beats(") for c in code), "a two-beat cell"
    assert any(c.startswith(f"for check in SelfCheck.page(conn, {int(new.name[:2])}):")
               for c in code), "the page's self-checks, from questions.toml"
    assert "<details>" in "".join(source(c) for c in nb["cells"]), "an answer to unfold"


def test_the_page_is_stored_executed_and_passes_strict_nbval(made: tuple[Path, Path]) -> None:
    clone, new = made
    code = [c for c in load(new)["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] is not None for c in code), "stored executed"
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    nbval = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  str(new.relative_to(clone)), "--nbval",
                  "--nbval-sanitize-with", "notebooks/sanitize.cfg"], cwd=clone)
    assert nbval.returncode == 0, nbval.stdout[-3000:]
    assert " passed" in nbval.stdout and "skipped" not in nbval.stdout.split("===")[-1]


def test_the_page_passes_the_stored_notebook_rules_and_lint(made: tuple[Path, Path]) -> None:
    clone, new = made
    stored = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "tests/test_notebooks_stored.py", "-k", new.stem], cwd=clone)
    assert stored.returncode == 0, stored.stdout[-3000:]
    passed = re.search(r"(\d+) passed", stored.stdout)
    assert passed and int(passed[1]) >= 4, "executed, title, links and widget state checked"
    lint = make(clone, "lint", f"LINT_PATHS={new}")
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_navigation_across_all_pages_agrees_afterwards(made: tuple[Path, Path]) -> None:
    clone, new = made
    pages = _pages(clone)
    assert pages[-1] == {"file": new.name, "kind": "lab", "title": TITLE, "summary": SUMMARY}
    assert [p["file"] for p in pages[:-1]] == [p["file"] for p in _pages(ROOT)]
    assert navigation_problems(clone) == []
    check = _run([sys.executable, "tools/nav.py", "--check"], cwd=clone)
    assert check.returncode == 0, check.stderr
    before_last = clone / "notebooks" / pages[-2]["file"]
    assert f"- **Next:** [{TITLE}]({new.name})" in nav_cells(load(before_last))[0]
    hub = nav_cells(load(clone / "notebooks" / pages[0]["file"]))[0]
    assert f"({new.name}) | a page made by the template \\| checked" in hub
    assert f"(notebooks/{new.name})" in (clone / "README.md").read_text()


#: A question for the new page, written the way an author adds one to questions.toml.
QUESTION = """
[[checks]]
key = "last_page_token"
page = "{file}"
observer = "story"
params = {{ steps = ["claim briefly", "expire", "reap", "claim", "complete future"], ask="reply" }}
question = "Attempts is 2 and the lease is held. Token 3 completes: what happens?"
answers = [
    {{ when = "accepted", text = "accepted" }},
    {{ when = "EMQSTALE", text = "refused as stale" }},
]
hint = "Is the fence a comparison of size?"
lesson = "Only the row's own attempts passes the fence."
"""
#: Runs a notebook in a fresh kernel; prints where the package came from and the self-checks.
RUN_PAGE = """
import sys, nbformat, nbclient, echomq_lab
nb = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
print(echomq_lab.__file__)
for cell in nb.cells:
    for out in cell.get("outputs", []):
        text = out.get("data", {}).get("text/plain", "")
        if text.startswith("Question: "):
            print(text)
"""


def test_a_question_in_the_file_shows_on_the_new_page(made: tuple[Path, Path]) -> None:
    clone, new = made
    questions = clone / "echomq_lab" / "lessons" / "questions.toml"
    questions.write_text(questions.read_text() + QUESTION.format(file=new.name))
    env = {**os.environ, "PYTHONPATH": str(clone)}
    done = subprocess.run([sys.executable, "-c", RUN_PAGE, str(new)], cwd=clone / "notebooks",
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    where, *shown = done.stdout.splitlines()
    assert Path(where).is_relative_to(clone), "the copy's package, with its questions.toml"
    assert shown[:3] == ["Question: Attempts is 2 and the lease is held. Token 3 completes: "
                         "what happens?", "  (a) accepted", "  (b) refused as stale"]


@pytest.mark.parametrize(
    ("name", "title", "why"),
    [
        ("The TTL", "The TTL", "lowercase words"),
        ("the_ttl", "The TTL", "lowercase words"),
        ("00-the-ttl", "The TTL", "must come after the last page"),
        ("the-ttl", "", "TITLE must be one non-empty line"),
    ],
)
def test_a_bad_name_title_or_number_is_refused_and_writes_nothing(
    tmp_path: Path, name: str, title: str, why: str
) -> None:
    clone = copy_tree(ROOT, tmp_path)
    pages_before = (clone / "tools/pages.toml").read_text()
    listing = sorted(p.name for p in (clone / "notebooks").iterdir())
    result = _run([sys.executable, "tools/page.py", "--name", name, "--title", title], cwd=clone)
    assert result.returncode == 1
    assert why in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, "one line"
    assert (clone / "tools/pages.toml").read_text() == pages_before
    assert sorted(p.name for p in (clone / "notebooks").iterdir()) == listing


def test_make_page_without_a_name_says_how(tmp_path: Path) -> None:
    result = make(copy_tree(ROOT, tmp_path), "page")
    assert result.returncode != 0
    assert 'usage: make page NAME=the-ttl TITLE="The TTL"' in result.stderr
