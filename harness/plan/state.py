"""ClusterState: one snapshot of broker state, the input to conditions and target resolution.

The run builds it from what the brokers and the controller expose (per partition: leader,
leader epoch, replicas, ISR; per replica: role, LEO, HW). Missing knowledge is explicit:
`leader is None` means offline or unknown, and a replica absent from `replica_states` is
one whose broker could not be asked (down, paused, cut off). Conditions treat such values as
unknown rather than guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    """A node the cluster primitives act on: kind is "broker", "controller" or "client"."""

    kind: str
    id: int = 0

    def __str__(self) -> str:
        return "client" if self.kind == "client" else f"{self.kind}-{self.id}"


def broker(broker_id: int) -> Node:
    return Node("broker", broker_id)


def controller(controller_id: int) -> Node:
    return Node("controller", controller_id)


CLIENT = Node("client")


@dataclass(frozen=True)
class ReplicaState:
    """What broker `broker` reports about its own replica of a partition."""

    broker: int
    role: str  # "leader" | "follower" | "none" (the broker holds no active replica)
    leo: int
    hw: int
    leader_epoch: int = -1  # the epoch this replica believes current
    hw_checkpoint: int = -1  # the HW its last checkpoint holds: where a crash restarts it from


@dataclass(frozen=True)
class PartitionState:
    """Controller's view (leader, epoch, replicas, ISR) plus each reachable replica's own state."""

    topic: str
    partition: int
    leader: int | None
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    replica_states: dict[int, ReplicaState] = field(default_factory=dict)
    elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas (controller's view)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def followers(self) -> tuple[int, ...]:
        """Replicas other than the leader, in assignment order; empty when there is no leader."""
        if self.leader is None:
            return ()
        return tuple(r for r in self.replicas if r != self.leader)


@dataclass(frozen=True)
class ClusterState:
    """A snapshot of the whole cluster at `elapsed_s` seconds since the run started."""

    brokers: tuple[int, ...]
    alive: frozenset[int]
    partitions: dict[str, PartitionState]
    controllers: tuple[int, ...] = (1,)
    controller: int | None = None  # the active controller, when known
    elapsed_s: float = 0.0
    #: internal topics' partitions (`__consumer_offsets-<n>`), kept apart from `partitions`
    #: (the workload's, which conditions and reports are about); group targets resolve here
    internal: dict[str, PartitionState] = field(default_factory=dict)

    def partition(self, name: str) -> PartitionState | None:
        return self.partitions.get(name)
