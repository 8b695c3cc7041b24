"""Liveness is part of the simulator's verdict (issue 24): the run check
`unconverged-replicas` after the settle window, judged by the one verdict function, and
`highwater sim` exits by that verdict (a mode that expects its divergence passes)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.cli import main
from harness.plan.loader import load_plan
from harness.plan.timing import steps_for
from harness.run.simulated import simulate

ROOT = Path(__file__).resolve().parents[3]
UNCONVERGED = ROOT / "tests/fixtures/plans/unconverged.yaml"


def test_a_follower_killed_at_the_end_fails_a_short_settle_window(tmp_path: Path) -> None:
    plan = load_plan(UNCONVERGED)
    r = simulate(plan, steps_for(plan, 1), 1, tmp_path / "short")
    check = r.results["unconverged-replicas"]
    assert r.results["valid"] is True  # nothing acknowledged was lost...
    assert check["count"] >= 1 and check["by_partition"] == {"t-0": check["count"]}
    assert check["recovery_s"] == {"t-0": None}
    assert any("not in the ISR" in ex for ex in check["examples"]), check
    assert r.verdict == "unexpected"  # ...and the run still fails
    assert "unconverged-replicas == 0 (got" in " ".join(r.judgement.misses)


def test_the_same_kill_converges_within_a_window_long_enough(tmp_path: Path) -> None:
    plan = load_plan(UNCONVERGED, {"settle.timeout_s": "60"})
    r = simulate(plan, steps_for(plan, 1), 1, tmp_path)
    check = r.results["unconverged-replicas"]
    assert check["count"] == 0, check
    assert 0 < check["recovery_s"]["t-0"] < 60
    assert r.verdict == "as-expected", r.judgement.misses


def test_sim_cli_exits_by_the_run_verdict(tmp_path: Path, capsys) -> None:
    store = str(tmp_path / "store")
    assert main(["sim", str(UNCONVERGED), "--store", store]) == 1
    assert "unconverged-replicas == 0 (got" in capsys.readouterr().out
    # L2 legacy expects the divergence it shows: as-expected, and exit 0 (it was 1).
    l2 = str(ROOT / "chaos_plans/scenarios/L2.yaml")
    assert main(["sim", l2, "--mode", "legacy", "--store", store]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^as-expected: ", out, re.M), out
    assert re.search(r"^run checks: .*diverged-offsets [1-9]", out, re.M), out
