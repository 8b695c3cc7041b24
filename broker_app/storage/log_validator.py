"""LogValidator: the rules a client's record batch must pass before a leader appends it.

After Kafka's LogValidator.validateBatch / validateRecord (storage/internals/log), applied to
one framed v2 batch whose length, magic and CRC records.validate_batch already checked:

- codec: attributes name one of none/gzip/snappy/lz4/zstd            -> CORRUPT_MESSAGE
- offsets: lastOffsetDelta >= 0, recordsCount > 0 and == lastOffsetDelta + 1 -> INVALID_RECORD
- control batches are not written by clients                         -> INVALID_RECORD
- a producer id needs a base sequence >= 0; transactional needs a producer id -> INVALID_RECORD
- the inner records decode: the payload decompresses within `max_decompressed_bytes`
  (CORRUPT_MESSAGE otherwise), exactly recordsCount records, no trailing bytes, lengths and
  header counts inside the record                                    -> INVALID_RECORD
- record i carries offsetDelta i                                     -> INVALID_RECORD
- timestamps: a producer may not set LogAppendTime; a CreateTime record timestamp (not -1)
  must be within [now - before_max_ms, now + after_max_ms]           -> INVALID_TIMESTAMP

Where this differs from Kafka: Kafka rebuilds a compressed batch whose inner offsets are not
0..n-1 (old clients) and never checks inner offsets of uncompressed batches; this broker stores
batches verbatim, so it refuses them instead, which keeps every stored batch decodable with
consistent offsets. Kafka also accepts several batches per partition in one produce only for
magic < 2; this broker still accepts several v2 batches (its own tests append them).
Kafka 4.0's defaults (KIP-1030): log.message.timestamp.before.max.ms = Long.MAX_VALUE,
log.message.timestamp.after.max.ms = 3600000.
"""

from __future__ import annotations

from .errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError
from .records import (
    COMPRESSION_NAMES,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    decode_records,
)

NO_TIMESTAMP = -1
DEFAULT_TIMESTAMP_BEFORE_MAX_MS = 2**63 - 1  # log.message.timestamp.before.max.ms
DEFAULT_TIMESTAMP_AFTER_MAX_MS = 3_600_000  # log.message.timestamp.after.max.ms (Kafka 4.0)


def validate_client_batch(
    view: bytes | memoryview,
    h: BatchHeader,
    *,
    now_ms: int,
    max_decompressed_bytes: int,
    timestamp_before_max_ms: int = DEFAULT_TIMESTAMP_BEFORE_MAX_MS,
    timestamp_after_max_ms: int = DEFAULT_TIMESTAMP_AFTER_MAX_MS,
) -> None:
    """Raise CorruptRecordError / InvalidRecordError / InvalidTimestampError, or return."""
    where = f"batch at baseOffset {h.base_offset}"
    if h.compression not in COMPRESSION_NAMES:
        raise CorruptRecordError(f"unknown compression codec {h.compression} in {where}")
    if h.last_offset_delta < 0:
        raise InvalidRecordError(
            f"{where} has an invalid offset range: lastOffsetDelta {h.last_offset_delta}"
        )
    if h.records_count <= 0:
        raise InvalidRecordError(f"invalid reported count {h.records_count} for {where}")
    if h.records_count != h.last_offset_delta + 1:
        raise InvalidRecordError(
            f"inconsistent offset range (lastOffsetDelta {h.last_offset_delta}) and "
            f"count of records {h.records_count} in {where}"
        )
    if h.is_control:
        raise InvalidRecordError(f"clients are not allowed to write control records ({where})")
    if h.has_producer_id and h.base_sequence < 0:
        raise InvalidRecordError(
            f"invalid sequence number {h.base_sequence} with producerId {h.producer_id} "
            f"in {where}"
        )
    if h.is_transactional and not h.has_producer_id:
        raise InvalidRecordError(f"transactional {where} has no producer id")
    if h.attributes & TIMESTAMP_TYPE_MASK:
        raise InvalidTimestampError(
            f"{where}: producers may not set the timestamp type to LogAppendTime"
        )
    records = decode_records(view, max_decompressed_bytes)
    low = now_ms - timestamp_before_max_ms
    high = now_ms + timestamp_after_max_ms
    for i, rec in enumerate(records):
        if rec.offset - h.base_offset != i:
            raise InvalidRecordError(
                f"record {i} of {where} has offsetDelta {rec.offset - h.base_offset}, "
                f"expected {i}"
            )
        if rec.timestamp != NO_TIMESTAMP and not low <= rec.timestamp <= high:
            raise InvalidTimestampError(
                f"timestamp {rec.timestamp} of record {i} in {where} is out of range; it "
                f"should be within [{max(low, -1)}, {high}]"
            )
