"""The bounded fd cache: segments and indexes of many logs share a few descriptors, closed
least-recently-used first and reopened on use, with every byte still where it was written."""

from __future__ import annotations

import os
from pathlib import Path

from broker_app.storage import Log, build_batch, decode_records
from broker_app.storage.file_cache import FILE_CACHE, CachedFile, FileCache


def test_cache_evicts_least_recently_used_and_reopens(tmp_path: Path) -> None:
    cache = FileCache(capacity=2)
    files = [CachedFile(tmp_path / f"f{i}", cache) for i in range(3)]
    for i, f in enumerate(files):
        os.pwrite(f.fd, b"x%d" % i, 0)
    assert len(cache) == 2 and cache.evictions == 1  # f0 was closed to open f2
    assert os.pread(files[0].fd, 2, 0) == b"x0"  # reopened on use, data intact
    assert cache.opens == 4
    files[1].close()
    assert files[1].fd == -1 and len(cache) <= 2


def test_many_logs_share_a_few_fds_and_keep_their_data(tmp_path: Path) -> None:
    old = FILE_CACHE.capacity
    FILE_CACHE.capacity = 6
    logs = []
    try:
        for i in range(40):
            lg = Log.open(tmp_path / f"t-{i}")
            lg.append_as_leader(build_batch([(None, b"v%d" % i)]), 0)
            logs.append(lg)
        assert len(FILE_CACHE) <= 6
        for i, lg in enumerate(logs):
            (_h, view), = list(lg.batches())
            assert [r.value for r in decode_records(view)] == [b"v%d" % i]
            lg.flush()
        assert len(FILE_CACHE) <= 6
    finally:
        for lg in logs:
            lg.close()
        FILE_CACHE.capacity = old


def test_pinned_file_is_not_evicted_and_close_waits_for_the_pin(tmp_path: Path) -> None:
    cache = FileCache(capacity=1)
    a, b = CachedFile(tmp_path / "a", cache), CachedFile(tmp_path / "b", cache)
    with a.pinned() as fd_a:
        os.pwrite(b.fd, b"b", 0)  # over capacity: a is pinned, so nothing is evicted
        os.pwrite(fd_a, b"a", 0)  # still the same open descriptor
        a.close()  # deferred until the pin is released
        os.fsync(fd_a)
    assert a.fd == -1 and len(cache) == 1  # a closed at unpin, b still open
    assert (tmp_path / "a").read_bytes() == b"a"
