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
- a compacted topic (cleanup.policy has "compact") takes no record without a key
                                  -> INVALID_RECORD, with every keyless record's index in
  `record_errors` (Produce v8+ RecordErrors, KIP-467), so librdkafka fails those records with
  INVALID_RECORD and the rest of the batch with _INVALID_DIFFERENT_RECORD.

Per record the rules apply in Kafka's order (offsetDelta, key, timestamp) and the first record
breaking one decides the error. Kafka collects every record's error and answers
INVALID_TIMESTAMP if any is a timestamp error; here a batch with both a keyless record and a
bad timestamp gets the error of whichever comes first, and record_errors lists keyless records
only.

Where this differs from Kafka: Kafka rebuilds a compressed batch whose inner offsets are not
0..n-1 (old clients) and never checks inner offsets of uncompressed batches; this broker stores
batches verbatim, so it refuses them instead, which keeps every stored batch decodable with
consistent offsets. Kafka also accepts several batches per partition in one produce only for
magic < 2; this broker still accepts several v2 batches (its own tests append them).
Kafka 4.0's defaults (KIP-1030): log.message.timestamp.before.max.ms = Long.MAX_VALUE,
log.message.timestamp.after.max.ms = 3600000.

Two implementations of the per-record part (everything after the header rules): the Python
reference (_walk_python: records.decode_records, then the offsetDelta/timestamp loop) and a C
walk (_recordwalk.c, built by setup.py) that reaches the same verdict without making Record
objects, ~100x faster. Both share the bounded decompression (records.records_payload), and the
C walk's errors are turned into the reference's exception and message here (_native_error);
tests/unit/storage/test_validator_differential.py and `highwater bench validator` compare
them. The C walk is used when built, unless HIGHWATER_VALIDATOR=python.
"""

from __future__ import annotations

import os
from types import ModuleType

from .errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError
from .records import (
    COMPRESSION_NAMES,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    decode_records,
    records_payload,
)

_recordwalk: ModuleType | None
try:  # built by `pip install -e .` / the project wheel (setup.py); absent in a bare checkout
    from . import _recordwalk
except ImportError:
    _recordwalk = None

NO_TIMESTAMP = -1
DEFAULT_TIMESTAMP_BEFORE_MAX_MS = 2**63 - 1  # log.message.timestamp.before.max.ms
DEFAULT_TIMESTAMP_AFTER_MAX_MS = 3_600_000  # log.message.timestamp.after.max.ms (Kafka 4.0)

NATIVE = "native"
PYTHON = "python"
# Which walk the broker uses: the C one when it is built, unless HIGHWATER_VALIDATOR=python
# asks for the reference (the benchmark's turn-back; a way out should the two ever differ).
IMPLEMENTATION = (
    NATIVE if _recordwalk is not None and os.environ.get("HIGHWATER_VALIDATOR") != PYTHON
    else PYTHON
)  # fmt: skip


def validate_client_batch(
    view: bytes | memoryview,
    h: BatchHeader,
    *,
    now_ms: int,
    max_decompressed_bytes: int,
    timestamp_before_max_ms: int = DEFAULT_TIMESTAMP_BEFORE_MAX_MS,
    timestamp_after_max_ms: int = DEFAULT_TIMESTAMP_AFTER_MAX_MS,
    compacted: bool = False,
    implementation: str | None = None,
) -> None:
    """Raise CorruptRecordError / InvalidRecordError / InvalidTimestampError, or return.

    `implementation` picks the record walk (NATIVE or PYTHON; default IMPLEMENTATION): both
    raise the same class with the same message, the differential test's claim.
    """
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
    low = now_ms - timestamp_before_max_ms
    high = now_ms + timestamp_after_max_ms
    if (implementation or IMPLEMENTATION) == NATIVE:
        _walk_native(view, h, max_decompressed_bytes, low, high, where, compacted)
    else:
        _walk_python(view, h, max_decompressed_bytes, low, high, where, compacted)


def _walk_python(
    view: bytes | memoryview, h: BatchHeader, limit: int, low: int, high: int, where: str,
    compacted: bool,
) -> None:  # fmt: skip
    """The reference: decode every record, then check offsetDelta, key and timestamp of each."""
    records = decode_records(view, limit)
    for i, rec in enumerate(records):
        if rec.offset - h.base_offset != i:
            raise InvalidRecordError(
                f"record {i} of {where} has offsetDelta {rec.offset - h.base_offset}, "
                f"expected {i}"
            )
        if compacted and rec.key is None:
            raise _keyless_error([j for j, r in enumerate(records) if r.key is None])
        if rec.timestamp != NO_TIMESTAMP and not low <= rec.timestamp <= high:
            raise InvalidTimestampError(_timestamp_message(rec.timestamp, i, where, low, high))


KEYLESS_RECORD_MESSAGE = "Compacted topic cannot accept message without key"


def _keyless_error(indices: list[int]) -> InvalidRecordError:
    """Kafka's words (LogValidator.validateKey, processRecordErrors) for keyless records."""
    errors = [(i, KEYLESS_RECORD_MESSAGE) for i in indices]
    shown = ", ".join(f"(batchIndex={i}, message={m})" for i, m in errors[:3])
    return InvalidRecordError(
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        errors,
    )


