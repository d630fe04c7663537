"""Where ``make test`` runs each page live, besides nbval: in one front end, never two.

nbval runs every notebook once (its stored outputs against a fresh run; the reader's probe
asks its questions in that same kernel). Each page of the course is then run live once more,
in the front end that suits it, by the module that drives that front end:

- ``site``: the pages the static site carries, opened there and left to run by themselves
  (JupyterLite: JupyterLab's own interface on the tab's Python), by tests/test_jupyterlab.py;
- ``app``: the two-workers lab, rendered by Voilà (``make app``'s command) from a Binder-like
  install on a real Valkey, by tests/test_app.py;
- ``room``: the learner's workshop page, on the site, joining a room on a real Valkey through
  its gateway, by tests/test_site_workshop.py;
- ``lab``: the rest, in JupyterLab, by tests/test_jupyterlab.py.

So a page runs at most twice per ``make test``, and every front end still meets pages with
panels, buttons and a story.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from tools.course import Page
from tools.course import load as course_pages

FrontEnd = Literal["site", "app", "room", "lab"]
#: The pages the app renders (the others run on the site or in JupyterLab).
APP_PAGES = ("lab-two-workers-one-job",)
#: The pages run on the site against a workshop room (tests/test_site_workshop.py).
ROOM_PAGES = ("lab-the-workshop",)


def _front_end(page: Page) -> FrontEnd:
    if page.slug in APP_PAGES:
        return "app"
    if page.slug in ROOM_PAGES:
        return "room"
    return "lab" if page.offsite else "site"


def front_end(file: str) -> FrontEnd:
    """The front end page ``file`` (``NN-slug.ipynb``) runs live in."""
    return _front_end(next(p for p in course_pages() if p.file == file))


def files(*fronts: FrontEnd) -> list[str]:
    """The course's pages (in reading order) that run live in one of ``fronts``."""
    return [p.file for p in course_pages() if _front_end(p) in fronts]


#: How many times each notebook ran this session, by file: nbval's run and each live run.
RUNS: Counter[str] = Counter()
#: The most runs a notebook may take per session.
MOST_RUNS = 2


def ran_once(file: str) -> None:
    """Count one run of notebook ``file`` (called where a run starts)."""
    RUNS[file] += 1


def over_budget() -> dict[str, int]:
    """The notebooks that ran more than :data:`MOST_RUNS` times this session."""
    return {f: n for f, n in sorted(RUNS.items()) if n > MOST_RUNS}
