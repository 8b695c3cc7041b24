"""Every documented scenario (chaos_plans/scenarios/L*.yaml), every mode, on the deterministic
simulator (issue 11): the plan as `highwater scenario run` reads it, seed 1, judged by the
scenario runner's own `judge` (the mode's `expected` and `lost_by_acks`). Seconds per case,
no containers; the same interleavings as tests/scenarios/test_docker_scenarios.py, which keeps
one container run per scenario.

L2's mode judges the divergence on the replicas' disks (`diverged_offsets`, the run check
`diverged-offsets`): the simulator counts offsets where two in-sync replicas' in-memory disks
differ after the settle, as a container run compares its collected data dirs. L2's consumers
read from different replicas (KIP-392, simulated by harness/sim/workload.Poller): its legacy
mode expects the divergence read as well (inconsistent-offset > 0), the fixed mode none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.plan.loader import load_plan, mode_overrides
from harness.plan.timing import steps_for
from harness.run.simulated import simulate
from harness.scenario.outcome import judge

SCENARIOS = Path(__file__).resolve().parents[2] / "chaos_plans" / "scenarios"
SEED = 1


def _cases() -> list[tuple[str, str]]:
    out = []
    for path in sorted(SCENARIOS.glob("L*.yaml"), key=lambda p: int(p.stem[1:])):
        out += [(path.stem, mode) for mode in load_plan(path).modes]
    return out


@pytest.mark.parametrize("sid, mode", _cases())
def test_scenario_mode_on_the_simulator(tmp_path: Path, sid: str, mode: str) -> None:
    path = SCENARIOS / f"{sid}.yaml"
    base = load_plan(path)
    plan = load_plan(path, mode_overrides(base, mode))
    r = simulate(plan, steps_for(plan, SEED), SEED, tmp_path)
    outcome = judge(base.modes[mode], r.results)
    assert outcome.reproduced, f"{sid} {mode}: {outcome.why}; {r.results['anomalies']}"
    assert r.results["stats"]["acked"] > 0
    # The scenario runner and `highwater sim` give one verdict (expectations.run_verdict).
    assert r.verdict == "as-expected", r.judgement.misses
