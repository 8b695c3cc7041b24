"""OffsetIndex: floor lookup, truncation, persistence and sanity checks."""

from __future__ import annotations

import pytest

from broker_app.storage.index import ENTRY, IndexCorruptError, OffsetIndex


def test_lookup_floor_and_truncate(tmp_path):
    idx = OffsetIndex(tmp_path / "00000000000000000100.index", 100)
    assert idx.lookup(150) == (100, 0)  # empty index: start of segment
    for off, pos in [(110, 1000), (120, 2000), (130, 3000)]:
        idx.append(off, pos)
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(110) == (110, 1000)
    assert idx.lookup(125) == (120, 2000)
    assert idx.lookup(10**9) == (130, 3000)
    idx.truncate_to(120)
    assert idx.entries == [(110, 1000)]
    assert (tmp_path / "00000000000000000100.index").read_bytes() == ENTRY.pack(10, 1000)
    idx.close()


def test_reload_and_sanity_checks(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0)
    idx.append(5, 100)
    idx.append(9, 200)
    with pytest.raises(IndexCorruptError):
        idx.append(9, 300)  # offsets must increase
    idx.close()
    again = OffsetIndex(path, 0)
    again.load(max_position=1000)
    assert again.entries == [(5, 100), (9, 200)]
    with pytest.raises(IndexCorruptError, match="outside the segment"):
        again.load(max_position=150)  # entry at position 200 past a 150-byte log
    again.close()
    path.write_bytes(path.read_bytes() + b"\x00\x01")
    torn = OffsetIndex(path, 0)
    with pytest.raises(IndexCorruptError, match="not a multiple of 8"):
        torn.load(1000)
    torn.close()
