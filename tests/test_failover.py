"""The fence across a failover: without a durable claim the token is minted twice and the stale
worker's complete is accepted; with one, the first worker never starts and the audit is clean.

Each run starts a cluster of its own (three primaries with two replicas each) and stops it;
the whole file takes about fifteen seconds.
"""

from __future__ import annotations

import pytest

from echomq_lab.cluster import failover
from echomq_lab.sim.audit import V_TOKENS


@pytest.mark.slow
def test_without_a_durable_claim_the_fence_is_violated(valkey_tools: tuple[str, str]) -> None:
    run, cost = failover.experiment(durable=False, claims=20)
    print("\n".join(run.steps + run.calls() + run.violations))
    claims = [c for c in run.ledger.calls if c.verb == "claim"]
    assert [(c.actor, c.token, c.outcome) for c in claims] == [
        ("worker 1", 1, "accepted"), ("worker 2", 1, "accepted")
    ]
    done = [c for c in run.ledger.calls if c.verb == "complete"]
    assert (done[0].actor, done[0].token, done[0].outcome) == ("worker 1", 1, "accepted")
    assert run.audit is not None and not run.audit.verdicts[V_TOKENS]
    assert any("token 1 was handed to worker 1, worker 2" in v for v in run.violations)
    assert "state=pending, attempts=0" in "\n".join(run.steps)
    assert cost.round_trips == 1.0 and cost.commands == 1.0


@pytest.mark.slow
def test_with_a_durable_claim_there_is_no_violation(valkey_tools: tuple[str, str]) -> None:
    run, cost = failover.experiment(durable=True, claims=20)
    print("\n".join(run.steps + run.calls() + run.violations))
    first = run.ledger.calls[1]
    assert (first.actor, first.verb, first.reply) == ("worker 1", "claim", "not replicated")
    assert not [c for c in run.ledger.calls if c.actor == "worker 1" and c.verb == "complete"]
    done = run.ledger.calls[-1]
    assert (done.actor, done.verb, done.token, done.outcome) == ("worker 2", "complete", 1,
                                                                  "accepted")
    assert run.violations == []
    assert cost.round_trips == 1.0 and cost.commands == 2.0
