"""The random nemesis: same seed, same schedule; another seed, another one; all valid."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.plan import load_plan
from harness.plan.actions import ACTIONS
from harness.plan.random_nemesis import generate

RANDOM = """\
name: r
cluster:
  brokers: 5
  topics: [{name: t, partitions: 3, replication_factor: 3}]
workload:
  producers: {acks: all, duration_s: 300}
nemesis:
  mode: random
  seed: 7
  kinds: [kill, pause, partition, latency, disk-stall, elect-preferred, restart]
  targets: [leader, follower, random, majority, minority, controller]
  interval_s: 4
  fault_duration_s: 3
  start_s: 2
  params:
    latency: {ms: 150}
"""


@pytest.fixture
def plan(write_plan: Callable[[str], Path]):  # type: ignore[no-untyped-def]
    return load_plan(write_plan(RANDOM))


def test_same_seed_same_schedule(plan) -> None:  # type: ignore[no-untyped-def]
    assert generate(plan) == generate(plan)
    assert generate(plan, seed=7) == generate(plan)


def test_other_seed_other_schedule(plan) -> None:  # type: ignore[no-untyped-def]
    a, b = generate(plan, seed=1), generate(plan, seed=2)
    assert [s.describe() for s in a] != [s.describe() for s in b]


def test_schedule_shape(plan) -> None:  # type: ignore[no-untyped-def]
    steps = generate(plan)
    assert len(steps) > 10
    assert steps[0].at is not None and steps[0].at >= 2
    kinds = {s.action for s in steps}
    assert kinds <= set(plan.nemesis.kinds) and len(kinds) > 3
    end = 0.0
    for s in steps:
        assert s.at is not None and s.at >= end  # faults do not overlap
        spec = ACTIONS[s.action]
        assert (s.duration is not None) == (spec.duration != "none")
        end = s.at + (s.duration or 0.0)
        assert end <= 300.0
        if spec.link:
            assert s.src is not None and s.dst is not None
            assert "rest" in (s.src.kind, s.dst.kind)
            assert s.params["ms"] == 150
        elif spec.target:
            assert s.target is not None and s.target.kind in plan.nemesis.targets
            if s.target.partition is not None:
                assert s.target.partition in {"t-0", "t-1", "t-2"}
        else:
            assert s.target is None
    assert len({s.name for s in steps}) == len(steps)


def test_duration_bounds_the_schedule(plan) -> None:  # type: ignore[no-untyped-def]
    short = generate(plan, duration_s=30)
    assert short and all((s.at or 0) + (s.duration or 0) <= 30 for s in short)
    assert short == generate(plan)[: len(short)]  # a prefix of the same draw


def test_seedless_random_plan_needs_a_seed(write_plan) -> None:  # type: ignore[no-untyped-def]
    plan = load_plan(write_plan(RANDOM.replace("  seed: 7\n", "")))
    assert plan.nemesis.seed is None
    with pytest.raises(ValueError, match="needs a seed"):
        generate(plan)
    assert generate(plan, seed=7)


def test_overlap_superimposes_independent_schedules(write_plan: Callable[[str], Path]) -> None:
    from harness.plan.random_nemesis import OVERLAP_SEED_STRIDE

    plan = load_plan(write_plan(RANDOM.replace("  seed: 7\n", "  seed: 7\n  overlap: 3\n")))
    one = load_plan(write_plan(RANDOM))
    steps = generate(plan)
    ats = [s.at or 0.0 for s in steps]
    assert ats == sorted(ats)
    layer2 = [s for s in steps if s.name.startswith("l2-")]
    expected = generate(one, seed=7 + OVERLAP_SEED_STRIDE)
    assert [(s.at, s.describe()) for s in layer2] == [(s.at, s.describe()) for s in expected]
    assert {s.name[:3] for s in steps} == {"l1-", "l2-", "l3-"}
    # Faults of different layers overlap in time (one schedule never does).
    windows = sorted((s.at or 0.0, (s.at or 0.0) + (s.duration or 0.0)) for s in steps)
    assert any(b[0] < a[1] for a, b in zip(windows, windows[1:], strict=False))


def test_overlap_out_of_range_is_a_plan_error(write_plan: Callable[[str], Path]) -> None:
    from harness.plan.errors import PlanError

    with pytest.raises(PlanError, match="nemesis.overlap"):
        load_plan(write_plan(RANDOM.replace("  seed: 7\n", "  seed: 7\n  overlap: 0\n")))
