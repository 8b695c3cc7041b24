"""The random nemesis: a Jepsen-like fault schedule drawn from a seed.

`generate(plan)` turns `nemesis: {mode: random, ...}` into ordinary `Step`s with `at` and,
for faults that can be undone, `duration` (the start/stop pair): quiet gap, fault, quiet
gap, fault... It draws from the action table (`ActionSpec.random`, harness/plan/actions.py),
the table the scripted steps and the nemesis handlers use too. Gaps and fault lengths are
drawn around `interval_s` and `fault_duration_s` (x0.5..x1.5); each fault's kind, role
target and partition are drawn from the plan's lists. The same seed and plan give the same
schedule; the seed is printed in the report so a run can be replayed. Targets stay roles
(leader of t-0, minority...): the run resolves them when the step fires, with
`targets.step_rng(seed, i)`.

One schedule never overlaps two faults. `overlap: K` superimposes K independent schedules
(layer j drawn from seed + j * OVERLAP_SEED_STRIDE, its steps renamed `l<j>-...`, all sorted
by `at`), so a fault can act while another is still in effect - what the losses of most
legacy behaviours need (a follower out of the ISR while the leader crashes, ...).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

from harness.plan.actions import ACTIONS
from harness.plan.model import ClusterSpec, NemesisSpec, Plan, Step
from harness.plan.targets import Target, minority_size

_PARTITION_ROLES = ("leader", "follower", "followers")
OVERLAP_SEED_STRIDE = 1_000_003  # layer j of seed s is drawn from s + j * stride


def _replicated(cluster: ClusterSpec, partitions: Sequence[str]) -> list[str]:
    rf = cluster.partitions()
    return [p for p in partitions if rf.get(p, 0) >= 2]


def compatible_targets(
    kind: str, targets: Sequence[str], cluster: ClusterSpec, partitions: Sequence[str]
) -> tuple[str, ...]:
    """The role names in `targets` that `kind` can act on in this cluster."""
    if not ACTIONS[kind].target and not ACTIONS[kind].link:
        return ("none",)  # e.g. elect-preferred: acts on partitions, not nodes
    out = []
    for t in targets:
        if t in ("follower", "followers") and not _replicated(cluster, partitions):
            continue
        if t == "leader" and not partitions:
            continue
        if t == "minority" and minority_size(cluster.brokers) == 0:
            continue
        out.append(t)
    return tuple(out)


def generate(plan: Plan, seed: int | None = None, duration_s: float | None = None
             ) -> tuple[Step, ...]:
    """The schedule for `plan` (whose nemesis must be random). `seed` and `duration_s`
    override the plan's (as `highwater run --seed/--duration` do)."""
    n = plan.nemesis
    if n.mode != "random":
        raise ValueError(f"plan {plan.name!r} has no random nemesis")
    seed = n.seed if seed is None else seed
    if seed is None:
        raise ValueError("a random nemesis needs a seed (nemesis.seed or --seed)")
    horizon = duration_s or n.duration_s or plan.workload.duration_s()
    if n.overlap <= 1:
        return schedule(n, plan.cluster, seed, horizon)
    layers = [
        dataclasses.replace(s, name=f"l{j + 1}-{s.name}")
        for j in range(n.overlap)
        for s in schedule(n, plan.cluster, seed + j * OVERLAP_SEED_STRIDE, horizon)
    ]
    return tuple(sorted(layers, key=lambda s: (s.at or 0.0, s.name)))


def schedule(n: NemesisSpec, cluster: ClusterSpec, seed: int, horizon_s: float
             ) -> tuple[Step, ...]:
    """Faults from n.start_s until horizon_s; every fault ends by horizon_s."""
    rng = random.Random(seed)
    partitions = list(n.partitions or cluster.partitions())
    steps: list[Step] = []
    t = n.start_s
    while t < horizon_s:
        kind = rng.choice(n.kinds)
        spec = ACTIONS[kind]
        length = round(n.fault_duration_s * rng.uniform(0.5, 1.5), 3)
        gap = round(n.interval_s * rng.uniform(0.5, 1.5), 3)
        role = rng.choice(compatible_targets(kind, n.targets, cluster, partitions))
        target = None if role == "none" else _draw_target(role, rng, cluster, partitions)
        undoable = spec.duration != "none"
        if undoable and t + length > horizon_s:
            break
        kw: dict[str, Any] = {"action": kind, "name": f"random-{len(steps) + 1}-{kind}",
                              "at": round(t, 3), "duration": length if undoable else None}
        if spec.link:
            assert target is not None
            rest = Target("rest")
            # One direction, either way round: into the target or out of it.
            kw["src"], kw["dst"] = (target, rest) if rng.random() < 0.5 else (rest, target)
        elif spec.target:
            kw["target"] = target
        params = {p: v.default for p, v in spec.params.items()}
        params.update(spec.random_params)  # the table's values for required params
        params.update(n.params.get(kind, {}))
        kw["params"] = params
        steps.append(Step(**kw))
        t += (length if undoable else 0.0) + gap
    return tuple(steps)


def _draw_target(role: str, rng: random.Random, cluster: ClusterSpec, partitions: list[str]
                 ) -> Target:
    if role not in _PARTITION_ROLES:
        return Target(role)
    if role == "leader":
        return Target("leader", partition=rng.choice(partitions))
    replicated = _replicated(cluster, partitions)
    p = rng.choice(replicated)
    if role == "followers":
        return Target("followers", partition=p)
    return Target("follower", partition=p, index=rng.randrange(cluster.partitions()[p] - 1))
