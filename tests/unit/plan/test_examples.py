"""Every example plan in chaos_plans/ loads and says what the run needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.plan import load_plan
from harness.plan.random_nemesis import generate

from .conftest import EXAMPLE_PLANS, PLANS


@pytest.mark.parametrize("path", EXAMPLE_PLANS, ids=lambda p: p.name)
def test_example_plan_loads(path: Path) -> None:
    plan = load_plan(path)
    assert plan.name == path.stem
    assert plan.description
    assert plan.cluster.topics


def test_the_four_required_examples_exist() -> None:
    names = {p.stem for p in EXAMPLE_PLANS}
    assert {"smoke", "leader-kill", "acks1-partition", "random"} <= names


def test_smoke_has_no_faults_and_acks_all() -> None:
    plan = load_plan(PLANS / "smoke.yaml")
    assert plan.faults == ()
    assert plan.nemesis.mode == "scripted"
    assert {p.acks for p in plan.workload.producers} == {"all"}
    assert all(e.holds(0) for e in plan.expected.values())


def test_leader_kill_kills_the_leader_twice_under_min_isr_2() -> None:
    plan = load_plan(PLANS / "leader-kill.yaml")
    (topic,) = plan.cluster.topics
    assert (topic.replication_factor, topic.min_insync_replicas) == (3, 2)
    kills = [s for s in plan.faults if s.action == "kill"]
    assert len(kills) == 2
    assert all(s.target is not None and s.target.kind == "leader" for s in kills)
    assert plan.expected["lost-write"].holds(0)
    assert not plan.expected["lost-write"].holds(1)


def test_acks1_partition_cuts_the_leader_on_a_condition_and_expects_loss() -> None:
    plan = load_plan(PLANS / "acks1-partition.yaml")
    assert {p.acks for p in plan.workload.producers} == {"1"}
    cut = next(s for s in plan.faults if s.action == "partition")
    assert cut.when is not None and cut.timeout is not None
    assert cut.target is not None and cut.target.kind == "leader"
    assert plan.expected["lost-write"].holds(1)
    assert not plan.expected["lost-write"].holds(0)
    # The companion run: the same plan under acks=all.
    plan_all = load_plan(PLANS / "acks1-partition.yaml", {"workload.producers.acks": "all"})
    assert plan_all.workload.producers[0].acks == "all"


def test_random_example_has_a_schedule() -> None:
    plan = load_plan(PLANS / "random.yaml")
    steps = generate(plan)
    assert steps and all(s.at is not None for s in steps)
