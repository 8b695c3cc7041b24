"""The native record walk (_recordwalk.c) against the Python reference (log_validator).

Both must give the same verdict on every client batch: accepted, or the same exception class,
Kafka error code and message (the message carries the positions: record index, byte offset,
lengths, counts). A few thousand generated inputs here (harness/bench/validator.py's
generator: valid, one-field lies, flips and truncations before and after compression, the
protocol fuzzer's lying batches); `highwater bench validator --inputs 100000` is the long run.
Plus the edges the generator reaches only by chance, written out.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import broker_app.storage.log_validator as lv
from broker_app.storage.log_validator import NATIVE, PYTHON
from broker_app.storage.records import COMPRESSION_GZIP, COMPRESSION_NONE, COMPRESSION_ZSTD
from harness.bench.validator import (
    KINDS,
    NOW,
    _frame_batch,
    kind_of,
    outcome,
    padded_varint,
    run_differential,
    zigzag_varint,
)

SOURCE = Path(lv.__file__).with_name("_recordwalk.c")
DEFAULTS = {"now_ms": NOW, "max_decompressed_bytes": 1 << 20,
            "timestamp_before_max_ms": 2**63 - 1, "timestamp_after_max_ms": 3_600_000}  # fmt: skip


def test_native_module_is_built_from_this_source() -> None:
    # Absent or stale means `make venv` (pip install -e .) did not build it: the broker would
    # run the slow reference, or C that is not the C in the tree.
    assert lv._recordwalk is not None, "broker_app.storage._recordwalk not built: make venv"
    sha = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert lv._recordwalk.SOURCE_SHA == sha, "stale _recordwalk build: rerun make venv"


def test_generated_inputs_give_the_same_outcome() -> None:
    report = run_differential(4000, seed=25)
    assert report.differences == []
    # Every outcome kind was reached: a generator that stopped producing one would make this
    # comparison vacuous for it.
    expected = {name for name, _ in KINDS} | {"accepted", "header-rule"}
    assert expected <= set(report.kinds), expected - set(report.kinds)


def test_native_walk_is_what_native_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above compares two different code paths, not one path twice."""
    calls = []
    real = lv._recordwalk

    class Spy:
        def walk(self, *args: object) -> object:
            calls.append(args)
            return real.walk(*args)

    monkeypatch.setattr(lv, "_recordwalk", Spy())
    batch = _batch([_record(0)])
    assert outcome(batch, DEFAULTS, PYTHON) is None and calls == []
    assert outcome(batch, DEFAULTS, NATIVE) is None and len(calls) == 1


def _record(
    i: int, *, ts_delta: int = 0, key: bytes | None = b"k", value: bytes = b"v",
    headers: bytes = b"\x00", length: int | None = None, pad: int = 0,
) -> bytes:  # fmt: skip
    """Record i (offsetDelta i) with a true length unless `length`, its varint `pad` bytes."""
    body = b"\x00" + zigzag_varint(ts_delta) + zigzag_varint(i)
    body += zigzag_varint(-1) if key is None else zigzag_varint(len(key)) + key
    body += zigzag_varint(len(value)) + value + headers
    return padded_varint(len(body) if length is None else length, pad) + body


def _batch(records: list[bytes], *, count: int | None = None, codec: int = COMPRESSION_NONE,
           base_ts: int = NOW, tail: bytes = b"") -> bytes:  # fmt: skip
    import random

    from broker_app.storage.records import compress

    body = compress(codec, b"".join(records) + tail)
    return _frame_batch(body, codec, count or len(records), base_ts, random.Random(0))


def _raw(body: bytes) -> bytes:
    """One record from its raw body (attributes onwards), with a true length."""
    return zigzag_varint(len(body)) + body


