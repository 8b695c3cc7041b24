"""Storage: Log, LogSegment, OffsetIndex, checkpoints, LeaderEpochCache, recovery.

Kafka's on-disk layout in Python, plain synchronous file I/O, no asyncio, no sockets:
`<log dir>/<topic>-<partition>/<20-digit base offset>.log|.index`, `leader-epoch-checkpoint`,
and per log dir `replication-offset-checkpoint`, `recovery-point-offset-checkpoint`,
`.kafka_cleanshutdown`. Batches (RecordBatch v2) are stored verbatim; the leader rewrites
only baseOffset and partitionLeaderEpoch. Entry points: LogManager (one per broker log dir)
and Log (one per partition). Not thread-safe: call from one thread.

Conventions other layers rely on:
- `Log.latest_epoch` / `LeaderEpochCache.latest_epoch` are None when no epoch is known
  (Kafka's empty OptionalInt); `end_offset_for` returns (-1, -1) for UNDEFINED cases.
- `Log.read(start, max_bytes, max_offset)` returns whole batches as bytes; a batch is left
  out if its last offset is >= max_offset (pass the HW for consumers, the LEO for followers).
- Every exception is a StorageError with `kafka_error_code`; an OSError inside a Log becomes
  KafkaStorageError (56) and takes that Log offline until restart, as Kafka does.
- A retried idempotent batch returns LogAppendInfo(duplicate=True) with the original offsets.
"""

from .epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache
from .errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTopicError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordBatchTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from .log import Log, LogAppendInfo, LogConfig, TimestampAndOffset
from .log_manager import LogManager
from .records import BatchHeader, Record, build_batch, decode_records, iter_batches
from .topic_partition import TopicPartition

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "BatchHeader",
    "CorruptRecordError",
    "DuplicateSequenceError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTopicError",
    "KafkaStorageError",
    "LeaderEpochCache",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "LogManager",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "Record",
    "RecordBatchTooLargeError",
    "StorageError",
    "TimestampAndOffset",
    "TopicPartition",
    "UnexpectedAppendOffsetError",
    "build_batch",
    "decode_records",
    "iter_batches",
]
