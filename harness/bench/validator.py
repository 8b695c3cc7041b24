"""`highwater bench validator`: the native record walk against the Python reference.

Generates --inputs client batches from a seeded rng (valid ones, ones wrong in one field of one
record, byte flips and truncations before or after compression, the protocol fuzzer's lying
batches), runs `validate_client_batch` on each with implementation=python and =native, and
compares the outcomes: accepted, or the exception's class, Kafka error code and message (which
carries every position: record index, byte offset, lengths, counts). Prints inputs/s, the
outcome kinds reached, and every difference (exit 1 when there is one). It also times both
walks on a few valid batches of the benchmark's shape. tests/unit/storage's differential test
runs the same generator on a few thousand inputs.

The generator writes records itself (not through build_batch) so that it can lie in any field:
varints of up to 11 bytes and 70-bit values, lengths and counts that run past the end, null
header keys, offsetDeltas and timestamps off by one at the window's edges.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker_app.storage.errors import StorageError
from broker_app.storage.log_validator import (
    DEFAULT_TIMESTAMP_AFTER_MAX_MS,
    DEFAULT_TIMESTAMP_BEFORE_MAX_MS,
    NATIVE,
    PYTHON,
    _recordwalk,
    validate_client_batch,
)
from broker_app.storage.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    CRC_OFFSET,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    build_batch,
    compress,
    compute_crc,
    parse_header,
)

CODECS = (COMPRESSION_NONE, COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY,
          COMPRESSION_LZ4, COMPRESSION_ZSTD)  # fmt: skip
NOW = 1_700_000_000_000
INT64_MAX = 2**63 - 1
# Values at the edges of what the walk must represent: int32/int64 limits, 70-bit varints.
EDGE_INTS = (0, 1, -1, -2, 2, 63, 64, -64, -65, 127, 128, 2**31 - 1, -(2**31), 2**32,
             INT64_MAX, -(2**63), 2**63, 2**64, 2**69 - 1, -(2**69))  # fmt: skip
MUTATIONS = ("valid", "length", "timestamp", "offset", "key-length", "value-length",
             "header-count", "null-header-key", "long-varint", "truncate", "trailing", "count",
             "drop-record", "flip", "compressed-flip", "overrun", "fuzzer")  # fmt: skip

# Outcome kinds, from the reference's messages: the test asserts each one is reached, so a
# generator that stopped producing some kind of input would fail it.
KINDS = (
    ("varint-eof", r"^varint runs past the end"),
    ("varint-long", r"^varint longer than 10 bytes"),
    ("record-length", r"has length -?\d+, only"),
    ("field-past-end", r"bytes runs past the end of the records"),
    ("header-count", r"invalid header count"),
    ("null-header-key", r"null header key"),
    ("length-mismatch", r"length says -?\d+ bytes, fields used"),
    ("trailing", r"bytes left after its"),
    ("offset-delta", r"has offsetDelta"),
    ("timestamp-range", r"is out of range; it should be within"),
    ("decompress", r"cannot decompress|expands beyond|ends before|xerial snappy"),
    ("keyless", r"Compacted topic cannot accept message without key"),
)


def zigzag_varint(v: int) -> bytes:
    """Kafka's zigzag varint for any Python int (past 64 bits too, as hostile input may be)."""
    raw = v << 1 if v >= 0 else ((-v) << 1) - 1
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def padded_varint(v: int, size: int) -> bytes:
    """v's varint stretched to `size` bytes with continuation bytes (over 10: refused)."""
    b = bytearray(zigzag_varint(v))
    while len(b) < size:
        b[-1] |= 0x80
        b.append(0)
    return bytes(b)


@dataclass
class Field:
    """One encoded piece of a record, kept apart so a mutation can replace it."""

    name: str
    data: bytes


def _bytes_field(name: str, value: bytes | None) -> list[Field]:
    if value is None:
        return [Field(name + "-len", zigzag_varint(-1))]
    return [Field(name + "-len", zigzag_varint(len(value))), Field(name, value)]


