"""Role targets resolve to concrete nodes on a snapshot; random ones reproducibly."""

from __future__ import annotations

import random

import pytest

from harness.plan.errors import ResolutionError
from harness.plan.state import CLIENT, broker, controller
from harness.plan.targets import Target, resolve, step_rng

from .states import three_brokers


def r(target: Target, **state_kw: object) -> tuple:
    return resolve(target, three_brokers(**state_kw), random.Random(1))


def test_partition_roles() -> None:
    assert r(Target("leader", partition="t-0")) == (broker(2),)
    assert r(Target("leader", partition="t-1")) == (broker(3),)
    assert r(Target("follower", partition="t-0")) == (broker(1),)
    assert r(Target("follower", partition="t-0", index=1)) == (broker(3),)
    assert r(Target("followers", partition="t-0")) == (broker(1), broker(3))
    # Leadership moved to 3: the followers are 1 and 2.
    assert r(Target("followers", partition="t-0"), leader=3) == (broker(1), broker(2))


def test_fixed_and_whole_cluster_roles() -> None:
    assert r(Target("broker", brokers=(2,))) == (broker(2),)
    assert r(Target("brokers", brokers=(3, 1, 3))) == (broker(1), broker(3))
    assert r(Target("all")) == (broker(1), broker(2), broker(3))
    assert r(Target("controller")) == (controller(1),)
    assert r(Target("client")) == (CLIENT,)
    assert str(controller(1)) == "controller-1" and str(broker(2)) == "broker-2"


def test_rest_is_everyone_not_on_the_other_side() -> None:
    state = three_brokers()
    rest = resolve(Target("rest"), state, random.Random(0), other_side=(broker(2),))
    assert rest == (broker(1), broker(3), controller(1))


def test_random_picks_a_live_broker() -> None:
    state = three_brokers(alive=frozenset({3}))
    for seed in range(20):
        assert resolve(Target("random"), state, random.Random(seed)) == (broker(3),)
    with pytest.raises(ResolutionError, match="no live broker"):
        resolve(Target("random"), three_brokers(alive=frozenset()), random.Random(0))


def test_majority_and_minority_sizes_and_reproducibility() -> None:
    state = three_brokers()
    picks = set()
    for seed in range(30):
        maj = resolve(Target("majority"), state, step_rng(seed, 0))
        mino = resolve(Target("minority"), state, step_rng(seed, 0))
        assert len(maj) == 2 and len(mino) == 1
        assert set(maj) <= set(map(broker, (1, 2, 3)))
        assert maj == resolve(Target("majority"), state, step_rng(seed, 0))
        picks.add(maj)
    assert len(picks) > 1  # it is random across seeds


def test_step_reuses_earlier_resolution() -> None:
    state = three_brokers()
    done = {"kill-leader": (broker(2),)}
    assert resolve(Target("step", step="kill-leader"), state, random.Random(0),
                   steps=done) == (broker(2),)
    with pytest.raises(ResolutionError, match="has not run"):
        resolve(Target("step", step="later"), state, random.Random(0), steps=done)


@pytest.mark.parametrize("target", [
    Target("leader", partition="t-0"),
    Target("follower", partition="t-0"),
    Target("followers", partition="t-0"),
])
def test_no_leader_is_a_resolution_error(target: Target) -> None:
    with pytest.raises(ResolutionError, match="no leader"):
        r(target, leader=None)


def test_missing_controller_and_follower_index() -> None:
    state = three_brokers()
    no_controller = type(state)(state.brokers, state.alive, state.partitions, (1,), None)
    with pytest.raises(ResolutionError, match="controller"):
        resolve(Target("controller"), no_controller, random.Random(0))
    with pytest.raises(ResolutionError, match="no index 5"):
        r(Target("follower", partition="t-0", index=5))
