"""How an append is decided, shared by every ReplicaLog implementation (file and memory).

Kafka's LogValidator + the offset/epoch/producer-state part of UnifiedLog.append, without the
bytes' destination: `prepare_leader_append` / `prepare_follower_append` validate every batch
first (nothing is written if one is bad), assign or check offsets, stamp the leader epoch,
stage the producer-state changes and assign a new leader epoch in the epoch cache. The caller
then writes `PreparedAppend.data` (segments on disk, or the in-memory page cache) and calls
`commit()`. The epoch cache is updated before the data is written, so a crash in between
leaves an entry beyond the LEO, which the next open truncates away (as in Kafka).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .epoch_cache import LeaderEpochCache
from .errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordBatchTooLargeError,
    UnexpectedAppendOffsetError,
)
from .log_validator import (
    DEFAULT_TIMESTAMP_AFTER_MAX_MS,
    DEFAULT_TIMESTAMP_BEFORE_MAX_MS,
    validate_client_batch,
)
from .producer_state import ProducerAppend, ProducerStateManager
from .records import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    BatchHeader,
    iter_batches,
    stamp_pieces,
    validate_batch,
)

if TYPE_CHECKING:
    from .log import LogConfig


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    first_offset: int
    last_offset: int
    num_records: int
    max_timestamp: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class AppendLimits:
    """What validation needs: LogConfig's size caps and LogValidator bounds, and the wall
    clock's now (record timestamps are checked against it)."""

    segment_bytes: int
    max_batch_bytes: int
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    timestamp_before_max_ms: int = DEFAULT_TIMESTAMP_BEFORE_MAX_MS
    timestamp_after_max_ms: int = DEFAULT_TIMESTAMP_AFTER_MAX_MS
    now_ms: int = 0
    compacted: bool = False

    @classmethod
    def of(cls, config: LogConfig, now_ms: int) -> AppendLimits:
        return cls(
            config.segment_bytes,
            config.max_batch_bytes,
            config.max_decompressed_bytes,
            config.timestamp_before_max_ms,
            config.timestamp_after_max_ms,
            now_ms,
            config.compacted,
        )


@dataclass
class PreparedAppend:
    """A validated append: write `data` (empty: nothing to write), then `commit()`."""

    info: LogAppendInfo
    data: bytes
    staged: ProducerAppend | None

    def commit(self) -> None:
        if self.staged is not None:
            self.staged.commit()


def analyze(
    records: bytes | memoryview, limits: AppendLimits, name: str, *, leader: bool
) -> list[tuple[BatchHeader, memoryview]]:
    """Frame and validate every batch before anything is written."""
    where = f"in append to {name}"
    try:
        batches = list(iter_batches(records, allow_partial_tail=not leader))
    except CorruptRecordError as exc:
        raise type(exc)(f"{exc} {where}") from exc
    total = sum(h.size for h, _ in batches)
    if leader and total > limits.segment_bytes:
        raise RecordBatchTooLargeError(
            f"batch size {total} bytes {where} exceeds the segment size {limits.segment_bytes}"
        )
    for h, view in batches:
        if leader and h.size > limits.max_batch_bytes:
            raise RecordBatchTooLargeError(
                f"batch at position of baseOffset {h.base_offset} is {h.size} bytes {where}, "
                f"above max_batch_bytes {limits.max_batch_bytes}"
            )
        try:
            validate_batch(view, h)
            if leader:  # Kafka's LogValidator: only what clients send is checked this deep
                validate_client_batch(
                    view, h, now_ms=limits.now_ms,
                    max_decompressed_bytes=limits.max_decompressed_bytes,
                    timestamp_before_max_ms=limits.timestamp_before_max_ms,
                    timestamp_after_max_ms=limits.timestamp_after_max_ms,
                    compacted=limits.compacted,
                )  # fmt: skip
        except InvalidRecordError as exc:
            raise InvalidRecordError(f"{exc} {where}", exc.record_errors) from exc
        except (CorruptRecordError, InvalidTimestampError) as exc:
            raise type(exc)(f"{exc} {where}") from exc
        if h.is_transactional and h.producer_id < 0:
            raise InvalidRecordError(f"transactional batch without a producer id {where}")
    return batches


def _maybe_assign_epoch(cache: LeaderEpochCache, epoch: int, start_offset: int) -> None:
    latest = cache.latest_epoch
    if epoch >= 0 and (latest is None or epoch > latest):
        cache.assign(epoch, start_offset)


def prepare_leader_append(
    records: bytes | memoryview,
    leader_epoch: int,
    log_end_offset: int,
    limits: AppendLimits,
    name: str,
    producer_state: ProducerStateManager,
    epoch_cache: LeaderEpochCache,
) -> PreparedAppend:
    """Offsets from the LEO, the leader epoch stamped; a retried duplicate writes nothing."""
    batches = analyze(records, limits, name, leader=True)
    if not batches:
        raise InvalidRecordError(f"append to {name} holds no record batch")
    first_offset = offset = log_end_offset
    staged = producer_state.begin(origin_client=True)
    out: list[bytes | memoryview] = []  # pieces of the stamped batches, joined once below
    num_records = 0
    max_ts = -1
    for h, view in batches:
        last = offset + h.last_offset_delta
        try:
            staged.check_and_update(h, offset, last)
        except DuplicateSequenceError as dup:
            if len(batches) == 1:
                info = LogAppendInfo(dup.first_offset, dup.last_offset, h.records_count,
                                     h.max_timestamp, duplicate=True)  # fmt: skip
                return PreparedAppend(info, b"", None)
            raise
        out += stamp_pieces(view, offset, leader_epoch)
        num_records += h.records_count
        max_ts = max(max_ts, h.max_timestamp)
        offset = last + 1
    _maybe_assign_epoch(epoch_cache, leader_epoch, first_offset)
    info = LogAppendInfo(first_offset, offset - 1, num_records, max_ts)
    return PreparedAppend(info, b"".join(out), staged)


def prepare_follower_append(
    records: bytes | memoryview,
    log_end_offset: int,
    limits: AppendLimits,
    name: str,
    producer_state: ProducerStateManager,
    epoch_cache: LeaderEpochCache,
) -> PreparedAppend:
    """Offsets and epochs kept as sent; a trailing partial batch is ignored (first/last -1
    when no whole batch is present)."""
    batches = analyze(records, limits, name, leader=False)
    if not batches:
        return PreparedAppend(LogAppendInfo(-1, -1, 0, -1), b"", None)
    first_offset = batches[0][0].base_offset
    if first_offset < log_end_offset:
        raise UnexpectedAppendOffsetError(
            f"follower append to {name} starts at offset {first_offset}, "
            f"below the log end offset {log_end_offset}"
        )
    prev_last = first_offset - 1
    for h, _ in batches:
        if h.base_offset <= prev_last:
            raise InvalidRecordError(
                f"follower append to {name}: batch at offset {h.base_offset} does "
                f"not follow offset {prev_last}"
            )
        prev_last = h.last_offset
    staged = producer_state.begin(origin_client=False)
    for h, _ in batches:
        staged.check_and_update(h, h.base_offset, h.last_offset)
        _maybe_assign_epoch(epoch_cache, h.partition_leader_epoch, h.base_offset)
    total = sum(h.size for h, _ in batches)
    info = LogAppendInfo(
        first_offset,
        prev_last,
        sum(h.records_count for h, _ in batches),
        max(h.max_timestamp for h, _ in batches),
    )
    return PreparedAppend(info, bytes(memoryview(records)[:total]), staged)
