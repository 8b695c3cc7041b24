"""Leader election and PartitionChangeBuilder: from a partition and targets to one change record.

Election rule (Kafka's PartitionChangeBuilder):
- keep the current leader while it is live and in the target ISR and replicas;
- otherwise the first replica, in replica-list order, that is live and in the ISR;
- if there is none and unclean election is allowed (topic config
  unclean.leader.election.enable, else the controller default, or an UNCLEAN ElectLeaders
  request): the first live replica, and the ISR becomes just that replica (it may lack
  committed data: that is exactly what "unclean" means and what the harness measures);
- else no leader (-1): the partition is offline, its ISR is left as it is (KIP-841 keeps the
  last member so it can come back as a clean leader).
A PREFERRED election moves leadership to replicas[0] when it is live and in the ISR.
`build()` returns the PartitionChange holding only the fields that differ, or None.
Every leader change bumps leader_epoch (replay rule of PartitionChange), every change
bumps partition_epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum

from broker_app.metadata.image import PartitionRegistration
from broker_app.metadata.records import NO_LEADER, PartitionChange


class ElectionType(IntEnum):
    """ElectLeaders API election types."""

    PREFERRED = 0
    UNCLEAN = 1


def elect_leader(
    replicas: Sequence[int],
    isr: Sequence[int],
    is_live: Callable[[int], bool],
    unclean: bool,
) -> tuple[int, bool]:
    """(leader, chosen_uncleanly); leader is NO_LEADER when nobody is eligible."""
    for r in replicas:
        if r in isr and is_live(r):
            return r, False
    if unclean:
        for r in replicas:
            if is_live(r):
                return r, True
    return NO_LEADER, False


class PartitionChangeBuilder:
    def __init__(
        self,
        topic_id: str,
        partition: int,
        current: PartitionRegistration,
        is_live: Callable[[int], bool],
        *,
        unclean: bool = False,
    ) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self.current = current
        self.is_live = is_live
        self.unclean = unclean
        self.target_isr: tuple[int, ...] = current.isr
        self.target_replicas: tuple[int, ...] = current.replicas
        self.target_adding: tuple[int, ...] = current.adding_replicas
        self.target_removing: tuple[int, ...] = current.removing_replicas
        self.preferred = False
        self.elected_uncleanly = False

    def set_target_isr(self, isr: Sequence[int]) -> PartitionChangeBuilder:
        self.target_isr = tuple(isr)
        return self

    def set_target_replicas(
        self, replicas: Sequence[int], adding: Sequence[int] = (), removing: Sequence[int] = ()
    ) -> PartitionChangeBuilder:
        self.target_replicas = tuple(replicas)
        self.target_adding = tuple(adding)
        self.target_removing = tuple(removing)
        return self

    def set_preferred_election(self) -> PartitionChangeBuilder:
        self.preferred = True
        return self

    def _leader(self) -> int:
        cur = self.current.leader
        if self.preferred and self.target_replicas:
            pref = self.target_replicas[0]
            if pref in self.target_isr and self.is_live(pref):
                return pref
        if (
            cur != NO_LEADER
            and cur in self.target_isr
            and cur in self.target_replicas
            and self.is_live(cur)
        ):
            return cur
        leader, uncleanly = elect_leader(
            self.target_replicas, self.target_isr, self.is_live, self.unclean
        )
        if uncleanly:
            self.elected_uncleanly = True
            self.target_isr = (leader,)
        return leader

    def build(self) -> PartitionChange | None:
        leader = self._leader()
        cur = self.current
        change = PartitionChange(
            topic_id=self.topic_id,
            partition=self.partition,
            leader=None if leader == cur.leader else leader,
            isr=None if self.target_isr == cur.isr else self.target_isr,
            replicas=None if self.target_replicas == cur.replicas else self.target_replicas,
            adding_replicas=(
                None if self.target_adding == cur.adding_replicas else self.target_adding
            ),
            removing_replicas=(
                None if self.target_removing == cur.removing_replicas else self.target_removing
            ),
        )
        if (
            change.leader is None
            and change.isr is None
            and change.replicas is None
            and change.adding_replicas is None
            and change.removing_replicas is None
        ):
            return None
        return change
