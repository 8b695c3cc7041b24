"""Group targets (`coordinator` / `coordinator-followers`: the leader and followers of a group's
__consumer_offsets partition) and group actions (`replace-member`, `hold-commits`): plan
validation, resolution on a snapshot, the state poller's internal partitions, the handler."""

from __future__ import annotations

import random
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from broker_app.coordinator.records import partition_for
from harness.nemesis import Nemesis, NemesisError
from harness.plan import load_plan
from harness.plan.errors import PlanError, ResolutionError
from harness.plan.loader import parse_plan
from harness.plan.model import ConsumerSpec
from harness.plan.serialize import target_to_data
from harness.plan.state import PartitionState, broker
from harness.plan.targets import Target, offsets_partition, resolve
from harness.state_poller import build_state

from .states import three_brokers

PLANS = Path(__file__).resolve().parents[3] / "chaos_plans"

GROUP_PLAN = """\
name: g
cluster:
  brokers: 3
  topics: [{name: t, partitions: 3, replication_factor: 3}]
workload:
  producers: {acks: all, values: 10}
  consumers: {count: 3, mode: subscribe, group: hw-group}
faults:
  - {name: pause, at: 1, action: pause, target: {coordinator-followers: hw-group}, duration: 1}
  - {name: hold, at: 2, action: hold-commits, duration: 5}
  - {name: kill, at: 2, action: kill, target: {coordinator: hw-group}, duration: 3}
  - {name: replace, at: 4, action: replace-member, member: 2}
"""


def _with_offsets(count: int, leader: int, replicas: tuple[int, ...] = (1, 2, 3)):
    internal = {f"__consumer_offsets-{i}": PartitionState(
        "__consumer_offsets", i, leader if i == partition_for("hw-group", count) else 1, 2,
        replicas, replicas) for i in range(count)}
    return replace(three_brokers(), internal=internal)


def test_the_coordinator_is_the_leader_of_the_groups_offsets_partition() -> None:
    for count in (1, 50):
        state = _with_offsets(count, leader=3)
        rng = random.Random(0)
        assert offsets_partition("hw-group", state) == \
            f"__consumer_offsets-{partition_for('hw-group', count)}"
        assert resolve(Target("coordinator", group="hw-group"), state, rng) == (broker(3),)
        assert resolve(Target("coordinator-followers", group="hw-group"), state, rng) == \
            (broker(1), broker(2))


def test_no_offsets_topic_or_no_leader_is_a_resolution_error() -> None:
    with pytest.raises(ResolutionError, match="__consumer_offsets does not exist"):
        resolve(Target("coordinator", group="g"), three_brokers(), random.Random(0))
    state = _with_offsets(1, leader=3)
    state.internal["__consumer_offsets-0"] = replace(state.internal["__consumer_offsets-0"],
                                                     leader=None)
    with pytest.raises(ResolutionError, match="has no leader"):
        resolve(Target("coordinator", group="hw-group"), state, random.Random(0))


def test_build_state_keeps_internal_partitions_apart() -> None:
    plan = parse_plan(GROUP_PLAN)
    part = {"topic": "__consumer_offsets", "partition": 0, "role": "leader", "leader": 2,
            "leader_epoch": 4, "replicas": [2, 3, 1], "isr": [2, 3, 1], "leo": 7, "hw": 7}
    answers: dict[str, Any] = {"broker-2": {"partitions": [part]}}
    state = build_state(plan.cluster, answers)
    assert "__consumer_offsets-0" not in state.partitions
    assert state.internal["__consumer_offsets-0"].leader == 2
    # The controller's image wins over a broker's own view (a deposed leader still says 2).
    answers["controller"] = {"image": {"topics": {"__consumer_offsets": {"partitions": {
        "0": {"leader": 3, "leader_epoch": 5, "replicas": [2, 3, 1], "isr": [3, 1]}}}}}}
    state = build_state(plan.cluster, answers)
    assert state.internal["__consumer_offsets-0"].leader == 3
    assert state.internal["__consumer_offsets-0"].followers() == (2, 1)


