"""LogSegment: append/index, translate, read ranges, truncate, recover."""

from __future__ import annotations

from broker_app.storage.records import iter_batches, stamp_batch
from broker_app.storage.segment import LogSegment


def _fill(seg: LogSegment, mkbatch, n: int, per: int = 2) -> list[tuple[int, int]]:
    """Append n batches of `per` records; returns (base, last) per batch."""
    out = []
    off = seg.next_offset
    for i in range(n):
        b = stamp_batch(mkbatch(per, value=b"x" * 40 + bytes([65 + i % 26])), off, 0)
        seg.append(b, off + per - 1)
        out.append((off, off + per - 1))
        off += per
    return out


def test_append_builds_sparse_index_and_translates(tmp_path, mkbatch):
    seg = LogSegment(tmp_path, 0, index_interval_bytes=200)
    ranges = _fill(seg, mkbatch, 30)
    assert seg.log_path.name == "00000000000000000000.log"
    assert 0 < len(seg.index) < 30  # sparse
    for off in (0, 1, 17, 33, 59):
        bp = seg.translate_offset(off)
        assert bp is not None and bp.base_offset <= off <= bp.last_offset
    assert seg.translate_offset(60) is None
    for o, p in seg.index.entries:  # each entry points at the batch whose last offset is o
        assert seg.translate_offset(o).position == p
    seg.close()
    assert ranges[-1] == (58, 59)


def test_read_whole_batches_with_limits(tmp_path, mkbatch):
    seg = LogSegment(tmp_path, 0, index_interval_bytes=100)
    _fill(seg, mkbatch, 10)
    one = next(iter_batches(seg.read(0, 1), allow_partial_tail=False))[0].size

    def offsets(data: bytes) -> list[int]:
        return [h.base_offset for h, _ in iter_batches(data, allow_partial_tail=False)]

    assert offsets(seg.read(5, 10_000)) == [4, 6, 8, 10, 12, 14, 16, 18]  # starts at 5's batch
    assert offsets(seg.read(0, one * 3)) == [0, 2, 4]
    assert offsets(seg.read(0, one * 3 - 1)) == [0, 2]
    assert offsets(seg.read(0, 1)) == [0]  # min one batch
    assert seg.read(0, 1, min_one_batch=False) == b""
    assert offsets(seg.read(0, 10_000, max_offset=6)) == [0, 2, 4]  # last offsets < 6
    assert offsets(seg.read(0, 10_000, max_offset=7)) == [0, 2, 4]  # batch 6..7 not whole
    assert seg.read(4, 10_000, max_offset=4) == b""
    seg.close()


def test_truncate_to_drops_containing_batch(tmp_path, mkbatch):
    seg = LogSegment(tmp_path, 0, index_interval_bytes=100)
    _fill(seg, mkbatch, 10)
    before = seg.size
    removed = seg.truncate_to(9)  # inside batch 8..9
    assert seg.next_offset == 8 and seg.size == before - removed
    assert all(o < 9 for o, _ in seg.index.entries)
    _fill(seg, mkbatch, 1)
    assert seg.next_offset == 10
    seg.close()


def test_recover_cuts_torn_tail_and_rebuilds_index(tmp_path, mkbatch):
    seg = LogSegment(tmp_path, 0, index_interval_bytes=100)
    _fill(seg, mkbatch, 10)
    good_size, good_index = seg.size, seg.index.entries
    seg.close()
    with open(seg.log_path, "ab") as f:
        f.write(stamp_batch(mkbatch(2), 20, 0)[:-7])  # a torn batch
    seg.index_path.write_bytes(b"")  # lost index
    again = LogSegment(tmp_path, 0, index_interval_bytes=100)
    assert again.recover() > 0
    assert (again.size, again.next_offset, again.index.entries) == (good_size, 20, good_index)
    again.close()


def test_open_rebuilds_an_inconsistent_index(tmp_path, mkbatch):
    seg = LogSegment(tmp_path, 0, index_interval_bytes=100)
    _fill(seg, mkbatch, 10)
    entries = seg.index.entries
    seg.close()
    seg.index_path.write_bytes(b"\x00\x00\x00\x05\x7f\x00\x00\x00")  # position past the log
    again = LogSegment.open(tmp_path, 0, index_interval_bytes=100)
    assert again.index.entries == entries and again.next_offset == 20
    again.close()


def test_headers_scan_matches_full_scan(tmp_path, mkbatch):
    seg = LogSegment(tmp_path, 0, index_interval_bytes=100)
    off = 0
    for i in range(20):
        pid = 5 if i % 3 == 0 else -1
        b = mkbatch(2, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                    base_sequence=i if pid >= 0 else -1)  # fmt: skip
        seg.append(stamp_batch(b, off, 0), off + 1)
        off += 2
    full = [h for h, _, _ in seg.batches()]
    assert list(seg.headers()) == full
    assert list(seg.headers(with_producer_id=True)) == [h for h in full if h.producer_id == 5]
    with open(seg.log_path, "ab") as f:
        f.write(stamp_batch(mkbatch(1), off, 0)[:-1])
    seg.size += 60  # as if a torn write were visible: the scan stops before it
    assert list(seg.headers()) == full
    seg.close()
