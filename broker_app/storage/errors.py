"""Errors the storage layer raises, one class per Kafka error code.

Contract: every class carries `kafka_error_code` (Kafka's protocol numbering) so the
network server can map an exception to a response error code without a lookup table.
Messages name what is wrong and where (file, position, offset, field).
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class; UNKNOWN_SERVER_ERROR unless a subclass says otherwise."""

    kafka_error_code: int = -1


class CorruptRecordError(StorageError):
    """CORRUPT_MESSAGE: bad CRC, bad magic, length out of range, torn batch."""

    kafka_error_code = 2


class InvalidRecordError(CorruptRecordError):
    """INVALID_RECORD: a well-formed batch that breaks a rule (e.g. count mismatch).

    Subclass of CorruptRecordError so `except CorruptRecordError` catches every
    record-level problem; the error code still distinguishes them.
    """

    kafka_error_code = 87

    def __init__(self, message: str, record_errors: list[tuple[int, str]] | None = None) -> None:
        super().__init__(message)
        # Produce v8+ RecordErrors (KIP-467): (index in the batch, message) of each record the
        # batch was refused for; empty when the whole batch is at fault.
        self.record_errors = record_errors or []


class OffsetOutOfRangeError(StorageError):
    """OFFSET_OUT_OF_RANGE: read below log start or above the log end offset."""

    kafka_error_code = 1


class RecordBatchTooLargeError(StorageError):
    """MESSAGE_TOO_LARGE: a batch larger than max_batch_bytes."""

    kafka_error_code = 10


class UnsupportedForMessageFormatError(StorageError):
    """UNSUPPORTED_FOR_MESSAGE_FORMAT: magic 0/1 message sets (only magic 2 is stored)."""

    kafka_error_code = 43


class OutOfOrderSequenceError(StorageError):
    """OUT_OF_ORDER_SEQUENCE_NUMBER: an idempotent producer skipped a sequence number."""

    kafka_error_code = 45


class DuplicateSequenceError(StorageError):
    """DUPLICATE_SEQUENCE_NUMBER: the batch repeats one of the producer's last 5 batches.

    Carries the offsets the original batch got, so the leader acknowledges the retry
    with them instead of writing the data twice (Kafka's behaviour since 0.11).
    """

    kafka_error_code = 46

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class InvalidProducerEpochError(StorageError):
    """INVALID_PRODUCER_EPOCH: the batch's producer epoch is older than the last seen."""

    kafka_error_code = 47


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose first offset is below the log end offset.

    Kafka raises UnexpectedAppendOffsetException here; it has no wire code of its own.
    """

    kafka_error_code = -1


class InvalidTopicError(StorageError):
    """INVALID_TOPIC_EXCEPTION: a topic name Kafka would not accept (legal: [a-zA-Z0-9._-])."""

    kafka_error_code = 17


class KafkaStorageError(StorageError):
    """KAFKA_STORAGE_ERROR: the log directory is unusable (I/O error, closed log)."""

    kafka_error_code = 56


class CheckpointError(StorageError):
    """A malformed checkpoint file; the message names the file and the line."""

    kafka_error_code = 56


class InvalidTimestampError(StorageError):
    """A record's CreateTime is outside the broker's accepted window, or a producer set
    LogAppendTime (Kafka's InvalidTimestampException)."""

    kafka_error_code = 32
