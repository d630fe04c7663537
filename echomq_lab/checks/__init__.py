"""Self-checks graded by the server: a question, a few choices, and the real transitions decide.

API (for pages and widgets; no widget library is imported here)::

    from echomq_lab import checks
    check = checks.claim_fields()          # one factory per question (see PAGES)
    check.question, check.choices          # the text shown, the choices as shown
    graded = check.grade(conn, queue, check.choices[2])
    graded.right, graded.explanation       # bool; what the server did and why
    checks.for_page(2)                     # the checks of page 02, in page order
    checks.get("token_above")              # a check by its key

The words of every check (question, choices, lesson, page) are data: ``questions.toml`` in
this package, which an instructor edits without touching Python. The code that runs them is
:mod:`.observers`. Grading runs the check's setup on ``queue`` (emptied first) by real
transitions, runs the transition the question is about, and reads what the server did. The
right choice is derived from that observation, never stored: if the server behaved otherwise,
the grading follows it.
"""

from __future__ import annotations

from collections.abc import Callable

from echomq_lab.checks.base import Check, Graded, Observed
from echomq_lab.checks.observers import BINARY, FACTS, OBSERVERS
from echomq_lab.checks.questions import QuestionsError, build

#: Every check, in the order ``questions.toml`` lists them.
CHECKS: tuple[Check, ...] = build(OBSERVERS, FACTS)


def _factory(check: Check) -> Callable[[], Check]:
    """A function of no arguments, named after the check's key, that returns the check."""

    def make() -> Check:
        return check

    make.__name__ = make.__qualname__ = check.key
    make.__doc__ = f"Page {check.page:02d}: {check.question}"
    return make


#: The factory of every check, by key (``checks.<key>()`` is the same function).
FACTORIES: dict[str, Callable[[], Check]] = {c.key: _factory(c) for c in CHECKS}
#: Every check's factory, by page, in the order the page asks them.
PAGES: dict[int, tuple[Callable[[], Check], ...]] = {
    page: tuple(FACTORIES[c.key] for c in CHECKS if c.page == page)
    for page in sorted({c.page for c in CHECKS})
}


def __getattr__(name: str) -> Callable[[], Check]:
    """``checks.<key>``: the factory of the check called ``key``."""
    if name in FACTORIES:
        return FACTORIES[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *FACTORIES])


def for_page(page: int) -> list[Check]:
    """The checks of page ``page`` (0-3), in page order."""
    if page not in PAGES:
        raise ValueError(f"no checks for page {page!r}: the pages are {sorted(PAGES)}")
    return [f() for f in PAGES[page]]


def get(key: str) -> Check:
    """The check called ``key``; ValueError naming the keys when there is none."""
    if key not in FACTORIES:
        raise ValueError(f"no check called {key!r}: pick one of {', '.join(FACTORIES)}")
    return FACTORIES[key]()


__all__ = [
    "BINARY", "CHECKS", "FACTORIES", "PAGES", "Check", "Graded", "Observed", "QuestionsError",
    "for_page", "get", *FACTORIES,
]
