"""The simulator runs the broker's own code on a virtual clock: same seed, same history; and a
documented interleaving (L1, KIP-101: a new follower truncating to its own high watermark)
loses an acknowledged write with the legacy switch and not with today's fetch protocol."""

from __future__ import annotations

from pathlib import Path

from harness.plan.loader import parse_plan
from harness.plan.timing import steps_for
from harness.run.simulated import simulate

from .plans import SMALL

ROOT = Path(__file__).resolve().parents[3]



def _l1(mode: str) -> object:
    text = (ROOT / "chaos_plans/scenarios/L1.yaml").read_text()
    plan = parse_plan(text, "L1.yaml")
    # The story needs 16 producers (many acks per delayed round trip), not 40 s of them.
    overrides = {**plan.modes[mode].overrides, "workload.producers.duration_s": "18",
                 "workload.consumers.count": "0"}  # fmt: skip
    return parse_plan(text, "L1.yaml", overrides, check_modes=False)


def test_same_seed_same_history_byte_for_byte(tmp_path: Path) -> None:
    plan = parse_plan(SMALL, "small.yaml")
    steps = steps_for(plan, 5)
    a = simulate(plan, steps, 5, tmp_path / "a")
    b = simulate(plan, steps, 5, tmp_path / "b")
    c = simulate(plan, steps, 6, tmp_path / "c")
    ha, hb, hc = (r.history_path.read_bytes() for r in (a, b, c))  # type: ignore[union-attr]
    assert a.results["stats"]["acked"] > 50  # the workload ran through the leader kill
    assert ha == hb
    assert ha != hc  # the seed drives network delays and ids
    assert [f.nodes for f in a.fired] == [f.nodes for f in b.fired]
    assert a.results["verdict"] == "as-expected", a.results


def test_l1_legacy_truncation_loses_an_acknowledged_write(tmp_path: Path) -> None:
    plan = _l1("legacy")
    r = simulate(plan, steps_for(plan, 1), 1, tmp_path)
    assert [f.step.name for f in r.fired if not f.skipped] == [
        "delay-responses-to-a", "cut-a-from-b", "cut-a-from-l", "kill-l", "kill-b", "heal"]
    assert r.results["anomalies"]["lost-write"]["count"] > 0
    assert r.results["stats"]["lost_by_acks"]["all"] > 0


def test_l1_fixed_diverging_epoch_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    plan = _l1("fixed")
    r = simulate(plan, steps_for(plan, 1), 1, tmp_path)
    assert [f.step.name for f in r.fired if not f.skipped] == [
        "delay-responses-to-a", "cut-a-from-b", "cut-a-from-l", "kill-l", "kill-b", "heal"]
    assert r.results["stats"]["acked"] >= 50  # cut-a-from-l waits for HW >= 50
    assert r.results["anomalies"]["lost-write"]["count"] == 0
    assert r.results["anomalies"]["inconsistent-offset"]["count"] == 0


def test_batches_agree_only_when_no_offset_can_hold_two_values() -> None:
    from harness.run.simulated import _batches_agree

    leader = [(0, 1, 11), (2, 2, 12), (3, 5, 13)]
    assert _batches_agree([leader, leader[:2], leader[1:]])  # lagging / truncated replicas
    assert not _batches_agree([leader, [(0, 1, 11), (2, 2, 99)]])  # same batch, other bytes
    # Other batch boundaries over the same offsets: decoded, never assumed equal.
    assert not _batches_agree([leader, [(0, 1, 11), (2, 3, 14)]])
    assert not _batches_agree([[(0, 3, 1)], [(0, 1, 2), (2, 3, 3)]])