# name -> (batch, validator keywords, the reference's outcome kind)
EDGES: dict[str, tuple[bytes, dict[str, int], str]] = {
    "valid": (_batch([_record(0), _record(1)]), {}, "accepted"),
    "valid-gzip": (_batch([_record(0), _record(1)], codec=COMPRESSION_GZIP), {}, "accepted"),
    "ten-byte-varint-is-allowed": (_batch([_record(0, pad=10)]), {}, "accepted"),
    "eleven-byte-varint": (_batch([_record(0, pad=11)]), {}, "varint-long"),
    "70-bit-length": (_batch([padded_varint(2**69 - 1, 10) + b"\x00"]), {}, "record-length"),
    "70-bit-negative-offset-delta": (
        _batch([_raw(b"\x00\x00" + padded_varint(-(2**69), 10) + b"\x02k\x02v\x00")]), {},
        "offset-delta"),
    "unfinished-varint-after-the-last-record": (_batch([_record(0)], tail=b"\x80\x80"), {},
                                                "trailing"),
    "varint-cut-mid-way": (_batch([_record(0), b"\x80\x80"], count=2), {}, "varint-eof"),
    # The value eats the header count; the count read after the record's end is 0, refused
    # because the reference's floor division gives (end - pos) // 2 = (-1) // 2 = -1.
    "header-count-0-one-byte-past-the-end": (
        _batch([b"\x10" + b"\x00\x00\x00\x02k\x04v\x00"], tail=b"\x00"), {}, "header-count"),
    "null-header-key": (_batch([_record(0, headers=b"\x02\x01\x01")]), {}, "null-header-key"),
    "timestamp-minus-one-is-no-timestamp": (_batch([_record(0, ts_delta=-1 - NOW)]), {},
                                            "accepted"),
    "timestamp-at-high-edge": (_batch([_record(0, ts_delta=3_600_000)]), {}, "accepted"),
    "timestamp-past-high-edge": (_batch([_record(0, ts_delta=3_600_001)]), {},
                                 "timestamp-range"),
    "window-past-int64": (_batch([_record(0, ts_delta=2**64)], base_ts=2**63 - 1),
                          {"timestamp_after_max_ms": 2**70}, "accepted"),
    "timestamp-past-int64": (_batch([_record(0, ts_delta=2**64)], base_ts=2**63 - 1), {},
                             "timestamp-range"),
    "structure-error-beats-earlier-offset-error": (
        _batch([_record(5), _record(1, length=200)]), {}, "record-length"),
    "trailing-beats-timestamp-error": (
        _batch([_record(0, ts_delta=-(2**62))], tail=b"\x00"),
        {"timestamp_before_max_ms": 1000}, "trailing"),
    "count-above-records": (_batch([_record(0)], count=3), {}, "varint-eof"),
    "big-batch-valid": (_batch([_record(i, value=b"x" * 100) for i in range(2000)]), {},
                        "accepted"),
    "big-batch-bad-last-record": (
        _batch([_record(i, value=b"x" * 100) for i in range(1999)] + [_record(7)]), {},
        "offset-delta"),
    "big-zstd-truncated-record": (
        _batch([_record(i, value=b"y" * 100) for i in range(2000)], codec=COMPRESSION_ZSTD,
               tail=b"\x10\x00"), {}, "trailing"),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_cases_give_the_same_outcome(name: str) -> None:
    batch, kw, kind = EDGES[name]
    kwargs = {**DEFAULTS, **kw}
    ref = outcome(batch, kwargs, PYTHON)
    assert outcome(batch, kwargs, NATIVE) == ref
    # The edge is the one its name says (a slip in the helpers would test something else).
    assert kind_of(ref) == kind, ref


def test_edge_case_messages_carry_positions() -> None:
    ref = outcome(EDGES["structure-error-beats-earlier-offset-error"][0], DEFAULTS, NATIVE)
    assert ref is not None and "record 1 of" in ref[2] and "has length 200" in ref[2]
    ref = outcome(EDGES["70-bit-length"][0], DEFAULTS, NATIVE)
    assert ref is not None and f"has length {2**69 - 1}, only 1 bytes left" in ref[2]
    ref = outcome(EDGES["70-bit-negative-offset-delta"][0], DEFAULTS, NATIVE)
    assert ref is not None and f"offsetDelta {-(2**69)}, expected 0" in ref[2]


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
def test_buffer_types(wrap: type) -> None:
    batch = EDGES["big-batch-bad-last-record"][0]
    from broker_app.storage.records import parse_header

    h = parse_header(batch)
    for impl in (PYTHON, NATIVE):
        with pytest.raises(lv.InvalidRecordError, match="record 1999 of .* offsetDelta 7"):
            lv.validate_client_batch(wrap(batch), h, implementation=impl, **DEFAULTS)


@pytest.mark.parametrize("env,expected", [(None, NATIVE), ("python", PYTHON)])
def test_highwater_validator_env_picks_the_walk(env: str | None, expected: str) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "HIGHWATER_VALIDATOR"}
    if env is not None:
        environ["HIGHWATER_VALIDATOR"] = env
    out = subprocess.run(
        [sys.executable, "-c",
         "from broker_app.storage.log_validator import IMPLEMENTATION; print(IMPLEMENTATION)"],
        env=environ, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == expected
