"""A schedule found by `sim explore` exports as a scripted fault plan that loads back to the
same faults (what `highwater run` would replay in containers)."""

from __future__ import annotations

import dataclasses

from harness.plan.loader import parse_plan
from harness.plan.model import Step
from harness.plan.state import Node
from harness.plan.targets import Target
from harness.plan.timing import steps_for
from harness.sim.explore import timeline, to_fault_plan

RANDOM = """
name: r
description: random nemesis
cluster:
  brokers: 3
  topics: [{name: t, partitions: 2, replication_factor: 3, min_insync_replicas: 2}]
workload:
  producers: {count: 1, acks: all, rate: 10, duration_s: 40}
nemesis:
  mode: random
  kinds: [kill, pause, partition, latency]
  targets: [leader, follower, random, minority]
  interval_s: 4
  fault_duration_s: 3
  start_s: 2
expected: {lost-write: "== 0"}
"""


def test_exported_fault_plan_replays_the_same_faults() -> None:
    overrides = {"cluster.switches.truncation": "kip-101", "workload.producers.duration_s": "30",
                 "nemesis.interval_s": "3"}  # fmt: skip
    plan = parse_plan(RANDOM, "r.yaml", overrides)
    steps = steps_for(plan, 7)
    assert len(steps) >= 4
    text = to_fault_plan(plan, steps, 7, RANDOM)
    back = parse_plan(text, "exported.yaml")
    assert back.nemesis.mode == "scripted"
    assert back.cluster.switches == {"truncation": "kip-101"}
    assert back.workload.producers[0].duration_s == 30
    assert [(s.action, s.at, s.duration, s.target, s.src, s.dst, s.params) for s in back.faults] \
        == [(s.action, s.at, s.duration, s.target, s.src, s.dst, s.params) for s in steps]
    assert timeline(back.faults) == timeline(steps)


def test_targets_drawn_at_random_are_exported_as_the_brokers_drawn() -> None:
    plan = parse_plan(RANDOM, "r.yaml")
    steps = [s for s in steps_for(plan, 7) if s.target is not None]
    drawn = next(s for s in steps_for(plan, 1) if s.target and s.target.kind == "random")
    resolved = {drawn.name: (Node("broker", 2),)}
    back = parse_plan(to_fault_plan(plan, [drawn, *steps[:1]], 1, RANDOM, resolved), "x.yaml")
    assert back.faults[0].target == Target("brokers", brokers=(2,))
    assert back.faults[1].target == steps[0].target


def test_conditions_survive_the_export() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    text = (root / "chaos_plans/scenarios/L1.yaml").read_text()
    plan = parse_plan(text, "L1.yaml")
    back = parse_plan(to_fault_plan(plan, plan.faults, 1, text), "x.yaml")
    assert [(s.when and s.when.text, s.after, s.timeout, s.on_timeout) for s in back.faults] \
        == [(s.when and s.when.text, s.after, s.timeout, s.on_timeout) for s in plan.faults]
    assert timeline(back.faults) == timeline(plan.faults)


def test_overrides_of_list_items_and_topic_configs_are_exported() -> None:
    overrides = {"cluster.topics.0.min_insync_replicas": "1",
                 "cluster.topics.0.configs.unclean.leader.election.enable": "true",
                 "cluster.switches.isr-update": "eager"}  # fmt: skip
    plan = parse_plan(RANDOM, "r.yaml", overrides)
    back = parse_plan(to_fault_plan(plan, steps_for(plan, 3)[:2], 3, RANDOM), "exported.yaml")
    [topic] = back.cluster.topics
    assert topic.min_insync_replicas == 1
    assert topic.configs == {"unclean.leader.election.enable": "true"}
    assert back.cluster.switches == {"isr-update": "eager"}


