"""Targets: nodes named by role, and their resolution to concrete nodes.

A `Target` is what a plan writes (`leader: t-0`, `follower: t-0` + `index`, `followers: t-0`,
`broker: 2`, `brokers: [1, 2]`, `active-controller` (alias `controller`), `controller: 2`,
`controllers`, `standby-controllers`, `random-controller`, `random`, `majority`, `minority`,
`all`, `client`, `rest`, `step: <name>`, `coordinator: <group>`, `coordinator-followers:
<group>`). `resolve` turns it into concrete `Node`s on one `ClusterState` snapshot, using
the given RNG for the random kinds; it is a pure function, so
a run that derives its RNG from the plan's seed (see `step_rng`) resolves reproducibly.

Meaning of each kind:
- leader / follower / followers: the partition's current leader, its index-th follower
  (assignment order, leader excluded, default 0), or all its followers;
- broker / brokers: those broker ids; all: every broker;
- random: one live broker; majority / minority: a random subset of all brokers of size
  n//2+1 / (n-1)//2 (Jepsen's split);
- active-controller (or the bare word `controller`, its alias): the active controller of the
  KRaft quorum (ClusterState.controller);
- controller: N: controller N (ids 1..cluster.controllers), whatever its role;
- controllers: every controller; standby-controllers: every controller but the active one
  (the voters an active controller is cut from when it is partitioned away);
  standby-controller: N: the N-th of those (0-based, in id order);
  random-controller: one controller that answered the last poll, or any configured one when
  none did (what the random nemesis draws to hit controllers);
- client: the harness's clients (only as an end of a link: `from:`/`to:`);
- rest: every broker and controller not on the other side (only in peers/from/to);
- step: the nodes an earlier step resolved to (e.g. start what `kill-leader` killed);
- coordinator / coordinator-followers: the group coordinator of a consumer group, i.e. the
  leader of its `__consumer_offsets` partition (Kafka's partitionFor: the group id's Java
  hash modulo the topic's partition count), or that partition's followers.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from broker_app.coordinator.records import partition_for
from harness.plan.errors import ResolutionError
from harness.plan.state import CLIENT, ClusterState, Node, broker, controller

# Kinds written as a bare word, and kinds written as `kind: value`.
SCALAR_KINDS = ("controller", "active-controller", "controllers", "standby-controllers",
                "random-controller", "random",
                "majority", "minority", "all", "client", "rest")
MAPPING_KINDS = ("leader", "follower", "followers", "broker", "brokers", "controller",
                 "standby-controller", "step", "coordinator", "coordinator-followers")
ACTIVE_CONTROLLER = ("controller", "active-controller")  # the bare words naming the active one
GROUP_KINDS = ("coordinator", "coordinator-followers")
OFFSETS_TOPIC = "__consumer_offsets"
ROLE_KINDS = SCALAR_KINDS + MAPPING_KINDS


@dataclass(frozen=True)
class Target:
    kind: str
    partition: str | None = None  # leader / follower / followers
    index: int = 0  # follower
    brokers: tuple[int, ...] = ()  # broker / brokers
    step: str | None = None  # step
    controller: int | None = None  # `controller: N`; None for the bare word (the active one)
    group: str | None = None  # coordinator / coordinator-followers

    def __str__(self) -> str:
        if self.kind in ("leader", "followers"):
            return f"{self.kind} of {self.partition}"
        if self.kind == "follower":
            return f"follower {self.index} of {self.partition}"
        if self.kind in ("broker", "brokers"):
            return "broker " + ",".join(map(str, self.brokers))
        if self.kind == "step":
            return f"nodes of step {self.step}"
        if self.kind == "controller" and self.controller is not None:
            return f"controller {self.controller}"
        if self.kind == "standby-controller":
            return f"standby controller {self.index}"
        if self.kind in ACTIVE_CONTROLLER:
            return "active controller"
        if self.kind in GROUP_KINDS:
            return f"{self.kind} of group {self.group}"
        return self.kind


def majority_size(n: int) -> int:
    return n // 2 + 1


def minority_size(n: int) -> int:
    return (n - 1) // 2


def step_rng(seed: int, step_index: int) -> random.Random:
    """The RNG to resolve step `step_index` with: independent of how often state was polled."""
    return random.Random(f"{seed}:{step_index}")


def resolve(
    target: Target,
    state: ClusterState,
    rng: random.Random,
    *,
    other_side: Collection[Node] = (),
    steps: Mapping[str, tuple[Node, ...]] | None = None,
) -> tuple[Node, ...]:
    """Concrete nodes for `target` on `state`, sorted and without duplicates.

    other_side: the nodes already chosen for the opposite side (for `rest`).
    steps: step name -> the nodes it resolved to (for `step`).
    Raises ResolutionError when the role names nothing right now (no leader, unknown step).
    """
    k = target.kind
    if k in ("leader", "follower", "followers"):
        assert target.partition is not None
        p = state.partition(target.partition)
        if p is None:
            raise ResolutionError(f"no state for partition {target.partition}")
        if p.leader is None:
            raise ResolutionError(f"{target.partition} has no leader")
        if k == "leader":
            return (broker(p.leader),)
        followers = p.followers()
        if k == "followers":
            if not followers:
                raise ResolutionError(f"{target.partition} has no followers")
            return tuple(broker(b) for b in sorted(followers))
        if target.index >= len(followers):
            raise ResolutionError(
                f"{target.partition} has {len(followers)} follower(s), no index {target.index}"
            )
        return (broker(followers[target.index]),)
    if k in ("broker", "brokers"):
        return tuple(broker(b) for b in sorted(set(target.brokers)))
    if k == "all":
        return tuple(broker(b) for b in sorted(state.brokers))
    if k == "random":
        alive = sorted(set(state.brokers) & state.alive)
        if not alive:
            raise ResolutionError("no live broker to pick at random")
        return (broker(rng.choice(alive)),)
    if k in ("majority", "minority"):
        n = len(state.brokers)
        size = majority_size(n) if k == "majority" else minority_size(n)
        if size == 0:
            raise ResolutionError(f"{n} broker(s) have no {k}")
        return tuple(broker(b) for b in sorted(rng.sample(sorted(state.brokers), size)))
    if k == "controller" and target.controller is not None:
        if target.controller not in state.controllers:
            raise ResolutionError(f"no controller {target.controller} (controllers: "
                                  f"{', '.join(map(str, state.controllers))})")
        return (controller(target.controller),)
    if k in ACTIVE_CONTROLLER:
        if state.controller is None:
            raise ResolutionError("no active controller known")
        return (controller(state.controller),)
    if k == "controllers":
        return tuple(controller(c) for c in sorted(state.controllers))
    if k in ("standby-controllers", "standby-controller"):
        if state.controller is None:
            raise ResolutionError("no active controller known: no standby controllers")
        standby = tuple(controller(c) for c in sorted(state.controllers) if c != state.controller)
        if not standby:
            raise ResolutionError("a quorum of one controller has no standby controllers")
        if k == "standby-controllers":
            return standby
        if target.index >= len(standby):
            raise ResolutionError(f"{len(standby)} standby controller(s), no index "
                                  f"{target.index}")
        return (standby[target.index],)
    if k == "random-controller":
        answered = sorted(set(state.controllers) & set(state.quorum)) or sorted(state.controllers)
        if not answered:
            raise ResolutionError("no controller to pick at random")
        return (controller(rng.choice(answered)),)
    if k == "client":
        return (CLIENT,)
    if k == "rest":
        everyone = [broker(b) for b in state.brokers] + [controller(c) for c in state.controllers]
        taken = set(other_side)
        rest = tuple(sorted((n for n in everyone if n not in taken), key=_order))
        if not rest:
            raise ResolutionError("'rest' is empty: the other side holds every node")
        return rest
    if k in GROUP_KINDS:
        return _resolve_coordinator(target, state)
    if k == "step":
        if steps is None or target.step not in steps:
            raise ResolutionError(f"step {target.step!r} has not run yet")
        return steps[target.step]
    raise ResolutionError(f"unknown target kind {k!r}")


def offsets_partition(group: str, state: ClusterState) -> str:
    """The name of `group`'s `__consumer_offsets` partition on `state` (ResolutionError while
    the topic does not exist yet: no consumer of any group asked for a coordinator)."""
    count = sum(1 for name in state.internal if name.rpartition("-")[0] == OFFSETS_TOPIC)
    if count == 0:
        raise ResolutionError(f"{OFFSETS_TOPIC} does not exist yet (no group coordinator)")
    return f"{OFFSETS_TOPIC}-{partition_for(group, count)}"


def _resolve_coordinator(target: Target, state: ClusterState) -> tuple[Node, ...]:
    assert target.group is not None
    name = offsets_partition(target.group, state)
    p = state.internal.get(name)
    if p is None or p.leader is None:
        raise ResolutionError(f"{name} (group {target.group}) has no leader")
    if target.kind == "coordinator":
        return (broker(p.leader),)
    if not p.followers():
        raise ResolutionError(f"{name} (group {target.group}) has no followers")
    return tuple(broker(b) for b in sorted(p.followers()))


def _order(n: Node) -> tuple[str, int]:
    return (n.kind, n.id)
