"""Self-checks graded by the server: a question, a few choices, and the real transitions decide.

API (for pages and widgets; no widget library is imported here)::

    from echomq_lab import checks
    check = checks.claim_fields()          # one factory per question (see PAGES)
    check.question, check.choices          # the text shown, the choices as shown
    graded = check.grade(conn, queue, check.choices[2])
    graded.right, graded.explanation       # bool; what the server did and why
    checks.for_page(2)                     # the checks of page 02, in page order
    checks.get("token_above")              # a check by its key

Grading runs the check's setup on ``queue`` (emptied first) by real transitions, runs the
transition the question is about, and reads what the server did. The right choice is derived
from that observation, never stored: if the server behaved otherwise, the grading follows it.
"""

from __future__ import annotations

from collections.abc import Callable

from echomq_lab.checks.base import Check, Graded, Observed
from echomq_lab.checks.fence import after_reprocess, token_above, token_reaped
from echomq_lab.checks.payload import BINARY, payload_read, payload_round_trip
from echomq_lab.checks.rows import claim_fields, fresh_row, id_field, mint_time, row_deleter

#: Every check, by page, in the order the page asks them.
PAGES: dict[int, tuple[Callable[[], Check], ...]] = {
    0: (claim_fields, row_deleter),
    1: (fresh_row, id_field, mint_time),
    2: (after_reprocess, token_above, token_reaped),
    3: (payload_round_trip, payload_read),
}
FACTORIES: dict[str, Callable[[], Check]] = {f.__name__: f for fs in PAGES.values() for f in fs}


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
    "BINARY", "FACTORIES", "PAGES", "Check", "Graded", "Observed", "after_reprocess",
    "claim_fields", "for_page", "fresh_row", "get", "id_field", "mint_time", "payload_read",
    "payload_round_trip", "row_deleter", "token_above", "token_reaped",
]
