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

Compound kinds (`COMPOUND_KINDS`, drawn like any kind) are short scripts of ordinary steps
(`when` conditions, `after`, `target: {step: ...}`), so `highwater run` plays them in
containers as it plays scripted faults; each aims at the one fault sequence a legacy
behaviour needs, with its timing drawn from the seed:
- `double-failover`: delay the leader's bytes to one follower (it lags, still in the ISR),
  kill the leader; as soon as another replica leads (`online and
  leader.alive`), cut it from its followers and kill it a moment later - it took writes
  that no follower fetched and no follower reconciled its log with it (KIP-279's fast double
  failover, which KIP-101's truncation got wrong); once the ISR is full again, kill the
  leader once more, so a replica that reconciled under the old rule serves reads;
- `lone-power-loss`: cut the leader from its followers, write its page cache out (the
  kernel's writeback: what was acknowledged is durable), and once the ISR is the leader
  alone, power it off (unsynced records lost) - the last ISR member's crash that the HW must
  not have exposed (KIP-966's strict min ISR);
- `unclean-failover`: pause a follower until it left the ISR, then kill the leader and the
  other follower while it comes back out of sync: every ISR member down, an out-of-sync
  replica up (unclean.leader.election.enable elects it).
The sub-steps of one compound stay together in the schedule (its `when` steps hold the
nemesis until they fire or time out, then `on_timeout: skip` goes on).

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
from harness.plan.conditions import parse_condition
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
    if kind in COMPOUND_KINDS:  # they pick their own roles, on a replicated partition
        rf = cluster.partitions()
        return ("none",) if any(rf.get(p, 0) >= 3 for p in partitions) else ()
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
        _renamed(s, f"l{j + 1}-")
        for j in range(n.overlap)
        for s in schedule(n, plan.cluster, seed + j * OVERLAP_SEED_STRIDE, horizon)
    ]
    # Sorted by `at`; a compound's later steps (no `at`) stay right after its first one.
    keyed, key = [], (0.0, "")
    for s in layers:
        if s.at is not None:
            key = (s.at, s.name)
        keyed.append((key, len(keyed), s))
    return tuple(s for _k, _i, s in sorted(keyed, key=lambda e: (e[0], e[1])))


def _renamed(s: Step, prefix: str) -> Step:
    """Step `s` of one overlap layer: its name, and the step names it targets, prefixed."""
    def ref(t: Target | None) -> Target | None:
        if t is None or t.kind != "step":
            return t
        return dataclasses.replace(t, step=f"{prefix}{t.step}")

    return dataclasses.replace(s, name=f"{prefix}{s.name}", target=ref(s.target),
                               peers=ref(s.peers))


def schedule(n: NemesisSpec, cluster: ClusterSpec, seed: int, horizon_s: float
             ) -> tuple[Step, ...]:
    """Faults from n.start_s until horizon_s; every fault ends by horizon_s."""
    rng = random.Random(seed)
    partitions = list(n.partitions or cluster.partitions())
    steps: list[Step] = []
    t = n.start_s
    while t < horizon_s:
        kind = rng.choice(n.kinds)
        length = round(n.fault_duration_s * rng.uniform(0.5, 1.5), 3)
        gap = round(n.interval_s * rng.uniform(0.5, 1.5), 3)
        role = rng.choice(compatible_targets(kind, n.targets, cluster, partitions))
        if kind in COMPOUND_KINDS:
            group, span = _compound(kind, f"random-{len(steps) + 1}-{kind}", rng, cluster,
                                    partitions, round(t, 3), length)  # fmt: skip
            if t + span > horizon_s:
                break
            steps.extend(group)
            t += span + gap
            continue
        spec = ACTIONS[kind]
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


COMPOUND_KINDS: tuple[str, ...] = ("double-failover", "lone-power-loss", "unclean-failover")
WHEN_TIMEOUT_S = 20.0  # a compound's `when` steps give up (skip) after this long
# How long a compound keeps a replica cut or paused so that it leaves the ISR (plans that
# use them set replica-lag-time-max-ms to a few seconds), and how long it keeps brokers
# down so that the controller fences them (broker.session.timeout.ms is 9 s).
LAG_OUT_S = (4.0, 10.0)
SESSION_OUT_S = (10.0, 20.0)


def _compound(kind: str, name: str, rng: random.Random, cluster: ClusterSpec,
              partitions: Sequence[str], at: float, length: float
              ) -> tuple[list[Step], float]:  # fmt: skip
    """The steps of one compound fault on a partition with >= 3 replicas, starting at `at`
    and (roughly) `span` seconds long; `length` is the drawn fault length (kills last it)."""
    rf = cluster.partitions()
    p = rng.choice([q for q in partitions if rf.get(q, 0) >= 3])

    def when(text: str) -> Any:
        return parse_condition(text, rf, cluster.broker_ids())

    def step(suffix: str, action: str, **kw: Any) -> Step:
        params = {k: v.default for k, v in ACTIONS[action].params.items()}
        params.update(kw.pop("params", {}))
        if "when" in kw:
            kw.setdefault("timeout", WHEN_TIMEOUT_S)
            kw.setdefault("on_timeout", "skip")
        return Step(action=action, name=f"{name}-{suffix}", params=params, **kw)

    leader = Target("leader", partition=p)
    if kind == "double-failover":
        # The new leader is cut from its followers as soon as it leads, and killed `fast`
        # seconds later: it took writes no follower fetched, and no follower reconciled its
        # log with it (in Kafka that window is a fetch round trip; here it is drawn).
        # First one follower lags (its fetch answers delayed, still in the ISR): the logs of
        # the two followers end at different offsets when the leader dies.
        fast = round(rng.uniform(0.1, 1.0), 3)
        cut = f"{name}-cut-next-leader"
        lag = round(rng.uniform(0.5, 1.5), 3)
        steps = [
            step("slow-follower", "latency", at=at, src=leader,
                 dst=Target("follower", partition=p, index=rng.randrange(rf[p] - 1)),
                 params={"ms": rng.randrange(100, 600, 50), "jitter_ms": 0},
                 duration=round(lag + 0.5, 3)),
            step("kill-leader", "kill", after=lag, target=leader, duration=length),
            step("cut-next-leader", "partition", when=when(f"online({p}) and leader({p}).alive"),
                 target=leader, peers=Target("followers", partition=p),
                 duration=round(fast + 0.2, 3)),
            step("kill-next-leader", "kill", after=fast, target=Target("step", step=cut),
                 duration=round(length * rng.uniform(0.5, 1.5), 3)),
            step("kill-reconciled-leader", "kill", when=when(f"isr({p}).size == {rf[p]}"),
                 target=leader, duration=round(length * rng.uniform(0.5, 1.5), 3)),
        ]
        return steps, 3 * length
    if kind == "lone-power-loss":
        cut = round(rng.uniform(*LAG_OUT_S), 3)
        steps = [
            step("cut-leader", "partition", at=at, target=leader,
                 peers=Target("followers", partition=p), duration=cut),
            step("writeback", "disk-sync", after=round(rng.uniform(0.1, 1.0), 3),
                 target=Target("step", step=f"{name}-cut-leader")),
            step("power-off", "kill", when=when(f"isr({p}).size == 1"),
                 target=Target("step", step=f"{name}-cut-leader"),
                 duration=round(length * rng.uniform(0.5, 1.5), 3),
                 params={"lose_unsynced": True}),
        ]
        return steps, cut + length
    if kind == "unclean-failover":
        i = rng.randrange(rf[p] - 1)
        pause = round(rng.uniform(*LAG_OUT_S), 3)
        down = round(rng.uniform(*SESSION_OUT_S), 3)
        # The ISR members other than the leader: every follower but the paused one.
        others = [j for j in range(rf[p] - 1) if j != i]
        steps = [
            step("pause-follower", "pause", at=at,
                 target=Target("follower", partition=p, index=i), duration=pause),
            step("kill-leader", "kill", when=when(f"isr({p}).size == {rf[p] - 1}"),
                 target=leader, duration=down),
        ]
        steps += [step(f"kill-follower-{j}", "kill", after=0.0,
                       target=Target("follower", partition=p, index=j), duration=down)
                  for j in others]  # fmt: skip
        return steps, pause + down
    raise ValueError(f"unknown compound kind {kind!r}")
