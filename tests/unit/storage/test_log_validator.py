"""LogValidator: one test per rule a client batch must pass before a leader appends it, and
bounded decompression (a lying or huge payload is refused, never expanded in full)."""

from __future__ import annotations

import gzip
import struct
import zlib

import pytest

from broker_app.storage import Log, build_batch
from broker_app.storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
)
from broker_app.storage.log_validator import validate_client_batch
from broker_app.storage.records import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CRC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    DecompressedTooLargeError,
    compute_crc,
    decompress,
    parse_header,
)

NOW = 1_700_000_000_000


def _fix_crc(b: bytearray) -> bytes:
    struct.pack_into(">I", b, CRC_OFFSET, compute_crc(b))
    return bytes(b)


def _patch(batch: bytes, fmt: str, offset: int, value: int) -> bytes:
    b = bytearray(batch)
    struct.pack_into(fmt, b, offset, value)
    return _fix_crc(b)


def _with_body(batch: bytes, body: bytes, *, count: int | None = None) -> bytes:
    b = bytearray(batch[:RECORD_BATCH_OVERHEAD]) + body
    struct.pack_into(">i", b, 8, len(b) - 12)
    if count is not None:
        struct.pack_into(">i", b, 57, count)
        struct.pack_into(">i", b, 23, count - 1)
    return _fix_crc(b)


def _check(batch: bytes, **kw) -> None:
    validate_client_batch(batch, parse_header(batch), now_ms=NOW,
                          max_decompressed_bytes=kw.pop("limit", 1 << 20), **kw)  # fmt: skip


def _good(n: int = 2, **kw) -> bytes:
    kw.setdefault("timestamp", NOW)
    return build_batch([(b"k", b"v%d" % i) for i in range(n)], **kw)


@pytest.mark.parametrize("codec", [0, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4,
                                   COMPRESSION_ZSTD])  # fmt: skip
def test_good_batches_of_every_codec_pass(codec: int) -> None:
    _check(_good(3, compression=codec))


def test_unknown_codec_is_corrupt_message() -> None:
    bad = _patch(_good(), ">h", ATTRIBUTES_OFFSET, 5)
    with pytest.raises(CorruptRecordError, match="unknown compression codec 5") as e:
        _check(bad)
    assert e.value.kafka_error_code == 2


def test_negative_last_offset_delta_is_invalid_record() -> None:
    with pytest.raises(InvalidRecordError, match="invalid offset range"):
        _check(_patch(_good(), ">i", 23, -1))


def test_zero_record_count_is_invalid_record() -> None:
    b = _patch(_patch(_good(1), ">i", 57, 0), ">i", 23, 0)
    with pytest.raises(InvalidRecordError, match="invalid reported count 0"):
        _check(b)


def test_count_not_matching_last_offset_delta_is_invalid_record() -> None:
    with pytest.raises(InvalidRecordError, match="inconsistent offset range") as e:
        _check(_patch(_good(2), ">i", 57, 3))
    assert e.value.kafka_error_code == 87


def test_control_batch_from_a_client_is_invalid_record() -> None:
    with pytest.raises(InvalidRecordError, match="control records"):
        _check(_good(control=True))


def test_producer_id_with_negative_sequence_is_invalid_record() -> None:
    with pytest.raises(InvalidRecordError, match="invalid sequence number -1"):
        _check(_good(producer_id=7, producer_epoch=0, base_sequence=-1))


def test_transactional_without_producer_id_is_invalid_record() -> None:
    with pytest.raises(InvalidRecordError, match="no producer id"):
        _check(_good(transactional=True))


def test_log_append_time_from_a_producer_is_invalid_timestamp() -> None:
    with pytest.raises(InvalidTimestampError, match="LogAppendTime") as e:
        _check(_patch(_good(), ">h", ATTRIBUTES_OFFSET, 0x08))
    assert e.value.kafka_error_code == 32


def test_timestamp_too_far_in_the_future_is_invalid_timestamp() -> None:
    with pytest.raises(InvalidTimestampError, match="out of range"):
        _check(_good(timestamp=NOW + 3_600_001))
    _check(_good(timestamp=NOW + 3_600_000))
    _check(_good(timestamp=0))  # before.max.ms is unbounded by default, as in Kafka
    with pytest.raises(InvalidTimestampError):
        _check(_good(timestamp=NOW - 10), timestamp_before_max_ms=5)


