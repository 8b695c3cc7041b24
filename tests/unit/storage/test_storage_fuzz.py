"""Malformed input never crashes the log: every failure is a StorageError with a Kafka code."""

from __future__ import annotations

import random

from broker_app.storage import StorageError, build_batch
from broker_app.storage.records import decode_records, stamp_batch


def _mutations(rng: random.Random, good: bytes, n: int):
    for _ in range(n):
        b = bytearray(good)
        kind = rng.randrange(4)
        if kind == 0:  # flip bytes anywhere, including the header
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] ^= rng.randint(1, 255)
        elif kind == 1:
            b = b[: rng.randrange(len(b))]
        elif kind == 2:
            b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 80)))
        else:
            b = bytearray(rng.randbytes(rng.randint(0, 200)))
        yield bytes(b)


def test_random_corruption_is_rejected_cleanly(log, mkbatch):
    rng = random.Random(1234)
    good = build_batch([(b"k", b"value" * 10)] * 4, compression=1)
    accepted = 0
    for data in _mutations(rng, good, 600):
        leo = log.log_end_offset
        for append in (lambda d: log.append_as_leader(d, 0), log.append_as_follower):
            try:
                append(
                    data if append is not log.append_as_follower else stamp_batch_safe(data, leo)
                )
                accepted += 1
            except StorageError as exc:
                assert isinstance(exc.kafka_error_code, int)
                assert log.log_end_offset == leo  # a rejected append writes nothing
            leo = log.log_end_offset
    # Everything the log accepted reads back and decodes.
    for _h, view in log.batches():
        try:
            decode_records(view)
        except StorageError:
            pass  # a CRC-valid batch may still hold garbage records; decoding must not crash
    assert log.log_end_offset >= accepted > 0


def stamp_batch_safe(data: bytes, offset: int) -> bytes:
    # Give the follower an offset at the LEO when the prefix is intact enough to stamp.
    return stamp_batch(data, offset, 0) if len(data) >= 16 else data


def test_decode_of_crc_valid_garbage_raises_corrupt_record():
    import struct

    from broker_app.storage.errors import CorruptRecordError
    from broker_app.storage.records import compute_crc

    rng = random.Random(99)
    failures = 0
    for codec in range(5):
        good = build_batch([(b"k", b"v" * 40)] * 5, compression=codec)
        for _ in range(100):
            b = bytearray(good)
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(61, len(b))] ^= rng.randint(1, 255)
            struct.pack_into(">I", b, 17, compute_crc(b))  # valid CRC, garbage body
            try:
                decode_records(bytes(b))
            except CorruptRecordError:
                failures += 1
    assert failures > 0
