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


COMPOUND = """\
name: c
cluster:
  brokers: 3
  topics: [{name: t, partitions: 2, replication_factor: 3}]
workload:
  producers: {acks: all, duration_s: 120}
nemesis:
  mode: random
  seed: 3
  overlap: 2
  kinds: [kill, double-failover, lone-power-loss, unclean-failover]
  targets: [leader]
  interval_s: 3
  fault_duration_s: 3
  start_s: 2
"""


def _groups(steps):  # type: ignore[no-untyped-def]
    """Compound sub-steps by compound (name up to the kind), in schedule order."""
    from harness.plan.random_nemesis import COMPOUND_KINDS

    out: dict[str, list] = {}
    for s in steps:
        for kind in COMPOUND_KINDS:
            if f"-{kind}-" in s.name:
                out.setdefault(s.name.split(f"-{kind}-")[0] + f"-{kind}", []).append(s)
    return out


def test_compound_kinds_are_scripts_of_ordinary_steps(write_plan: Callable[[str], Path]) -> None:
    plan = load_plan(write_plan(COMPOUND))
    steps = generate(plan)
    assert generate(plan) == steps
    groups = _groups(steps)
    kinds = {name.split("-", 3)[-1] for name in groups}
    assert kinds == {"double-failover", "lone-power-loss", "unclean-failover"}
    names = [s.name for s in steps]
    for name, group in groups.items():
        # Together, first step timed by `at`, the rest by `when`/`after` right behind it.
        first = names.index(group[0].name)
        assert names[first:first + len(group)] == [s.name for s in group]
        assert group[0].at is not None and all(s.at is None for s in group[1:])
        for s in group[1:]:
            assert (s.when is None) != (s.after is None)
            if s.when is not None:
                assert s.on_timeout == "skip" and s.timeout
        if name.endswith("double-failover"):
            assert [s.action for s in group] == ["latency", "kill", "partition", "kill", "kill"]
            assert group[0].src.kind == "leader" and group[0].dst.kind == "follower"
            assert "leader(" in group[2].when.text and "isr(" in group[4].when.text
            assert group[3].target.step == group[2].name and group[3].after is not None
        elif name.endswith("lone-power-loss"):
            assert [s.action for s in group] == ["partition", "disk-sync", "kill"]
            assert group[0].peers.kind == "followers"
            # The layer's own step: names with the overlap prefix.
            assert group[2].target.step == group[0].name
            assert group[2].params["lose_unsynced"] is True
            assert group[2].when.text.endswith(".size == 1")
        else:
            assert [s.action for s in group[:2]] == ["pause", "kill"]
            assert group[0].target.kind == "follower" and group[1].target.kind == "leader"
            killed = {s.target.index for s in group[2:]}
            assert killed == {0, 1} - {group[0].target.index}


def test_compound_kinds_need_three_replicas(write_plan: Callable[[str], Path]) -> None:
    from harness.plan.errors import PlanError

    text = COMPOUND.replace("replication_factor: 3", "replication_factor: 2")
    with pytest.raises(PlanError, match="double-failover"):
        load_plan(write_plan(text))


def test_compound_schedule_exports_as_a_fault_plan(write_plan: Callable[[str], Path]) -> None:
    """A found schedule with compound steps is written back as scripted faults that load."""
    from harness.sim.explore import to_fault_plan

    path = write_plan(COMPOUND)
    plan = load_plan(path)
    steps = generate(plan)[:8]
    text = to_fault_plan(plan, steps, 3, path.read_text())
    again = load_plan(write_plan(text))
    assert [(s.name, s.describe()) for s in again.faults] == [
        (s.name, s.describe()) for s in steps]
    assert [s.when.text if s.when else None for s in again.faults] == [
        s.when.text if s.when else None for s in steps]
