"""The pages leave the reader the clicks: graded questions, folded answers, fresh panels.

What a page builds in its kernel (every self-check graded, every panel left unpressed) is asked
in the kernel nbval ran the page in, by the item :mod:`tests.support.reader` puts after the
page's last cell; here, that every page with checks or panels gets that item. The stored
notebooks (no kernel) must show each question unanswered, and give every question under
"Questions to try" an answer folded in a ``<details>`` block. The self-checks' words live in the
package's ``questions.toml``: every question there must be the one its page shows, choices in
the same order, and none of its words may speak of project machinery.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from echomq_lab.lessons import checks
from tests.support import reader
from tools.course import load as course_pages

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
QUESTIONS = ROOT / "echomq_lab" / "lessons" / "questions.toml"
#: Every page's file, by the page's slug, from the page list.
FILES = {p.slug: p.file for p in course_pages()}
#: Words that belong to the project, not to the reader's page.
MACHINERY = re.compile(
    r"\b(issues?|nbval|NBVAL\w*|pytest|make (test|notebooks|venv|app|page|nav|lab))\b", re.I)
#: A SelfCheck's buttons are labelled "(a) ...", "(b) ..."; answered, one is styled.
CHOICE_BUTTON = re.compile(r"^\([a-h]\) ")
#: How a SelfCheck's text begins.
QUESTION = "Question: "


def _path(slug: str) -> Path:
    return NOTEBOOKS / FILES[slug]


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


# -- the reader's probe, in nbval's kernel ----------------------------------------------------


def test_every_page_with_checks_or_panels_is_probed() -> None:
    pages = {p.slug for p in course_pages()}
    wanted = (set(reader.CHECKS) | set(reader.READER_PANELS)) & pages
    assert wanted and set(reader.PROBED.values()) == wanted, sorted(wanted)
    assert set(reader.CHECKS) <= pages, "questions.toml names a page the course lacks"


def test_the_probe_follows_its_pages_last_cell(request: pytest.FixtureRequest) -> None:
    """In a run with nbval, each probed page's probe comes right after its last cell."""
    items = request.session.items
    cells = [i for i in items if type(i).__name__ == "IPyNbCell"]
    if not cells:
        pytest.skip("no notebook collected in this run (nbval runs the pages with `make test`)")
    for i, item in enumerate(items):
        if isinstance(item, reader.ReaderProbe):
            before = items[i - 1]
            assert type(before).__name__ == "IPyNbCell" and before.path == item.path
            assert i + 1 == len(items) or items[i + 1].path != item.path
    probed = {i.path.name for i in items if isinstance(i, reader.ReaderProbe)}
    assert probed == {i.path.name for i in cells} & set(reader.PROBED), sorted(probed)


# -- the stored pages, no kernel -----------------------------------------------------------------