def _record_fields(rng: random.Random, offset_delta: int, ts_delta: int) -> list[Field]:
    key = None if rng.random() < 0.3 else rng.randbytes(rng.choice((0, 1, 3, 20)))
    value = None if rng.random() < 0.1 else rng.randbytes(rng.choice((0, 1, 10, 100, 300)))
    fields = [Field("attributes", b"\x00"), Field("ts-delta", zigzag_varint(ts_delta)),
              Field("offset-delta", zigzag_varint(offset_delta))]  # fmt: skip
    fields += _bytes_field("key", key) + _bytes_field("value", value)
    n_headers = rng.choice((0, 0, 0, 1, 2, 3))
    fields.append(Field("header-count", zigzag_varint(n_headers)))
    for h in range(n_headers):
        fields += _bytes_field(f"header-key-{h}", rng.randbytes(rng.choice((0, 1, 5))))
        hv = None if rng.random() < 0.3 else rng.randbytes(rng.choice((0, 1, 8)))
        fields += _bytes_field(f"header-value-{h}", hv)
    return fields


def _encode(fields: list[Field], length: int | None = None, pad: int = 0) -> bytes:
    """One record: its length varint (the true one unless `length`; `pad` bytes long), body."""
    body = b"".join(f.data for f in fields)
    return padded_varint(len(body) if length is None else length, pad) + body


def _frame_batch(body: bytes, codec: int, count: int, base_ts: int, rng: random.Random) -> bytes:
    """A v2 batch around `body` (already compressed), with a valid CRC and consistent counts."""
    producer_id, epoch, seq = rng.choice(((-1, -1, -1), (7, 0, 0), (7, 2, 1000)))
    out = bytearray(RECORD_BATCH_OVERHEAD)
    HEADER_STRUCT.pack_into(
        out, 0, rng.choice((0, 5, 2**40)), RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(body), 0, 2,
        0, codec, count - 1, base_ts, base_ts, producer_id, epoch, seq, count,
    )  # fmt: skip
    out += body
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out))
    return bytes(out)


def _window(rng: random.Random) -> dict[str, int]:
    """The validator's clock and bounds (Kafka's defaults mostly, edges and huge ones too),
    and whether the topic is compacted."""
    bounds = (DEFAULT_TIMESTAMP_BEFORE_MAX_MS, DEFAULT_TIMESTAMP_AFTER_MAX_MS, 0, 1, 1000,
              2**64, 2**80)  # fmt: skip
    if rng.random() < 0.6:
        before, after = DEFAULT_TIMESTAMP_BEFORE_MAX_MS, DEFAULT_TIMESTAMP_AFTER_MAX_MS
    else:
        before, after = rng.choice(bounds), rng.choice(bounds)
    return {"now_ms": rng.choice((NOW, NOW, 0, -5, INT64_MAX)),
            "timestamp_before_max_ms": before, "timestamp_after_max_ms": after,
            "max_decompressed_bytes": rng.choice((1 << 20, 1 << 20, 1 << 20, 200)),
            "compacted": rng.random() < 0.3}  # fmt: skip


def _timestamp_lie(rng: random.Random, base_ts: int, w: dict[str, int]) -> int:
    """A ts_delta putting the record at, just inside or just outside an edge of the window."""
    low = w["now_ms"] - w["timestamp_before_max_ms"]
    high = w["now_ms"] + w["timestamp_after_max_ms"]
    target = rng.choice((low - 1, low, low + 1, high - 1, high, high + 1, -1, -2, 0))
    if rng.random() < 0.2:
        return rng.choice(EDGE_INTS)
    return target - base_ts


