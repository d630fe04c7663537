"""The two-workers story on a page, pressed as a reader presses it (for the browser tests).

The reader presses A's claim; A's stall is taken by the page's clock once the lease runs out;
B's claim and A's late complete are taken by the reader's prediction: a pick runs the step, a
wrong one is answered beside the question ("Not ...") and the question waits for another pick.
"""

from __future__ import annotations

from playwright.sync_api import Locator, expect

from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tools.browser import find_button

#: What the panel says after each step the reader presses (A's stall is taken by the clock).
SAYS: dict[str, str] = {
    "a_claims": "A holds token 1",
    "reaper_returns": "reap returned 1 job to pending; state=pending, attempts=1",
    "b_claims": "Right: B holds token 2; the row's attempts is now 2",
    "a_completes": "Right: A refused: EMQSTALE: token 1 is stale, the row's attempts is 2",
    "b_completes": "B completed with token 2: the row and the lease are gone",
}
#: The steps that wait for a prediction, and the answer the reader commits to (right).
PREDICTIONS: dict[str, str] = {"b_claims": "2", "a_completes": "refused with EMQSTALE"}
#: A wrong pick the reader makes first, and the start of what the panel says beside it.
WRONG_FIRST: dict[str, tuple[str, str]] = {"b_claims": ("1", "Not 1. That is the token A holds")}
#: The longest a lease on these pages takes to run out, with the clock's ticks.
LEASE_OUT_MS = 30_000


def play(story: Locator, until: str = "b_completes", timeout_ms: int = 30_000) -> None:
    """Press the story's steps from the first through ``until``, predicting where asked, and
    wait each time for what the panel says."""
    for step, said in SAYS.items():
        button = find_button(story, BUTTON_LABELS[step])
        if step in PREDICTIONS:  # the pick takes the step; its outcome stays hidden till then
            expect(button, f"{step} waits for a prediction").to_have_count(
                0, timeout=LEASE_OUT_MS)
            right = find_button(story, PREDICTIONS[step])
            expect(right, f"{step} asks").to_be_enabled(timeout=LEASE_OUT_MS)
            if step in WRONG_FIRST:
                wrong, told = WRONG_FIRST[step]
                find_button(story, wrong).click()
                expect(story).to_contain_text(told, timeout=timeout_ms)
                expect(right, "the question waits for another pick").to_be_enabled()
            right.click()
        else:
            expect(button, f"{step} is next").to_be_enabled(timeout=LEASE_OUT_MS)
            button.click()
        expect(story).to_contain_text(said, timeout=timeout_ms)
        if step == until:
            return
