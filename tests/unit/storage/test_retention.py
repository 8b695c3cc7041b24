"""Retention (retention.ms / retention.bytes): the decision on units, then on both logs."""

from __future__ import annotations

from broker_app.storage.retention import RetentionUnit, retention_start_offset

UNITS = [RetentionUnit(10, 100, 1_000), RetentionUnit(20, 100, 2_000),
         RetentionUnit(30, 100, -1), RetentionUnit(40, 100, 1_500)]  # fmt: skip


def test_time_retention_deletes_the_expired_prefix_only() -> None:
    assert retention_start_offset(UNITS, 500, 1_500, -1, now_ms=3_000) == 10  # 2_000 is young
    assert retention_start_offset(UNITS, 500, 500, -1, now_ms=3_000) == 20  # unknown ts stops
    assert retention_start_offset(UNITS, 500, 10_000, -1, now_ms=3_000) is None
    assert retention_start_offset(UNITS, 500, -1, -1, now_ms=10**9) is None  # both disabled


def test_size_retention_keeps_at_least_retention_bytes() -> None:
    assert retention_start_offset(UNITS, 500, -1, 250, now_ms=0) == 20  # 500 -> 400 -> 300
    assert retention_start_offset(UNITS, 500, -1, 0, now_ms=0) == 40  # never the active one
    assert retention_start_offset(UNITS, 500, -1, 500, now_ms=0) is None
