"""A page that tells the reader to play a check's question on a panel must lead, with the
panel's defaults, to the answer the check's server run gives.

Page 02 says, of the check ``after_reprocess``: play it on the transition panel (drive a job to
``dead``, press ``reprocess``, then ``claim``). Here the transition panel is pressed that way
with every setting left as the page builds it (``max tries`` 3, ``delay ms`` 1000), and the
token its last claim hands out must be the outcome of the check's own run. (This fails until the
question asks about a job dead at attempts 3, the panel's max tries, as questions.toml is to say.)

Page 02 also sends the reader from its two fencing checks to the fence panel: with the check's
token and lease, and the panel's other defaults, the panel answers as the check's run does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from echomq_lab import keyspace
from echomq_lab.clock import wait_for_server
from echomq_lab.lessons import checks
from echomq_lab.widgets import FencePanel, TransitionPanel

PAGE = Path(__file__).resolve().parents[1] / "notebooks" / "02-the-state-and-attempts.ipynb"


def state_of(panel: TransitionPanel) -> str:
    job_id = panel.runner.job_id
    assert job_id is not None
    row = panel.conn.hget(keyspace.job_key(panel.queue, job_id), "state")
    return row.decode() if row else "no row"


def due(panel: TransitionPanel) -> int:
    """The followed job's run-at time in schedule (server ms)."""
    score = panel.conn.zscore(keyspace.queue_key(panel.queue, "schedule"), panel.runner.job_id)
    assert score is not None
    return int(score)


def test_page_02_sends_the_reader_to_the_transition_panel_for_this_check() -> None:
    cells = json.loads(PAGE.read_text())["cells"]
    before = ["".join(c["source"]) for c, nxt in zip(cells, cells[1:], strict=False)
              if 'SelfCheck(conn, "after_reprocess")' in "".join(nxt["source"])]
    assert before and "transition panel" in before[0], before


def test_reprocess_then_claim_on_the_panel_gives_the_checks_answer(conn: redis.Redis) -> None:
    check = checks.get("after_reprocess")
    seen = check.observe(conn, check.queue)
    panel = TransitionPanel(conn, "hint-02")  # as page 02 builds it: every default kept
    panel.press("enqueue")
    for _ in range(10):  # claim and fail until retry writes dead
        panel.press("claim")
        panel.press("retry")
        if state_of(panel) == "dead":
            break
        wait_for_server(conn, due(panel))
        panel.press("promote")
        assert state_of(panel) == "pending", panel.last_message
    assert state_of(panel) == "dead", panel.last_message
    panel.press("reprocess")
    said = panel.press("claim")
    assert panel.runner.token is not None, said
    assert str(panel.runner.token) == seen.outcome, (
        f"the panel's claim handed out token {panel.runner.token}; the check's run: {seen.did}")


@pytest.mark.parametrize(("key", "token", "lease"), [("token_above", 3, "held"),
                                                     ("token_reaped", 2, "reaped")])
def test_the_fence_panel_gives_the_fencing_checks_answers(
    conn: redis.Redis, key: str, token: int, lease: str,
) -> None:
    """Page 02 sends the reader from its two fencing checks to the fence panel ("now try your
    answers"): with its defaults and the check's token and lease, it answers as the check."""
    check = checks.get(key)
    seen = check.observe(conn, check.queue)
    panel = FencePanel(conn, f"hint-{key}".replace("_", "-"))
    panel.token.value, panel.lease.value = token, lease
    panel.buttons["run"].click()
    assert panel.trial is not None, panel.last_message
    assert panel.trial.outcome.kind == seen.outcome, (panel.trial.line(), seen.did)