def test_group_steps_load_and_serialize() -> None:
    plan = parse_plan(GROUP_PLAN)
    kinds = {s.name: (s.action, s.target) for s in plan.faults}
    assert kinds["kill"][1] == Target("coordinator", group="hw-group")
    assert kinds["pause"][1] == Target("coordinator-followers", group="hw-group")
    assert plan.faults[3].params == {"member": 2}
    assert target_to_data(kinds["kill"][1]) == {"coordinator": "hw-group"}


@pytest.mark.parametrize(("edit", "message"), [
    (("mode: subscribe, group: hw-group", "mode: assign"), "needs workload.consumers with mode"),
    (("{coordinator: hw-group}", "{coordinator: other}"), "not the workload's group"),
    (("member: 2", "member: 3"), "no member 3: the group has 3"),
    (("hold-commits, duration: 5", "hold-commits"), "needs a duration"),
])
def test_group_steps_are_validated(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        parse_plan(GROUP_PLAN.replace(*edit))


class _Members:
    """The part of harness.workload.Workload the group handler uses."""

    def __init__(self) -> None:
        self.consumer_spec = ConsumerSpec(count=3, mode="subscribe", group="hw-group")
        self.commits_held = threading.Event()
        self.restarted: list[int] = []

    def restart_member(self, slot: int) -> None:
        self.restarted.append(slot)


def _plan_fault(step_name: str, workload: Any) -> Any:
    plan = parse_plan(GROUP_PLAN)
    step = next(s for s in plan.faults if s.name == step_name)
    n = Nemesis(object(), list(plan.faults), history=None,  # type: ignore[arg-type]
                state=three_brokers, seed=1, workload=workload)
    return n._plan(0, step, three_brokers())


def test_group_handler_replaces_a_member_and_holds_commits() -> None:
    wl = _Members()
    fault = _plan_fault("replace", wl)
    fault.act()
    assert wl.restarted == [2] and fault.undo is None and fault.nodes == ("member-2",)
    fault = _plan_fault("hold", wl)
    fault.act()
    assert wl.commits_held.is_set()
    fault.undo()
    assert not wl.commits_held.is_set()
    with pytest.raises(NemesisError, match="needs a subscribe workload"):
        _plan_fault("hold", None)


def test_the_container_plan_discriminates_by_mode() -> None:
    plan = load_plan(PLANS / "group-coordinator-kill.yaml")
    assert {s.target.kind for s in plan.faults if s.target} == \
        {"coordinator", "coordinator-followers"}
    assert {s.action for s in plan.faults} >= {"replace-member", "hold-commits", "kill"}
    legacy = plan.modes["legacy"].overrides
    assert legacy["cluster.switches.offsets-commit-required-acks"] == "1"
    assert plan.expected["commit-regression"].holds(0)
    legacy_plan = load_plan(PLANS / "group-coordinator-kill.yaml", legacy)
    assert not legacy_plan.expected["commit-regression"].holds(0)


def test_consumer_racks_give_each_slot_a_client_rack() -> None:
    from harness.workload import _rack_config

    plan = parse_plan(GROUP_PLAN.replace("group: hw-group}", "group: hw-group, "
                                         "racks: [rack-2, rack-3]}"))
    spec = plan.workload.consumers
    assert [_rack_config(spec, i) for i in range(3)] == [
        {"client.rack": "rack-2"}, {"client.rack": "rack-3"}, {"client.rack": "rack-2"}]
    assert _rack_config(parse_plan(GROUP_PLAN).workload.consumers, 0) == {}
    with pytest.raises(PlanError, match="non-empty rack names"):
        parse_plan(GROUP_PLAN.replace("group: hw-group}", "group: hw-group, racks: []}"))
