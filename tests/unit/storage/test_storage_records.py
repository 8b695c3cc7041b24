"""RecordBatch v2: build/parse, stamping keeps the CRC, corruption detected, codecs verbatim."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from broker_app.storage.errors import CorruptRecordError, InvalidRecordError
from broker_app.storage.records import (
    COMPRESSION_NAMES,
    INT32_MAX,
    build_batch,
    compute_crc,
    decode_records,
    increment_sequence,
    iter_batches,
    parse_header,
    stamp_batch,
    validate_batch,
)

CODECS = [0, 1, 2, 3, 4]


def test_build_and_parse_header_fields():
    b = build_batch([(b"k", b"hello"), (None, b"world")], producer_id=7, producer_epoch=3,
                    base_sequence=10, epoch=4, timestamp=1234)  # fmt: skip
    h = validate_batch(b)
    assert (h.base_offset, h.last_offset, h.records_count, h.magic) == (0, 1, 2, 2)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (7, 3, 10, 11)
    assert h.partition_leader_epoch == 4 and h.size == len(b) == 12 + h.batch_length
    assert h.max_timestamp == 1234 and not h.is_transactional and not h.is_control
    recs = decode_records(b)
    assert [(r.offset, r.key, r.value, r.sequence) for r in recs] == [
        (0, b"k", b"hello", 10),
        (1, None, b"world", 11),
    ]


def test_stamp_rewrites_only_offset_and_epoch_and_crc_stays_valid():
    b = build_batch([(None, b"a"), (None, b"b"), (None, b"c")])
    s = stamp_batch(b, 1_000_000_000_000, 42)
    h = validate_batch(s)  # would raise on CRC mismatch
    assert (h.base_offset, h.last_offset, h.partition_leader_epoch) == (
        1_000_000_000_000, 1_000_000_000_002, 42,
    )  # fmt: skip
    assert s[17:] == b[17:]  # everything from the CRC on is byte-identical
    assert DefaultRecordBatch(bytearray(s)).validate_crc()  # an independent CRC check agrees


def test_stamp_from_views_and_several_batches_in_one_leader_append():
    """stamp_batch joins views (one copy): same bytes from bytes and memoryview input, bytes
    8..12 and 16.. untouched; a leader append of several batches stamps each at its offset."""
    from broker_app.storage.append import AppendLimits, prepare_leader_append
    from broker_app.storage.epoch_cache import LeaderEpochCache
    from broker_app.storage.producer_state import ProducerStateManager

    b = build_batch([(None, b"a"), (None, b"b")])
    assert stamp_batch(memoryview(b), 7, 3) == stamp_batch(b, 7, 3)
    assert stamp_batch(b, 7, 3)[:16] == struct.pack(">q", 7) + b[8:12] + struct.pack(">i", 3)
    with pytest.raises(struct.error):
        stamp_batch(b[:15], 7, 3)  # too short for both fields, as before
    two = build_batch([(None, b"a"), (None, b"b")], timestamp=1000) + build_batch(
        [(None, b"c")], timestamp=1000)  # fmt: skip
    prepared = prepare_leader_append(
        two, 5, 100, AppendLimits(1 << 30, 1 << 20, now_ms=1000), "t-0", ProducerStateManager(),
        LeaderEpochCache(None),
    )  # fmt: skip
    batches = [(h.base_offset, h.partition_leader_epoch) for h, _ in
               iter_batches(prepared.data, allow_partial_tail=False)]  # fmt: skip
    assert batches == [(100, 5), (102, 5)] and isinstance(prepared.data, bytes)
    for _h, view in iter_batches(prepared.data, allow_partial_tail=False):
        validate_batch(view)  # CRCs intact


def test_flipped_byte_is_a_crc_mismatch():
    b = bytearray(build_batch([(None, b"payload")]))
    b[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC32C mismatch"):
        validate_batch(bytes(b))


def test_bad_magic_and_length_are_named():
    b = bytearray(build_batch([(None, b"x")]))
    b[16] = 1
    with pytest.raises(CorruptRecordError, match="bad magic 1"):
        list(iter_batches(bytes(b), allow_partial_tail=False))
    short = bytearray(build_batch([(None, b"x")]))
    struct.pack_into(">i", short, 8, 3)
    with pytest.raises(CorruptRecordError, match="batchLength 3 out of range"):
        list(iter_batches(bytes(short), allow_partial_tail=True))


def test_count_mismatch_is_invalid_record():
    b = bytearray(build_batch([(None, b"x"), (None, b"y")]))
    struct.pack_into(">i", b, 57, 5)  # recordsCount
    struct.pack_into(">I", b, 17, compute_crc(b))  # keep the CRC valid
    with pytest.raises(InvalidRecordError, match="recordsCount 5"):
        validate_batch(bytes(b))


def test_iter_batches_partial_tail():
    a, b = build_batch([(None, b"a")]), build_batch([(None, b"bb")], base_offset=1)
    buf = a + b[:-3]
    assert [h.base_offset for h, _ in iter_batches(buf, allow_partial_tail=True)] == [0]
    with pytest.raises(CorruptRecordError, match="truncated batch at position"):
        list(iter_batches(buf, allow_partial_tail=False))
    views = list(iter_batches(a + b, allow_partial_tail=False))
    assert [bytes(v) for _, v in views] == [a, b]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: COMPRESSION_NAMES[c])
def test_compressed_batches_roundtrip_and_stamp_verbatim(codec):
    values = [(f"key{i}".encode(), b"value-%d-" % i * 20) for i in range(50)]
    b = build_batch(values, compression=codec)
    h = validate_batch(b)
    assert h.compression == codec
    stamped = stamp_batch(b, 500, 9)
    assert stamped[61:] == b[61:]  # compressed body untouched
    recs = decode_records(stamped)
    assert [(r.offset, r.key, r.value) for r in recs] == [
        (500 + i, k, v) for i, (k, v) in enumerate(values)
    ]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: COMPRESSION_NAMES[c])
def test_batches_from_kafka_python_builder_parse(codec):
    builder = DefaultRecordBatchBuilder(2, codec, False, 77, 1, 5, 1 << 20)
    for i in range(20):
        builder.append(i, 1000 + i, b"k%d" % i, b"value %d " % i * 30, [("h", b"1")])
    raw = bytes(builder.build())
    h = validate_batch(raw)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (77, 1, 5, 20)
    assert h.compression == codec
    recs = decode_records(raw)
    assert recs[19].value == b"value 19 " * 30 and recs[19].timestamp == 1019
    assert recs[0].headers == [("h", b"1")]


def test_our_batches_parse_with_kafka_python():
    b = build_batch([(b"k", b"v" * 300)] * 3, compression=3, producer_id=1, producer_epoch=0,
                    base_sequence=0)  # fmt: skip
    kb = DefaultRecordBatch(bytearray(stamp_batch(b, 10, 2)))
    assert kb.validate_crc()
    assert [(r.offset, r.key, r.value) for r in kb] == [
        (10 + i, b"k", b"v" * 300) for i in range(3)
    ]


def test_sequence_wraps_at_int32_max():
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    h = parse_header(build_batch([(None, b"a")] * 3, producer_id=1, producer_epoch=0,
                                 base_sequence=INT32_MAX - 1))  # fmt: skip
    assert h.last_sequence == 0  # MAX-1, MAX, 0


def test_raw_snappy_without_xerial_framing_decodes():
    # librdkafka writes plain snappy blocks; Java's xerial stream reads both forms.
    import cramjam

    plain = build_batch([(None, b"abc" * 50)] * 4)
    h = parse_header(plain)
    raw_body = bytes(cramjam.snappy.compress_raw(plain[61:]))
    b = bytearray(plain[:61] + raw_body)
    struct.pack_into(">i", b, 8, len(b) - 12)
    struct.pack_into(">h", b, 21, h.attributes | 2)
    struct.pack_into(">I", b, 17, compute_crc(b))
    assert [r.value for r in decode_records(validate_batch(bytes(b)) and bytes(b))] == [
        b"abc" * 50
    ] * 4
