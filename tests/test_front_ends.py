"""Each page runs live in exactly one front end besides nbval (:mod:`tests.support.front_ends`),
and every front end meets pages with buttons; a notebook run a third time is counted."""

from __future__ import annotations

from typing import get_args

from tests.support import front_ends
from tools.browser import stored_widgets
from tools.course import ROOT, load


def test_every_page_has_one_front_end_and_each_front_end_has_pages() -> None:
    pages = [p.file for p in load()]
    by_front = {f: front_ends.files(f) for f in get_args(front_ends.FrontEnd)}
    assert sorted(sum(by_front.values(), [])) == sorted(pages)
    for front, files in by_front.items():
        assert any(stored_widgets(ROOT / "notebooks" / f) for f in files), (
            f"no page with widgets runs in the {front}")


def test_a_third_run_is_over_budget() -> None:
    runs = front_ends.RUNS.copy()
    try:
        front_ends.RUNS.clear()
        for _ in range(front_ends.MOST_RUNS):
            front_ends.ran_once("x.ipynb")
        assert front_ends.over_budget() == {}
        front_ends.ran_once("x.ipynb")
        assert front_ends.over_budget() == {"x.ipynb": front_ends.MOST_RUNS + 1}
    finally:
        front_ends.RUNS.clear()
        front_ends.RUNS.update(runs)
