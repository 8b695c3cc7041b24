"""L14 on the simulator (seed 1, seconds): the active controller cut from the other voters
(and from broker 3) while broker 1 reaches only it. Beyond the mode's `expected` (judged for
every scenario by test_sim_scenarios.py), what the scenario is about: the cut-off controller
wrote a record (broker 2's AlterPartition) and never committed it (its Raft high watermark
stayed put in its epoch, harness/checker/quorum_check on the run's quorum.jsonl), another controller
became active at a higher epoch during the cut, and the partition led by broker 1 kept
acknowledging acks=all writes through the cut."""

from __future__ import annotations

import json
from pathlib import Path

from harness.checker.quorum_check import commits_while_cut
from harness.plan.loader import load_plan, mode_overrides
from harness.plan.timing import steps_for
from harness.run.simulated import simulate
from harness.store.quorum import read_quorum

PLAN = Path(__file__).resolve().parents[2] / "chaos_plans" / "scenarios" / "L14.yaml"
SEED = 1


def test_the_cut_off_controller_commits_nothing_and_broker_1_keeps_serving(
        tmp_path: Path) -> None:
    base = load_plan(PLAN)
    plan = load_plan(PLAN, mode_overrides(base, "fixed"))
    r = simulate(plan, steps_for(plan, SEED), SEED, tmp_path)
    fired = {f.step.name: f for f in r.fired}
    cut = fired["cut-old-from-broker-3"]
    assert not cut.skipped and cut.step.duration is not None
    old = cut.nodes[0].id
    start, end = int(cut.at_s * 1e9), int((cut.at_s + cut.step.duration) * 1e9)
    samples, problems = read_quorum(tmp_path / "quorum.jsonl")
    assert problems == []
    check = commits_while_cut(samples, old, start, end)
    assert check["commits"] == 0, check
    assert check["appended_while_cut"] >= 1, check  # it had something to (not) commit
    assert check["new_active"] and all(c != old for c, _e in check["new_active"]), check
    # Broker 1 (reaching only the old controller) leads t-0 (placement: partition p's first
    # replica is broker p + 1): its writes are acknowledged all through the cut.
    acked = [json.loads(line)["time"] for line in (tmp_path / "history.jsonl").open()
             if '"type":"ok"' in line and '"f":"send"' in line and '"partition":0' in line]
    for second in range(int(cut.at_s), int(cut.at_s + cut.step.duration)):
        assert any(second * 1e9 <= t < (second + 1) * 1e9 for t in acked), second
    assert r.results["metadata-divergence"]["count"] == 0
    # The same judgement as the run check results.json carries (and the mode expects == 0).
    cut_check = r.results["controller-commit-while-cut"]
    assert cut_check["count"] == 0 and [w["controller"] for w in cut_check["windows"]] == [old]
