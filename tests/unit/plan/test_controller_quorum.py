"""Plans that name KRaft controllers: the targets `active-controller` (alias `controller`),
`controller: N`, `controllers`, `standby-controllers`, `random-controller`; the conditions
`controller.leader`, `controller.epoch`, `controller(N).committed`...; and the ClusterState the
run builds from the controllers' /state answers (state_poller.build_state)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.plan import PlanError, load_plan
from harness.plan.conditions import parse_condition
from harness.plan.errors import ConditionError, ResolutionError
from harness.plan.model import ClusterSpec, TopicSpec
from harness.plan.serialize import target_to_data
from harness.plan.state import ClusterState, ControllerState, active_controller, controller
from harness.plan.targets import Target, resolve
from harness.state_poller import build_state

from .conftest import BASE
from .states import three_brokers

WritePlan = Callable[[str], Path]


def cs(cid: int, epoch: int, leader: int | None, committed: int = 10, *,
       hw: int | None = 10, leo: int = 12) -> ControllerState:
    return ControllerState(cid, epoch, leader, leader == cid, committed, hw, leo, (1, 2, 3))


def with_quorum(*views: ControllerState) -> ClusterState:
    quorum = {v.id: v for v in views}
    known = active_controller(quorum)
    return dataclasses.replace(three_brokers(), controllers=(1, 2, 3), quorum=quorum,
                               controller=known[0] if known else None)


# ------------------------------------------------------------------------ active controller

def test_the_active_controller_is_the_leader_named_at_the_highest_epoch() -> None:
    # 1 was leader in epoch 4 and still says so (cut off, not yet resigned); 2 and 3 moved on
    # to epoch 5 under 3: the newer epoch wins.
    assert active_controller({1: cs(1, 4, 1), 2: cs(2, 5, 3), 3: cs(3, 5, 3)}) == (3, 5)
    # The leader itself did not answer (paused): its followers still name it.
    assert active_controller({2: cs(2, 5, 3)}) == (3, 5)
    # An election in progress at epoch 6 names nobody: the last known leader stands.
    assert active_controller({1: cs(1, 6, None), 2: cs(2, 5, 3)}) == (3, 5)
    assert active_controller({1: cs(1, 6, None)}) is None
    assert active_controller({}) is None


# ----------------------------------------------------------------------------------- targets

def test_controller_targets_resolve() -> None:
    state = with_quorum(cs(1, 5, 2), cs(2, 5, 2), cs(3, 5, 2))
    rng = random.Random(0)
    assert resolve(Target("active-controller"), state, rng) == (controller(2),)
    assert resolve(Target("controller"), state, rng) == (controller(2),)  # the alias
    assert resolve(Target("controller", controller=3), state, rng) == (controller(3),)
    assert resolve(Target("controllers"), state, rng) == tuple(map(controller, (1, 2, 3)))
    with pytest.raises(ResolutionError, match="no controller 7"):
        resolve(Target("controller", controller=7), state, rng)
    # rest beside the active controller: every broker and the other controllers.
    rest = resolve(Target("rest"), state, rng, other_side=(controller(2),))
    assert controller(2) not in rest and {controller(1), controller(3)} <= set(rest)
    assert str(Target("controller", controller=3)) == "controller 3"
    assert str(Target("active-controller")) == str(Target("controller")) == "active controller"


def test_standby_controllers_are_every_controller_but_the_active_one() -> None:
    state = with_quorum(cs(1, 5, 2), cs(2, 5, 2), cs(3, 5, 2))
    rng = random.Random(0)
    assert resolve(Target("standby-controllers"), state, rng) == (controller(1), controller(3))
    with pytest.raises(ResolutionError, match="no active controller known"):
        resolve(Target("standby-controllers"), with_quorum(cs(1, 6, None)), rng)
    one = dataclasses.replace(with_quorum(cs(1, 5, 1)), controllers=(1,))
    with pytest.raises(ResolutionError, match="quorum of one"):
        resolve(Target("standby-controllers"), one, rng)
    # standby-controller: N, the N-th standby in id order
    assert resolve(Target("standby-controller", index=1), state, rng) == (controller(3),)
    with pytest.raises(ResolutionError, match="no index 2"):
        resolve(Target("standby-controller", index=2), state, rng)
    assert str(Target("standby-controller", index=1)) == "standby controller 1"
    assert target_to_data(Target("standby-controller", index=1)) == {"standby-controller": 1}


def test_standby_controller_index_is_checked_against_the_quorum(write_plan: WritePlan) -> None:
    base = BASE.replace("brokers: 3", "brokers: 3\n  controllers: 3")
    ok = base.replace("faults:\n", "faults:\n  - {name: a, at: 1, action: partition, "
                      "target: {standby-controller: 1}, peers: active-controller}\n")
    plan = load_plan(write_plan(ok))
    assert plan.faults[0].target == Target("standby-controller", index=1)
    with pytest.raises(PlanError, match="3 controller\\(s\\) have 2 standby"):
        load_plan(write_plan(ok.replace("standby-controller: 1", "standby-controller: 2")))


def test_random_controller_draws_among_those_that_answered() -> None:
    state = with_quorum(cs(2, 5, 2), cs(3, 5, 2))  # 1 did not answer
    drawn = {resolve(Target("random-controller"), state, random.Random(seed))
             for seed in range(40)}
    assert drawn == {(controller(2),), (controller(3),)}
    # No quorum view at all (a source without one, e.g. a recorded state): any configured one.
    assert resolve(Target("random-controller"), three_brokers(), random.Random(0)) \
        == (controller(1),)


def test_no_active_controller_is_a_resolution_error() -> None:
    state = with_quorum(cs(1, 6, None), cs(2, 6, None))
    with pytest.raises(ResolutionError, match="no active controller"):
        resolve(Target("active-controller"), state, random.Random(0))


# -------------------------------------------------------------------------------- conditions

@pytest.mark.parametrize(("text", "expected"), [
    ("controller.leader == 3", True),
    ("controller.epoch == 5", True),
    ("controller.epoch > 4 and controller.leader != 1", True),
    ("controller.committed == 40", True),  # the active controller's own report
    ("controller.hw >= controller.committed", True),
    ("controller.active and controller.alive", True),
    ("controller(1).committed == 20", True),
    ("controller(1).committed < controller(3).committed", True),
    ("controller(1).epoch == 4 and controller(1).leader == 1 and controller(1).active", True),
    ("controller(2).leader == 3 and not controller(2).active", True),
    ("controller(2).hw == 40", False),  # 2 knows no high watermark yet: unknown
    ("controller(2).leo == 50", True),
])
def test_controller_conditions(text: str, expected: bool) -> None:
    state = with_quorum(cs(1, 4, 1, 20), cs(2, 5, 3, 30, hw=None, leo=50), cs(3, 5, 3, 40, hw=45))
    c = parse_condition(text, {"t-0": 3}, (1, 2, 3), controllers=(1, 2, 3))
    assert c.holds(state) is expected


def test_controller_conditions_are_unknown_without_an_answer() -> None:
    state = with_quorum(cs(1, 5, 1, 20))  # 2 and 3 did not answer
    assert parse_condition("controller(2).committed >= 0").evaluate(state) is None
    assert parse_condition("controller(2).alive").evaluate(state) is False
    assert parse_condition("controller(2).hw == 1").evaluate(state) is None
    nobody = with_quorum(cs(1, 6, None), cs(2, 6, None))
    assert parse_condition("controller.leader == 1").evaluate(nobody) is None
    assert parse_condition("controller.epoch >= 0").evaluate(nobody) is None
    assert parse_condition("controller.committed >= 0").evaluate(nobody) is None
    # No quorum view (a source that reports none): the leader is ClusterState.controller.
    assert parse_condition("controller.leader == 1").evaluate(three_brokers()) is True
    assert parse_condition("controller.epoch >= 0").evaluate(three_brokers()) is None


@pytest.mark.parametrize(("text", "message", "column"), [
    ("controller(4).committed > 0", "no controller 4", 12),
    ("controller.term > 0", "unknown controller attribute 'term'", 12),
    ("controller(1) > 0", "controller needs an attribute", 15),
    ("controller(x).hw > 0", "expected a controller id", 12),
    ("controller.active > 1", "needs numbers", 1),
])
def test_controller_condition_errors(text: str, message: str, column: int) -> None:
    with pytest.raises(ConditionError) as e:
        parse_condition(text, None, None, controllers=(1, 2, 3))
    assert message in e.value.message and e.value.column == column


# ---------------------------------------------------------------------------- plan files

def test_a_plan_names_controllers(write_plan: WritePlan) -> None:
    text = BASE.replace("  brokers: 3\n", "  brokers: 3\n  controllers: 3\n") + (
        "  - name: kill-active\n    after: 1\n    action: kill\n"
        "    target: active-controller\n    duration: 2\n"
        "  - name: pause-two\n    when: controller.epoch > 1 and controller(2).committed > 0\n"
        "    timeout: 30\n    action: pause\n    target: {controller: 2}\n    duration: 2\n"
        "  - name: old-alias\n    after: 1\n    action: kill\n    target: controller\n"
        "    duration: 1\n"
        "  - name: cut-active\n    after: 1\n    action: partition\n"
        "    target: active-controller\n    peers: {controller: 3}\n    duration: 1\n"
    )
    plan = load_plan(write_plan(text))
    kill, pause, alias, cut = plan.faults[1:]
    assert kill.target == Target("active-controller")
    assert pause.target == Target("controller", controller=2)
    assert pause.when is not None and "controller(2)" in pause.when.text
    assert alias.target == Target("controller")
    assert cut.peers == Target("controller", controller=3)
    assert target_to_data(pause.target) == {"controller": 2}
    assert target_to_data(kill.target) == "active-controller"


@pytest.mark.parametrize(("step", "message"), [
    ("    target: {controller: 4}\n", "no controller 4: controllers are 1..3"),
    ("    target: {controller: x}\n", "controller"),
])
def test_a_bad_controller_target_names_the_field(write_plan: WritePlan, step: str,
                                                 message: str) -> None:
    text = BASE.replace("  brokers: 3\n", "  brokers: 3\n  controllers: 3\n") + (
        "  - name: k\n    after: 1\n    action: kill\n" + step + "    duration: 1\n")
    with pytest.raises(PlanError) as e:
        load_plan(write_plan(text))
    assert message in str(e.value) and "faults[1].target" in str(e.value)


def test_a_condition_naming_a_missing_controller_fails(write_plan: WritePlan) -> None:
    text = BASE.replace("  brokers: 3\n", "  brokers: 3\n  controllers: 1\n") + (
        "  - name: w\n    when: controller(2).committed > 0\n    timeout: 5\n"
        "    action: kill\n    target: active-controller\n    duration: 1\n")
    with pytest.raises(PlanError, match="no controller 2"):
        load_plan(write_plan(text))
    # Without cluster.controllers a plan has the default quorum of 3.
    assert load_plan(write_plan(BASE)).cluster.controllers == 3


# ------------------------------------------------------------------- build_state from /state

def _quorum_answer(node_id: int, epoch: int, leader: int | None, committed: int,
                   topics: dict) -> dict:
    return {"node_id": node_id, "metadata_offset": committed - 1, "metadata_digest": "d",
            "image": {"topics": topics},
            # KRaft node ids (3000 + c in containers): the state numbers controllers by c.
            "quorum": {"node_id": 3000 + node_id, "voters": [3001, 3002, 3003], "epoch": epoch,
                       "leader_id": 3000 + leader if leader is not None else -1,
                       "state": "LeaderState" if leader == node_id else "FollowerState",
                       "active": leader == node_id, "high_watermark": committed,
                       "log_start_offset": 0, "log_end_offset": committed + 1,
                       "committed_offset": committed}}


def test_build_state_reads_the_quorum_and_the_active_controllers_image() -> None:
    spec = ClusterSpec(brokers=3, controllers=3, topics=(TopicSpec("t", 1, 3),))
    old = {"t": {"partitions": {"0": {"leader": 1, "leader_epoch": 2, "replicas": [1, 2, 3],
                                      "isr": [1, 2, 3]}}}}
    new = {"t": {"partitions": {"0": {"leader": 2, "leader_epoch": 3, "replicas": [1, 2, 3],
                                      "isr": [2, 3]}}}}
    answers = {
        "controller-1": _quorum_answer(1, 4, 1, 30, old),  # deposed, still claims epoch 4
        "controller-3": _quorum_answer(3, 5, 3, 35, new),
    }
    state = build_state(spec, answers, 1.5)
    assert state.controllers == (1, 2, 3)
    assert state.controller == 3
    assert set(state.quorum) == {1, 3}
    assert state.quorum[3] == ControllerState(3, 5, 3, True, 35, 35, 36, (1, 2, 3))
    p = state.partitions["t-0"]
    assert (p.leader, p.leader_epoch, p.isr) == (2, 3, (2, 3))  # from controller 3's image
    # A malformed quorum answer is that controller's problem only.
    answers["controller-2"] = {"quorum": {"epoch": "x"}, "image": {}}
    assert set(build_state(spec, answers).quorum) == {1, 3}


def test_build_state_with_a_single_controller_without_raft() -> None:
    spec = ClusterSpec(brokers=3, controllers=1, topics=(TopicSpec("t", 1, 3),))
    image = {"t": {"partitions": {"0": {"leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3],
                                        "isr": [1, 2, 3]}}}}
    state = build_state(spec, {"controller": {"metadata_offset": 3, "image": {"topics": image}}})
    assert (state.controllers, state.controller, state.quorum) == ((1,), 1, {})
    assert state.partitions["t-0"].leader == 1
    assert build_state(spec, {}).controller is None



def test_the_random_nemesis_hits_controllers(write_plan: WritePlan) -> None:
    from harness.plan.random_nemesis import generate

    text = BASE.split("faults:")[0] + (
        "nemesis:\n  mode: random\n  seed: 3\n  kinds: [kill, pause, partition]\n"
        "  targets: [active-controller, random-controller]\n  interval_s: 2\n"
        "  fault_duration_s: 2\n  duration_s: 120\n")
    steps = generate(load_plan(write_plan(text)))
    kinds = {(s.target or s.src or s.dst).kind for s in steps if s.action != "partition"}
    assert kinds == {"active-controller", "random-controller"}
    cut = [s for s in steps if s.action == "partition"]
    assert cut and all(s.target.kind in ("active-controller", "random-controller") for s in cut)
    # Resolved on a quorum state: they name controllers, never brokers.
    state = with_quorum(cs(1, 5, 2), cs(2, 5, 2), cs(3, 5, 2))
    for i, s in enumerate(steps):
        nodes = resolve(s.target, state, random.Random(i))
        assert all(n.kind == "controller" for n in nodes)
