"""Step timing decisions and the JSON form of a plan."""

from __future__ import annotations

import dataclasses
import json

from harness.plan import load_plan
from harness.plan.conditions import parse_condition
from harness.plan.serialize import plan_to_data
from harness.plan.timing import FIRE, TIMED_OUT, WAIT, step_status, steps_for

from .conftest import EXAMPLE_PLANS, PLANS
from .states import three_brokers


def test_at_after_and_when() -> None:
    plan = load_plan(PLANS / "acks1-partition.yaml")
    latency, cut, heal = plan.faults
    assert step_status(latency, 4.9, 0.0) == WAIT
    assert step_status(latency, 5.0, 0.0) == FIRE
    # heal: 22 s after the previous step fired.
    assert step_status(heal, 30.0, 10.0) == WAIT
    assert step_status(heal, 32.0, 10.0) == FIRE
    # cut: leader 2 has LEO 20, follower 1 has 18: not 20 records ahead.
    state = three_brokers()
    assert step_status(cut, 6.0, 5.0, state) == WAIT
    assert step_status(cut, 6.0, 5.0, None) == WAIT
    assert step_status(cut, 35.0, 5.0, state) == TIMED_OUT
    ahead = three_brokers()
    p = ahead.partitions["t-0"]
    p.replica_states[2] = type(p.replica_states[2])(2, "leader", 60, 15, 3)
    assert step_status(cut, 6.0, 5.0, ahead) == FIRE


def test_when_elapsed_counts_from_the_workload_start_not_the_snapshot() -> None:
    step = dataclasses.replace(load_plan(PLANS / "acks1-partition.yaml").faults[1],
                               when=parse_condition("elapsed >= 10"), timeout=60.0)
    # A snapshot polled during the cluster's start carries 25 s of the poller's clock.
    early = dataclasses.replace(three_brokers(), elapsed_s=25.0)
    assert step_status(step, 0.5, 0.0, early) == WAIT
    assert step_status(step, 10.0, 0.0, early) == FIRE


def test_steps_for_scripted_and_random() -> None:
    scripted = load_plan(PLANS / "leader-kill.yaml")
    assert steps_for(scripted) == scripted.faults
    rnd = load_plan(PLANS / "random.yaml")
    assert steps_for(rnd, seed=3) == steps_for(rnd, seed=3) != steps_for(rnd, seed=4)


def test_plan_to_data_is_json() -> None:
    for path in EXAMPLE_PLANS:
        data = json.loads(json.dumps(plan_to_data(load_plan(path))))
        assert data["name"] == path.stem
    data = plan_to_data(load_plan(PLANS / "acks1-partition.yaml"))
    assert data["expected"] == {"lost-write": "> 0"}
    cut = data["faults"][1]
    assert cut["target"] == {"leader": "t-0"}
    assert cut["when"].startswith("leader(t-0).leo >= follower(t-0, 0).leo + 20")
    assert data["faults"][0]["dst"] == {"followers": "t-0"}