def test_record_count_larger_than_the_records_is_invalid_record() -> None:
    good = _good(2)
    with pytest.raises(InvalidRecordError, match="varint runs past the end"):
        _check(_with_body(good, good[RECORD_BATCH_OVERHEAD:], count=3))


def test_trailing_bytes_after_the_records_are_invalid_record() -> None:
    good = _good(2)
    with pytest.raises(InvalidRecordError, match="bytes left after its 2 records"):
        _check(_with_body(good, good[RECORD_BATCH_OVERHEAD:] + b"\x00\x00"))


def test_record_length_past_the_end_is_invalid_record() -> None:
    good = _good(1)
    body = bytearray(good[RECORD_BATCH_OVERHEAD:])
    body[0] = 0x7E  # zigzag 63: a record claiming 63 bytes
    with pytest.raises(InvalidRecordError, match="has length 63"):
        _check(_with_body(good, bytes(body)))


def test_negative_header_count_is_invalid_record() -> None:
    good = _good(1)
    body = bytearray(good[RECORD_BATCH_OVERHEAD:])
    assert body[-1] == 0  # header count 0 is the record's last byte
    body[-1] = 0x01  # zigzag -1
    with pytest.raises(InvalidRecordError, match="invalid header count -1"):
        _check(_with_body(good, bytes(body)))


def test_inner_offset_delta_out_of_order_is_invalid_record() -> None:
    good = _good(2)
    body = bytearray(good[RECORD_BATCH_OVERHEAD:])
    # record 0: length, attributes, timestampDelta 0, offsetDelta 0 (zigzag) at byte 3
    assert body[3] == 0
    body[3] = 0x02  # offsetDelta 1
    with pytest.raises(InvalidRecordError, match="offsetDelta 1, expected 0"):
        _check(_with_body(good, bytes(body)))


def test_compressed_inner_records_are_validated_too() -> None:
    inner = _good(2)[RECORD_BATCH_OVERHEAD:] + b"\x00"  # a trailing byte inside the payload
    b = _with_body(_good(2, compression=COMPRESSION_GZIP), gzip.compress(inner))
    with pytest.raises(InvalidRecordError, match="bytes left after"):
        _check(b)


def test_payload_that_does_not_decompress_is_corrupt_message() -> None:
    b = _with_body(_good(2, compression=COMPRESSION_ZSTD), b"\x28\xb5\x2f\xfd garbage")
    with pytest.raises(CorruptRecordError, match="cannot decompress|zstd") as e:
        _check(b)
    assert e.value.kafka_error_code == 2


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4,
                                   COMPRESSION_ZSTD])  # fmt: skip
def test_decompression_stops_at_the_limit(codec: int) -> None:
    from broker_app.storage.records import compress

    bomb = compress(codec, b"\x00" * (4 << 20))  # 4 MiB of zeros, a few KB compressed
    assert len(bomb) < 300_000
    with pytest.raises(DecompressedTooLargeError, match="beyond the 1048576-byte limit"):
        decompress(codec, bomb, 1 << 20)
    assert len(decompress(codec, bomb, 4 << 20)) == 4 << 20


def test_snappy_block_claiming_a_huge_size_is_refused_before_decoding() -> None:
    raw = b"\xff\xff\xff\xff\x0f" + b"\x00" * 8  # uncompressed length 2^32-1
    with pytest.raises(DecompressedTooLargeError):
        decompress(COMPRESSION_SNAPPY, raw, 1 << 20)


def test_truncated_gzip_is_corrupt() -> None:
    data = zlib.compress(b"x" * 100)  # zlib, not gzip framing
    with pytest.raises(zlib.error):
        decompress(COMPRESSION_GZIP, data, 1 << 20)
    with pytest.raises(CorruptRecordError, match="end marker"):
        decompress(COMPRESSION_GZIP, gzip.compress(b"x" * 1000)[:-9], 1 << 20)


def test_leader_append_refuses_an_invalid_batch_and_stores_nothing(tmp_path) -> None:
    lg = Log.open(tmp_path / "t-0")
    try:
        with pytest.raises(InvalidRecordError, match="in append to t-0"):
            lg.append_as_leader(_patch(_good(2), ">i", 57, 3), 0)
        assert lg.log_end_offset == 0
        lg.append_as_leader(build_batch([(None, b"ok")]), 0)
        assert lg.log_end_offset == 1
    finally:
        lg.close()
