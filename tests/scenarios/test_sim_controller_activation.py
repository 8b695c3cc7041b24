"""L11 on the simulator (seed 1, seconds), beyond the mode's `expected` (judged for every
scenario by test_sim_scenarios.py): where the legacy loss comes from. The fifth failover's
new active controller missed a batch of the old epoch that nobody retries (the old
controller's own fencing of F, which dropped F from u's ISR); L learned the committed ISR {L}
and acknowledged acks=all writes alone; the stale controller elected F when L died. So every
lost write is on u-0 and was acknowledged between `cut-f` (L alone) and `kill-leader-u`, and
t lost nothing. Fixed (Kafka: active only once caught up to its epoch start): nothing lost,
the same faults fired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.plan.loader import load_plan, mode_overrides
from harness.plan.timing import steps_for
from harness.run.simulated import simulate

PLAN = Path(__file__).resolve().parents[2] / "chaos_plans" / "scenarios" / "L11.yaml"
SEED = 1
PHASE_2 = ("slow-standby-to-active", "cut-standby-b", "cut-f-from-controllers",
           "kill-active-5", "cut-f", "kill-leader-u")


@pytest.mark.parametrize("mode", ["legacy", "fixed"])
def test_the_lost_writes_are_the_ones_l_acknowledged_alone(tmp_path: Path, mode: str) -> None:
    base = load_plan(PLAN)
    plan = load_plan(PLAN, mode_overrides(base, mode))
    r = simulate(plan, steps_for(plan, SEED), SEED, tmp_path)
    fired = {f.step.name: f for f in r.fired}
    for name in PHASE_2:
        assert name in fired and not fired[name].skipped, name
    # F's fencing is what the kill interrupts: it comes ~broker.session.timeout.ms (9 s)
    # after F is cut from the controllers, and L is alone only after that failover.
    assert fired["kill-active-5"].at_s - fired["cut-f-from-controllers"].at_s >= 9
    assert fired["cut-f"].at_s > fired["kill-active-5"].at_s
    lost = r.results["anomalies"]["lost-write"]
    assert r.results["metadata-divergence"]["count"] == 0
    if mode == "fixed":
        assert lost["count"] == 0
        return
    assert lost["count"] > 0 and set(lost["by_partition"]) == {"u-0"}
    ops = [json.loads(line) for line in (tmp_path / "history.jsonl").open()]
    alone_from = fired["cut-f"].at_s * 1e9
    alone_to = fired["kill-leader-u"].at_s * 1e9
    for _invoke, ok in lost["examples"]:
        assert ops[ok]["type"] == "ok" and ops[ok]["topic"] == "u", ops[ok]
        assert alone_from <= ops[ok]["time"] <= alone_to, (ops[ok], alone_from, alone_to)
