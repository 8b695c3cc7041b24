"""LeaderState: what the leader of one epoch knows about its voters.

- Each voter's end offset is what its last valid Fetch said (a follower flushes what it
  fetched before it fetches again, so a fetch offset is a durable position); the leader's own
  position is its log's flushed end offset, so unflushed records never count.
- The high watermark is the largest offset a majority of voters has reached, and it only moves
  once it passes epoch_start_offset, the leader's own LeaderChange record: a leader commits
  entries of older epochs only by committing one of its own (Raft section 5.4.2). It never
  goes back. A new leader does not know the high watermark until then (None).
- Check quorum (KAFKA-15489): the leader must hear a Fetch from a majority (itself counted)
  within 1.5 x fetch timeout, or it resigns: a leader cut off in a minority stops claiming
  leadership instead of staying leader of an epoch nobody follows.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParkedFetch:
    src: int
    correlation_id: int
    fetch_offset: int
    last_fetched_epoch: int
    deadline_ms: int


@dataclass
class LeaderState:
    local_id: int
    epoch: int
    epoch_start_offset: int
    voters: frozenset[int]
    now_ms: int
    high_watermark: int | None = None
    local_end_offset: int = 0
    replica_end: dict[int, int] = field(default_factory=dict)
    begin_acked: set[int] = field(default_factory=set)
    begin_retry_ms: dict[int, int] = field(default_factory=dict)
    parked: list[ParkedFetch] = field(default_factory=list)
    fetched_since_check: set[int] = field(default_factory=set)
    check_quorum_deadline_ms: int = 0

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def start_check_quorum(self, now_ms: int, fetch_timeout_ms: int) -> None:
        self.check_quorum_deadline_ms = now_ms + fetch_timeout_ms * 3 // 2
        self.fetched_since_check = {self.local_id}

    def check_quorum(self, now_ms: int, fetch_timeout_ms: int) -> bool:
        """False when the check window closed without a majority fetching: time to resign."""
        if len(self.fetched_since_check) >= self.majority:
            self.start_check_quorum(now_ms, fetch_timeout_ms)
            return True
        return now_ms < self.check_quorum_deadline_ms

    def update_local(self, flushed_end_offset: int) -> bool:
        self.local_end_offset = flushed_end_offset
        return self._maybe_advance()

    def update_replica(self, replica_id: int, end_offset: int, now_ms: int) -> bool:
        """Record a voter's valid fetch; True if the high watermark moved."""
        if replica_id not in self.voters or replica_id == self.local_id:
            return False
        self.begin_acked.add(replica_id)
        self.fetched_since_check.add(replica_id)
        # Max, not assignment: a delayed duplicate of an older Fetch must not lower a durable
        # position (a follower only truncates after a DivergingEpoch, which is never counted).
        self.replica_end[replica_id] = max(self.replica_end.get(replica_id, 0), end_offset)
        return self._maybe_advance()

    def _maybe_advance(self) -> bool:
        ends = sorted(
            (self.local_end_offset if v == self.local_id else self.replica_end.get(v, -1)
             for v in self.voters),
            reverse=True,
        )
        candidate = ends[self.majority - 1]
        if candidate <= self.epoch_start_offset:
            return False  # our own epoch's first record is not committed yet
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True
