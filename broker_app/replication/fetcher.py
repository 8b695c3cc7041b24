"""ReplicaFetcherState: the follower side of replication for one partition, sans I/O.

Kafka's AbstractFetcherThread/ReplicaFetcherThread reduced to one partition's state machine:
- created when the Partition becomes follower (after `make_follower` returned True); it applies
  the configured truncation protocol at once:
  "high-watermark" truncates to the replica's own HW and starts fetching (pre-KIP-101, L1/L2);
  "kip-101"/"kip-279" start in state "truncating": send `build_offset_for_leader_epoch()` and feed
  the answer to `on_offset_for_leader_epoch_response()` (kip-279 may need several rounds);
  "diverging-epoch" starts fetching with LastFetchedEpoch and truncates on DivergingEpoch.
  A log without any epoch falls back to truncating to its HW, as Kafka does.
- state "fetching": `build_fetch()` → FetchRequestData; `on_fetch_response(result)` appends as
  follower, sets HW = min(leader HW, own LEO), or truncates on DivergingEpoch.
- state "out-of-range": the leader answered OFFSET_OUT_OF_RANGE; `build_list_offsets()` asks
  its latest then earliest offset, `on_list_offsets_response()` truncates as Kafka's
  fetchOffsetAndTruncate does and returns to "fetching".
- state "fenced": the leader said FENCED_LEADER_EPOCH; wait for new metadata (a new fetcher).
- state "failed": the leader's log ends below ours and behaviour.follower_ahead is "stop" with
  unclean election off for the topic: `on_list_offsets_response` raises
  LogTruncationNotAllowedError (Kafka <= 2.0 stops the broker, KAFKA-3410); nothing is sent.
The I/O edge owns sockets, retries and backoff; this class never sleeps or sends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker_app.replication.errors import Errors, InvalidStateError, LogTruncationNotAllowedError
from broker_app.replication.messages import (
    NO_CURRENT_LEADER_EPOCH,
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEndOffset,
    FetchPartitionResult,
    FetchRequestData,
    ListOffsetsAnswer,
    ListOffsetsRequestData,
    OffsetForLeaderEpochRequestData,
)
from broker_app.replication.partition import Partition
from broker_app.storage.errors import StorageError

TRUNCATING = "truncating"
FETCHING = "fetching"
OUT_OF_RANGE = "out-of-range"  # asking the leader's offsets with ListOffsets
FENCED = "fenced"
FAILED = "failed"  # the broker is stopping itself (follower_ahead "stop")
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


@dataclass(frozen=True)
class FetchOutcome:
    """What one fetch response did to the local log."""

    error: Errors = Errors.NONE
    appended_bytes: int = 0
    truncated_to: int | None = None
    high_watermark: int = -1
    detail: str = ""


class ReplicaFetcherState:
    def __init__(self, partition: Partition, max_bytes: int = 1 << 20,
                 unclean_allowed: Callable[[], bool] = lambda: False) -> None:
        """`unclean_allowed()`: unclean.leader.election.enable for this topic, read when the
        leader's log ends below ours (follower_ahead "stop" truncates when it is on)."""
        if partition.role != "follower":
            raise InvalidStateError(
                f"{partition.name}: a fetcher needs a follower partition, role is {partition.role}"
            )
        self.partition = partition
        self.log = partition.log
        self.behaviour = partition.behaviour
        self.leader_id = partition.leader_id
        self.leader_epoch = partition.leader_epoch
        self.replica_id = partition.local_broker_id
        self.max_bytes = max_bytes
        self.unclean_allowed = unclean_allowed
        self.truncations: list[int] = []  # every truncation point, for tests and timelines
        self.state = FETCHING
        self._list_offsets_timestamp = LATEST_TIMESTAMP
        latest = self.log.latest_epoch
        if self.behaviour.truncation == "high-watermark" or latest is None:
            # Pre-KIP-101 (or a log with no epoch to ask about): the own HW is the only
            # knowledge of what is committed, so everything above it goes.
            self._truncate(self.log.high_watermark)
        elif self.behaviour.uses_offset_for_leader_epoch:
            self.state = TRUNCATING

    def __repr__(self) -> str:
        return (
            f"ReplicaFetcherState({self.partition.name}@{self.replica_id} <- {self.leader_id} "
            f"epoch={self.leader_epoch} {self.state} leo={self.log.log_end_offset})"
        )

    @property
    def _current_leader_epoch(self) -> int:
        """The epoch this follower's requests carry (KIP-320), or none before Kafka 2.1."""
        fencing = self.behaviour.leader_epoch_fencing
        return self.leader_epoch if fencing else NO_CURRENT_LEADER_EPOCH

    # --- truncation ------------------------------------------------------------------------

    def build_offset_for_leader_epoch(self) -> OffsetForLeaderEpochRequestData:
        self._require(TRUNCATING)
        latest = self.log.latest_epoch
        return OffsetForLeaderEpochRequestData(
            replica_id=self.replica_id,
            current_leader_epoch=self._current_leader_epoch,
            leader_epoch=UNDEFINED_EPOCH if latest is None else latest,
        )

    def on_offset_for_leader_epoch_response(self, response: EpochEndOffset) -> int | None:
        """Apply the leader's answer; returns the offset truncated to (None if nothing cut).

        Stays "truncating" when another round is needed (kip-279 found an epoch this log does
        not have) or the leader could not answer yet (UNKNOWN_LEADER_EPOCH, not leader).
        """
        self._require(TRUNCATING)
        if response.error == Errors.FENCED_LEADER_EPOCH:
            self.state = FENCED
            return None
        if response.error != Errors.NONE:
            return None
        offset, complete = self._offset_truncation_state(response)
        truncated = self._truncate(offset)
        if complete:
            self.state = FETCHING
        return truncated

    def _offset_truncation_state(self, leader: EpochEndOffset) -> tuple[int, bool]:
        """Kafka's getOffsetTruncationState: (offset to truncate to, truncation complete?)."""
        leo = self.log.log_end_offset
        if leader.end_offset == UNDEFINED_EPOCH_OFFSET:
            # The leader knows no such epoch range: fall back to what is known committed.
            return min(self.log.high_watermark, leo), True
        if leader.leader_epoch == UNDEFINED_EPOCH:
            # KIP-101 as first specified: one end offset, no epoch to compare lineages with.
            return min(leader.end_offset, leo), True
        own_epoch, own_end = self.log.end_offset_for_epoch(leader.leader_epoch)
        if own_end == UNDEFINED_EPOCH_OFFSET:
            return min(leader.end_offset, leo), True
        if own_epoch != leader.leader_epoch:
            # This log never had the leader's epoch: cut back to where our largest epoch below
            # it ends and ask again about that one (KIP-279's iteration).
            return min(own_end, leo), False
        return min(own_end, leader.end_offset, leo), True

    def _truncate(self, offset: int) -> int | None:
        # Even at or past the log end the log is asked (ReplicaFetcher -> Partition.truncateTo
        # in Kafka): it drops an epoch-cache entry at its end that the leader lacks
        # (KAFKA-10706), or the next fetch carries that epoch again and never makes progress.
        if offset < 0 or not self.log.truncate_to(offset):
            return None
        self.truncations.append(offset)
        return offset

    # --- fetching --------------------------------------------------------------------------

    def build_fetch(self) -> FetchRequestData:
        self._require(FETCHING)
        last_fetched_epoch = UNDEFINED_EPOCH
        if self.behaviour.uses_last_fetched_epoch:
            latest = self.log.latest_epoch
            last_fetched_epoch = UNDEFINED_EPOCH if latest is None else latest
        return FetchRequestData(
            replica_id=self.replica_id,
            fetch_offset=self.log.log_end_offset,
            current_leader_epoch=self._current_leader_epoch,
            log_start_offset=self.log.log_start_offset,
            max_bytes=self.max_bytes,
            last_fetched_epoch=last_fetched_epoch,
        )

    def on_fetch_response(self, result: FetchPartitionResult) -> FetchOutcome:
        """Apply the leader's fetch answer for the request last built by build_fetch()."""
        self._require(FETCHING)
        if result.error == Errors.FENCED_LEADER_EPOCH:
            self.state = FENCED
            return self._outcome(result.error, detail="leader has a newer epoch; await metadata")
        if result.error == Errors.OFFSET_OUT_OF_RANGE:
            return self._on_out_of_range(result)
        if result.error != Errors.NONE:
            # UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER: metadata is propagating; retry.
            return self._outcome(result.error)
        if result.diverging_epoch is not None:
            offset, _complete = self._offset_truncation_state(result.diverging_epoch)
            # An incomplete truncation needs no extra state: the next fetch carries the new
            # LastFetchedEpoch and the leader answers DivergingEpoch again if still needed.
            return self._outcome(Errors.NONE, truncated_to=self._truncate(offset))
        appended = 0
        if result.records:
            try:
                self.log.append_as_follower(result.records)
            except StorageError as exc:
                return self._outcome(
                    Errors(exc.kafka_error_code)
                    if exc.kafka_error_code in Errors._value2member_map_
                    else Errors.UNKNOWN_SERVER_ERROR,
                    detail=f"follower append failed: {exc}",
                )
            appended = len(result.records)
        self._update_high_watermark(result.high_watermark)
        # DeleteRecords on the leader: the follower drops the same prefix (Kafka's
        # ReplicaFetcherThread.processPartitionData, maybeIncrementLogStartOffset).
        if result.log_start_offset > self.log.log_start_offset:
            self.log.maybe_increment_log_start_offset(result.log_start_offset)
        return self._outcome(Errors.NONE, appended_bytes=appended)

    def _update_high_watermark(self, leader_hw: int) -> None:
        # The follower's HW is the leader's, capped by what it holds itself.
        if leader_hw < 0:
            return
        new_hw = min(leader_hw, self.log.log_end_offset)
        if new_hw != self.log.high_watermark:
            self.log.update_high_watermark(new_hw)

    def _on_out_of_range(self, result: FetchPartitionResult) -> FetchOutcome:
        # A Fetch response carries the leader's log start but never its log end: ask with
        # ListOffsets, latest first (Kafka's fetchOffsetAndTruncate).
        self.state = OUT_OF_RANGE
        self._list_offsets_timestamp = LATEST_TIMESTAMP
        return self._outcome(
            Errors.OFFSET_OUT_OF_RANGE,
            detail=f"fetch offset {self.log.log_end_offset} out of the leader's range "
            f"(leader log start {result.log_start_offset}); asking ListOffsets",
        )

    def build_list_offsets(self) -> ListOffsetsRequestData:
        self._require(OUT_OF_RANGE)
        return ListOffsetsRequestData(
            replica_id=self.replica_id,
            current_leader_epoch=self._current_leader_epoch,
            timestamp=self._list_offsets_timestamp,
        )

    def on_list_offsets_response(self, answer: ListOffsetsAnswer) -> int | None:
        """Apply the leader's latest or earliest offset; returns the offset truncated to.

        Latest below our LEO (the leader lost what we hold: an unclean election, a power
        loss): truncate to it and fetch on; with follower_ahead "stop" and unclean election
        off, raise LogTruncationNotAllowedError instead (state "failed").
        Otherwise ask the earliest: if it is above our LEO the leader deleted what comes next,
        so start over empty at its log start; else fetching from our LEO is fine again.
        A failed answer keeps the state (asked again next round); FENCED_LEADER_EPOCH fences.
        """
        self._require(OUT_OF_RANGE)
        if answer.error == Errors.FENCED_LEADER_EPOCH:
            self.state = FENCED
            return None
        if answer.error != Errors.NONE or answer.offset < 0:
            return None
        leo = self.log.log_end_offset
        if self._list_offsets_timestamp == LATEST_TIMESTAMP:
            if answer.offset < leo:
                if self.behaviour.follower_ahead == "stop" and not self.unclean_allowed():
                    self.state = FAILED
                    raise LogTruncationNotAllowedError(
                        f"{self.partition.name}: log truncation is not allowed: leader "
                        f"{self.leader_id}'s latest offset {answer.offset} is less than this "
                        f"replica's {leo} (follower-ahead stop, unclean election off)"
                    )
                self.state = FETCHING
                return self._truncate(answer.offset)
            self._list_offsets_timestamp = EARLIEST_TIMESTAMP
            return None
        self.state = FETCHING
        if answer.offset > leo:
            self.log.truncate_fully_and_start_at(answer.offset)
            self.truncations.append(answer.offset)
            return answer.offset
        return None

    # --- helpers ---------------------------------------------------------------------------

    def _outcome(self, error: Errors, **kwargs: object) -> FetchOutcome:
        return FetchOutcome(error=error, high_watermark=self.log.high_watermark, **kwargs)  # type: ignore[arg-type]

    def _require(self, state: str) -> None:
        if self.state != state:
            raise InvalidStateError(
                f"{self.partition.name}: fetcher is {self.state}, this call needs {state}"
            )
