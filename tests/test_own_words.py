"""Our own words: no run of eight words of the course page's prose appears in what we ship.

The course page (``../shared/seed/the-state-and-attempts.txt``, beside the repository or a
folder above it) is read,
its code lines dropped (the protocol's code and identifiers are not prose), and every run of
eight consecutive words of what is left is looked for in the notebooks (markdown and code
cells), in ``echomq_lab/`` (Python, Lua, the Lua primer ``primer.md`` and the TOML data
files such as the self-checks' ``questions.toml``), in ``README.md`` and in the pages of
``docs/``. Words are lower-cased tokens of letters, digits, ``_``, ``@`` and ``'``, so
punctuation and line breaks do not hide a copy.
Where the page is absent (a bare clone), the test skips and says why.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The page sits in ``shared/seed/`` beside the repository (a worktree may sit one folder deeper).
SEED_CANDIDATES = [p / "shared" / "seed" / "the-state-and-attempts.txt" for p in ROOT.parents]
SEED = next((p for p in SEED_CANDIDATES if p.is_file()), SEED_CANDIDATES[0])
RUN = 8
#: A line of the page that is code (Elixir or Lua, or their comments), not prose.
CODE_LINE = re.compile(r"\s*(--|#|local |def |end$|if |case |  |redis\.call|return )")
WORD = re.compile(r"[a-z0-9_@']+")


def words(text: str) -> list[str]:
    """The word tokens of ``text``, lower-cased."""
    return WORD.findall(text.lower())


def prose(page: str) -> str:
    """The page without its code lines."""
    return "\n".join(line for line in page.splitlines() if not CODE_LINE.match(line))


def runs(tokens: list[str], n: int = RUN) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens."""
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def shipped() -> dict[str, str]:
    """The text of everything we ship, by path relative to the repository."""
    texts: dict[str, str] = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        texts[path.relative_to(ROOT).as_posix()] = "\n".join(
            "".join(c["source"]) for c in cells if c["cell_type"] in ("markdown", "code"))
    package = [path for suffix in ("py", "lua", "toml", "md")
               for path in sorted((ROOT / "echomq_lab").rglob(f"*.{suffix}"))]
    docs = sorted((ROOT / "docs").glob("*.md"))  # README's reference pages
    for path in package + [ROOT / "README.md", *docs]:
        texts[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return texts


@pytest.fixture(scope="module")
def page_runs() -> set[tuple[str, ...]]:
    if not SEED.is_file():
        reason = f"the course page is not here ({SEED}): nothing to compare our words with"
        print(reason)
        pytest.skip(reason)
    found = runs(words(prose(SEED.read_text(encoding="utf-8"))))
    assert len(found) > 500, "the course page's prose was not read"
    return found


def test_the_code_lines_are_left_out() -> None:
    page = "Prose stays here.\n-- a Lua comment\nlocal x = 1\n  indented code\nMore prose."
    assert prose(page) == "Prose stays here.\nMore prose."


def test_a_copied_run_is_found_across_punctuation_and_lines() -> None:
    page = runs(words("one two three four five six seven eight nine"))
    ours = runs(words("One, two — three\nfour five: six seven eight."))
    assert ours & page
    assert not runs(words("one two three four five six seven nine")) & page


def test_the_self_checks_words_are_read() -> None:
    # The questions are data, not Python: the scan must cover the file they live in.
    assert "echomq_lab/lessons/questions.toml" in shipped()


@pytest.mark.parametrize("path", sorted(shipped()))
def test_no_eight_word_run_of_the_course_page(path: str, page_runs: set[tuple[str, ...]]) -> None:
    ours = runs(words(shipped()[path]))
    copied = sorted(" ".join(run) for run in ours & page_runs)
    assert not copied, f"{path} repeats the course page ({len(copied)} runs): {copied[:5]}"
