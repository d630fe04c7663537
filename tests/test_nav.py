"""Navigation is generated from one list, and a test fails when it drifts from that list.

``tools/pages.toml`` is the reading order. ``make nav`` (``tools/nav.py``) writes each
notebook's navigation cell (tagged ``navigation``: previous, next, up to the hub; the hub's
cell also holds the table of pages) and README's reading-order table. Here: the stored files
are exactly what it writes, their links agree with the list when read independently, and in a
copy of the repository hand edits, an unlisted notebook, a wrong title and a notebook from
before the cells were tagged are each caught or mended.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.authoring import NO_MAKE, load, make, nav_cells, navigation_problems, source
from tools.course import load as course_pages

ROOT = Path(__file__).resolve().parents[1]
#: Each page's file, by its slug: the tests name pages by slug, never by number.
FILES = {p.slug: p.file for p in course_pages()}


def nav(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``tools/nav.py`` of ``root`` (the command ``make nav`` runs), on that tree."""
    return subprocess.run(
        [sys.executable, str(root / "tools" / "nav.py"), *args],
        capture_output=True, text=True, timeout=120,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what the navigation tools read and write: notebooks, tools, README, Makefile."""
    for name in ("notebooks", "tools"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for name in ("README.md", "Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def _edit_nav(path: Path, old: str, new: str) -> None:
    nb = load(path)
    cell = next(c for c in nb["cells"] if "navigation" in c["metadata"].get("tags", []))
    text = source(cell)
    assert old in text
    cell["source"] = text.replace(old, new)
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def test_stored_navigation_is_what_make_nav_writes() -> None:
    result = nav(ROOT, "--check")
    assert result.returncode == 0, result.stderr


def test_links_agree_with_the_reading_order() -> None:
    assert navigation_problems(ROOT) == []


def test_every_notebook_has_one_navigation_cell_last() -> None:
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        nb = load(path)
        assert len(nav_cells(nb)) == 1, path.name
        assert "navigation" in nb["cells"][-1]["metadata"].get("tags", []), path.name


@pytest.mark.skipif(bool(NO_MAKE), reason=NO_MAKE)
def test_a_hand_edit_is_caught_and_make_nav_mends_it(tree: Path) -> None:
    page = tree / "notebooks" / FILES["the-state-and-attempts"]
    before = page.read_bytes()
    _edit_nav(page, f"({FILES['the-payload']})", f"({FILES['lab-two-workers-one-job']})")
    readme = tree / "README.md"
    readme.write_text(readme.read_text().replace("the centre of the lab", "the middle"))
    assert navigation_problems(tree), "the independent reading missed the edit"
    result = nav(tree, "--check")
    assert result.returncode == 1
    assert f"{page.name} differs" in result.stderr
    assert "README.md differs" in result.stderr

    made = make(tree, "nav")
    assert made.returncode == 0, made.stderr
    assert page.read_bytes() == before, "make nav should restore the cell byte for byte"
    assert (tree / "README.md").read_text() == (ROOT / "README.md").read_text()
    assert nav(tree, "--check").returncode == 0
    assert navigation_problems(tree) == []


def test_an_unlisted_notebook_is_named_with_the_entry_to_add(tree: Path) -> None:
    """A notebook merged in without an entry (say, a new lab) fails until it is listed."""
    last = sorted((tree / "notebooks").glob("[0-9][0-9]-*.ipynb"))[-1]
    number = int(last.name[:2]) + 1
    new = tree / "notebooks" / f"{number:02d}-lab-one-more.ipynb"
    nb = load(last)
    nb["cells"][0]["source"] = "# Lab: one more\n"
    new.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")

    result = nav(tree, "--check")
    assert result.returncode == 1
    assert f"{new.name} is not in tools/pages.toml" in result.stderr
    block = result.stderr[result.stderr.index("[[page]]") :]
    assert 'slug = "lab-one-more"' in block and 'title = "Lab: one more"' in block
    assert 'kind = "lab"' in block

    with (tree / "tools" / "pages.toml").open("a") as out:
        out.write("\n" + block)
    assert nav(tree).returncode == 0
    assert navigation_problems(tree) == []
    assert f"]({new.name})" in "".join(nav_cells(load(last))), "the old last page links on"


def test_a_title_that_differs_from_the_heading_is_named(tree: Path) -> None:
    pages = tree / "tools" / "pages.toml"
    pages.write_text(pages.read_text().replace('"The payload"', '"The cargo"'))
    result = nav(tree, "--check")
    assert result.returncode == 1
    assert f"{FILES['the-payload']}: title 'The cargo'" in result.stderr
    assert nav(tree).returncode == 1, "make nav must not write from a wrong list"


def test_an_untagged_hand_written_cell_is_taken_over_not_duplicated(tree: Path) -> None:
    """A notebook from before the cells were generated: its own nav cell is rewritten."""
    path = tree / "notebooks" / FILES["the-payload"]
    nb = load(path)
    nb["cells"][-1]["metadata"] = {}
    nb["cells"][-1]["source"] = "---\n- **Previous:** somewhere\n- **Next:** elsewhere"
    count = len(nb["cells"])
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert nav(tree).returncode == 0
    assert len(load(path)["cells"]) == count
    assert path.read_bytes() == (ROOT / "notebooks" / path.name).read_bytes()


def test_a_stray_hand_written_cell_beside_the_generated_one_is_refused(tree: Path) -> None:
    path = tree / "notebooks" / FILES["the-payload"]
    nb = load(path)
    stray = {"cell_type": "markdown", "id": "stray", "metadata": {},
             "source": f"- **Next:** [The payload]({FILES['the-payload']})"}
    nb["cells"].insert(1, stray)
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    result = nav(tree, "--check")
    assert result.returncode == 1
    assert "cell 1 is hand-written navigation" in result.stderr


def test_cells_added_after_the_navigation_go_before_it(tree: Path) -> None:
    path = tree / "notebooks" / FILES["the-hash-and-its-fields"]
    nb = load(path)
    nb["cells"].append({"cell_type": "markdown", "id": "late", "metadata": {},
                        "source": "## A late section"})
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert nav(tree, "--check").returncode == 1
    assert nav(tree).returncode == 0
    cells = load(path)["cells"]
    assert source(cells[-2]) == "## A late section"
    assert "navigation" in cells[-1]["metadata"]["tags"]


def test_a_notebook_whose_number_is_not_its_place_is_named_with_its_file(tree: Path) -> None:
    """The number comes from the place in the list: a file that disagrees is to be renamed."""
    right = tree / "notebooks" / FILES["the-payload"]
    wrong = right.with_name("09-the-payload.ipynb")
    right.rename(wrong)
    result = nav(tree, "--check")
    assert result.returncode == 1
    assert (f"notebooks/{wrong.name}: its place in tools/pages.toml makes it {right.name}; "
            "rename it (git mv)") in result.stderr
    assert nav(tree).returncode == 1, "make nav must not write from a list the files disagree with"
