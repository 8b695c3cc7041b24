"""ClusterState: one snapshot of broker state, the input to conditions and target resolution.

The run builds it from what the brokers and the controllers expose (per partition: leader,
leader epoch, replicas, ISR; per replica: role, LEO, HW; per controller: its view of the KRaft
quorum). Missing knowledge is explicit: `leader is None` means offline or unknown, a replica
absent from `replica_states` is one whose broker could not be asked (down, paused, cut off),
and a controller absent from `quorum` is one that did not answer. Conditions treat such values
as unknown rather than guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
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
class ControllerState:
    """What controller `id` reports about the KRaft metadata quorum (its /state "quorum").

    epoch: the Raft epoch it is in; leader: the leader it knows for that epoch (None while an
    election runs); active: it is that leader and serves as the active controller; committed:
    every metadata record below this offset is committed and applied to its image; hw: its
    Raft high watermark (None until it knows one); leo: its metadata log end offset.
    """

    id: int
    epoch: int
    leader: int | None
    active: bool
    committed: int
    hw: int | None
    leo: int
    voters: tuple[int, ...] = ()


def active_controller(quorum: Mapping[int, ControllerState]) -> tuple[int, int] | None:
    """(leader id, epoch) of the active controller as the answering controllers know it: the
    leader named at the highest epoch any of them names one for (Raft allows one leader per
    epoch, so answers never disagree on it). Knowledge of others counts, so a paused leader the
    host cannot ask is still known; a deposed leader still claiming an older epoch loses to the
    newer one. None when no answering controller knows a leader."""
    best: tuple[int, int] | None = None
    for c in quorum.values():
        if c.leader is not None and (best is None or c.epoch > best[1]):
            best = (c.leader, c.epoch)
    return best


@dataclass(frozen=True)
class ClusterState:
    """A snapshot of the whole cluster at `elapsed_s` seconds since the run started."""

    brokers: tuple[int, ...]
    alive: frozenset[int]
    partitions: dict[str, PartitionState]
    controllers: tuple[int, ...] = (1,)  # the configured controller ids
    controller: int | None = None  # the active controller, when known
    elapsed_s: float = 0.0
    # The controllers that answered, by id (empty when the source has no quorum view): the
    # input of controller.* conditions.
    quorum: dict[int, ControllerState] = field(default_factory=dict)
    #: internal topics' partitions (`__consumer_offsets-<n>`), kept apart from `partitions`
    #: (the workload's, which conditions and reports are about); group targets resolve here
    internal: dict[str, PartitionState] = field(default_factory=dict)

    def partition(self, name: str) -> PartitionState | None:
        return self.partitions.get(name)
