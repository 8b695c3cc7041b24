"""ReplicaState: what a leader knows about one follower (Kafka's Replica.scala).

Contract: updated only from that follower's fetches. `log_end_offset` is the follower's fetch
offset (-1 until the first fetch under this leader). `last_caught_up_time_ms` is the last time
the follower was known to hold everything the leader had, either at this fetch or at the
previous fetch (the leader LEO remembered then), which is what replica.lag.time.max.ms measures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

UNKNOWN_OFFSET = -1


@dataclass
class ReplicaState:
    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0
    # None = never known caught up under this leader (time 0 is a valid test clock value).
    last_caught_up_time_ms: int | None = None
    # KIP-903: the broker epoch the follower's last fetch carried (Fetch v15
    # ReplicaState.ReplicaEpoch; -1 before v15 or unknown), as Kafka's Replica keeps it: the
    # epoch of the incarnation that fetched, never the one the metadata holds now.
    broker_epoch: int = -1

    def reset_for_new_leader(self, now_ms: int, in_sync: bool) -> None:
        """A new leader knows nothing of the follower's log; an ISR member gets the full lag
        time from now to show up before it can be dropped."""
        self.log_end_offset = UNKNOWN_OFFSET
        self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
        self.last_fetch_time_ms = 0
        self.last_caught_up_time_ms = now_ms if in_sync else None
        self.broker_epoch = -1

    def update_fetch_state(
        self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int, leader_end_offset: int
    ) -> None:
        if fetch_offset >= leader_end_offset:
            self._caught_up_at(fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset >= 0:
            # It now has everything the leader had at its previous fetch: it was caught up then.
            self._caught_up_at(self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def _caught_up_at(self, time_ms: int) -> None:
        if self.last_caught_up_time_ms is None or time_ms > self.last_caught_up_time_ms:
            self.last_caught_up_time_ms = time_ms

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        if self.log_end_offset == leader_end_offset:
            return True
        return (
            self.last_caught_up_time_ms is not None
            and now_ms - self.last_caught_up_time_ms <= max_lag_ms
        )

    def as_dict(self) -> dict[str, int | None]:
        return asdict(self)
