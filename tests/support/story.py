"""The two-workers story on a page, pressed as a reader presses it (for the browser tests).

The reader presses A's claim; A's stall is taken by the page's clock once the lease runs out;
before B's claim and before A's late complete the reader commits to a prediction, and only then
does the step's button appear.
"""

from __future__ import annotations

from playwright.sync_api import Locator, expect

from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tools.browser import find_button

#: What the panel says after each step the reader presses (A's stall is taken by the clock).
SAYS: dict[str, str] = {
    "a_claims": "A holds token 1",
    "reaper_returns": "reap returned 1 job to pending; state=pending, attempts=1",
    "b_claims": "B holds token 2; the row's attempts is now 2",
    "a_completes": "A refused: EMQSTALE: token 1 is stale, the row's attempts is 2",
    "b_completes": "B completed with token 2: the row and the lease are gone",
}
#: The steps that wait for a prediction, and the answer the reader commits to first.
PREDICTIONS: dict[str, str] = {"b_claims": "2", "a_completes": "refused EMQSTALE"}
#: The longest a lease on these pages takes to run out, with the clock's ticks.
LEASE_OUT_MS = 30_000


def play(story: Locator, until: str = "b_completes", timeout_ms: int = 30_000) -> None:
    """Press the story's steps from the first through ``until``, predicting where asked, and
    wait each time for what the panel says."""
    for step, said in SAYS.items():
        button = find_button(story, BUTTON_LABELS[step])
        if step in PREDICTIONS:  # the step and its outcome stay hidden until the reader commits
            expect(button, f"{step} waits for a prediction").to_have_count(
                0, timeout=LEASE_OUT_MS)
            find_button(story, PREDICTIONS[step]).click()
        expect(button, f"{step} is next").to_be_enabled(timeout=LEASE_OUT_MS)
        button.click()
        expect(story).to_contain_text(said, timeout=timeout_ms)
        if step == until:
            return