def _stored(slug: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_path(slug).read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("slug", sorted(reader.CHECKS))
def test_stored_pages_show_every_question_unanswered(slug: str) -> None:
    nb = _stored(slug)
    shown = [
        _text(out["data"]["text/plain"])
        for cell in nb["cells"] if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
        if _text(out.get("data", {}).get("text/plain", "")).startswith(QUESTION)
    ]
    assert len(shown) >= len(reader.CHECKS[slug]), f"page {slug} stores {len(shown)} self-checks"
    assert not [s for s in shown if "Your answer" in s], f"page {slug} stores an answered check"
    state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    styled = [
        model["state"]["description"] for model in state.values()
        if model.get("model_name") == "ButtonModel"
        and CHOICE_BUTTON.match(model["state"].get("description", ""))
        and model["state"].get("button_style")
    ]
    assert not styled, f"page {slug} stores a choice already marked: {styled}"


#: Pages whose questions to try are not folded yet, and why (each is skipped saying so).
UNFOLDED = {"lab-one-queue-one-slot": "Lab: one queue, one slot lists its questions to try "
            "without answers to unfold: not written yet"}


@pytest.mark.parametrize("path", [
    pytest.param(NOTEBOOKS / f, marks=pytest.mark.skip(reason=UNFOLDED[n])) if n in UNFOLDED
    else NOTEBOOKS / f for n, f in FILES.items()], ids=lambda p: p.name)
def test_every_question_to_try_has_a_folded_answer(path: Path) -> None:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    section = [_text(c["source"]) for c in cells
               if c["cell_type"] == "markdown" and "## Questions to try" in _text(c["source"])]
    assert len(section) == 1, f"{path.name}: one 'Questions to try' cell wanted"
    text = section[0]
    questions = re.findall(r"^\*\*(\d+)\.\*\*", text, re.MULTILINE)
    folded = re.findall(r"<details><summary>[^<]+</summary>(.*?)</details>", text, re.DOTALL)
    assert questions, f"{path.name}: no numbered questions"
    assert len(folded) == len(questions), (
        f"{path.name}: {len(questions)} questions, {len(folded)} folded answers")
    assert all(answer.strip() for answer in folded), f"{path.name}: an empty answer"


# -- the self-checks' words (questions.toml) ------------------------------------------------


def _stored_checks(slug: str) -> list[list[str]]:
    """The stored self-check outputs of the page ``slug``, each as its lines."""
    return [
        _text(out["data"]["text/plain"]).splitlines()
        for cell in _stored(slug)["cells"] if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
        if _text(out.get("data", {}).get("text/plain", "")).startswith(QUESTION)
    ]


@pytest.mark.parametrize("key", [c.key for c in checks.CHECKS])
def test_each_question_of_the_file_is_the_one_its_page_shows(key: str) -> None:
    check = checks.get(key)
    wanted = [f"{QUESTION}{check.question} (asked of {checks.RULES[check.rule]})",
              *(f"  ({'abcdefgh'[i]}) {choice}" for i, choice in enumerate(check.choices))]
    shown = _stored_checks(check.page)
    assert wanted in [lines[: len(wanted)] for lines in shown], (
        f"{check.page} does not show {key} as questions.toml words it (re-run the "
        f"page after editing the file):\n" + "\n".join(wanted))


def _strings(value: Any) -> list[str]:
    """Every string inside a parsed TOML value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_the_questions_file_speaks_to_the_reader() -> None:
    entries = tomllib.loads(QUESTIONS.read_text(encoding="utf-8"))["checks"]
    assert [e["key"] for e in entries] == [c.key for c in checks.CHECKS]
    said = [s for e in entries for f in ("question", "answers", "hint", "lesson")
            for s in _strings(e[f])]
    assert len(said) >= 3 * len(entries)
    assert not [s for s in said if MACHINERY.search(s)]
    assert MACHINERY.search("the nbval run") and MACHINERY.search("run make notebooks")


# -- no answer before its question; the labs' length -----------------------------------------

#: Phrases that would answer a page's checks if a reader met them before the questions: in a
#: summary of tools/pages.toml (the landing page and the hub show them), or above a check.
GIVEAWAYS = {
    "the-hash-and-its-fields": ("no id", "created-at", "inside the id", "only in the key"),
    "the-state-and-attempts": ("counts the claims", "no longer in `active`",
                               "id is still in", "lease still held", "equality"),
    "the-payload": ("never read", "byte for byte", "opaque", "verbatim"),
}
#: The most words of prose (markdown, the navigation cell left out) a lab may hold.
LAB_WORDS = 1400
#: The most a page of the course's module may hold (the course's own run to about 1,000).
PAGE_WORDS = 1300


def _markdown_before(slug: str, key: str) -> list[str]:
    """The markdown above ``SelfCheck(conn, "<key>")`` on the page, folded answers left out."""
    cells = json.loads(_path(slug).read_text())["cells"]
    out: list[str] = []
    for cell in cells:
        source = _text(cell["source"])
        if cell["cell_type"] == "code" and f'SelfCheck(conn, "{key}")' in source:
            return out
        if cell["cell_type"] == "markdown":
            out.append(re.sub(r"<details>.*?</details>", "", source, flags=re.DOTALL))
    raise AssertionError(f"{slug} never asks {key}")


def test_no_summary_or_lead_in_answers_a_check() -> None:
    for page in course_pages():
        for phrase in GIVEAWAYS.get(page.slug, ()):
            assert phrase not in page.summary.lower(), (page.slug, phrase)
    for check in checks.CHECKS:
        above = " ".join(_markdown_before(check.page, check.key)).lower()
        for phrase in GIVEAWAYS.get(check.page, ()):
            assert phrase not in above, f"{check.key}: {phrase!r} stands above it"


def test_page_02_tells_a_wakes_first_without_its_answer() -> None:
    cells = json.loads(_path("the-state-and-attempts").read_text())["cells"]
    story = next(i for i, c in enumerate(cells) if "TwoWorkersStory(" in _text(c["source"])
                 and c["cell_type"] == "code")
    intro = " ".join(_text(c["source"]) for c in cells[:story] if c["cell_type"] == "markdown")
    assert "A wakes first" in intro and "course" in intro
    assert not re.search(r"refused|EMQSTALE|accepted", intro), intro


def _prose_words(slug: str, navigation: bool = False) -> int:
    """Words of the page's markdown; the navigation cell only when ``navigation`` (on the hub
    it is the reading-order table, which a reader reads as part of the page)."""
    cells = json.loads(_path(slug).read_text())["cells"]
    text = " ".join(_text(c["source"]) for c in cells if c["cell_type"] == "markdown"
                    and (navigation or "navigation" not in c.get("metadata", {}).get("tags", [])))
    return len(re.findall(r"[A-Za-z0-9][\w'’.-]*", re.sub(r"<[^>]+>", " ", text)))


@pytest.mark.parametrize("slug", [p.slug for p in course_pages()
                                  if p.kind == "lab" and 4 <= p.number <= 7])
def test_a_lab_is_as_short_as_a_course_page(slug: str) -> None:
    assert _prose_words(slug) <= LAB_WORDS, f"{slug}: {_prose_words(slug)} words of prose"


@pytest.mark.parametrize("slug", [p.slug for p in course_pages() if p.kind != "lab"])
def test_a_page_stays_within_a_course_pages_length(slug: str) -> None:
    words = _prose_words(slug, navigation=True)
    assert words <= PAGE_WORDS, f"{slug}: {words} words of prose, its navigation included"