def test_contrast_keeps_only_what_the_switch_under_test_loses(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`--contrast`: a violation counts only if the plan with the behaviour switched back
    passes the same schedule (seconds: three simulated runs of the eager-ISR find)."""
    from pathlib import Path

    from harness.plan.loader import load_plan
    from harness.sim.explore import _fails

    path = Path(__file__).resolve().parents[3] / "chaos_plans/found/random-eager-minimal.yaml"
    eager = load_plan(path)
    maximal = load_plan(path, {"cluster.switches.isr-update": "maximal"})
    steps = eager.faults
    assert _fails(eager, steps, 34, tmp_path, contrast=maximal) is not None
    assert _fails(eager, steps, 34, tmp_path, contrast=eager) is None
    assert _fails(maximal, steps, 34, tmp_path) is None


def test_detection_floors_come_from_the_plans_cluster_config() -> None:
    """The shrinker's floors move with replica.lag.time.max.ms and the session timeout."""
    from harness.sim.explore import CONTAINER_SLACK_S, DetectionFloors

    fast = DetectionFloors.of(parse_plan(RANDOM, "r.yaml",
                                         {"cluster.switches.replica-lag-time-max-ms": "2000"}))
    slow = DetectionFloors.of(parse_plan(RANDOM, "r.yaml",
                                         {"cluster.switches.replica-lag-time-max-ms": "6000"}))
    assert round(slow.isr_out_s - fast.isr_out_s, 3) == 4.0
    assert fast.fenced_s == slow.fenced_s > 9.0 + CONTAINER_SLACK_S  # session timeout 9 s
    assert fast.isr_out_s > 2.0 + CONTAINER_SLACK_S


def test_a_fault_is_not_shortened_below_a_floor_it_crossed_as_drawn() -> None:
    from harness.sim.explore import MIN_DURATION_S, DetectionFloors

    floors = DetectionFloors(isr_out_s=4.6, fenced_s=10.6)
    kill = Step(action="kill", name="k", at=1.0, duration=15.0)
    assert floors.floor(kill, 15.0) == 10.6
    assert floors.floor(kill, 8.0) == 4.6
    assert floors.floor(kill, 3.0) == MIN_DURATION_S
    latency = Step(action="latency", name="l", at=1.0, duration=15.0)
    assert floors.floor(latency, 15.0) == MIN_DURATION_S


def test_timeable_keeps_separated_fault_edges_apart_and_in_order() -> None:
    from harness.sim.explore import _timeable

    pause = Step(action="pause", name="p", at=5.0, duration=4.0)  # 5 .. 9
    kill = Step(action="kill", name="k", at=10.0, duration=12.0)  # starts 1 s after p ends
    chained = Step(action="kill", name="c", after=2.0, duration=3.0)  # 12 .. 15
    before = [pause, kill, chained]
    moved = [pause, dataclasses.replace(kill, at=9.5), chained]  # 0.5 s after p ends
    assert not _timeable(before, moved)
    assert _timeable(before, [pause, dataclasses.replace(kill, at=11.0), chained])
    # the `after` step moves with the step before it: 12 -> 11.5 keeps it 2 s after
    shorter = [dataclasses.replace(pause, duration=2.0), kill, chained]
    assert _timeable(before, shorter)
    swapped = [dataclasses.replace(pause, duration=7.0), kill, chained]  # p now ends at 12
    assert not _timeable(before, swapped)


def test_an_export_with_a_contrast_carries_found_and_contrast_modes() -> None:
    """Every found plan has modes (issue 26): the export writes them from what the minimal
    schedule showed and from explore's --contrast."""
    from pathlib import Path

    from harness.scenario.catalog import Scenario

    plan = parse_plan(RANDOM, "r.yaml", {"cluster.switches.isr-update": "eager"})
    text = to_fault_plan(plan, steps_for(plan, 3)[:2], 3, RANDOM,
                         found={"lost-write": 2, "diverged-offsets": 1, "duplicate": 0},
                         contrast={"cluster.switches.isr-update": "maximal"})  # fmt: skip
    back = parse_plan(text, "exported.yaml")
    sc = Scenario("exported", Path("exported.yaml"), back)
    assert sc.modes == ("found", "contrast")
    found = parse_plan(text, "exported.yaml", sc.overrides("found"))
    assert {k: e.text for k, e in found.expected.items()} == {
        "lost-write": "> 0", "diverged-offsets": "> 0"}
    contrast = parse_plan(text, "exported.yaml", sc.overrides("contrast"))
    assert contrast.cluster.switches == {"isr-update": "maximal"}
    assert {k: e.text for k, e in contrast.expected.items()} == {
        "lost-write": "== 0", "inconsistent-offset": "== 0", "uncommitted-read": "== 0",
        "diverged-offsets": "== 0"}
    # Without a contrast there is nothing to contrast with: no modes, as before.
    assert "modes" not in to_fault_plan(plan, steps_for(plan, 3)[:2], 3, RANDOM)
