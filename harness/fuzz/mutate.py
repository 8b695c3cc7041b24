"""Structure-aware mutations of Kafka request frames for the protocol fuzzer.

`Corpus(apis, rng)` holds well-formed request payloads (size prefix excluded) of every
(api, version) in an API table, built by sample.py. `Mutator.next()` returns one FuzzInput:
either a complete frame to send (payload mutated, size prefix recomputed, so the broker must
answer it or close the connection) or a connection-level action (a half frame then close or
reset, a stalled connection, a lying size prefix).

Payload mutations: bit flips, truncation (sweeping every offset of a base frame in turn),
lying int16/int32 lengths and counts, bad compact varints, unknown and lying tagged fields,
wrong api key/version, splices of two frames, and for Produce: malformed and lying record
batches (lengths, counts, offsets, codec, magic, CRC, LogAppendTime, producer fields,
decompression bombs, damaged inner records with the CRC recomputed so validation sees them).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Any

from broker_app.protocol.codec import encode_request, request_class
from broker_app.storage.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CRC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    build_batch,
    compress,
    compute_crc,
)

from .sample import sample_entity

HOSTILE_INT32 = (0x7FFFFFFF, -1, -2, 0x7FFFFFFE, -(2**31), 0x10000, 1 << 24)
HOSTILE_INT16 = (0x7FFF, -1, -2, -(2**15), 0x100)
BAD_VARINTS = (b"\xff\xff\xff\xff\xff\xff", b"\x80\x80\x80\x80\x80\x80\x01",
               b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\x7f", b"\x80")  # fmt: skip


@dataclass
class FuzzInput:
    kind: str  # "frame" | "half-close" | "half-reset" | "stall" | "lying-size"
    mutation: str
    data: bytes  # the whole bytes to send, size prefix included


class Corpus:
    def __init__(self, apis: dict[int, Any], rng: random.Random, per_version: int = 3) -> None:
        self.frames: list[tuple[int, int, bytes]] = []  # (api_key, version, payload)
        for key, vr in sorted(apis.items()):
            for version in range(vr.min_version, vr.max_version + 1):
                cls = request_class(key, version)
                for _ in range(per_version):
                    body = sample_entity(cls, rng)
                    payload = encode_request("fuzz", rng.randint(1, 1 << 30), body)[4:]
                    self.frames.append((key, version, payload))
        self.produce = [f for f in self.frames if f[0] == 0]


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _fix_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, CRC_OFFSET, compute_crc(batch))
    return bytes(batch)


def lying_batch(rng: random.Random) -> tuple[str, bytes]:
    """A record batch that is wrong in one way (CRC recomputed unless the CRC is the lie)."""
    n = rng.randint(1, 4)
    codec = rng.choice((0, 0, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4,
                        COMPRESSION_ZSTD))  # fmt: skip
    b = bytearray(build_batch([(b"k", b"fuzz-%d" % i) for i in range(n)], compression=codec))
    what = rng.choice(("batch-length", "records-count", "last-offset-delta", "codec", "magic",
                       "crc", "log-append-time", "producer-seq", "base-offset", "inner-byte",
                       "inner-truncate", "bomb", "control", "timestamp"))  # fmt: skip
    if what == "batch-length":
        struct.pack_into(">i", b, 8, rng.choice(HOSTILE_INT32 + (len(b) - 11, len(b) - 13)))
        return what, bytes(b)  # framing lie: CRC left alone on purpose
    if what == "records-count":
        struct.pack_into(">i", b, 57, rng.choice(HOSTILE_INT32 + (0, n + 1, n - 1)))
    elif what == "last-offset-delta":
        struct.pack_into(">i", b, 23, rng.choice(HOSTILE_INT32 + (0, n)))
    elif what == "codec":
        struct.pack_into(">h", b, 21, rng.choice((5, 6, 7, 0x7FFF, -1)))
    elif what == "magic":
        b[16] = rng.choice((0, 1, 3, 0xFF))
    elif what == "crc":
        b[CRC_OFFSET] ^= 0xFF
        return what, bytes(b)
    elif what == "log-append-time":
        struct.pack_into(">h", b, 21, codec | 0x08)
    elif what == "producer-seq":
        struct.pack_into(">qhi", b, 43, rng.randint(0, 100), 0, rng.choice((-1, -5)))
    elif what == "base-offset":
        struct.pack_into(">q", b, 0, 2147484678)  # outside the CRC: must be reassigned
        return what, bytes(b)
    elif what == "control":
        struct.pack_into(">h", b, 21, codec | 0x20)
    elif what == "timestamp":
        struct.pack_into(">qq", b, 27, 2**62, 2**62)
    elif what == "bomb":
        bomb_codec = rng.choice((COMPRESSION_GZIP, COMPRESSION_ZSTD, COMPRESSION_LZ4))
        if bomb_codec not in _BOMB_CACHE:  # 128 MiB of zeros, compressed once per run
            _BOMB_CACHE[bomb_codec] = compress(bomb_codec, bytes(128 << 20))
        b = bytearray(b[:RECORD_BATCH_OVERHEAD]) + _BOMB_CACHE[bomb_codec]
        struct.pack_into(">i", b, 8, len(b) - 12)
        struct.pack_into(">h", b, 21, bomb_codec)
    elif what == "inner-byte":
        pos = rng.randrange(RECORD_BATCH_OVERHEAD, len(b))
        b[pos] = rng.choice((0xFF, 0x7F, 0x80, 0x01, b[pos] ^ 0x55))
    elif what == "inner-truncate":
        cut = rng.randrange(RECORD_BATCH_OVERHEAD, len(b))
        b = b[:cut]
        struct.pack_into(">i", b, 8, len(b) - 12)
    return what, _fix_crc(b)


_BOMB_CACHE: dict[int, bytes] = {}


class Mutator:
    def __init__(self, corpus: Corpus, rng: random.Random) -> None:
        self.corpus = corpus
        self.rng = rng
        self.count = 0
        self._sweep: tuple[bytes, int] | None = None  # (payload, next cut) for truncation

    def next(self) -> FuzzInput:
        self.count += 1
        r = self.rng.random()
        if r < 0.03:
            return self._connection_level()
        _key, _ver, payload = self.rng.choice(self.corpus.frames)
        kind = self.rng.choice(("bitflip", "bitflip", "truncate", "lying-int", "lying-int",
                                "varint", "tagged", "header", "splice", "batch", "batch",
                                "batch", "valid"))  # fmt: skip
        if kind == "batch":
            if self.corpus.produce:
                return self._batch()
            kind = "bitflip"  # an API table without Produce (the controller's)
        data = getattr(self, "_" + kind.replace("-", "_"))(bytearray(payload))
        return FuzzInput("frame", kind, _frame(bytes(data)))

    # --- payload mutations -----------------------------------------------------------

    def _valid(self, p: bytearray) -> bytearray:
        return p

    def _bitflip(self, p: bytearray) -> bytearray:
        for _ in range(self.rng.randint(1, 4)):
            i = self.rng.randrange(len(p))
            p[i] ^= 1 << self.rng.randrange(8)
        return p

    def _truncate(self, p: bytearray) -> bytearray:
        # Sweep every cut offset of one base frame, then move on to another.
        if self._sweep is None or self._sweep[1] >= len(self._sweep[0]):
            self._sweep = (bytes(p), 0)
        base, cut = self._sweep
        self._sweep = (base, cut + 1)
        return bytearray(base[:cut])

    def _lying_int(self, p: bytearray) -> bytearray:
        if len(p) < 12:
            return p
        i = self.rng.randrange(8, len(p) - 1)
        if self.rng.random() < 0.5 and i + 4 <= len(p):
            struct.pack_into(">i", p, i, self.rng.choice(HOSTILE_INT32))
        else:
            struct.pack_into(">h", p, i, self.rng.choice(HOSTILE_INT16))
        return p

    def _varint(self, p: bytearray) -> bytearray:
        i = self.rng.randrange(8, max(len(p), 9))
        v = self.rng.choice(BAD_VARINTS)
        if self.rng.random() < 0.5:
            return p[:i] + v + p[i:]
        return p[:i] + v + p[i + len(v) :]

    def _tagged(self, p: bytearray) -> bytearray:
        tag = self.rng.choice((0, 1, 2, 7, 99, 0x3FFF))
        size = self.rng.choice((0, 1, 3))
        data = bytes(self.rng.getrandbits(8) for _ in range(size))
        lie = self.rng.random() < 0.3
        section = bytes([1, tag & 0x7F, size + (50 if lie else 0)]) + data
        if p and p[-1] == 0:  # likely an empty top-level tagged-field section
            return p[:-1] + section
        i = self.rng.randrange(8, max(len(p), 9))
        return p[:i] + section + p[i:]

    def _header(self, p: bytearray) -> bytearray:
        rng = self.rng
        if rng.random() < 0.5:  # api version
            struct.pack_into(">h", p, 2, rng.choice((-1, 0, 99, 0x7FFF, rng.randint(0, 20))))
        else:  # api key
            struct.pack_into(">h", p, 0, rng.choice((-1, 17, 57, 1000, rng.randint(0, 70))))
        return p

    def _splice(self, p: bytearray) -> bytearray:
        _k, _v, other = self.rng.choice(self.corpus.frames)
        i = self.rng.randrange(len(p))
        j = self.rng.randrange(len(other))
        return p[:i] + other[j:]

    def _batch(self) -> FuzzInput:
        from broker_app.protocol.entities import build

        what, records = lying_batch(self.rng)
        version = self.rng.randint(3, 9)
        body = build(request_class(0, version), {
            "transactional_id": None, "acks": self.rng.choice((1, -1, 0)), "timeout": 1000,
            "topic_data": [{"name": self.rng.choice(("fuzz-a", "fuzz-b")), "partition_data": [
                {"index": 0, "records": records}]}]})  # fmt: skip
        return FuzzInput("frame", f"batch:{what}", encode_request("fuzz", self.count, body))

    # --- connection-level ----------------------------------------------------------

    def _connection_level(self) -> FuzzInput:
        _k, _v, payload = self.rng.choice(self.corpus.frames)
        full = _frame(payload)
        kind = self.rng.choice(("half-close", "half-reset", "stall", "lying-size"))
        if kind == "lying-size":
            size = self.rng.choice((-1, 2**31 - 1, 200 << 20, len(payload) + 1000))
            return FuzzInput(kind, kind, struct.pack(">i", size) + payload)
        cut = self.rng.randrange(1, len(full))
        return FuzzInput(kind, kind, full[:cut])
