"""Time and size retention (Kafka's UnifiedLog.deleteOldSegments), sans-I/O decision.

`retention_start_offset(units, total_size, retention_ms, retention_bytes, now_ms)` gets the
log's deletable units oldest first (every segment but the active one) and returns the offset
the log should start at, or None to keep everything. Kafka's rules, applied to a prefix of units:
- retention.ms (>= 0): a unit goes when `now - its largest record timestamp > retention.ms`;
  a unit whose timestamp is unknown (-1) is kept (Kafka falls back to the file's mtime);
- retention.bytes (>= 0): the oldest units go while the log stays at least retention.bytes
  without them;
- deletion stops at the first unit no rule removes. The caller moves the log start with
  `maybe_increment_log_start_offset`, which never passes the high watermark, so retention can
  never delete records consumers have not been allowed to read.
-1 disables a rule, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class RetentionUnit(NamedTuple):
    next_offset: int  # the offset after the unit's last record
    size: int
    max_timestamp: int  # -1 = unknown


def retention_start_offset(
    units: Sequence[RetentionUnit], total_size: int, retention_ms: int, retention_bytes: int,
    now_ms: int,
) -> int | None:  # fmt: skip
    start = None
    remaining = total_size
    for u in units:
        by_time = retention_ms >= 0 and u.max_timestamp >= 0 and now_ms - u.max_timestamp > \
            retention_ms
        by_size = retention_bytes >= 0 and remaining - u.size >= retention_bytes
        if not (by_time or by_size):
            break
        remaining -= u.size
        start = u.next_offset
    return start