def random_case(rng: random.Random, *, bombs: bool = False) -> tuple[str, bytes, dict[str, int]]:
    """(mutation, batch bytes, validate_client_batch keywords) for one generated input;
    `bombs` lets the fuzzer's decompression bombs through (128 MiB compressed per codec)."""
    mutation = rng.choice(MUTATIONS)
    w = _window(rng)
    if mutation == "fuzzer":
        from harness.fuzz.mutate import lying_batch

        what, batch = lying_batch(rng)
        while what == "bomb" and not bombs:
            what, batch = lying_batch(rng)
        return f"fuzzer:{what}", batch, w
    codec = rng.choice(CODECS)
    n = rng.choice((1, 1, 2, 3, 5, 17))
    base_ts = rng.choice((w["now_ms"], w["now_ms"] - 1000, NOW, 0, -1, INT64_MAX, -(2**63)))
    records = [_record_fields(rng, i, rng.choice((0, 0, 1, 5))) for i in range(n)]
    if base_ts in (INT64_MAX, -(2**63)):
        for r in records:  # keep the valid deltas from overflowing past int64 themselves
            r[1].data = zigzag_varint(0)
    lengths: list[int | None] = [None] * n
    pads = [0] * n
    count = n
    victim = rng.randrange(n)
    fields = records[victim]

    def replace(name: str, data: bytes) -> None:
        for f in fields:
            if f.name == name:
                f.data = data
                return
        fields.insert(rng.randrange(1, len(fields) + 1), Field(name, data))

    true_len = len(b"".join(f.data for f in fields))
    if mutation == "length":
        lengths[victim] = rng.choice((true_len + 1, true_len - 1, true_len + 2, true_len - 2, 0,
                                      -1, true_len * 2, *EDGE_INTS))  # fmt: skip
    elif mutation == "timestamp":
        replace("ts-delta", zigzag_varint(_timestamp_lie(rng, base_ts, w)))
    elif mutation == "offset":
        replace("offset-delta", zigzag_varint(rng.choice((victim + 1, victim - 1, *EDGE_INTS))))
    elif mutation in ("key-length", "value-length"):
        name = mutation.split("-")[0] + "-len"
        replace(name, zigzag_varint(rng.choice((true_len, true_len * 4, -2, 1, *EDGE_INTS))))
    elif mutation == "overrun":  # the value eats into what follows: pos passes the record end
        victim = n - 1
        fields = records[victim]
        value_len = next(f for f in fields if f.name == "value-len")
        value = next((f for f in fields if f.name == "value"), None)
        size = len(value.data) if value is not None else 0
        if value is None:
            fields.insert(fields.index(value_len) + 1, Field("value", b""))
        value_len.data = zigzag_varint(size + rng.choice((1, 2, 3)))
    elif mutation == "header-count":
        replace("header-count", zigzag_varint(rng.choice((1, 2, true_len // 2, true_len,
                                                          *EDGE_INTS))))  # fmt: skip
    elif mutation == "null-header-key":
        replace("header-count", zigzag_varint(1))
        fields[:] = [f for f in fields if not f.name.startswith(("header-key", "header-value"))] + [
            Field("header-key-0-len", zigzag_varint(rng.choice((-1, -2, -(2**31))))),
            Field("header-value-0-len", zigzag_varint(-1)),
        ]
    elif mutation == "long-varint":
        size = rng.choice((9, 10, 10, 11, 12))
        target = rng.choice(("length", "ts-delta", "offset-delta", "key-len", "value-len",
                             "header-count"))  # fmt: skip
        if target == "length":
            pads[victim] = size
        else:
            f = next((f for f in fields if f.name == target), fields[1])
            value = victim if target == "offset-delta" else 0
            f.data = padded_varint(value if rng.random() < 0.7 else rng.choice(EDGE_INTS), size)
    encoded = [_encode(r, lengths[i], pads[i]) for i, r in enumerate(records)]
    body = b"".join(encoded)
    if mutation == "truncate":
        inside = [k + 1 for k, byte in enumerate(body) if byte & 0x80]
        if inside and rng.random() < 0.5:  # end inside a multi-byte varint (or key/value)
            body = body[: rng.choice(inside)]
        else:
            body = body[: rng.randrange(len(body) + 1)]
    elif mutation in ("trailing", "overrun"):
        tail = rng.choice((b"\x00", b"\x00\x00", b"\x02", b"\x80", b""))
        body += tail or rng.randbytes(rng.randint(1, 40))
    elif mutation == "count":
        count = max(1, n + rng.choice((-1, 1, 2, 100, 2**31 - 1 - n)))
    elif mutation == "drop-record" and n > 1:
        del encoded[victim]
        body = b"".join(encoded)
    elif mutation == "flip" and body:
        b = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= rng.choice((0x80, 0x01, 0xFF, 1 << rng.randrange(8)))
        body = bytes(b)
    payload = compress(codec, body)
    if mutation == "compressed-flip" and payload:
        b = bytearray(payload)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        payload = bytes(b)
    if count > 2**31 - 1:
        count = 2**31 - 1
    return mutation, _frame_batch(payload, codec, count, base_ts, rng), w


Outcome = tuple[str, int, str] | None


