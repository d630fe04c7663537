"""``make page`` in a copy of the repository gives a page that passes everything a page must.

In a temporary copy of the working tree (this venv reused, nothing installed), ``make page
NAME=zz-template-fixture ... AFTER=the-payload`` (a name no author would pick, so a copy of a
repository with any real page still makes it) puts a new page with the course's spine in the
middle of the reading order: the notebooks after it move one number down (renamed, their links
and README's updated), every navigation cell is relinked, the page gets two starter self-checks in
``questions.toml``, and it is stored executed. There it is checked the way ``make test`` checks
every page: strict nbval against a fresh run, the stored-notebook rules, ruff on its cells, the
navigation and self-check tests, and ``make nav`` finding nothing left to write. Without AFTER
a page goes last, renaming nothing. Bad names, places and titles are refused before anything
is written.
"""

from __future__ import annotations

import json
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
NAME, AFTER = "zz-template-fixture", "the-payload"
TITLE = 'The template fixture, a "held" page'
SUMMARY = "a page made by the template | checked like every other"


def _pages(root: Path) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = tomllib.loads((root / "tools/pages.toml").read_text())["page"]
    return pages


def _files(root: Path) -> list[str]:
    """The course's notebooks on disk, in file order."""
    return sorted(p.name for p in (root / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)


def _pytest(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``clone`` on its own package and notebooks (no cache written)."""
    env = {**os.environ, "PYTHONPATH": str(clone)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=clone, capture_output=True, text=True, timeout=900, env=env)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the copy, the new notebook) after one ``make page ... AFTER=`` in a fresh copy."""
    clone = copy_tree(ROOT, tmp_path_factory.mktemp("clone"))
    # The page is stored by a kernel that must import the copy's package (its questions.toml
    # gains the starter questions), not this venv's editable install of the original.
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(clone)
    try:
        result = make(clone, "page", f"NAME={NAME}", f"TITLE={TITLE}", f"SUMMARY={SUMMARY}",
                      f"AFTER={AFTER}")
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    assert result.returncode == 0, result.stdout + result.stderr
    slugs = [p["slug"] for p in _pages(ROOT)]
    new = clone / "notebooks" / f"{slugs.index(AFTER) + 1:02d}-{NAME}.ipynb"
    assert new.is_file(), result.stdout
    yield clone, new


def test_the_page_goes_after_its_page_and_the_later_ones_move_down(
        made: tuple[Path, Path]) -> None:
    clone, new = made
    before = [p["slug"] for p in _pages(ROOT)]
    place = before.index(AFTER) + 1
    after = [p["slug"] for p in _pages(clone)]
    assert after == [*before[:place], NAME, *before[place:]]
    assert _pages(clone)[place] == {"slug": NAME, "kind": "page", "title": TITLE,
                                    "summary": SUMMARY}
    assert _files(clone) == [f"{i:02d}-{slug}.ipynb" for i, slug in enumerate(after)]
    assert _files(clone)[:place] == _files(ROOT)[:place], "the pages before it keep their files"
    moved = clone / "notebooks" / f"{place + 1:02d}-{before[place]}.ipynb"
    assert load(moved)["cells"][:-1] == load(ROOT / "notebooks" / _files(ROOT)[place])["cells"][:-1]


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
    shown = [c for c in code if c.startswith("SelfCheck(conn, ")]
    key = NAME.replace("-", "_")
    assert shown == [f'SelfCheck(conn, "{key}_claimed_state")',
                     f'SelfCheck(conn, "{key}_claimed_attempts")'], "its starter questions"
    assert "<details>" in "".join(source(c) for c in nb["cells"]), "an answer to unfold"


def test_the_page_is_stored_executed_and_passes_strict_nbval(made: tuple[Path, Path]) -> None:
    clone, new = made
    code = [c for c in load(new)["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] is not None for c in code), "stored executed"
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    # With a test of tests/ beside it, tests/conftest.py puts the reader's probe after the
    # page's last cell: its starter self-checks are answered in nbval's kernel.
    nbval = _pytest(clone, "tests/test_pages_learner.py::test_every_page_with_checks_or_panels_"
                    "is_probed", str(new.relative_to(clone)), "--nbval",
                    "--nbval-sanitize-with", "notebooks/sanitize.cfg", "-vv")
    assert nbval.returncode == 0, nbval.stdout[-3000:]
    assert " passed" in nbval.stdout and "skipped" not in nbval.stdout.split("===")[-1]
    assert "the reader's probe PASSED" in nbval.stdout, nbval.stdout[-3000:]


def test_the_page_passes_the_stored_notebook_rules_and_lint(made: tuple[Path, Path]) -> None:
    clone, new = made
    stored = _pytest(clone, "tests/test_notebooks_stored.py", "-k", NAME)
    assert stored.returncode == 0, stored.stdout[-3000:]
    passed = re.search(r"(\d+) passed", stored.stdout)
    assert passed and int(passed[1]) >= 4, "executed, title, links and widget state checked"
    lint = make(clone, "lint", f"LINT_PATHS={new}")
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_navigation_across_all_pages_agrees_and_make_nav_writes_nothing(
        made: tuple[Path, Path]) -> None:
    clone, new = made
    assert navigation_problems(clone) == []
    check = _run([sys.executable, "tools/nav.py", "--check"], cwd=clone)
    assert check.returncode == 0, check.stderr
    nav = make(clone, "nav")
    assert nav.returncode == 0 and "wrote" not in nav.stdout, nav.stdout + nav.stderr
    before = clone / "notebooks" / _files(ROOT)[_files(clone).index(new.name) - 1]
    assert f"- **Next:** [{TITLE}]({new.name})" in nav_cells(load(before))[0]
    hub = nav_cells(load(clone / "notebooks" / _files(clone)[0]))[0]
    assert f"({new.name}) | a page made by the template \\| checked" in hub
    assert f"(notebooks/{new.name})" in (clone / "README.md").read_text()


def test_the_nav_self_check_and_learner_tests_pass_in_the_copy(made: tuple[Path, Path]) -> None:
    clone, _ = made
    done = _pytest(clone, "-x", "tests/test_nav.py", "tests/test_selfcheck.py",
                   "tests/test_pages_learner.py", "-k",
                   f"not test_pages_learner or {NAME} or {NAME.replace('-', '_')}")
    assert done.returncode == 0, done.stdout[-3000:]
    assert NAME in _pytest(clone, "--collect-only", "tests/test_pages_learner.py").stdout


def test_without_after_a_page_goes_last_and_nothing_moves(tmp_path: Path) -> None:
    clone = copy_tree(ROOT, tmp_path)
    done = _run([sys.executable, "tools/page.py", "--name", "lab-the-last-page",
                 "--title", "Lab: the last page"], cwd=clone)
    assert done.returncode == 0, done.stderr
    last = f"{len(_pages(ROOT)):02d}-lab-the-last-page.ipynb"
    assert done.stdout.strip() == f"notebooks/{last}"
    assert _files(clone) == [*_files(ROOT), last]
    assert [p["slug"] for p in _pages(clone)] == [*(p["slug"] for p in _pages(ROOT)),
                                                   "lab-the-last-page"]
    assert _run([sys.executable, "tools/nav.py"], cwd=clone).returncode == 0
    assert navigation_problems(clone) == []


#: A question for the new page, written the way an author adds one to questions.toml.
QUESTION = """
[[checks]]
key = "lease_token"
page = "{slug}"
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


def test_a_question_added_to_the_file_shows_on_the_new_page(made: tuple[Path, Path]) -> None:
    clone, new = made
    questions = clone / "echomq_lab" / "lessons" / "questions.toml"
    questions.write_text(questions.read_text() + QUESTION.format(slug=NAME))
    nb = load(new)
    cell = {"cell_type": "code", "execution_count": None, "id": "added", "metadata": {},
            "outputs": [], "source": 'SelfCheck(conn, "lease_token")'}
    nb["cells"].insert(len(nb["cells"]) - 1, cell)
    added = new.with_name("added.ipynb")
    added.write_text(json.dumps(nb))
    env = {**os.environ, "PYTHONPATH": str(clone)}
    done = subprocess.run([sys.executable, "-c", RUN_PAGE, str(added)], cwd=clone / "notebooks",
                          env=env, capture_output=True, text=True, timeout=600)
    added.unlink()
    assert done.returncode == 0, done.stderr[-3000:]
    where, *shown = done.stdout.splitlines()
    assert Path(where).is_relative_to(clone), "the copy's package, with its questions.toml"
    course = " (asked of the protocol as the course states it)"  # the rule, said beside it
    asked = [line.removesuffix(course) for line in shown if line.startswith("Question: ")]
    assert asked == ["Question: A waiting job is claimed once. What is its state afterwards?",
                     "Question: A new job is claimed once. What does its attempts field hold "
                     "then?",
                     "Question: Attempts is 2 and the lease is held. Token 3 completes: what "
                     "happens?"]
    assert shown[-2:] == ["  (a) accepted", "  (b) refused as stale"]


@pytest.mark.parametrize(
    ("name", "title", "after", "why"),
    [
        ("The TTL", "The TTL", "", "lowercase words"),
        ("the_ttl", "The TTL", "", "lowercase words"),
        ("04-the-ttl", "The TTL", "", "without a number"),
        ("the-ttl", "", "", "TITLE must be one non-empty line"),
        ("the-payload", "The TTL", "", "a page of that name is already"),
        ("the-ttl", "The TTL", "the-lost-page", "no page called 'the-lost-page'"),
    ],
)
def test_a_bad_name_title_or_place_is_refused_and_writes_nothing(
    tmp_path: Path, name: str, title: str, after: str, why: str
) -> None:
    clone = copy_tree(ROOT, tmp_path)
    kept = ("tools/pages.toml", "echomq_lab/lessons/questions.toml", "README.md")
    before = {name: (clone / name).read_text() for name in kept}
    listing = sorted(p.name for p in (clone / "notebooks").iterdir())
    result = _run([sys.executable, "tools/page.py", "--name", name, "--title", title,
                   "--after", after], cwd=clone)
    assert result.returncode == 1
    assert why in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, "one line"
    if after:
        assert "the-payload" in result.stderr, "the error names the pages to choose from"
    assert {name: (clone / name).read_text() for name in kept} == before
    assert sorted(p.name for p in (clone / "notebooks").iterdir()) == listing


def test_make_page_without_a_name_says_how(tmp_path: Path) -> None:
    result = make(copy_tree(ROOT, tmp_path), "page")
    assert result.returncode != 0
    assert 'usage: make page NAME=the-ttl TITLE="The TTL"' in result.stderr
