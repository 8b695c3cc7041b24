"""dump-log through the real CLI entry point: kafka-dump-log-style lines, torn tails reported."""

from __future__ import annotations

import os
import re

from broker_app.storage import Log, build_batch
from harness.cli import main


def _segment(log_dir):
    log = Log.open(log_dir)
    log.append_as_leader(
        build_batch(
            [(None, b"hello"), (b"k", b"world")],
            timestamp=1700,
            producer_id=3,
            producer_epoch=0,
            base_sequence=0,
        ),  # fmt: skip
        4,
    )
    log.append_as_leader(build_batch([(None, b"zz")] * 3, compression=3, timestamp=1800), 4)
    path = log.active_segment.log_path
    log.close()
    return path


def test_dump_log_prints_batches_and_records(log_dir, capsys):
    path = _segment(log_dir)
    assert main(["dump-log", str(path), "--print-data"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Log starting offset: 0"
    assert re.fullmatch(
        r"baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 3 "
        r"producerEpoch: 0 partitionLeaderEpoch: 4 isTransactional: false isControl: false "
        r"position: 0 CreateTime: 1700 size: \d+ magic: 2 compresscodec: none crc: \d+ "
        r"isvalid: true",
        lines[2],
    ), lines[2]
    assert lines[3] == (
        "| offset: 0 CreateTime: 1700 keySize: -1 valueSize: 5 sequence: 0 headerKeys: [] "
        "payload: hello"
    )
    assert lines[4].endswith(
        "keySize: 1 valueSize: 5 sequence: 1 headerKeys: [] key: k payload: world"
    )
    assert "baseOffset: 2 lastOffset: 4 count: 3" in lines[5] and "compresscodec: lz4" in lines[5]
    assert lines[6:] == [
        f"| offset: {o} CreateTime: 1800 keySize: -1 valueSize: 2 sequence: -1 headerKeys: [] "
        "payload: zz"
        for o in (2, 3, 4)
    ]


def test_dump_log_reports_torn_tail_and_bad_crc(log_dir, capsys):
    path = _segment(log_dir)
    data = bytearray(path.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records: CRC mismatch
    path.write_bytes(bytes(data))
    os.truncate(path, len(data) - 4)  # tear the second batch
    assert main(["dump-log", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].endswith("isvalid: false")
    second_size = len(data) - int(re.search(r"size: (\d+)", out[2]).group(1))
    assert out[-1] == f"Found {second_size - 4} invalid bytes at the end of {path.name}"
    assert len(out) == 4


def test_dump_index_and_missing_file(log_dir, capsys, tmp_path):
    log = Log.open(log_dir)
    for _ in range(200):
        log.append_as_leader(build_batch([(None, b"x" * 100)]), 0)
    index = log.active_segment.index_path
    entries = log.active_segment.index.entries
    log.close()
    assert main(["dump-log", str(index)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [f"offset: {o} position: {p}" for o, p in entries] and entries
    assert main(["dump-log", str(tmp_path / "nope.log")]) == 2
    assert "nope.log" in capsys.readouterr().err