def _timestamp_message(ts: int, i: int, where: str, low: int, high: int) -> str:
    return (
        f"timestamp {ts} of record {i} in {where} is out of range; it "
        f"should be within [{max(low, -1)}, {high}]"
    )


_MASK64 = (1 << 64) - 1
# Every timestamp the walk can compute is base (int64) + a 70-bit delta, so |ts| < 2**71:
# clamping the window to +-2**100 changes no verdict and lets it cross into C as 2 x 64 bits.
_WINDOW_BOUND = 1 << 100
# The walk's error codes (_recordwalk.c's enum) and _read_bytes' field names.
_VARINT_EOF, _VARINT_LONG, _LENGTH, _BYTES, _HEADER_COUNT = 1, 2, 3, 4, 5
_NULL_HEADER_KEY, _LENGTH_MISMATCH, _TRAILING, _OFFSET_DELTA, _TIMESTAMP = 6, 7, 8, 9, 10
_NULL_KEY = 11
_FIELDS = ("key", "value", "header key", "header value")


def _walk_native(
    view: bytes | memoryview, h: BatchHeader, limit: int, low: int, high: int, where: str,
    compacted: bool,
) -> None:  # fmt: skip
    """The same verdict as _walk_python, from one C pass over the records (no Record objects);
    decompression is shared with the reference (records_payload), so it is bounded alike."""
    assert _recordwalk is not None
    body = records_payload(view, h, limit)
    lo = max(-_WINDOW_BOUND, min(low, _WINDOW_BOUND))
    hi = max(-_WINDOW_BOUND, min(high, _WINDOW_BOUND))
    err = _recordwalk.walk(
        body, h.records_count, h.base_timestamp, lo >> 64, lo & _MASK64, hi >> 64, hi & _MASK64,
        int(compacted),
    )
    if err is not None:
        if err[0] == _NULL_KEY:
            # The batch decodes (the walk found no structural error): list every keyless one.
            raise _keyless_error([i for i, r in enumerate(decode_records(view, limit))
                                  if r.key is None])  # fmt: skip
        raise _native_error(err, h, where, low, high)


def _native_error(
    err: tuple[int, int, int, int, int], h: BatchHeader, where: str, low: int, high: int
) -> CorruptRecordError | InvalidTimestampError:
    """The reference's exception for the walk's (code, record, a, b, field): same class, same
    words (records._read_varint / _read_bytes / decode_records, _walk_python)."""
    code, i, a, b, field = err
    if code == _VARINT_EOF:
        return InvalidRecordError(f"varint runs past the end of the records at byte {a}")
    if code == _VARINT_LONG:
        return InvalidRecordError(f"varint longer than 10 bytes ending at byte {a}")
    if code == _LENGTH:
        return InvalidRecordError(f"record {i} of {where} has length {a}, only {b} bytes left")
    if code == _BYTES:
        return InvalidRecordError(f"{_FIELDS[field]} of {a} bytes runs past the end of the records")
    if code == _HEADER_COUNT:
        return InvalidRecordError(f"record {i} of {where}: invalid header count {a}")
    if code == _NULL_HEADER_KEY:
        return InvalidRecordError(f"record {i} of {where}: null header key")
    if code == _LENGTH_MISMATCH:
        return InvalidRecordError(
            f"record {i} of {where}: length says {a} bytes, fields used {b}"
        )
    if code == _TRAILING:
        return InvalidRecordError(f"{where}: {a} bytes left after its {h.records_count} records")
    if code == _OFFSET_DELTA:
        return InvalidRecordError(f"record {i} of {where} has offsetDelta {a}, expected {i}")
    if code == _TIMESTAMP:
        return InvalidTimestampError(_timestamp_message(a, i, where, low, high))
    raise AssertionError(f"unknown record walk error {err!r}")  # a C/Python mismatch


def _account_cpu(path: str) -> None:
    """`highwater bench broker`'s probe: wrap validate_client_batch to add up the CPU time of
    the thread running it, and write {"cpu_s", "batches", "implementation"} as JSON to `path`
    when the process exits. Installed only when HIGHWATER_VALIDATION_CPU_FILE names the file:
    otherwise nothing here runs, and it never changes a verdict."""
    import atexit
    import functools
    import json
    import time

    inner = validate_client_batch
    totals = {"cpu_s": 0.0, "batches": 0}

    @functools.wraps(inner)
    def timed(*args: object, **kwargs: object) -> None:
        start = time.thread_time()
        try:
            inner(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            totals["cpu_s"] += time.thread_time() - start
            totals["batches"] += 1

    def dump() -> None:
        with open(path, "w") as f:
            json.dump({**totals, "implementation": IMPLEMENTATION}, f)

    atexit.register(dump)
    globals()["validate_client_batch"] = timed


if os.environ.get("HIGHWATER_VALIDATION_CPU_FILE"):
    _account_cpu(os.environ["HIGHWATER_VALIDATION_CPU_FILE"])
