"""LeaderEpochCache: Kafka's LeaderEpochFileCache, (epoch -> start offset) for one partition.

Contract (mirrors org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache):
- entries are strictly increasing in both epoch and start offset;
- `assign(e, o)` is a no-op unless e differs from the latest epoch or o is below the latest
  start offset; otherwise every entry with epoch >= e or start offset >= o is removed first
  (so the cache stays monotonic), then (e, o) is added;
- `end_offset_for(requested, leo)` is Kafka's endOffsetFor, including the UNDEFINED cases;
- every change is persisted to the checkpoint file (atomic rewrite) before returning.
Epochs are ints, "no epoch" is None for latest_epoch/previous_epoch (Kafka's OptionalInt).
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Protocol

from .checkpoints import EpochEntry, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochCheckpoint(Protocol):
    """Where the cache persists itself: LeaderEpochCheckpointFile, or an in-memory disk."""

    def read(self) -> list[EpochEntry]: ...
    def write(self, entries: list[EpochEntry]) -> None: ...


class LeaderEpochCache:
    def __init__(self, checkpoint: EpochCheckpoint | Path | None) -> None:
        if isinstance(checkpoint, Path | str):
            checkpoint = LeaderEpochCheckpointFile(Path(checkpoint))
        self.checkpoint: EpochCheckpoint | None = checkpoint
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        if checkpoint is not None:
            for e in checkpoint.read():
                self._assign(e.epoch, e.start_offset)

    # --- queries ---------------------------------------------------------------------

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, o) for e, o in zip(self._epochs, self._offsets, strict=True)]

    @property
    def is_empty(self) -> bool:
        return not self._epochs

    @property
    def latest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[-1], self._offsets[-1]) if self._epochs else None

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return EpochEntry(self._epochs[0], self._offsets[0]) if self._epochs else None

    def previous_epoch(self) -> int | None:
        """The epoch before the latest one (Kafka's previousEpoch)."""
        return self._epochs[-2] if len(self._epochs) >= 2 else None

    def previous_epoch_of(self, epoch: int) -> int | None:
        """Greatest cached epoch strictly below `epoch` (Kafka's previousEpoch(int))."""
        i = bisect.bisect_left(self._epochs, epoch) - 1
        return self._epochs[i] if i >= 0 else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """Epoch whose range contains `offset` (greatest entry with start <= offset)."""
        i = bisect.bisect_right(self._offsets, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) exactly as LeaderEpochFileCache.endOffsetFor."""
        if requested_epoch == UNDEFINED_EPOCH:
            # A bootstrapping follower, or an old message format without epochs.
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1] == requested_epoch:
            # The leader's current epoch is still being written: its end is the LEO.
            return requested_epoch, log_end_offset
        hi = bisect.bisect_right(self._epochs, requested_epoch)  # first epoch > requested
        if hi == len(self._epochs):
            # Larger than any known epoch (cannot happen for the latest, handled above).
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher_start = self._offsets[hi]
        if hi == 0:
            # Smaller than every known epoch: the data before is gone; start from the
            # first known epoch's start offset, keeping the requested epoch.
            return requested_epoch, higher_start
        # Floor epoch (greatest <= requested) and the start of the next one.
        return self._epochs[hi - 1], higher_start

    # --- mutation --------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; returns True if the cache changed."""
        if self._assign(epoch, start_offset):
            self._flush()
            return True
        return False

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"epoch {epoch} and start offset {start_offset} must be >= 0")
        if self._epochs and not (epoch != self._epochs[-1] or start_offset < self._offsets[-1]):
            return False
        # Kafka's maybeTruncateNonMonotonicEntries: drop entries that would break ordering.
        while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
            self._epochs.pop()
            self._offsets.pop()
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove entries with start offset >= `end_offset` (after a log truncation)."""
        if end_offset >= 0 and self._offsets and self._offsets[-1] >= end_offset:
            keep = bisect.bisect_left(self._offsets, end_offset)
            del self._epochs[keep:]
            del self._offsets[keep:]
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Remove entries wholly below `start_offset`; the last one removed moves up to it."""
        if start_offset >= 0 and self._offsets and self._offsets[0] < start_offset:
            n = bisect.bisect_right(self._offsets, start_offset)  # entries with start <= so
            kept_epoch = self._epochs[n - 1]
            del self._epochs[:n]
            del self._offsets[:n]
            self._epochs.insert(0, kept_epoch)
            self._offsets.insert(0, start_offset)
            self._flush()

    def clear_and_flush(self) -> None:
        self._epochs.clear()
        self._offsets.clear()
        self._flush()

    def _flush(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint.write(self.epoch_entries)

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.epoch_entries})"
