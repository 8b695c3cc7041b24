"""LeaderEpochCache: Kafka's LeaderEpochFileCache rules, endOffsetFor cases, persistence."""

from __future__ import annotations

import pytest

from broker_app.storage.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache


@pytest.fixture
def cache(tmp_path):
    return LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")


def test_assign_and_persist(cache, tmp_path):
    assert cache.latest_epoch is None and cache.latest_entry is None
    assert cache.assign(2, 6)
    assert not cache.assign(2, 10)  # same epoch, later offset: not an update
    assert cache.assign(3, 8)
    assert cache.latest_entry == (3, 8) and cache.previous_epoch() == 2
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n2 6\n3 8\n"
    reloaded = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    assert reloaded.epoch_entries == [(2, 6), (3, 8)]


def test_assign_keeps_monotonic_entries(cache):
    cache.assign(1, 0)
    cache.assign(2, 10)
    cache.assign(3, 20)
    cache.assign(2, 15)  # older epoch: later entries with epoch >= 2 are removed (Kafka rule)
    assert cache.epoch_entries == [(1, 0), (2, 15)]
    cache.assign(4, 12)  # start offset below an existing entry: that entry goes
    assert cache.epoch_entries == [(1, 0), (4, 12)]
    cache.assign(4, 5)  # same epoch, smaller start offset: update
    assert cache.epoch_entries == [(1, 0), (4, 5)]


@pytest.mark.parametrize(
    "requested, expected",
    [
        (UNDEFINED_EPOCH, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),
        (7, (7, 100)),  # latest epoch: the LEO
        (2, (2, 10)),  # known epoch: start of the next one
        (3, (2, 10)),  # unknown epoch between: floor epoch, next start
        (5, (4, 20)),
        (0, (0, 5)),  # below every epoch: requested epoch, first start offset
        (8, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),  # above every epoch
    ],
)
def test_end_offset_for(cache, requested, expected):
    for e, o in [(1, 5), (2, 8), (4, 10), (7, 20)]:
        cache.assign(e, o)
    assert cache.end_offset_for(requested, 100) == expected  # LEO is 100


def test_end_offset_for_empty_cache(cache):
    assert cache.end_offset_for(3, 50) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def test_truncate_from_end_and_start(cache):
    for e, o in [(1, 0), (2, 10), (3, 20)]:
        cache.assign(e, o)
    cache.truncate_from_end(20)  # entries starting at/after 20 go
    assert cache.epoch_entries == [(1, 0), (2, 10)]
    cache.truncate_from_end(11)  # epoch 2 starts before 11: kept
    assert cache.epoch_entries == [(1, 0), (2, 10)]
    cache.assign(3, 20)
    cache.truncate_from_start(15)  # (2,10) moves up to 15, (1,0) goes
    assert cache.epoch_entries == [(2, 15), (3, 20)]
    cache.truncate_from_start(20)
    assert cache.epoch_entries == [(3, 20)]
    assert cache.epoch_for_offset(19) is None and cache.epoch_for_offset(25) == 3
