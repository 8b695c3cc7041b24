"""Partition: one topic-partition's replication state on one broker (Kafka's Partition.scala).

Contract (sans-I/O; every time is a `now_ms` argument, every message a plain object):
- The controller's decisions arrive as `make_leader(...)` / `make_follower(...)`; a stale leader
  epoch is ignored (returns False).
- Leader side: `fetch_records_for_follower` answers one replica fetch (read + divergence check +
  follower state update + maybe ISR expansion + maybe HW advance); `maybe_shrink_isr(now_ms)`
  after replica.lag.time.max.ms; ISR changes go out as `AlterPartitionRequest` and count per the
  maximal-ISR rule until `on_alter_partition_response` commits or rejects them.
- HW = min LEO over the ISR used for the HW: the maximal ISR (default) or, with
  isr_update="eager", the ISR with a pending shrink already applied (L6). With strict_min_isr the
  HW stays put while the committed ISR is below min.insync.replicas (L7).
- `append_records_to_leader` raises NotEnoughReplicasError before appending when acks=all and the
  ISR is below min.insync.replicas; `check_enough_replicas_reach_offset` drives DelayedProduce.
- `read_for_fetch` serves consumers and replicas with CurrentLeaderEpoch fencing and Fetch v12+
  DivergingEpoch; `last_offset_for_leader_epoch` answers OffsetForLeaderEpoch.
- Follower side the state is only role/epoch/ISR; fetching and truncation live in fetcher.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker_app.replication.behaviour import ReplicationBehaviour
from broker_app.replication.errors import (
    Errors,
    InvalidStateError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
)
from broker_app.replication.messages import (
    NO_CURRENT_LEADER_EPOCH,
    UNDEFINED_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    EpochEndOffset,
    FetchIsolation,
    FetchPartitionResult,
    FetchRequestData,
)
from broker_app.replication.replica import ReplicaState
from broker_app.storage.append import LogAppendInfo
from broker_app.storage.replica_log import ReplicaLog

ACKS_ALL = -1


# --- ISR state (KIP-497 / KIP-841): committed, or one change in flight to the controller ---


@dataclass(frozen=True)
class CommittedPartitionState:
    isr: frozenset[int]

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr

    @property
    def is_inflight(self) -> bool:
        return False


@dataclass(frozen=True)
class PendingExpandIsr:
    isr: frozenset[int]
    new_in_sync_replica_id: int
    last_committed_state: CommittedPartitionState

    @property
    def maximal_isr(self) -> frozenset[int]:
        # Counting the joiner at once only makes the HW more conservative: safe either way.
        return self.isr | {self.new_in_sync_replica_id}

    @property
    def is_inflight(self) -> bool:
        return True


@dataclass(frozen=True)
class PendingShrinkIsr:
    isr: frozenset[int]
    outgoing_in_sync_replica_ids: frozenset[int]
    last_committed_state: CommittedPartitionState

    @property
    def maximal_isr(self) -> frozenset[int]:
        # The controller may still elect an outgoing replica until it commits the shrink, so the
        # HW must keep waiting for it (the L6 fix).
        return self.isr

    @property
    def is_inflight(self) -> bool:
        return True


PartitionState = CommittedPartitionState | PendingExpandIsr | PendingShrinkIsr


@dataclass(frozen=True)
class LeaderAppendResult:
    info: LogAppendInfo
    hw_advanced: bool


@dataclass(frozen=True)
class FollowerFetchUpdate:
    hw_advanced: bool
    alter_partition: AlterPartitionRequest | None


class Partition:
    def __init__(
        self,
        topic: str,
        partition: int,
        local_broker_id: int,
        log: ReplicaLog,
        behaviour: ReplicationBehaviour | None = None,
        replica_lag_time_max_ms: int = 30_000,
        min_insync_replicas: int = 1,
    ) -> None:
        if replica_lag_time_max_ms <= 0:
            raise ValueError(f"replica_lag_time_max_ms must be > 0, got {replica_lag_time_max_ms}")
        if min_insync_replicas < 1:
            raise ValueError(f"min_insync_replicas must be >= 1, got {min_insync_replicas}")
        self.topic = topic
        self.partition = partition
        self.local_broker_id = local_broker_id
        self.log = log
        self.behaviour = behaviour or ReplicationBehaviour()
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.min_insync_replicas = min_insync_replicas
        self.role: str = "none"  # "leader" | "follower" | "none"
        self.leader_id: int = -1
        self.leader_epoch: int = -1
        self.partition_epoch: int = -1
        self.replicas: tuple[int, ...] = ()
        self.partition_state: PartitionState = CommittedPartitionState(frozenset())
        self.leader_epoch_start_offset: int | None = None
        self.remote_replicas: dict[int, ReplicaState] = {}
        self._inflight: AlterPartitionRequest | None = None
        # KIP-841: a fenced broker or one in controlled shutdown may not join an ISR. The
        # ReplicaManager points this at the metadata image; alone, every replica is eligible.
        self.is_replica_isr_eligible: Callable[[int], bool] = lambda _replica_id: True
        # KIP-903: a broker's registered epoch per the metadata image (-1 unknown); the
        # ReplicaManager points it at the image like is_replica_isr_eligible.
        self.replica_broker_epoch: Callable[[int], int] = lambda _replica_id: -1

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.partition}@{self.local_broker_id} {self.role} "
            f"epoch={self.leader_epoch} isr={sorted(self.isr)} "
            f"leo={self.log.log_end_offset} hw={self.log.high_watermark})"
        )

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def is_leader(self) -> bool:
        return self.role == "leader"

    @property
    def isr(self) -> frozenset[int]:
        """The ISR as last committed by the controller (what Metadata reports)."""
        return self.partition_state.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.partition_state.maximal_isr

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    # --- controller decisions -------------------------------------------------------------

    def make_leader(
        self,
        leader_epoch: int,
        isr: list[int] | tuple[int, ...] | frozenset[int],
        replicas: list[int] | tuple[int, ...],
        partition_epoch: int,
        now_ms: int,
    ) -> bool:
        """Become (or stay) leader. Returns True when this is a new leader epoch here.

        A new epoch is stamped into the epoch cache at the current LEO (so followers holding
        data from epochs this leader never saw still find a truncation point, KAFKA-7415), and
        remote replica state restarts: ISR members count as caught up now, giving them
        replica.lag.time.max.ms to fetch before a shrink.
        """
        self._check_assignment(isr, replicas, must_contain_self_in_isr=True)
        if leader_epoch < self.leader_epoch:
            return False
        if leader_epoch == self.leader_epoch and partition_epoch <= self.partition_epoch:
            return False
        is_new_epoch = leader_epoch > self.leader_epoch or not self.is_leader
        self.role = "leader"
        self.leader_id = self.local_broker_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = tuple(replicas)
        self.partition_state = CommittedPartitionState(frozenset(isr))
        self._inflight = None
        leo = self.log.log_end_offset
        if is_new_epoch:
            self.log.assign_epoch(leader_epoch, leo)
            self.leader_epoch_start_offset = leo
            self.remote_replicas = {}
        for rid in self.replicas:
            if rid == self.local_broker_id:
                continue
            state = self.remote_replicas.get(rid)
            if state is None:
                state = self.remote_replicas[rid] = ReplicaState(rid)
                state.reset_for_new_leader(now_ms, in_sync=rid in self.isr)
        for rid in list(self.remote_replicas):
            if rid not in self.replicas:
                del self.remote_replicas[rid]
        self.maybe_increment_leader_hw(now_ms)
        return is_new_epoch

    def make_follower(
        self,
        leader_id: int,
        leader_epoch: int,
        isr: list[int] | tuple[int, ...] | frozenset[int],
        replicas: list[int] | tuple[int, ...],
        partition_epoch: int,
        now_ms: int,
    ) -> bool:
        """Become (or stay) follower of `leader_id`. True when the fetcher must (re)start."""
        del now_ms  # kept for symmetry with make_leader; followers keep no timers here
        self._check_assignment(isr, replicas, must_contain_self_in_isr=False)
        if leader_id == self.local_broker_id:
            raise InvalidStateError(
                f"partition {self.name}: make_follower names this broker ({leader_id}) as leader"
            )
        if leader_epoch < self.leader_epoch:
            return False
        if leader_epoch == self.leader_epoch and partition_epoch <= self.partition_epoch:
            return False
        if leader_id < 0 and self.role == "follower" \
                and self.behaviour.follower_restart == "leader-change":
            # Kafka <= 2.0 (ZooKeeper's ReplicaManager.makeFollowers) aborts the transition
            # when the new leader is unavailable: the follower keeps its leader and fetcher,
            # so the same leader elected again is "no leader change" (KAFKA-7164, L21).
            return False
        # KAFKA-7164: a legacy follower (follower_restart "leader-change") ignores a new epoch
        # of the same leader, even one that skipped an epoch it never saw.
        new_epoch = (leader_epoch > self.leader_epoch
                     and self.behaviour.follower_restart == "epoch-change")
        restart = new_epoch or self.role != "follower" or leader_id != self.leader_id
        self.role = "follower"
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = tuple(replicas)
        self.partition_state = CommittedPartitionState(frozenset(isr))
        self._inflight = None
        self.leader_epoch_start_offset = None
        self.remote_replicas = {}
        return restart

    def make_offline(self) -> None:
        """The broker stopped hosting this replica as leader or follower (fenced, deleted)."""
        self.role = "none"
        self.remote_replicas = {}
        self._inflight = None
        self.leader_epoch_start_offset = None

    def _check_assignment(
        self,
        isr: list[int] | tuple[int, ...] | frozenset[int],
        replicas: list[int] | tuple[int, ...],
        must_contain_self_in_isr: bool,
    ) -> None:
        if not replicas or self.local_broker_id not in replicas:
            raise InvalidStateError(
                f"partition {self.name}: replicas {list(replicas)} do not include "
                f"broker {self.local_broker_id}"
            )
        if not set(isr) <= set(replicas):
            raise InvalidStateError(
                f"partition {self.name}: ISR {sorted(isr)} not within replicas {list(replicas)}"
            )
        if must_contain_self_in_isr and self.local_broker_id not in isr:
            raise InvalidStateError(
                f"partition {self.name}: leader {self.local_broker_id} not in ISR {sorted(isr)}"
            )

    # --- HW arithmetic ----------------------------------------------------------------------

    def _isr_for_high_watermark(self) -> frozenset[int]:
        state = self.partition_state
        if self.behaviour.isr_update == "eager" and isinstance(state, PendingShrinkIsr):
            # Legacy (L6): the leader already acts on a shrink the controller has not committed.
            return state.isr - state.outgoing_in_sync_replica_ids
        return state.maximal_isr

    def _isr_for_min_isr(self) -> frozenset[int]:
        state = self.partition_state
        if self.behaviour.isr_update == "eager" and isinstance(state, PendingShrinkIsr):
            return state.isr - state.outgoing_in_sync_replica_ids
        return state.isr

    def effective_min_isr(self, min_isr: int | None = None) -> int:
        """The min ISR every check uses. With strict min ISR (Kafka 3.7+, KAFKA-15583's
        effectiveMinIsr) min.insync.replicas capped at the replica count, so RF < min cannot
        block acks=all; before 3.7 the configured value as it is (such a topic refuses every
        acks=all produce with NOT_ENOUGH_REPLICAS)."""
        wanted = self.min_insync_replicas if min_isr is None else min_isr
        if not self.behaviour.strict_min_isr:
            return wanted
        return min(wanted, max(len(self.replicas), 1))

    def is_under_min_isr(self) -> bool:
        return len(self._isr_for_min_isr()) < self.effective_min_isr()

    def maybe_increment_leader_hw(self, now_ms: int) -> bool:
        """Move the leader's HW to the min LEO over the HW's ISR; True if it advanced."""
        if not self.is_leader:
            return False
        if self.behaviour.strict_min_isr and self.is_under_min_isr():
            return False
        leader_leo = self.log.log_end_offset
        new_hw = leader_leo
        counted = self._isr_for_high_watermark()
        for rid, state in self.remote_replicas.items():
            # A caught-up replica about to join the ISR is waited for too: otherwise the HW
            # could run away from it and it would never be added. Only one that may join
            # (Kafka's shouldWaitForReplicaToJoinIsr asks isReplicaIsrEligible, KIP-841): a
            # fenced broker — e.g. killed, its ISR membership already removed by the controller
            # — counts as caught up for replica.lag.time.max.ms after its last fetch, and
            # waiting for it held every acks=all write of the partition until it came back.
            waits = rid in counted or (
                rid in self.replicas
                and state.log_end_offset >= 0
                and state.is_caught_up(leader_leo, now_ms, self.replica_lag_time_max_ms)
                and self._may_join_isr(rid)
            )
            if waits and state.log_end_offset < new_hw:
                new_hw = state.log_end_offset
        if new_hw > self.log.high_watermark:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    # --- leader: produce ------------------------------------------------------------------

    def append_records_to_leader(
        self, records: bytes, acks: int, now_ms: int, min_isr: int | None = None
    ) -> LeaderAppendResult:
        """Append a producer's batch as leader.

        Raises NotLeaderOrFollowerError if this replica does not lead, NotEnoughReplicasError
        (before anything is written) when acks=all and the ISR is below min.insync.replicas.
        acks=0/1 never get NOT_ENOUGH_REPLICAS, as in Kafka.
        """
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} is not the leader of {self.name} "
                f"(leader {self.leader_id}, epoch {self.leader_epoch})"
            )
        isr = self._isr_for_min_isr()
        wanted = self.effective_min_isr(min_isr)
        if acks == ACKS_ALL and len(isr) < wanted:
            raise NotEnoughReplicasError(
                f"{self.name}: ISR {sorted(isr)} has {len(isr)} members, fewer than "
                f"min.insync.replicas={wanted}; the batch was not appended"
            )
        info = self.log.append_as_leader(records, self.leader_epoch)
        return LeaderAppendResult(info=info, hw_advanced=self.maybe_increment_leader_hw(now_ms))

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, Errors]:
        """DelayedProduce's test: (done, error) for an acks=all batch ending at required_offset-1.

        Done when the HW covers it; NOT_ENOUGH_REPLICAS_AFTER_APPEND when by then the ISR used
        for acknowledgements is below min.insync.replicas; NOT_LEADER_OR_FOLLOWER if leadership
        moved away (the new leader may have truncated it).
        """
        if not self.is_leader:
            return True, Errors.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if len(self._isr_for_high_watermark()) >= self.effective_min_isr():
                return True, Errors.NONE
            return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, Errors.NONE

    # --- leader: replica fetches and ISR changes -----------------------------------------------

    def fetch_records_for_follower(
        self, request: FetchRequestData, now_ms: int
    ) -> tuple[FetchPartitionResult, FollowerFetchUpdate]:
        """Answer one replica fetch as Kafka does: read first (the response carries the HW as it
        was before this fetch), then record the follower's position unless the read failed or
        it diverged (diverging_fetch_state "skip")."""
        no_update = FollowerFetchUpdate(hw_advanced=False, alter_partition=None)
        if self.is_leader and request.replica_id not in self.remote_replicas:
            # Kafka answers a fetch from a broker outside the assignment this way too.
            return FetchPartitionResult(error=Errors.NOT_LEADER_OR_FOLLOWER), no_update
        result = self.read_for_fetch(
            request.fetch_offset,
            request.max_bytes,
            FetchIsolation.LOG_END,
            last_fetched_epoch=request.last_fetched_epoch,
            current_leader_epoch=request.current_leader_epoch,
            min_one_batch=request.min_one_batch,
        )
        if result.error != Errors.NONE:
            return result, no_update
        if result.diverging_epoch is not None and self.behaviour.diverging_fetch_state == "skip":
            # KAFKA-13141: the follower holds other batches below its fetch offset; its next
            # fetch, after it truncated, says where it is. Kafka 2.8.0 ("update") recorded the
            # fetch offset anyway.
            return result, no_update
        update = self.update_follower_fetch_state(
            request.replica_id, request.fetch_offset, now_ms, request.log_start_offset,
            request.replica_epoch)  # fmt: skip
        return result, update

    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, now_ms: int, log_start_offset: int = -1,
        broker_epoch: int = -1,
    ) -> FollowerFetchUpdate:
        """Record that `replica_id` (the incarnation with `broker_epoch`, -1 unknown) has
        everything below `fetch_offset`; maybe expand the ISR and advance the HW."""
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} does not lead {self.name}; cannot track replicas"
            )
        state = self.remote_replicas.get(replica_id)
        if state is None:
            raise NotLeaderOrFollowerError(
                f"broker {replica_id} is not a replica of {self.name} (replicas {self.replicas})"
            )
        previous_leo = state.log_end_offset
        state.broker_epoch = broker_epoch
        state.update_fetch_state(fetch_offset, log_start_offset, now_ms, self.log.log_end_offset)
        request = None
        if replica_id not in self.isr:
            request = self.maybe_expand_isr(replica_id, now_ms)
        hw_advanced = False
        if previous_leo != state.log_end_offset or request is not None:
            hw_advanced = self.maybe_increment_leader_hw(now_ms)
        return FollowerFetchUpdate(hw_advanced=hw_advanced, alter_partition=request)

    def is_follower_in_sync(self, replica_id: int) -> bool:
        """ISR expansion rule: the follower reached the HW and the start of this leader's epoch
        (KAFKA-7128: a new leader's HW may lag what the previous leader committed; with
        isr_join "high-watermark", Kafka 2.0's rule, the HW alone, L15)."""
        state = self.remote_replicas.get(replica_id)
        if state is None or self.leader_epoch_start_offset is None:
            return False
        leo = state.log_end_offset
        if leo < self.log.high_watermark:
            return False
        return self.behaviour.isr_join == "high-watermark" or leo >= self.leader_epoch_start_offset

    def maybe_expand_isr(self, replica_id: int, now_ms: int) -> AlterPartitionRequest | None:
        """Propose adding a caught-up follower; it counts for the HW at once (maximal ISR)."""
        del now_ms
        if not self.is_leader or self.partition_state.is_inflight:
            return None
        if replica_id in self.isr or replica_id not in self.replicas:
            return None
        if not self.is_follower_in_sync(replica_id):
            return None
        if not self._may_join_isr(replica_id):
            # Kafka's Partition.isReplicaIsrEligible (KIP-841, KIP-903): the controller would
            # answer INELIGIBLE_REPLICA, and the next fetch would propose it again.
            return None
        committed = CommittedPartitionState(self.isr)
        self.partition_state = PendingExpandIsr(self.isr, replica_id, committed)
        return self._alter_partition_request(self.isr | {replica_id})

    def _may_join_isr(self, replica_id: int) -> bool:
        """Kafka's isReplicaIsrEligible: not fenced nor shutting down (KIP-841; before 3.3,
        isr_eligibility off, fenced is allowed: MetadataImage.may_join_isr) and, with
        KIP-903, the fetch that showed it caught up came from the incarnation the metadata
        registers now (or carried no epoch, -1): a fetch of an old incarnation processed after a
        fast restart must not add the emptied new one."""
        if not self.is_replica_isr_eligible(replica_id):
            return False
        if not self.behaviour.isr_broker_epochs:
            return True
        fetched = self.remote_replicas[replica_id].broker_epoch
        return fetched == -1 or fetched == self.replica_broker_epoch(replica_id)

    def out_of_sync_replicas(self, now_ms: int) -> frozenset[int]:
        leader_leo = self.log.log_end_offset
        out = set()
        for rid in self.isr:
            if rid == self.local_broker_id:
                continue
            state = self.remote_replicas.get(rid)
            if state is None or not state.is_caught_up(
                leader_leo, now_ms, self.replica_lag_time_max_ms
            ):
                out.add(rid)
        return frozenset(out)

    def maybe_shrink_isr(self, now_ms: int) -> AlterPartitionRequest | None:
        """Propose dropping followers not caught up for replica.lag.time.max.ms.

        Maximal ISR: the dropped ones still count until the controller commits. Eager (legacy,
        L6): they stop counting now, and the HW may advance at once - callers must then retry
        delayed produces (compare high_watermark before and after).
        """
        if not self.is_leader or self.partition_state.is_inflight:
            return None
        out = self.out_of_sync_replicas(now_ms)
        if not out:
            return None
        committed = CommittedPartitionState(self.isr)
        self.partition_state = PendingShrinkIsr(self.isr, out, committed)
        request = self._alter_partition_request(self.isr - out)
        if self.behaviour.isr_update == "eager":
            self.maybe_increment_leader_hw(now_ms)
        return request

    def _isr_broker_epochs(self, isr: tuple[int, ...]) -> tuple[int, ...] | None:
        """KIP-903: each member's broker epoch as of its last fetch (the leader's own: -1, the
        request's top-level broker epoch covers it); None without the switch (v2)."""
        if not self.behaviour.isr_broker_epochs:
            return None
        return tuple(
            -1 if r == self.local_broker_id or r not in self.remote_replicas
            else self.remote_replicas[r].broker_epoch
            for r in isr
        )

    def _alter_partition_request(self, new_isr: frozenset[int]) -> AlterPartitionRequest:
        isr = tuple(sorted(new_isr))
        request = AlterPartitionRequest(
            topic=self.topic,
            partition=self.partition,
            broker_id=self.local_broker_id,
            leader_epoch=self.leader_epoch,
            new_isr=isr,
            partition_epoch=self.partition_epoch,
            isr_broker_epochs=self._isr_broker_epochs(isr),
        )
        self._inflight = request
        return request

    @property
    def pending_alter_partition(self) -> AlterPartitionRequest | None:
        """The ISR proposal waiting for the controller's answer, if any."""
        return self._inflight

    def on_alter_partition_response(
        self, request: AlterPartitionRequest, response: AlterPartitionResponse, now_ms: int
    ) -> bool:
        """Apply the controller's answer to `request`. Returns True if the HW advanced.

        A response for a proposal that is no longer in flight (leadership changed since) is
        ignored. OPERATION_NOT_ATTEMPTED / INELIGIBLE_REPLICA mean "not applied, your epoch is
        right": revert to the last committed ISR. Other errors leave the proposal pending until
        the next make_leader, because the controller may or may not have applied it.
        """
        if self._inflight is None or request != self._inflight or not self.is_leader:
            return False
        state = self.partition_state
        if not state.is_inflight:
            return False
        if response.error == Errors.NONE:
            if response.partition_epoch < self.partition_epoch:
                return False
            if response.leader_epoch != self.leader_epoch:
                return False
            self.partition_state = CommittedPartitionState(frozenset(response.isr))
            self.partition_epoch = response.partition_epoch
            self._inflight = None
            return self.maybe_increment_leader_hw(now_ms)
        if response.error in (Errors.OPERATION_NOT_ATTEMPTED, Errors.INELIGIBLE_REPLICA):
            assert not isinstance(state, CommittedPartitionState)
            self.partition_state = state.last_committed_state
            self._inflight = None
            return self.maybe_increment_leader_hw(now_ms)
        return False

    # --- reads -------------------------------------------------------------------------

    def _check_current_leader_epoch(self, current_leader_epoch: int) -> Errors:
        if current_leader_epoch == NO_CURRENT_LEADER_EPOCH:
            return Errors.NONE
        if current_leader_epoch < self.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        return Errors.NONE

    def last_offset_for_leader_epoch(
        self,
        leader_epoch: int,
        current_leader_epoch: int = NO_CURRENT_LEADER_EPOCH,
        fetch_only_from_leader: bool = True,
    ) -> EpochEndOffset:
        """The OffsetForLeaderEpoch answer: where `leader_epoch` ends in this log.

        Post-KIP-279 it is (largest epoch <= requested, its end offset); with the "kip-101"
        switch only the end offset is returned (epoch UNDEFINED), as first specified.
        """
        error = self._check_current_leader_epoch(current_leader_epoch)
        if error != Errors.NONE:
            return EpochEndOffset(error=error)
        if fetch_only_from_leader and not self.is_leader:
            return EpochEndOffset(error=Errors.NOT_LEADER_OR_FOLLOWER)
        epoch, end_offset = self._end_offset_for_epoch(leader_epoch)
        if self.behaviour.truncation == "kip-101":
            epoch = UNDEFINED_EPOCH
        return EpochEndOffset(error=Errors.NONE, leader_epoch=epoch, end_offset=end_offset)

    def _end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        return self.log.end_offset_for_epoch(leader_epoch)

    def read_for_fetch(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: FetchIsolation,
        last_fetched_epoch: int = UNDEFINED_EPOCH,
        current_leader_epoch: int = NO_CURRENT_LEADER_EPOCH,
        fetch_only_from_leader: bool = True,
        min_one_batch: bool = True,
    ) -> FetchPartitionResult:
        """Read for a Fetch. Errors come back in the result, never raised. At most `max_bytes`
        of whole batches, but the first batch whole if `min_one_batch` (Kafka's minOneMessage).

        With a LastFetchedEpoch the leader first checks the fetcher's log against its own: if
        that epoch ends earlier here (or is unknown here), the answer is DivergingEpoch with no
        records, and the follower truncates before fetching on.
        """
        error = self._check_current_leader_epoch(current_leader_epoch)
        if error == Errors.NONE and fetch_only_from_leader and not self.is_leader:
            error = Errors.NOT_LEADER_OR_FOLLOWER
        if error != Errors.NONE:
            return FetchPartitionResult(error=error)
        hw = self.log.high_watermark
        log_start = self.log.log_start_offset
        leo = self.log.log_end_offset
        if last_fetched_epoch != UNDEFINED_EPOCH:
            epoch, end_offset = self._end_offset_for_epoch(last_fetched_epoch)
            if epoch < last_fetched_epoch or end_offset < fetch_offset:
                return FetchPartitionResult(
                    high_watermark=hw,
                    log_start_offset=log_start,
                    log_end_offset=leo,
                    diverging_epoch=EpochEndOffset(leader_epoch=epoch, end_offset=end_offset),
                )
        if fetch_offset < log_start or fetch_offset > leo:
            return FetchPartitionResult(
                error=Errors.OFFSET_OUT_OF_RANGE,
                high_watermark=hw,
                log_start_offset=log_start,
                log_end_offset=leo,
            )
        if isolation is FetchIsolation.LOG_END or self.behaviour.consumer_visibility == "log-end":
            max_offset = leo
        else:
            max_offset = hw
        records = b""
        readable = fetch_offset < max_offset
        if readable and max_bytes > 0:
            records = self.log.read(fetch_offset, max_bytes, max_offset, min_one_batch)
        return FetchPartitionResult(
            high_watermark=hw, log_start_offset=log_start, log_end_offset=leo, records=records,
            readable=readable,
        )

    # --- observability -----------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Per-partition state for the admin endpoint (plain JSON-able data)."""
        state = self.partition_state
        entries = self.log.epoch_entries
        return {
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.local_broker_id,
            "role": self.role,
            "leader": self.leader_id,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "replicas": list(self.replicas),
            "isr": sorted(self.isr),
            "maximal_isr": sorted(self.maximal_isr),
            "isr_state": type(state).__name__,
            "log_start_offset": self.log.log_start_offset,
            "log_end_offset": self.log.log_end_offset,
            "high_watermark": self.log.high_watermark,
            "leader_epoch_start_offset": self.leader_epoch_start_offset,
            "epoch_cache": [[e.epoch, e.start_offset] for e in entries],
            "remote_replicas": {
                str(rid): s.as_dict() for rid, s in sorted(self.remote_replicas.items())
            },
        }

