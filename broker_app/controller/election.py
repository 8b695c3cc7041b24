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
KIP-966 (eligible leader replicas, `elr_enabled`; Kafka 4.0 opt-in, on for new clusters 4.1):
- before the election, when the target ISR is below min.insync.replicas, the members leaving
  the ISR join the ELR (current ELR and ISR minus the target ISR, minus replicas that had an
  unclean shutdown); at or above min.insync.replicas the ELR is cleared;
- the ISR may become empty (a fenced last member goes to the ELR instead of staying in the
  ISR as under KIP-841);
- election order: a live ISR member; when the ISR is empty, a live ELR member in replica
  order, which becomes the ISR alone and leaves the ELR (a clean election: it holds
  everything below the HW); when ISR and ELR are both empty, the last known leader
  (LastKnownELR, set to the leader when the ISR first becomes empty, cleared once the
  partition has a leader again: Kafka 4.x's "balanced" recovery,
  useLastKnownLeaderInBalancedRecovery) once it is live, as an unclean election; then, only
  if allowed, any live replica (unclean). An unclean election clears the ELR.
  Deviation: Kafka returns the last known leader even while it is fenced; here it must be
  live. KIP-966's later unclean-recovery strategies (querying every replica's log end) are
  not modelled.
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
        elr_enabled: bool = False,
        min_isr: int = 1,
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
        self.elected_from_elr = False
        self.elr_enabled = elr_enabled
        self.min_isr = min_isr
        self.target_elr: tuple[int, ...] = current.elr
        self.unclean_shutdown: frozenset[int] = frozenset()

    def set_unclean_shutdown_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        """Replicas whose broker restarted after an unclean shutdown: never (re)join the ELR."""
        self.unclean_shutdown = frozenset(replicas)
        return self

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

    def _populate_target_elr(self) -> None:
        """Kafka's maybePopulateTargetElr: the ELR for the target ISR."""
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = ()
            return
        in_isr = set(self.target_isr)
        candidates = _ordered_union(self.target_elr, self.current.isr)
        self.target_elr = tuple(
            r for r in candidates if r not in in_isr and r not in self.unclean_shutdown
        )

    def _valid_new_leader(self, r: int) -> bool:
        """In the ISR, or in the ELR while the ISR is empty (KIP-966), and live."""
        in_isr = r in self.target_isr
        in_elr = self.elr_enabled and not self.target_isr and r in self.target_elr
        return (in_isr or in_elr) and r not in self.unclean_shutdown and self.is_live(r)

    def _leader(self) -> int:
        cur = self.current.leader
        if self.preferred and self.target_replicas:
            pref = self.target_replicas[0]
            if pref in self.target_isr and self.is_live(pref):
                return pref
        if cur != NO_LEADER and cur in self.target_replicas and self._valid_new_leader(cur):
            self._take(cur)
            return cur
        if not self.elr_enabled:
            leader, uncleanly = elect_leader(
                self.target_replicas, self.target_isr, self.is_live, self.unclean
            )
        else:
            leader, uncleanly = self._elect_with_elr()
        if uncleanly:
            self.elected_uncleanly = True
            self.target_isr = (leader,)
            self.target_elr = ()
        return leader

    def _take(self, r: int) -> None:
        """A leader from the ELR (the ISR is empty) becomes the ISR alone, leaving the ELR."""
        if r not in self.target_isr:
            self.elected_from_elr = True
            self.target_isr = (r,)
            self.target_elr = tuple(x for x in self.target_elr if x != r)

    def _elect_with_elr(self) -> tuple[int, bool]:
        for r in self.target_replicas:
            if self._valid_new_leader(r):
                self._take(r)
                return r, False
        last = self.current.last_known_elr
        if not self.target_isr and not self.target_elr and len(last) == 1:
            if last[0] in self.target_replicas and self.is_live(last[0]):
                return last[0], True
        return elect_leader(self.target_replicas, (), self.is_live, self.unclean)

    def _last_known_leader(
        self, change_isr: tuple[int, ...] | None, leader: int
    ) -> tuple[int, ...]:
        """Kafka's maybeUpdateLastKnownLeader: remember the leader when the ISR first empties,
        forget it once the partition has a leader again."""
        cur = self.current
        if not self.elr_enabled:
            return ()
        if change_isr == () and cur.leader != NO_LEADER and cur.last_known_elr != (cur.leader,):
            return (cur.leader,)
        if leader != NO_LEADER:
            return ()
        return cur.last_known_elr

    def build(self) -> PartitionChange | None:
        self._populate_target_elr()
        leader = self._leader()
        cur = self.current
        if not self.elr_enabled:
            self.target_elr = ()
        isr_change = None if self.target_isr == cur.isr else self.target_isr
        last_known = self._last_known_leader(isr_change, leader)
        change = PartitionChange(
            topic_id=self.topic_id,
            partition=self.partition,
            leader=None if leader == cur.leader else leader,
            isr=isr_change,
            replicas=None if self.target_replicas == cur.replicas else self.target_replicas,
            adding_replicas=(
                None if self.target_adding == cur.adding_replicas else self.target_adding
            ),
            removing_replicas=(
                None if self.target_removing == cur.removing_replicas else self.target_removing
            ),
            eligible_leader_replicas=None if self.target_elr == cur.elr else self.target_elr,
            last_known_elr=None if last_known == cur.last_known_elr else last_known,
        )
        if all(
            getattr(change, f) is None
            for f in ("leader", "isr", "replicas", "adding_replicas", "removing_replicas",
                      "eligible_leader_replicas", "last_known_elr")
        ):  # fmt: skip
            return None
        return change


def _ordered_union(*groups: Sequence[int]) -> tuple[int, ...]:
    """The members of every group, each once, in first-seen order (deterministic records)."""
    out: list[int] = []
    for g in groups:
        out += [r for r in g if r not in out]
    return tuple(out)
