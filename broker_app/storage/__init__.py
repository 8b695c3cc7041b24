"""Storage: Log, LogSegment, OffsetIndex, checkpoints, LeaderEpochCache, recovery."""