def outcome(batch: bytes, kwargs: dict[str, int], implementation: str) -> Outcome:
    """None when accepted, else (exception class, Kafka error code, message)."""
    try:
        validate_client_batch(batch, parse_header(batch), implementation=implementation,
                              **kwargs)  # fmt: skip
    except StorageError as exc:
        record_errors = getattr(exc, "record_errors", [])
        return (type(exc).__name__, exc.kafka_error_code,
                str(exc) + (f" record_errors={record_errors}" if record_errors else ""))
    return None


def kind_of(result: Outcome) -> str:
    """A name for an outcome: accepted, one of KINDS, or the reference's header-level rule."""
    if result is None:
        return "accepted"
    for name, pattern in KINDS:
        if re.search(pattern, result[2]):
            return name
    return "header-rule"


@dataclass
class DiffReport:
    inputs: int = 0
    seconds: float = 0.0
    kinds: Counter[str] = field(default_factory=Counter)
    mutations: Counter[str] = field(default_factory=Counter)
    differences: list[dict[str, Any]] = field(default_factory=list)


def run_differential(inputs: int, seed: int, *, bombs: bool = False, keep: int = 20) -> DiffReport:
    """Compare native and reference on `inputs` generated batches; keeps `keep` differences
    in full (the rest by mutation name only)."""
    if _recordwalk is None:
        raise RuntimeError("broker_app.storage._recordwalk is not built: run `make venv` "
                           "(pip install -e .) with a C compiler")  # fmt: skip
    rng = random.Random(seed)
    report = DiffReport()
    start = time.monotonic()
    for _ in range(inputs):
        mutation, batch, kwargs = random_case(rng, bombs=bombs)
        ref = outcome(batch, kwargs, PYTHON)
        nat = outcome(batch, kwargs, NATIVE)
        report.inputs += 1
        report.kinds[kind_of(ref)] += 1
        report.mutations[mutation.split(":")[0]] += 1
        if ref != nat and len(report.differences) < keep:
            report.differences.append({"mutation": mutation, "batch": batch.hex(),
                                       "kwargs": kwargs, "python": ref, "native": nat})  # fmt: skip
        elif ref != nat:
            report.differences.append({"mutation": mutation})
    report.seconds = round(time.monotonic() - start, 2)
    return report


def walk_speed(records: int = 5000, value_bytes: int = 100) -> dict[str, float]:
    """µs per record of each walk on one valid batch of the broker benchmark's shape."""
    out: dict[str, float] = {}
    rng = random.Random(0)
    for codec in (COMPRESSION_NONE, COMPRESSION_LZ4):
        batch = build_batch([(None, rng.randbytes(value_bytes))] * records, compression=codec,
                            timestamp=NOW)  # fmt: skip
        h = parse_header(batch)
        for impl in (PYTHON, NATIVE):
            reps = 3 if impl == PYTHON else 50
            t0 = time.perf_counter()
            for _ in range(reps):
                validate_client_batch(batch, h, now_ms=NOW, max_decompressed_bytes=16 << 20,
                                      implementation=impl)  # fmt: skip
            us = (time.perf_counter() - t0) / reps / records * 1e6
            out[f"{impl}-{'none' if codec == COMPRESSION_NONE else 'lz4'}"] = round(us, 4)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-bombs", action="store_true",
                        help="skip the fuzzer's decompression bombs (128 MiB each to make)")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")


def run(args: argparse.Namespace) -> int:
    report = run_differential(args.inputs, args.seed, bombs=not args.no_bombs)
    speed = walk_speed()
    print(f"{report.inputs} inputs in {report.seconds} s "
          f"({report.inputs / max(report.seconds, 1e-9):,.0f}/s), seed {args.seed}: "
          f"{len(report.differences)} differences between native and reference")  # fmt: skip
    print("outcomes:", json.dumps(dict(sorted(report.kinds.items()))))
    print("mutations:", json.dumps(dict(sorted(report.mutations.items()))))
    print("µs per record (5000 x 100 B):", json.dumps(speed))
    for d in report.differences[:20]:
        print("difference:", json.dumps(d))
    if args.json:
        # Not dataclasses.asdict: it rebuilds a Counter from (key, count) pairs, as keys.
        args.json.write_text(json.dumps({
            "inputs": report.inputs, "seconds": report.seconds, "seed": args.seed,
            "kinds": dict(report.kinds), "mutations": dict(report.mutations),
            "differences": report.differences, "walk_us_per_record": speed}, indent=1))  # fmt: skip
    return 1 if report.differences else 0
