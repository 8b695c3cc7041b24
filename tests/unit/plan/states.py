"""Hand-built ClusterState snapshots for the condition and target tests."""

from __future__ import annotations

from harness.plan.state import ClusterState, PartitionState, ReplicaState


def replica(b: int, role: str, leo: int, hw: int, epoch: int = 3,
            hw_checkpoint: int = -1) -> ReplicaState:
    return ReplicaState(broker=b, role=role, leo=leo, hw=hw, leader_epoch=epoch,
                        hw_checkpoint=hw_checkpoint)


def three_brokers(*, isr: tuple[int, ...] = (2, 1, 3), alive: frozenset[int] | None = None,
                  leader: int | None = 2, elapsed: float = 12.0) -> ClusterState:
    """t-0: replicas [1, 2, 3], leader 2 (LEO 20, HW 15, checkpointed HW 9); followers 1
    (LEO 18, HW 15) and 3 (LEO 12, HW 10); broker 3 reported nothing for t-1. t-1: leader 3,
    ISR [3]."""
    t0 = PartitionState(
        "t", 0, leader=leader, leader_epoch=4, replicas=(1, 2, 3), isr=isr,
        replica_states={2: replica(2, "leader", 20, 15, hw_checkpoint=9),
                        1: replica(1, "follower", 18, 15),
                        3: replica(3, "follower", 12, 10)},
    )
    t1 = PartitionState("t", 1, leader=3, leader_epoch=1, replicas=(3, 1, 2), isr=(3,),
                        replica_states={3: replica(3, "leader", 5, 5, 1)})
    if alive is None:
        alive = frozenset({1, 2, 3})
    return ClusterState(brokers=(1, 2, 3), alive=alive,
                        partitions={"t-0": t0, "t-1": t1}, controllers=(1,), controller=1,
                        elapsed_s=elapsed)
